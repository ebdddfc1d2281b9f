/*
 * cma_rsocket.c: librdmacm's rsockets calls, carried by esock.
 *
 * rsockets is a socket API over RDMA (rsocket(7)); uwarp's socket layer
 * is esock, which carries an ordinary TCP socket's byte stream over DDP
 * (include/esock.h). An rsocket here is an esock DDP-mode TCP socket:
 * rsocket() makes the socket and switches it to DDP mode, and each r* call
 * is esock's own call of the same name on it. libesock.so is loaded on
 * the first rsocket() (privately, so it replaces nothing else in the
 * program), and its calls are taken from it by name.
 *
 * What differs from rdma-core's rsockets: the wire is esock's (MPA, DDP,
 * RDMAP Sends and Writes with Immediate Data), so an rsocket here talks
 * to another uwarp rsocket or esock socket, not to rdma-core's rsockets;
 * SOL_RDMA's queue sizes and inline size are accepted and have no effect
 * (esock sizes its own), and iomapped memory (riomap, riowrite) is not
 * there (EOPNOTSUPP). As in rsockets, r* calls other than rpoll and
 * rselect fail with EBADF on a descriptor that is not an rsocket, and
 * rpoll and rselect take any descriptor.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rsocket.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>

#include <esock.h>

#include "cma_internal.h"

/* esock's calls, as libesock.so defines them */
static struct {
	int (*socket)(int, int, int);
	int (*bind)(int, const struct sockaddr *, socklen_t);
	int (*listen)(int, int);
	int (*accept4)(int, struct sockaddr *, socklen_t *, int);
	int (*connect)(int, const struct sockaddr *, socklen_t);
	int (*shutdown)(int, int);
	int (*close)(int);
	ssize_t (*recvfrom)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
	ssize_t (*recvmsg)(int, struct msghdr *, int);
	ssize_t (*sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
	ssize_t (*sendmsg)(int, const struct msghdr *, int);
	ssize_t (*readv)(int, const struct iovec *, int);
	ssize_t (*writev)(int, const struct iovec *, int);
	int (*poll)(struct pollfd *, nfds_t, int);
	int (*select)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
	int (*getpeername)(int, struct sockaddr *, socklen_t *);
	int (*getsockname)(int, struct sockaddr *, socklen_t *);
	int (*setsockopt)(int, int, int, const void *, socklen_t);
	int (*getsockopt)(int, int, int, void *, socklen_t *);
	int (*fcntl)(int, int, ...);
} es;
static pthread_once_t es_once = PTHREAD_ONCE_INIT;
static bool es_ok;

#define ES_LOOKUP(h, f) (es.f = (__typeof__(es.f))dlsym(h, #f)) != NULL

/* libesock.so.0 where this library's RUNPATH says ($ORIGIN/.. in the
 * build, $ORIGIN/../.. installed), named by path: a sanitizer's dlopen
 * searches as if the program had called it, without our RUNPATH */
static void *es_open(void)
{
	Dl_info di;
	if (dladdr((void *)es_open, &di) && di.dli_fname) {
		const char *slash = strrchr(di.dli_fname, '/');
		for (int up = 1; slash && up <= 2; up++) {
			char path[PATH_MAX];
			int n = snprintf(path, sizeof(path), "%.*s/%slibesock.so.0",
					 (int)(slash - di.dli_fname), di.dli_fname,
					 up == 1 ? "../" : "../../");
			if (n > 0 && (size_t)n < sizeof(path)) {
				void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
				if (h)
					return h;
			}
		}
	}
	return dlopen("libesock.so.0", RTLD_NOW | RTLD_LOCAL);
}

static void es_load(void)
{
	void *h = es_open();
	if (!h)
		return;
	es_ok = ES_LOOKUP(h, socket) && ES_LOOKUP(h, bind) && ES_LOOKUP(h, listen) &&
		ES_LOOKUP(h, accept4) && ES_LOOKUP(h, connect) && ES_LOOKUP(h, shutdown) &&
		ES_LOOKUP(h, close) && ES_LOOKUP(h, recvfrom) && ES_LOOKUP(h, recvmsg) &&
		ES_LOOKUP(h, sendto) && ES_LOOKUP(h, sendmsg) && ES_LOOKUP(h, readv) &&
		ES_LOOKUP(h, writev) && ES_LOOKUP(h, poll) && ES_LOOKUP(h, select) &&
		ES_LOOKUP(h, getpeername) && ES_LOOKUP(h, getsockname) &&
		ES_LOOKUP(h, setsockopt) && ES_LOOKUP(h, getsockopt) && ES_LOOKUP(h, fcntl);
}

static bool es_ready(void)
{
	pthread_once(&es_once, es_load);
	return es_ok;
}

/* which descriptors are rsockets: one bit each */
#define RS_MAX 65536
static uint64_t rs_bits[RS_MAX / 64];

static void rs_mark(int fd, bool on)
{
	if (fd < 0 || fd >= RS_MAX)
		return;
	uint64_t b = 1ull << (fd % 64);
	if (on)
		__atomic_fetch_or(&rs_bits[fd / 64], b, __ATOMIC_RELEASE);
	else
		__atomic_fetch_and(&rs_bits[fd / 64], ~b, __ATOMIC_RELEASE);
}

static bool rs_is(int fd)
{
	return fd >= 0 && fd < RS_MAX &&
	       (__atomic_load_n(&rs_bits[fd / 64], __ATOMIC_ACQUIRE) >> (fd % 64) & 1);
}

/* A new rsocket's descriptor, marked; one past the bitmap is closed (EMFILE) */
static int rs_adopt(int fd)
{
	if (fd >= RS_MAX) {
		es.close(fd);
		return ucm_err(EMFILE);
	}
	rs_mark(fd, true);
	return fd;
}

/* rsockets' answer for a descriptor that is not one of its own */
#define RS_CHECK(fd)                           \
	do {                                   \
		if (!rs_is(fd) || !es_ready()) \
			return ucm_err(EBADF); \
	} while (0)

int rsocket(int domain, int type, int protocol)
{
	if ((domain != AF_INET && domain != AF_INET6) ||
	    (type & ~(SOCK_NONBLOCK | SOCK_CLOEXEC)) != SOCK_STREAM)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rsocket",
					 "rsockets over esock are TCP streams (no datagrams)"));
	if (!es_ready())
		return ucm_err(uwv_debug(ENOSYS, "rsocket", "libesock.so.0 was not found"));
	int fd = es.socket(domain, type, protocol);
	if (fd < 0)
		return -1;
	int one = 1;
	if (es.setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one))) {
		int e = errno;
		es.close(fd);
		return ucm_err(e);
	}
	return rs_adopt(fd);
}

int rbind(int s, const struct sockaddr *addr, socklen_t len)
{
	RS_CHECK(s);
	return es.bind(s, addr, len);
}

int rlisten(int s, int backlog)
{
	RS_CHECK(s);
	return es.listen(s, backlog);
}

int raccept(int s, struct sockaddr *addr, socklen_t *len)
{
	RS_CHECK(s);
	/* (accept4 itself: libesock's accept calls accept4 by name, which,
	 * the library loaded privately behind the C library, is the C
	 * library's) */
	int fd = es.accept4(s, addr, len, 0);
	return fd < 0 ? fd : rs_adopt(fd);
}

int rconnect(int s, const struct sockaddr *addr, socklen_t len)
{
	RS_CHECK(s);
	return es.connect(s, addr, len);
}

int rshutdown(int s, int how)
{
	RS_CHECK(s);
	return es.shutdown(s, how);
}

int rclose(int s)
{
	RS_CHECK(s);
	rs_mark(s, false);
	return es.close(s);
}

ssize_t rrecvfrom(int s, void *buf, size_t len, int flags, struct sockaddr *src, socklen_t *alen)
{
	RS_CHECK(s);
	return es.recvfrom(s, buf, len, flags, src, alen);
}

ssize_t rrecv(int s, void *buf, size_t len, int flags)
{
	return rrecvfrom(s, buf, len, flags, NULL, NULL);
}

ssize_t rrecvmsg(int s, struct msghdr *msg, int flags)
{
	RS_CHECK(s);
	return es.recvmsg(s, msg, flags);
}

ssize_t rsendto(int s, const void *buf, size_t len, int flags, const struct sockaddr *dst,
		socklen_t alen)
{
	RS_CHECK(s);
	return es.sendto(s, buf, len, flags, dst, alen);
}

ssize_t rsend(int s, const void *buf, size_t len, int flags)
{
	return rsendto(s, buf, len, flags, NULL, 0);
}

ssize_t rsendmsg(int s, const struct msghdr *msg, int flags)
{
	RS_CHECK(s);
	return es.sendmsg(s, msg, flags);
}

ssize_t rreadv(int s, const struct iovec *iov, int n)
{
	RS_CHECK(s);
	return es.readv(s, iov, n);
}

ssize_t rread(int s, void *buf, size_t count)
{
	struct iovec v = { buf, count };
	return rreadv(s, &v, 1);
}

ssize_t rwritev(int s, const struct iovec *iov, int n)
{
	RS_CHECK(s);
	return es.writev(s, iov, n);
}

ssize_t rwrite(int s, const void *buf, size_t count)
{
	struct iovec v = { (void *)buf, count };
	return rwritev(s, &v, 1);
}

/* any descriptor, rsocket or not, as rsockets' own rpoll takes them */
int rpoll(struct pollfd *fds, nfds_t nfds, int timeout)
{
	return es_ready() ? es.poll(fds, nfds, timeout) : poll(fds, nfds, timeout);
}

int rselect(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *timeout)
{
	return es_ready() ? es.select(nfds, r, w, x, timeout) : select(nfds, r, w, x, timeout);
}

int rgetpeername(int s, struct sockaddr *addr, socklen_t *len)
{
	RS_CHECK(s);
	return es.getpeername(s, addr, len);
}

int rgetsockname(int s, struct sockaddr *addr, socklen_t *len)
{
	RS_CHECK(s);
	return es.getsockname(s, addr, len);
}

int rsetsockopt(int s, int level, int name, const void *val, socklen_t len)
{
	RS_CHECK(s);
	if (level != SOL_RDMA)
		return es.setsockopt(s, level, name, val, len);
	/* queue sizes, inline size, iomap size, a resolved route: rsockets'
	 * own tuning, which esock's connection has no use for */
	if (name < RDMA_SQSIZE || name > RDMA_ROUTE)
		return ucm_err(ENOPROTOOPT);
	if (name != RDMA_ROUTE && (!val || len < sizeof(uint32_t)))
		return ucm_err(EINVAL);
	return 0;
}

int rgetsockopt(int s, int level, int name, void *val, socklen_t *len)
{
	RS_CHECK(s);
	if (level == SOL_RDMA)
		return ucm_err(uwv_debug(ENOPROTOOPT, "rgetsockopt",
					 "SOL_RDMA: esock has no rsockets queues"));
	return es.getsockopt(s, level, name, val, len);
}

int rfcntl(int s, int cmd, ...)
{
	RS_CHECK(s);
	/* what rsockets takes: F_GETFL, and F_SETFL with its int */
	if (cmd == F_GETFL)
		return es.fcntl(s, cmd);
	if (cmd != F_SETFL)
		return ucm_err(
			uwv_debug(EOPNOTSUPP, "rfcntl", "only F_GETFL and F_SETFL, as rsockets"));
	va_list ap;
	va_start(ap, cmd);
	int arg = va_arg(ap, int);
	va_end(ap);
	return es.fcntl(s, cmd, arg);
}

off_t riomap(int s, void *buf, size_t len, int prot, int flags, off_t offset)
{
	RS_CHECK(s);
	return ucm_err(uwv_debug(EOPNOTSUPP, "riomap", "esock has no iomapped memory"));
}

int riounmap(int s, void *buf, size_t len)
{
	RS_CHECK(s);
	return ucm_err(uwv_debug(EOPNOTSUPP, "riounmap", "esock has no iomapped memory"));
}

size_t riowrite(int s, const void *buf, size_t count, off_t offset, int flags)
{
	/* rsockets' riowrite says failure with 0 bytes written */
	errno = rs_is(s) ? uwv_debug(EOPNOTSUPP, "riowrite", "esock has no iomapped memory")
			 : EBADF;
	return 0;
}
