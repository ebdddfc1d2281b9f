/*
 * fpdu_stream.h: test streams of FPDUs carrying DDP/RDMAP-shaped headers
 * (RDMA Write, Send, Read Request), built with the real transmit path and
 * flattened into one byte array, with a record of what each FPDU carries.
 */
#ifndef UWARP_TEST_FPDU_STREAM_H
#define UWARP_TEST_FPDU_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/fpdu.h"
#include "rdmap/rdmap_opcode.h"

struct sent_fpdu {
	uint8_t hdr[FPDU_RX_HDR_MAX]; /* ULPDU header as sent */
	uint16_t hdr_len;
	const uint8_t *payload; /* into fpdu_stream.payload */
	uint32_t payload_len;
	size_t wire_start; /* offset of the FPDU (its leading marker if any) */
	size_t wire_end;
};

struct fpdu_stream {
	uint8_t *bytes;
	size_t len;
	struct sent_fpdu *fpdus;
	size_t n;
	uint8_t *payload; /* all payload bytes, pattern-filled */
	size_t payload_len;
};

/*
 * Build a stream from message sizes: message i is an RDMA Write when i is
 * even and a Send when odd, split into FPDUs of at most ulpdu_max ULPDU
 * bytes (DDP segmentation); every seventh message is preceded by a Read
 * Request. Batches are flushed as a sender would, so markers and CRCs come
 * from fpdu_tx_append(). seed picks the payload bytes.
 */
void fpdu_stream_build(struct fpdu_stream *s, const uint32_t *msg_sizes, size_t nmsgs,
		       uint32_t ulpdu_max, bool crc, bool markers, uint32_t seed);
void fpdu_stream_free(struct fpdu_stream *s);

/* What a parse of a stream yielded: per FPDU the header and a copy of the
 * payload, then the error if parsing stopped on one. */
struct parsed_fpdu {
	uint8_t hdr[FPDU_RX_HDR_MAX];
	uint16_t hdr_len;
	uint16_t ulpdu_len;
	uint8_t *payload;
	uint32_t payload_len;
	uint32_t payload_got;
	bool ended;
};

struct parse_result {
	struct parsed_fpdu *fpdus;
	size_t n, cap;
	bool error;
	struct rddp_error err;
};

/* Feed stream bytes through rx in the given pieces (cuts are offsets
 * where one read ends and the next begins, ascending). direct: take payload
 * through fpdu_rx_direct_span/done instead of DATA events. */
void parse_with_cuts(struct parse_result *r, const struct fpdu_rx_cfg *cfg, const uint8_t *bytes,
		     size_t len, const size_t *cuts, size_t ncuts, bool direct);
void parse_result_free(struct parse_result *r);
/* 0 when two parse results are identical; otherwise the FPDU index + 1
 * where they first differ. */
size_t parse_result_diff(const struct parse_result *a, const struct parse_result *b);
/* 0 when a parse yielded exactly what the stream carried. */
size_t parse_result_check(const struct parse_result *r, const struct fpdu_stream *s);

#endif
