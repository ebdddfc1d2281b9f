/*
 * exs_internal.h: the ES-API runtime's objects (exs.h is the API).
 *
 * One runtime per process: a uwarp context with manual progress, one PD,
 * one CQ for every socket's QP, one CM channel, and a progress thread that
 * waits on their descriptors and runs the protocol. One lock guards all of
 * it; application calls take it too and post work themselves, so a send
 * whose advert is there goes out without waking the thread.
 */
#ifndef UWARP_EXS_INTERNAL_H
#define UWARP_EXS_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <exs.h>
#include <uwarp/verbs.h>

#include "exs_fin.h"
#include "exs_wire.h"
#include "stream_proto.h"
#include "util/handoff.h"
#include "util/list.h"
#include "util/progress_lease.h"
#include "util/sys.h"

#define EXS_CTL_RECVS 64         /* control receives each side posts */
#define EXS_SQ_DEPTH 512         /* WRs a QP may have outstanding */
#define EXS_XFER_CAP (16u << 20) /* a stream transfer at most: keeps adverts moving */
#define EXS_RING_DEFAULT (1u << 20)
#define EXS_CREDIT_DEFAULT 8192u     /* EXS_FLOW_CREDIT's slot */
#define EXS_COALESCE_MAX (16u << 10) /* a send copied into a coalescing buffer */
/* A send this small is copied even into an idle pipe (it goes at once all
 * the same): copying it costs less than its zero-copy transfer's
 * bookkeeping, and its event need not wait for the transfer. */
#define EXS_COPY_SMALL 1024
/* Coalescing buffers: two, each half the peer's ring but at most this
 * (the sender holds back no more than the receiver could take) */
#define EXS_COALESCE_BUF (256u << 10)
#define EXS_COALESCE_BUFS 2
/* transfers in flight from which small sends are coalesced */
#define EXS_COALESCE_INFLIGHT 1
/* The shared CQ holds every connection's sends and receives. It starts
 * with room for EXS_CQ_START completions and doubles as connections come,
 * up to the most a CQ holds: EXS_MAX_CONNECTIONS (exs.h) is that over
 * EXS_CONN_CQES. */
#define EXS_CONN_CQES (EXS_SQ_DEPTH + EXS_CTL_RECVS)
#define EXS_CQ_START 65536
#define EXS_CQ_MAX (1 << 24)
_Static_assert(EXS_MAX_CONNECTIONS *EXS_CONN_CQES <= EXS_CQ_MAX, "the shared CQ cannot overflow");

struct exs_queue {
	exs_qhandle_t qh; /* an eventfd held open: a number no other descriptor
			   * has (exs_poll answers from count, not from it) */
	exs_event_t *ev;
	int cap, head, count;
	int reserved;             /* slots promised to outstanding operations */
	struct util_list waiters; /* threads in exs_qdequeue on it (struct exs_qwaiter) */
	exs_qnotify_fn notify;    /* exs_qnotify's: run by the thread doing a round */
	void *notify_arg;
	bool notify_due;       /* events came since it last ran */
	bool notifying;        /* a thread runs it now: one at a time */
	struct util_list link; /* on the runtime's queues */
};

/* A thread waiting in exs_qdequeue, woken through its own eventfd once the
 * queue holds what it waits for: a descriptor rather than a condition
 * variable, so that a signal handler ends the wait (EINTR) as it ends a
 * blocking recv(2)'s. */
struct exs_qwaiter {
	int fd;     /* the thread's eventfd */
	int want;   /* events it waits for */
	bool woken; /* raised since it last looked */
	struct util_list link;
};

struct exs_mem {
	struct uw_mr *mr;
	uintptr_t addr;
	size_t len;
	int access;
	int users; /* outstanding operations on it */
};

struct exs_sync; /* a waiting synchronous call */

/* a window exs_expose bound for the peer (lives with the socket) */
struct exs_window {
	struct uw_mw *mw;
	struct exs_mem *mem;
	struct util_list link; /* on its socket's windows */
};

enum exs_op_kind { OP_SEND, OP_RECV, OP_ACCEPT, OP_CONNECT, OP_SHUTDOWN, OP_CLOSE, OP_ONESIDED };

struct exs_op {
	struct util_list link; /* on its socket's sends, recvs or accepts */
	enum exs_op_kind kind;
	int fd;
	struct exs_queue *q;
	exs_ahandle_t ahandle;
	struct exs_sync *sync;
	/* SEND, RECV */
	struct iovec iov[EXS_IOV_MAX];
	uint32_t lkey[EXS_IOV_MAX];
	struct exs_mem *mem[EXS_IOV_MAX]; /* the handles in use */
	struct uw_mr *own[EXS_IOV_MAX];   /* registered for this operation */
	int iovcnt;
	void *bounce; /* a scattered receive's contiguous buffer */
	struct uw_mr *bounce_mr;
	struct uw_mw *mw; /* RECV: the window its adverts name (this receive's
			   * bytes only, this connection only; dies with it) */
	size_t len;
	size_t assigned; /* SEND: bytes handed to transfers */
	bool posted;     /* SEND: all of it handed (a message: its transfer posted) */
	size_t done;     /* bytes whose transfer completed (SEND), or arrived (RECV) */
	int flags;       /* RECV: MSG_WAITALL; result MSG_TRUNC */
	uint32_t rid;    /* RECV: the protocol's receive id */
	bool *coal_busy; /* a coalescing buffer's send (no event): frees it */
	bool copied;     /* SEND: some of it went through EXS_FLOW_CREDIT's send
			  * buffers, and counts as done once copied */
	/* SEND on a stream: on its socket's send_order until its event goes
	 * (exs__send_finished), with the result it finished with */
	struct util_list order;
	bool finished;
	int fin_status;
	ssize_t fin_bytes;
};

struct exs_sync {
	bool done;
	int fd; /* the waiting thread's eventfd, raised when done; or -1 */
	exs_event_t ev;
};

/* A transfer in flight: completes its operation's bytes in posting order. */
struct exs_inflight {
	struct exs_op *op; /* NULL: a control message, or a copied send */
	uint32_t len;
	bool sendbuf; /* sent from an EXS_FLOW_CREDIT send buffer: frees it */
};

/* the sender's copy of a receive's advert: where its buffer is */
struct exs_adv_where {
	uint32_t id;
	uint64_t addr; /* the receive's buffer (offset 0) */
	uint32_t stag;
	uint32_t len;
	bool valid;
};

enum exs_sock_state {
	S_NEW,
	S_LISTENING,
	S_CONNECTING,
	S_PENDING, /* accepted on the wire, waiting for exs_accept */
	S_CONNECTED,
	S_CLOSED, /* the connection is gone; data already here can still be read */
};

/* a sender's coalescing buffer (EXS_FLOW_RDMA, EXS_FLOW_RDMA_AUTO) */
struct exs_coal {
	uint8_t *buf;
	struct uw_mr *mr;
	bool busy; /* its send is queued or in flight */
};

struct exs_sock {
	int fd; /* an eventfd standing for the socket */
	/* a socket the system made, in DDP mode (exs_ddp.c): its descriptor
	 * + 1 (0: none), which finds this socket too, and its inode */
	int alias;
	ino_t alias_ino;
	int type, domain;
	enum exs_sock_state st;
	bool closing;  /* exs_close called: the descriptor is gone */
	bool dead;     /* freed: waits for the progress thread to reap it */
	bool pending;  /* completions came: its protocol runs after the batch
			* (on exs_rt.pending: exs__mark_pending) */
	int error;     /* SO_ERROR */
	int close_err; /* a lingering close that failed: the CLOSE event's */
	struct sockaddr_storage local, peer;
	bool bound;
	int mode; /* enum exs_stream_mode */
	uint32_t ring_size;
	bool no_imm, crc;
	int flow;                      /* enum exs_flow: of our sends */
	unsigned rules;                /* EXS_SO_RULES: of our receiving side */
	uint32_t credit_size;          /* EXS_FLOW_CREDIT's slot */
	unsigned timeout_ms;           /* SO_SNDTIMEO: the connection's MPA exchange; 0 uwarp's */
	unsigned idle_ms, keepalive_s; /* EXS_SO_IDLE_MS, EXS_SO_KEEPALIVE */
	bool imm;                      /* the connection uses Immediate Data */

	struct uw_cm_id *id;
	struct uw_qp *qp;

	/* listener */
	int backlog;
	struct util_list ready;    /* connected sockets waiting for exs_accept (ready_link) */
	int nready, nhalf;         /* waiting, and still negotiating */
	struct exs_sock *listener; /* S_PENDING: whose backlog it is on */
	struct util_list ready_link;

	/* control receives and credits */
	uint8_t *ctl_buf;
	struct uw_mr *ctl_mr;
	int credits;             /* untagged messages we may still send */
	int credits_owed;        /* receives reposted, not yet told to the peer */
	int sq_out;              /* WRs outstanding */
	bool idle_held;          /* an IDLE waits for the program (exs__flush_idle) */
	struct exs_inflight *fl; /* ring of EXS_SQ_DEPTH */
	unsigned fl_head, fl_count;

	/* operations */
	struct util_list sends; /* struct exs_op in order; the head may be partly assigned */
	int nsends;
	struct util_list recvs;
	int nrecvs;
	struct util_list accepts;
	struct exs_op *connect_op;
	struct exs_op *shut_op, *close_op;

	/* stream */
	uint8_t *ring;
	struct uw_mr *ring_mr; /* no remote rights: the peer writes through ring_mw */
	struct uw_mw *ring_mw; /* bound to this socket's QP alone */
	uint64_t peer_ring_addr, peer_ring_size;
	uint32_t peer_ring_stag;
	uint32_t peer_features; /* EXS_FEAT_* from its hello (0 until it comes) */
	struct exs_sp_tx tx;
	struct exs_sp_rx rx;
	struct exs_adv_where where[2 * EXS_SP_MAX_ADVERTS];
	uint64_t rx_msgs;         /* seqpacket messages received */
	struct exs_fin fin;       /* how the two directions end (exs_fin.h) */
	uint64_t sent_seq;        /* our stream bytes handed to transfers */
	uint64_t linger_deadline; /* ms clock: when a close stops waiting */
	uint64_t adverts_sent, rx_direct, rx_indirect;
	struct exs_coal coal[EXS_COALESCE_BUFS];
	uint32_t coal_size; /* each one's */
	uint64_t coalesced, flushes;
	/* EXS_FLOW_CREDIT: the sender's own buffers, one per credit, a slot
	 * each (the SDP paper's N send buffers of S bytes); used and freed in
	 * order, as the transfers from them complete */
	uint8_t *cbuf;
	struct uw_mr *cbuf_mr;
	uint32_t cbuf_n, cbuf_busy;
	uint64_t cbuf_next, sendbuf_bytes;

	/* seqpacket: adverts held (sender), and receives' ids (receiver) */
	struct exs_adv_where *sp_adv;
	unsigned sp_head, sp_count;
	uint32_t sp_next_id;
	struct exs_op *adv_next; /* first receive not yet advertised */

	struct util_list windows; /* exs_expose's (struct exs_window) */
	/* a stream's sends in the order they were made, until their events go
	 * (struct exs_op, order) */
	struct util_list send_order;

	struct util_list link;         /* on exs_rt.socks, or its graveyard once freed */
	struct util_list pending_link; /* on exs_rt.pending */
};

struct exs_rt {
	pthread_mutex_t lock;
	pthread_cond_t sync_cv;
	pthread_t thread;
	bool started;
	bool sleeping;      /* the progress thread waits in poll(2) */
	bool standing_back; /* ...not on uwarp's descriptors (exs_here.c) */
	uint64_t held_at;   /* ns: an advert waits for its send since (MSG_MORE; 0: none) */
	uint64_t idle_at;   /* ns: an IDLE waits for the program since (0: none) */
	/* program threads that progress while they wait (exs_ppoll_here) */
	struct util_lease lease;
	uint64_t spin_ns; /* they progress this long before they sleep */
	int wake_fd;      /* wakes the progress thread */
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_comp_channel *cc;
	struct uw_cq *cq;
	struct uw_cm_channel *cm;
	struct util_list socks;     /* every socket (struct exs_sock) */
	struct util_list graveyard; /* freed sockets, reaped between rounds */
	struct util_list pending;   /* sockets whose protocol runs after the batch */
	/* the sockets program calls found, by number (each call walked
	 * every socket: a server's requests cost in proportion to its
	 * connections; exs_socket.c) */
	struct exs_sock **by_fd;
	int nby_fd;
	int lingering;                /* sockets with a linger_deadline */
	int nconns;                   /* QPs on the shared CQ */
	struct util_list queues;      /* struct exs_queue */
	struct util_list plains;      /* system sockets with operations (exs_plain.c) */
	struct util_list ddp_marks;   /* system sockets marked for DDP mode (exs_ddp.c) */
	struct exs_sock *ddp_handoff; /* takes accepted ones whose client speaks MPA */
	/* exs_poll callers waiting for a change: their eventfds */
	int pollers[64];
	int npollers;
	int app_inside; /* application threads waiting inside a call: while
			 * any is, EXS_FLOW_RDMA sockets progress too */
	/* The progress thread keeps the lock while completions keep coming:
	 * between two rounds it lets in the application threads that wait
	 * for it (exs__lock), or that sleep on sync_cv and were woken */
	struct util_handoff handoff;
	int sync_waiting;
};

extern struct exs_rt exs_rt;

/* exs_runtime.c */
int exs__ready(void);         /* 0, or -1 EINVAL before exs_init */
int exs__eventfd(void);       /* non-blocking, close-on-exec, above the floor */
int exs__fd_high(int fd);     /* @fd moved above the floor if there is room */
bool exs__fd_claims(void);    /* a library above carries sockets (exs_set_fd_claim) */
bool exs__fd_claimed(int fd); /* ...and this one */
void exs__wake(void);
/* After posting from an application thread: send it now, and let the
 * progress thread know. */
void exs__kick(void);
void exs__changed(void); /* readiness may have changed: tell exs_poll callers */
bool exs__on_progress_thread(void);
/* An application thread takes exs_rt.lock (never the progress thread):
 * a progress thread busy with completions lets it in between two rounds. */
void exs__lock(void);
/* The lock if it is free now (exs_here.c's spin: a thread that holds it
 * moves the data meanwhile) */
bool exs__trylock(void);
/* An application thread holds the lock again after a condition wait. */
void exs__lock_taken(void);
struct exs_sock *exs__sock(int fd);      /* under the lock; NULL: EBADF */
void exs__sock_free(struct exs_sock *s); /* out of the table; reaped later */
void exs__drain_cq(void);                /* handle every completion waiting */
/* With the lock, on any thread: one round of the progress thread's work
 * (connection events, up to 256 completions, pending work, the queues'
 * notifications); whether it found events or completions. */
bool exs__round(void);
/* Whether a socket's sender may run now: EXS_FLOW_RDMA's only runs on an
 * application thread, or while one waits inside a call. */
bool exs__tx_may_run(const struct exs_sock *s);
/* May an advert wait for the data that follows it (UW_SEND_MORE)? On a
 * program's thread: its next send or wait sends it, or the progress
 * thread once it has waited UTIL_LEASE_NS. Under the lock: exs__held
 * notes one held, exs__flush_held sends what is. */
bool exs__may_hold(void);
void exs__held(void);
void exs__flush_held(void);
/* An IDLE (exs_stream.c) waits for the program to post a receive after
 * its last one completed: it goes when a program's thread next waits, or
 * from the progress thread once it has waited UTIL_LEASE_NS. Under the
 * lock: exs__idle_held notes one, exs__flush_idle sends what still is. */
void exs__idle_held(void);
void exs__flush_idle(void);
/* An application thread entered an ES-API call (a wait, a dequeue, a
 * poll): EXS_FLOW_RDMA sockets make their progress. */
void exs__app_progress(void);

/* exs_queue.c */
struct exs_queue *exs__queue(exs_qhandle_t qh);
/* Reserve the event of a new operation; -1 EAGAIN when the queue is full. */
int exs__op_reserve(struct exs_queue *q);
void exs__op_complete(struct exs_op *op, int status, ssize_t bytes);
/* A send finished with @status and @bytes; its event goes now if every
 * send made before it on a stream has gone, else after them. A stream's
 * sends complete in the order they were made even when a later one is
 * copied (coalesced) and done at once: programs hand their buffers round
 * in turn and take a completion to mean that every earlier buffer is
 * theirs again. */
void exs__send_finished(struct exs_sock *s, struct exs_op *op, int status, ssize_t bytes);
void exs__op_complete_ev(struct exs_op *op, exs_event_t *ev);
/* Return from a call that took the lock and made an operation: 0 at once
 * with a queue; else wait for it and return its count (0 for other than
 * sends and receives), or -1 with its errno. Unlocks. */
ssize_t exs__finish(struct exs_sync *w, exs_qhandle_t qh);
/* wait for a synchronous operation (the lock held) */
void exs__sync_wait(struct exs_sync *w);
/* wait until some synchronous operation ends (the lock held) */
void exs__sync_wait_change(void);
void exs__op_free(struct exs_op *op);
/* Run the notifications of queues that got events (the progress thread,
 * the lock held: it is dropped around each call). */
void exs__run_notifies(void);

/* exs_socket.c */
/* who takes a call on a descriptor that is no ES-API socket */
enum exs_route {
	EXS_ROUTE_NONE,    /* nobody: the call fails (errno says why) */
	EXS_ROUTE_PLAIN,   /* a system socket in plain TCP (exs_plain.c) */
	EXS_ROUTE_CARRIED, /* a socket a library above carries (exs_carried.c) */
};
/* The socket, locked; or NULL with errno: EBADF (closed, never open),
 * ENOTSOCK (not a socket), EOPNOTSUPP (a socket the system made, which
 * only the calls of exs_plain.c or exs_carried.c take: *route says). */
struct exs_sock *exs__lock_sock(int fd);
struct exs_sock *exs__lock_sock_or_plain(int fd, int *route);
/* ...and a system socket in DDP mode switched first (the calls that move
 * data): its ES-API socket, once the MPA exchange has ended */
struct exs_sock *exs__lock_sock_or_switch(int fd, int *route);
/* a new socket with the defaults, in no table (NULL: errno) */
struct exs_sock *exs__sock_new(int domain, int type);
struct exs_op *exs__op_new(int fd, enum exs_op_kind kind, exs_qhandle_t qh, exs_ahandle_t ahandle,
			   struct exs_sync *sync);
void exs__op_drop(struct exs_op *op);
/* to the end of a socket's list of sends, receives or accepts */
/* ---- a connection's parts (exs_ctl.c, exs_setup.c, exs_teardown.c,
 * exs_conn.c, exs_cm.c) ---- */

/* what a work request's wr_id carries in its low 3 bits */
enum { TAG_CTL_RECV = 0, TAG_CTL_SEND = 1, TAG_XFER = 2, TAG_XFER_WRITE = 3, TAG_ONESIDED = 4 };
#define TAG(wr_id) ((int)((wr_id) & 7))

/* exs_ctl.c */
bool exs__tracing(void); /* EXS_TRACE is set: log every message on stderr */
void exs__trace_ctl(const struct exs_sock *s, const char *dir, const struct exs_ctl *m);
void exs__trace_note(const struct exs_sock *s, const char *dir, const struct exs_note *n);
/* room for a control message (a CREDIT one may take the last credit) */
bool exs__ctl_room(const struct exs_sock *s, bool credit_msg);
int exs__post_ctl_recv(struct exs_sock *s, unsigned i);
/* post @m without asking for room; 0 or -errno */
int exs__post_ctl_raw(struct exs_sock *s, struct exs_ctl *m);
/* an ADVERT, as exs__post_ctl; @more (its receive was made with MSG_MORE):
 * it may wait for the program's next send (UW_SEND_MORE, exs__may_hold) */
int exs__post_advert(struct exs_sock *s, struct exs_ctl *m, bool more);
/* exs_setup.c */
int exs__qp_setup(struct exs_sock *s, struct uw_cm_id *id);
void exs__hello_of(const struct exs_sock *s, uint8_t out[EXS_HELLO_LEN]);
void exs__take_hello(struct exs_sock *s, const struct exs_hello *h);
struct uw_conn_param exs__conn_param(const struct exs_sock *s, const uint8_t *hello);
/* exs_teardown.c */
void exs__connection_gone(struct exs_sock *s, int err);
/* receives after the connection is gone: what arrived still counts */
void exs__finish_recvs(struct exs_sock *s, int err);

/* an operation list's first and last, the one after @op (NULL: none) */
static inline struct exs_op *exs__op_first(struct util_list *l)
{
	return util_list_first(l, struct exs_op, link);
}

static inline struct exs_op *exs__op_last(struct util_list *l)
{
	return util_list_last(l, struct exs_op, link);
}

static inline struct exs_op *exs__op_after(struct util_list *l, struct exs_op *op)
{
	return util_list_next(l, op, link);
}

static inline void exs__sock_init(struct exs_sock *s)
{
	exs_fin_init(&s->fin);
	util_list_init(&s->sends);
	util_list_init(&s->recvs);
	util_list_init(&s->accepts);
	util_list_init(&s->windows);
	util_list_init(&s->send_order);
	util_list_init(&s->ready);
	util_list_init(&s->ready_link);
	util_list_init(&s->link);
	util_list_init(&s->pending_link);
}

/* its protocol runs after this batch of completions (exs__progress_pending) */
static inline void exs__mark_pending(struct exs_sock *s)
{
	if (s->pending)
		return;
	s->pending = true;
	util_list_add_tail(&exs_rt.pending, &s->pending_link);
}

/* the first, taken off the list (NULL: it is empty) */
static inline struct exs_op *exs__op_pop(struct util_list *l)
{
	struct exs_op *op = exs__op_first(l);
	if (op)
		util_list_del(&op->link);
	return op;
}

/* exs_onesided.c */
void exs__windows_free(struct exs_sock *s);
/* the wr_id of a one-sided operation's WR (exs_conn.c knows its tag) */
uint64_t exs__onesided_wr_id(struct exs_op *op);

/* exs_mem.c */
/* Keys for the op's buffers (registering what has no handle): 0 or -errno */
int exs__op_mem(struct exs_op *op, const exs_mhandle_t *mh, int access);
void exs__op_mem_release(struct exs_op *op);
/* A window over a receive's buffer for the socket's peer: 0 or -errno. */
int exs__op_window(struct exs_sock *s, struct exs_op *op);
/* the peer's key to a one-buffer receive */
/* does the peer write into this socket's receives (advertised to it)? */
static inline bool exs__advertises(const struct exs_sock *s)
{
	return s->type == SOCK_SEQPACKET || s->mode != EXS_MODE_INDIRECT;
}
uint32_t exs__op_rkey(const struct exs_op *op); /* its window's key */

/* exs_conn.c: connections */
int exs__post_ctl(struct exs_sock *s, struct exs_ctl *m);
bool exs__can_ctl(const struct exs_sock *s);
bool exs__can_xfer(const struct exs_sock *s);
/* @op's bytes [off, off + len) as SGEs (at most EXS_IOV_MAX): their count */
int exs__op_sges(const struct exs_op *op, size_t off, uint32_t len, struct uw_sge *sge);
int exs__post_xfer(struct exs_sock *s, struct exs_op *op, size_t op_off, uint32_t len,
		   uint64_t raddr, uint32_t rkey, const struct exs_note *n);
/* A transfer of @len bytes from one of EXS_FLOW_CREDIT's send buffers
 * (@buf, registered as @lkey): its completion frees the buffer. */
int exs__post_xfer_buf(struct exs_sock *s, void *buf, uint32_t lkey, uint32_t len, uint64_t raddr,
		       uint32_t rkey, const struct exs_note *n);
void exs__on_cm(struct uw_cm_event *e);
/* an ACCEPT event bringing connected socket s */
void exs__complete_accept(struct exs_op *op, const struct exs_sock *s);
socklen_t exs__addr_len(const struct sockaddr_storage *ss);
void exs__on_wc(struct uw_wc *wc);
void exs__abort(struct exs_sock *s, int err); /* fail the connection */
void exs__fail_ops(struct exs_sock *s, int err);
void exs__recvs_after_close(struct exs_sock *s);
void exs__end_recvs(struct exs_sock *s, int err, bool keep);
void exs__cancel_recvs(struct exs_sock *s); /* SHUT_RD, close */
void exs__maybe_finish_close(struct exs_sock *s);
void exs__progress(struct exs_sock *s); /* run the socket's protocol */
void exs__progress_pending(void);       /* ...for each socket with new completions */
/* uw_cm_connect to s->peer, or over @tcp_fd (>= 0): 0 or -errno */
int exs__connect_setup(struct exs_sock *s, int tcp_fd);

/* exs_plain.c: the calls on a system's stream socket in plain TCP (each
 * takes the lock itself; @total is the vector's, checked) */
int exs__fd_kind(int fd);      /* 0: a stream socket; else EBADF, ENOTSOCK or EOPNOTSUPP */
bool exs__plain_known(int fd); /* it has operations outstanding (the lock held) */
/* an accepted socket in DDP mode: hold its operations and sort it (0 or
 * ENOMEM); its negotiation ended, with @s connected (the held operations
 * move there) or NULL (they fail with @err) */
int exs__plain_sort(int fd);
void exs__plain_sorted(int fd, struct exs_sock *s, int err);
ssize_t exs__plain_sendv(int fd, const struct iovec *iov, int iovcnt, size_t total,
			 exs_qhandle_t qh, exs_ahandle_t ahandle, const exs_mhandle_t *mh);
ssize_t exs__plain_recvv(int fd, const struct iovec *iov, int iovcnt, size_t total, int flags,
			 exs_qhandle_t qh, exs_ahandle_t ahandle, const exs_mhandle_t *mh);
int exs__plain_shutdown(int fd, int how, exs_qhandle_t qh, exs_ahandle_t ahandle);
int exs__plain_close(int fd, exs_qhandle_t qh, exs_ahandle_t ahandle);
/* the progress thread (the lock held): the descriptors to wait for, at
 * most @room; the sockets that came ready; lingering closes that are due
 * (the time to the next deadline, or -1) */
int exs__plain_count(void);
int exs__plain_pollfds(struct pollfd *pf, int room);
void exs__plain_ready(const struct pollfd *pf, int n);
int exs__plain_linger(uint64_t now);

/* exs_io.c: a send or receive made on a socket (its handles not yet
 * taken): queued, copied or started; 0, or -errno with @op untouched by
 * the socket (the caller drops or completes it) */
int exs__send_post(struct exs_sock *s, struct exs_op *op, const exs_mhandle_t *mh);
int exs__recv_post(struct exs_sock *s, struct exs_op *op, const exs_mhandle_t *mh);

/* exs_ddp.c: system sockets in DDP mode (the lock held unless said) */
int exs__ddp_set(int fd, bool on); /* mark it (exs_setsockopt): 0 or an errno value */
void exs__ddp_forget_mark(int fd);
bool exs__ddp_wanted(int fd); /* marked, or selected by ESOCK_DDPMODE */
/* the ES-API socket behind the program's @fd, once its negotiation ended
 * (NULL: none, or the program closed @fd and it was dropped) */
struct exs_sock *exs__ddp_alias(int fd);
/* Without the lock: switch @fd if it is in DDP mode. 1: *out, locked;
 * 0: the plain path takes the call (plain TCP, or an accepted socket being
 * sorted there); -1 with errno. */
int exs__ddp_take(int fd, struct exs_sock **out);
unsigned exs__ddp_peek_ms(void); /* ESOCK_PEEK_MS */
/* the accepting end: hand a copy of @fd, whose client sent an MPA Request
 * key, to the handoff listener (0 or an errno value); the socket waiting
 * for a request that came (NULL: none); a negotiation given up; an
 * operation exs_plain.c held, made on the socket now connected */
int exs__ddp_passive(int fd);
struct exs_sock *exs__ddp_request(const struct uw_cm_event *e);
void exs__ddp_passive_drop(int fd);
void exs__ddp_repost(struct exs_sock *s, struct exs_op *op);

/* exs_carried.c: the calls on a descriptor a library above carries
 * (exs_set_fd_carrier; without the lock) */
const struct exs_fd_carrier *exs__carrier(void); /* NULL: none registered */
ssize_t exs__carried_xfer(int fd, enum exs_op_kind kind, const struct iovec *iov, int iovcnt,
			  size_t total, int flags, exs_qhandle_t qh, exs_ahandle_t ahandle,
			  const exs_mhandle_t *mh);
int exs__carried_shutdown(int fd, int how, exs_qhandle_t qh, exs_ahandle_t ahandle);
int exs__carried_close(int fd, exs_qhandle_t qh, exs_ahandle_t ahandle);

/* exs_stream.c */
void exs__stream_init(struct exs_sock *s, int mode);
/* EXS_SO_RULES: the socket's rules to its receiving state machine */
void exs__stream_rules(struct exs_sock *s);
int exs__stream_recv_post(struct exs_sock *s, struct exs_op *op);
void exs__stream_pump(struct exs_sock *s);
void exs__stream_flush_idle(struct exs_sock *s);
/* A send that may be coalesced instead: true when it was (its bytes are
 * in a coalescing buffer queued behind the waiting sends). */
bool exs__stream_coalesce(struct exs_sock *s, const struct iovec *iov, int iovcnt, size_t len);
void exs__stream_free(struct exs_sock *s);
/* The sends at the head whose bytes were all copied complete. */
void exs__stream_reap_copied(struct exs_sock *s);
int exs__stream_ctl(struct exs_sock *s, const struct exs_ctl *m);
int exs__stream_note(struct exs_sock *s, const struct exs_note *n, bool full);
bool exs__stream_readable(struct exs_sock *s);

/* exs_seqpacket.c */
int exs__seq_recv_post(struct exs_sock *s, struct exs_op *op);
void exs__seq_pump(struct exs_sock *s);
int exs__seq_ctl(struct exs_sock *s, const struct exs_ctl *m);
int exs__seq_note(struct exs_sock *s, const struct exs_note *n);

#endif
