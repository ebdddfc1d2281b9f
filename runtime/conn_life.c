/*
 * conn_life.c: a connection's life as a pure state machine (conn_life.h).
 * One function per input; each switches on the state once.
 */
#include <errno.h>
#include <string.h>

#include <uwarp/verbs.h>

#include "conn_life.h"

void uw_life_init(struct uw_life *l, bool initiator)
{
	*l = (struct uw_life){ .st = initiator ? UW_LIFE_CONNECTING : UW_LIFE_WAIT_REQ,
			       .initiator = initiator };
}

static void set_timer(struct uw_life_acts *a, unsigned ms)
{
	a->timer = true;
	a->timer_ms = ms;
}

/* The end, from @st: which event the application gets when the caller
 * leaves it to the state. Before the application knew of a passive
 * connection there is nobody to tell. */
static int end_event(enum uw_life_state st)
{
	switch (st) {
	case UW_LIFE_CONNECTING:
	case UW_LIFE_REQ_SENT:
		return UW_CM_EVENT_CONNECT_ERROR;
	case UW_LIFE_WAIT_REQ:
		return UW_LIFE_EV_NONE;
	case UW_LIFE_REQ_HELD:
	case UW_LIFE_WAIT_RTR: /* (only its timeout says CONNECT_ERROR) */
	case UW_LIFE_HOLD:
	case UW_LIFE_RUNNING:
	case UW_LIFE_TERMINATING:
		return UW_CM_EVENT_DISCONNECTED;
	case UW_LIFE_LINGER: /* the application was told already */
	case UW_LIFE_CLOSED:
		break;
	}
	return UW_LIFE_EV_NONE;
}

static void end(struct uw_life *l, int status, int event, bool may_linger, struct uw_life_acts *a)
{
	enum uw_life_state was = l->st;
	if (was == UW_LIFE_CLOSED)
		return;
	a->close = true;
	a->status = status;
	if (was == UW_LIFE_LINGER) {
		l->st = UW_LIFE_CLOSED;
		return;
	}
	a->event = event == UW_LIFE_EV_AUTO ? end_event(was) : event;
	/* A Terminate that has left still has to be read: closing a socket
	 * with unread input resets it, and the reset can overtake what is
	 * still queued (docs/wire-notes.md) */
	if (was == UW_LIFE_TERMINATING && may_linger) {
		l->st = UW_LIFE_LINGER;
		a->linger = true;
		set_timer(a, UW_LIFE_TERM_LINGER_MS);
		return;
	}
	l->st = UW_LIFE_CLOSED;
}

static void tcp_up(struct uw_life *l, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_CONNECTING:
		l->st = UW_LIFE_REQ_SENT;
		a->send_request = true;
		break;
	default:
		break;
	}
}

static void request(struct uw_life *l, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_WAIT_REQ:
		/* the Request is the application's now: no reading, no timer,
		 * until it accepts or rejects */
		l->st = UW_LIFE_REQ_HELD;
		a->stop_reading = true;
		set_timer(a, 0);
		a->event = UW_CM_EVENT_CONNECT_REQUEST;
		break;
	default:
		break;
	}
}

static void reply(struct uw_life *l, const struct uw_life_facts *f, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_REQ_SENT:
		l->st = UW_LIFE_RUNNING;
		l->rtr_due = f->p2p;
		set_timer(a, 0);
		if (!f->peer_uwarp) {
			/* siw may miss FPDUs that arrive right behind its Reply */
			l->nudge_ticks = UW_LIFE_NUDGE_TICKS;
			set_timer(a, UW_LIFE_NUDGE_TICK_MS);
		}
		a->event = UW_CM_EVENT_ESTABLISHED;
		a->tx = true;
		break;
	default:
		break;
	}
}

static void accept_(struct uw_life *l, const struct uw_life_facts *f, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_REQ_HELD:
		if (f->p2p) {
			/* the RTR is waited for as long as a Request is; it is
			 * the peer's first FPDU */
			l->st = UW_LIFE_WAIT_RTR;
			set_timer(a, f->request_timeout_ms);
		} else {
			l->st = UW_LIFE_HOLD;
			set_timer(a, UW_LIFE_HOLD_MS);
			a->event = UW_CM_EVENT_ESTABLISHED;
		}
		break;
	default:
		break;
	}
}

static void fpdu(struct uw_life *l, struct uw_life_acts *a)
{
	if (l->got_fpdu)
		return; /* only the first one changes anything */
	switch (l->st) {
	case UW_LIFE_HOLD:
		l->got_fpdu = true;
		l->st = UW_LIFE_RUNNING;
		a->release_tx = true;
		set_timer(a, 0);
		break;
	case UW_LIFE_WAIT_RTR:
		l->got_fpdu = true;
		l->st = UW_LIFE_RUNNING;
		a->release_tx = true;
		set_timer(a, 0);
		a->event = UW_CM_EVENT_ESTABLISHED;
		break;
	case UW_LIFE_RUNNING:
		l->got_fpdu = true;
		if (l->nudge_ticks) { /* the peer is awake: no watch */
			l->nudge_ticks = 0;
			set_timer(a, 0);
		}
		break;
	default:
		break;
	}
}

static void timer(struct uw_life *l, const struct uw_life_facts *f, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_CONNECTING:
	case UW_LIFE_WAIT_REQ:
		end(l, ETIMEDOUT, UW_LIFE_EV_AUTO, false, a);
		break;
	case UW_LIFE_REQ_SENT:
		/* TCP came up and took the Request, but no Reply came: a peer
		 * that does not speak MPA (or a program that never accepted).
		 * ETIME, not ETIMEDOUT, so a caller can tell it from a TCP
		 * connection that never came up (include/uwarp/verbs.h) */
		end(l, ETIME, UW_LIFE_EV_AUTO, false, a);
		break;
	case UW_LIFE_WAIT_RTR:
		/* a P2P initiator that never sends its RTR is as silent as one
		 * that never sends its Request: never established */
		end(l, ETIMEDOUT, UW_CM_EVENT_CONNECT_ERROR, false, a);
		break;
	case UW_LIFE_HOLD:
		/* the peer did not speak first: we may (docs/wire-notes.md) */
		l->st = UW_LIFE_RUNNING;
		a->release_tx = true;
		a->tx = true;
		break;
	case UW_LIFE_RUNNING:
		if (!l->nudge_ticks)
			break;
		if (l->got_fpdu || --l->nudge_ticks == 0) {
			l->nudge_ticks = 0;
			break;
		}
		if (f->quiet) {
			l->nudge_ticks = 0;
			l->nudge_due = true;
			a->tx = true;
			break;
		}
		set_timer(a, UW_LIFE_NUDGE_TICK_MS);
		break;
	case UW_LIFE_TERMINATING:
		/* the peer took nothing for UW_LIFE_TERM_LINGER_MS: a reset */
		end(l, EPROTO, UW_CM_EVENT_DISCONNECTED, false, a);
		break;
	case UW_LIFE_LINGER:
		end(l, 0, UW_LIFE_EV_NONE, false, a); /* the peer never closed */
		break;
	case UW_LIFE_REQ_HELD:
	case UW_LIFE_CLOSED:
		break;
	}
}

static void error(struct uw_life *l, const struct uw_life_facts *f, struct uw_life_acts *a)
{
	switch (l->st) {
	case UW_LIFE_HOLD:
	case UW_LIFE_WAIT_RTR:
	case UW_LIFE_RUNNING:
		if (!f->reply_out) {
			/* our Reply is not out: no Terminate can be read */
			end(l, EPROTO, UW_CM_EVENT_DISCONNECTED, false, a);
			break;
		}
		l->st = UW_LIFE_TERMINATING;
		a->fail = true;
		set_timer(a, UW_LIFE_TERM_LINGER_MS);
		break;
	default:
		break;
	}
}

void uw_life_step(struct uw_life *l, enum uw_life_input in, const struct uw_life_facts *f,
		  struct uw_life_acts *a)
{
	static const struct uw_life_facts none = { .event = UW_LIFE_EV_AUTO };
	if (!f)
		f = &none;
	memset(a, 0, sizeof(*a));
	a->event = UW_LIFE_EV_NONE;
	switch (in) {
	case UW_LIFE_IN_TCP_UP:
		tcp_up(l, a);
		break;
	case UW_LIFE_IN_REQUEST:
		request(l, a);
		break;
	case UW_LIFE_IN_REPLY:
		reply(l, f, a);
		break;
	case UW_LIFE_IN_ACCEPT:
		accept_(l, f, a);
		break;
	case UW_LIFE_IN_FPDU:
		fpdu(l, a);
		break;
	case UW_LIFE_IN_TIMER:
		timer(l, f, a);
		break;
	case UW_LIFE_IN_ERROR:
		error(l, f, a);
		break;
	case UW_LIFE_IN_END:
		end(l, f->status, f->event, f->may_linger, a);
		break;
	}
}

const char *uw_life_state_str(enum uw_life_state s)
{
	switch (s) {
	case UW_LIFE_CONNECTING:
		return "CONNECTING";
	case UW_LIFE_REQ_SENT:
		return "REQ_SENT";
	case UW_LIFE_WAIT_REQ:
		return "WAIT_REQ";
	case UW_LIFE_REQ_HELD:
		return "REQ_HELD";
	case UW_LIFE_WAIT_RTR:
		return "WAIT_RTR";
	case UW_LIFE_HOLD:
		return "HOLD";
	case UW_LIFE_RUNNING:
		return "RUNNING";
	case UW_LIFE_TERMINATING:
		return "TERMINATING";
	case UW_LIFE_LINGER:
		return "LINGER";
	case UW_LIFE_CLOSED:
		return "CLOSED";
	}
	return "?";
}
