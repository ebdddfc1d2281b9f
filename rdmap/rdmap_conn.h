/*
 * rdmap_conn.h: one RDMAP stream as pure protocol state (RFC 5040, 5041,
 * 7306): what is allowed to arrive next, where each payload byte goes, what
 * completes, which Terminate a bad segment earns, and how outgoing messages
 * are cut into segments. No sockets, threads or clocks: the engine feeds it
 * parsed FPDU headers and asks it for segments to send.
 *
 * Receive, per FPDU (after fpdu_rx reports FPDU_RX_HDR):
 *     rdmap_rx_begin()  -> where the payload goes (or a Terminate)
 *     ... payload lands in pl->iov ...
 *     rdmap_rx_end()    -> after the CRC: state advances, maybe an event
 * Transmit, per message:
 *     rdmap_tx_start() then rdmap_tx_next() until it returns 0.
 *
 * Memory allocation happens only in rdmap_conn_init (ORQ and IRQ rings
 * sized by ORD and IRD); the per-message paths never allocate.
 */
#ifndef UWARP_RDMAP_CONN_H
#define UWARP_RDMAP_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp/ddp_hdr.h"
#include "ddp/ddp_mem.h"
#include "ddp/ddp_rx.h"
#include "ddp/ddp_segment.h"
#include "mpa/rddp_error.h"
#include "rdmap_opcode.h"
#include "rdmap_term.h"

/* A receive buffer the verbs layer hands to an arriving Send or Immediate
 * Data message; claimed when the message's first segment arrives. */
struct rdmap_recv {
	const struct iovec *sge;
	int nsge;
	uint64_t len;
	uint64_t cookie;
};

#define RDMAP_PLACE_MAX_IOV 32

/* Where one segment's payload goes: never anywhere but these ranges. */
struct rdmap_place {
	struct iovec iov[RDMAP_PLACE_MAX_IOV];
	int niov;
	uint32_t len;
};

struct rdmap_conn_cfg {
	uint32_t pd;     /* protection domain of the QP */
	uint32_t qp;     /* QP number, for memory windows bound to it */
	uint16_t ird;    /* inbound Read/Atomic Requests we hold (negotiated) */
	uint16_t ord;    /* outbound Read/Atomic Requests in flight (negotiated) */
	bool rfc7306;    /* the peer is uwarp: Immediate Data and Atomics */
	uint32_t mulpdu; /* largest ULPDU we send */
	struct ddp_mem mem;
	/* Claim the next posted receive for an arriving message; NULL when
	 * none is posted. The claim holds until RDMAP_EV_RECV/IMMEDIATE hands
	 * it back, or the connection fails (then the owner flushes it). */
	const struct rdmap_recv *(*recv_claim)(void *ctx);
	void *recv_ctx;
	/* A message that finds no receive posted may wait for one:
	 * rdmap_rx_begin then returns -EAGAIN and changes nothing, and the
	 * engine stops taking input and asks again when a receive is posted;
	 * with recv_wait_over set (the wait ran out), or without recv_wait,
	 * it is the Terminate RFC 5041 section 7.2 names (DDP, untagged,
	 * 0x02: no buffer available). */
	bool recv_wait;
};

enum rdmap_event_kind {
	RDMAP_EV_NONE = 0,
	RDMAP_EV_RECV,        /* a Send filled the claimed receive */
	RDMAP_EV_IMMEDIATE,   /* Immediate Data consumed the claimed receive */
	RDMAP_EV_WRITE,       /* an RDMA Write was placed whole */
	RDMAP_EV_READ_REQ,    /* a Read Request waits on the IRQ for its Response */
	RDMAP_EV_READ_DONE,   /* our Read completed: its data is placed */
	RDMAP_EV_ATOMIC_REQ,  /* an Atomic Request ran; its Response waits on the IRQ */
	RDMAP_EV_ATOMIC_DONE, /* our Atomic completed: the original value is stored */
	RDMAP_EV_TERMINATE,   /* the peer sent a Terminate */
};

struct rdmap_event {
	enum rdmap_event_kind kind;
	uint64_t cookie;  /* the receive's or our request's */
	uint64_t len;     /* bytes received, written or read */
	bool solicited;   /* Send with SE, Immediate Data with SE */
	bool invalidated; /* Send with Invalidate revoked inval_stag */
	uint32_t inval_stag;
	uint64_t value;         /* Immediate Data, or an atomic's original value */
	struct rdmap_term term; /* the peer's Terminate */
};

enum rdmap_orq_kind { RDMAP_ORQ_READ = 1, RDMAP_ORQ_ATOMIC };

/* One of our Read or Atomic Requests awaiting its Response. */
struct rdmap_orq_entry {
	uint8_t kind;
	uint64_t cookie;
	uint32_t sink_stag; /* read: where the Response lands */
	uint64_t sink_to;
	uint32_t len;
	uint32_t placed;
	uint32_t req_id; /* atomic */
	uint8_t *result; /* atomic: 8 bytes for the original value */
};

/* One of the peer's requests that we still owe a Response. */
struct rdmap_irq_entry {
	uint8_t kind;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	const uint8_t *src;
	uint32_t req_id;
	uint64_t value;
};

struct rdmap_ring {
	void *e;       /* NULL until the first request (rdmap_ring_ready) */
	uint32_t size; /* entry size */
	uint32_t cap, head, count;
};

/* the ring's entries, made at its first use: 0 or -ENOMEM */
int rdmap_ring_ready(struct rdmap_ring *r);

enum rdmap_state {
	RDMAP_OPEN = 0,
	RDMAP_TERMINATING,     /* we found an error: send the Terminate, then close */
	RDMAP_PEER_TERMINATED, /* the peer sent a Terminate: close */
};

/* The segment in flight: its header (for its end and for a Terminate) and
 * what begin parsed from it for end to act on. */
struct rdmap_seg {
	struct ddp_hdr ddp;
	const struct rdmap_op *op;
	uint8_t opcode;
	uint8_t hdr[RDMAP_MAX_HDR];
	uint16_t hdr_len;
	uint32_t payload_len;
	/* Read Request and Atomic Request fields */
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t size;
	uint8_t *target; /* the source of a Read, the word of an Atomic */
	uint8_t atomic_op;
	uint32_t req_id;
	uint64_t data, data_mask, cmp, cmp_mask;
};

struct rdmap_conn {
	struct rdmap_conn_cfg cfg;
	enum rdmap_state state;
	struct rddp_error err;  /* why, once TERMINATING */
	bool err_has_hdr;       /* the offending header goes into the Terminate */
	bool err_has_rdmap_hdr; /* ... with its Read Request header */
	struct ddp_rx ddp;
	struct rdmap_seg seg;
	/* receive side, per message */
	const struct rdmap_recv *recv; /* claimed for the Send in progress */
	bool recv_wait_over;           /* set by the engine: no more waiting */
	uint8_t recv_opcode;
	uint8_t tagged_opcode;
	uint64_t tagged_bytes;
	uint8_t small[RDMAP_TERM_MAX_PAYLOAD]; /* Terminate or Immediate payload */
	struct rdmap_ring orq;
	struct rdmap_ring irq;
	/* transmit side */
	uint32_t tx_msn[DDP_QN_COUNT];
	uint32_t next_atomic_id;
};

/* Set up a stream; allocates the ORQ and IRQ. Returns 0 or -ENOMEM. */
int rdmap_conn_init(struct rdmap_conn *c, const struct rdmap_conn_cfg *cfg);
void rdmap_conn_fini(struct rdmap_conn *c);

/* A layer below (MPA framing, the LLP) failed the stream: record why, so
 * rdmap_tx_terminate() reports it (with no header attached). */
void rdmap_conn_fail(struct rdmap_conn *c, const struct rddp_error *e);
/* Withdraw a receive error not yet sent: the header it judged arrived in
 * an FPDU whose CRC then failed, so the CRC error is the one to report. */
void rdmap_conn_retract(struct rdmap_conn *c);

/*
 * A ULPDU header arrived (hdr: hdr_len bytes as fpdu_rx collected them,
 * payload_len bytes of payload follow). Returns 0 and fills *pl, or
 * -EBADMSG: the stream is now TERMINATING, c->err says why, and nothing of
 * this segment may be placed; or, with cfg.recv_wait, -EAGAIN: the first
 * segment of a Send or Immediate Data found no receive posted, nothing has
 * changed, and the same call is to be made again (with recv_wait_over set
 * once the engine has waited long enough).
 */
int rdmap_rx_begin(struct rdmap_conn *c, const uint8_t *hdr, size_t hdr_len, uint32_t payload_len,
		   struct rdmap_place *pl);
/*
 * The segment is complete and its CRC good: commit it. Returns 1 with *ev
 * filled when a message completed, 0 when nothing completed, or -EBADMSG
 * (TERMINATING) when completing it failed (an STag that cannot be
 * invalidated, an atomic on a misaligned target).
 */
int rdmap_rx_end(struct rdmap_conn *c, struct rdmap_event *ev);

/* Copy payload bytes at offset off of the segment into its place. */
void rdmap_place_copy(const struct rdmap_place *pl, uint32_t off, const void *data, size_t len);

/* ---- transmit ---- */

/* A message to send. Fields by opcode:
 *   Write, Read Response: sge/nsge (payload), stag/to (remote sink)
 *   Send variants: sge/nsge, inval_stag (with Invalidate)
 *   Read Request: sink_stag/sink_to (local), stag/to (remote source), len
 *   Atomic Request: atomic_op, stag/to (remote), data, data_mask, cmp,
 *     cmp_mask, result (8 local bytes for the original value)
 *   Atomic Response: req_id, value
 *   Immediate Data: value
 *   Terminate: built by rdmap_tx_terminate() instead. */
struct rdmap_msg {
	uint8_t opcode;
	const struct iovec *sge;
	int nsge;
	uint32_t stag;
	uint64_t to;
	uint32_t inval_stag;
	uint32_t sink_stag;
	uint64_t sink_to;
	uint32_t len;
	uint8_t atomic_op;
	uint64_t data, data_mask, cmp, cmp_mask;
	uint8_t *result;
	uint32_t req_id;
	uint64_t value;
	uint64_t cookie; /* returned in RDMAP_EV_READ_DONE / ATOMIC_DONE */
};

/* Transmit progress of one message. */
struct rdmap_tx_msg {
	struct rdmap_msg m;
	const struct rdmap_op *op;
	struct ddp_segmenter seg;
	struct iov_cursor cur;
	uint8_t extra[RDMAP_ATOMIC_REQ_LEN]; /* RDMAP header after the DDP one
					      * (and Immediate Data's value) */
	uint8_t extra_len;
	struct iovec own_iov; /* payload owned by the message */
};

/*
 * Begin a message: assign its MSN and, for Read and Atomic Requests, its
 * ORQ slot. Returns 0, -EAGAIN when ORD Requests are already outstanding
 * (try again after a Response), -EINVAL for an opcode we may not send
 * (RFC 7306 ones to a non-uwarp peer, Terminate, a malformed message), or
 * -EPIPE once the stream is terminating.
 */
int rdmap_tx_start(struct rdmap_conn *c, const struct rdmap_msg *m, struct rdmap_tx_msg *t);
/*
 * The next segment: writes MPA_ULPDU_LEN_SIZE spare bytes then the ULPDU
 * header into hdr (room for RDMAP_MAX_HDR + 2), *hdr_len = header length
 * (without the 2 spare bytes), and the payload slice into iov (at most max;
 * RDMAP_PLACE_MAX_IOV always suffices for lists that short). Immediate
 * Data's 8 bytes come in hdr, after the header and counted in *hdr_len:
 * hdr is the caller's until the FPDU is written, *t is not. Returns 1 for
 * a segment, 0 when the message is done.
 */
int rdmap_tx_next(struct rdmap_tx_msg *t, uint8_t *hdr, size_t *hdr_len, struct iovec *iov, int max,
		  int *niov);

/* The oldest request we owe a Response, or NULL; pop it once its Response
 * has been queued whole. */
const struct rdmap_irq_entry *rdmap_irq_head(const struct rdmap_conn *c);
void rdmap_irq_pop(struct rdmap_conn *c);
/* Start the Response for the IRQ head. */
int rdmap_tx_response(struct rdmap_conn *c, struct rdmap_tx_msg *t);

/* Requests in flight (ORQ) and owed (IRQ). */
static inline uint32_t rdmap_orq_count(const struct rdmap_conn *c) { return c->orq.count; }
static inline uint32_t rdmap_irq_count(const struct rdmap_conn *c) { return c->irq.count; }
/* The n-th oldest outstanding request of ours (for flushing on teardown). */
const struct rdmap_orq_entry *rdmap_orq_at(const struct rdmap_conn *c, uint32_t n);

/*
 * The Terminate for c->err as a complete ULPDU (untagged QN 2, MSN 1, L),
 * with the offending headers attached as RFC 5040 4.8 says. Writes at most
 * RDMAP_TERM_MAX_ULPDU bytes into out, after MPA_ULPDU_LEN_SIZE spare bytes;
 * returns the ULPDU length.
 */
size_t rdmap_tx_terminate(const struct rdmap_conn *c, uint8_t *out);

#endif
