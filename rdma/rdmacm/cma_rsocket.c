/*
 * cma_rsocket.c: librdmacm's rsockets calls, present so the programs
 * that name them load (rping and ucmatose call rpoll).
 *
 * uwarp does not make rsockets (its socket layer is esock: the ES-API's
 * extended sockets, or libesock-preload.so for unmodified programs), so
 * rsocket() fails with EOPNOTSUPP and no descriptor is ever an rsocket.
 * That makes rpoll and rselect exactly poll and select (rsockets passes
 * other descriptors through to them), and every call on a descriptor
 * EBADF, what rsockets answers for a descriptor that is not one of its
 * own.
 */
#include <errno.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <sys/select.h>

#include "cma_internal.h"

int rsocket(int domain, int type, int protocol)
{
	return ucm_err(uwv_debug(EOPNOTSUPP, "rsocket",
				 "uwarp has no rsockets: its sockets are esock's (README)"));
}

int rpoll(struct pollfd *fds, nfds_t nfds, int timeout) { return poll(fds, nfds, timeout); }

int rselect(int nfds, fd_set *readfds, fd_set *writefds, fd_set *exceptfds, struct timeval *timeout)
{
	return select(nfds, readfds, writefds, exceptfds, timeout);
}

#define NOT_AN_RSOCKET return ucm_err(EBADF)

int rbind(int socket, const struct sockaddr *addr, socklen_t addrlen) { NOT_AN_RSOCKET; }
int rlisten(int socket, int backlog) { NOT_AN_RSOCKET; }
int raccept(int socket, struct sockaddr *addr, socklen_t *addrlen) { NOT_AN_RSOCKET; }
int rconnect(int socket, const struct sockaddr *addr, socklen_t addrlen) { NOT_AN_RSOCKET; }
int rshutdown(int socket, int how) { NOT_AN_RSOCKET; }
int rclose(int socket) { NOT_AN_RSOCKET; }
ssize_t rrecv(int socket, void *buf, size_t len, int flags) { NOT_AN_RSOCKET; }
ssize_t rrecvfrom(int socket, void *buf, size_t len, int flags, struct sockaddr *src_addr,
		  socklen_t *addrlen)
{
	NOT_AN_RSOCKET;
}
ssize_t rrecvmsg(int socket, struct msghdr *msg, int flags) { NOT_AN_RSOCKET; }
ssize_t rsend(int socket, const void *buf, size_t len, int flags) { NOT_AN_RSOCKET; }
ssize_t rsendto(int socket, const void *buf, size_t len, int flags,
		const struct sockaddr *dest_addr, socklen_t addrlen)
{
	NOT_AN_RSOCKET;
}
ssize_t rsendmsg(int socket, const struct msghdr *msg, int flags) { NOT_AN_RSOCKET; }
ssize_t rread(int socket, void *buf, size_t count) { NOT_AN_RSOCKET; }
ssize_t rreadv(int socket, const struct iovec *iov, int iovcnt) { NOT_AN_RSOCKET; }
ssize_t rwrite(int socket, const void *buf, size_t count) { NOT_AN_RSOCKET; }
ssize_t rwritev(int socket, const struct iovec *iov, int iovcnt) { NOT_AN_RSOCKET; }
int rgetpeername(int socket, struct sockaddr *addr, socklen_t *addrlen) { NOT_AN_RSOCKET; }
int rgetsockname(int socket, struct sockaddr *addr, socklen_t *addrlen) { NOT_AN_RSOCKET; }
int rsetsockopt(int socket, int level, int optname, const void *optval, socklen_t optlen)
{
	NOT_AN_RSOCKET;
}
int rgetsockopt(int socket, int level, int optname, void *optval, socklen_t *optlen)
{
	NOT_AN_RSOCKET;
}
int rfcntl(int socket, int cmd, ...) { NOT_AN_RSOCKET; }
off_t riomap(int socket, void *buf, size_t len, int prot, int flags, off_t offset)
{
	NOT_AN_RSOCKET;
}
int riounmap(int socket, void *buf, size_t len) { NOT_AN_RSOCKET; }
size_t riowrite(int socket, const void *buf, size_t count, off_t offset, int flags)
{
	errno = EBADF;
	return 0; /* rsockets' riowrite says failure with 0 bytes written */
}
