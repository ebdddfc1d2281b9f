/*
 * test_rdmap_term.c: the Terminate Control field, sent in the RFC encoding
 * and read in both the RFC's and Linux siw's (docs/wire-notes.md).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdmap/rdmap_term.h"

static void rfc_encoding_of_layer_etype_code_and_flags(void **state)
{
	struct rddp_error e = { 1, 2, 0x33, "x" };
	uint8_t ddp[18] = { 0x41, 0x43 }, out[64];
	size_t n = rdmap_term_encode(&e, 0x1234, ddp, 18, NULL, out);
	assert_int_equal(n, 4 + 2 + 18);
	assert_memory_equal(out, "\x12\x33\xc0\x00", 4);
	assert_memory_equal(out + 4, "\x12\x34", 2);
	assert_memory_equal(out + 6, ddp, 18);
	/* no header: M, D and R clear and nothing follows */
	assert_int_equal(rdmap_term_encode(&e, 0, NULL, 0, NULL, out), 4);
	assert_memory_equal(out, "\x12\x33\x00\x00", 4);
	/* with the Read Request header: R too */
	uint8_t rr[28];
	memset(rr, 0x5a, sizeof(rr));
	n = rdmap_term_encode(&e, 46, ddp, 18, rr, out);
	assert_int_equal(n, 4 + 2 + 18 + 28);
	assert_int_equal(out[2], 0xe0);
	assert_memory_equal(out + 24, rr, 28);
}

/* What a stock Debian 6.1 siw was seen sending (docs/wire-notes.md,
 * learned from the real siw). */
static void siw_encodings_seen_on_the_wire(void **state)
{
	static const struct {
		uint8_t b[4];
		uint8_t layer, etype, ecode;
		bool m, d;
	} seen[] = {
		{ { 0x21, 0x01, 0x03, 0x00 }, 1, 2, 0x01, true, true },   /* Send on QN 5 */
		{ { 0x21, 0x03, 0x03, 0x00 }, 1, 2, 0x03, true, true },   /* MSN error */
		{ { 0x11, 0x00, 0x03, 0x00 }, 1, 1, 0x00, true, true },   /* unknown STag */
		{ { 0x21, 0x06, 0x00, 0x00 }, 1, 2, 0x06, false, false }, /* DDP version */
	};
	for (size_t i = 0; i < sizeof(seen) / sizeof(seen[0]); i++) {
		uint8_t p[64];
		memset(p, 0, sizeof(p));
		memcpy(p, seen[i].b, 4);
		p[6] = 0x41; /* an attached untagged header follows when D */
		struct rdmap_term t;
		assert_int_equal(rdmap_term_decode(p, seen[i].d ? 4 + 2 + 18 : 4, &t), 0);
		const struct rdmap_term_reading *r = rdmap_term_reading(&t);
		assert_true(t.siw_likely || (seen[i].b[0] >> 4) == (seen[i].b[0] & 0xf));
		assert_int_equal(r->layer, seen[i].layer);
		assert_int_equal(r->etype, seen[i].etype);
		assert_int_equal(r->ecode, seen[i].ecode);
		assert_int_equal(r->m, seen[i].m);
		assert_int_equal(r->d, seen[i].d);
		assert_int_equal(t.ddp_hdr_len, seen[i].d ? 18 : 0);
		/* both readings are reported */
		assert_int_equal(t.rfc.layer, seen[i].b[0] >> 4);
		assert_int_equal(t.siw.layer, seen[i].b[0] & 0xf);
	}
}

/* One error in both encodings. */
static void both_encodings_of_one_error_agree(void **state)
{
	struct rdmap_term a, b;
	uint8_t rfc[24] = { 0x12, 0x33, 0xc0, 0x00, 0, 24 },
		siw[24] = { 0x21, 0x33, 0x03, 0x00, 0, 24 };
	assert_int_equal(rdmap_term_decode(rfc, sizeof(rfc), &a), 0);
	assert_int_equal(rdmap_term_decode(siw, sizeof(siw), &b), 0);
	assert_false(a.siw_likely);
	assert_true(b.siw_likely);
	const struct rdmap_term_reading *ra = rdmap_term_reading(&a), *rb = rdmap_term_reading(&b);
	assert_int_equal(ra->layer, 1);
	assert_int_equal(ra->etype, 2);
	assert_int_equal(rb->layer, 1);
	assert_int_equal(rb->etype, 2);
	assert_int_equal(ra->ecode, rb->ecode);
	assert_true(ra->m && ra->d && rb->m && rb->d);
	assert_int_equal(a.seglen, 24);
	assert_int_equal(b.seglen, 24);
}

static void short_or_truncated_terminates(void **state)
{
	struct rdmap_term t;
	uint8_t p[8] = { 0x12, 0x01, 0xc0, 0x00, 0x00 };
	assert_int_equal(rdmap_term_decode(p, 3, &t), -EBADMSG);
	/* flags promise a header that is not there: reported absent */
	assert_int_equal(rdmap_term_decode(p, 5, &t), 0);
	assert_false(t.has_seglen);
	assert_int_equal(t.ddp_hdr_len, 0);
	assert_int_equal(rdmap_term_decode(p, 8, &t), 0);
	assert_true(t.has_seglen);
	assert_int_equal(t.ddp_hdr_len, 0);
}

/* Round trip of every code the stack can send. */
static void every_code_round_trips(void **state)
{
	for (int layer = 0; layer <= 2; layer++)
		for (int etype = 0; etype <= (layer == 2 ? 0 : 2); etype++)
			for (int ecode = 0; ecode < 256; ecode += 17) {
				struct rddp_error e = { (uint8_t)layer, (uint8_t)etype,
							(uint8_t)ecode, "" };
				uint8_t out[64], tagged[14] = { 0xc1, 0x40 };
				size_t n = rdmap_term_encode(&e, 30, tagged, 14, NULL, out);
				struct rdmap_term t;
				assert_int_equal(rdmap_term_decode(out, n, &t), 0);
				assert_false(t.siw_likely);
				assert_int_equal(t.rfc.layer, layer);
				assert_int_equal(t.rfc.etype, etype);
				assert_int_equal(t.rfc.ecode, ecode);
				assert_int_equal(t.ddp_hdr_len, 14);
				assert_memory_equal(t.ddp_hdr, tagged, 14);
			}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc_encoding_of_layer_etype_code_and_flags),
		cmocka_unit_test(siw_encodings_seen_on_the_wire),
		cmocka_unit_test(both_encodings_of_one_error_agree),
		cmocka_unit_test(short_or_truncated_terminates),
		cmocka_unit_test(every_code_round_trips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
