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
 *                          all            every TCP socket;
 *                          PORT[,PORT...] a socket whose local or remote
 *                                         port is listed;
 *                          unset, empty   none.
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
 *   ESOCK_DEBUG     set: each DDP connection's transfer counters are
 *                   printed to stderr when the program closes it.
 *
 * SEMANTICS
 *   Connecting: connect(2) on a DDP-mode socket makes the TCP connection,
 *   then the MPA negotiation; a blocking connect returns when both are
 *   done, a non-blocking one returns EINPROGRESS and the socket turns
 *   writable (SO_ERROR 0 or the error) as TCP's does. A peer that does not
 *   speak MPA fails the connection with ECONNREFUSED (or ECONNRESET).
 *
 *   Accepting: a DDP-mode listener is an ordinary kernel listener. accept
 *   looks at each client's first bytes: a client whose first 16 bytes are
 *   the MPA Request key ("MPA ID Req Frame") becomes a DDP socket; any
 *   other client (or one silent for ESOCK_PEEK_MS) is returned as the
 *   plain TCP socket it is. A DDP client whose negotiation fails is
 *   dropped and accept fails with ECONNABORTED, as for a connection reset
 *   in the backlog.
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
 *   sendto/recvfrom/sendmsg/recvmsg with MSG_PEEK, MSG_WAITALL,
 *   MSG_NOSIGNAL (otherwise a write after the stream ended raises SIGPIPE
 *   and fails with EPIPE), shutdown (half close), SO_ERROR, SO_RCVTIMEO and
 *   SO_SNDTIMEO, FIONREAD, SIOCOUTQ, fcntl and ioctl flags, dup, dup2,
 *   dup3, F_DUPFD, sendfile, getsockname, getpeername, and readiness
 *   through poll, ppoll, select, pselect and epoll in every mode (data
 *   already in user space counts as readable). TCP-level options
 *   (TCP_NODELAY, TCP_INFO, ...) and socket buffer sizes act on the TCP
 *   connection underneath.
 *
 *   Differences that remain: the descriptor is an AF_UNIX socket to
 *   fstat(2) and to calls this library does not replace (recvmmsg,
 *   sendmmsg, splice, io_uring); a failed connection reports POLLHUP
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
 *   process; descriptors numbered ESOCK_FD_MAX or above stay plain.
 */
#ifndef UWARP_ESOCK_H
#define UWARP_ESOCK_H

#ifdef __cplusplus
extern "C" {
#endif

/* The option level and name: values no kernel level uses. */
#define SOL_ESOCK 0x45534b01 /* "ESK" 1 */
#define ESOCK_DDPMODE 1	     /* int: 1 DDP mode, 0 plain (getsockopt: current) */

/*
 * esock_is_ddp - whether @fd is a socket carried over DDP now.
 * Returns 1, 0 (any other descriptor), or -1 with errno EBADF.
 */
__attribute__((visibility("default"))) int esock_is_ddp(int fd);

#ifdef __cplusplus
}
#endif

#endif /* UWARP_ESOCK_H */
