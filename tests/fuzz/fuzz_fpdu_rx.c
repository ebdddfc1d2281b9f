/*
 * fuzz_fpdu_rx.c: the FPDU receive machine, with CRC and markers on and off.
 *
 * Input: a selector byte, a seed byte, then either
 *  - raw mode: the bytes of a stream as a peer might send them, or
 *  - build mode: a recipe of messages that the real transmitter turns into
 *    a valid stream (so CRCs are right and parsing reaches deep states),
 *    optionally with one byte flipped.
 * The stream is parsed twice with different read splits (and payload taken
 * either through DATA events or direct placement); both parses must agree,
 * and every event must respect the parser's contract.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/lib/fpdu_stream.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t next(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/* Parse with pseudo-random reads; check the contract of every event. */
static void parse(const struct fpdu_rx_cfg *cfg, const uint8_t *b, size_t len, uint32_t seed,
		  bool direct, struct parse_result *r)
{
	size_t cuts[64], nc = 0, at = 0;
	uint32_t s = seed | 1;
	while (nc < 64) {
		at += 1 + next(&s) % 700;
		if (at >= len)
			break;
		cuts[nc++] = at;
	}
	parse_with_cuts(r, cfg, b, len, cuts, nc, direct);
	for (size_t i = 0; i < r->n; i++) {
		const struct parsed_fpdu *p = &r->fpdus[i];
		FUZZ_CHECK(p->hdr_len <= FPDU_RX_HDR_MAX && p->hdr_len <= p->ulpdu_len);
		FUZZ_CHECK(p->payload_len == (uint32_t)p->ulpdu_len - p->hdr_len);
		FUZZ_CHECK(p->payload_got <= p->payload_len);
		FUZZ_CHECK(!p->ended || p->payload_got == p->payload_len);
		FUZZ_CHECK(i + 1 == r->n || p->ended);
	}
	if (r->error)
		FUZZ_CHECK(
			r->err.layer == UW_TERM_LAYER_LLP &&
			(r->err.ecode == UW_MPA_ECODE_CRC || r->err.ecode == UW_MPA_ECODE_MARKER));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	uint8_t sel = data[0], seed = data[1];
	data += 2;
	size -= 2;
	bool crc = sel & 1, markers = sel & 2, build = sel & 4;
	struct fpdu_rx_cfg cfg = { .crc = crc,
				   .markers = markers,
				   .hdr_len = (sel & 8) ? NULL : rdmap_hdr_len };
	struct fpdu_stream s;
	const uint8_t *bytes = data;
	size_t len = size;
	bool built = false;
	uint8_t *flipped = NULL;

	if (build) {
		/* Recipe: each pair of bytes is one message size (up to ~64 KiB
		 * when the high bit of sel is set); the last byte may name a
		 * byte to flip. */
		uint32_t sizes[64], total = 0;
		size_t n = 0;
		/* at most ~128 KiB of payload keeps each run fast */
		for (size_t i = 0; i + 1 < size && n < 64 && total < 131072; i += 2) {
			sizes[n] = (uint32_t)(data[i] | data[i + 1] << 8) >> ((sel & 128) ? 0 : 6);
			total += sizes[n++];
		}
		uint32_t ulpdu_max = (sel & 16) ? fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, markers)
						: fpdu_mulpdu(536 + seed * 4u, markers);
		if (ulpdu_max < 64)
			ulpdu_max = 64;
		fpdu_stream_build(&s, sizes, n, ulpdu_max, crc, markers, seed + 1u);
		built = true;
		bytes = s.bytes;
		len = s.len;
		if ((sel & 32) && len) {
			flipped = malloc(len);
			memcpy(flipped, s.bytes, len);
			flipped[(size_t)seed * 2654435761u % len] ^= 0x40;
			bytes = flipped;
		}
	}

	struct parse_result a, b;
	parse(&cfg, bytes, len, seed, false, &a);
	parse(&cfg, bytes, len, seed * 7919u + 1, sel & 64, &b);
	FUZZ_CHECK(parse_result_diff(&a, &b) == 0);
	if (built && !flipped && cfg.hdr_len)
		FUZZ_CHECK(parse_result_check(&a, &s) == 0);
	if (flipped && crc && cfg.hdr_len)
		FUZZ_CHECK(parse_result_check(&a, &s) != 0); /* the CRC covers every byte */
	parse_result_free(&a);
	parse_result_free(&b);
	free(flipped);
	if (built)
		fpdu_stream_free(&s);
	return 0;
}
