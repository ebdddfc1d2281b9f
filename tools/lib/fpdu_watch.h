/*
 * fpdu_watch.h: what an RDDP peer sent, read as a hostile client or a
 * fuzzer reads it: the FPDUs parsed as they come (in any pieces), counted
 * by RDMAP opcode, and the first Terminate's ULPDU kept to be decoded.
 *
 * Pure: the caller reads the socket and feeds the bytes. The network
 * fuzzer (uwarp-fuzz) and test_bad_peer share it, so both judge a server's
 * reaction (a Terminate and its codes, RFC 5040 section 4.8 and RFC 6580)
 * the same way.
 */
#ifndef UWARP_TOOLKIT_FPDU_WATCH_H
#define UWARP_TOOLKIT_FPDU_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/fpdu.h"
#include "rdmap/rdmap_term.h"

struct fpdu_watch {
	struct fpdu_rx rx;
	int op;               /* the current FPDU's RDMAP opcode; -1 before one */
	unsigned fpdus;       /* FPDUs whole */
	unsigned by_op[16];   /* ...of each RDMAP opcode */
	bool after_terminate; /* an FPDU came whole behind a Terminate */
	/* the first Terminate's ULPDU (DDP header first): as much of it as
	 * the largest one RFC 5040 allows; term_cut when it was longer */
	uint8_t term[RDMAP_TERM_MAX_ULPDU];
	size_t term_len;
	bool term_cut;
	bool term_whole;   /* it ended (its FPDU came whole) */
	bool keeping;      /* the FPDU coming is that Terminate */
	const char *error; /* the bytes do not parse: why (then it stops) */
};

void fpdu_watch_init(struct fpdu_watch *w, bool crc);

/* Feed what came next: 0, or -1 once the bytes do not parse (w->error;
 * later bytes are ignored). */
int fpdu_watch_feed(struct fpdu_watch *w, const uint8_t *in, size_t n);

/* The first Terminate, decoded: 0, or -1 when none came whole or its
 * ULPDU is not one (too short, cut, or its fields do not decode). */
int fpdu_watch_terminate(const struct fpdu_watch *w, struct rdmap_term *t);

#endif
