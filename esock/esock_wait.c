/*
 * esock_wait.c: the calls that wait for descriptors (poll, ppoll, select,
 * pselect, and epoll_ctl, which names what epoll_wait waits for).
 *
 * A DDP listener shared across fork is the TCP listener again in every
 * process (struct esock_listener says why). The first process to wait on
 * it or accept from it makes it its own DDP listener, with a gate of its
 * own: then accept never waits for a client's negotiation there either.
 * That must happen before the wait begins, since the program's number
 * then names another socket (an epoll set would keep the old one). A
 * process that only inherits the listener (a child that goes on to exec,
 * a save process) never takes clients from the others.
 *
 * Until a fork has reverted a listener these calls pass straight on.
 *
 * Once the process has DDP sockets, poll, ppoll, epoll_wait and
 * epoll_pwait that may wait for one move the ES-API's data on the
 * program's own thread while they do (exs_ppoll_here): a request that
 * arrives is read, completed and made readable here, and the program's
 * reply leaves from here, with no hand-off to the progress thread and back
 * (docs/performance.md). A wait for no DDP socket (a poll without one, an
 * epoll set that never held one: a server's accepting thread, whose set
 * holds its listener) passes straight on: it would only contend for the
 * ES-API's lock with the threads that serve the connections, and wake
 * with each of their messages. The listener's clients are negotiated by
 * whichever thread moves the data, here or the progress thread. select
 * and pselect leave that to the progress thread: made to wait here too,
 * they cost iperf3 (whose loop is select) a tenth of its bulk rate, its
 * receive and its copy no longer overlapping on two threads
 * (docs/performance.md).
 */
#include <errno.h>

#include "esock_internal.h"
#include "util/clock.h"

#define EXPORT __attribute__((visibility("default")))

/* glibc declares poll's array write-only (it is read and written), and
 * GCC takes reading it here for reading uninitialized memory */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

/* This thread is inside exs_ppoll_here: its own polls pass straight on
 * (in a sanitizer's build the layers below reach poll by the name this
 * library replaces: util/sys.c), and the sets they poll stay esock's */
static __thread bool inside;

/* What poll and select do first for each descriptor: a DDP listener
 * reverted at fork becomes this process's again (a listener that cannot
 * be made one stays the TCP listener: the wait goes on, and accept says
 * why); a DDP socket or epoll set whose readiness esock keeps in user
 * space goes back to the kernel, which the wait asks (esock_ready.c).
 * Neither costs anything until a listener was reverted or a DDP socket or
 * epoll set made. */
struct before_wait {
	bool regate, kernel;
};

static bool before_wait(struct before_wait *b)
{
	b->regate = atomic_load_explicit(&esock_any_reverted, memory_order_relaxed);
	b->kernel = !inside && (atomic_load_explicit(&esock_umode_any, memory_order_relaxed) ||
				atomic_load_explicit(&esock_epoll_any, memory_order_relaxed));
	return b->regate || b->kernel;
}

static void before_wait_fd(const struct before_wait *b, int fd)
{
	if (b->regate)
		esock__listener_regate(fd);
	if (b->kernel)
		esock__ready_kernel(fd);
}

static void regate_pollfds(const struct pollfd *p, nfds_t n)
{
	struct before_wait b;
	if (!before_wait(&b))
		return;
	int err = errno;
	for (nfds_t i = 0; i < n; i++)
		before_wait_fd(&b, p[i].fd);
	errno = err;
}

static void regate_sets(int nfds, const fd_set *r, const fd_set *w, const fd_set *x)
{
	struct before_wait b;
	if (!before_wait(&b))
		return;
	int err = errno;
	for (int fd = 0; fd < nfds && fd < FD_SETSIZE; fd++)
		if ((r && FD_ISSET(fd, r)) || (w && FD_ISSET(fd, w)) || (x && FD_ISSET(fd, x)))
			before_wait_fd(&b, fd);
	errno = err;
}

/* the fortified forms (_FORTIFY_SOURCE) check the array's size first */
int __poll_chk(struct pollfd *p, nfds_t n, int timeout, size_t len);
int __ppoll_chk(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask,
		size_t len);

static bool here(void)
{
	return !inside && atomic_load_explicit(&esock_here, memory_order_relaxed);
}

bool esock__waits_here(void) { return here(); }

/* whether any of the descriptors is a DDP socket */
static bool any_ddp(const struct pollfd *p, nfds_t n)
{
	for (nfds_t i = 0; i < n; i++)
		if (esock__peek(p[i].fd))
			return true;
	return false;
}

static bool epoll_ddp(int ep)
{
	return esock__fd_in_range(ep) && (esock_fdflags[ep] & FD_EPOLL_DDP);
}

int esock__ppoll_here_until(struct pollfd *p, nfds_t n, const struct timespec *t,
			    const sigset_t *mask, int (*ready)(void *), void *arg)
{
	if (!here())
		return REAL(ppoll)(p, n, t, mask);
	bool was = inside;
	inside = true;
	int r = exs_ppoll_here_until(p, n, t, mask, ready, arg);
	int err = errno;
	inside = was;
	errno = err;
	return r;
}

int esock__ppoll_here(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
	return esock__ppoll_here_until(p, n, t, mask, NULL, NULL);
}

static bool zero_time(const struct timespec *t) { return t && !t->tv_sec && !t->tv_nsec; }

static int poll_here(struct pollfd *p, nfds_t n, int timeout)
{
	if (!timeout || !here() || !any_ddp(p, n))
		return REAL(poll)(p, n, timeout);
	struct timespec t = util_ms_timespec(timeout > 0 ? (uint64_t)timeout : 0);
	return esock__ppoll_here(p, n, timeout > 0 ? &t : NULL, NULL);
}

static int ppoll_here(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
	if (zero_time(t) || !here() || !any_ddp(p, n))
		return REAL(ppoll)(p, n, t, mask);
	return esock__ppoll_here(p, n, t, mask);
}

EXPORT int(poll)(struct pollfd *p, nfds_t n, int timeout)
{
	regate_pollfds(p, n);
	return poll_here(p, n, timeout);
}

EXPORT int __poll_chk(struct pollfd *p, nfds_t n, int timeout, size_t len)
{
	if (len / sizeof(*p) < n)
		__builtin_trap(); /* as the C library's check: an overflow */
	regate_pollfds(p, n);
	return poll_here(p, n, timeout);
}

EXPORT int(ppoll)(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
	regate_pollfds(p, n);
	return ppoll_here(p, n, t, mask);
}

EXPORT int __ppoll_chk(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask,
		       size_t len)
{
	if (len / sizeof(*p) < n)
		__builtin_trap();
	regate_pollfds(p, n);
	return ppoll_here(p, n, t, mask);
}

/* A set that has held a DDP socket waits in esock (esock_ready.c): on
 * the program's thread, moving the ES-API's data (exs_ppoll_here), and
 * adding what it keeps in user space. Other waits go to the kernel, and
 * esock's own events (a set that got its first DDP socket meanwhile)
 * are taken out of what they return; if nothing is left the wait goes on
 * in esock (the time it waited is not taken off). */
static int epoll_any(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	if (max > 0 && (esock__ready_set(ep) || (timeout && here() && epoll_ddp(ep))))
		return esock__ready_wait(ep, ev, max, timeout, mask);
	int n = REAL(epoll_pwait)(ep, ev, max, timeout, mask);
	if (n > 0 && esock__ready_set(ep)) {
		n = esock__ready_filter(ep, ev, n);
		if (!n)
			return esock__ready_wait(ep, ev, max, timeout, mask);
	}
	return n;
}

EXPORT int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
	return epoll_any(ep, ev, max, timeout, NULL);
}

EXPORT int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	return epoll_any(ep, ev, max, timeout, mask);
}

EXPORT int epoll_create(int size)
{
	int ep = REAL(epoll_create)(size);
	if (ep >= 0)
		esock__ready_epoll_made(ep);
	return ep;
}

EXPORT int epoll_create1(int flags)
{
	int ep = REAL(epoll_create1)(flags);
	if (ep >= 0)
		esock__ready_epoll_made(ep);
	return ep;
}

EXPORT int select(int nfds, fd_set *r, fd_set *w, fd_set *x, struct timeval *t)
{
	regate_sets(nfds, r, w, x);
	return REAL(select)(nfds, r, w, x, t);
}

EXPORT int pselect(int nfds, fd_set *r, fd_set *w, fd_set *x, const struct timespec *t,
		   const sigset_t *mask)
{
	regate_sets(nfds, r, w, x);
	return REAL(pselect)(nfds, r, w, x, t, mask);
}

/* (its time as a struct timespec: not through esock's wait, which would
 * keep readiness in user space that the kernel's wait does not see) */
EXPORT int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *t,
			const sigset_t *mask)
{
	if (atomic_load_explicit(&esock_epoll_any, memory_order_relaxed))
		esock__ready_kernel_set(ep);
	if (!esock_libc.epoll_wait) /* (the lookups; a C library before 2.35 has no pwait2) */
		esock__libc_init();
	if (!esock_libc.epoll_pwait2) {
		errno = ENOSYS;
		return -1;
	}
	return esock_libc.epoll_pwait2(ep, ev, max, t, mask);
}

EXPORT int epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
	int err = errno;
	if (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD)
		esock__listener_regate(fd);
	/* an epoll set inside another: its own readiness must be the
	 * kernel's (esock_ready.c) */
	if (op != EPOLL_CTL_DEL && atomic_load_explicit(&esock_epoll_any, memory_order_relaxed))
		esock__ready_kernel_set(fd);
	/* a connecting socket's sets, for a fallback to plain TCP to make
	 * again on the new socket (esock_fallback.c); a due one is made first */
	struct esock *e = esock__get(fd);
	errno = err;
	int r;
	if (!e || !esock__ready_ctl(ep, op, fd, e, ev, &r)) {
		r = REAL(epoll_ctl)(ep, op, fd, ev);
		if (!r && e)
			esock__ready_track(e, ep, op, fd);
	}
	if (!r && e && (op == EPOLL_CTL_ADD || op == EPOLL_CTL_MOD) && esock__fd_in_range(ep))
		esock_fdflags[ep] |= FD_EPOLL_DDP;
	if (!r && e && e->may_fall_back)
		esock__track_epoll(e, ep, op, ev);
	return r;
}
