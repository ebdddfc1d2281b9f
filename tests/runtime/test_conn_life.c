/*
 * test_conn_life.c: a connection's life as a pure state machine
 * (runtime/conn_life.h): every state against every input, written out as a
 * table so that a change to the machine shows here as a changed row; then
 * the variants the table's default facts do not reach, and the siw
 * behaviours it carries (docs/wire-notes.md): the responder's hold and the
 * initiator's nudge.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

#include "runtime/conn_life.h"

#define NS 10 /* states */
#define NI 8  /* inputs */

/* clang-format off */
enum {
	CONNECTING = UW_LIFE_CONNECTING, REQ_SENT = UW_LIFE_REQ_SENT, WAIT_REQ = UW_LIFE_WAIT_REQ,
	REQ_HELD = UW_LIFE_REQ_HELD, WAIT_RTR = UW_LIFE_WAIT_RTR, HOLD = UW_LIFE_HOLD,
	RUNNING = UW_LIFE_RUNNING, TERMINATING = UW_LIFE_TERMINATING, LINGER = UW_LIFE_LINGER,
	CLOSED = UW_LIFE_CLOSED,
};
/* clang-format on */
#define NONE UW_LIFE_EV_NONE
#define REQ UW_CM_EVENT_CONNECT_REQUEST
#define EST UW_CM_EVENT_ESTABLISHED
#define CERR UW_CM_EVENT_CONNECT_ERROR
#define DISC UW_CM_EVENT_DISCONNECTED

/* what one input does to one state; T: the timer set (ms, -1: left alone) */
struct row {
	int next;
	int event;
	int close; /* 0, or 1 + the status (so that status 0 shows) */
	bool linger, release, tx, fail, send_request, stop_reading;
	int timer;
};
#define SAME(s) { s, NONE, 0, 0, 0, 0, 0, 0, 0, -1 }
#define END(ev, st) { CLOSED, ev, 1 + (st), 0, 0, 0, 0, 0, 0, -1 }

/* the facts each input comes with in the table */
static struct uw_life_facts facts(enum uw_life_input in)
{
	switch (in) {
	case UW_LIFE_IN_REPLY:
		return (struct uw_life_facts){ .peer_uwarp = true, .event = UW_LIFE_EV_AUTO };
	case UW_LIFE_IN_ACCEPT:
		return (struct uw_life_facts){ .request_timeout_ms = 5000,
					       .event = UW_LIFE_EV_AUTO };
	case UW_LIFE_IN_ERROR:
		return (struct uw_life_facts){ .reply_out = true, .event = UW_LIFE_EV_AUTO };
	case UW_LIFE_IN_END:
		return (struct uw_life_facts){ .status = ECONNRESET,
					       .event = UW_LIFE_EV_AUTO,
					       .may_linger = true };
	default:
		return (struct uw_life_facts){ .event = UW_LIFE_EV_AUTO };
	}
}

/* [state][input]: TCP_UP, REQUEST, REPLY, ACCEPT, FPDU, TIMER, ERROR, END */
/* clang-format off */
static const struct row table[NS][NI] = {
	[CONNECTING] = {
		{ REQ_SENT, NONE, 0, 0, 0, 0, 0, 1, 0, -1 },
		SAME(CONNECTING), SAME(CONNECTING), SAME(CONNECTING), SAME(CONNECTING),
		END(CERR, ETIMEDOUT), SAME(CONNECTING), END(CERR, ECONNRESET) },
	[REQ_SENT] = {
		SAME(REQ_SENT), SAME(REQ_SENT),
		{ RUNNING, EST, 0, 0, 0, 1, 0, 0, 0, 0 },
		SAME(REQ_SENT), SAME(REQ_SENT),
		END(CERR, ETIME), SAME(REQ_SENT), END(CERR, ECONNRESET) },
	[WAIT_REQ] = {
		SAME(WAIT_REQ),
		{ REQ_HELD, REQ, 0, 0, 0, 0, 0, 0, 1, 0 },
		SAME(WAIT_REQ), SAME(WAIT_REQ), SAME(WAIT_REQ),
		/* nobody knew of it: no event */
		END(NONE, ETIMEDOUT), SAME(WAIT_REQ), END(NONE, ECONNRESET) },
	[REQ_HELD] = {
		SAME(REQ_HELD), SAME(REQ_HELD), SAME(REQ_HELD),
		{ HOLD, EST, 0, 0, 0, 0, 0, 0, 0, UW_LIFE_HOLD_MS },
		SAME(REQ_HELD),
		SAME(REQ_HELD), /* the application thinks: no timer runs */
		SAME(REQ_HELD), END(DISC, ECONNRESET) },
	[WAIT_RTR] = {
		SAME(WAIT_RTR), SAME(WAIT_RTR), SAME(WAIT_RTR), SAME(WAIT_RTR),
		{ RUNNING, EST, 0, 0, 1, 0, 0, 0, 0, 0 }, /* the RTR */
		END(CERR, ETIMEDOUT),
		{ TERMINATING, NONE, 0, 0, 0, 0, 1, 0, 0, UW_LIFE_TERM_LINGER_MS },
		END(DISC, ECONNRESET) },
	[HOLD] = {
		SAME(HOLD), SAME(HOLD), SAME(HOLD), SAME(HOLD),
		{ RUNNING, NONE, 0, 0, 1, 0, 0, 0, 0, 0 },
		{ RUNNING, NONE, 0, 0, 1, 1, 0, 0, 0, -1 }, /* the peer did not speak first */
		{ TERMINATING, NONE, 0, 0, 0, 0, 1, 0, 0, UW_LIFE_TERM_LINGER_MS },
		END(DISC, ECONNRESET) },
	[RUNNING] = {
		SAME(RUNNING), SAME(RUNNING), SAME(RUNNING), SAME(RUNNING),
		SAME(RUNNING), SAME(RUNNING),
		{ TERMINATING, NONE, 0, 0, 0, 0, 1, 0, 0, UW_LIFE_TERM_LINGER_MS },
		END(DISC, ECONNRESET) },
	[TERMINATING] = {
		SAME(TERMINATING), SAME(TERMINATING), SAME(TERMINATING), SAME(TERMINATING),
		SAME(TERMINATING),
		END(DISC, EPROTO), /* the peer took nothing: a reset */
		SAME(TERMINATING),
		/* the Terminate left: the socket waits for the peer's close */
		{ LINGER, DISC, 1 + ECONNRESET, 1, 0, 0, 0, 0, 0, UW_LIFE_TERM_LINGER_MS } },
	[LINGER] = {
		SAME(LINGER), SAME(LINGER), SAME(LINGER), SAME(LINGER), SAME(LINGER),
		END(NONE, 0), SAME(LINGER), END(NONE, ECONNRESET) },
	[CLOSED] = {
		SAME(CLOSED), SAME(CLOSED), SAME(CLOSED), SAME(CLOSED), SAME(CLOSED),
		SAME(CLOSED), SAME(CLOSED), SAME(CLOSED) },
};
/* clang-format on */

static struct uw_life at(int st)
{
	struct uw_life l;
	uw_life_init(&l, st == CONNECTING || st == REQ_SENT);
	l.st = (enum uw_life_state)st;
	return l;
}

static const char *const inputs[NI] = { "TCP_UP", "REQUEST", "REPLY", "ACCEPT",
					"FPDU",   "TIMER",   "ERROR", "END" };

static void every_state_against_every_input(void **state)
{
	for (int s = 0; s < NS; s++)
		for (int i = 0; i < NI; i++) {
			const struct row *r = &table[s][i];
			struct uw_life l = at(s);
			struct uw_life_facts f = facts((enum uw_life_input)i);
			struct uw_life_acts a;
			uw_life_step(&l, (enum uw_life_input)i, &f, &a);
			bool ok = (int)l.st == r->next && a.event == r->event &&
				  a.close == (r->close != 0) &&
				  (!r->close || a.status == r->close - 1) &&
				  a.linger == r->linger && a.release_tx == r->release &&
				  a.tx == r->tx && a.fail == r->fail &&
				  a.send_request == r->send_request &&
				  a.stop_reading == r->stop_reading && a.timer == (r->timer >= 0) &&
				  (r->timer < 0 || a.timer_ms == (unsigned)r->timer);
			if (!ok)
				fail_msg("%s x %s: now %s, event %d, close %d (status %d), linger "
					 "%d, "
					 "release %d, tx %d, fail %d, request %d, stop reading %d, "
					 "timer %d (%u ms)",
					 uw_life_state_str((enum uw_life_state)s), inputs[i],
					 uw_life_state_str(l.st), a.event, a.close, a.status,
					 a.linger, a.release_tx, a.tx, a.fail, a.send_request,
					 a.stop_reading, a.timer, a.timer_ms);
		}
}

static void a_new_connection_starts_on_its_side(void **state)
{
	struct uw_life l;
	uw_life_init(&l, true);
	assert_int_equal(l.st, UW_LIFE_CONNECTING);
	assert_true(l.initiator);
	uw_life_init(&l, false);
	assert_int_equal(l.st, UW_LIFE_WAIT_REQ);
	assert_false(uw_life_full(&l));
}

static void the_peers_fpdus_are_read_in_a_hold_but_ours_wait(void **state)
{
	for (int s = 0; s < NS; s++) {
		struct uw_life l = at(s);
		assert_int_equal(uw_life_full(&l), s == HOLD || s == WAIT_RTR || s == RUNNING);
		assert_int_equal(uw_life_tx_open(&l), s == RUNNING);
	}
}

/* A P2P Reply: the initiator's RTR goes before anything (RFC 6581). */
static void a_p2p_initiator_sends_its_rtr_first(void **state)
{
	struct uw_life l = at(REQ_SENT);
	struct uw_life_facts f = { .p2p = true, .peer_uwarp = true };
	struct uw_life_acts a;
	uw_life_step(&l, UW_LIFE_IN_REPLY, &f, &a);
	assert_true(l.rtr_due);
	uw_life_rtr_started(&l);
	assert_false(l.rtr_due);
	/* the responder: accepted in P2P mode, it waits for that RTR as
	 * long as for a Request, and says ESTABLISHED only then */
	l = at(REQ_HELD);
	f = (struct uw_life_facts){ .p2p = true, .request_timeout_ms = 1234 };
	uw_life_step(&l, UW_LIFE_IN_ACCEPT, &f, &a);
	assert_int_equal(l.st, UW_LIFE_WAIT_RTR);
	assert_int_equal(a.event, UW_LIFE_EV_NONE);
	assert_true(a.timer);
	assert_int_equal(a.timer_ms, 1234);
}

/* Toward a peer that is not uwarp the initiator watches for siw's race:
 * each tick costs one of UW_LIFE_NUDGE_TICKS; once all we sent has been
 * acknowledged with no word back, one nudge; a word from the peer, or the
 * ticks running out, ends the watch. */
static void the_nudge_watch(void **state)
{
	struct uw_life l = at(REQ_SENT);
	struct uw_life_facts f = { .peer_uwarp = false };
	struct uw_life_acts a;
	uw_life_step(&l, UW_LIFE_IN_REPLY, &f, &a);
	assert_int_equal(l.nudge_ticks, UW_LIFE_NUDGE_TICKS);
	assert_true(a.timer);
	assert_int_equal(a.timer_ms, UW_LIFE_NUDGE_TICK_MS);
	/* not yet acknowledged: the watch goes on */
	struct uw_life_facts busy = { .quiet = false };
	uw_life_step(&l, UW_LIFE_IN_TIMER, &busy, &a);
	assert_int_equal(l.nudge_ticks, UW_LIFE_NUDGE_TICKS - 1);
	assert_true(a.timer);
	assert_false(l.nudge_due);
	/* all acknowledged: the nudge, and the watch is over */
	struct uw_life_facts quiet = { .quiet = true };
	uw_life_step(&l, UW_LIFE_IN_TIMER, &quiet, &a);
	assert_true(l.nudge_due);
	assert_true(a.tx);
	assert_false(a.timer);
	assert_int_equal(l.nudge_ticks, 0);
	uw_life_nudge_started(&l);
	assert_false(l.nudge_due);
	uw_life_step(&l, UW_LIFE_IN_TIMER, &quiet, &a);
	assert_false(l.nudge_due); /* once */

	/* the peer speaks: no nudge, the watch stops */
	l = at(REQ_SENT);
	uw_life_step(&l, UW_LIFE_IN_REPLY, &f, &a);
	uw_life_step(&l, UW_LIFE_IN_FPDU, NULL, &a);
	assert_int_equal(l.nudge_ticks, 0);
	assert_true(a.timer);
	assert_int_equal(a.timer_ms, 0);
	uw_life_step(&l, UW_LIFE_IN_TIMER, &quiet, &a);
	assert_false(l.nudge_due);

	/* the ticks run out with our FPDUs never acknowledged */
	l = at(REQ_SENT);
	uw_life_step(&l, UW_LIFE_IN_REPLY, &f, &a);
	int ticks = 0;
	while (l.nudge_ticks) {
		uw_life_step(&l, UW_LIFE_IN_TIMER, &busy, &a);
		ticks++;
	}
	assert_int_equal(ticks, UW_LIFE_NUDGE_TICKS);
	assert_false(l.nudge_due);
	assert_false(a.timer);
}

/* The first FPDU ends a hold; later ones change nothing. */
static void only_the_first_fpdu_counts(void **state)
{
	struct uw_life l = at(HOLD);
	struct uw_life_acts a;
	uw_life_step(&l, UW_LIFE_IN_FPDU, NULL, &a);
	assert_true(a.release_tx);
	assert_true(l.got_fpdu);
	uw_life_step(&l, UW_LIFE_IN_FPDU, NULL, &a);
	assert_false(a.release_tx);
	assert_false(a.timer);
	assert_int_equal(a.event, UW_LIFE_EV_NONE);
}

static void an_error_before_our_reply_is_out_ends_at_once(void **state)
{
	for (int s = 0; s < NS; s++) {
		struct uw_life l = at(s);
		struct uw_life_facts f = { .reply_out = false };
		struct uw_life_acts a;
		uw_life_step(&l, UW_LIFE_IN_ERROR, &f, &a);
		bool full = s == HOLD || s == WAIT_RTR || s == RUNNING;
		assert_int_equal(l.st, full ? CLOSED : s);
		assert_int_equal(a.close, full);
		assert_false(a.fail);
		if (full) {
			assert_int_equal(a.status, EPROTO);
			assert_int_equal(a.event, UW_CM_EVENT_DISCONNECTED);
		}
	}
}

static void the_end_takes_the_callers_event_and_lingers_only_when_it_may(void **state)
{
	for (int s = 0; s < NS; s++) {
		struct uw_life l = at(s);
		struct uw_life_facts f = { .status = 7, .event = UW_CM_EVENT_REJECTED };
		struct uw_life_acts a;
		uw_life_step(&l, UW_LIFE_IN_END, &f, &a);
		assert_int_equal(l.st, CLOSED); /* may_linger is false */
		assert_false(a.linger);
		assert_int_equal(a.close, s != CLOSED);
		if (s != CLOSED && s != LINGER) {
			assert_int_equal(a.event, UW_CM_EVENT_REJECTED);
			assert_int_equal(a.status, 7);
		}
		/* and a lingering socket's end never reports again */
		if (s == LINGER)
			assert_int_equal(a.event, UW_LIFE_EV_NONE);
	}
	/* the caller may ask for no event at all */
	struct uw_life l = at(RUNNING);
	struct uw_life_facts f = { .status = ECONNABORTED, .event = UW_LIFE_EV_NONE };
	struct uw_life_acts a;
	uw_life_step(&l, UW_LIFE_IN_END, &f, &a);
	assert_int_equal(a.event, UW_LIFE_EV_NONE);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_new_connection_starts_on_its_side),
		cmocka_unit_test(every_state_against_every_input),
		cmocka_unit_test(the_peers_fpdus_are_read_in_a_hold_but_ours_wait),
		cmocka_unit_test(a_p2p_initiator_sends_its_rtr_first),
		cmocka_unit_test(the_nudge_watch),
		cmocka_unit_test(only_the_first_fpdu_counts),
		cmocka_unit_test(an_error_before_our_reply_is_out_ends_at_once),
		cmocka_unit_test(the_end_takes_the_callers_event_and_lingers_only_when_it_may),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
