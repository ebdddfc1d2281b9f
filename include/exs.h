/*
 * exs.h - the Extended Sockets API (ES-API) over uwarp.
 *
 * Sockets with asynchronous operations that complete through event queues,
 * and registered memory, as the Open Group's ES-API and UNH EXS define
 * them, carried over iWARP (uwarp's RDMAP/DDP/MPA on TCP):
 *
 *   SOCK_SEQPACKET  messages. Each receive advertises its buffer to the
 *                   peer; each send waits for an advert and is written
 *                   straight into it (zero copy).
 *   SOCK_STREAM     a byte stream with the dynamic protocol of MacArthur
 *                   and Russell (IPDPS 2014): a send goes straight into the
 *                   receive the peer advertised when the receiver is ahead
 *                   (direct), and through a hidden ring that the receiver
 *                   copies out when the sender is ahead (indirect),
 *                   switching at run time.
 *
 *     exs_init(EXS_VERSION);
 *     exs_qhandle_t q = exs_qcreate(64);
 *     int fd = exs_socket(AF_INET, SOCK_STREAM, 0);
 *     exs_connect(fd, (struct sockaddr *)&sa, sizeof sa, EXS_QHANDLE_INVALID, NULL);
 *     exs_mhandle_t mh = exs_mregister(buf, len, EXS_ACCESS_READ);
 *     exs_send(fd, buf, len, 0, q, my_context, mh);
 *     exs_event_t ev;
 *     exs_qdequeue(q, &ev, -1, NULL);   // ev.exs_evt_type == EXS_EVT_SEND
 *
 * Conventions, as for the socket calls they mirror: a call returns 0 (or a
 * count) on success and -1 with errno set on failure; socket descriptors
 * and queue handles are numbers that never clash with the process's own
 * file descriptors (they are descriptors uwarp holds open). An operation
 * given a queue (qhandle) returns at once and completes later with one
 * event on that queue carrying the ahandle; given EXS_QHANDLE_INVALID it
 * waits and returns its result itself. Every operation that was accepted
 * completes exactly once, with success or an error status, also when its
 * socket closes or its connection fails.
 *
 * Sockets the system made: exs_send, exs_sendv, exs_recv, exs_recvv,
 * exs_shutdown, exs_close, exs_poll, exs_getsockopt, exs_setsockopt,
 * exs_getsockname and exs_getpeername also take a SOCK_STREAM descriptor
 * made by socket(2), accept(2) or accept4(2) (connected by connect(2)).
 * On it the operations run as asynchronous I/O on the plain TCP stream,
 * so the peer is any TCP program: sends go out in the order made and
 * complete once the kernel has taken every byte; receives fill in order
 * (each with what has come; MSG_WAITALL: all of it); the program's own
 * send(2), recv(2), shutdown(2) and close(2) may come before and after
 * them, not while some are outstanding. The socket's options are the
 * system's (SOL_EXS: ENOPROTOOPT). A descriptor that is not a socket gets
 * ENOTSOCK, a datagram socket EOPNOTSUPP, a closed one EBADF. In DDP mode
 * (SOL_ESOCK, below, or ESOCK_DDPMODE in the environment) the calls run
 * over MPA and the stream protocol to a uwarp peer instead (an accepted
 * socket is sorted by its client's first bytes), and only ES-API calls
 * may touch it then (docs/exs.md).
 *
 * Threads: every call may be made from any thread. A progress thread
 * started by exs_init moves data and runs the protocol, so transfers go on
 * while the application computes.
 */
#ifndef UWARP_EXS_H
#define UWARP_EXS_H

#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <time.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define EXS_EXTERN __attribute__((visibility("default")))
#else
#define EXS_EXTERN
#endif

/* The ES-API version this header describes: exs_init(EXS_VERSION). */
#define EXS_VERSION1 1
#define EXS_VERSION EXS_VERSION1

typedef int exs_qhandle_t;
#define EXS_QHANDLE_INVALID (-1)

typedef struct exs_mem *exs_mhandle_t;
#define EXS_MHANDLE_INVALID ((exs_mhandle_t)0)

/* The application's handle of an operation, given back in its event: any
 * pointer, or an integer cast to it (programs pass (exs_ahandle_t)-1). */
typedef void *exs_ahandle_t;

/* exs_mregister access flags: what the peer may do to the memory. */
#define EXS_ACCESS_READ 0x1  /* the memory is only sent from */
#define EXS_ACCESS_WRITE 0x2 /* data is received into it */

enum exs_evt_type {
	EXS_EVT_CONNECT = 1, /* exs_connect finished: status 0 or its errno */
	EXS_EVT_ACCEPT,      /* exs_accept: a connected socket in accept.fd */
	EXS_EVT_SEND,        /* exs_send(v): xfer.bytes were sent */
	EXS_EVT_RECV,        /* exs_recv(v): xfer.bytes arrived (0: end of stream) */
	EXS_EVT_SHUTDOWN,    /* exs_shutdown(SHUT_WR): the peer has all the data */
	EXS_EVT_CLOSE,       /* exs_close: the connection is torn down */
	EXS_EVT_RDMA,        /* exs_rdma_write or exs_rdma_read: xfer.bytes moved */
};

/* The event union's members, under the ES-API's type names. */
typedef struct exs_evt_accept {
	int fd; /* the new connected socket */
	struct sockaddr_storage addr;
	socklen_t addrlen;
} exs_evt_accept_t;

typedef struct exs_evt_xfer {
	void *buf;     /* the buffer (first iovec's) given */
	size_t len;    /* bytes asked for */
	ssize_t bytes; /* bytes moved */
	int flags;     /* RECV: MSG_TRUNC for a cut message */
} exs_evt_xfer_t;

typedef struct exs_event {
	int exs_evt_type;              /* enum exs_evt_type */
	int exs_evt_errno;             /* 0, or why the operation failed */
	exs_ahandle_t exs_evt_ahandle; /* the application's handle given to the call */
	int exs_evt_fd;                /* the socket the operation was made on */
	union {
		exs_evt_accept_t accept; /* EXS_EVT_ACCEPT */
		exs_evt_xfer_t xfer;     /* EXS_EVT_SEND, _RECV, _RDMA */
	} exs_evt_union;
} exs_event_t;

/*
 * exs_init - start the ES-API for this process.
 * @version: EXS_VERSION.
 *
 * Opens uwarp and starts the progress thread. Calling it again is
 * harmless. Returns 0, or -1 with errno: EINVAL (a version this library
 * does not provide), ENOMEM, or the errno of a failed system call.
 */
EXS_EXTERN int exs_init(int version);

/* ---- event queues ---- */

/*
 * exs_qcreate - create an event queue holding up to @depth events.
 *
 * Operations given the queue reserve their event's slot when they are
 * posted, so an event is never lost: a post that would overfill it fails
 * with EAGAIN. Returns the handle, or EXS_QHANDLE_INVALID with errno:
 * EINVAL (@depth < 1), ENOMEM.
 */
EXS_EXTERN exs_qhandle_t exs_qcreate(int depth);

/*
 * exs_qdelete - delete an event queue. Fails with EBUSY while operations
 * that will complete on it are outstanding or a thread waits in
 * exs_qdequeue on it. Returns 0 or -1 with errno (EBADF, EBUSY).
 */
EXS_EXTERN int exs_qdelete(exs_qhandle_t qhandle);

/*
 * exs_qresize - (uwarp extension) let the queue hold @depth events, more
 * or fewer, keeping the events queued in order: a program that takes
 * more connections gives their operations room this way. Returns 0 or -1
 * with errno: EBADF, EINVAL (@depth below the events queued and the slots
 * reserved by outstanding operations), ENOMEM (the queue unchanged).
 */
EXS_EXTERN int exs_qresize(exs_qhandle_t qhandle, int depth);

/*
 * exs_qdequeue - take events from a queue, oldest first.
 * @count: > 0: take up to @count events that are there now, not waiting;
 *         < 0: wait until -@count events are there (or @timeout passes)
 *         and take them;
 *         0: take nothing and return 0 at once (@events may be NULL), so
 *         that a program may ask for half of what it has outstanding.
 * @timeout: the longest wait (rounded up to whole milliseconds; zero:
 *         look without waiting), or NULL to wait for ever.
 *
 * A signal handler that runs during the wait ends it, as it ends a
 * blocking recv(2), whether or not the handler has SA_RESTART: -1 with
 * EINTR, unless the events came meanwhile; nothing is taken then.
 *
 * Returns the number of events taken (after a timeout, the ones that
 * came, perhaps 0), or -1 with errno: EBADF (not a queue), EINVAL
 * (-@count more than the queue can ever hold, a bad @timeout, @events
 * NULL), EINTR, or EMFILE (no descriptor for this thread's first wait).
 */
EXS_EXTERN int exs_qdequeue(exs_qhandle_t qhandle, exs_event_t *events, int count,
			    const struct timespec *timeout);

/*
 * exs_qnotify - call @fn(@qhandle, @arg) on the progress thread (or on a
 * thread waiting in exs_ppoll_here) soon after events arrive on the queue
 * (at least once after any arrival, one call at a time; NULL: no more
 * calls). A uwarp extension for libraries that react to completions
 * without a thread of their own waiting in exs_qdequeue. @fn runs with no
 * ES-API lock held and may make any call that does not wait: exs_qdequeue
 * with @count > 0, and calls with a queue; a call that would wait there
 * would stop every socket's progress. A queue with a notification cannot
 * be deleted (EBUSY). Returns 0 or -1 with errno EBADF.
 */
typedef void (*exs_qnotify_fn)(exs_qhandle_t qhandle, void *arg);
EXS_EXTERN int exs_qnotify(exs_qhandle_t qhandle, exs_qnotify_fn fn, void *arg);

/*
 * exs_poll - poll(2) over ES-API sockets, event queues and ordinary file
 * descriptors at once. For an ES-API socket: POLLIN when a receive would
 * find data waiting (stream), the peer has finished sending, or (listener)
 * a connection waits to be accepted; POLLOUT when it is connected and a
 * send can be posted; POLLHUP when its connection is gone; POLLERR after a
 * failure. For a queue: POLLIN when it holds events. Other descriptors go
 * to poll(2). Returns the number of ready entries, 0 on timeout, or -1
 * with errno.
 */
EXS_EXTERN int exs_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms);

/*
 * exs_ppoll_here - (uwarp extension) ppoll(2) on ordinary descriptors that
 * makes the ES-API's progress on the calling thread while it waits, as
 * the progress thread would: connection events, completions, and the
 * notifications of exs_qnotify run here, so a library whose readiness
 * follows its completions (esock) wakes a waiting program with no thread
 * between. It spins for up to UWARP_SPIN_US (20 us) before it sleeps.
 * Returns as ppoll(2) does. Before exs_init, or from a notification, it
 * is ppoll(2). The ES-API's own waits (exs_qdequeue, exs_poll, the calls
 * without a queue) sleep instead and leave the data to the progress
 * thread, which then reads a bulk stream while the program posts its
 * receives (docs/performance.md, "The ES-API's own waits").
 */
EXS_EXTERN int exs_ppoll_here(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
			      const sigset_t *mask);

/*
 * exs_ppoll_here_until - (uwarp extension) exs_ppoll_here that also
 * returns 0 as soon as @ready(@arg) returns non-zero. @ready is called
 * after each round of progress, and once more just before a sleep with
 * the ES-API's lock held, so it must only look (esock reads a count of the
 * DDP sockets it has queued as readable, in user space, for an epoll set).
 * Another thread that makes it ready must wake the sleeper through one of
 * @fds.
 */
EXS_EXTERN int exs_ppoll_here_until(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
				    const sigset_t *mask, int (*ready)(void *), void *arg);

/* ---- memory ---- */

/*
 * exs_mregister - register memory for sends and receives.
 * @access: EXS_ACCESS_READ for send buffers, EXS_ACCESS_WRITE (or both)
 *          for receive buffers, which the peer writes into directly; 0 (the
 *          ES-API's flags 0) is both.
 *
 * A handle works with every socket of the process. Memory given without a
 * handle (EXS_MHANDLE_INVALID) is registered for the operation and
 * released when it completes. Returns the handle, or EXS_MHANDLE_INVALID
 * with errno: EINVAL (NULL, zero length, unknown access), ENOMEM.
 */
EXS_EXTERN exs_mhandle_t exs_mregister(const void *addr, size_t len, int access);

/*
 * exs_mderegister - release a registration; *@mh becomes
 * EXS_MHANDLE_INVALID. Fails with EBUSY while an outstanding operation
 * uses it. Returns 0 or -1 with errno (EINVAL, EBUSY).
 */
EXS_EXTERN int exs_mderegister(exs_mhandle_t *mh);

/* ---- sockets ---- */

/*
 * exs_socket - an ES-API socket: @domain AF_INET or AF_INET6, @type
 * SOCK_STREAM or SOCK_SEQPACKET, @protocol 0. Returns its descriptor, or
 * -1 with errno: EAFNOSUPPORT, EPROTOTYPE (another type), EPROTONOSUPPORT,
 * ENOMEM, EMFILE.
 */
EXS_EXTERN int exs_socket(int domain, int type, int protocol);

/*
 * exs_bind - the local address (port 0 picks one when it listens; read it
 * with exs_getsockname). Returns 0 or -1 with errno (EBADF, EINVAL: already
 * bound or connected, or a bad address).
 */
EXS_EXTERN int exs_bind(int fd, const struct sockaddr *addr, socklen_t addrlen);

/*
 * exs_listen - accept connections on the bound address (every address,
 * port 0, if not bound); at most @backlog connected sockets wait to be
 * accepted, further requests are refused. Returns 0 or -1 with errno
 * (EBADF, EINVAL, EADDRINUSE).
 */
EXS_EXTERN int exs_listen(int fd, int backlog);

/*
 * exs_accept - take the next connection on a listening socket.
 *
 * With a queue: returns 0; an EXS_EVT_ACCEPT event brings the new socket
 * (accept.fd) and the peer's address. Without: waits and returns the new
 * socket, filling @addr/@addrlen as accept(2). The new socket inherits the
 * listener's type and options. Returns -1 with errno: EBADF, EINVAL (not
 * listening), EAGAIN (too many accepts outstanding), or the error of the
 * connection.
 */
EXS_EXTERN int exs_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, exs_qhandle_t qhandle,
			  exs_ahandle_t ahandle);

/*
 * exs_connect - connect to a listening ES-API socket (TCP, then the MPA
 * negotiation, then the ES-API hello that agrees the type and the stream
 * mode). With a queue: returns 0 and completes with EXS_EVT_CONNECT.
 * Without: waits. Errors (returned, or the event's status): EBADF, EISCONN
 * (also after a failed connect: close the socket and make a new one),
 * EALREADY, ECONNREFUSED (nobody listens, or the peer refused: another
 * socket type), ETIMEDOUT (TCP did not come up in time: see SO_SNDTIMEO),
 * ETIME (TCP came up but the peer sent no MPA Reply in time: not an
 * iWARP peer, or its program did not accept), EPROTO (not an ES-API peer:
 * its answer is not MPA, or not the ES-API's hello), ECONNRESET (the peer
 * closed before answering), ENOBUFS (EXS_MAX_CONNECTIONS connections in
 * this process).
 */
EXS_EXTERN int exs_connect(int fd, const struct sockaddr *addr, socklen_t addrlen,
			   exs_qhandle_t qhandle, exs_ahandle_t ahandle);

/*
 * uwarp extensions: ES-API connections over TCP sockets the program made
 * itself (what esock, the extended sockets library, is built on).
 *
 * exs_connect_fd - as exs_connect, over @tcp_fd: a TCP socket that is
 * connected, or connecting without blocking. On success (the call
 * returned 0, whatever the connection's outcome) uwarp owns @tcp_fd and
 * closes it with the connection; on a failure returned at once the caller
 * keeps it. The peer must be an ES-API socket that takes it with
 * exs_listen/exs_accept or exs_accept_fd.
 *
 * exs_listen_handoff - make @fd a listener with no TCP socket of its own:
 * its connections are the accepted TCP sockets given to exs_accept_fd,
 * and they are taken with exs_accept as usual (in the order their
 * negotiation finishes). @backlog as exs_listen.
 *
 * exs_accept_fd - give an accepted TCP socket whose peer sends an MPA
 * Request (the program may have peeked at its first bytes) to listener
 * @fd. On 0 uwarp owns @tcp_fd: a peer that does not complete the
 * negotiation within the MPA timeout is closed and never accepted; on -1
 * the caller keeps it. Errors: EBADF, EINVAL (not listening, or not a TCP
 * socket).
 */
EXS_EXTERN int exs_connect_fd(int fd, int tcp_fd, exs_qhandle_t qhandle, exs_ahandle_t ahandle);
EXS_EXTERN int exs_listen_handoff(int fd, int backlog);
EXS_EXTERN int exs_accept_fd(int fd, int tcp_fd);

/*
 * One-sided operations (uwarp extensions).
 *
 * exs_expose - give the connection's peer access to [@addr, @addr + @len)
 * of registered memory @mh: @access EXS_REMOTE_READ and/or
 * EXS_REMOTE_WRITE (which needs a region registered with
 * EXS_ACCESS_WRITE). Fills @out with what the peer needs (send it to the
 * peer by any means): a window bound for this connection alone, valid
 * until exs_unexpose or the socket closes; the region cannot be
 * deregistered meanwhile. Errors: EBADF, EINVAL, ENOTCONN, EFAULT (not
 * inside @mh), EACCES, ENOMEM.
 *
 * exs_rdma_write, exs_rdma_read - move @len bytes between @buf (@mh a
 * registration covering it, or EXS_MHANDLE_INVALID) and the peer's
 * exposed memory @r at offset @off, without the peer's program taking
 * part. They go after the stream's sends already posted. With a queue:
 * returns 0; EXS_EVT_RDMA follows. Without: waits and returns @len.
 * Errors: EBADF, EINVAL (beyond @r, or zero length), EFAULT, ENOTCONN,
 * EAGAIN (the connection's send queue is full); completion errors: EACCES
 * (the peer refused the key: the connection then ends, as RDMAP
 * requires), ECONNRESET.
 */
#define EXS_REMOTE_READ 0x1
#define EXS_REMOTE_WRITE 0x2
struct exs_remote {
	uint64_t addr; /* the exposed memory's address, in the peer's terms */
	uint64_t len;
	uint32_t stag; /* its key */
	uint32_t reserved;
};
EXS_EXTERN int exs_expose(int fd, exs_mhandle_t mh, const void *addr, size_t len, int access,
			  struct exs_remote *out);
EXS_EXTERN int exs_unexpose(int fd, const struct exs_remote *r);
EXS_EXTERN ssize_t exs_rdma_write(int fd, const void *buf, size_t len, exs_mhandle_t mh,
				  const struct exs_remote *to, uint64_t off, exs_qhandle_t qhandle,
				  exs_ahandle_t ahandle);
EXS_EXTERN ssize_t exs_rdma_read(int fd, void *buf, size_t len, exs_mhandle_t mh,
				 const struct exs_remote *from, uint64_t off, exs_qhandle_t qhandle,
				 exs_ahandle_t ahandle);

/*
 * exs_set_fd_floor - descriptors the ES-API opens from now on (its sockets,
 * queues) are numbered @floor or above where the process has room, so a
 * library running under a program keeps out of the numbers the program
 * expects (select(2) sets, event loops sized by their connections). 0, the
 * default: the lowest free numbers.
 */
EXS_EXTERN void exs_set_fd_floor(int floor);

/*
 * exs_set_fd_claim - @claimed(fd) says whether a library above the ES-API
 * (esock) carries that descriptor itself, over DDP: the ES-API's calls
 * then leave it alone (EOPNOTSUPP) rather than take it for a plain TCP
 * socket. NULL: none does (the default).
 */
EXS_EXTERN void exs_set_fd_claim(int (*claimed)(int fd));

/*
 * exs_set_fd_carrier - how that library carries the ES-API's calls on the
 * descriptors it claims: @send and @recv start a transfer and return 0,
 * or an errno value the call then fails with; the library ends each one
 * it started exactly once, from any thread, with exs_carried_done(@op,
 * status, bytes) (status 0 or an errno value). The others are the socket
 * calls it provides for such descriptors (0, or -1 with errno), which
 * exs_shutdown, exs_close, the option and the name calls make at once.
 * poll(2) readiness is the descriptor's own. NULL (the default): the
 * calls fail with EOPNOTSUPP.
 */
struct exs_fd_carrier {
	int (*send)(int fd, const struct iovec *iov, int iovcnt, const exs_mhandle_t *mh, void *op);
	int (*recv)(int fd, const struct iovec *iov, int iovcnt, int flags, void *op);
	int (*shutdown)(int fd, int how);
	int (*close)(int fd);
	int (*getsockopt)(int fd, int level, int name, void *val, socklen_t *len);
	int (*setsockopt)(int fd, int level, int name, const void *val, socklen_t len);
	int (*getsockname)(int fd, struct sockaddr *addr, socklen_t *len);
	int (*getpeername)(int fd, struct sockaddr *addr, socklen_t *len);
};
EXS_EXTERN void exs_set_fd_carrier(const struct exs_fd_carrier *carrier);
EXS_EXTERN void exs_carried_done(void *op, int status, size_t bytes);

/*
 * exs_send - send @len bytes from @buf.
 * @flags: 0 (MSG_NOSIGNAL and MSG_DONTWAIT are accepted and change nothing:
 *         ES-API calls never raise SIGPIPE and never block with a queue).
 * @mhandle: a registration covering the buffer, or EXS_MHANDLE_INVALID.
 *
 * The buffer must stay untouched until the operation completes. With a
 * queue: returns 0; EXS_EVT_SEND follows with xfer.bytes = @len. Without:
 * waits and returns @len. SOCK_SEQPACKET: one message, written into the
 * receive the peer advertised; if that receive is smaller the message is
 * cut (the sender still sees @len, the receiver MSG_TRUNC). Messages are
 * at most EXS_MSG_MAX bytes. SOCK_STREAM: bytes of the stream; a zero
 * length completes at once. Returns -1 with errno: EBADF, ENOTCONN, EPIPE
 * (after exs_shutdown(SHUT_WR)), EAGAIN (EXS_MAX_SENDS outstanding, or the
 * queue is full), EFAULT (@mhandle does not cover the buffer; without a
 * handle, part of the buffer is not mapped), EINVAL (@len above SSIZE_MAX),
 * EMSGSIZE. The same for exs_sendv, exs_recv and exs_recvv (their totals).
 * Completion errors: ECONNRESET (the connection failed), ECANCELED (the
 * socket closed first), EPROTO (the peer broke the protocol).
 */
EXS_EXTERN ssize_t exs_send(int fd, const void *buf, size_t len, int flags, exs_qhandle_t qhandle,
			    exs_ahandle_t ahandle, exs_mhandle_t mhandle);

/*
 * exs_recv - receive into @buf (@len bytes at most).
 * @flags: MSG_WAITALL (stream): complete only when @len bytes arrived or the
 *         stream ended; without it a receive completes with what has
 *         arrived once anything has. MSG_MORE (uwarp's): the program sends
 *         on this socket next, so the receive's advert may wait and leave
 *         with that send, in one TCP segment (a server that reposts its
 *         request's buffer before the reply). It waits for the program's
 *         next exs_send or exs_sendv, or its next wait in the ES-API, and
 *         about a millisecond at most.
 *
 * SOCK_STREAM: one send may fill several receives and one receive may
 * hold the bytes of several sends. SOCK_SEQPACKET: one message per
 * receive; a longer message is cut to @len and the event's xfer.flags has
 * MSG_TRUNC (the rest is lost, as recv(2) on a datagram). A completion
 * with 0 bytes is the end of the stream (the peer shut down or closed).
 * With a queue: returns 0; EXS_EVT_RECV follows. Without: waits and
 * returns the byte count. Errors as exs_send; EAGAIN when EXS_MAX_RECVS
 * are outstanding.
 */
EXS_EXTERN ssize_t exs_recv(int fd, void *buf, size_t len, int flags, exs_qhandle_t qhandle,
			    exs_ahandle_t ahandle, exs_mhandle_t mhandle);

/*
 * exs_sendv, exs_recvv - as exs_send and exs_recv over @iovcnt buffers
 * (at most EXS_IOV_MAX), one registration handle per buffer (@mh NULL: none
 * registered). A send gathers them; a receive of more than one buffer is
 * received contiguously and scattered by one copy on completion.
 */
EXS_EXTERN ssize_t exs_sendv(int fd, const struct iovec *iov, int iovcnt, int flags,
			     exs_qhandle_t qhandle, exs_ahandle_t ahandle, const exs_mhandle_t *mh);
EXS_EXTERN ssize_t exs_recvv(int fd, const struct iovec *iov, int iovcnt, int flags,
			     exs_qhandle_t qhandle, exs_ahandle_t ahandle, const exs_mhandle_t *mh);

/*
 * exs_shutdown - SHUT_WR: after the sends already posted, the stream ends
 * (the peer's receives complete with 0 bytes once they have everything);
 * further sends fail with EPIPE. Completes (EXS_EVT_SHUTDOWN, or returns
 * without a queue) when the peer has every byte. SHUT_RD: outstanding
 * receives complete with ECANCELED, except those the peer may already be
 * writing into (advertised to it), which complete as usual; further ones
 * complete with 0 bytes. SHUT_RDWR: both. Returns 0 or -1 with errno
 * (EBADF, ENOTCONN, EINVAL, EALREADY: a SHUT_WR is already under way, or
 * done and asked for again with a queue).
 */
EXS_EXTERN int exs_shutdown(int fd, int how, exs_qhandle_t qhandle, exs_ahandle_t ahandle);

/*
 * exs_close - close the socket: its descriptor is free at once.
 * Outstanding receives and accepts complete with ECANCELED (receives the
 * peer may be writing into: when the connection is torn down); sends
 * already posted still go, then the stream ends and, once the peer has
 * confirmed it has every byte (at most EXS_LINGER_MS), the connection is
 * torn down: EXS_EVT_CLOSE on the queue (status 0, or ETIMEDOUT /
 * ECONNRESET when sends posted before the close were lost with the
 * connection), or the call waits for it without one and returns that
 * status (-1 with errno; the descriptor is gone either way). Fails, and
 * leaves the socket open, with EBADF (closed already, or @qhandle not a
 * queue), ENOTSOCK (not a socket) or EAGAIN (the queue is full).
 */
EXS_EXTERN int exs_close(int fd, exs_qhandle_t qhandle, exs_ahandle_t ahandle);

/* exs_getsockname, exs_getpeername - as getsockname(2), getpeername(2). */
EXS_EXTERN int exs_getsockname(int fd, struct sockaddr *addr, socklen_t *addrlen);
EXS_EXTERN int exs_getpeername(int fd, struct sockaddr *addr, socklen_t *addrlen);

/* ---- options (level SOL_EXS) ---- */

#define SOL_EXS 0x45585301 /* "EXS" 1: no clash with the kernel's levels */
/*
 * DDP mode for a stream socket the system made (socket(2) + connect(2)),
 * as esock.h names it: exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one,
 * sizeof one). The ES-API's calls on it then run over MPA and the dynamic
 * stream protocol to a uwarp or esock peer (docs/exs.md, "DDP mode").
 */
#define SOL_ESOCK 0x45534b01 /* "ESK" 1 (esock.h's) */
#define ESOCK_DDPMODE 1      /* int: 1 DDP mode, 0 plain TCP */

/* int, SOCK_STREAM, set before connect or listen (accepted sockets take
 * the listener's): how sends move. The connecting side's mode governs the
 * connection; read the agreed one back after connecting. */
#define EXS_SO_STREAM_MODE 1
enum exs_stream_mode {
	EXS_MODE_DYNAMIC = 0,  /* the dynamic protocol (default) */
	EXS_MODE_DIRECT = 1,   /* direct transfers only: a send waits for an advert */
	EXS_MODE_INDIRECT = 2, /* indirect only: the receiver never advertises */
	EXS_MODE_PAPER = 3,    /* the dynamic protocol exactly as MacArthur and
				* Russell give it (IPDPS 2014; docs/exs.md) */
};
/* struct exs_stream_counters, read only: what this socket did. */
#define EXS_SO_COUNTERS 2
struct exs_stream_counters {
	uint64_t direct;       /* transfers sent straight into the peer's receives */
	uint64_t indirect;     /* transfers sent into the peer's hidden ring */
	uint64_t switches;     /* changes between the two while sending */
	uint64_t discarded;    /* adverts received that could not be used */
	uint64_t adverts;      /* adverts this socket sent */
	uint64_t copied;       /* bytes it copied out of its own ring */
	uint64_t rx_direct;    /* direct transfers it received */
	uint64_t rx_indirect;  /* indirect transfers it received */
	uint64_t ring_used;    /* bytes of its ring the copied data took up
			      * (whole slots with EXS_FLOW_CREDIT): copied /
			      * ring_used is the ring's utilisation */
	uint64_t coalesced;    /* sends copied into a coalescing buffer */
	uint64_t flushes;      /* coalescing buffers sent */
	uint64_t sendbuf;      /* bytes copied into EXS_FLOW_CREDIT's send buffers */
	uint64_t ring_held;    /* data in its ring now, arrived and not yet copied
			       * out: sampled over time, the SDP paper's buffer
			       * utilisation (divided by EXS_SO_RING_SIZE) */
	uint64_t holds;        /* sends that waited for the peer (EXS_RULE_HOLD) */
	uint64_t adverts_held; /* the peer's adverts it holds now, not yet used */
};
/* (A caller built with an older, shorter struct gets its fields.) */
/* int, bytes, set before connect or listen: the hidden receive ring
 * (SOCK_STREAM; default 1 MiB, at least 4 KiB, at most 256 MiB). */
#define EXS_SO_RING_SIZE 3
/* int, set before connect: 1 to use RDMA Write followed by a Send for
 * every transfer instead of Write with Immediate Data (the way to peers
 * without RFC 7306; uwarp peers negotiate Immediate Data by default). */
#define EXS_SO_NO_IMMEDIATE 4
/* int, read only: 1 when the connection uses Immediate Data. */
#define EXS_SO_IMMEDIATE 5
/* int, set before connect or listen: 1 asks for MPA CRC (default), 0 not. */
#define EXS_SO_CRC 6
/* int, SOCK_STREAM, set before connect or listen (accepted sockets take
 * the listener's): the flow control of this socket's indirect sends, the
 * three schemes of Balaji, Bhagvat, Panda, Thakur and Gropp's SDP paper.
 * Each direction has its own; the receiver learns the sender's at
 * connection time. */
#define EXS_SO_FLOW 7
enum exs_flow {
	/* RDMA-based with asynchronous progress (default): the sender manages
	 * the peer's ring as one packed buffer; while a send waits (no room,
	 * no credit, no advert), small sends (at most 16 KiB) are copied into
	 * a coalescing buffer (two of 64 KiB) and complete at once, and the
	 * progress thread writes the buffer out as soon as room comes. */
	EXS_FLOW_RDMA_AUTO = 0,
	/* RDMA-based without it: as above, but the sending side of the
	 * protocol (writing what waits when room comes) runs only while the
	 * application is inside an ES-API call: posting, dequeueing, polling
	 * or waiting. What a computing application left waiting stays put. */
	EXS_FLOW_RDMA = 1,
	/* Credit-based: the peer's ring is cut into fixed slots of
	 * EXS_SO_CREDIT_SIZE bytes (at most 256 of them), one credit each;
	 * every send of up to a slot takes one whole slot, longer ones one per
	 * slot's worth; nothing is coalesced. */
	EXS_FLOW_CREDIT = 2,
};
/* int, bytes, a power of two from 512 to 1 MiB, set before connect or
 * listen: EXS_FLOW_CREDIT's slot size (default 8 KiB; a slot is never
 * larger than the peer's ring). */
#define EXS_SO_CREDIT_SIZE 8
/* int, milliseconds, at any time until the connection ends (accepted
 * sockets take the listener's; set on a connection, it counts from the
 * call): no whole frame from the peer for this long (a part of one counts
 * as nothing) ends the connection, and its operations complete with
 * ETIMEDOUT (0: no limit, the default). A uwarp extension. */
#define EXS_SO_IDLE_MS 9
/* int, seconds, at any time until the connection ends (accepted sockets
 * take the listener's): TCP keepalive under the connection, the first
 * probe after this many idle seconds, then every third of it, three
 * unanswered ending it (0: off, the default; at most 32767, Linux's
 * limit). A uwarp extension. */
#define EXS_SO_KEEPALIVE 10
/* int, SOCK_STREAM in EXS_MODE_DYNAMIC, at any time until the connection
 * ends (accepted sockets take the listener's): which of uwarp's own rules
 * this socket follows where it departs from the paper's (docs/exs.md,
 * "Compared with the paper"): three on its receiving side, one on its
 * sending side; default EXS_RULES_DEFAULT. Turning one off or on measures
 * what it buys. They decide when adverts, ring acknowledgements and
 * transfers go, never where data may land. On a connected socket
 * getsockopt says the rules in force: the hold only when the peer's
 * ES-API understands it (a uwarp from before it does not; the connection
 * then goes without). A uwarp extension. */
#define EXS_SO_RULES 11
enum exs_rule {
	EXS_RULE_CHAIN = 1,     /* an advert behind a receive that may complete
				 * short follows that receive's transfer */
	EXS_RULE_PROBE = 2,     /* after adverts died, one at a time until the
				 * sender uses one */
	EXS_RULE_ACK_EMPTY = 4, /* the ring's room goes back only once it is
				 * empty, after the adverts */
	EXS_RULE_HOLD = 8,      /* sending: after a direct transfer, no ring
				 * until the receiver says it has no receive */
	EXS_RULES_ALL = 15,
	/* the default: the probe measured to buy nothing (docs/exs.md) */
	EXS_RULES_DEFAULT = EXS_RULE_CHAIN | EXS_RULE_ACK_EMPTY | EXS_RULE_HOLD,
};

/*
 * exs_getsockopt, exs_setsockopt - the options above (level SOL_EXS), and
 * at level SOL_SOCKET: SO_TYPE, SO_ERROR (read and cleared), SO_RCVBUF
 * (the ring size) and, to set, SO_SNDTIMEO (struct timeval: how long
 * exs_connect waits for TCP and the peer's MPA answer before ETIMEDOUT or
 * ETIME; default 3 s, or UWARP_MPA_REPLY_MS). Returns 0 or -1 with errno: EBADF,
 * ENOPROTOOPT, EINVAL (bad length or value), EISCONN (too late to set),
 * ENOTCONN (the connection has ended).
 */
EXS_EXTERN int exs_getsockopt(int fd, int level, int optname, void *optval, socklen_t *optlen);
EXS_EXTERN int exs_setsockopt(int fd, int level, int optname, const void *optval, socklen_t optlen);

/* Limits. */
#define EXS_MAX_SENDS 256 /* outstanding sends per socket */
#define EXS_MAX_RECVS 64  /* outstanding receives per socket */
#define EXS_IOV_MAX 16
#define EXS_MSG_MAX ((1u << 30) - 1) /* a SOCK_SEQPACKET message */
#define EXS_LINGER_MS 10000
/* per process: the most the completion queue they share can grow to hold
 * (the descriptor limit, two per connection, usually comes first) */
#define EXS_MAX_CONNECTIONS 29127

#ifdef __cplusplus
}
#endif

#endif /* UWARP_EXS_H */
