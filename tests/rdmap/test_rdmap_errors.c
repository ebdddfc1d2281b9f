/*
 * test_rdmap_errors.c: every DDP and RDMAP receive error (RFC 5041 and RFC
 * 5040, section 7 of each; docs/wire-notes.md where stacks differ). Each
 * malformed message gets its Terminate code (RFC 6580), places no byte
 * outside a registered region, leaves the stream terminating, and the
 * Terminate it earns decodes (by a second endpoint) to the same code with
 * the offending headers attached.
 *
 * The MPA rows are proved elsewhere: 1 CRC (test_fpdu
 * any_corrupt_byte_is_a_crc_error), 2 FPDUPTR (wrong_fpduptr_is_0x03), 3-11
 * frames and negotiation (test_mpa_frame, test_mpa_negotiate), 32 ULPDU
 * length (ulpdu_too_short_for_a_header_is_0x03).
 *
 * Where siw and Chelsio disagree we take the RFC's code: a Write without
 * REMOTE_WRITE is RDMAP 1/0x02 (siw says DDP 1/0x00); a Send longer than
 * its buffer is DDP 2/0x05 (siw says 2/0x02); too many Read Requests is
 * RDMAP 2/0x07 (as siw; Chelsio says DDP 2/0x03). A T bit that contradicts
 * the opcode is RDMAP 2/0x06 (Chelsio: DDP 0/0).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "rdmap_fixture.h"

static uint8_t sent_hdr[128];
static size_t sent_hl, sent_len;

static int send_raw(struct fixture *f, const uint8_t *h, size_t hl, const void *p, size_t len)
{
	memcpy(sent_hdr, h, hl);
	sent_hl = hl;
	sent_len = len;
	return deliver(f, h, hl, p, len);
}

#define L_RDMAP UW_TERM_LAYER_RDMAP
#define L_DDP UW_TERM_LAYER_DDP

/* B must have failed with this code; check the Terminate it sends. */
static void expect_term(struct fixture *f, int rc, uint8_t layer, uint8_t etype, uint8_t ecode,
			bool ddp_hdr, bool rdmap_hdr)
{
	assert_int_equal(rc, -EBADMSG);
	assert_true(f->b.failed);
	assert_int_equal(f->b.conn.state, RDMAP_TERMINATING);
	if (f->b.err.layer != layer || f->b.err.etype != etype || f->b.err.ecode != ecode)
		fail_msg("got %u/%u/0x%02x (%s), want %u/%u/0x%02x", f->b.err.layer, f->b.err.etype,
			 f->b.err.ecode, f->b.err.what, layer, etype, ecode);
	assert_non_null(f->b.err.what);
	assert_true(guards_intact(f));

	/* The Terminate, as the peer receives it. */
	struct sim_wire t = { 0 };
	sim_end_terminate(&f->b, &t);
	int nev = f->a.nev;
	assert_int_equal(sim_end_feed(&f->a, t.b, t.len), -EBADMSG);
	assert_int_equal(f->a.conn.state, RDMAP_PEER_TERMINATED);
	assert_int_equal(f->a.nev, nev + 1);
	const struct rdmap_term *term = &f->a.ev[nev].term;
	assert_int_equal(f->a.ev[nev].kind, RDMAP_EV_TERMINATE);
	assert_false(term->siw_likely);
	assert_int_equal(term->rfc.layer, layer);
	assert_int_equal(term->rfc.etype, etype);
	assert_int_equal(term->rfc.ecode, ecode);
	assert_int_equal(term->rfc.d, ddp_hdr);
	assert_int_equal(term->rfc.m, ddp_hdr);
	assert_int_equal(term->rfc.r, rdmap_hdr);
	if (ddp_hdr) {
		size_t dl = (sent_hdr[0] & 0x80) ? DDP_TAGGED_HDR_LEN : DDP_UNTAGGED_HDR_LEN;
		assert_int_equal(term->ddp_hdr_len, dl);
		assert_memory_equal(term->ddp_hdr, sent_hdr, dl);
		assert_int_equal(term->seglen, sent_hl + sent_len);
	}
	if (rdmap_hdr)
		assert_memory_equal(term->rdmap_hdr, sent_hdr + DDP_UNTAGGED_HDR_LEN,
				    RDMAP_READ_REQ_LEN);
	sim_wire_free(&t);
	/* and the stream stays dead */
	assert_int_equal(sim_end_feed(&f->b, (const uint8_t *)"\0", 1), -EBADMSG);
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	fixture_init(f, false, 4);
	*state = f;
	return 0;
}

static int setup_7306(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	fixture_init(f, true, 4);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	fixture_fini(*state);
	free(*state);
	return 0;
}

static uint8_t payload[2048];

/* Row 12 */
static void row12_ddp_version_untagged_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 0, 0);
	h[0] = 0x40; /* DV 0 */
	expect_term(f, send_raw(f, h, n, payload, 10), L_DDP, UW_DDP_UNTAGGED,
		    UW_DDP_U_INVALID_VERSION, true, false);
	assert_true(untouched(f->recvbuf, 256));
}

static void row12_ddp_version_tagged_is_1_04(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_rw, 0x10000);
	h[0] = 0xc2; /* DV 2 */
	expect_term(f, send_raw(f, h, n, payload, 10), L_DDP, UW_DDP_TAGGED,
		    UW_DDP_T_INVALID_VERSION, true, false);
	assert_true(untouched(f->region, REGION));
}

/* Row 13 */
static void row13_rdmap_version_is_2_05(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 0, 0);
	h[1] = 0x03; /* RV 0 */
	expect_term(f, send_raw(f, h, n, payload, 10), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_INVALID_VERSION, true, false);
}

/* Row 14: opcodes 0x8-0xF to a peer without RFC 7306 */
static void row14_unknown_opcode_is_2_06(void **state)
{
	for (uint8_t op = 0x8; op <= 0xf; op++) {
		void *s;
		setup(&s);
		struct fixture *f = s;
		uint8_t h[128];
		memset(h, 0, sizeof(h));
		size_t n = hdr_untagged(h, op, true, 0, 1, 0, 0);
		expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
			    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
		teardown(&s);
	}
}

/* Reserved opcodes stay unexpected even between uwarp peers. */
static void row14_reserved_opcode_with_rfc7306_is_2_06(void **state)
{
	static const uint8_t reserved[] = { 0x8, 0x9, 0xe, 0xf };
	for (size_t i = 0; i < sizeof(reserved); i++) {
		void *s;
		setup_7306(&s);
		struct fixture *f = s;
		uint8_t h[64];
		size_t n = hdr_untagged(h, reserved[i], true, 0, 1, 0, 0);
		expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
			    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
		teardown(&s);
	}
}

/* Row 15 */
static void row15_write_without_t_bit_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_RDMA_WRITE, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 4), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
	assert_true(untouched(f->region, REGION));
}

static void row15_send_with_t_bit_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_tagged(h, RDMAP_SEND, true, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 4), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
	assert_true(untouched(f->region, REGION));
	assert_true(untouched(f->recvbuf, 256));
}

/* Row 16 */
static void row16_send_on_wrong_queue_is_2_01(void **state)
{
	static const uint32_t qns[] = { 1, 2, 3, 5, 0xffffffff };
	for (size_t i = 0; i < sizeof(qns) / sizeof(qns[0]); i++) {
		void *s;
		setup(&s);
		struct fixture *f = s;
		uint8_t h[64];
		post_recv(f, 256);
		size_t n = hdr_untagged(h, RDMAP_SEND, true, qns[i], 1, 0, 0);
		expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_UNTAGGED,
			    UW_DDP_U_INVALID_QN, true, false);
		assert_true(untouched(f->recvbuf, 256));
		teardown(&s);
	}
}

/* Row 17: skip, repeat, far away */
static void row17_send_msn_out_of_sequence_is_2_03(void **state)
{
	/* after MSN 1: a skip, a repeat, half the MSN space away, far ahead */
	static const uint32_t bad[] = { 3, 1, 2u + 0x80000000u, 7 };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		void *s;
		setup(&s);
		struct fixture *f = s;
		uint8_t h[64];
		post_recv(f, 256);
		post_recv(f, 256);
		/* a good first Send, then the bad MSN */
		size_t n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 0, 0);
		assert_int_equal(send_raw(f, h, n, payload, 8), 0);
		n = hdr_untagged(h, RDMAP_SEND, true, 0, bad[i], 0, 0);
		expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_UNTAGGED,
			    UW_DDP_U_MSN_RANGE, true, false);
		teardown(&s);
	}
}

/* Row 18 */
static void row18_send_without_receive_is_2_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_NO_BUFFER,
		    true, false);
}

/* With recv_wait (the engine's UWARP_RECV_WAIT_MS) a Send that finds no
 * receive waits: -EAGAIN, and nothing changed, so that the same header
 * judged again once a receive is posted is placed in it; a wait that ran
 * out (recv_wait_over) earns row 18's Terminate. */
/* op's first segment, with no receive posted: it waits (-EAGAIN), and
 * asking again changes nothing either */
static size_t begin_waits(struct fixture *f, uint8_t op, uint8_t *h)
{
	struct rdmap_conn *c = &f->b.conn;
	struct rdmap_place pl;
	c->cfg.recv_wait = true;
	size_t n = hdr_untagged(h, op, true, 0, 1, 0, 0);
	for (int again = 0; again < 2; again++) {
		assert_int_equal(rdmap_rx_begin(c, h, n, 8, &pl), -EAGAIN);
		assert_int_equal(c->state, RDMAP_OPEN);
		assert_null(c->recv);
		assert_int_equal(c->ddp.q[0].msn, 1);
		assert_false(c->ddp.q[0].in_msg);
	}
	return n;
}

static void row18_with_recv_wait_a_send_waits_for_a_receive(void **state)
{
	struct fixture *f = *state;
	struct rdmap_place pl;
	uint8_t h[64];
	size_t n = begin_waits(f, RDMAP_SEND, h);
	post_recv(f, 256);
	assert_int_equal(rdmap_rx_begin(&f->b.conn, h, n, 8, &pl), 0);
	assert_int_equal(pl.niov, 1);
	assert_ptr_equal(pl.iov[0].iov_base, f->recvbuf);
	assert_int_equal(pl.iov[0].iov_len, 8);
}

static void row18_a_send_whose_wait_ran_out_is_2_02(void **state)
{
	struct fixture *f = *state;
	struct rdmap_conn *c = &f->b.conn;
	struct rdmap_place pl;
	uint8_t h[64];
	size_t n = begin_waits(f, RDMAP_SEND, h);
	c->recv_wait_over = true;
	assert_int_equal(rdmap_rx_begin(c, h, n, 8, &pl), -EBADMSG);
	assert_int_equal(c->state, RDMAP_TERMINATING);
	assert_int_equal(c->err.layer, L_DDP);
	assert_int_equal(c->err.etype, UW_DDP_UNTAGGED);
	assert_int_equal(c->err.ecode, UW_DDP_U_NO_BUFFER);
}

/* A zero-length Send also needs a receive (it completes one). */
static void row18_zero_length_send_without_receive_is_2_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_NO_BUFFER, true,
		    false);
}

/* Row 19: a gap and an overlap */
static void row19_send_mo_gap_or_overlap_is_2_04(void **state)
{
	static const uint32_t bad_mo[] = { 100, 50, 0, 99 };
	for (size_t i = 0; i < sizeof(bad_mo) / sizeof(bad_mo[0]); i++) {
		void *s;
		setup(&s);
		struct fixture *f = s;
		uint8_t h[64];
		post_recv(f, 256);
		size_t n = hdr_untagged(h, RDMAP_SEND, false, 0, 1, 0, 0);
		assert_int_equal(send_raw(f, h, n, payload, 60), 0);
		n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, bad_mo[i], 0);
		expect_term(f, send_raw(f, h, n, payload, 10), L_DDP, UW_DDP_UNTAGGED,
			    UW_DDP_U_INVALID_MO, true, false);
		/* the first segment landed, nothing after it */
		assert_true(untouched(f->recvbuf + 60, 256 - 60));
		teardown(&s);
	}
}

/* Row 20: the RFC code, 0x05, where siw says 0x02 */
static void row20_send_longer_than_buffer_is_2_05(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 100);
	size_t n = hdr_untagged(h, RDMAP_SEND, false, 0, 1, 0, 0);
	assert_int_equal(send_raw(f, h, n, payload, 80), 0);
	n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 80, 0);
	expect_term(f, send_raw(f, h, n, payload, 21), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG,
		    true, false);
	assert_true(untouched(f->recvbuf + 80, 256 - 80));
}

/* Row 21 */
static void row21_read_request_with_mo_is_2_04(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 16, f->stag_rw, 0x10000);
	be32_put(h + DDP_OFF_MO, 4);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_MO,
		    true, false);
}

static void row21_read_request_with_payload_is_2_05(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 16, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 4), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG,
		    true, false);
}

static void row21_terminate_with_mo_is_2_04(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_TERMINATE, true, DDP_QN_TERMINATE, 1, 8, 0);
	memset(h + n, 0, 4);
	expect_term(f, send_raw(f, h, n + 4, NULL, 0), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_MO,
		    true, false);
}

/* Row 22 */
static void row22_read_request_msn_is_2_03(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 2, f->a_sink_stag, 0, 16, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_MSN_RANGE, true,
		    false);
}

/* Row 23: IRD 4, a fifth Read Request before any Response */
static void row23_read_requests_beyond_ird_are_2_07(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	for (uint32_t msn = 1; msn <= 4; msn++) {
		size_t n = hdr_read_req(h, msn, f->a_sink_stag, 0, 16, f->stag_rw, 0x10000);
		assert_int_equal(send_raw(f, h, n, NULL, 0), 0);
	}
	assert_int_equal(rdmap_irq_count(&f->b.conn), 4);
	size_t n = hdr_read_req(h, 5, f->a_sink_stag, 0, 16, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_CATASTROPHIC_STREAM, true, false);
}

/* IRD 0 forbids every Read (what advertising IRD 0 to siw means). */
static void row23_read_request_with_ird_zero_is_2_07(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	fixture_init(f, false, 0);
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 0, 1, 0);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_CATASTROPHIC_STREAM, true, false);
	fixture_fini(f);
	free(f);
}

/* Row 24: an unknown STag, and a known index with the wrong key */
static void row24_write_to_unknown_stag_is_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	uint32_t wrong_key = f->stag_rw ^ 0x5a;
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, wrong_key, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 64), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row24_write_to_stag_never_registered_is_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, 0x7f0000aa, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 64), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
}

/* Row 25 */
static void row25_write_past_the_end_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_rw, 0x10000 + REGION - 10);
	expect_term(f, send_raw(f, h, n, payload, 11), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row25_write_below_the_start_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_rw, 0x10000 - 1);
	expect_term(f, send_raw(f, h, n, payload, 2), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

/* A Write whose later segment runs past the end: the earlier ones land,
 * the bad one does not. */
static void row25_write_second_segment_past_the_end_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, false, f->stag_rw, 0x10000 + REGION - 100);
	assert_int_equal(send_raw(f, h, n, payload, 100), 0);
	n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_rw, 0x10000 + REGION);
	expect_term(f, send_raw(f, h, n, payload, 1), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
}

static void row25_read_past_the_end_is_rdmap_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 100, f->stag_rw, 0x10000 + REGION - 50);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_BASE_BOUNDS, true, true);
}

/* Row 26: an STag of another PD, or a window bound to another QP, gets the
 * Terminate of an STag that names nothing, never "not associated" (that
 * answer would tell a peer walking STags it had found another stream's
 * memory; docs/wire-notes.md, "STags and isolation"), and the same answer
 * out of bounds as within them. */
static void row26_stag_of_another_pd_is_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_other_pd, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row26_stag_of_another_pd_out_of_bounds_is_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_other_pd, 0x10);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
}

static void row26_window_bound_to_another_qp_is_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_other_qp, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
}

static void row26_read_of_another_pd_is_rdmap_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 8, f->stag_other_pd, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_INVALID_STAG, true, true);
}

/* Row 27 */
static void row27_to_wrap_is_1_03(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_rw, UINT64_MAX - 3);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_TO_WRAP, true,
		    false);
	assert_true(untouched(f->region, REGION));
}

/* Row 28: rights are RDMAP's (RFC 5040); siw reports DDP 1/0x00 instead */
static void row28_write_without_remote_write_is_rdmap_1_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_read_only, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 8), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_ACCESS_RIGHTS, true, false);
	assert_true(untouched(f->region, REGION));
}

static void row28_read_without_remote_read_is_rdmap_1_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 8, f->stag_write_only, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_ACCESS_RIGHTS, true, true);
}

/* Row 28, a region with no remote rights at all: its STag is a local key,
 * never given to a peer, and a peer that names it gets the answer for an
 * STag that names nothing (a rights answer would tell a walker it is live;
 * docs/wire-notes.md, "STags and isolation"). */
static void row28_write_to_a_local_only_region_is_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_no_rights, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row28_read_of_a_local_only_region_is_rdmap_invalid_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_read_req(h, 1, f->a_sink_stag, 0, 8, f->stag_no_rights, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_INVALID_STAG, true, true);
}

/* Row 29: Read Responses that do not match the outstanding Read. B is the
 * requester here: it issues a Read of 100 bytes into its region. */
static void issue_read(struct fixture *f)
{
	struct sim_wire w = { 0 };
	struct rdmap_msg m = { .opcode = RDMAP_RDMA_READ_REQ,
			       .sink_stag = f->stag_rw,
			       .sink_to = 0x10000,
			       .len = 100,
			       .stag = 0x1234,
			       .to = 0 };
	assert_int_equal(sim_end_send(&f->b, &m, &w), 0);
	sim_wire_free(&w);
}

static void row29_read_response_wrong_stag_is_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	issue_read(f);
	size_t n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_mw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 100), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row29_read_response_wrong_to_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	issue_read(f);
	size_t n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_rw, 0x10008);
	expect_term(f, send_raw(f, h, n, payload, 100), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row29_read_response_too_long_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	issue_read(f);
	size_t n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 101), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
	assert_true(untouched(f->region, REGION));
}

static void row29_read_response_too_short_is_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	issue_read(f);
	size_t n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 99), L_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
		    true, false);
}

static void row29_read_response_without_read_is_ddp_catastrophic(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 10), L_DDP, UW_DDP_CATASTROPHIC, 0, false, false);
	assert_true(untouched(f->region, REGION));
}

/* Row 30 */
static void row30_send_with_invalidate_of_plain_mr_is_2_09(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND_INVAL, true, 0, 1, 0, f->stag_rw);
	expect_term(f, send_raw(f, h, n, payload, 8), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_CANNOT_INVALIDATE, true, false);
	/* and the STag still works */
	struct ddp_region r;
	assert_int_equal(sim_mem_lookup(&f->b.mem, f->stag_rw, &r), 0);
}

static void row30_send_with_invalidate_of_unknown_stag_is_2_09(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND_SE_INVAL, true, 0, 1, 0, 0x99999999);
	expect_term(f, send_raw(f, h, n, payload, 8), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_CANNOT_INVALIDATE, true, false);
}

/* Row 31: interleaving inside a class */
static void row31_new_send_inside_a_send_is_2_03(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND, false, 0, 1, 0, 0);
	assert_int_equal(send_raw(f, h, n, payload, 40), 0);
	n = hdr_untagged(h, RDMAP_SEND, true, 0, 2, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_MSN_RANGE,
		    true, false);
}

static void row31_opcode_change_inside_a_send_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND, false, 0, 1, 0, 0);
	assert_int_equal(send_raw(f, h, n, payload, 40), 0);
	n = hdr_untagged(h, RDMAP_SEND_SE, true, 0, 1, 40, 0);
	expect_term(f, send_raw(f, h, n, payload, 8), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
}

static void row31_new_write_inside_a_write_is_1_00(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, false, f->stag_rw, 0x10000);
	assert_int_equal(send_raw(f, h, n, payload, 40), 0);
	n = hdr_tagged(h, RDMAP_RDMA_WRITE, true, f->stag_mw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
		    true, false);
}

static void row31_read_response_inside_a_write_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	issue_read(f);
	size_t n = hdr_tagged(h, RDMAP_RDMA_WRITE, false, f->stag_rw, 0x10000);
	assert_int_equal(send_raw(f, h, n, payload, 40), 0);
	n = hdr_tagged(h, RDMAP_RDMA_READ_RESP, true, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, payload, 100), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
}

/* Untagged and tagged may interleave: a Read Request inside a Send is fine. */
static void row31_read_request_inside_a_send_is_allowed(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_SEND, false, 0, 1, 0, 0);
	assert_int_equal(send_raw(f, h, n, payload, 40), 0);
	n = hdr_read_req(h, 1, f->a_sink_stag, 0, 8, f->stag_rw, 0x10000);
	assert_int_equal(send_raw(f, h, n, NULL, 0), 0);
	n = hdr_untagged(h, RDMAP_SEND, true, 0, 1, 40, 0);
	assert_int_equal(send_raw(f, h, n, payload, 8), 0);
	assert_int_equal(f->b.nev, 2);
	assert_int_equal(f->b.ev[0].kind, RDMAP_EV_READ_REQ);
	assert_int_equal(f->b.ev[1].kind, RDMAP_EV_RECV);
	assert_int_equal(f->b.ev[1].len, 48);
	assert_false(f->b.failed);
}

/* Row 33: a Terminate on the wrong queue, with the wrong MSN or MO. */
static void row33_terminate_bad_qn_msn_mo(void **state)
{
	static const struct {
		uint32_t qn, msn, mo;
		uint8_t ecode;
	} cases[] = {
		{ 0, 1, 0, UW_DDP_U_INVALID_QN },
		{ 2, 2, 0, UW_DDP_U_MSN_RANGE },
		{ 2, 1, 4, UW_DDP_U_INVALID_MO },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		void *s;
		setup(&s);
		struct fixture *f = s;
		uint8_t h[64];
		size_t n = hdr_untagged(h, RDMAP_TERMINATE, true, cases[i].qn, cases[i].msn,
					cases[i].mo, 0);
		memcpy(h + n, "\x12\x33\x00\x00", 4);
		expect_term(f, send_raw(f, h, n + 4, NULL, 0), L_DDP, UW_DDP_UNTAGGED,
			    cases[i].ecode, true, false);
		teardown(&s);
	}
}

/* RFC 7306 messages going wrong. */
static void immediate_to_peer_without_rfc7306_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_IMMEDIATE, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 8), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
}

/* Immediate Data takes a receive too: it waits as a Send does */
/* Immediate Data takes a receive too: it waits as a Send does */
static void immediate_with_recv_wait_waits_for_a_receive(void **state)
{
	struct fixture *f = *state;
	struct rdmap_place pl;
	uint8_t h[64];
	size_t n = begin_waits(f, RDMAP_IMMEDIATE, h);
	post_recv(f, 256);
	assert_int_equal(rdmap_rx_begin(&f->b.conn, h, n, 8, &pl), 0);
	assert_non_null(f->b.conn.recv);
}

static void immediate_without_receive_is_2_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_IMMEDIATE, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 8), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_NO_BUFFER,
		    true, false);
}

static void immediate_of_nine_bytes_is_2_05(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_IMMEDIATE_SE, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 9), L_DDP, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG,
		    true, false);
	assert_true(untouched(f->recvbuf, 256));
}

static void immediate_of_four_bytes_is_rdmap_2_07(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	post_recv(f, 256);
	size_t n = hdr_untagged(h, RDMAP_IMMEDIATE, true, 0, 1, 0, 0);
	expect_term(f, send_raw(f, h, n, payload, 4), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_CATASTROPHIC_STREAM, true, false);
}

static size_t hdr_atomic(uint8_t *h, uint32_t msn, uint8_t op, uint32_t stag, uint64_t to)
{
	size_t n = hdr_untagged(h, RDMAP_ATOMIC_REQ, true, DDP_QN_ATOMIC_REQ, msn, 0, 0);
	memset(h + n, 0, RDMAP_ATOMIC_REQ_LEN);
	be32_put(h + n + RDMAP_AREQ_OFF_OPCODE, op);
	be32_put(h + n + RDMAP_AREQ_OFF_ID, 77);
	be32_put(h + n + RDMAP_AREQ_OFF_STAG, stag);
	be64_put(h + n + RDMAP_AREQ_OFF_TO, to);
	be64_put(h + n + RDMAP_AREQ_OFF_DATA, 5);
	return n + RDMAP_ATOMIC_REQ_LEN;
}

static void atomic_on_misaligned_word_is_rdmap_1_01(void **state)
{
	struct fixture *f = *state;
	uint8_t h[128];
	size_t n = hdr_atomic(h, 1, RDMAP_ATOMIC_FETCH_ADD, f->stag_rw, 0x10004);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_BASE_BOUNDS, true, false);
	assert_true(untouched(f->region, REGION));
}

static void atomic_without_remote_atomic_is_rdmap_1_02(void **state)
{
	struct fixture *f = *state;
	uint8_t h[128];
	size_t n = hdr_atomic(h, 1, RDMAP_ATOMIC_SWAP, f->stag_read_only, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
		    UW_RDMAP_ACCESS_RIGHTS, true, false);
	assert_true(untouched(f->region, REGION));
}

static void atomic_unknown_operation_is_2_06(void **state)
{
	struct fixture *f = *state;
	uint8_t h[128];
	size_t n = hdr_atomic(h, 1, 7, f->stag_rw, 0x10000);
	expect_term(f, send_raw(f, h, n, NULL, 0), L_RDMAP, UW_RDMAP_REMOTE_OPERATION,
		    UW_RDMAP_UNEXPECTED_OPCODE, true, false);
	assert_true(untouched(f->region, REGION));
}

static void atomic_response_without_request_is_ddp_catastrophic(void **state)
{
	struct fixture *f = *state;
	uint8_t h[64];
	size_t n = hdr_untagged(h, RDMAP_ATOMIC_RESP, true, DDP_QN_ATOMIC_RESP, 1, 0, 0);
	memset(h + n, 0, RDMAP_ATOMIC_RESP_LEN);
	expect_term(f, send_raw(f, h, n + RDMAP_ATOMIC_RESP_LEN, NULL, 0), L_DDP,
		    UW_DDP_CATASTROPHIC, 0, false, false);
}

int main(void)
{
#define T(name) cmocka_unit_test_setup_teardown(name, setup, teardown)
#define T7(name) cmocka_unit_test_setup_teardown(name, setup_7306, teardown)
	const struct CMUnitTest tests[] = {
		T(row12_ddp_version_untagged_is_2_06),
		T(row12_ddp_version_tagged_is_1_04),
		T(row13_rdmap_version_is_2_05),
		cmocka_unit_test(row14_unknown_opcode_is_2_06),
		cmocka_unit_test(row14_reserved_opcode_with_rfc7306_is_2_06),
		T(row15_write_without_t_bit_is_2_06),
		T(row15_send_with_t_bit_is_2_06),
		cmocka_unit_test(row16_send_on_wrong_queue_is_2_01),
		cmocka_unit_test(row17_send_msn_out_of_sequence_is_2_03),
		T(row18_send_without_receive_is_2_02),
		T(row18_zero_length_send_without_receive_is_2_02),
		T(row18_with_recv_wait_a_send_waits_for_a_receive),
		T(row18_a_send_whose_wait_ran_out_is_2_02),
		cmocka_unit_test(row19_send_mo_gap_or_overlap_is_2_04),
		T(row20_send_longer_than_buffer_is_2_05),
		T(row21_read_request_with_mo_is_2_04),
		T(row21_read_request_with_payload_is_2_05),
		T(row21_terminate_with_mo_is_2_04),
		T(row22_read_request_msn_is_2_03),
		T(row23_read_requests_beyond_ird_are_2_07),
		cmocka_unit_test(row23_read_request_with_ird_zero_is_2_07),
		T(row24_write_to_unknown_stag_is_1_00),
		T(row24_write_to_stag_never_registered_is_1_00),
		T(row25_write_past_the_end_is_1_01),
		T(row25_write_below_the_start_is_1_01),
		T(row25_write_second_segment_past_the_end_is_1_01),
		T(row25_read_past_the_end_is_rdmap_1_01),
		T(row26_stag_of_another_pd_is_invalid_1_00),
		T(row26_stag_of_another_pd_out_of_bounds_is_invalid_1_00),
		T(row26_window_bound_to_another_qp_is_invalid_1_00),
		T(row26_read_of_another_pd_is_rdmap_invalid_1_00),
		T(row27_to_wrap_is_1_03),
		T(row28_write_without_remote_write_is_rdmap_1_02),
		T(row28_read_without_remote_read_is_rdmap_1_02),
		T(row28_write_to_a_local_only_region_is_invalid_1_00),
		T(row28_read_of_a_local_only_region_is_rdmap_invalid_1_00),
		T(row29_read_response_wrong_stag_is_1_00),
		T(row29_read_response_wrong_to_is_1_01),
		T(row29_read_response_too_long_is_1_01),
		T(row29_read_response_too_short_is_1_01),
		T(row29_read_response_without_read_is_ddp_catastrophic),
		T(row30_send_with_invalidate_of_plain_mr_is_2_09),
		T(row30_send_with_invalidate_of_unknown_stag_is_2_09),
		T(row31_new_send_inside_a_send_is_2_03),
		T(row31_opcode_change_inside_a_send_is_2_06),
		T(row31_new_write_inside_a_write_is_1_00),
		T(row31_read_response_inside_a_write_is_2_06),
		T(row31_read_request_inside_a_send_is_allowed),
		cmocka_unit_test(row33_terminate_bad_qn_msn_mo),
		T(immediate_to_peer_without_rfc7306_is_2_06),
		T7(immediate_without_receive_is_2_02),
		T7(immediate_with_recv_wait_waits_for_a_receive),
		T7(immediate_of_nine_bytes_is_2_05),
		T7(immediate_of_four_bytes_is_rdmap_2_07),
		T7(atomic_on_misaligned_word_is_rdmap_1_01),
		T7(atomic_without_remote_atomic_is_rdmap_1_02),
		T7(atomic_unknown_operation_is_2_06),
		T7(atomic_response_without_request_is_ddp_catastrophic),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
