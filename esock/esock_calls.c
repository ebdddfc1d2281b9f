/*
 * esock_calls.c: the socket calls, replaced. Each looks its descriptor up
 * first; one that names no DDP socket goes straight to the C library.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/sendfile.h>
#include <time.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "esock_internal.h"
#include "util/clock.h"

#define EXPORT __attribute__((visibility("default")))

/* the C library's checked variants (_FORTIFY_SOURCE programs call them) */
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);
ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags, struct sockaddr *addr,
		       socklen_t *alen);

/* a number the kernel just gave out: whatever the table said of it is old */
static void fresh(int fd, uint8_t flags)
{
	if (!esock__fd_in_range(fd))
		return;
	if (esock__peek(fd) || (esock_fdflags[fd] & FD_LISTENER))
		esock__forget(fd);
	esock_fdflags[fd] = flags;
}

static void copy_name(int from, int to)
{
	if (!esock__fd_in_range(to))
		return;
	esock__forget(to);
	if (!esock__fd_in_range(from))
		return;
	struct esock *e = esock__peek(from);
	if (e)
		esock__set(to, e);
	struct esock_listener *l = esock__listener(from);
	if (l)
		esock__listener_name(to, l);
	esock_fdflags[to] = esock_fdflags[from];
}

static bool is_tcp(int domain, int type, int protocol)
{
	return (domain == AF_INET || domain == AF_INET6) && (type & 0xff) == SOCK_STREAM &&
	       (protocol == 0 || protocol == IPPROTO_TCP);
}

EXPORT int socket(int domain, int type, int protocol)
{
	int fd = REAL(socket)(domain, type, protocol);
	if (fd >= 0)
		fresh(fd, is_tcp(domain, type, protocol) ? FD_TCP : 0);
	return fd;
}

/* ---- connecting ---- */

static unsigned ms_of(const struct timeval *tv)
{
	unsigned long ms = (unsigned long)tv->tv_sec * 1000 + (unsigned long)tv->tv_usec / 1000;
	if (!ms && tv->tv_usec)
		ms = 1;
	return ms > 0x7fffffff ? 0x7fffffff : (unsigned)ms;
}

/* wait for a DDP socket's connection on @fd: 0, or -1 with its errno */
static int wait_connected(int fd, struct esock *e, unsigned ms)
{
	pthread_mutex_lock(&e->mu);
	int rc = 0;
	while (e->st == ES_CONNECTING) {
		/* timed out, or a signal: the connection goes on (connect(2)) */
		int w = esock__wait(e, ms);
		if (w) {
			rc = w == ETIMEDOUT ? EINPROGRESS : w;
			break;
		}
	}
	if (!rc && e->st == ES_FALLBACK) {
		/* the peer is not iWARP: a plain connection (esock_fallback.c) */
		pthread_mutex_unlock(&e->mu);
		if (!esock__fall_back(fd, e))
			return 0;
		pthread_mutex_lock(&e->mu);
	}
	if (!rc && e->st == ES_FAILED) {
		rc = e->conn_err;
		e->so_error = 0; /* reported here, as connect(2) does */
	}
	pthread_mutex_unlock(&e->mu);
	if (rc) {
		errno = rc;
		return -1;
	}
	return 0;
}

/* the plain connect's result when a DDP one could not be set up after
 * the TCP connection was started: the socket stays what it is */
static int plain_result(int fd, int r, int fl)
{
	REAL(fcntl)(fd, F_SETFL, fl);
	if (r == 0 || (fl & O_NONBLOCK)) {
		errno = EINPROGRESS;
		return r == 0 ? 0 : -1;
	}
	struct pollfd p = { .fd = fd, .events = POLLOUT };
	while (poll(&p, 1, -1) < 0 && errno == EINTR)
		;
	int err = 0;
	socklen_t l = sizeof(err);
	REAL(getsockopt)(fd, SOL_SOCKET, SO_ERROR, &err, &l);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

EXPORT int connect(int fd, const struct sockaddr *addr, socklen_t len)
{
	struct esock *e = esock__get(fd);
	if (e) {
		pthread_mutex_lock(&e->mu);
		int err = e->st == ES_CONNECTING ? EALREADY : EISCONN;
		pthread_mutex_unlock(&e->mu);
		errno = esock__foreign(e) ? ENOTCONN : err;
		return -1;
	}
	if (!esock__fd_in_range(fd) || !(esock_fdflags[fd] & FD_TCP) ||
	    (esock_fdflags[fd] & FD_NO_DDP) || !addr ||
	    (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return REAL(connect)(fd, addr, len);
	bool want = esock_fdflags[fd] & FD_WANT_DDP;
#ifdef ESOCK_PRELOAD
	want = want || esock__env_selects(fd, addr);
#endif
	if (!want)
		return REAL(connect)(fd, addr, len);
	uint64_t since = esock__fallback_on() ? esock__plain_since(addr) : 0;
	if (since) {
		/* it did not speak MPA a moment ago: plain TCP at once */
		esock__say(fd, addr, "plain TCP (not iWARP %llu ms ago)",
			   (unsigned long long)(util_now_ms() - since));
		return REAL(connect)(fd, addr, len);
	}
	int fl = REAL(fcntl)(fd, F_GETFL);
	int t = esock__dup_high(fd);
	if (fl < 0 || t < 0)
		return REAL(connect)(fd, addr, len);
	REAL(fcntl)(t, F_SETFL, fl | O_NONBLOCK);
	int r = REAL(connect)(t, addr, len);
	if (r < 0 && errno != EINPROGRESS) {
		int err = errno;
		REAL(fcntl)(fd, F_SETFL, fl);
		esock__close(t);
		errno = err;
		return -1;
	}
	REAL(fcntl)(t, F_SETFL, fl); /* the caller's until uwarp takes it */
	e = esock__switch(fd, true, t, addr);
	if (!e) {
		esock__close(t);
		return plain_result(fd, r, fl);
	}
	if (fl & O_NONBLOCK) {
		errno = EINPROGRESS;
		return -1;
	}
	return wait_connected(fd, e, e->sndtimeo_ms);
}

EXPORT int listen(int fd, int backlog)
{
	struct esock_listener *l = esock__listener(fd);
	if (l)
		return esock__listener_relisten(l, backlog);
	int r = REAL(listen)(fd, backlog);
	if (r || !esock__fd_in_range(fd) || !(esock_fdflags[fd] & FD_TCP) ||
	    (esock_fdflags[fd] & FD_NO_DDP))
		return r;
	bool want = esock_fdflags[fd] & FD_WANT_DDP;
#ifdef ESOCK_PRELOAD
	want = want || esock__env_selects(fd, NULL);
#endif
	/* (a listener that cannot be made a DDP one stays a plain one) */
	if (want) {
		int err = errno;
		esock__listener_make(fd, backlog);
		errno = err;
	}
	return r;
}

EXPORT int accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags)
{
	/* a listener shared with the process that forked this one: this
	 * process sorts its clients from now on, with a gate of its own */
	if (esock__listener_regate(fd))
		return -1;
	struct esock_listener *l = esock__listener(fd);
	if (l) {
		bool ddp;
		int c = esock__listener_accept(l, fd, addr, len, flags, &ddp);
		if (c >= 0 && !ddp)
			fresh(c, FD_TCP);
		return c;
	}
	int c = REAL(accept4)(fd, addr, len, flags);
	if (c >= 0)
		fresh(c, esock__fd_in_range(fd) ? (esock_fdflags[fd] & FD_TCP) : 0);
	return c;
}

EXPORT int accept(int fd, struct sockaddr *addr, socklen_t *len)
{
	return accept4(fd, addr, len, 0);
}

/* ---- options ---- */

/* setsockopt(ESOCK_DDPMODE) */
static int set_ddpmode(int fd, const void *val, socklen_t len)
{
	if (!val || len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	int on = *(const int *)val != 0;
	struct esock *e = esock__get(fd);
	if (e) {
		if (on)
			return 0;
		errno = EOPNOTSUPP; /* a DDP connection cannot turn back */
		return -1;
	}
	if (esock__listener(fd)) {
		if (on)
			return 0;
		errno = EOPNOTSUPP; /* its clients are already being sorted */
		return -1;
	}
	int proto = 0, dom = 0;
	socklen_t l = sizeof(int);
	if (REAL(getsockopt)(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &l))
		return -1;
	l = sizeof(int);
	REAL(getsockopt)(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
	if (proto != IPPROTO_TCP || (dom != AF_INET && dom != AF_INET6)) {
		errno = EOPNOTSUPP;
		return -1;
	}
	if (!esock__fd_in_range(fd)) {
		errno = EMFILE;
		return -1;
	}
	if (!on) {
		esock_fdflags[fd] =
			(uint8_t)((esock_fdflags[fd] & ~(FD_WANT_DDP | FD_DDP_LISTEN)) | FD_NO_DDP);
		return 0;
	}
	esock_fdflags[fd] = (uint8_t)((esock_fdflags[fd] & ~FD_NO_DDP) | FD_WANT_DDP | FD_TCP);
	int listening = 0;
	l = sizeof(int);
	REAL(getsockopt)(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &l);
	if (listening) {
		if (esock__listener(fd))
			return 0;
		/* (the backlog listen was given is not known here: the most) */
		return esock__listener_make(fd, INT_MAX);
	}
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	if (REAL(getpeername)(fd, (struct sockaddr *)&peer, &pl))
		return 0; /* not connected: connect or listen will switch */
	REAL(getsockname)(fd, (struct sockaddr *)&me, &ml);
	/* both ends agree who sends the MPA Request: the lower (address, port) */
	bool initiator = memcmp(&me, &peer, sizeof(struct sockaddr_in6)) < 0;
	int t = esock__dup_high(fd);
	if (t < 0)
		return -1;
	e = esock__switch(fd, initiator, t, NULL);
	if (!e) {
		int err = errno;
		esock__close(t);
		errno = err;
		return -1;
	}
	return wait_connected(fd, e, ESOCK_SETUP_MS);
}

/* setsockopt(ESOCK_IDLE_MS): a DDP connection's limit, now; a DDP
 * listener's, for the clients it gives from now on */
static int set_idle(int fd, const void *val, socklen_t len)
{
	int v = -1;
	if (val && len == (socklen_t)sizeof(int))
		memcpy(&v, val, sizeof(v));
	if (v < 0) {
		errno = EINVAL;
		return -1;
	}
	struct esock *e = esock__get(fd);
	if (e)
		return exs_setsockopt(e->exs, SOL_EXS, EXS_SO_IDLE_MS, &v, sizeof(v));
	struct esock_listener *l = esock__listener(fd);
	if (l) {
		l->idle_ms = v;
		return 0;
	}
	if (REAL(fcntl)(fd, F_GETFD) >= 0)
		errno = EOPNOTSUPP; /* not (yet) carried over DDP */
	return -1;
}

EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
	if (level == SOL_ESOCK) {
		if (name == ESOCK_DDPMODE)
			return set_ddpmode(fd, val, len);
		if (name == ESOCK_IDLE_MS)
			return set_idle(fd, val, len);
		errno = ENOPROTOOPT;
		return -1;
	}
	struct esock *e = esock__get(fd);
	if (!e) {
		struct esock_listener *l = esock__listener(fd);
		/* accept's timeouts are the program's number's, the rest the
		 * TCP listener's */
		if (l && !(level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO)))
			return REAL(setsockopt)(l->tcp, level, name, val, len);
		int r = REAL(setsockopt)(fd, level, name, val, len);
		if (!r && esock__fd_in_range(fd) && level == SOL_SOCKET &&
		    (name == SO_SNDBUF || name == SO_RCVBUF || name == SO_SNDBUFFORCE ||
		     name == SO_RCVBUFFORCE))
			esock_fdflags[fd] |= FD_BUFS_SET; /* (the kernel's own tuning is off now) */
		return r;
	}
	if (level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO)) {
		if (!val || len < (socklen_t)sizeof(struct timeval)) {
			errno = EINVAL;
			return -1;
		}
		pthread_mutex_lock(&e->mu);
		*(name == SO_RCVTIMEO ? &e->rcvtimeo_ms : &e->sndtimeo_ms) = ms_of(val);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	/* TCP's options and buffer sizes: the connection underneath */
	return REAL(setsockopt)(e->tcp, level, name, val, len);
}

static int put_int(void *val, socklen_t *len, int v)
{
	if (!val || !len || *len < (socklen_t)sizeof(int)) {
		errno = EINVAL;
		return -1;
	}
	*(int *)val = v;
	*len = sizeof(int);
	return 0;
}

EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
	struct esock *e = esock__get(fd);
	if (level == SOL_ESOCK) {
		if (name != ESOCK_DDPMODE && name != ESOCK_IDLE_MS) {
			errno = ENOPROTOOPT;
			return -1;
		}
		if (REAL(fcntl)(fd, F_GETFD) < 0)
			return -1;
		if (name == ESOCK_DDPMODE)
			return put_int(val, len,
				       e || (esock__fd_in_range(fd) &&
					     (esock_fdflags[fd] & (FD_WANT_DDP | FD_DDP_LISTEN))));
		if (e)
			return exs_getsockopt(e->exs, SOL_EXS, EXS_SO_IDLE_MS, val, len);
		struct esock_listener *l = esock__listener(fd);
		if (!l) {
			errno = EOPNOTSUPP;
			return -1;
		}
		int v = l->idle_ms;
		return put_int(val, len, v >= 0 ? v : esock__idle_default());
	}
	if (!e) {
		struct esock_listener *l = esock__listener(fd);
		if (l && !(level == SOL_SOCKET && (name == SO_RCVTIMEO || name == SO_SNDTIMEO)))
			return REAL(getsockopt)(l->tcp, level, name, val, len);
		return REAL(getsockopt)(fd, level, name, val, len);
	}
	if (level == SOL_SOCKET) {
		switch (name) {
		case SO_ERROR: {
			pthread_mutex_lock(&e->mu);
			int err = e->so_error;
			e->so_error = 0;
			pthread_mutex_unlock(&e->mu);
			return put_int(val, len, err);
		}
		case SO_DOMAIN:
			return put_int(val, len, e->domain);
		case SO_TYPE:
			return put_int(val, len, SOCK_STREAM);
		case SO_PROTOCOL:
			return put_int(val, len, IPPROTO_TCP);
		case SO_ACCEPTCONN:
			return put_int(val, len, 0);
		case SO_RCVTIMEO:
		case SO_SNDTIMEO: {
			if (!val || !len || *len < (socklen_t)sizeof(struct timeval)) {
				errno = EINVAL;
				return -1;
			}
			unsigned ms = name == SO_RCVTIMEO ? e->rcvtimeo_ms : e->sndtimeo_ms;
			*(struct timeval *)val = (struct timeval){ ms / 1000, (ms % 1000) * 1000 };
			*len = sizeof(struct timeval);
			return 0;
		}
		}
	}
	return REAL(getsockopt)(e->tcp, level, name, val, len);
}

EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct esock *e = esock__get(fd);
	struct esock_listener *l = e ? NULL : esock__listener(fd);
	return REAL(getsockname)(e ? e->tcp : l ? l->tcp : fd, addr, len);
}

EXPORT int getpeername(int fd, struct sockaddr *addr, socklen_t *len)
{
	struct esock *e = esock__get(fd);
	return REAL(getpeername)(e ? e->tcp : fd, addr, len);
}

/* ---- descriptors ---- */

EXPORT int close(int fd)
{
	if (esock__fd_in_range(fd) &&
	    (esock_fdflags[fd] || esock__peek(fd) || esock__ready_known(fd)))
		esock__forget(fd);
	return REAL(close)(fd);
}

EXPORT int dup(int fd)
{
	esock__get(fd); /* (a due fallback first: the copy names the plain socket) */
	int r = REAL(dup)(fd);
	if (r >= 0)
		copy_name(fd, r);
	return r;
}

EXPORT int dup2(int fd, int to)
{
	esock__get(fd);
	int r = REAL(dup2)(fd, to);
	if (r >= 0 && fd != to)
		copy_name(fd, r);
	return r;
}

EXPORT int dup3(int fd, int to, int flags)
{
	esock__get(fd);
	int r = REAL(dup3)(fd, to, flags);
	if (r >= 0)
		copy_name(fd, r);
	return r;
}

static int fcntl_common(int fd, int cmd, va_list ap)
{
	long arg = va_arg(ap, long);
	esock__get(fd); /* (a due fallback first: flags and copies are the plain socket's) */
	int r = REAL(fcntl)(fd, cmd, arg);
	if (r >= 0 && (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC))
		copy_name(fd, r);
	struct esock *e;
	if (r >= 0 && cmd == F_SETFL && (e = esock__get(fd)))
		e->nonblock = (arg & O_NONBLOCK) != 0; /* every name shares the flags */
	return r;
}

EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = fcntl_common(fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	int r = fcntl_common(fd, cmd, ap);
	va_end(ap);
	return r;
}

EXPORT int ioctl(int fd, unsigned long req, ...)
{
	va_list ap;
	va_start(ap, req);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	struct esock *e = esock__get(fd);
	if (e && (req == FIONREAD || req == SIOCOUTQ)) {
		if (!arg) {
			errno = EFAULT;
			return -1;
		}
		pthread_mutex_lock(&e->mu);
		*(int *)arg = (int)(req == FIONREAD ? esock__readable_bytes(e) : e->sout);
		pthread_mutex_unlock(&e->mu);
		return 0;
	}
	/* FIONBIO and the rest act on the descriptor itself */
	int r = REAL(ioctl)(fd, req, arg);
	if (!r && e && req == FIONBIO)
		e->nonblock = *(const int *)arg != 0;
	return r;
}

EXPORT int shutdown(int fd, int how)
{
	struct esock *e = esock__get(fd);
	if (e)
		return esock__shutdown(e, how);
	struct esock_listener *l = esock__listener(fd);
	return REAL(shutdown)(l ? l->tcp : fd, how);
}

/* ---- data ---- */

EXPORT ssize_t read(int fd, void *buf, size_t n)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(read)(fd, buf, n);
	struct iovec v = { buf, n };
	return esock__recv(e, &v, 1, 0);
}

EXPORT ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(read_chk)(fd, buf, n, buflen);
	if (n > buflen)
		abort(); /* what the C library's check does */
	struct iovec v = { buf, n };
	return esock__recv(e, &v, 1, 0);
}

EXPORT ssize_t write(int fd, const void *buf, size_t n)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(write)(fd, buf, n);
	struct iovec v = { (void *)buf, n };
	return esock__send(e, &v, 1, 0);
}

EXPORT ssize_t readv(int fd, const struct iovec *iov, int cnt)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(readv)(fd, iov, cnt);
	if (cnt < 0 || cnt > IOV_MAX) {
		errno = EINVAL;
		return -1;
	}
	return esock__recv(e, iov, cnt, 0);
}

EXPORT ssize_t writev(int fd, const struct iovec *iov, int cnt)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(writev)(fd, iov, cnt);
	if (cnt < 0 || cnt > IOV_MAX) {
		errno = EINVAL;
		return -1;
	}
	return esock__send(e, iov, cnt, 0);
}

EXPORT ssize_t recv(int fd, void *buf, size_t n, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recv)(fd, buf, n, flags);
	struct iovec v = { buf, n };
	return esock__recv(e, &v, 1, flags);
}

EXPORT ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recv_chk)(fd, buf, n, buflen, flags);
	if (n > buflen)
		abort();
	struct iovec v = { buf, n };
	return esock__recv(e, &v, 1, flags);
}

EXPORT ssize_t send(int fd, const void *buf, size_t n, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(send)(fd, buf, n, flags);
	struct iovec v = { (void *)buf, n };
	return esock__send(e, &v, 1, flags);
}

/* a connected stream: the address is filled as TCP's recvfrom leaves it */
static ssize_t recvfrom_esock(struct esock *e, void *buf, size_t n, int flags,
			      struct sockaddr *addr, socklen_t *alen)
{
	struct iovec v = { buf, n };
	ssize_t r = esock__recv(e, &v, 1, flags);
	if (r >= 0 && addr && alen)
		REAL(getpeername)(e->tcp, addr, alen);
	return r;
}

EXPORT ssize_t recvfrom(int fd, void *buf, size_t n, int flags, struct sockaddr *addr,
			socklen_t *alen)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recvfrom)(fd, buf, n, flags, addr, alen);
	return recvfrom_esock(e, buf, n, flags, addr, alen);
}

EXPORT ssize_t __recvfrom_chk(int fd, void *buf, size_t n, size_t buflen, int flags,
			      struct sockaddr *addr, socklen_t *alen)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recvfrom_chk)(fd, buf, n, buflen, flags, addr, alen);
	if (n > buflen)
		abort();
	return recvfrom_esock(e, buf, n, flags, addr, alen);
}

EXPORT ssize_t sendto(int fd, const void *buf, size_t n, int flags, const struct sockaddr *addr,
		      socklen_t alen)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(sendto)(fd, buf, n, flags, addr, alen);
	struct iovec v = { (void *)buf, n };
	return esock__send(e, &v, 1, flags); /* connected: TCP ignores the address */
}

EXPORT ssize_t recvmsg(int fd, struct msghdr *m, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recvmsg)(fd, m, flags);
	if (!m || m->msg_iovlen > IOV_MAX) {
		errno = m ? EMSGSIZE : EFAULT;
		return -1;
	}
	ssize_t r = esock__recv(e, m->msg_iov, (int)m->msg_iovlen, flags);
	if (r >= 0) {
		m->msg_flags = 0;
		m->msg_controllen = 0;
		if (m->msg_name && m->msg_namelen)
			REAL(getpeername)(e->tcp, m->msg_name, &m->msg_namelen);
	}
	return r;
}

EXPORT ssize_t sendmsg(int fd, const struct msghdr *m, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(sendmsg)(fd, m, flags);
	if (!m || m->msg_iovlen > IOV_MAX) {
		errno = m ? EMSGSIZE : EFAULT;
		return -1;
	}
	return esock__send(e, m->msg_iov, (int)m->msg_iovlen, flags);
}

/* recvmmsg and sendmmsg on a stream: message after message, as the
 * kernel does; after the first, MSG_WAITFORONE makes the rest
 * non-blocking, and an error after some messages ends the call with their
 * count. recvmmsg's timeout is checked after each message, as there. */
static int mmsg(struct esock *e, struct mmsghdr *v, unsigned n, int flags,
		const struct timespec *timeout, bool rx)
{
	if (!v) {
		errno = EFAULT;
		return -1;
	}
	struct timespec end = timeout ? util_deadline(timeout->tv_sec, timeout->tv_nsec)
				      : (struct timespec){ 0, 0 };
	unsigned done = 0;
	for (; done < n; done++) {
		struct msghdr *m = &v[done].msg_hdr;
		if (m->msg_iovlen > IOV_MAX) {
			errno = EMSGSIZE;
			break;
		}
		ssize_t r = rx ? esock__recv(e, m->msg_iov, (int)m->msg_iovlen, flags)
			       : esock__send(e, m->msg_iov, (int)m->msg_iovlen, flags);
		if (r < 0)
			break;
		v[done].msg_len = (unsigned)r;
		if (rx) {
			m->msg_flags = 0;
			m->msg_controllen = 0;
			if (m->msg_name && m->msg_namelen)
				REAL(getpeername)(e->tcp, m->msg_name, &m->msg_namelen);
			if (flags & MSG_WAITFORONE)
				flags |= MSG_DONTWAIT;
			if (!r)
				return (int)done + 1; /* the end of the stream */
		}
		if (timeout && util_passed(&end))
			return (int)done + 1;
	}
	return done ? (int)done : -1;
}

EXPORT int recvmmsg(int fd, struct mmsghdr *v, unsigned n, int flags, struct timespec *timeout)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(recvmmsg)(fd, v, n, flags, timeout);
	return mmsg(e, v, n, flags, timeout, true);
}

EXPORT int sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
	struct esock *e = esock__get(fd);
	if (!e)
		return REAL(sendmmsg)(fd, v, n, flags);
	return mmsg(e, v, n, flags, NULL, false);
}

/* sendfile(2) to a DDP socket: read and send, taking from @in no more
 * than the socket takes (a non-blocking socket: what fits now) */
static ssize_t sendfile_esock(struct esock *e, int in, off_t *off, size_t count)
{
	static __thread uint8_t buf[64 << 10];
	size_t done = 0;
	bool nb = esock__nonblocking(e);
	while (done < count) {
		size_t n = count - done < sizeof(buf) ? count - done : sizeof(buf);
		if (nb) {
			pthread_mutex_lock(&e->mu);
			size_t space = e->st == ES_CONNECTED ? ESOCK_SBUF - e->sout : 0;
			pthread_mutex_unlock(&e->mu);
			if (space < n)
				n = space;
			if (!n)
				break;
		}
		ssize_t r = off ? pread(in, buf, n, *off) : REAL(read)(in, buf, n);
		if (r <= 0) {
			if (r < 0 && !done)
				return -1;
			break;
		}
		struct iovec v = { buf, (size_t)r };
		ssize_t w = esock__send(e, &v, 1, 0);
		if (w < 0)
			return done ? (ssize_t)done : -1;
		if (off)
			*off += w;
		done += (size_t)w;
		if (w < r) {
			if (!off) /* read but not taken: the file position goes back */
				lseek(in, (off_t)w - r, SEEK_CUR);
			break;
		}
	}
	if (!done && nb && count) {
		errno = EAGAIN;
		return -1;
	}
	return (ssize_t)done;
}

EXPORT ssize_t sendfile(int out, int in, off_t *off, size_t count)
{
	struct esock *e = esock__get(out);
	if (!e)
		return REAL(sendfile)(out, in, off, count);
	return sendfile_esock(e, in, off, count);
}

EXPORT ssize_t sendfile64(int out, int in, off_t *off, size_t count)
{
	return sendfile(out, in, off, count);
}

/* the ES-API's calls on a DDP socket (exs_set_fd_carrier): its transfers
 * esock's own, the rest the calls above */
const struct exs_fd_carrier esock__carrier = {
	.send = esock__carry_send,
	.recv = esock__carry_recv,
	.shutdown = shutdown,
	.close = close,
	.getsockopt = getsockopt,
	.setsockopt = setsockopt,
	.getsockname = getsockname,
	.getpeername = getpeername,
};
