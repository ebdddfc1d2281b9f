/*
 * test_fpdu_watch.c: the toolkit's reader of what a peer sent
 * (tools/lib/fpdu_watch.h), which uwarp-fuzz and test_bad_peer judge a
 * server's reaction by: FPDUs are counted by opcode however the bytes are
 * cut, the first Terminate is kept and decodes to its codes, an FPDU behind
 * it is noticed, an overlong Terminate is kept cut (never written past its
 * room) and does not decode, and bytes that do not parse stop the reader
 * with a reason.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ddp/ddp_hdr.h"
#include "mpa/fpdu.h"
#include "tools/lib/fpdu_watch.h"
#include "rdmap/rdmap_opcode.h"
#include "rdmap/rdmap_term.h"

static uint8_t wire[1 << 14];
static size_t wlen;
static struct fpdu_tx tx;

/* one ULPDU, its header and payload, framed onto the wire */
static void frame(const uint8_t *hdr, size_t hl, const void *p, size_t pl)
{
	uint8_t h[MPA_ULPDU_LEN_SIZE + FPDU_RX_HDR_MAX];
	struct iovec iov[16], piov = { (void *)(uintptr_t)p, pl };
	uint8_t scratch[64];
	struct fpdu_batch b;
	memcpy(h + MPA_ULPDU_LEN_SIZE, hdr, hl);
	fpdu_batch_init(&b, iov, 16, scratch, sizeof(scratch));
	assert_int_equal(fpdu_tx_append(&tx, &b, h, hl, &piov, pl ? 1 : 0), 0);
	for (int i = 0; i < b.niov; i++) {
		assert_true(wlen + b.iov[i].iov_len <= sizeof(wire));
		memcpy(wire + wlen, b.iov[i].iov_base, b.iov[i].iov_len);
		wlen += b.iov[i].iov_len;
	}
}

static size_t untagged(uint8_t *out, enum rdmap_opcode op, uint32_t qn, uint32_t msn)
{
	struct ddp_hdr h = {
		.last = true, .dv = 1, .ulp_ctrl = (uint8_t)(0x40 | op), .qn = qn, .msn = msn
	};
	return ddp_hdr_encode(&h, out);
}

static void send_fpdu(const char *text)
{
	uint8_t h[DDP_UNTAGGED_HDR_LEN];
	frame(h, untagged(h, RDMAP_SEND, 0, 1), text, strlen(text));
}

/* a Terminate with these codes (nothing attached), or with @extra bytes
 * of payload behind its control word */
static void terminate_fpdu(uint8_t layer, uint8_t etype, uint8_t ecode, size_t extra)
{
	uint8_t h[DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_CTRL_LEN + RDMAP_TERM_MAX_PAYLOAD];
	size_t n = untagged(h, RDMAP_TERMINATE, DDP_QN_TERMINATE, 1);
	struct rddp_error e = { layer, etype, ecode, "test" };
	n += rdmap_term_encode(&e, 0, NULL, 0, NULL, h + n);
	static uint8_t pad[1024];
	assert_true(extra <= sizeof(pad));
	frame(h, n, pad, extra);
}

static int setup(void **state)
{
	fpdu_tx_init(&tx, true, false);
	wlen = 0;
	return 0;
}

/* feed the wire in pieces of @step bytes */
static void feed(struct fpdu_watch *w, size_t step)
{
	fpdu_watch_init(w, true);
	for (size_t off = 0; off < wlen; off += step)
		assert_int_equal(
			fpdu_watch_feed(w, wire + off, wlen - off < step ? wlen - off : step), 0);
}

static void fpdus_are_counted_and_the_terminate_read_however_the_bytes_are_cut(void **state)
{
	send_fpdu("one");
	send_fpdu("two");
	terminate_fpdu(UW_TERM_LAYER_DDP, 2, 0x05, 0);
	for (size_t step = 1; step <= wlen; step++) {
		struct fpdu_watch w;
		feed(&w, step);
		assert_int_equal(w.fpdus, 3);
		assert_int_equal(w.by_op[RDMAP_SEND], 2);
		assert_int_equal(w.by_op[RDMAP_TERMINATE], 1);
		assert_false(w.after_terminate);
		struct rdmap_term t;
		assert_int_equal(fpdu_watch_terminate(&w, &t), 0);
		assert_int_equal(t.rfc.layer, UW_TERM_LAYER_DDP);
		assert_int_equal(t.rfc.etype, 2);
		assert_int_equal(t.rfc.ecode, 0x05);
	}
}

static void the_first_terminate_is_kept_and_what_follows_it_noticed(void **state)
{
	terminate_fpdu(UW_TERM_LAYER_RDMAP, 2, 0x07, 0);
	send_fpdu("late");
	terminate_fpdu(UW_TERM_LAYER_DDP, 1, 0x00, 0);
	struct fpdu_watch w;
	feed(&w, 7);
	assert_true(w.after_terminate);
	assert_int_equal(w.by_op[RDMAP_TERMINATE], 2);
	struct rdmap_term t;
	assert_int_equal(fpdu_watch_terminate(&w, &t), 0);
	assert_int_equal(t.rfc.layer, UW_TERM_LAYER_RDMAP);
	assert_int_equal(t.rfc.ecode, 0x07);
}

static void no_terminate_and_a_cut_one_do_not_decode(void **state)
{
	struct fpdu_watch w;
	struct rdmap_term t;
	send_fpdu("only data");
	feed(&w, 5);
	assert_int_equal(fpdu_watch_terminate(&w, &t), -1);

	/* longer than any Terminate RFC 5040 allows: kept to its room */
	setup(NULL);
	terminate_fpdu(UW_TERM_LAYER_RDMAP, 2, 0x07, 1000);
	feed(&w, 100);
	assert_int_equal(w.by_op[RDMAP_TERMINATE], 1);
	assert_true(w.term_cut);
	assert_int_equal(w.term_len, sizeof(w.term));
	assert_int_equal(fpdu_watch_terminate(&w, &t), -1);

	/* one that has not come whole yet */
	setup(NULL);
	terminate_fpdu(UW_TERM_LAYER_RDMAP, 2, 0x07, 0);
	fpdu_watch_init(&w, true);
	assert_int_equal(fpdu_watch_feed(&w, wire, wlen - 1), 0);
	assert_int_equal(fpdu_watch_terminate(&w, &t), -1);
}

static void bytes_that_do_not_parse_stop_it_with_a_reason(void **state)
{
	send_fpdu("one");
	send_fpdu("two");
	wire[wlen - 1] ^= 0x01; /* the second FPDU's CRC */
	struct fpdu_watch w;
	fpdu_watch_init(&w, true);
	assert_int_equal(fpdu_watch_feed(&w, wire, wlen), -1);
	assert_non_null(w.error);
	assert_int_equal(w.fpdus, 1);
	assert_int_equal(fpdu_watch_feed(&w, wire, wlen), -1); /* and stays stopped */
	assert_int_equal(w.fpdus, 1);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup(
			fpdus_are_counted_and_the_terminate_read_however_the_bytes_are_cut, setup),
		cmocka_unit_test_setup(the_first_terminate_is_kept_and_what_follows_it_noticed,
				       setup),
		cmocka_unit_test_setup(no_terminate_and_a_cut_one_do_not_decode, setup),
		cmocka_unit_test_setup(bytes_that_do_not_parse_stop_it_with_a_reason, setup),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
