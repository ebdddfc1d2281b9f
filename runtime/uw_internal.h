/*
 * uw_internal.h: the objects behind include/uwarp/verbs.h and the engine
 * that runs them (internal to runtime/).
 *
 * Locking: one mutex per context guards every object of the context and
 * the libuv loop. Public calls take it; engine callbacks run inside
 * uv_run(), which is only ever called with it held. Waiting (for the
 * network, a completion, a CM event) happens with the mutex released, in
 * poll(2) on the loop's backend fd, so any number of threads may wait while
 * another posts.
 */
#ifndef UWARP_UW_INTERNAL_H
#define UWARP_UW_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <uv.h>

#include <uwarp/verbs.h>

#include "mpa/fpdu.h"
#include "mpa/mpa_negotiate.h"
#include "rdmap/rdmap_conn.h"
#include "conn_life.h"
#include "util/progress_lease.h"
#include "rdmap/stag_table.h"
#include "util/list.h"
#include "util/sys.h"

/* ---- context ---- */

struct uw_stag_entry;
struct uw_mw_impl;

/* A wait progresses this long before it sleeps (UWARP_SPIN_US); see
 * uw__wait_spin and docs/performance.md for the figure behind it. */
#define UW_SPIN_US_DEFAULT 20
/* A Send that finds no receive posted waits this long for one, its
 * connection's input paused (UWARP_RECV_WAIT_MS; engine_rx.c says why). */
#define UW_RECV_WAIT_MS_DEFAULT 1000

struct uw_context {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* auto progress: the engine thread stands back on it */
	uv_loop_t loop;
	uv_async_t wake;         /* ends the loop's poll: the engine's, or a waiting caller's */
	struct util_lease lease; /* auto progress: engine or caller (util/progress_lease.h) */
	bool engine_parked;
	/* Rung by uw__notify for the threads asleep in uw__wait: the one that
	 * ran the loop may have taken the readiness they slept on. Lowered
	 * by the last of them to leave, so that none misses it. */
	int bell;
	bool bell_up;
	uint64_t spin_ns;      /* how long a wait progresses before it sleeps */
	unsigned recv_wait_ms; /* a Send's wait for a receive (0: none) */
	unsigned rx_waiting;   /* connections in such a wait (uw__conn_set_rx_wait) */
	enum uw_progress progress;
	pthread_t thread;
	bool thread_running;
	bool stopping;
	unsigned reply_timeout_ms;
	unsigned request_timeout_ms;
	/* memory table: STag >> 8 is a random index (stag_ix) naming a slot */
	struct uw_stag_entry *stags;
	uint32_t nstags, stag_free;
	struct stag_table stag_ix;
	uint32_t rand_pool[64]; /* the kernel's random bytes, drawn 256 at a time */
	unsigned rand_left;
	uint32_t next_qpn;
	uint32_t next_pd;
	int nobjects;           /* PDs, CQs, channels, ids: uw_close needs 0 */
	struct util_list conns; /* live connections (closing ones too) */
	struct util_list held;  /* connections whose sends UW_SEND_MORE holds */
	/* auto progress: when the engine thread looks at the loop next (ns;
	 * UINT64_MAX: not before something wakes it) */
	uint64_t engine_looks_by;
	/* Every connection reads through this one buffer (UW_CONN_RXBUF_MARKERS
	 * bytes): the receive path parses what it reads before it returns, so
	 * an idle connection holds no receive buffer of its own, only bytes
	 * it could not parse yet (engine_rx.c). Used under lock only. */
	uint8_t *rxbuf;
	/* gather lists (struct uw_txset) of connections that have none in
	 * flight, for the next that has something to send (engine_tx.c) */
	struct uw_txset *txsets;
	unsigned ntxsets;
};

/* Writes on a connection's socket never raise SIGPIPE: a peer that resets
 * must cost the program an error on that connection, never the process
 * (a server died when it sent a Terminate to a client killed mid-transfer). */
static inline ssize_t uw__sock_writev(int fd, const struct iovec *iov, int iovcnt)
{
	struct msghdr m = { .msg_iov = (struct iovec *)(uintptr_t)iov,
			    .msg_iovlen = (size_t)iovcnt };
	return util_sys_sendmsg(fd, &m, MSG_NOSIGNAL);
}

static inline ssize_t uw__sock_write(int fd, const void *buf, size_t len)
{
	return util_sys_send(fd, buf, len, MSG_NOSIGNAL);
}

/* Called with ctx->lock held: move whatever is ready, without blocking. */
void uw__progress(struct uw_context *ctx);
/* The same, by a thread of the program (it found nothing to take): with
 * automatic progress that thread holds the lease (util/progress_lease.h). */
void uw__progress_caller(struct uw_context *ctx);
/* Called with ctx->lock held: a thread of the program called in without
 * progressing (it posted, or found completions); if it holds the lease,
 * the lease runs on (util_lease_keep). Without this a program busy
 * posting and reaping for longer than a lease lost it, and its engine
 * thread woke for every writable socket and fought the program's posts
 * for the lock (docs/performance.md). */
void uw__lease_keep(struct uw_context *ctx);
/* Called with ctx->lock held: the program is about to wait outside
 * uwarp (it armed a CQ, or found a non-blocking channel empty): the
 * engine thread, if standing back, resumes now. */
void uw__lease_release(struct uw_context *ctx);
/*
 * Called with ctx->lock held: release it, wait until the network, fd
 * (if >= 0) or a loop timer needs attention or timeout_ms passes (-1:
 * forever), take it back and progress. Returns 0, or -ETIMEDOUT when the
 * time is up.
 */
int uw__wait(struct uw_context *ctx, int fd, int timeout_ms);
/* One wait of a program's thread (uw_cq_wait, a blocking channel take):
 * zeroed at its start, passed to each uw__wait_spin and to uw__wait_done. */
struct uw__spin_wait {
	uint64_t spin_until; /* ns */
	uint64_t slept_at;   /* ns: its first sleep began (0: none yet) */
	bool begun;
};
/*
 * uw__wait, but the first calls of a wait progress on this thread without
 * sleeping, for up to the thread's spin (either way the call ends having
 * progressed once: its caller need not): a reply due in microseconds is
 * taken without the cost of a sleep and a wake-up. Each call yields the
 * CPU once (the peer may need this core). The spin starts at
 * ctx->spin_ns and adapts per thread to how the waits went, and stops
 * at once when the CPU is busy with another task (util/spin.h).
 */
int uw__wait_spin(struct uw_context *ctx, struct uw__spin_wait *w, int timeout_ms);
/* The wait ends (whatever it found): its thread's spin learns from it. */
void uw__wait_done(struct uw_context *ctx, struct uw__spin_wait *w);
/* Something changed that the engine thread's sleep must see. */
void uw__kick(struct uw_context *ctx);
/* Completions or events appeared: wake the threads waiting in uw__wait. */
void uw__notify(struct uw_context *ctx);
/* 32 bits from the kernel's CSPRNG (STag indices and keys must not be
 * predictable from STags a peer has seen). */
uint32_t uw__random32(struct uw_context *ctx);

/* ---- memory ---- */

struct uw_pd_impl {
	struct uw_pd pub;
	uint32_t id;
	int refs; /* MRs, MWs, QPs, SRQs */
};

enum uw_stag_kind { UW_STAG_FREE = 0, UW_STAG_MR, UW_STAG_MW };

struct uw_stag_entry {
	uint8_t kind;
	uint8_t key;
	bool valid;     /* a window bound and not invalidated */
	uint32_t index; /* the STag's index part (stag_table.h) */
	uint32_t next_free;
	uint32_t pd;
	uint32_t qp;     /* a window bound to one QP */
	uint32_t rights; /* enum ddp_rights */
	uint8_t *addr;
	uint64_t to_base; /* the tagged offset (and local SGE address) of addr */
	uint64_t len;
	struct uw_mr *mr;      /* the MR of this entry, or the MR a window is over */
	struct uw_mw_impl *mw; /* a window's own object */
};

struct uw_mr_impl {
	struct uw_mr pub;
	int access;
	int windows; /* bound windows: deregistration waits for them */
};

struct uw_mw_impl {
	struct uw_mw pub;
	uint32_t slot;
	struct uw_mr_impl *over;
};

/* The ddp_mem interface over the context's STag table. */
int uw__stag_lookup(void *ctx, uint32_t stag, struct ddp_region *out);
int uw__stag_invalidate(void *ctx, uint32_t stag, uint32_t pd, uint32_t qp);
/* A local SGE as an iovec: the lkey must name an MR of pd covering it with
 * the rights (enum ddp_rights). Returns 0 or EINVAL/EACCES. */
int uw__sge_check(struct uw_context *ctx, uint32_t pd, const struct uw_sge *sge, uint32_t rights,
		  struct iovec *out);
/* A UW_WR_BIND_MW as posted on qp (ctx->lock held): checked, and its rkey
 * decided and shown in mw->rkey (*rkey too). 0, EINVAL or EACCES. */
int uw__bind_wr_check(struct uw_qp *qp, const struct uw_send_wr *wr, uint32_t *rkey);
/* Carry out a checked UW_WR_BIND_MW whose turn has come (ctx->lock held;
 * w->lkey0 is its region's lkey): UW_WC_SUCCESS, or UW_WC_MW_BIND_ERR when
 * its region or window is gone. */
struct uw_swqe;
enum uw_wc_status uw__bind_wr_run(struct uw_qp *qp, const struct uw_swqe *w);

/* ---- channels (uw_channel.c) ---- */

/* What a completion channel and a CM event channel share: a queue of
 * events (ctx->lock) and a descriptor readable while it is not empty. */
struct uw__chan {
	int evfd;                /* a util/evfd.h flag: raised while events waits */
	struct util_list events; /* in order */
	bool nonblock;
	int users; /* the CQs or ids that report here */
};

/* Open: its flag and the descriptor the program waits on (*fd). 0 or an
 * errno. */
int uw__chan_open(struct uw__chan *ch, struct uw_context *ctx, int *fd);
/* Close, unless CQs or ids still report here (or, with refuse_queued,
 * events wait): 0 or EBUSY. */
int uw__chan_close(struct uw__chan *ch, struct uw_context *ctx, int fd, bool refuse_queued);
/* A channel object of @size bytes: its public part (context, descriptor)
 * first, its struct uw__chan at @off; made and opened, or NULL with
 * errno. Destroyed the same way (uw__chan_close's EBUSY, or 0 and freed). */
void *uw__chan_create(struct uw_context *ctx, size_t size, size_t off);
int uw__chan_destroy(void *impl, size_t off, bool refuse_queued);
void uw__chan_nonblock(struct uw__chan *ch, struct uw_context *ctx, int nonblock);
/* Queue an event (ctx locked). */
void uw__chan_push(struct uw__chan *ch, struct util_list *n);
/* Lower the flag if nothing waits any more (after events were removed
 * some other way; ctx locked). */
void uw__chan_settle(struct uw__chan *ch);
/* The first event, taken off (ctx locked; it waits with the lock let go,
 * moving the network itself under manual progress). NULL and *err:
 * EAGAIN (non-blocking, none waits) or ETIMEDOUT (timeout_ms passed; -1
 * waits for ever). */
struct util_list *uw__chan_take(struct uw__chan *ch, struct uw_context *ctx, int timeout_ms,
				int *err);

/* ---- completion queues ---- */

struct uw_channel_impl {
	struct uw_comp_channel pub;
	struct uw__chan ch; /* its events: armed CQs that fired */
};

/* ---- asynchronous events (uw_async.c) ---- */

struct uw_async_impl {
	struct uw_async_channel pub;
	struct uw__chan ch; /* its events: struct uw__async_node */
};

/* An object's one pending event of a kind, on its channel's list while
 * queued (objects raise each kind at most once until it is taken). */
struct uw__async_node {
	struct util_list link;
	struct uw_async_event ev;
	bool queued;
};

/* Raise @n's event (type set here) on @ch, unless @ch is NULL or it waits
 * already. ctx->lock held. */
void uw__async_raise(struct uw_async_impl *ch, struct uw__async_node *n,
		     enum uw_async_event_type type);
/* Take @n off its channel if queued. ctx->lock held. */
void uw__async_drop(struct uw_async_impl *ch, struct uw__async_node *n);
/* An object's reporting, and its @n nodes' waiting events, from *at to @to
 * (NULL: nowhere, as its destruction does). ctx->lock held. */
void uw__async_move(struct uw_async_impl **at, struct uw_async_impl *to,
		    struct uw__async_node *const *nodes, int n);
/* The QP of connection-side code failed (not by the application's
 * doing): its one error event, the kind chosen by the Terminate this end
 * sent (@sent, NULL for none). ctx->lock held. */
struct rddp_error;
struct uw_qp_impl;
void uw__qp_async_fail(struct uw_qp_impl *qp, const struct rddp_error *sent);

struct uw_cq_impl {
	struct uw_cq pub;
	struct uw_async_impl *async;
	struct uw__async_node async_err;
	struct uw_wc *ring;
	uint32_t cap, head, count;
	int armed; /* 0, 1 (any), 2 (solicited only) */
	bool overflow;
	unsigned events, acked;
	struct util_list fired; /* on the channel's events list */
	bool queued;
	int users;
};

/* Add a completion; raises the armed event. Returns 0 or -ENOSPC (overflow). */
int uw__cq_push(struct uw_cq_impl *cq, const struct uw_wc *wc);
/* A destroyed QP's completions stay queued but no longer point at it. */
void uw__cq_forget_qp(struct uw_cq_impl *cq, const struct uw_qp *qp);

/* ---- queue pairs ---- */

struct uw_swqe {
	struct uw_send_wr wr; /* copied; sg_list and next are not used */
	uint32_t lkey0;       /* a Read's sink STag: its SGE's lkey */
	struct iovec *iov;    /* max_send_sge entries, in the QP's pool */
	int niov;
	uint8_t *inline_buf; /* max_inline_data bytes, in the QP's pool */
	bool signaled;
	bool done; /* its work finished; completes in order */
	enum uw_wc_status status;
	uint8_t term_layer, term_etype, term_ecode; /* the peer's Terminate */
};

struct uw_rwqe {
	uint64_t wr_id;
	struct iovec *iov; /* max_recv_sge entries, in the owner's pool */
	int niov;
	struct rdmap_recv recv; /* what the RDMAP core places into */
};

struct uw_srq_impl {
	struct uw_srq pub;
	struct uw_async_impl *async;
	struct uw__async_node async_limit;
	uint32_t limit; /* armed limit, 0: none */
	struct uw_rwqe *ring;
	struct iovec *iov_pool;
	uint32_t cap, head, count;
	uint32_t max_sge;
	int users;
};

struct uw_conn;

struct uw_qp_impl {
	struct uw_qp pub;
	struct uw_async_impl *async;
	struct uw__async_node async_err;  /* FATAL, REQ_ERR or ACCESS_ERR, once */
	struct uw__async_node async_last; /* LAST_WQE_REACHED, once */
	bool async_failed;                /* async_err was raised */
	int end_errno;                    /* why its connection ended (uw_qp_end_errno) */
	struct uw_qp_init_attr attr;
	/* send queue, absolute counters: completed < head <= next <= tail */
	struct uw_swqe *sq;
	uint32_t sq_cap, sq_head, sq_next, sq_tail;
	/* each request's gather list and inline room, by slot (util/pages.h:
	 * a large queue's pages are touched only where requests went) */
	struct iovec *sq_iov;
	uint8_t *sq_inline;
	/* receive queue: [head, tail); [head, head+claimed) handed to Sends */
	struct uw_rwqe *rq;
	uint32_t rq_cap, rq_head, rq_tail, rq_claimed;
	struct iovec *rq_iov;
	struct uw_rwqe srq_claimed; /* a receive taken from the SRQ */
	struct iovec srq_claimed_iov[UW_MAX_SGE];
	bool srq_claim_held;
	struct uw_conn *conn;
	struct uw_cm_id_impl *id;
	bool rfc7306;
	uint32_t reads_out; /* Read/atomic WRs awaiting their Response */
};

static inline struct uw_swqe *uw__sq_at(struct uw_qp_impl *qp, uint32_t abs)
{
	return &qp->sq[abs % qp->sq_cap];
}

/* Flush every outstanding WR with FLUSH_ERR and move to ERR. */
void uw__qp_flush(struct uw_qp_impl *qp);
/* Complete the send queue head while its WRs are done, in order. */
void uw__qp_complete_sends(struct uw_qp_impl *qp);
/* The receive a Send arriving now lands in (recv_claim for the core). */
const struct rdmap_recv *uw__qp_recv_claim(void *qp);
/* The claimed receive is complete: a completion for it. */
void uw__qp_recv_done(struct uw_qp_impl *qp, const struct uw_wc *wc);
/* Push to a CQ; an overflow fails the QP (as an RNIC's CQ error). */
void uw__qp_cq_push(struct uw_qp_impl *qp, struct uw_cq *cq, const struct uw_wc *wc);

/* ---- connection manager ---- */

struct uw_cm_channel_impl {
	struct uw_cm_channel pub;
	struct uw__chan ch; /* its events: struct uw_cm_event_impl */
};

struct uw_cm_event_impl {
	struct uw_cm_event pub;
	struct util_list link;
	uint8_t pdata[MPA_PD_MAX_RFC];
};

struct uw_cm_id_impl {
	struct uw_cm_id pub;
	struct uw_cm_channel_impl *ch;
	int listen_fd;
	uv_poll_t listen_poll;
	bool listening;
	struct uw_conn *conn;
	bool destroyed;
	int refs; /* the application's, a listen handle, pending requests */
	int tos;  /* uw_cm_set_tos's, or -1 (the system's) */
};

/* what a connection reads at a time (through ctx->rxbuf) */
#define UW_CONN_RXBUF 16384
/* With markers the payload cannot be read in place (a marker every 508
 * bytes would make a list of hundreds of tiny pieces, slower than copying
 * out of a buffer): such a connection reads through a larger one. */
#define UW_CONN_RXBUF_MARKERS 65536
#define UW_CONN_BATCH_IOV 256
#define UW_CONN_BATCH_SCRATCH 4096
#define UW_CONN_HDRS 128

/* A connection's gather list while it has one in flight: the iovecs, the
 * bytes they point into (headers, CRCs, markers), the WQEs the list
 * finishes and the staged Read Response payload. Taken from the context's
 * pool when there is something to send and given back once the list has
 * left, so an idle connection holds none (engine_tx.c). */
struct uw_swqe;
struct uw_txset {
	struct uw_txset *next; /* in ctx->txsets */
	int niov;              /* iov's length */
	struct iovec *iov;
	uint8_t scratch[UW_CONN_BATCH_SCRATCH];
	uint8_t hdrs[UW_CONN_HDRS][MPA_ULPDU_LEN_SIZE + RDMAP_MAX_HDR];
	struct uw_swqe *done[UW_CONN_HDRS];
	uint8_t *stage; /* UW_TX_STAGE_BYTES, made when a Response first needs it */
	uint8_t *flat;  /* markers: the FPDUs themselves (fpdu_batch.flat), or NULL */
};
#define UW_TXSETS_KEPT 64 /* the pool's size at most: the rest are freed */

/* what the message being cut into FPDUs (uw_conn.txm) carries */
enum uw_txm_kind { UW_TXM_WQE = 1, UW_TXM_RESPONSE, UW_TXM_RTR, UW_TXM_NUDGE };

struct uw_conn {
	struct util_list link; /* in ctx->conns */
	struct uw_context *ctx;
	struct uw_cm_id_impl *id;
	struct uw_cm_id_impl *listener; /* responder: where its Request goes */
	struct uw_qp_impl *qp;
	struct uw_life life; /* where it is in its life (conn_life.h) */
	int fd;
	uv_poll_t poll;
	int poll_events; /* what the poll watches */
	int poll_want;   /* what it would watch, were the input not paused */
	uv_timer_t timer;
	uv_timer_t idle; /* param.idle_timeout_ms's watch, if set */
	bool idle_on;
	uint8_t idle_ticks;           /* ticks (half the limit) without a whole FPDU */
	uint64_t rx_fpdus, idle_seen; /* whole FPDUs received; at the last tick */
	int handles;                  /* libuv handles still open */
	bool freeing;
	/* MPA setup */
	struct uw_conn_param param;
	uint8_t param_pdata[MPA_PD_MAX_RFC];
	struct mpa_policy pol;
	struct mpa_frame req; /* ours (initiator) or theirs (responder) */
	uint8_t frame[MPA_FRAME_HDR_LEN + MPA_PD_MAX_RFC];
	size_t frame_len;
	uint8_t out[MPA_FRAME_HDR_LEN + MPA_PD_MAX_RFC];
	size_t out_len, out_off;
	struct mpa_params mp;
	bool peer_ext; /* the peer offered RFC 7306 */
	/* full operation */
	struct rdmap_conn rd;
	bool rd_init;
	struct fpdu_rx rx;
	struct fpdu_tx tx;
	uint8_t *rxbuf; /* ctx->rxbuf while reading; else bytes held, or NULL */
	bool rx_own;    /* rxbuf is the connection's own (held bytes) */
	size_t rxcap, rxlen, rxoff;
	struct rdmap_place pl;
	/* A header the receive rules refused, in an FPDU whose CRC is still to
	 * come: its payload is read and dropped, and the Terminate waits for
	 * the CRC (a bad one is the truer error: the header may be the part
	 * that was damaged). */
	bool rx_discard;
	struct rddp_error rx_hdr_err;
	bool want_tx;               /* receive made work for the send side */
	struct util_list held_link; /* in ctx->held: a post with UW_SEND_MORE skipped the send */
	/* A Send's first segment found no receive posted: its header waits
	 * in rx, the input is paused until one is posted or rx_wait_timer
	 * runs out (engine_rx.c) */
	bool rx_wait, rx_wait_timer_on;
	uv_timer_t rx_wait_timer;
	/* transmit */
	struct fpdu_batch batch;
	struct uw_txset *txset; /* while a list is in flight (or markers: always) */
	int batch_niov;         /* the length of list this connection's FPDUs take */
	int wr_iov;             /* first unwritten iovec */
	size_t wr_pos;          /* bytes of the batch written */
	uint32_t nhdrs;
	struct rdmap_tx_msg txm;
	bool txm_active;
	enum uw_txm_kind txm_kind;
	struct uw_swqe *txm_wqe;
	bool txm_second;      /* Write with Immediate: the Immediate part */
	size_t stage_used;    /* of txset->stage: Read Response payload copied for the CRC */
	uint32_t nbatch_done; /* WQEs finished by this batch (txset->done) */
	bool peer_eof;        /* terminating: the peer shut its side */
	/* why it ended */
	int close_status;
	struct rdmap_term peer_term;
	bool peer_terminated;
};

/* engine_conn.c */
struct uw_conn *uw__conn_new(struct uw_context *ctx, int fd, bool initiator);
void uw__conn_poll(struct uw_conn *c, int events);
void uw__conn_timer(struct uw_conn *c, unsigned ms);
#define UW_EV_AUTO UW_LIFE_EV_AUTO /* the event the connection's state calls for */
#define UW_EV_NONE UW_LIFE_EV_NONE
/* Feed the connection's state machine and carry out what it asks for that
 * is the same whatever the input (the timer, releasing the send side, the
 * event, the close); the rest (sending the Request, the Terminate,
 * moving the send side) is the caller's, from what this returns. */
struct uw_life_acts uw__conn_step(struct uw_conn *c, enum uw_life_input in,
				  const struct uw_life_facts *f);
/* Tear down: flush the QP, report event to the id, close the socket (after
 * a Terminate has left, the socket lingers first: UW_LIFE_LINGER). */
void uw__conn_close(struct uw_conn *c, int status, int event);
/* Begin full operation with the negotiated parameters. Returns 0 or -errno. */
int uw__conn_start(struct uw_conn *c);
/* the application changed the connection's limits (ctx locked): now if it
 * runs, else from its start */
void uw__conn_set_limits(struct uw_conn *c, unsigned idle_timeout_ms, unsigned keepalive_s);
/* A protocol error found here: finish the FPDUs already begun, send the
 * Terminate behind them, close (within UW_LIFE_TERM_LINGER_MS). */
void uw__conn_fail(struct uw_conn *c, const struct rddp_error *e);
/* A terminating connection's input: read and thrown away. */
void uw__conn_discard_input(struct uw_conn *c);

/* engine_tx.c: move the send side as far as the socket allows. */
void uw__conn_tx(struct uw_conn *c);
/* UW_SEND_MORE: hold what was posted on @c, or send what is held */
void uw__conn_hold(struct uw_conn *c);
void uw__flush_held(struct uw_context *ctx);
/* engine_tx.c, a terminating connection: the rest of the gather list
 * begun, then the Terminate in c->out; closes once it has left. */
void uw__conn_term_tx(struct uw_conn *c);
/* engine_rx.c: take what the socket has in full operation. */
void uw__conn_rx(struct uw_conn *c);
/* An id's type of service on one of its sockets (uw_cm_set_tos) */
void uw__cm_apply_tos(const struct uw_cm_id_impl *id, int fd);
/* A receive was posted to the connection's QP or SRQ: a Send waiting for
 * one goes on (engine_rx.c) */
void uw__conn_recv_posted(struct uw_conn *c);
/* Enter or leave that wait, counted in ctx->rx_waiting: an SRQ's post looks
 * for waiting connections only when there are some */
static inline void uw__conn_set_rx_wait(struct uw_conn *c, bool on)
{
	if (c->rx_wait != on)
		c->ctx->rx_waiting = on ? c->ctx->rx_waiting + 1 : c->ctx->rx_waiting - 1;
	c->rx_wait = on;
}
/* engine_rx.c: after a read into the shared buffer, keep the bytes not
 * parsed yet in the connection's own (false: out of memory) */
bool uw__conn_rx_hold(struct uw_conn *c);
/* engine_tx.c: the pool's lists freed (uw_close) */
void uw__txsets_free(struct uw_context *ctx);
/* engine_tx.c: a closed connection's list goes back */
void uw__conn_txset_put(struct uw_conn *c);

/* cm_event.c: queue an event for @id on its channel (ctx locked); @c,
 * when given, says what was negotiated and what the peer sent. */
void uw__cm_event(struct uw_cm_id_impl *id, enum uw_cm_event_type type, int status,
		  struct uw_cm_id_impl *listen_id, const struct uw_conn *c);
/* cm_id.c: a new id on @ch (ctx locked); NULL when out of memory */
struct uw_cm_id_impl *uw__cm_id_new(struct uw_cm_channel_impl *ch, void *context);
/* cm_id.c: let go of a reference; the last one frees the id. */
void uw__cm_id_put(struct uw_cm_id_impl *id);
/* cm_listen.c: the engine read a connection's MPA Request. */
void uw__cm_request_arrived(struct uw_conn *c);
/* cm_listen.c: an accepted TCP connection of the listener @id, whose MPA
 * Request is still to come (ctx locked). 0 or ENOMEM. */
int uw__cm_take_accepted(struct uw_cm_id_impl *id, int fd);
/* cm_connect.c: the engine's TCP connect finished; the Reply arrived. */
void uw__cm_connected(struct uw_conn *c);
void uw__cm_reply_arrived(struct uw_conn *c);
/* cm_connect.c: may @id connect now (a QP in INIT, nothing under way)? */
bool uw__cm_can_connect(const struct uw_cm_id_impl *id);
/* cm_connect.c: a connection on @fd (connected or connecting) that sends
 * the MPA Request once it is writable (ctx locked); it owns @fd on 0. */
int uw__cm_start_connect(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param);

/* cm.c: what both sides share */
/* the MPA policy a connection's parameters make */
void uw__cm_policy_from(const struct uw_conn_param *p, bool responder, struct mpa_policy *pol);
/* our private data into @out, with the RFC 7306 offer behind it if asked
 * for and it fits; the length */
size_t uw__cm_pdata_with_offer(const struct uw_conn_param *p, bool offer, uint8_t *out);
/* send an MPA frame in one write (the rest when writable); 0 or errno */
int uw__cm_send_frame(struct uw_conn *c, const struct mpa_frame *f);
/* a Terminate while still in setup (LLP/MPA @ecode) */
void uw__cm_setup_terminate(struct uw_conn *c, uint8_t ecode, bool crc);
/* the defaults for NULL; NULL when @p cannot be used */
const struct uw_conn_param *uw__cm_param_or_default(const struct uw_conn_param *p);
/* a program's TCP socket becomes a connection of @id: an initiator's with
 * @param, else a request for the listener @id (0 or errno) */
int uw__cm_hand_over(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param);

#endif
