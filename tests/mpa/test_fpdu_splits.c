/*
 * test_fpdu_splits.c: the receive machine gives the same result however
 * the byte stream is cut into reads. siw once stalled when pad and CRC
 * arrived in separate reads; these tests cut everywhere.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpa/fpdu.h"
#include "tools/lib/fpdu_stream.h"

static struct fpdu_rx_cfg cfg_for(bool crc, bool markers)
{
	struct fpdu_rx_cfg c = { .crc = crc, .markers = markers, .hdr_len = rdmap_hdr_len };
	return c;
}

/* Payloads from 0 to 70000 bytes: messages beyond one FPDU are segmented. */
static const uint32_t mixed_sizes[] = {
	0,    1,    2,     3,     4,     5, 70000, 511, 512, 513,  1000,  1454,
	1455, 4096, 65000, 65516, 65517, 3, 9000,  123, 0,   2047, 30000, 7,
};
#define NMIXED (sizeof(mixed_sizes) / sizeof(mixed_sizes[0]))

/* ...each with direct placement and without, and with several runs
 * between markers per event (cfg.pieces) and without */
static void check_cuts(const struct fpdu_stream *s, bool crc, bool markers, const size_t *cuts,
		       size_t ncuts)
{
	struct fpdu_rx_cfg cfg = cfg_for(crc, markers);
	for (int mode = 0; mode < 4; mode++) {
		bool direct = mode & 1;
		cfg.pieces = mode & 2;
		struct parse_result r;
		parse_with_cuts(&r, &cfg, s->bytes, s->len, cuts, ncuts, direct);
		size_t bad = parse_result_check(&r, s);
		if (bad)
			fail_msg("crc=%d markers=%d direct=%d pieces=%d: FPDU %zu differs "
				 "(error=%d)",
				 crc, markers, direct, cfg.pieces, bad - 1, r.error);
		parse_result_free(&r);
	}
}

/* Reads of one byte: every split point of the stream at once. */
static void one_byte_reads(void **state)
{
	for (int mode = 0; mode < 8; mode++) {
		bool crc = mode & 1, markers = mode & 2, large = mode & 4;
		uint32_t ulpdu_max = large ? fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, markers)
					   : fpdu_mulpdu(1460, markers);
		struct fpdu_stream s;
		fpdu_stream_build(&s, mixed_sizes, NMIXED, ulpdu_max, crc, markers,
				  (uint32_t)mode + 1);
		size_t *cuts = malloc(s.len * sizeof(*cuts));
		for (size_t i = 0; i + 1 < s.len; i++)
			cuts[i] = i + 1;
		check_cuts(&s, crc, markers, cuts, s.len - 1);
		free(cuts);
		fpdu_stream_free(&s);
	}
}

/* A read ends at every byte inside every marker, pad and CRC (and the
 * length field), with large reads in between. */
static void cuts_inside_markers_pad_and_crc(void **state)
{
	for (int mode = 0; mode < 8; mode++) {
		bool crc = mode & 1, markers = mode & 2, large = mode & 4;
		uint32_t ulpdu_max = large ? fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, markers)
					   : fpdu_mulpdu(1460, markers);
		struct fpdu_stream s;
		fpdu_stream_build(&s, mixed_sizes, NMIXED, ulpdu_max, crc, markers,
				  (uint32_t)mode + 7);
		size_t cap = s.len + 1, n = 0;
		size_t *cuts = malloc(cap * sizeof(*cuts));
		char *mark = calloc(s.len + 1, 1);
		if (markers)
			for (size_t p = 0; p < s.len; p += 512)
				for (size_t k = 0; k <= 4; k++)
					mark[p + k] = 1;
		for (size_t i = 0; i < s.n; i++) {
			/* trailer: up to 3 pad bytes, maybe a marker, the CRC */
			size_t e = s.fpdus[i].wire_end;
			for (size_t k = 0; k <= 11 && k <= e; k++)
				mark[e - k] = 1;
			size_t b = s.fpdus[i].wire_start;
			for (size_t k = 0; k <= 6 && b + k <= s.len; k++)
				mark[b + k] = 1;
		}
		for (size_t p = 1; p < s.len; p++)
			if (mark[p])
				cuts[n++] = p;
		check_cuts(&s, crc, markers, cuts, n);
		free(mark);
		free(cuts);
		fpdu_stream_free(&s);
	}
}

/* Two reads, split at every point of a stream of 60 FPDUs with markers and
 * CRC on: each parse must equal the one-read parse. */
static void every_split_point_markers_and_crc(void **state)
{
	uint32_t sizes[60];
	for (int i = 0; i < 60; i++)
		sizes[i] = (uint32_t)((i * 131) % 700);
	struct fpdu_stream s;
	fpdu_stream_build(&s, sizes, 60, fpdu_mulpdu(1460, true), true, true, 42);
	assert_true(s.n >= 50);
	struct fpdu_rx_cfg cfg = cfg_for(true, true);
	struct parse_result ref;
	parse_with_cuts(&ref, &cfg, s.bytes, s.len, NULL, 0, false);
	assert_int_equal(parse_result_check(&ref, &s), 0);
	for (size_t p = 1; p < s.len; p++) {
		for (int mode = 0; mode < 4; mode++) {
			bool direct = mode & 1;
			cfg.pieces = mode & 2;
			struct parse_result r;
			parse_with_cuts(&r, &cfg, s.bytes, s.len, &p, 1, direct);
			size_t d = parse_result_diff(&ref, &r);
			if (d)
				fail_msg("split at %zu (direct=%d pieces=%d): FPDU %zu differs", p,
					 direct, cfg.pieces, d - 1);
			parse_result_free(&r);
		}
	}
	parse_result_free(&ref);
	fpdu_stream_free(&s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(one_byte_reads),
		cmocka_unit_test(cuts_inside_markers_pad_and_crc),
		cmocka_unit_test(every_split_point_markers_and_crc),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
