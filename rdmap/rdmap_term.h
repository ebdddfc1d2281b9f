/*
 * rdmap_term.h: the Terminate message (RFC 5040 4.8).
 *
 * We send the RFC's encoding of the Terminate Control field. Linux siw
 * sends its own (nibbles of byte 0 swapped, M/D/R in the low bits of byte
 * 2; docs/wire-notes.md), so received Terminates are decoded both ways and the
 * reading that makes sense is reported as the likely one.
 */
#ifndef UWARP_RDMAP_TERM_H
#define UWARP_RDMAP_TERM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uwarp/wire.h>

#include "mpa/rddp_error.h"

/* After the Terminate Control: DDP Segment Length, a DDP header, a
 * terminated RDMAP (Read Request) header. */
#define RDMAP_TERM_MAX_PAYLOAD \
	(RDMAP_TERM_SEGLEN_SIZE + DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_RDMAP_HDR_LEN)
#define RDMAP_TERM_MAX_ULPDU (DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_CTRL_LEN + RDMAP_TERM_MAX_PAYLOAD)

struct rdmap_term_reading {
	uint8_t layer, etype, ecode;
	bool m, d, r;
};

struct rdmap_term {
	struct rdmap_term_reading rfc; /* RFC 5040 encoding */
	struct rdmap_term_reading siw; /* Linux siw's bit-field encoding */
	bool siw_likely;               /* the siw reading is the sensible one */
	bool has_seglen;
	uint16_t seglen;
	uint8_t ddp_hdr_len; /* 0, 14 or 18 */
	uint8_t ddp_hdr[DDP_UNTAGGED_HDR_LEN];
	bool has_rdmap_hdr;
	uint8_t rdmap_hdr[RDMAP_TERM_RDMAP_HDR_LEN];
};

/* The reading to act on. */
static inline const struct rdmap_term_reading *rdmap_term_reading(const struct rdmap_term *t)
{
	return t->siw_likely ? &t->siw : &t->rfc;
}

/*
 * Encode the Terminate Control and what follows it, RFC encoding: M and the
 * DDP Segment Length when ddp_hdr is given (seglen is that segment's
 * ULPDU_Length), D and the DDP header, R and the 28-byte Read Request header
 * when rdmap_hdr is given. Returns the bytes written to out (at most
 * RDMAP_TERM_CTRL_LEN + RDMAP_TERM_MAX_PAYLOAD).
 */
size_t rdmap_term_encode(const struct rddp_error *e, uint16_t seglen, const uint8_t *ddp_hdr,
			 size_t ddp_hdr_len, const uint8_t *rdmap_hdr, uint8_t *out);

/* Decode the bytes after a Terminate's DDP header (len of them). Returns 0,
 * or -EBADMSG when even the control word is missing. Attachments that are
 * flagged but cut short are reported as absent. */
int rdmap_term_decode(const uint8_t *p, size_t len, struct rdmap_term *t);

#endif
