/*
 * esock_internal.h: extended sockets' objects (esock.h is the API).
 *
 * A TCP socket in DDP mode is an ES-API stream socket (exs) carried over
 * the TCP connection the program made. The program's descriptor number
 * then names one end of a private AF_UNIX socket pair whose readiness the
 * library drives, so poll, select and epoll (every mode) work unchanged:
 *   - readable: one byte per arrival waits at the program's end (drained
 *     when nothing is left to read); end of stream shuts our end's
 *     writing, so the program's end reports POLLIN|POLLRDHUP for ever;
 *   - writable: the program's end is made unwritable by filling its tiny
 *     send buffer into our end, and writable again by draining it.
 * Data moves through two registered buffers per socket: a send ring whose
 * bytes are posted as exs sends (write returns at once, as TCP's socket
 * buffer does) and receive chunks kept posted as exs receives (read,
 * MSG_PEEK, FIONREAD and non-blocking calls are served from them).
 */
#ifndef UWARP_ESOCK_INTERNAL_H
#define UWARP_ESOCK_INTERNAL_H

#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include <esock.h>
#include <exs.h>

#include "util/list.h"

#define ESOCK_FD_MAX 65536          /* descriptors above this are never DDP */
#define ESOCK_RCHUNKS 8             /* receive chunks kept posted: 2 MiB in flight */
#define ESOCK_RCHUNK (256u << 10)   /* each one's size */
#define ESOCK_SBUF (2048u << 10)    /* the send ring */
#define ESOCK_SENDS_MAX 64          /* exs sends outstanding per socket */
#define ESOCK_SENDS_EAGER 2         /* a write posts at once while fewer are out */
#define ESOCK_SEND_MAX (512u << 10) /* bytes per exs send at most */
#define ESOCK_SETUP_MS 10000        /* the MPA negotiation at most */
#define ESOCK_REPLY_MS_DEFAULT 2000 /* a client's wait for the MPA Reply (ESOCK_REPLY_MS) */
#define ESOCK_EPOLL_TRACK 8         /* epoll sets a connecting socket may be in (fallback) */
#define ESOCK_KREGS 8               /* plain epoll registrations a close takes out */

/* the real calls (libc's, or whatever the next library provides) */
struct esock_libc {
	int (*socket)(int, int, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*shutdown)(int, int);
	int (*close)(int);
	int (*dup)(int);
	int (*dup2)(int, int);
	int (*dup3)(int, int, int);
	int (*fcntl)(int, int, ...);
	int (*ioctl)(int, unsigned long, ...);
	ssize_t (*read)(int, void *, size_t);
	ssize_t (*write)(int, const void *, size_t);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	ssize_t (*recv)(int, void *, size_t, int);
	ssize_t (*send)(int, const void *, size_t, int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*sendfile)(int, int, off_t *, size_t);
	int (*recvmmsg)(int, struct mmsghdr *, unsigned, int, struct timespec *);
	int (*sendmmsg)(int, struct mmsghdr *, unsigned, int);
	FILE *(*fdopen)(int, const char *);
	int (*fileno)(FILE *);
	int (*fileno_unlocked)(FILE *);
	ssize_t (*read_chk)(int, void *, size_t, size_t);
	ssize_t (*recv_chk)(int, void *, size_t, size_t, int);
	ssize_t (*recvfrom_chk)(int, void *, size_t, size_t, int, struct sockaddr *, socklen_t *);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*ppoll)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*pselect)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
		       const sigset_t *);
	int (*epoll_create)(int);
	int (*epoll_create1)(int);
	int (*epoll_ctl)(int, int, int, struct epoll_event *);
	int (*epoll_wait)(int, struct epoll_event *, int, int);
	int (*epoll_pwait)(int, struct epoll_event *, int, int, const sigset_t *);
	int (*epoll_pwait2)(int, struct epoll_event *, int, const struct timespec *,
			    const sigset_t *);
};
extern struct esock_libc esock_libc;
void esock__libc_init(void);
#define REAL(f) (esock_libc.f ? esock_libc.f : (esock__libc_init(), esock_libc.f))
/* Our own descriptors are closed through the public close(), which
 * passes them straight on: a tool that interposes close() too (the
 * ThreadSanitizer's runtime tracks descriptors) sees every close. */
#define esock__close(fd) close(fd)

/* What the library knows of a descriptor number (esock_table.c). */
enum {
	FD_TCP = 0x1,        /* a TCP socket the program made or accepted */
	FD_WANT_DDP = 0x2,   /* setsockopt(ESOCK_DDPMODE, 1) before connect/listen */
	FD_DDP_LISTEN = 0x4, /* a listener whose MPA clients become DDP sockets */
	FD_NO_DDP = 0x8,     /* setsockopt(ESOCK_DDPMODE, 0): never */
	FD_LISTENER = 0x10,  /* the number names a DDP listener (esock_listen.c) */
	FD_BUFS_SET = 0x20,  /* the program set SO_SNDBUF or SO_RCVBUF (a fallback keeps them) */
	FD_EPOLL_DDP = 0x40, /* an epoll set that has held a DDP socket: its waits
			      * move the ES-API's data (esock_wait.c) */
};

/* ES_FALLBACK: the peer did not speak MPA; the program's next call puts a
 * plain TCP connection under its number (esock_fallback.c) */
enum esock_state { ES_CONNECTING, ES_CONNECTED, ES_FAILED, ES_FALLBACK };

/* a receive chunk: posted, holding bytes to read, read to its end and
 * waiting to be posted again (RC_FREE), or past the stream's end */
enum { RC_POSTED, RC_FILLED, RC_FREE, RC_END };

struct esock;

/* an exs operation's handle: which socket, which kind, which chunk */
struct esock_tag {
	struct esock *e;
	int kind; /* TAG_* */
	int idx;
};
enum { TAG_CONNECT, TAG_RECV, TAG_SEND, TAG_SHUT, TAG_CLOSE, TAG_ASYNC };

struct esock_cq;

/* an extended call's operation (esock_ext.c); its tag first: an exs
 * event's handle leads back to it */
struct esock_aop {
	struct esock_tag tag;
	struct esock_cq *cq; /* where it completes; or: */
	void *carried;       /* an ES-API operation (exs_carried_done) */
	void *ctx;
	int op; /* enum esock_op */
	/* RECV: the buffers, the bytes asked for and those already there */
	struct iovec iov[EXS_IOV_MAX];
	int iovcnt;
	size_t len, got;
	bool waitall;           /* all @len, unless the stream ends first */
	struct esock_aop *next; /* RECV: the socket's pending ones, in order */
};

struct esock_waiter;

struct esock {
	pthread_mutex_t mu;
	pthread_cond_t cv;            /* waiters without an eventfd of their own (esock_sleep.c) */
	struct esock_waiter *waiters; /* threads asleep in esock__wait */
	pid_t owner;                  /* the process whose engine carries it */
	int fds;                      /* program descriptors naming it */
	bool engine_ref;              /* the exs socket is still open (its CLOSE is due) */
	int exs;                      /* the ES-API socket */
	int tcp;                      /* a copy of the TCP socket: names, TCP options */
	int a, b;                     /* the program's end (a copy), our end */
	int domain;
	_Atomic bool nonblock; /* O_NONBLOCK of the program's end (kept: one
				* system call less per call) */
	enum esock_state st;
	int so_error; /* SO_ERROR: read once */
	int conn_err; /* the connection's failure, for every later call */
	unsigned rcvtimeo_ms, sndtimeo_ms;

	/* a connect's (esock_fallback.c) */
	struct sockaddr_storage peer; /* where to (also for messages) */
	int conn_fd;                  /* the program's number at connect */
	bool may_fall_back;           /* connect() with ESOCK_FALLBACK on */
	_Atomic bool fallback_due;    /* ES_FALLBACK, not yet swapped */
	bool fell_back;               /* swapped: calls waiting go on on conn_fd */
	bool quiet;                   /* the program's end reports nothing more */
	int fell_err;                 /* what said the peer is not iWARP */
	struct {
		int ep;
		struct epoll_event ev;
	} eps[ESOCK_EPOLL_TRACK]; /* epoll sets holding the program's end */
	int neps;

	/* receiving */
	uint8_t *rbuf;
	exs_mhandle_t rmh;
	int rstate[ESOCK_RCHUNKS];
	size_t rlen[ESOCK_RCHUNKS], roff[ESOCK_RCHUNKS];
	int rhead; /* the chunk the stream continues in */
	int rfree; /* RC_FREE chunks: the rfree ones before rhead */
	bool eof, rd_shut;

	/* sending */
	uint8_t *sbuf;
	exs_mhandle_t smh;
	size_t stail, sout;             /* where the next bytes go; bytes outstanding */
	size_t sunposted;               /* of those, the last ones, not yet posted */
	uint32_t slen[ESOCK_SENDS_MAX]; /* outstanding sends' lengths, in order */
	bool sdone[ESOCK_SENDS_MAX];    /* completed (a coalesced send completes
					  * before those ahead of it) */
	int shead, scount;
	bool wr_shut;
	bool shut_due, close_due; /* exs_shutdown, exs_close after sunposted */

	/* esock_recv_async's, in the order posted: they take the stream's
	 * bytes before read(2) does */
	struct esock_aop *arecv, *arecv_tail;

	/* readiness of the program's end */
	bool rsig; /* a byte waits there */
	/* Readable is known in user space only (esock_ready.c): no byte is
	 * sent until a poll, select or other wait that asks the kernel sees
	 * the socket, which ends it for good */
	_Atomic bool umode;
	_Atomic bool uready;          /* readable, as esock__update last found */
	_Atomic unsigned arrivals;    /* data arrivals (edge-triggered sets) */
	struct util_list memberships; /* its registrations (struct esock_member) */
	/* its plain registrations, by set and number: a number's close takes
	 * them out (the kernel keeps them while the file lives, and @a
	 * keeps it) */
	struct {
		int ep, fd;
	} kregs[ESOCK_KREGS];
	int nkregs;
	bool oblock; /* made unwritable */
	bool rdhup_done, wrhup_done;

	struct esock_tag tag_conn, tag_shut, tag_close, tag_recv[ESOCK_RCHUNKS];
	struct esock_tag tag_send[ESOCK_SENDS_MAX];
};

/* esock_table.c */
/* (atomic: uwarp's threads close their own descriptors through close()) */
extern _Atomic uint8_t esock_fdflags[ESOCK_FD_MAX];
/* whether the tables above have a place for descriptor @fd */
static inline bool esock__fd_in_range(int fd) { return fd >= 0 && fd < ESOCK_FD_MAX; }
struct esock *esock__get(int fd);            /* NULL: not a DDP socket (a due
					   * fallback is made first) */
struct esock *esock__peek(int fd);           /* the table's entry as it is */
void esock__unname(int fd, struct esock *e); /* @fd names a plain socket now */
void esock__set(int fd, struct esock *e);    /* names it (a reference) */
void esock__forget(int fd);                  /* the number closed: drops its reference */
struct esock *esock__new(int domain);
void esock__unref_fd(struct esock *e);    /* a descriptor naming it went */
void esock__engine_live(void);            /* an exs socket opened for one */
void esock__engine_done(struct esock *e); /* its exs socket is closed */
void esock__at_exit(void);
bool esock__foreign(const struct esock *e); /* inherited across fork */
pid_t esock__pid(void);
int esock__fd_floor(void);   /* where our own descriptors go */
int esock__dup_high(int fd); /* a close-on-exec copy up there */
int esock__hide(int fd);     /* moved up there (the old number closed) */

/* esock_policy.c */
bool esock__env_selects(int fd, const struct sockaddr *peer);
unsigned esock__peek_ms(void);
bool esock__verbose(void); /* ESOCK_VERBOSE: a line per decision */
/* with ESOCK_VERBOSE, one line on a connection: "fd FD to PEER: ..." (a
 * client accepted: FD -1, "client PEER: ...") */
void esock__say(int fd, const struct sockaddr *peer, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
const char *esock__words(int err); /* a connect status in words */

/* esock_fallback.c */
bool esock__fallback_on(void);   /* ESOCK_FALLBACK (default on) */
unsigned esock__reply_ms(void);  /* ESOCK_REPLY_MS */
bool esock__falls_back(int err); /* an MPA failure that says "not iWARP" */
/* when a connection to @peer fell back to plain TCP (ms), 0: not lately */
uint64_t esock__plain_since(const struct sockaddr *peer);
/* under e->mu: a connect's failure (ES_FALLBACK when one is due) */
void esock__connect_failed(struct esock *e, int err);
/* the program's call on @fd: the plain connection made and put under @fd
 * (NULL), or @e failed (its conn_err says why) */
struct esock *esock__fall_back(int fd, struct esock *e);
void esock__track_epoll(struct esock *e, int ep, int op, const struct epoll_event *ev);

/* esock_engine.c */
int esock__engine(void); /* start (once): 0 or -errno */
extern exs_qhandle_t esock_q;
int esock__handoff_fd(void); /* the exs listener accepted sockets are given to */
/* room on the event queue for @conns connections' operations: 0 or -errno */
int esock__queue_room(int conns);
void esock__exs_options(int exs_fd);
/* ESOCK_IDLE_MS: every DDP connection's idle limit unless its socket or
 * listener says otherwise (0: none; a bad value is said once and ignored) */
int esock__idle_default(void);
/* wait for the accepted exs socket whose peer is @peer (ms): fd or -errno */
int esock__take_accepted(const struct sockaddr_storage *peer, unsigned ms);
/* the same address and port */
bool esock__same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b);
int esock__post_recvs(struct esock *e); /* under e->mu */
/* under e->mu: the RC_FREE chunks (@flags: exs_recv's, MSG_MORE before a send) */
void esock__repost_free(struct esock *e, int flags);
/* under e->mu: the ring's unposted bytes go, and a shutdown or close that
 * waited for them; returns true when the close could not be made (the
 * caller calls esock__engine_done once it has let go of e->mu) */
bool esock__settle(struct esock *e);
void esock__update(struct esock *e, bool arrived); /* readiness: under e->mu */
bool esock__readable(const struct esock *e);       /* a read would not wait */
/* esock_ready.c: readiness in user space for DDP sockets in epoll sets */
/* a new DDP socket's pair: readable starts in user space */
void esock__ready_lazy(struct esock *e);
/* under e->mu, in user mode: @e's readiness changed (@arrived: new data) */
void esock__ready_changed(struct esock *e, bool readable, bool arrived);
/* epoll_ctl on set @ep for DDP socket @e named @fd: 1 when done here (the
 * result in *rc), 0 when the caller makes the plain call */
int esock__ready_ctl(int ep, int op, int fd, struct esock *e, struct epoll_event *ev, int *rc);
/* whether @ep is a set of this process's in esock's hands (its waits go
 * through esock__ready_wait) */
bool esock__ready_set(int ep);
/* epoll_wait on a set that has held a DDP socket, moving the ES-API's
 * data while it waits: its events (user readiness and the kernel's,
 * merged), waiting up to @timeout ms (-1: no limit) */
int esock__ready_wait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask);
/* a wait outside esock's epoll answers is about to see @fd (a DDP socket
 * or an epoll set): its readiness goes back to the kernel, for good */
void esock__ready_kernel(int fd);
void esock__ready_kernel_set(int ep); /* the same for an epoll set alone */
/* @fd no longer names @e (@del: the number still names its file, whose
 * registrations go too) */
void esock__ready_forget(int fd, struct esock *e, bool del);
void esock__ready_drop_set(int ep);   /* the number closed (if it was a set) */
void esock__ready_epoll_made(int ep); /* epoll_create made it */
bool esock__ready_known(int fd);      /* a set, or made by epoll_create */
/* a plain epoll_ctl on DDP socket @e succeeded: its registrations */
void esock__ready_track(struct esock *e, int ep, int op, int fd);
/* a plain epoll_wait's @n events from set @ep: esock's own taken out */
int esock__ready_filter(int ep, struct epoll_event *ev, int n);
/* some socket has been in user mode; some epoll set was made: poll and
 * select look at their descriptors */
extern _Atomic bool esock_umode_any, esock_epoll_any;
/* esock__ppoll_here that also returns 0 once @ready(@arg) (esock_wait.c) */
int esock__ppoll_here_until(struct pollfd *p, nfds_t n, const struct timespec *t,
			    const sigset_t *mask, int (*ready)(void *), void *arg);

/* esock_sleep.c: under e->mu, wait for esock__wake or @ms (0: no limit):
 * 0, ETIMEDOUT, or EINTR when a signal handler ran that the kernel would
 * not restart the socket call after (signal(7)) */
int esock__wait(struct esock *e, unsigned ms);
/* under e->mu: wake every thread in esock__wait on @e */
void esock__wake(struct esock *e);

/*
 * A DDP listener (esock_listen.c, esock_gate.c). accept must never wait
 * for a client to say what it is or to finish its MPA negotiation: one
 * slow or hostile client would stall the program for all the others. So
 * the listening TCP socket moves to a number of ours, and the program's
 * number names an AF_UNIX listener in the abstract namespace instead. The
 * gate thread accepts TCP clients, tells MPA clients from plain ones by
 * their first bytes, lets the engine negotiate MPA, and queues each
 * client once it is ready, then connects one token socket to the AF_UNIX
 * listener: the program's number is readable exactly while ready clients
 * wait, and accept, O_NONBLOCK, SO_RCVTIMEO, EINTR and every poll, select
 * and epoll mode behave as the kernel makes them for a listener.
 *
 * A fork shares the listener. Prefork servers (nginx) listen, fork and
 * accept in the children only; the parent's gate would take clients that
 * nobody accepts. So a listener the program has never accepted from
 * becomes the TCP listener again at fork, in parent and child, and each
 * process that then waits on it or accepts from it makes it a DDP
 * listener of its own again, with its own gate (esock_wait.c): the gates
 * of the processes take turns at the one TCP listener. One already
 * accepted from stays gated in the parent (redis forks to save, and goes
 * on accepting); a child's accept on it takes what the TCP listener has,
 * as plain TCP.
 */
struct esock_ready {
	struct util_list link; /* on its listener's ready ones, in order */
	int fd;                /* a plain client's TCP socket, or an MPA client's exs socket */
	int tcp;               /* an MPA client's TCP socket (a copy: names, options); else -1 */
	struct sockaddr_storage peer;
};

struct esock_listener {
	int gate_kind; /* first: the gate's epoll finds its kind (esock_gate.c) */
	pid_t owner;   /* the process whose gate serves it */
	int names;     /* program descriptors naming it (under the gate's lock) */
	int refs;      /* the names' share, the gate's, one per client held */
	int tcp;       /* the listening TCP socket, at a number of ours */
	struct sockaddr_storage token_addr; /* the AF_UNIX listener's address */
	socklen_t token_len;
	unsigned cap; /* clients held at most: classified, negotiated, ready */
	unsigned held;
	bool armed;             /* the gate accepts from tcp */
	bool closed;            /* the program closed its last name */
	_Atomic bool accepted;  /* the program has called accept on it */
	uint64_t paused_until;  /* accept ran out of descriptors: retry then (ms) */
	_Atomic int idle_ms;    /* ESOCK_IDLE_MS set on it, for its clients; -1: not set */
	struct util_list ready; /* clients ready for accept (struct esock_ready) */
	struct util_list link;  /* on the gate's listeners */
};

/* esock_listen.c: the program's side */
struct esock_listener *esock__listener(int fd); /* NULL: not a DDP listener */
/* @fd listens (TCP): make it a DDP listener; 0 or -1 with errno (it is
 * then unchanged: a plain listener) */
int esock__listener_make(int fd, int backlog);
/* a DDP listener that fork turned back into the TCP listener
 * (esock__listener_revert) may exist in this process: until one does, the
 * waiting calls cost nothing */
extern _Atomic bool esock_any_reverted;
/* The ES-API runs in this process for DDP sockets: the program's waits
 * move its data on their own thread (exs_ppoll_here; esock_wait.c). */
extern _Atomic bool esock_here;
/* whether this thread's waits move the data (esock_wait.c) */
bool esock__waits_here(void);
/* exs_ppoll_here, with this library's waits passing straight on inside */
int esock__ppoll_here(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask);
/* @fd, if it is such a listener, becomes this process's own DDP listener
 * again, with a gate of its own, as the process first waits on it or
 * accepts from it; 0 (also when @fd is no such listener) or -1 with errno */
int esock__listener_regate(int fd);
void esock__listener_name(int fd, struct esock_listener *l); /* dup */
void esock__listener_forget(int fd);                         /* the number closed */
/* a ready client: its new descriptor (@ddp: a DDP socket), or -1 with errno */
int esock__listener_accept(struct esock_listener *l, int fd, struct sockaddr *addr, socklen_t *len,
			   int flags, bool *ddp);
int esock__listener_relisten(struct esock_listener *l, int backlog);
/* fork: every name of @l becomes the TCP listener again (its number kept,
 * the program's blocking mode and close-on-exec flag too), until a
 * process waits on it or accepts from it (esock__listener_regate) */
void esock__listener_revert(struct esock_listener *l);

/* esock_gate.c: the thread that classifies and negotiates */
int esock__gate_add(struct esock_listener *l);                 /* 0 or -errno */
void esock__gate_name(struct esock_listener *l, int delta);    /* names += delta */
struct esock_ready *esock__gate_pop(struct esock_listener *l); /* NULL: none */
/* a client popped that the program could not take (EMFILE): first again */
void esock__gate_putback(struct esock_listener *l, struct esock_ready *r);
void esock__gate_set_cap(struct esock_listener *l, unsigned cap);
/* the engine accepted exs socket @x from @peer: true if a listener took it */
bool esock__gate_arrived(int x, const struct sockaddr_storage *peer);
unsigned esock__backlog_cap(int backlog); /* listen(2)'s clamp */

/* esock_setup.c: a TCP socket becoming a DDP socket */
/* @fd (a connecting or connected TCP socket, the program's number) is
 * carried over exs from now on; @initiator: this end sends the MPA Request.
 * Returns the esock, or NULL with errno (the number is unchanged then). */
/* @to: connect()'s address (the connection may fall back), else NULL */
struct esock *esock__switch(int fd, bool initiator, int tcp_copy, const struct sockaddr *to);
/* a negotiated exs socket @x (@tcp: a copy of its TCP socket) becomes a
 * DDP socket: the number the program gets, or -1 with errno ECONNABORTED
 * (@x and @tcp are closed either way) */
int esock__adopt_exs(int x, int tcp, int flags);
/* what a client's first bytes (peeked, never consumed) say: 1 an MPA
 * Request's key, 0 anything else or the end, -1 not yet known */
int esock__mpa_verdict(int fd);

/* esock_ext.c */
void esock__async_done(struct esock_aop *a, int status, size_t bytes); /* frees it */
/* the ES-API's transfers on a DDP socket (exs_set_fd_carrier): under its
 * lock, in order with read(2) and write(2); 0 or an errno value */
int esock__carry_send(int fd, const struct iovec *iov, int iovcnt, const exs_mhandle_t *mh,
		      void *op);
int esock__carry_recv(int fd, const struct iovec *iov, int iovcnt, int flags, void *op);
extern const struct exs_fd_carrier esock__carrier;  /* esock_calls.c */
void esock__serve_arecv(struct esock *e);           /* under e->mu: bytes to pending receives */
void esock__cancel_arecv(struct esock *e, int err); /* under e->mu */

/* esock_io.c */
/* copy out what is there, consuming it unless @peek (under e->mu) */
size_t esock__take(struct esock *e, const struct iovec *iov, int cnt, size_t at, size_t want,
		   bool peek);
ssize_t esock__recv(struct esock *e, const struct iovec *iov, int cnt, int flags);
ssize_t esock__send(struct esock *e, const struct iovec *iov, int cnt, int flags);
size_t esock__readable_bytes(struct esock *e);
int esock__shutdown(struct esock *e, int how);
bool esock__nonblocking(const struct esock *e);

#endif
