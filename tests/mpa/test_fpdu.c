/*
 * test_fpdu.c: FPDU framing: worked FPDUs byte for byte, sizing,
 * markers where RFC 5044 puts them, round trips, and every receive error.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpa/be.h"
#include "mpa/crc32c.h"
#include "mpa/fpdu.h"
#include "tools/lib/fpdu_stream.h"

static struct fpdu_batch_max batch_store;
static struct fpdu_batch batch;

/* Build one FPDU (CRC on, no markers) and return its bytes. */
static size_t one_fpdu(const uint8_t *ulpdu_hdr, size_t hlen, const void *payload, size_t plen,
		       uint8_t *out)
{
	struct fpdu_tx tx;
	uint8_t hbuf[2 + 64];
	struct iovec iov = { (void *)payload, plen };
	size_t n = 0;

	memcpy(hbuf + 2, ulpdu_hdr, hlen);
	fpdu_tx_init(&tx, true, false);
	fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
			FPDU_BATCH_SCRATCH);
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, hlen, &iov, plen ? 1 : 0), 0);
	for (int i = 0; i < batch.niov; i++) {
		memcpy(out + n, batch.iov[i].iov_base, batch.iov[i].iov_len);
		n += batch.iov[i].iov_len;
	}
	assert_int_equal(n, batch.bytes);
	return n;
}

static void wire_vector_zero_length_write(void **state)
{
	static const uint8_t hdr[14] = { 0xc1, 0x40, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0 };
	static const uint8_t want[20] = { 0x00, 0x0e, 0xc1, 0x40, 0, 0, 0,    1,    0,    0,
					  0,    0,    0,    0,    0, 0, 0xeb, 0xd3, 0x4c, 0x5f };
	uint8_t out[64];
	assert_int_equal(one_fpdu(hdr, 14, NULL, 0, out), 20);
	assert_memory_equal(out, want, 20);
}

static const uint8_t send_hdr_msn1[18] = { 0x41, 0x43, 0, 0, 0, 0, 0, 0, 0,
					   0,    0,    0, 0, 1, 0, 0, 0, 0 };

static void wire_vector_send_ping(void **state)
{
	uint8_t out[64], want[28] = { 0x00, 0x16 };
	memcpy(want + 2, send_hdr_msn1, 18);
	memcpy(want + 20, "ping", 4);
	memcpy(want + 24, "\xa5\x48\x7f\xa7", 4);
	assert_int_equal(one_fpdu(send_hdr_msn1, 18, "ping", 4, out), 28);
	assert_memory_equal(out, want, 28);
}

static void wire_vector_send_hello_with_pad(void **state)
{
	uint8_t out[64], want[32] = { 0x00, 0x17 };
	memcpy(want + 2, send_hdr_msn1, 18);
	memcpy(want + 20, "hello\0\0\0", 8);
	memcpy(want + 28, "\xb9\x90\xb1\x0c", 4);
	assert_int_equal(one_fpdu(send_hdr_msn1, 18, "hello", 5, out), 32);
	assert_memory_equal(out, want, 32);
}

static void wire_vector_zero_length_read_request(void **state)
{
	uint8_t hdr[46] = { 0x41, 0x41 }, out[64];
	be32_put(hdr + DDP_OFF_QN, 1);
	be32_put(hdr + DDP_OFF_MSN, 1);
	be32_put(hdr + 18 + 16, 1); /* source STag 1 */
	static const uint8_t want[52] = {
		0x00, 0x2e, 0x41, 0x41, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0, /* DDP */
		0,    0,    0,    0,    0, 0, 0, 0, 0, 0, 0, 0, /* sink STag, sink TO */
		0,    0,    0,    0,    0, 0, 0, 1,             /* size, source STag */
		0,    0,    0,    0,    0, 0, 0, 0,             /* source TO */
		0xba, 0x10, 0xe3, 0xc9,
	};
	assert_int_equal(one_fpdu(hdr, 46, NULL, 0, out), 52);
	assert_memory_equal(out, want, 52);
}

/* Without CRC the field is sent as zeros, as siw does. */
static void crc_field_is_zero_when_crc_is_off(void **state)
{
	struct fpdu_tx tx;
	uint8_t hbuf[2 + 18];
	struct iovec iov = { (void *)"ping", 4 };
	memcpy(hbuf + 2, send_hdr_msn1, 18);
	fpdu_tx_init(&tx, false, false);
	fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
			FPDU_BATCH_SCRATCH);
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, 18, &iov, 1), 0);
	const struct iovec *last = &batch.iov[batch.niov - 1];
	assert_memory_equal((const uint8_t *)last->iov_base + last->iov_len - 4, "\0\0\0\0", 4);
}

static void mulpdu_follows_rfc5044(void **state)
{
	assert_int_equal(fpdu_mulpdu(1460, false), 1454);
	assert_int_equal(fpdu_mulpdu(1460, true), 1460 - (6 + 4 * 3));
	assert_int_equal(fpdu_mulpdu(1448, false), 1442);
	assert_int_equal(fpdu_mulpdu(1447, false), 1447 - 6 - 3);
	assert_int_equal(fpdu_mulpdu(65483, false), 65483 - 6 - 3);
	assert_int_equal(fpdu_mulpdu(9000, true), 9000 - (6 + 4 * 18));
	assert_int_equal(fpdu_mulpdu(4, false), 0);
	/* the large policy: FPDUs up to 64 KiB */
	assert_int_equal(fpdu_ulpdu_max(FPDU_SIZE_LARGE, 1460, false), 65530);
	assert_int_equal(fpdu_ulpdu_max(FPDU_SIZE_LARGE, 1460, true), 65018);
	assert_int_equal(fpdu_ulpdu_max(FPDU_SIZE_RFC, 1460, false), 1454);
	assert_int_equal(fpdu_ulpdu_max(FPDU_SIZE_RFC, 200000, false), 65530);
	for (uint32_t emss = 64; emss <= 65536; emss += 61) {
		for (int m = 0; m < 2; m++) {
			uint32_t u = fpdu_mulpdu(emss, m);
			assert_int_equal((2 + u) % 4, 0); /* pad-free FPDUs at MULPDU */
			assert_true(2 + u + 4 <= emss);
		}
	}
}

/* The stream a batch makes, its iovecs concatenated; *len its length. */
static uint8_t *frame_all(bool crc, bool flat, const uint32_t *sizes, size_t n, size_t *len)
{
	static uint8_t payload[70000];
	static struct iovec iov[FPDU_BATCH_IOV];
	static uint8_t scratch[200000];
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + 3);
	struct fpdu_tx tx;
	fpdu_tx_init(&tx, crc, true);
	size_t cap = 0;
	for (size_t m = 0; m < n; m++)
		cap += sizes[m] + 32 + 4 * (sizes[m] / 500 + 3);
	uint8_t *out = malloc(cap), hbuf[2 + 18];
	*len = 0;
	for (size_t m = 0; m < n; m++) {
		struct fpdu_batch b;
		fpdu_batch_init(&b, iov, FPDU_BATCH_IOV, scratch, sizeof(scratch));
		b.flat = flat;
		memcpy(hbuf + 2, send_hdr_msn1, 18);
		/* the payload in three pieces of a gather list */
		uint32_t a = sizes[m] / 3, c = sizes[m] / 2;
		struct iovec p[3] = { { payload, a },
				      { payload + a, c - a },
				      { payload + c, sizes[m] - c } };
		assert_int_equal(fpdu_tx_append(&tx, &b, hbuf, 18, p, 3), 0);
		if (flat)
			assert_true(b.niov == 1);
		for (int i = 0; i < b.niov; i++) {
			memcpy(out + *len, b.iov[i].iov_base, b.iov[i].iov_len);
			*len += b.iov[i].iov_len;
		}
	}
	return out;
}

/* A flat batch (each FPDU copied whole, its CRC in one pass) puts on the
 * wire exactly the bytes the piecewise one does, wherever the FPDUs start
 * relative to the markers, with and without CRC. */
static void a_flat_batch_frames_the_same_bytes(void **state)
{
	/* every size up to two marker intervals (every position of the pad,
	 * the CRC and the FPDU's start against the markers), then large ones */
	enum { N = 1100 + 40 };
	static uint32_t sizes[N];
	for (int i = 0; i < N; i++)
		sizes[i] = i < 1100 ? (uint32_t)i : (uint32_t)((i * 2719 + i * i * 13) % 65000);
	sizes[N - 1] = 65000;
	for (int crc = 0; crc < 2; crc++) {
		size_t l1, l2;
		uint8_t *a = frame_all(crc, false, sizes, N, &l1);
		uint8_t *b = frame_all(crc, true, sizes, N, &l2);
		assert_int_equal(l1, l2);
		assert_memory_equal(a, b, l1);
		free(a);
		free(b);
	}
}

/* Markers sit at every 512th octet from the start of full operation and
 * point back at the ULPDU_Length of the FPDU that contains them. */
static void markers_sit_every_512_bytes_and_point_home(void **state)
{
	uint32_t sizes[40];
	struct fpdu_stream s;
	for (int i = 0; i < 40; i++)
		sizes[i] = (uint32_t)(i * 397 % 3000);
	fpdu_stream_build(&s, sizes, 40, 1454, true, true, 3);
	size_t f = 0;
	for (size_t p = 0; p < s.len; p += MPA_MARKER_INTERVAL) {
		while (f < s.n && s.fpdus[f].wire_end <= p)
			f++;
		assert_true(f < s.n);
		const struct sent_fpdu *fp = &s.fpdus[f];
		uint16_t want;
		if (p == fp->wire_start) {
			want = 0; /* on the boundary: precedes the FPDU */
		} else {
			/* the FPDU's length field follows its leading marker */
			size_t len_at = fp->wire_start + (fp->wire_start % 512 == 0 ? 4 : 0);
			want = (uint16_t)(p - len_at);
		}
		assert_int_equal(be16_get(s.bytes + p), 0);
		assert_int_equal(be16_get(s.bytes + p + 2), want);
		assert_int_equal(be16_get(s.bytes + p + 2) & 3, 0);
	}
	/* the first bytes of full operation are a marker */
	assert_memory_equal(s.bytes, "\0\0\0\0", 4);
	fpdu_stream_free(&s);
}

/* The CRC covers the markers: recompute it over the raw FPDU bytes. */
static void crc_covers_markers(void **state)
{
	uint32_t sizes[12] = { 0, 1, 600, 1200, 77, 1440, 3, 511, 512, 513, 1000, 4 };
	struct fpdu_stream s;
	fpdu_stream_build(&s, sizes, 12, 1454, true, true, 9);
	for (size_t i = 0; i < s.n; i++) {
		const struct sent_fpdu *f = &s.fpdus[i];
		size_t len = f->wire_end - f->wire_start;
		/* raw bytes including markers, then the CRC: the residue */
		assert_int_equal(crc32c(s.bytes + f->wire_start, len), CRC32C_RESIDUE);
	}
	fpdu_stream_free(&s);
}

static struct fpdu_rx_cfg cfg_for(bool crc, bool markers)
{
	struct fpdu_rx_cfg c = { .crc = crc, .markers = markers, .hdr_len = rdmap_hdr_len };
	return c;
}

static uint32_t rs = 99;
static uint32_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 17;
	rs ^= rs << 5;
	return rs;
}

static void round_trip_random_streams(void **state)
{
	for (int trial = 0; trial < 40; trial++) {
		bool crc = trial & 1, markers = trial & 2, direct = trial & 4;
		uint32_t sizes[30];
		for (int i = 0; i < 30; i++)
			sizes[i] = rnd() % (i % 5 ? 3000 : 70000);
		uint32_t ulpdu_max = trial & 8 ? fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, markers)
					       : fpdu_mulpdu(1460, markers);
		struct fpdu_stream s;
		fpdu_stream_build(&s, sizes, 30, ulpdu_max, crc, markers, (uint32_t)trial + 1);
		size_t cuts[64];
		for (int i = 0; i < 64; i++)
			cuts[i] = rnd() % (s.len + 1);
		for (int i = 1; i < 64; i++) /* insertion sort */
			for (int j = i; j > 0 && cuts[j - 1] > cuts[j]; j--) {
				size_t t = cuts[j];
				cuts[j] = cuts[j - 1];
				cuts[j - 1] = t;
			}
		struct fpdu_rx_cfg cfg = cfg_for(crc, markers);
		struct parse_result r;
		parse_with_cuts(&r, &cfg, s.bytes, s.len, cuts, 64, direct);
		assert_int_equal(parse_result_check(&r, &s), 0);
		parse_result_free(&r);
		fpdu_stream_free(&s);
	}
}

/* Flip one byte anywhere in an FPDU covered by the CRC: LLP/MPA 0x02. */
static void any_corrupt_byte_is_a_crc_error(void **state)
{
	uint32_t sizes[3] = { 700, 5, 40 };
	for (int markers = 0; markers < 2; markers++) {
		struct fpdu_stream s;
		fpdu_stream_build(&s, sizes, 3, 1454, true, markers, 5);
		struct fpdu_rx_cfg cfg = cfg_for(true, markers);
		for (size_t pos = 0; pos < s.len; pos++) {
			bool in_marker = markers && pos % 512 < 4;
			bool in_len = false;
			for (size_t i = 0; i < s.n; i++) {
				size_t la = s.fpdus[i].wire_start +
					    (markers && s.fpdus[i].wire_start % 512 == 0 ? 4 : 0);
				in_len |= pos == la || pos == la + 1;
			}
			if (in_marker || in_len)
				continue; /* those are framing errors, tested below */
			uint8_t *b = malloc(s.len);
			memcpy(b, s.bytes, s.len);
			b[pos] ^= 0x20;
			for (int pieces = 0; pieces < 2; pieces++) {
				struct parse_result r;
				cfg.pieces = pieces;
				parse_with_cuts(&r, &cfg, b, s.len, NULL, 0, false);
				assert_true(r.error);
				assert_int_equal(r.err.layer, UW_TERM_LAYER_LLP);
				assert_int_equal(r.err.etype, UW_TERM_LLP_MPA);
				assert_int_equal(r.err.ecode, UW_MPA_ECODE_CRC);
				parse_result_free(&r);
			}
			free(b);
		}
		fpdu_stream_free(&s);
	}
}

/* With CRC off the same flip goes unnoticed: the check is real. */
static void without_crc_corruption_is_not_detected(void **state)
{
	uint32_t sizes[1] = { 100 };
	struct fpdu_stream s;
	fpdu_stream_build(&s, sizes, 1, 1454, false, false, 5);
	s.bytes[s.len - 10] ^= 1;
	struct fpdu_rx_cfg cfg = cfg_for(false, false);
	struct parse_result r;
	parse_with_cuts(&r, &cfg, s.bytes, s.len, NULL, 0, false);
	assert_false(r.error);
	assert_int_equal(r.n, s.n);
	parse_result_free(&r);
	fpdu_stream_free(&s);
}

static void expect_error(const uint8_t *b, size_t len, bool crc, bool markers, uint8_t ecode)
{
	struct fpdu_rx_cfg cfg = cfg_for(crc, markers);
	struct parse_result r;
	/* the same verdict whether the bytes come whole or one at a time,
	 * and with several runs between markers per event or one */
	for (int mode = 0; mode < 4; mode++) {
		bool bytewise = mode & 1;
		cfg.pieces = mode & 2;
		size_t cuts[4096];
		size_t nc = 0;
		if (bytewise)
			for (size_t i = 1; i < len && nc < 4096; i++)
				cuts[nc++] = i;
		parse_with_cuts(&r, &cfg, b, len, cuts, nc, false);
		assert_true(r.error);
		assert_int_equal(r.err.layer, UW_TERM_LAYER_LLP);
		assert_int_equal(r.err.ecode, ecode);
		assert_non_null(r.err.what);
		parse_result_free(&r);
	}
}

static void wrong_fpduptr_is_0x03(void **state)
{
	uint32_t sizes[4] = { 1000, 2000, 10, 3000 };
	struct fpdu_stream s;
	fpdu_stream_build(&s, sizes, 4, 1454, true, true, 8);
	for (size_t p = 0; p < s.len; p += 512) {
		uint8_t save = s.bytes[p + 3];
		s.bytes[p + 3] ^= 4; /* off by 4: still aligned, still wrong */
		expect_error(s.bytes, s.len, true, true, UW_MPA_ECODE_MARKER);
		/* found even without CRC */
		expect_error(s.bytes, s.len, false, true, UW_MPA_ECODE_MARKER);
		s.bytes[p + 3] = save;
	}
	fpdu_stream_free(&s);
}

/* A ULPDU_Length that cannot hold a DDP
 * header, zero included. */
static void ulpdu_too_short_for_a_header_is_0x03(void **state)
{
	uint8_t b[64];
	memset(b, 0, sizeof(b));
	for (uint16_t l = 0; l < DDP_TAGGED_HDR_LEN; l++) {
		be16_put(b, l);
		b[2] = 0xc1;
		b[3] = 0x40;
		expect_error(b, sizeof(b), false, false, UW_MPA_ECODE_MARKER);
	}
	/* untagged (18-byte header) with a tagged-sized ULPDU */
	for (uint16_t l = DDP_TAGGED_HDR_LEN; l < DDP_UNTAGGED_HDR_LEN; l++) {
		be16_put(b, l);
		b[2] = 0x41;
		b[3] = 0x43;
		expect_error(b, sizeof(b), false, false, UW_MPA_ECODE_MARKER);
	}
	/* a Read Request is 46 bytes, always */
	be16_put(b, 45);
	b[2] = 0x41;
	b[3] = 0x41;
	expect_error(b, sizeof(b), false, false, UW_MPA_ECODE_MARKER);
}

static void errors_are_sticky(void **state)
{
	struct fpdu_rx rx;
	struct fpdu_rx_cfg cfg = cfg_for(false, false);
	struct fpdu_rx_out out;
	size_t used;
	fpdu_rx_init(&rx, &cfg);
	assert_int_equal(fpdu_rx_step(&rx, (const uint8_t *)"\x00\x02\xc1\x40", 4, &used, &out),
			 FPDU_RX_ERROR);
	assert_int_equal(used, 2);
	assert_int_equal(fpdu_rx_step(&rx, (const uint8_t *)"\x00\x0e", 2, &used, &out),
			 FPDU_RX_ERROR);
	assert_int_equal(used, 0);
	assert_int_equal(fpdu_rx_direct_span(&rx), 0);
}

static void transmit_refuses_oversize(void **state)
{
	static uint8_t big[70000];
	uint8_t hbuf[2 + 14] = { 0 };
	struct fpdu_tx tx;
	struct iovec iov = { big, 65535 - 14 + 1 };
	fpdu_tx_init(&tx, true, false);
	fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
			FPDU_BATCH_SCRATCH);
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, 14, &iov, 1), -EMSGSIZE);
	iov.iov_len = 65535 - 14;
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, 14, &iov, 1), 0);
	/* with markers the FPDU must stay within 64 KiB for FPDUPTR */
	fpdu_tx_init(&tx, true, true);
	fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
			FPDU_BATCH_SCRATCH);
	iov.iov_len = 65530 - 14;
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, 14, &iov, 1), -EMSGSIZE);
	iov.iov_len = 65018 - 14;
	assert_int_equal(fpdu_tx_append(&tx, &batch, hbuf, 14, &iov, 1), 0);
	assert_int_equal(batch.bytes, tx.bytes);
}

/* A full batch says so and leaves everything as it was; never more than
 * IOV_MAX pieces. */
static void full_batch_is_enobufs_and_changes_nothing(void **state)
{
	static uint8_t pay[600];
	for (int markers = 0; markers < 2; markers++) {
		struct fpdu_tx tx;
		uint8_t(*h)[2 + 14] = calloc(4000, sizeof(*h));
		struct iovec iov[3] = { { pay, 100 }, { pay + 200, 100 }, { pay + 400, 100 } };
		int appended = 0;
		fpdu_tx_init(&tx, true, markers);
		fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
				FPDU_BATCH_SCRATCH);
		for (int i = 0; i < 4000; i++) {
			struct fpdu_tx before = tx;
			int niov = batch.niov;
			size_t bytes = batch.bytes, scr = batch.scratch_used;
			int rc = fpdu_tx_append(&tx, &batch, h[i], 14, iov, 3);
			if (rc == -ENOBUFS) {
				assert_memory_equal(&before, &tx, sizeof(tx));
				assert_int_equal(batch.niov, niov);
				assert_int_equal(batch.bytes, bytes);
				assert_int_equal(batch.scratch_used, scr);
				break;
			}
			assert_int_equal(rc, 0);
			assert_true(batch.niov <= FPDU_BATCH_IOV);
			appended++;
		}
		assert_true(appended > 100);
		assert_true(appended < 4000);
		assert_int_equal(tx.fpdus, (uint64_t)appended);
		assert_int_equal(batch.bytes, tx.bytes);
		free(h);
	}
}

/* A header and payload that share one buffer leave as one piece. */
static void adjacent_pieces_are_merged(void **state)
{
	uint8_t buf[2 + 14 + 100] = { 0 };
	struct fpdu_tx tx;
	struct iovec iov = { buf + 16, 100 };
	fpdu_tx_init(&tx, true, false);
	fpdu_batch_init(&batch, batch_store.iov, FPDU_BATCH_IOV, batch_store.scratch,
			FPDU_BATCH_SCRATCH);
	assert_int_equal(fpdu_tx_append(&tx, &batch, buf, 14, &iov, 1), 0);
	assert_int_equal(batch.niov, 2); /* [len|hdr|payload] [pad|crc] */
	assert_int_equal(batch.bytes, 2 + 14 + 100 + 0 + 4);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_flat_batch_frames_the_same_bytes),
		cmocka_unit_test(wire_vector_zero_length_write),
		cmocka_unit_test(wire_vector_send_ping),
		cmocka_unit_test(wire_vector_send_hello_with_pad),
		cmocka_unit_test(wire_vector_zero_length_read_request),
		cmocka_unit_test(crc_field_is_zero_when_crc_is_off),
		cmocka_unit_test(mulpdu_follows_rfc5044),
		cmocka_unit_test(markers_sit_every_512_bytes_and_point_home),
		cmocka_unit_test(crc_covers_markers),
		cmocka_unit_test(round_trip_random_streams),
		cmocka_unit_test(any_corrupt_byte_is_a_crc_error),
		cmocka_unit_test(without_crc_corruption_is_not_detected),
		cmocka_unit_test(wrong_fpduptr_is_0x03),
		cmocka_unit_test(ulpdu_too_short_for_a_header_is_0x03),
		cmocka_unit_test(errors_are_sticky),
		cmocka_unit_test(transmit_refuses_oversize),
		cmocka_unit_test(full_batch_is_enobufs_and_changes_nothing),
		cmocka_unit_test(adjacent_pieces_are_merged),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
