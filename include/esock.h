/*
 * esock.h - extended sockets: ordinary TCP sockets carried over DDP.
 *
 * A TCP socket switched to DDP mode negotiates MPA (RFC 5044) on its
 * connection and carries the byte stream as RDMAP transfers (uwarp's
 * ES-API stream, include/exs.h) instead of bare TCP segments. The program
 * keeps using the ordinary socket calls on the same descriptor.
 *
 * Two libraries provide the calls (they replace the C library's socket,
 * connect, listen, accept, read, write, poll-able descriptors and the rest
 * by symbol interposition, so existing code needs no change):
 *   libesock.so          linked into a program: sockets switch only with
 *                        setsockopt(SOL_ESOCK, ESOCK_DDPMODE);
 *   libesock-preload.so  for LD_PRELOAD: also selects sockets through the
 *                        environment variable ESOCK_DDPMODE:
 *                          all            every TCP socket (any case);
 *                          PORT[,PORT...] a socket whose local or remote
 *                                         port is listed (up to 64, with
 *                                         commas and/or spaces between);
 *                          unset, empty   none.
 *                        A value it cannot read selects none and is said
 *                        in one line on stderr.
 * Sockets not in DDP mode go straight to the C library.
 *
 * ENVIRONMENT
 *   ESOCK_DDPMODE   as above (libesock-preload.so only).
 *   ESOCK_PEEK_MS   how long a DDP-mode server waits for an accepted
 *                   client's first bytes before it decides the client is a
 *                   plain TCP one (default 200; protocols where the server
 *                   speaks first wait this long once per connection).
 *   ESOCK_CRC       "off": MPA connections this process makes or accepts
 *                   go without CRC32c (both ends must agree; default on).
 *   ESOCK_MODE      the ES-API stream mode under the sockets: "direct"
 *                   (default: every transfer lands in a receive buffer the
 *                   library keeps posted ahead, no copy out of a ring),
 *                   "dynamic" or "indirect" (for experiments).
 *   ESOCK_IDLE_MS   a DDP connection that receives no whole frame for
 *                   this many milliseconds ends (a peer stuck in the middle
 *                   of one, or silent): calls on it then fail with
 *                   ETIMEDOUT (default 0: no limit, as TCP). The option of
 *                   the same name (SOL_ESOCK, below) sets it per socket or
 *                   per listener. TCP keepalive
 *                   is set the usual way (SO_KEEPALIVE, TCP_KEEPIDLE, ...)
 *                   and acts on the connection underneath.
 *   ESOCK_DEBUG     set: each DDP connection's transfer counters are
 *                   printed to stderr when the program closes it.
 *   ESOCK_VERBOSE   1: one line on stderr, at the process's first socket
 *                   decision, says which sockets ESOCK_DDPMODE selects
 *                   (libesock-preload.so only), and one per connection
 *                   says whether it went DDP or plain TCP, and why.
 *   ESOCK_FALLBACK  "on" (default): a client whose server does not speak
 *                   iWARP falls back to plain TCP (below); "off": its
 *                   connect fails with ECONNREFUSED (or ECONNRESET).
 *   ESOCK_REPLY_MS  how long a client waits for the server's MPA Reply
 *                   before it decides the server is not iWARP (default
 *                   2000; 1 to 600000).
 *
 * SEMANTICS
 *   Connecting: connect(2) on a DDP-mode socket makes the TCP connection,
 *   then the MPA negotiation; a blocking connect returns when both are
 *   done, a non-blocking one returns EINPROGRESS and the socket turns
 *   writable (SO_ERROR 0 or the error) as TCP's does.
 *   A server that does not speak iWARP (it sends no MPA Reply within
 *   ESOCK_REPLY_MS, answers with other bytes, or hangs up) gets a plain
 *   TCP connection instead: the first connection, which carried the MPA
 *   Request, is ended, and a new one is made with the first one's TCP
 *   options (TCP_NODELAY, keepalive, buffer sizes, ...) and put under the
 *   program's descriptor, with its epoll registrations, by the program's
 *   next call on it (the wait for the Reply ends with the socket readable
 *   and writable so that the call comes); a blocking connect returns 0
 *   on it. Connections to that address and port are then plain at once
 *   for 60 s. The cost: the first connection waits ESOCK_REPLY_MS for a
 *   silent server (a round trip for one that answers or hangs up), and
 *   the server sees one aborted connection holding the MPA Request's
 *   bytes. A socket the program bound to a port of its own gets a new
 *   one. With ESOCK_FALLBACK=off the connection fails with ECONNREFUSED
 *   (or ECONNRESET) instead. A server that rejects in MPA terms (it is
 *   iWARP) and a TCP connection that never comes up fail as they are.
 *
 *   Accepting: a DDP-mode listener sorts its clients in the background.
 *   A client whose first 16 bytes are the MPA Request key ("MPA ID Req
 *   Frame") is negotiated there and becomes a DDP socket; any other client
 *   (or one silent for ESOCK_PEEK_MS) is the plain TCP socket it is. The
 *   listener turns readable, and accept returns a client, only once that
 *   client is ready: accept never waits for a client's first bytes or its
 *   negotiation, and a client whose negotiation fails is dropped without
 *   the program seeing it. Blocking and non-blocking accept, accept4's
 *   flags, SO_RCVTIMEO, EINTR and readiness in every poll, select and
 *   epoll mode are as on a TCP listener; getsockname and TCP options act
 *   on the TCP listener. The listener's descriptor is then an AF_UNIX
 *   listener to fstat(2) and to calls this library does not replace.
 *   fork: a DDP-mode listener the program has not yet accepted from (a
 *   prefork server's, accepted from in its children) becomes the TCP
 *   listener again in parent and child; each process that then waits on
 *   it (poll, ppoll, select, pselect, epoll_ctl adding it) or accepts from
 *   it makes it its own DDP-mode listener again, sorted as above (accept
 *   may then fail with the errno of that step: EMFILE, ENOMEM). A process
 *   that never touches it takes no clients. One already accepted from
 *   stays as it is in the parent; a child's accept on it gets plain TCP.
 *
 *   Switching a connected socket: setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE,
 *   &one, sizeof one) on a connected TCP socket switches it at that point;
 *   both ends must make the call, with no bytes in flight between them
 *   (e.g. after a request and its reply). The end with the lower
 *   (address, port) sends the MPA Request. The call returns when the
 *   negotiation is done (0) or has failed (-1, errno).
 *
 *   Everything else behaves as on a TCP socket: blocking and non-blocking
 *   I/O (O_NONBLOCK, MSG_DONTWAIT), read/write/readv/writev/send/recv/
 *   sendto/recvfrom/sendmsg/recvmsg/sendmmsg/recvmmsg with MSG_PEEK,
 *   MSG_WAITALL, MSG_WAITFORONE, MSG_NOSIGNAL (otherwise a write after the
 *   stream ended raises SIGPIPE and fails with EPIPE), shutdown (half
 *   close), SO_ERROR, SO_RCVTIMEO and SO_SNDTIMEO, FIONREAD, SIOCOUTQ,
 *   fcntl and ioctl flags, dup, dup2, dup3, F_DUPFD, sendfile, C library
 *   streams (fdopen, fileno), getsockname, getpeername, and readiness
 *   through poll, ppoll, select, pselect and epoll in every mode (data
 *   already in user space counts as readable). TCP-level options
 *   (TCP_NODELAY, TCP_INFO, ...) and socket buffer sizes act on the TCP
 *   connection underneath.
 *
 *   The ES-API's calls (exs.h) on a DDP socket go through esock too: its
 *   sends and receives in order with write(2)'s and read(2)'s, completing
 *   through the ES-API's event queues.
 *
 *   Differences that remain: the descriptor is an AF_UNIX socket to
 *   fstat(2) and to calls this library does not replace (splice, tee,
 *   io_uring, raw system calls); a failed connection reports POLLHUP
 *   without POLLERR (SO_ERROR and the next call report the error);
 *   MSG_OOB is refused (EOPNOTSUPP).
 *
 *   fork: the engine that carries DDP sockets runs in the process that
 *   made its first DDP connection. A child forked after that can close
 *   inherited DDP sockets (the parent's connection is untouched) but every
 *   other call on them fails with ENOTCONN (EPIPE for writes), and DDP
 *   sockets it would make or accept fail the same way; plain sockets are
 *   unaffected. A child forked before any DDP connection (a server's
 *   worker processes forked after listen) starts its own engine.
 *
 *   Limits: at most EXS_MAX_CONNECTIONS (exs.h) DDP connections per
 *   process (the descriptor limit usually comes first: each takes the
 *   TCP socket and a copy, a socket pair, the program's number and the
 *   ES-API socket's); descriptors numbered ESOCK_FD_MAX or above stay
 *   plain.
 */
#ifndef UWARP_ESOCK_H
#define UWARP_ESOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* The option level and name: values no kernel level uses. */
#define SOL_ESOCK 0x45534b01 /* "ESK" 1 */
#define ESOCK_DDPMODE 1      /* int: 1 DDP mode, 0 plain (getsockopt: current) */
/* int, milliseconds (0: none): a DDP connection that receives no whole
 * frame for this long ends, and calls on it fail with ETIMEDOUT. On a DDP
 * socket it holds from the call; on a DDP-mode listener (after listen), for
 * each client accept gives from then on (in place of ESOCK_IDLE_MS, the
 * process's default, which getsockopt reports until it is set). Any other
 * socket: EOPNOTSUPP (set it after connect or listen). */
#define ESOCK_IDLE_MS 2

#include <stddef.h>
#include <stdint.h>

#define ESOCK_EXTERN __attribute__((visibility("default")))

/*
 * esock_is_ddp - whether @fd is a socket carried over DDP now.
 * Returns 1, 0 (any other descriptor), or -1 with errno EBADF.
 */
ESOCK_EXTERN int esock_is_ddp(int fd);

/*
 * EXTENDED CALLS
 *
 * On a socket in DDP mode a program may also use RDDP itself: registered
 * memory, asynchronous sends and receives, and one-sided writes and reads
 * into memory the peer has exposed. Every call fails with EOPNOTSUPP on a
 * socket that is not carried over DDP, EBADF on a descriptor that is not a
 * socket or completion queue, and ENOTCONN once the connection is gone.
 *
 * Completions go to a completion queue, a descriptor that poll, select and
 * epoll report readable while completions wait in it. A posted operation
 * reserves its completion's place in the queue when it is posted (EAGAIN
 * when the queue is full), so no completion is ever lost, and every posted
 * operation completes: with its result, or with an error when the
 * connection fails or the socket is closed (ECANCELED, ECONNRESET).
 * Buffers must stay untouched until their operation completes.
 */

/* esock_mr_reg access flags */
#define ESOCK_ACCESS_LOCAL 0x1        /* sent from and received into */
#define ESOCK_ACCESS_REMOTE_READ 0x2  /* may be exposed for the peer to read */
#define ESOCK_ACCESS_REMOTE_WRITE 0x4 /* may be exposed for the peer to write */

typedef struct esock_mr *esock_mr_t;

/*
 * esock_mr_reg - register [@addr, @addr + @len) for the calls below (a
 * buffer given without a registration, NULL, is registered for its one
 * operation). Returns the registration, or NULL with errno: EINVAL,
 * ENOMEM. esock_mr_dereg releases it: 0, or -1 with EBUSY while an
 * operation or an exposure uses it.
 */
ESOCK_EXTERN esock_mr_t esock_mr_reg(void *addr, size_t len, int access);
ESOCK_EXTERN int esock_mr_dereg(esock_mr_t mr);

/*
 * esock_cq_create - a completion queue holding up to @depth completions.
 * Returns its descriptor (readable while completions wait), or -1 with
 * errno: EINVAL, ENOMEM, EMFILE. esock_cq_destroy closes it: 0, or -1 with
 * EBUSY while operations will still complete on it.
 */
ESOCK_EXTERN int esock_cq_create(int depth);
ESOCK_EXTERN int esock_cq_destroy(int cq);

enum esock_op { ESOCK_OP_SEND = 1, ESOCK_OP_RECV, ESOCK_OP_WRITE, ESOCK_OP_READ };

struct esock_wc {
	void *ctx;    /* the caller's, as posted */
	int op;       /* enum esock_op */
	int status;   /* 0, or the errno the operation failed with */
	size_t bytes; /* bytes moved (RECV: 0 is the end of the stream) */
};

/*
 * esock_cq_poll - take up to @n completions, oldest first, without
 * waiting (wait with poll(2) on the queue's descriptor). Returns how many,
 * or -1 with errno EBADF, EINVAL.
 */
ESOCK_EXTERN int esock_cq_poll(int cq, struct esock_wc *wc, int n);

/*
 * esock_send_async - send @len bytes of @buf on the stream, in order with
 * the socket's write(2)s and other sends; no copy is made. Completes with
 * ESOCK_OP_SEND once the bytes are on their way. Returns 0 or -1 with
 * errno (also EPIPE after shutdown(SHUT_WR), EAGAIN: the queue is full).
 *
 * esock_recv_async - receive the stream's next bytes (1 to @len; 0 at its
 * end) into @buf. Receives complete in the order posted; while one is
 * pending the stream's bytes go to it, not to read(2) (which waits, or
 * says EAGAIN, until none is). The bytes come through the socket's own
 * receive buffers (one copy).
 */
ESOCK_EXTERN int esock_send_async(int fd, const void *buf, size_t len, esock_mr_t mr, int cq,
				  void *ctx);
ESOCK_EXTERN int esock_recv_async(int fd, void *buf, size_t len, esock_mr_t mr, int cq, void *ctx);

/* what the peer needs to reach exposed memory; send it to the peer as
 * bytes on the stream (fixed layout, host byte order of the exposer) */
struct esock_remote {
	uint64_t addr;
	uint64_t len;
	uint32_t stag;
	uint32_t reserved;
};

/*
 * esock_expose - let this connection's peer read and/or write
 * [@addr, @addr + @len) of registration @mr (@access
 * ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE, as registered).
 * Fills @out; the exposure is this connection's alone and ends with it.
 * Returns 0 or -1 with errno: EINVAL, EFAULT (outside @mr), EACCES.
 *
 * esock_write_async, esock_read_async - one-sided: move @len bytes between
 * @buf and offset @off of the peer's exposed memory @rem, without the
 * peer's program taking part. They go after the stream's bytes already
 * sent. Complete with ESOCK_OP_WRITE (once the bytes have left) and
 * ESOCK_OP_READ (once they are here). Errors: EINVAL (beyond @rem), EACCES
 * as a completion when the peer refuses the key (the connection then
 * ends, as RDMAP requires).
 */
ESOCK_EXTERN int esock_expose(int fd, esock_mr_t mr, void *addr, size_t len, int access,
			      struct esock_remote *out);
ESOCK_EXTERN int esock_write_async(int fd, const void *buf, size_t len, esock_mr_t mr,
				   const struct esock_remote *rem, uint64_t off, int cq, void *ctx);
ESOCK_EXTERN int esock_read_async(int fd, void *buf, size_t len, esock_mr_t mr,
				  const struct esock_remote *rem, uint64_t off, int cq, void *ctx);

#ifdef __cplusplus
}
#endif

#endif /* UWARP_ESOCK_H */
