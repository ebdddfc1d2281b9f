/*
 * uwarp/verbs.h: RDMA verbs over plain TCP.
 *
 * A program opens a context, allocates a protection domain, registers
 * memory, creates completion queues and queue pairs, and connects queue
 * pairs to peers with the connection manager; then it posts work requests
 * and polls for their completions, exactly as with rdma-core's libibverbs
 * and librdmacm. Underneath, each connection is an ordinary TCP socket
 * speaking iWARP (MPA, DDP, RDMAP) as RFC 5040/5041/5044/6581 define it, so
 * the peer may be another uwarp process or any iWARP stack (Linux siw, an
 * RNIC).
 *
 * Conventions (rdma-core's):
 *   - creators return a pointer, or NULL with errno set;
 *   - destroyers and most calls return 0 or a positive errno value;
 *   - uw_post_send()/uw_post_recv() return 0 or a positive errno value and
 *     point *bad_wr at the first request that was not posted;
 *   - uw_poll_cq() returns the number of completions (>= 0) or a negative
 *     errno value.
 *
 * Every posted work request completes exactly once: successfully, or with
 * an error status (UW_WC_WR_FLUSH_ERR when its queue pair went to the error
 * state or was disconnected). Unsignalled send requests produce a
 * completion only when they fail.
 *
 * Threads: every call is thread-safe; calls on one context are serialised
 * internally. Progress: see enum uw_progress.
 */
#ifndef UWARP_VERBS_H
#define UWARP_VERBS_H

#include <stddef.h>
#include <poll.h>
#include <stdint.h>
#include <sys/socket.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define UW_EXTERN __attribute__((visibility("default")))
#else
#define UW_EXTERN
#endif

struct uw_context;
struct uw_pd;
struct uw_mr;
struct uw_mw;
struct uw_cq;
struct uw_comp_channel;
struct uw_qp;
struct uw_srq;
struct uw_cm_channel;
struct uw_cm_id;

/* ======================================================================
 * Context
 * ====================================================================== */

enum uw_progress {
	/*
	 * The application's own calls (uw_poll_cq, uw_cq_wait,
	 * uw_get_cq_event, uw_cm_get_event, posting) move data: no extra
	 * thread, no wake-up hop. A peer's RDMA Read of our memory is served
	 * only while the application calls into uwarp.
	 */
	UW_PROGRESS_MANUAL = 0,
	/*
	 * Data moves whether or not the application calls in, so one-sided
	 * operations against this process progress while it computes. A
	 * thread that waits (uw_poll_cq finding nothing, uw_cq_wait,
	 * uw_get_cq_event, uw_cm_get_event) moves the data itself, with no
	 * hop through another thread; an engine thread takes over within a
	 * millisecond of the application's last call, and at once when it
	 * arms a CQ (uw_req_notify_cq) or finds a non-blocking channel empty.
	 */
	UW_PROGRESS_AUTO = 1,
};

#define UW_MPA_REPLY_MS_DEFAULT 3000
#define UW_MPA_REPLY_MS_MAX 3600000 /* UWARP_MPA_REPLY_MS at most */

struct uw_context_attr {
	enum uw_progress progress;
	/* Default MPA timeouts for connections of this context, in
	 * milliseconds; 0 takes uwarp's defaults: Request 5000 (as Linux
	 * siw), Reply UW_MPA_REPLY_MS_DEFAULT or the environment's
	 * UWARP_MPA_REPLY_MS (1 to 3600000). The Reply timeout runs from
	 * connect: a TCP connection not up by then fails with ETIMEDOUT, one
	 * up whose peer sent no MPA Reply with ETIME (a peer that does not
	 * speak iWARP, or whose program did not accept in time). siw waits
	 * 10 s; uwarp's default is shorter so that a user pointed at the
	 * wrong server hears so at once, and a server slower than that to
	 * accept is rare and can be given more. */
	unsigned mpa_reply_timeout_ms;
	unsigned mpa_request_timeout_ms;
};

/*
 * uw_open - open a uwarp context.
 * @attr: progress mode and defaults, or NULL for manual progress.
 *
 * All objects hang off a context; all its connections share one event loop.
 * Returns the context, or NULL with errno set (ENOMEM, EINVAL for an
 * unknown progress mode, or the errno of a failed system call).
 */
UW_EXTERN struct uw_context *uw_open(const struct uw_context_attr *attr);

/*
 * uw_close - close a context.
 *
 * Fails with EBUSY while any PD, CQ, completion channel, CM channel or CM
 * id of the context still exists. Returns 0 or an errno value.
 */
UW_EXTERN int uw_close(struct uw_context *ctx);

/*
 * uw_progress_timeout - with manual progress, how long a program that
 * sleeps on a channel's descriptor in a poll of its own may sleep before
 * a call of uwarp's must run again for the context's timers (the MPA
 * timeouts, an idle limit, a receive's wait): milliseconds, 0 for at
 * once, -1 for no timer. The channel's descriptor reports network input
 * and the context's other changes; its timers it cannot.
 */
UW_EXTERN int uw_progress_timeout(struct uw_context *ctx);

/*
 * uw_sleep_begin, uw_sleep_end - with manual progress, a program's thread
 * that sleeps in a poll of its own until the context has work for it.
 * uw_sleep_begin counts the thread as asleep and fills @pf[0] and @pf[1]
 * with descriptors to poll beside the program's own: the loop's (network
 * input, a watcher's change) and a bell that another thread rings when it
 * makes a completion or an event meanwhile. It returns how long the sleep
 * may last for the context's timers (milliseconds, -1: no timer). After
 * the poll, uw_sleep_end; then uwarp's calls (uw_poll_cq, ...) move what
 * woke it. What another thread made before uw_sleep_begin rings no bell:
 * the caller looks at its CQs and channels last under a lock of its own
 * that every thread calling into the context holds (the ES-API's).
 */
UW_EXTERN int uw_sleep_begin(struct uw_context *ctx, struct pollfd pf[2]);
UW_EXTERN void uw_sleep_end(struct uw_context *ctx);

/* ======================================================================
 * Protection domains and memory
 * ====================================================================== */

/*
 * uw_alloc_pd - allocate a protection domain.
 *
 * Memory regions, windows and queue pairs belong to one PD; a peer can only
 * reach memory through an STag of the PD of the queue pair it talks to.
 * Returns the PD, or NULL with errno (ENOMEM).
 */
UW_EXTERN struct uw_pd *uw_alloc_pd(struct uw_context *ctx);

struct uw_pd {
	struct uw_context *context;
};

/* uw_dealloc_pd - free a PD. EBUSY while it has MRs, MWs, QPs or SRQs. */
UW_EXTERN int uw_dealloc_pd(struct uw_pd *pd);

enum uw_access_flags {
	UW_ACCESS_LOCAL_WRITE = 1 << 0,   /* receives and Read sinks may write */
	UW_ACCESS_REMOTE_WRITE = 1 << 1,  /* peers may RDMA Write (needs LOCAL_WRITE) */
	UW_ACCESS_REMOTE_READ = 1 << 2,   /* peers may RDMA Read */
	UW_ACCESS_REMOTE_ATOMIC = 1 << 3, /* peers may run atomics (needs LOCAL_WRITE) */
	UW_ACCESS_MW_BIND = 1 << 4,       /* memory windows may be bound over it */
};

struct uw_mr {
	struct uw_context *context;
	struct uw_pd *pd;
	void *addr;
	size_t length;
	uint32_t lkey; /* for local scatter/gather entries */
	uint32_t rkey; /* the STag a peer uses; equal to lkey */
	/* the address both keys give addr: a peer's tagged offset and a local
	 * SGE's addr name byte addr + (x - iova); equal to addr unless the
	 * region was registered with uw_reg_mr_iova */
	uint64_t iova;
};

/*
 * uw_reg_mr - register memory.
 * @addr, @length: the region; @access: enum uw_access_flags.
 *
 * The STag is a table index plus an 8-bit key chosen at random per
 * registration, so a guessed or stale STag does not work. Tagged offsets
 * are virtual addresses: a peer writes to remote_addr (uint64_t)addr + n.
 * Returns the MR, or NULL with errno: EINVAL (NULL addr with a nonzero
 * length, a range that wraps the address space, REMOTE_WRITE or
 * REMOTE_ATOMIC without LOCAL_WRITE, unknown flags), EFAULT (part of the
 * range is not mapped, as ibv_reg_mr), ENOMEM (the STag table is full).
 */
UW_EXTERN struct uw_mr *uw_reg_mr(struct uw_pd *pd, void *addr, size_t length, int access);

/*
 * uw_reg_mr_iova - register memory that peers and local SGEs address from
 * @iova instead of from its own address (ibv_reg_mr_iova2's meaning; iova
 * 0 is a zero-based region): tagged offset or SGE address iova + n names
 * byte addr + n. A window bound over it takes the same addresses. Errors as
 * uw_reg_mr, and EINVAL when [iova, iova + length) wraps.
 */
UW_EXTERN struct uw_mr *uw_reg_mr_iova(struct uw_pd *pd, void *addr, size_t length, uint64_t iova,
				       int access);

/* uw_dereg_mr - deregister. EBUSY while a memory window is bound over it.
 * The STag is dead at once: a later access by a peer is refused. */
UW_EXTERN int uw_dereg_mr(struct uw_mr *mr);

struct uw_mw {
	struct uw_context *context;
	struct uw_pd *pd;
	/* its STag: a fresh key at every bind; names nothing while unbound */
	uint32_t rkey;
};

/* uw_alloc_mw - allocate an unbound memory window. NULL with errno. */
UW_EXTERN struct uw_mw *uw_alloc_mw(struct uw_pd *pd);
/* uw_dealloc_mw - free a window (bound or not). */
UW_EXTERN int uw_dealloc_mw(struct uw_mw *mw);

/*
 * uw_bind_mw - bind a window over part of a registered region.
 * @qp: the only queue pair whose peer may use it, or NULL for any QP of
 *      the PD.
 * @mr, @addr, @length: the sub-range; it must lie inside @mr, and @mr must
 *      allow UW_ACCESS_MW_BIND.
 * @access: the window's own REMOTE_* rights (a subset of what makes sense
 *      for the MR: REMOTE_WRITE needs the MR's LOCAL_WRITE).
 *
 * The window gets a fresh rkey (the old one dies). It is revoked by a
 * peer's Send with Invalidate naming it, by a UW_WR_LOCAL_INV, by a rebind
 * or by uw_dealloc_mw. Returns 0 or EINVAL/EACCES. @addr is a pointer into
 * the region; peers address the window in the region's iova terms. The
 * bind takes effect at once; UW_WR_BIND_MW is the same bind in the order
 * of a send queue, with a completion.
 */
UW_EXTERN int uw_bind_mw(struct uw_mw *mw, struct uw_qp *qp, struct uw_mr *mr, void *addr,
			 size_t length, int access);

/* ======================================================================
 * Completion queues
 * ====================================================================== */

struct uw_comp_channel {
	struct uw_context *context;
	/*
	 * Readable when a CQ armed with uw_req_notify_cq() may have an event,
	 * and, with manual progress, whenever network input waits: then call
	 * uw_get_cq_event(), which moves the data and may report EAGAIN when
	 * no event resulted. Works with epoll, poll and libuv's uv_poll_t.
	 */
	int fd;
};

/* uw_create_comp_channel - a completion channel. NULL with errno. */
UW_EXTERN struct uw_comp_channel *uw_create_comp_channel(struct uw_context *ctx);
/* uw_destroy_comp_channel - EBUSY while a CQ uses it. */
UW_EXTERN int uw_destroy_comp_channel(struct uw_comp_channel *ch);

struct uw_cq {
	struct uw_context *context;
	struct uw_comp_channel *channel;
	void *cq_context;
	int cqe; /* capacity */
};

/*
 * uw_create_cq - a completion queue with room for @cqe completions.
 * @channel: where armed notifications go, or NULL.
 *
 * If more completions arrive than fit, the CQ overflows: the queue pairs
 * feeding it go to the error state. Size it for every WR that can be
 * outstanding. Returns the CQ, or NULL with errno (EINVAL, ENOMEM).
 */
UW_EXTERN struct uw_cq *uw_create_cq(struct uw_context *ctx, int cqe, void *cq_context,
				     struct uw_comp_channel *channel);
/* uw_destroy_cq - EBUSY while a QP or SRQ uses it. */
UW_EXTERN int uw_destroy_cq(struct uw_cq *cq);
/*
 * uw_resize_cq - give @cq room for @cqe completions (larger or smaller, as
 * ibv_resize_cq), keeping the ones queued, in order. Returns 0, EINVAL
 * (@cqe below the completions queued now, or out of range as for
 * uw_create_cq) or ENOMEM (the CQ unchanged).
 */
UW_EXTERN int uw_resize_cq(struct uw_cq *cq, int cqe);

enum uw_wc_status {
	UW_WC_SUCCESS = 0,
	UW_WC_LOC_LEN_ERR,    /* a receive too small for the message */
	UW_WC_LOC_PROT_ERR,   /* a local buffer failed its checks */
	UW_WC_WR_FLUSH_ERR,   /* the QP left RTS before this WR completed */
	UW_WC_REM_ACCESS_ERR, /* the peer refused our access (Terminate) */
	UW_WC_REM_OP_ERR,     /* the peer refused the operation (Terminate) */
	UW_WC_FATAL_ERR,      /* the connection failed under this WR */
	UW_WC_MW_BIND_ERR,    /* a UW_WR_BIND_MW whose region or window went */
};

enum uw_wc_opcode {
	UW_WC_SEND,
	UW_WC_RDMA_WRITE,
	UW_WC_RDMA_READ,
	UW_WC_FETCH_ADD,
	UW_WC_SWAP,
	UW_WC_CMP_SWAP,
	UW_WC_LOCAL_INV,
	UW_WC_RECV,     /* a Send arrived */
	UW_WC_RECV_IMM, /* Immediate Data arrived (alone or after a Write) */
	UW_WC_BIND_MW,
};

enum uw_wc_flags {
	UW_WC_WITH_IMM = 1 << 0,
	UW_WC_WITH_INV = 1 << 1,
	UW_WC_SOLICITED = 1 << 2,
};

struct uw_wc {
	uint64_t wr_id;
	enum uw_wc_status status;
	enum uw_wc_opcode opcode;
	uint32_t byte_len;         /* receives: bytes placed */
	uint64_t imm_data;         /* UW_WC_WITH_IMM: the 64-bit Immediate Data */
	uint32_t invalidated_rkey; /* UW_WC_WITH_INV */
	int wc_flags;
	/* NULL once the QP is destroyed (see uw_destroy_qp); qp_num stays */
	struct uw_qp *qp;
	uint32_t qp_num;
	/* for errors caused by a Terminate: its RFC 6580 layer/type/code */
	uint8_t term_layer, term_etype, term_ecode;
};

/*
 * uw_poll_cq - take up to @n completions.
 *
 * With manual progress this first moves whatever data is ready (without
 * blocking). Returns how many were taken (0 if none), or -EINVAL.
 */
UW_EXTERN int uw_poll_cq(struct uw_cq *cq, int n, struct uw_wc *wc);
/*
 * uw_poll_cq_queued - take up to @n completions already in the CQ, moving
 * no data: for a caller that has just moved it with another call (a round
 * of its own that begins with uw_cm_get_event_timeout, say), to which a
 * second run of the progress engine would only cost a system call.
 * Returns as uw_poll_cq.
 */
UW_EXTERN int uw_poll_cq_queued(struct uw_cq *cq, int n, struct uw_wc *wc);

/*
 * uw_req_notify_cq - arm the CQ: the next completion (@solicited_only: the
 * next solicited receive or any error) raises one event on the channel.
 *
 * The usual race applies: arm, then poll again before waiting, because a
 * completion may have arrived between the last poll and the arming.
 * Returns 0 or EINVAL (no channel).
 */
UW_EXTERN int uw_req_notify_cq(struct uw_cq *cq, int solicited_only);

/*
 * uw_get_cq_event - take one event from a completion channel.
 *
 * Blocks until an armed CQ fires, unless the channel fd is set O_NONBLOCK
 * (use uw_comp_channel_nonblock), in which case it returns EAGAIN when
 * there is none. Every event must be acknowledged with uw_ack_cq_events.
 */
UW_EXTERN int uw_get_cq_event(struct uw_comp_channel *ch, struct uw_cq **cq, void **cq_context);
UW_EXTERN void uw_ack_cq_events(struct uw_cq *cq, unsigned nevents);
/* uw_comp_channel_nonblock - make uw_get_cq_event return EAGAIN instead
 * of blocking. Returns 0 or an errno value. */
UW_EXTERN int uw_comp_channel_nonblock(struct uw_comp_channel *ch, int nonblock);

/*
 * uw_cq_wait - wait until at least @threshold completions are in the CQ or
 * @timeout_ms passes (-1 waits forever), as uDAPL's dat_evd_wait does.
 *
 * Moves data while it waits (in either progress mode). Returns the number
 * of completions available (>= threshold), or -ETIMEDOUT with fewer, or
 * -EINVAL. It takes no completion: poll them afterwards.
 */
UW_EXTERN int uw_cq_wait(struct uw_cq *cq, int threshold, int timeout_ms);

/* ======================================================================
 * Queue pairs
 * ====================================================================== */

enum uw_qp_state {
	UW_QPS_RESET, /* empty; uw_modify_qp to INIT */
	UW_QPS_INIT,  /* new QPs start here: receives may be posted */
	UW_QPS_RTR,   /* accepted: receiving; sends queue until the peer's first
		       * FPDU (or 100 ms) lets them go (docs/wire-notes.md,
		       * "The responder's hold") */
	UW_QPS_RTS,   /* connected: sends flow */
	UW_QPS_SQD,   /* sends paused: posted ones queue, the message on the
		       * wire finishes, Responses to the peer still go */
	UW_QPS_ERR,   /* every WR is flushed; new WRs complete with FLUSH_ERR */
};

struct uw_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;     /* 0: no receive queue (a peer's Send finds no buffer) */
	uint32_t max_send_sge;    /* at most UW_MAX_SGE */
	uint32_t max_recv_sge;    /* at most UW_MAX_SGE */
	uint32_t max_inline_data; /* at most UW_MAX_INLINE */
};

#define UW_MAX_SGE 16
#define UW_MAX_INLINE 256

struct uw_qp_init_attr {
	void *qp_context;
	struct uw_cq *send_cq;
	struct uw_cq *recv_cq;
	struct uw_srq *srq; /* receives come from this shared queue, if set */
	struct uw_qp_cap cap;
	int sq_sig_all; /* every send request completes, signalled or not */
};

struct uw_qp {
	struct uw_context *context;
	struct uw_pd *pd;
	void *qp_context;
	struct uw_cq *send_cq;
	struct uw_cq *recv_cq;
	struct uw_srq *srq;
	uint32_t qp_num;
	enum uw_qp_state state; /* with auto progress the engine thread changes
				 * it: read it with uw_qp_get_state() */
};

struct uw_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum uw_wr_opcode {
	UW_WR_SEND,
	UW_WR_SEND_WITH_INV,
	UW_WR_RDMA_WRITE,
	UW_WR_RDMA_WRITE_WITH_IMM, /* a Write, then Immediate Data (uwarp peers) */
	UW_WR_IMM,                 /* Immediate Data alone (uwarp peers) */
	UW_WR_RDMA_READ,
	UW_WR_ATOMIC_FETCH_ADD, /* uwarp peers */
	UW_WR_ATOMIC_SWAP,      /* uwarp peers */
	UW_WR_ATOMIC_CMP_SWAP,  /* uwarp peers */
	UW_WR_LOCAL_INV,
	UW_WR_BIND_MW, /* uw_bind_mw in the send queue's order (wr.bind) */
};

enum uw_send_flags {
	UW_SEND_SIGNALED = 1 << 0,
	UW_SEND_SOLICITED = 1 << 1, /* Send with SE / Immediate Data with SE */
	UW_SEND_INLINE = 1 << 2,    /* copy the data now; no lkey needed */
	UW_SEND_FENCE = 1 << 3,     /* wait for earlier Reads and atomics first */
	/* More follows soon: the request may wait in the send queue so that
	 * it leaves with the next one, in one write (one TCP segment for a
	 * small pair, as MSG_MORE; an advert ahead of a reply). It leaves at
	 * the QP's next post without the flag, at uw_flush_sends, or when a
	 * thread is about to sleep in the context (uw_cq_wait, a blocking
	 * uw_get_cq_event or uw_cm_get_event, uw_sleep_begin; with automatic
	 * progress also when the engine thread next looks, and at once when
	 * that may be later than 1 ms from now). */
	UW_SEND_MORE = 1 << 4,
};

struct uw_send_wr {
	uint64_t wr_id;
	struct uw_send_wr *next;
	struct uw_sge *sg_list;
	int num_sge;
	enum uw_wr_opcode opcode;
	int send_flags;
	uint64_t imm_data;        /* WRITE_WITH_IMM, IMM */
	uint32_t invalidate_rkey; /* SEND_WITH_INV, LOCAL_INV */
	struct {
		uint64_t remote_addr;
		uint32_t rkey;
	} rdma; /* WRITE, WRITE_WITH_IMM, READ */
	struct {
		uint64_t remote_addr; /* 8-byte aligned */
		uint32_t rkey;
		uint64_t compare_add; /* CMP_SWAP: compare; FETCH_ADD: add */
		uint64_t swap;        /* SWAP, CMP_SWAP */
	} atomic;                     /* the original value lands in sg_list[0] (8 bytes) */
	/*
	 * BIND_MW: bind @mw over [addr, addr + length) of @mr, addr in the
	 * region's iova terms, with @access (REMOTE_* flags), for peers of
	 * this QP only or, with @any_qp, of any QP of the PD. The window's new
	 * rkey is decided when the WR is posted and is in mw->rkey when
	 * uw_post_send returns: @rkey if nonzero (its index part must be the
	 * window's; the low 8 bits, the key, are the caller's choice, as
	 * ibv_inc_rkey makes them), else a fresh random key. The bind happens
	 * when the WR's turn comes (after the WRs posted before it start); if
	 * the region or the window is gone by then it alone completes with
	 * UW_WC_MW_BIND_ERR (the QP goes on). With @mr NULL (and addr, length,
	 * access 0) the window is unbound instead, in the same order (the
	 * ibv_bind_mw way to invalidate a type 1 window). Checked when posted:
	 * EINVAL (other PD, range outside the region, unknown flags, wrong
	 * index), EACCES (as uw_bind_mw).
	 */
	struct {
		struct uw_mw *mw;
		struct uw_mr *mr;
		uint64_t addr;
		uint64_t length;
		int access;
		int any_qp;
		uint32_t rkey;
	} bind;
};

struct uw_recv_wr {
	uint64_t wr_id;
	struct uw_recv_wr *next;
	struct uw_sge *sg_list;
	int num_sge;
};

/*
 * uw_create_qp - a reliable connected queue pair, in state INIT.
 *
 * Connect it with uw_cm_connect/uw_cm_accept after uw_cm_attach_qp, or let
 * uw_cm_create_qp do both steps. Returns the QP, or NULL with errno:
 * EINVAL (missing CQ, limits above UW_MAX_SGE/UW_MAX_INLINE, zero depths),
 * ENOMEM.
 */
UW_EXTERN struct uw_qp *uw_create_qp(struct uw_pd *pd, struct uw_qp_init_attr *attr);

/*
 * uw_destroy_qp - destroy a QP. If it is connected, the connection is
 * closed first and every outstanding WR completes with FLUSH_ERR before
 * the call returns. Nothing posted vanishes: the completions of this QP
 * still waiting in its CQs stay there, with wc.qp set to NULL (the QP is
 * gone) and wc.qp_num naming it, so the application gets every wr_id back.
 * Returns 0 or an errno value.
 */
UW_EXTERN int uw_destroy_qp(struct uw_qp *qp);

/*
 * uw_modify_qp - the transitions an application makes:
 *   any -> ERR       the connection closes; every WR completes with FLUSH_ERR
 *   INIT, ERR -> RESET   (not connected) empty again; what INIT held is
 *                    flushed first, so nothing posted vanishes
 *   RESET -> INIT    ready to be connected again
 *   RTS -> SQD       pause the send queue (connected)
 *   SQD -> RTS       resume it
 * INIT -> RTR -> RTS happen through the connection manager. Returns 0 (also
 * for the state the QP is in) or EINVAL for any other transition.
 */
UW_EXTERN int uw_modify_qp(struct uw_qp *qp, enum uw_qp_state state);

/* uw_qp_get_state - the QP's state now (safe against the engine thread). */
UW_EXTERN enum uw_qp_state uw_qp_get_state(struct uw_qp *qp);
/* uw_qp_end_errno - why the QP's connection ended, once it has: ETIMEDOUT
 * (an idle limit or the MPA timeout), EPROTO (a Terminate), the socket's
 * errno (ECONNRESET, ...), or 0 (the peer closed, or not ended). Flushed
 * completions carry only UW_WC_WR_FLUSH_ERR; this says what flushed them. */
UW_EXTERN int uw_qp_end_errno(struct uw_qp *qp);

/*
 * uw_post_send - post a list of send requests.
 *
 * Each request is checked when posted: opcode allowed on this connection
 * (the RFC 7306 ones need a uwarp peer: EOPNOTSUPP), SGE count and lkeys
 * (EINVAL), inline size (EINVAL), room in the send queue (ENOMEM). The
 * first failing request is returned in *bad_wr; those before it are posted.
 * In state ERR requests are accepted and complete with FLUSH_ERR; in RTR
 * and SQD they queue until RTS. In RESET and INIT: EINVAL. Data moves at
 * once when the socket can take it.
 */
UW_EXTERN int uw_post_send(struct uw_qp *qp, struct uw_send_wr *wr, struct uw_send_wr **bad_wr);

/*
 * uw_flush_sends - send now what UW_SEND_MORE holds on every QP of the
 * context. Returns 0, or EINVAL without a context.
 */
UW_EXTERN int uw_flush_sends(struct uw_context *ctx);

/*
 * uw_post_recv - post receives (not on a QP that uses an SRQ: EINVAL).
 * Allowed from INIT on; ENOMEM when the receive queue is full, EINVAL for
 * a bad SGE. In ERR they complete with FLUSH_ERR.
 */
UW_EXTERN int uw_post_recv(struct uw_qp *qp, struct uw_recv_wr *wr, struct uw_recv_wr **bad_wr);

/* ======================================================================
 * Shared receive queues
 * ====================================================================== */

struct uw_srq_init_attr {
	void *srq_context;
	uint32_t max_wr;
	uint32_t max_sge;
};

struct uw_srq {
	struct uw_context *context;
	struct uw_pd *pd;
	void *srq_context;
};

/* uw_create_srq - receives shared by the QPs created with it. */
UW_EXTERN struct uw_srq *uw_create_srq(struct uw_pd *pd, struct uw_srq_init_attr *attr);
/* uw_destroy_srq - EBUSY while a QP uses it; its receives are dropped
 * without completions only when no QP is left to complete them. */
UW_EXTERN int uw_destroy_srq(struct uw_srq *srq);
UW_EXTERN int uw_post_srq_recv(struct uw_srq *srq, struct uw_recv_wr *wr,
			       struct uw_recv_wr **bad_wr);

/* uw_modify_srq_limit - arm the SRQ's limit: when a Send takes a receive
 * and leaves fewer than @limit, UW_EVENT_SRQ_LIMIT_REACHED is raised once
 * and the limit goes back to 0 (disarmed), as ibv_modify_srq's
 * IBV_SRQ_LIMIT. 0 disarms. EINVAL above the SRQ's size. */
UW_EXTERN int uw_modify_srq_limit(struct uw_srq *srq, uint32_t limit);
/* uw_srq_limit - the armed limit now (0 once it has fired). */
UW_EXTERN uint32_t uw_srq_limit(struct uw_srq *srq);

/* ======================================================================
 * Asynchronous events
 * ====================================================================== */

/*
 * What happens to a QP, CQ or SRQ outside any work request, as
 * ibv_get_async_event reports it. A QP raises at most one of the three
 * error events, when its connection fails (not when the application ends
 * it): REQ_ERR and ACCESS_ERR when this end refused what the peer sent
 * and sent it a Terminate (the peer's message was not valid / reached for
 * memory it may not: RFC 5040 section 7 and RFC 5041 section 7's remote
 * protection and tagged-buffer errors), FATAL for anything else (the
 * peer's Terminate, a broken stream, an MPA CRC error, a timeout, an
 * overflowed CQ). The completions say what became of each WR.
 */
enum uw_async_event_type {
	UW_EVENT_QP_FATAL,
	UW_EVENT_QP_REQ_ERR,
	UW_EVENT_QP_ACCESS_ERR,
	UW_EVENT_QP_LAST_WQE_REACHED, /* a QP of an SRQ went to ERR: it takes
				       * no more of the SRQ's receives */
	UW_EVENT_CQ_ERR,              /* the CQ overflowed */
	UW_EVENT_SRQ_LIMIT_REACHED,   /* see uw_modify_srq_limit */
};

struct uw_async_event {
	enum uw_async_event_type type;
	struct uw_qp *qp;   /* the QP events */
	struct uw_cq *cq;   /* UW_EVENT_CQ_ERR */
	struct uw_srq *srq; /* UW_EVENT_SRQ_LIMIT_REACHED */
};

struct uw_async_channel {
	struct uw_context *context;
	int fd; /* readable while events wait (poll, epoll) */
};

/* uw_create_async_channel - a queue of asynchronous events. NULL with
 * errno. */
UW_EXTERN struct uw_async_channel *uw_create_async_channel(struct uw_context *ctx);
/* uw_destroy_async_channel - EBUSY while objects report to it. */
UW_EXTERN int uw_destroy_async_channel(struct uw_async_channel *ch);
/*
 * uw_async_report - make @qp, @cq and @srq (each may be NULL) report their
 * events to @ch, or with @ch NULL to nowhere (the default). Events of an
 * object that moves, or is destroyed, and that nobody took yet go with
 * it. Returns 0 or EINVAL (objects of another context).
 */
UW_EXTERN int uw_async_report(struct uw_async_channel *ch, struct uw_qp *qp, struct uw_cq *cq,
			      struct uw_srq *srq);
/*
 * uw_get_async_event - the next event, waiting up to @timeout_ms (-1: for
 * ever, 0: not at all). Returns 0, ETIMEDOUT or EINVAL.
 */
UW_EXTERN int uw_get_async_event(struct uw_async_channel *ch, struct uw_async_event *ev,
				 int timeout_ms);
UW_EXTERN const char *uw_async_event_str(enum uw_async_event_type type);

/* ======================================================================
 * Connection manager
 * ====================================================================== */

enum uw_crc_mode {
	UW_CRC_DEFAULT = 0, /* request CRC (uwarp's default) */
	UW_CRC_ON,
	UW_CRC_OFF, /* do not ask; still run it if the peer asks */
};

enum uw_rtr {
	UW_RTR_SEND = 1 << 0,
	UW_RTR_WRITE = 1 << 1,
	UW_RTR_READ = 1 << 2,
};

struct uw_conn_param {
	const void *private_data;
	uint16_t private_data_len; /* up to 512, 256 toward siw */
	uint16_t ird;              /* inbound Reads we accept (responder_resources); 0: 16 */
	uint16_t ord;              /* outbound Reads we issue (initiator_depth); 0: 16 */
	enum uw_crc_mode crc;
	int markers;             /* ask the peer to insert MPA markers */
	int mpa_rev;             /* 1 or 2; 0 means 2 with RFC 6581 */
	int p2p;                 /* initiator: peer-to-peer mode with an RTR */
	int rtr_types;           /* enum uw_rtr the initiator offers (0: write|read) */
	int no_extensions;       /* do not offer RFC 7306 (Immediate, atomics) */
	int large_fpdu;          /* FPDUs up to 64 KiB instead of the TCP MSS */
	unsigned mpa_timeout_ms; /* 0: the context default */
	/* Limits for a running connection, each side its own (0: none).
	 * idle_timeout_ms: no whole FPDU from the peer for this long (a
	 * partial one counts as nothing) ends the connection: DISCONNECTED
	 * with status ETIMEDOUT, after idle_timeout_ms to 1.5 times that.
	 * keepalive_s: TCP keepalive, the first probe after this many idle
	 * seconds, then every third of it, three unanswered ending it; at
	 * most UW_KEEPALIVE_MAX_S, else the call fails with EINVAL. */
	unsigned idle_timeout_ms;
	unsigned keepalive_s;
};
#define UW_KEEPALIVE_MAX_S 32767 /* Linux's TCP_KEEPIDLE limit */

enum uw_cm_event_type {
	UW_CM_EVENT_CONNECT_REQUEST, /* on a listener: a peer's Request arrived */
	UW_CM_EVENT_ESTABLISHED,
	UW_CM_EVENT_REJECTED,      /* the peer answered with a Reject */
	UW_CM_EVENT_CONNECT_ERROR, /* TCP, MPA, timeout or negotiation failure */
	UW_CM_EVENT_DISCONNECTED,  /* closed by either side, or terminated */
};

struct uw_cm_event {
	enum uw_cm_event_type event;
	struct uw_cm_id *id;        /* CONNECT_REQUEST: the new id */
	struct uw_cm_id *listen_id; /* CONNECT_REQUEST: the listener */
	int status;                 /* errno-style reason for failures */
	/* the peer's parameters: its private data and IRD/ORD, the
	 * negotiated CRC, markers, revision. REJECTED: what the peer's
	 * Reject frame says (its C and revision; markers_tx its M, the
	 * peer asking to receive markers; markers_rx whether we asked) */
	const void *private_data;
	uint16_t private_data_len;
	uint16_t ird, ord;
	int crc, markers_tx, markers_rx, mpa_rev, rfc7306;
	/* for DISCONNECTED by a Terminate: its RFC 6580 code, and who sent
	 * it (1: the peer, decoded from its bytes in RFC or siw layout; 0:
	 * uwarp, for what the peer sent wrong) */
	int terminated; /* 1: a Terminate ended it (0/0/0 is a code too) */
	uint8_t term_layer, term_etype, term_ecode;
	int term_remote;
	int term_siw_layout; /* the peer's Terminate used siw's bit layout */
};

struct uw_cm_channel {
	struct uw_context *context;
	int fd; /* readable when uw_cm_get_event may have something */
};

struct uw_cm_id {
	struct uw_context *context;
	struct uw_cm_channel *channel;
	void *context_ptr;
	struct uw_qp *qp;
	struct sockaddr_storage local_addr, peer_addr;
};

/* uw_cm_create_channel - where connection events arrive. */
UW_EXTERN struct uw_cm_channel *uw_cm_create_channel(struct uw_context *ctx);
UW_EXTERN int uw_cm_destroy_channel(struct uw_cm_channel *ch);

/*
 * uw_cm_get_event - the next connection event (blocking unless the channel
 * is non-blocking, then EAGAIN). Drives progress. Returns 0 or an errno
 * value. Acknowledge with uw_cm_ack_event: private data stays valid until
 * then.
 */
UW_EXTERN int uw_cm_get_event(struct uw_cm_channel *ch, struct uw_cm_event **event);
UW_EXTERN int uw_cm_get_event_timeout(struct uw_cm_channel *ch, struct uw_cm_event **event,
				      int timeout_ms);
UW_EXTERN int uw_cm_ack_event(struct uw_cm_event *event);
UW_EXTERN int uw_cm_channel_nonblock(struct uw_cm_channel *ch, int nonblock);

/* uw_cm_create_id - an endpoint for listening or connecting. */
UW_EXTERN struct uw_cm_id *uw_cm_create_id(struct uw_cm_channel *ch, void *context);
/*
 * uw_cm_destroy_id - destroy an id: closes its connection (flushing its QP)
 * or its listener. The QP itself is destroyed separately.
 */
UW_EXTERN int uw_cm_destroy_id(struct uw_cm_id *id);

/*
 * uw_cm_migrate_id - move an id to another channel of the same context:
 * its later events, and those still queued, arrive there. Ids a listener
 * hands out start on the listener's channel; move one to give each
 * connection its own. Returns 0 or an errno value (EINVAL).
 */
UW_EXTERN int uw_cm_migrate_id(struct uw_cm_id *id, struct uw_cm_channel *ch);

/* uw_cm_listen - listen on an IPv4 or IPv6 address and port (0 picks a
 * port: read it from id->local_addr). @backlog is taken for rdma_cm's sake
 * and not used: the kernel's queue of TCP connections not yet taken is
 * always the system's largest (net.core.somaxconn), since uwarp takes each
 * one at once to run its MPA exchange, and a flood of connections must not
 * meet SYN retransmissions. Returns 0 or an errno value. */
UW_EXTERN int uw_cm_listen(struct uw_cm_id *id, const struct sockaddr *addr, int backlog);

/*
 * uw_cm_listen_handoff - make @id a listener without a socket of its own:
 * it takes the TCP connections handed to it with uw_cm_request_fd (a
 * program that accepts TCP itself, and looks at a peer's first bytes
 * before it decides that the peer speaks MPA). Its requests come as
 * CONNECT_REQUEST events, as a listening id's. Returns 0, EINVAL or
 * EBUSY (already listening or connected).
 */
UW_EXTERN int uw_cm_listen_handoff(struct uw_cm_id *id);

/*
 * uw_cm_request_fd - hand an accepted, connected TCP socket to a listener
 * (uw_cm_listen or uw_cm_listen_handoff): uwarp reads the peer's MPA
 * Request from it (bytes the caller only peeked at are still there) and
 * the listener's channel gets CONNECT_REQUEST, or nothing when the peer
 * sends something else or nothing within the request timeout (the socket
 * is then closed). On 0 uwarp owns @fd (it makes it non-blocking and
 * closes it); on an error the caller keeps it. Returns 0 or EINVAL (not a
 * listener, or @fd not a TCP socket).
 */
UW_EXTERN int uw_cm_request_fd(struct uw_cm_id *listener, int fd);

/* uw_cm_attach_qp - the QP this id's connection will drive. */
UW_EXTERN int uw_cm_attach_qp(struct uw_cm_id *id, struct uw_qp *qp);
/* uw_cm_create_qp - uw_create_qp and uw_cm_attach_qp in one. */
UW_EXTERN struct uw_qp *uw_cm_create_qp(struct uw_cm_id *id, struct uw_pd *pd,
					struct uw_qp_init_attr *attr);

/*
 * uw_cm_connect - connect to a listening peer (TCP, then the MPA Request).
 * Completes with ESTABLISHED, REJECTED or CONNECT_ERROR. Needs a QP
 * (EINVAL). Returns 0 or an errno value.
 */
UW_EXTERN int uw_cm_connect(struct uw_cm_id *id, const struct sockaddr *addr,
			    const struct uw_conn_param *param);

/*
 * uw_cm_connect_fd - as uw_cm_connect, over a TCP socket the caller has
 * connected, or is connecting without blocking (the MPA Request goes once
 * it is connected): an ordinary socket turning into an iWARP connection.
 * On 0 uwarp owns @fd (it makes it non-blocking and closes it with the
 * connection); on an error the caller keeps it. Returns 0 or an errno
 * value: EINVAL (no QP in INIT, or @fd not a TCP socket), EBUSY.
 */
UW_EXTERN int uw_cm_connect_fd(struct uw_cm_id *id, int fd, const struct uw_conn_param *param);

/*
 * uw_cm_accept - accept a CONNECT_REQUEST: the MPA Reply goes out and the
 * QP moves to RTS. Post receives first: the peer may send at once.
 * ESTABLISHED follows on this id. Returns 0 or an errno value: EINVAL
 * (no request held, no QP in INIT), ECONNRESET (the initiator has already
 * closed its connection), ECONNREFUSED (its parameters cannot be met: a
 * Reject went out).
 */
UW_EXTERN int uw_cm_accept(struct uw_cm_id *id, const struct uw_conn_param *param);

/* uw_cm_reject - refuse a CONNECT_REQUEST with private data; the peer gets
 * REJECTED carrying it. */
UW_EXTERN int uw_cm_reject(struct uw_cm_id *id, const void *private_data, uint16_t len);

/*
 * uw_cm_disconnect - close the connection: the QP goes to ERR, every
 * outstanding WR completes with FLUSH_ERR, the TCP connection closes and
 * both sides get DISCONNECTED.
 */
UW_EXTERN int uw_cm_disconnect(struct uw_cm_id *id);

/*
 * uw_cm_set_limits - change the connection's limits (uw_conn_param's
 * idle_timeout_ms and keepalive_s; 0 removes one) while it is set up or
 * runs; the idle watch counts from the call. Returns 0, EINVAL (keepalive_s
 * above UW_KEEPALIVE_MAX_S) or ENOTCONN (the id has no connection, or it
 * has ended).
 */
UW_EXTERN int uw_cm_set_limits(struct uw_cm_id *id, unsigned idle_timeout_ms, unsigned keepalive_s);

/*
 * uw_cm_set_tos - the IP type of service of the id's TCP connection (the
 * IPv4 TOS byte, IPv6's traffic class): for the connection uw_cm_connect
 * makes next, for one already up, and for those a uw_cm_listen listener
 * accepts (they inherit it from its socket). A socket the program hands
 * over (uw_cm_connect_fd, uw_cm_request_fd) keeps its own. Returns 0 or
 * EINVAL (no id).
 */
UW_EXTERN int uw_cm_set_tos(struct uw_cm_id *id, uint8_t tos);

/* A short name for an errno or a CM event, for messages. */
UW_EXTERN const char *uw_cm_event_str(enum uw_cm_event_type type);
/*
 * uw_connect_strerror - why a connection attempt failed, in words: for the
 * status of a CONNECT_ERROR or REJECTED event, uw_ep_connect's errno or
 * uw_qp_end_errno before the connection was up. ETIME (TCP up, no MPA
 * Reply in time), EPROTO (the peer answered with bytes that are not an
 * MPA Reply), ECONNRESET (it closed before replying) and ECONNREFUSED get
 * what they mean in setting up an iWARP connection, with the likely cause;
 * any other value strerror's text. The string is static.
 */
UW_EXTERN const char *uw_connect_strerror(int status);
UW_EXTERN const char *uw_wc_status_str(enum uw_wc_status status);

#ifdef __cplusplus
}
#endif

#endif /* UWARP_VERBS_H */
