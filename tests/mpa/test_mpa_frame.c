/*
 * test_mpa_frame.c: MPA Request/Reply/Reject encode and decode.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpa/mpa_frame.h"
#include "mpa/mpa_negotiate.h"

/* What Linux siw's rping client sends (seen on the wire;
 * docs/wire-notes.md, learned from the real siw):
 * flags 0x10 (E only), Rev 2, PD_Length 4, IRD 1, ORD 1. */
static const uint8_t siw_rping_request[24] = {
	'M', 'P', 'A', ' ', 'I',  'D',  ' ',  'R',  'e',  'q',  ' ',  'F',
	'r', 'a', 'm', 'e', 0x10, 0x02, 0x00, 0x04, 0x00, 0x01, 0x00, 0x01,
};

static uint32_t rs = 12345;
static uint32_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 17;
	rs ^= rs << 5;
	return rs;
}

static void request_like_siw_rping_is_byte_exact(void **state)
{
	struct mpa_policy pol;
	struct mpa_frame req;
	uint8_t buf[64];

	mpa_policy_default(&pol);
	pol.crc = false;
	pol.ird = 1;
	pol.ord = 1;
	mpa_request(&pol, NULL, 0, &req);
	assert_int_equal(mpa_frame_encode(&req, buf, sizeof(buf)), 24);
	assert_memory_equal(buf, siw_rping_request, 24);
}

static void decodes_siw_rping_request(void **state)
{
	struct mpa_frame f;
	assert_int_equal(mpa_frame_decode(siw_rping_request, 24, MPA_PD_MAX_RFC, &f), 24);
	assert_int_equal(f.type, MPA_FRAME_REQUEST);
	assert_int_equal(f.rev, 2);
	assert_true(f.enhanced);
	assert_false(f.crc);
	assert_false(f.markers);
	assert_false(f.p2p);
	assert_int_equal(f.rtr, 0);
	assert_int_equal(f.ird, 1);
	assert_int_equal(f.ord, 1);
	assert_int_equal(f.pdata_len, 0);
	assert_null(f.pdata);
}

static void random_frame(struct mpa_frame *f, uint8_t *pd)
{
	memset(f, 0, sizeof(*f));
	f->type = rnd() & 1 ? MPA_FRAME_REQUEST : MPA_FRAME_REPLY;
	f->rev = (uint8_t)(rnd() % 3);
	f->markers = rnd() & 1;
	f->crc = rnd() & 1;
	f->reject = f->type == MPA_FRAME_REPLY && (rnd() & 1);
	f->enhanced = f->rev == 2 && (rnd() & 1);
	if (f->enhanced) {
		f->p2p = rnd() & 1;
		f->rtr = (uint8_t)(rnd() % 8);
		f->ird = (uint16_t)(rnd() & MPA_V2_IRD_ORD_MASK);
		f->ord = (uint16_t)(rnd() & MPA_V2_IRD_ORD_MASK);
	}
	f->pdata_len = (uint16_t)(rnd() % (MPA_PD_MAX_RFC - (f->enhanced ? 4 : 0) + 1));
	for (int i = 0; i < f->pdata_len; i++)
		pd[i] = (uint8_t)rnd();
	f->pdata = f->pdata_len ? pd : NULL;
}

static void encode_decode_round_trip(void **state)
{
	uint8_t pd[MPA_PD_MAX_RFC], buf[600], buf2[600];
	for (int trial = 0; trial < 5000; trial++) {
		struct mpa_frame f, g;
		random_frame(&f, pd);
		ssize_t n = mpa_frame_encode(&f, buf, sizeof(buf));
		assert_int_equal(n, (ssize_t)mpa_frame_len(&f));
		assert_int_equal(mpa_frame_decode(buf, (size_t)n, MPA_PD_MAX_RFC, &g), n);
		assert_int_equal(g.type, f.type);
		assert_int_equal(g.rev, f.rev);
		assert_int_equal(g.markers, f.markers);
		assert_int_equal(g.crc, f.crc);
		assert_int_equal(g.reject, f.reject);
		assert_int_equal(g.enhanced, f.enhanced);
		assert_int_equal(g.p2p, f.p2p);
		assert_int_equal(g.rtr, f.rtr);
		assert_int_equal(g.ird, f.ird);
		assert_int_equal(g.ord, f.ord);
		assert_int_equal(g.pdata_len, f.pdata_len);
		if (f.pdata_len)
			assert_memory_equal(g.pdata, f.pdata, f.pdata_len);
		assert_int_equal(g.res, 0);
		/* and back to the same bytes */
		assert_int_equal(mpa_frame_encode(&g, buf2, sizeof(buf2)), n);
		assert_memory_equal(buf, buf2, (size_t)n);
	}
}

static void every_prefix_is_incomplete(void **state)
{
	struct mpa_frame f;
	uint8_t buf[64];
	memcpy(buf, siw_rping_request, 24);
	for (size_t len = 0; len < 24; len++)
		assert_int_equal(mpa_frame_decode(buf, len, MPA_PD_MAX_RFC, &f), -EAGAIN);
}

static void wrong_key_is_refused_at_once(void **state)
{
	struct mpa_frame f;
	uint8_t buf[24];
	memcpy(buf, siw_rping_request, 24);
	buf[15] = 'E'; /* "MPA ID Req FramE" */
	assert_int_equal(mpa_frame_decode(buf, 24, MPA_PD_MAX_RFC, &f), -EPROTO);
	assert_int_equal(mpa_frame_decode(buf, 16, MPA_PD_MAX_RFC, &f), -EPROTO);
	/* An HTTP request is refused from its first byte. */
	assert_int_equal(mpa_frame_decode((const uint8_t *)"GET / HTTP/1.1\r\n", 1, 512, &f),
			 -EPROTO);
	assert_false(mpa_frame_may_be_request((const uint8_t *)"GET / HTTP/1.1\r\n", 16));
	assert_true(mpa_frame_may_be_request(siw_rping_request, 5));
	assert_true(mpa_frame_may_be_request(siw_rping_request, 24));
	assert_false(mpa_frame_may_be_request((const uint8_t *)MPA_KEY_REP, 16));
}

static void revision_above_2_is_refused(void **state)
{
	struct mpa_frame f;
	uint8_t buf[24];
	memcpy(buf, siw_rping_request, 24);
	for (int rev = 3; rev < 256; rev++) {
		buf[MPA_OFF_REV] = (uint8_t)rev;
		assert_int_equal(mpa_frame_decode(buf, 18, MPA_PD_MAX_RFC, &f), -EPROTONOSUPPORT);
		assert_int_equal(mpa_frame_decode(buf, 24, MPA_PD_MAX_RFC, &f), -EPROTONOSUPPORT);
	}
	for (int rev = 0; rev <= 2; rev++) {
		buf[MPA_OFF_REV] = (uint8_t)rev;
		assert_int_equal(mpa_frame_decode(buf, 24, MPA_PD_MAX_RFC, &f), 24);
		assert_int_equal(f.rev, rev);
		assert_int_equal(f.enhanced, rev == 2);
	}
}

static void private_data_over_the_limit_is_refused(void **state)
{
	uint8_t buf[20 + 600];
	struct mpa_frame f;
	memset(buf, 0, sizeof(buf));
	memcpy(buf, MPA_KEY_REP, 16);
	buf[MPA_OFF_REV] = 1;
	buf[18] = 0x02; /* 513 */
	buf[19] = 0x01;
	assert_int_equal(mpa_frame_decode(buf, 20, MPA_PD_MAX_RFC, &f), -EMSGSIZE);
	buf[19] = 0x00; /* 512: the RFC maximum is fine */
	assert_int_equal(mpa_frame_decode(buf, 20 + 512, MPA_PD_MAX_RFC, &f), 20 + 512);
	/* toward siw the limit is 256 */
	buf[18] = 0x01;
	buf[19] = 0x01;
	assert_int_equal(mpa_frame_decode(buf, 20 + 257, MPA_PD_MAX_SIW, &f), -EMSGSIZE);
	buf[19] = 0x00;
	assert_int_equal(mpa_frame_decode(buf, 20 + 256, MPA_PD_MAX_SIW, &f), 20 + 256);
	/* a configured limit below both */
	assert_int_equal(mpa_frame_decode(buf, 20 + 256, 40, &f), -EMSGSIZE);
}

static void enhanced_frame_needs_four_bytes(void **state)
{
	uint8_t buf[24];
	struct mpa_frame f;
	memcpy(buf, siw_rping_request, 24);
	for (int pd = 0; pd < 4; pd++) {
		buf[19] = (uint8_t)pd;
		assert_int_equal(mpa_frame_decode(buf, 24, MPA_PD_MAX_RFC, &f), -EBADMSG);
	}
	/* E is a reserved bit in revision 1: ignored, not enhanced */
	buf[MPA_OFF_REV] = 1;
	buf[19] = 0;
	assert_int_equal(mpa_frame_decode(buf, 20, MPA_PD_MAX_RFC, &f), 20);
	assert_false(f.enhanced);
	assert_int_equal(f.res, MPA_FLAG_E);
}

static void reserved_bits_are_reported_and_ignored(void **state)
{
	uint8_t buf[24], out[64];
	struct mpa_frame f;
	memcpy(buf, siw_rping_request, 24);
	buf[MPA_OFF_FLAGS] |= 0x0f; /* includes siw's GSO_EXP bit, 0x08 */
	assert_int_equal(mpa_frame_decode(buf, 24, MPA_PD_MAX_RFC, &f), 24);
	assert_int_equal(f.res, 0x0f);
	assert_true(f.enhanced);
	assert_int_equal(f.ird, 1);
	/* and never sent */
	assert_int_equal(mpa_frame_encode(&f, out, sizeof(out)), 24);
	assert_memory_equal(out, siw_rping_request, 24);
}

/* A siw responder may put FPDUs right behind its Reply, even in the same
 * read: the decoder says where the frame ends and leaves the rest alone. */
static void bytes_after_the_frame_are_handed_back(void **state)
{
	uint8_t buf[64];
	struct mpa_frame f;
	struct mpa_frame rep = { .type = MPA_FRAME_REPLY,
				 .rev = 2,
				 .enhanced = true,
				 .ird = 1,
				 .ord = 1,
				 .pdata = (const uint8_t *)"hi",
				 .pdata_len = 2 };
	ssize_t n = mpa_frame_encode(&rep, buf, sizeof(buf));
	assert_int_equal(n, 26);
	memcpy(buf + n, "\x00\x0e\xc1\x40", 4);
	assert_int_equal(mpa_frame_decode(buf, (size_t)n + 4, MPA_PD_MAX_RFC, &f), n);
	assert_memory_equal(f.pdata, "hi", 2);
	assert_memory_equal(buf + n, "\x00\x0e\xc1\x40", 4);
}

static void encoder_refuses_impossible_frames(void **state)
{
	uint8_t pd[600] = { 0 }, buf[700];
	struct mpa_frame f = { .type = MPA_FRAME_REQUEST, .rev = 3 };
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.rev = 2;
	f.enhanced = true;
	f.ird = 0x4000;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.ird = 1;
	f.rtr = 0x8;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.rtr = 0;
	f.pdata = pd;
	f.pdata_len = 509; /* + 4 block bytes = 513 */
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EMSGSIZE);
	f.pdata_len = 508;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), 532);
	assert_int_equal(mpa_frame_encode(&f, buf, 531), -ENOBUFS);
	f.pdata = NULL;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
	f.type = 0;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), -EINVAL);
}

/* R only exists in a Reply: an encoder never sets it in a Request. */
static void reject_bit_only_in_reply(void **state)
{
	uint8_t buf[32];
	struct mpa_frame f = { .type = MPA_FRAME_REQUEST, .rev = 1, .reject = true };
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), 20);
	assert_int_equal(buf[MPA_OFF_FLAGS] & MPA_FLAG_R, 0);
	f.type = MPA_FRAME_REPLY;
	assert_int_equal(mpa_frame_encode(&f, buf, sizeof(buf)), 20);
	assert_int_equal(buf[MPA_OFF_FLAGS] & MPA_FLAG_R, MPA_FLAG_R);
	assert_memory_equal(buf, MPA_KEY_REP, 16);
	/* R received in a Request is a reserved bit there: reported, ignored
	 * (found by fuzzing: it used to decode as a rejecting Request) */
	struct mpa_frame g;
	memcpy(buf, MPA_KEY_REQ, 16);
	assert_int_equal(mpa_frame_decode(buf, 20, 512, &g), 20);
	assert_false(g.reject);
	assert_int_equal(g.res, MPA_FLAG_R);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(request_like_siw_rping_is_byte_exact),
		cmocka_unit_test(decodes_siw_rping_request),
		cmocka_unit_test(encode_decode_round_trip),
		cmocka_unit_test(every_prefix_is_incomplete),
		cmocka_unit_test(wrong_key_is_refused_at_once),
		cmocka_unit_test(revision_above_2_is_refused),
		cmocka_unit_test(private_data_over_the_limit_is_refused),
		cmocka_unit_test(enhanced_frame_needs_four_bytes),
		cmocka_unit_test(reserved_bits_are_reported_and_ignored),
		cmocka_unit_test(bytes_after_the_frame_are_handed_back),
		cmocka_unit_test(encoder_refuses_impossible_frames),
		cmocka_unit_test(reject_bit_only_in_reply),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
