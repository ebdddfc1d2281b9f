/*
 * test_exs_fin.c: the ES-API's half-close state machine (exs/exs_fin.h),
 * every state against every input, and the exchange between two sides.
 *
 * A state is (our direction, the peer's direction, reading shut down by
 * the application): 4 x 3 x 2 = 24. The expected results are written out
 * as tables, not computed, so that a change to the machine shows here as
 * a changed row.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exs/exs_fin.h"

#define NWR 4
#define NRD 3

static struct exs_fin state(int wr, int rd, bool rd_shut)
{
	struct exs_fin f;
	exs_fin_init(&f);
	f.wr = (enum exs_wr_end)wr;
	f.rd = (enum exs_rd_end)rd;
	f.rd_shut = rd_shut;
	f.peer_len = rd == EXS_RD_OPEN ? 0 : 700;
	return f;
}

#define FOR_EACH_STATE                           \
	for (int wr = 0; wr < NWR; wr++)         \
		for (int rd = 0; rd < NRD; rd++) \
			for (int sh = 0; sh < 2; sh++)

static void a_new_connection_is_open_both_ways(void **state_)
{
	struct exs_fin f;
	exs_fin_init(&f);
	assert_int_equal(f.wr, EXS_WR_OPEN);
	assert_int_equal(f.rd, EXS_RD_OPEN);
	assert_false(exs_fin_rd_ended(&f));
	assert_false(exs_fin_wr_shut(&f));
	assert_false(exs_fin_settled(&f));
	assert_int_equal(exs_fin_next(&f, true), EXS_FIN_SEND_NONE);
}

static void shutting_writing_down_happens_once(void **state_)
{
	/* [wr] -> the result, and the state after */
	static const int rc[NWR] = { 0, -EALREADY, -EALREADY, -EALREADY };
	static const int after[NWR] = { EXS_WR_SHUT, EXS_WR_SHUT, EXS_WR_FIN_SENT, EXS_WR_DONE };
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		assert_int_equal(exs_fin_shut_wr(&f), rc[wr]);
		assert_int_equal(f.wr, after[wr]);
		assert_int_equal(f.rd, rd); /* the peer's side is its own */
		assert_int_equal(f.rd_shut, sh);
	}
}

static void shutting_reading_down_happens_once(void **state_)
{
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		assert_int_equal(exs_fin_shut_rd(&f), sh ? -EALREADY : 0);
		assert_true(f.rd_shut);
		assert_true(exs_fin_rd_ended(&f));
		assert_int_equal(f.wr, wr);
		assert_int_equal(f.rd, rd);
	}
}

static void what_to_send_next(void **state_)
{
	/* [wr][rd]: with every send handed out, and with some still waiting */
	static const int all_sent[NWR][NRD] = {
		/* OPEN */ { EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
		/* SHUT */ { EXS_FIN_SEND_FIN, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_FIN },
		/* FIN_SENT */ { EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
		/* DONE */ { EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
	};
	static const int waiting[NWR][NRD] = {
		{ EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
		/* the FIN waits for the sends; the FIN_ACK does not */
		{ EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
		{ EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
		{ EXS_FIN_SEND_NONE, EXS_FIN_SEND_FIN_ACK, EXS_FIN_SEND_NONE },
	};
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		assert_int_equal(exs_fin_next(&f, true), all_sent[wr][rd]);
		assert_int_equal(exs_fin_next(&f, false), waiting[wr][rd]);
	}
}

static void a_message_sent_moves_its_direction_only(void **state_)
{
	static const int fin_after[NWR] = { EXS_WR_OPEN, EXS_WR_FIN_SENT, EXS_WR_FIN_SENT,
					    EXS_WR_DONE };
	static const int ack_after[NRD] = { EXS_RD_OPEN, EXS_RD_DONE, EXS_RD_DONE };
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		exs_fin_sent(&f, EXS_FIN_SEND_FIN);
		assert_int_equal(f.wr, fin_after[wr]);
		assert_int_equal(f.rd, rd);
		f = state(wr, rd, sh);
		exs_fin_sent(&f, EXS_FIN_SEND_FIN_ACK);
		assert_int_equal(f.rd, ack_after[rd]);
		assert_int_equal(f.wr, wr);
		f = state(wr, rd, sh);
		exs_fin_sent(&f, EXS_FIN_SEND_NONE);
		assert_int_equal(f.wr, wr);
		assert_int_equal(f.rd, rd);
	}
}

static void the_peers_fin_counts_what_arrived_and_comes_once(void **state_)
{
	FOR_EACH_STATE {
		/* the right count: taken only while the peer's side is open */
		struct exs_fin f = state(wr, rd, sh);
		int rc = exs_fin_on_fin(&f, 4096, 4096);
		assert_int_equal(rc, rd == EXS_RD_OPEN ? 0 : -EPROTO);
		assert_int_equal(f.rd, rd == EXS_RD_OPEN ? EXS_RD_FIN_ACK_DUE : rd);
		assert_int_equal(f.peer_len, rd == EXS_RD_OPEN ? 4096 : 700);
		assert_int_equal(f.wr, wr);
		assert_true(exs_fin_peer_ended(&f) && exs_fin_rd_ended(&f));
		/* a count that is not what arrived: bytes were lost or added */
		f = state(wr, rd, sh);
		assert_int_equal(exs_fin_on_fin(&f, 4096, 4095), -EPROTO);
		assert_int_equal(exs_fin_on_fin(&f, 4095, 4096), -EPROTO);
		assert_int_equal(f.rd, rd);
	}
}

static void a_fin_ack_answers_our_fin_with_our_count(void **state_)
{
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		int rc = exs_fin_on_fin_ack(&f, 9, 9);
		assert_int_equal(rc, wr == EXS_WR_FIN_SENT ? 0 : -EPROTO);
		assert_int_equal(f.wr, wr == EXS_WR_FIN_SENT ? EXS_WR_DONE : wr);
		assert_int_equal(f.rd, rd);
		f = state(wr, rd, sh);
		assert_int_equal(exs_fin_on_fin_ack(&f, 8, 9), -EPROTO);
		assert_int_equal(f.wr, wr);
	}
}

static void a_close_may_end_once_our_fin_is_acked_and_no_fin_ack_is_owed(void **state_)
{
	FOR_EACH_STATE {
		struct exs_fin f = state(wr, rd, sh);
		assert_int_equal(exs_fin_settled(&f),
				 wr == EXS_WR_DONE && rd != EXS_RD_FIN_ACK_DUE);
		assert_int_equal(exs_fin_wr_done(&f), wr == EXS_WR_DONE);
		assert_int_equal(exs_fin_wr_shut(&f), wr != EXS_WR_OPEN);
		assert_int_equal(exs_fin_peer_ended(&f), rd != EXS_RD_OPEN);
		assert_int_equal(exs_fin_rd_ended(&f), rd != EXS_RD_OPEN || sh);
	}
}

/* Two sides, as the progress loop drives them: each message that one
 * sends is the other's input at once. */
static void pump(struct exs_fin *me, uint64_t my_sent, uint64_t my_arrived, struct exs_fin *peer,
		 uint64_t peer_sent, uint64_t peer_arrived, bool all_sent)
{
	enum exs_fin_send x;
	while ((x = exs_fin_next(me, all_sent)) != EXS_FIN_SEND_NONE) {
		exs_fin_sent(me, x);
		if (x == EXS_FIN_SEND_FIN)
			assert_int_equal(exs_fin_on_fin(peer, my_sent, peer_arrived), 0);
		else
			assert_int_equal(exs_fin_on_fin_ack(peer, me->peer_len, peer_sent), 0);
	}
	(void)my_arrived;
}

static void both_sides_close_in_either_order(void **state_)
{
	for (int first = 0; first < 2; first++) {
		struct exs_fin a, b;
		exs_fin_init(&a);
		exs_fin_init(&b);
		/* a sent 1000 bytes, b sent 300; each has all of the other's */
		struct exs_fin *x = first ? &b : &a, *y = first ? &a : &b;
		uint64_t xs = first ? 300 : 1000, ys = first ? 1000 : 300;
		assert_int_equal(exs_fin_shut_wr(x), 0);
		/* sends still waiting: nothing goes */
		assert_int_equal(exs_fin_next(x, false), EXS_FIN_SEND_NONE);
		pump(x, xs, ys, y, ys, xs, true); /* FIN */
		assert_int_equal(x->wr, EXS_WR_FIN_SENT);
		assert_true(exs_fin_peer_ended(y));
		pump(y, ys, xs, x, xs, ys, true); /* FIN_ACK */
		assert_true(exs_fin_wr_done(x));
		assert_false(exs_fin_settled(y)); /* y has not closed */
		assert_int_equal(exs_fin_shut_wr(y), 0);
		pump(y, ys, xs, x, xs, ys, true); /* FIN */
		pump(x, xs, ys, y, ys, xs, true); /* FIN_ACK */
		assert_true(exs_fin_settled(&a));
		assert_true(exs_fin_settled(&b));
		assert_int_equal(a.peer_len, 300);
		assert_int_equal(b.peer_len, 1000);
	}
}

static void simultaneous_fins_cross(void **state_)
{
	struct exs_fin a, b;
	exs_fin_init(&a);
	exs_fin_init(&b);
	assert_int_equal(exs_fin_shut_wr(&a), 0);
	assert_int_equal(exs_fin_shut_wr(&b), 0);
	/* both FINs leave before either arrives */
	assert_int_equal(exs_fin_next(&a, true), EXS_FIN_SEND_FIN);
	exs_fin_sent(&a, EXS_FIN_SEND_FIN);
	assert_int_equal(exs_fin_next(&b, true), EXS_FIN_SEND_FIN);
	exs_fin_sent(&b, EXS_FIN_SEND_FIN);
	assert_int_equal(exs_fin_on_fin(&a, 5, 5), 0);
	assert_int_equal(exs_fin_on_fin(&b, 7, 7), 0);
	/* each owes a FIN_ACK, and sends it first */
	assert_int_equal(exs_fin_next(&a, true), EXS_FIN_SEND_FIN_ACK);
	exs_fin_sent(&a, EXS_FIN_SEND_FIN_ACK);
	assert_int_equal(exs_fin_next(&b, true), EXS_FIN_SEND_FIN_ACK);
	exs_fin_sent(&b, EXS_FIN_SEND_FIN_ACK);
	assert_int_equal(exs_fin_on_fin_ack(&a, 7, 7), 0);
	assert_int_equal(exs_fin_on_fin_ack(&b, 5, 5), 0);
	assert_true(exs_fin_settled(&a) && exs_fin_settled(&b));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_connection_is_open_both_ways),
		cmocka_unit_test(shutting_writing_down_happens_once),
		cmocka_unit_test(shutting_reading_down_happens_once),
		cmocka_unit_test(what_to_send_next),
		cmocka_unit_test(a_message_sent_moves_its_direction_only),
		cmocka_unit_test(the_peers_fin_counts_what_arrived_and_comes_once),
		cmocka_unit_test(a_fin_ack_answers_our_fin_with_our_count),
		cmocka_unit_test(a_close_may_end_once_our_fin_is_acked_and_no_fin_ack_is_owed),
		cmocka_unit_test(both_sides_close_in_either_order),
		cmocka_unit_test(simultaneous_fins_cross),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
