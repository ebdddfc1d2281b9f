/*
 * rdmap_opcode.h: the one table that knows every RDMAP message: its DDP
 * model and queue, its full ULPDU header length, its prebuilt control word,
 * and its receive handler. Adding a message is adding a row.
 */
#ifndef UWARP_RDMAP_OPCODE_H
#define UWARP_RDMAP_OPCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uwarp/wire.h>

struct rdmap_conn;
struct rdmap_place;

#define RDMAP_QN_TAGGED 0xff
/* The longest ULPDU header: untagged DDP plus an Atomic Request. */
#define RDMAP_MAX_HDR (DDP_UNTAGGED_HDR_LEN + RDMAP_ATOMIC_REQ_LEN)

struct rdmap_op {
	const char *name;
	uint8_t hdr_len;     /* DDP header + RDMAP header: what precedes payload */
	uint16_t ctrl;       /* control word of the last segment (T, L, DV, RV, opcode) */
	uint8_t qn;          /* untagged queue, or RDMAP_QN_TAGGED */
	bool rfc7306;        /* an extension: only with peers that speak RFC 7306 */
	bool one_segment;    /* always a single segment with L set */
	int16_t max_payload; /* payload limit for one-segment messages, -1 none */
	/* Receive handler: validate a segment and say where its payload goes. */
	int (*rx)(struct rdmap_conn *c, struct rdmap_place *pl);
};

/* The row for an opcode, or NULL for a reserved one. */
const struct rdmap_op *rdmap_op(unsigned opcode);

/* The ULPDU header length for a DDP/RDMAP control word, for the FPDU
 * parser (fpdu_rx_cfg.hdr_len; arg is the struct rdmap_conn, or NULL to
 * allow every opcode). Opcodes the stream does not accept get the bare DDP
 * header, so the receive path can answer them with the right Terminate. */
size_t rdmap_hdr_len(void *arg, const uint8_t ctrl[2]);

#endif
