/*
 * conn_life.h: a connection's life, from the TCP connect to the close, as
 * one pure state machine (no sockets, loop, clock or allocation), in the
 * style of mpa_negotiate and fpdu_rx: the engine and the connection
 * manager feed it what happened and carry out the actions it returns.
 *
 * The MPA exchange itself (what a Request or Reply says, and the verdict
 * on it) is mpa_negotiate's; this machine holds what comes around it:
 *
 *   initiator: CONNECTING -> REQ_SENT -> RUNNING
 *   responder: WAIT_REQ -> REQ_HELD -> HOLD -> RUNNING
 *              WAIT_REQ -> REQ_HELD -> WAIT_RTR -> RUNNING   (peer to peer)
 *   then:      RUNNING (or HOLD, WAIT_RTR) -> TERMINATING -> LINGER -> CLOSED
 *
 * and two behaviours of the Linux siw driver (docs/wire-notes.md):
 * - HOLD, "the responder's hold": a siw initiator drops FPDUs that come
 *   right behind its Reply, so a responder sends nothing until the peer's
 *   first FPDU, or UW_LIFE_HOLD_MS;
 * - the nudge: siw as a responder may sit on FPDUs that arrive before it
 *   hands the socket to its QP, so an initiator whose peer is not uwarp
 *   watches, and once its FPDUs have left and been acknowledged with no
 *   word back, sends one zero-length RDMA Write to wake it.
 */
#ifndef UWARP_CONN_LIFE_H
#define UWARP_CONN_LIFE_H

#include <stdbool.h>
#include <stdint.h>

#define UW_LIFE_HOLD_MS 100         /* the responder's hold, at most */
#define UW_LIFE_NUDGE_TICK_MS 200   /* the nudge watch: how often */
#define UW_LIFE_NUDGE_TICKS 25      /* ...and for how many ticks after the Reply */
#define UW_LIFE_TERM_LINGER_MS 5000 /* a Terminate's wait for the peer to read it */

enum uw_life_state {
	UW_LIFE_CONNECTING,  /* initiator: TCP connect in progress */
	UW_LIFE_REQ_SENT,    /* initiator: the Request sent, the Reply awaited */
	UW_LIFE_WAIT_REQ,    /* responder: the Request awaited */
	UW_LIFE_REQ_HELD,    /* responder: the Request is the application's */
	UW_LIFE_WAIT_RTR,    /* P2P responder: Reply sent; the peer's RTR establishes it */
	UW_LIFE_HOLD,        /* responder: established; our sends wait for the peer's
			      * first FPDU (or UW_LIFE_HOLD_MS) */
	UW_LIFE_RUNNING,     /* full operation */
	UW_LIFE_TERMINATING, /* an error: the FPDUs begun, then the Terminate, leave */
	UW_LIFE_LINGER,      /* ended for the application; the socket waits for the
			      * peer to read the Terminate and close */
	UW_LIFE_CLOSED,
};

/* what happened */
enum uw_life_input {
	UW_LIFE_IN_TCP_UP,  /* initiator: the TCP connect finished */
	UW_LIFE_IN_REQUEST, /* responder: the peer's Request came whole */
	UW_LIFE_IN_REPLY,   /* initiator: a Reply we accept (mpa_conclude) */
	UW_LIFE_IN_ACCEPT,  /* responder: the application accepted; our Reply left */
	UW_LIFE_IN_FPDU,    /* a whole FPDU came from the peer */
	UW_LIFE_IN_TIMER,   /* the connection's timer fired */
	UW_LIFE_IN_ERROR,   /* a protocol error found in full operation */
	UW_LIFE_IN_END,     /* the end: a socket error, the peer's close, a
				  * refusal, the application's disconnect, the
				  * Terminate out (then it may linger) */
};

/* the facts an input comes with (the engine knows them, the machine does not) */
struct uw_life_facts {
	bool p2p;        /* REPLY, ACCEPT: peer to peer was negotiated */
	bool peer_uwarp; /* REPLY: the peer offered RFC 7306: it is uwarp, no siw race */
	bool quiet;      /* TIMER while watching to nudge: our FPDUs have all left and
			    * been acknowledged (the socket's send queue is empty) */
	bool reply_out;  /* ERROR: our MPA frame has left whole (else no Terminate can be
			    * read: the stream ends at once) */
	bool may_linger; /* END while terminating: the Terminate left and the peer has
			    * not closed: the socket waits for it */
	int status;      /* END: why (0 or an errno) */
	int event;       /* END: the event the caller wants reported; UW_LIFE_EV_AUTO:
			    * the one the state calls for; UW_LIFE_EV_NONE: none */
	unsigned request_timeout_ms; /* ACCEPT: how long an RTR is waited for */
};

#define UW_LIFE_EV_AUTO (-1)
#define UW_LIFE_EV_NONE (-2)

/* what the engine does, in the order of the fields */
struct uw_life_acts {
	bool send_request; /* send our MPA Request */
	bool stop_reading; /* take no more input until the application answers */
	bool release_tx;   /* the send side may go (the QP to RTS) */
	int event;         /* report this uw_cm_event_type, or UW_LIFE_EV_NONE */
	bool fail;         /* frame the Terminate behind what was begun and send it */
	bool close;        /* end: flush the QP, close the socket */
	bool linger;       /* ...but the socket stays open, reading and dropping input */
	int status;        /* with close: why */
	bool timer;        /* set the timer to timer_ms (0: stop it) */
	unsigned timer_ms;
	bool tx; /* move the send side now */
};

struct uw_life {
	enum uw_life_state st;
	bool initiator;
	bool rtr_due;        /* P2P initiator: the RTR goes before anything */
	bool nudge_due;      /* the zero-length Write that wakes the peer */
	uint8_t nudge_ticks; /* watch ticks left; 0: not watching */
	bool got_fpdu;       /* the peer's first FPDU came */
};

void uw_life_init(struct uw_life *l, bool initiator);

/* Feed one input: the state moves and @a says what to do. An input the
 * state does not take changes nothing and asks for nothing. */
void uw_life_step(struct uw_life *l, enum uw_life_input in, const struct uw_life_facts *f,
		  struct uw_life_acts *a);

/* Full operation: FPDUs are read and parsed (HOLD and WAIT_RTR too). */
static inline bool uw_life_full(const struct uw_life *l)
{
	return l->st == UW_LIFE_HOLD || l->st == UW_LIFE_WAIT_RTR || l->st == UW_LIFE_RUNNING;
}

/* The send side may go (not during a hold). */
static inline bool uw_life_tx_open(const struct uw_life *l) { return l->st == UW_LIFE_RUNNING; }

/* The engine started the RTR, or the nudge: not due any more. */
static inline void uw_life_rtr_started(struct uw_life *l) { l->rtr_due = false; }
static inline void uw_life_nudge_started(struct uw_life *l) { l->nudge_due = false; }

const char *uw_life_state_str(enum uw_life_state s);

#endif
