/*
 * exs_here.c: the ES-API's progress on a program's own thread while it
 * waits for descriptors (exs_ppoll_here; esock's poll, epoll_wait and its
 * blocking reads and writes).
 *
 * Through the progress thread a message crosses threads twice at each
 * end: that thread wakes for the bytes, makes the completion, and wakes
 * the program (docs/performance.md counts the futex calls and context
 * switches). A program that waits here moves the data on its own thread:
 * it runs the progress thread's round, looks at its descriptors, runs
 * the round again for up to UWARP_SPIN_US (longer for a thread whose
 * replies come just after that: util/spin.h), then sleeps in one ppoll(2) on
 * its descriptors and uwarp's own (the loop's, for network input, and a
 * bell another thread rings when it makes a completion or an event
 * meanwhile: uw_sleep_begin), and runs the round when uwarp's wake it. Meanwhile the
 * progress thread stands back (util/progress_lease.h): it leaves uwarp's
 * descriptors while such a thread sleeps on them and for a lease after
 * one last progressed, and comes back by itself when the program stops
 * waiting here.
 *
 * Signals: a handler that runs while the thread spins in user space would
 * not end the wait, as it ends ppoll's sleep (a program that stops on a
 * signal would sleep on). So the spin runs with signals blocked, and the
 * sleep unblocks them as ppoll(2) does with the program's mask: a signal
 * that came meanwhile is delivered there and the call fails with EINTR.
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "exs_internal.h"
#include "util/clock.h"
#include "util/spin.h"

/* the program's descriptors and uwarp's two, in one array on the stack
 * up to this many */
#define HERE_STACK_FDS 64

/* A round here, the lock held: until nothing more comes in, for at most
 * a few rounds (a busy stream must not keep the program from its own
 * descriptors). Whether it found anything. */
static bool rounds(void)
{
	bool any = false;
	for (int i = 0; i < 8 && exs__round(); i++)
		any = true;
	/* (a progress thread asleep on the connections since before wakes
	 * with this thread once more, finds the lease, and sleeps without
	 * them) */
	util_lease_take(&exs_rt.lease, util_now_ns());
	return any;
}

static int left_ms(uint64_t deadline)
{
	uint64_t now = util_now_ns();
	if (now >= deadline)
		return 0;
	uint64_t ms = (deadline - now + 999999) / 1000000;
	return ms > 1000000 ? 1000000 : (int)ms;
}

/* Sleep in ppoll on @fds and uwarp's descriptors, for at most @ms (-1:
 * no bound). The program's ready entries, 0 when only uwarp's woke it
 * (or the time ran out, or work came before the sleep), -1 with errno. */
static int sleep_on_both(struct pollfd *fds, nfds_t nfds, int ms, const sigset_t *mask,
			 int (*ready)(void *), void *arg)
{
	struct timespec ts;
	struct pollfd stack[HERE_STACK_FDS + 2], *all = stack;
	if (nfds > HERE_STACK_FDS) {
		all = malloc((nfds + 2) * sizeof(*all));
		if (!all) { /* (the progress thread's wait, for this once) */
			if (ms >= 0)
				ts = util_ms_timespec((uint64_t)ms);
			return util_sys_ppoll(fds, nfds, ms >= 0 ? &ts : NULL, mask);
		}
	}
	memcpy(all, fds, nfds * sizeof(*all));
	exs__lock();
	/* The last look, under the lock every thread that moves uwarp's
	 * data holds: what another thread makes after it rings the bell
	 * (uw_sleep_begin), what came before it is taken here. */
	/* (a notification this round ran may have made the caller's
	 * readiness, with no network event of its own: @ready says) */
	if (rounds() || (ready && ready(arg))) {
		pthread_mutex_unlock(&exs_rt.lock);
		if (all != stack)
			free(all);
		return 0;
	}
	int t = uw_sleep_begin(exs_rt.ctx, all + nfds);
	if (t >= 0 && (ms < 0 || t < ms))
		ms = t; /* (uwarp's timers run in its calls) */
	util_lease_sleep_begin(&exs_rt.lease);
	pthread_mutex_unlock(&exs_rt.lock);

	if (ms >= 0)
		ts = util_ms_timespec((uint64_t)ms);
	int n = util_sys_ppoll(all, nfds + 2, ms >= 0 ? &ts : NULL, mask);
	int err = errno;

	exs__lock();
	uw_sleep_end(exs_rt.ctx);
	bool wake = util_lease_sleep_end(&exs_rt.lease);
	rounds();
	pthread_mutex_unlock(&exs_rt.lock);
	/* (the progress thread, when it stood back long, finds the lease the
	 * rounds took and comes back when it runs out; woken after the lock
	 * is let go, which it would otherwise wait for at once) */
	if (wake)
		exs__wake();
	int got = 0;
	if (n > 0) {
		for (nfds_t i = 0; i < nfds; i++) {
			fds[i].revents = all[i].revents;
			got += all[i].revents != 0;
		}
	}
	if (all != stack)
		free(all);
	errno = err;
	return n < 0 ? -1 : got;
}

/* The spin before a sleep, this thread's (util/spin.h): a thread whose
 * replies come just after its spin would end learns to spin longer. */
static _Thread_local struct util_spin spin;

/* A wait that slept since @slept_at (0: it never slept) ends with @n. */
static int waited(uint64_t slept_at, int n)
{
	util_spin_ended(&spin, exs_rt.spin_ns, slept_at ? util_now_ns() - slept_at : 0);
	return n;
}

static int wait_here(struct pollfd *fds, nfds_t nfds, uint64_t deadline, const sigset_t *mask,
		     int (*ready)(void *), void *arg)
{
	uint64_t spin_until = util_now_ns() + util_spin_ns(&spin, exs_rt.spin_ns);
	uint64_t slept_at = 0;
	struct timespec zero = { 0, 0 };
	for (bool first = true;; first = false) {
		/* While it spins, a thread finds the lock taken by another that
		 * moves the data (or sends): it looks at its descriptors and
		 * spins on, rather than queue for the lock and wake the holder's
		 * futex when done (the two worker threads of a server did so
		 * for every message). The look before a sleep takes the lock. */
		if (first) {
			exs__lock();
			/* an advert held for a send (MSG_MORE) goes now, if
			 * no send took it, and an IDLE held for a receive */
			exs__flush_held();
			exs__flush_idle();
		}
		if (first || exs__trylock()) {
			rounds();
			pthread_mutex_unlock(&exs_rt.lock);
		}
		if (ready && ready(arg))
			return waited(slept_at, 0);
		int n = util_sys_ppoll(fds, nfds, &zero, NULL);
		if (n != 0)
			return waited(slept_at, n);
		uint64_t now = util_now_ns();
		if (now >= deadline)
			return waited(slept_at, 0);
		if (now < spin_until) {
			sched_yield(); /* (the peer may need this core) */
			/* ... unless another task had it meanwhile: sleep now */
			if (!util_spin_yielded(&spin, util_now_ns() - now))
				spin_until = 0;
			continue;
		}
		if (!slept_at)
			slept_at = now;
		int ms = deadline == UINT64_MAX ? -1 : left_ms(deadline);
		n = sleep_on_both(fds, nfds, ms, mask, ready, arg);
		if (n != 0)
			return waited(slept_at, n);
		/* uwarp's descriptors woke it: the round made the bytes the
		 * program waits for, or not yet; look again (once: the next
		 * sleep follows at once) */
		spin_until = 0;
	}
}

int exs_ppoll_here(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
		   const sigset_t *mask)
{
	return exs_ppoll_here_until(fds, nfds, timeout, mask, NULL, NULL);
}

int exs_ppoll_here_until(struct pollfd *fds, nfds_t nfds, const struct timespec *timeout,
			 const sigset_t *mask, int (*ready)(void *), void *arg)
{
	/* Not from the progress work itself (a wait inside a round would
	 * take the lock it holds), nor before exs_init. */
	if (!exs_rt.started || exs__on_progress_thread())
		return util_sys_ppoll(fds, nfds, timeout, mask);
	uint64_t start = util_now_ns();
	uint64_t deadline = UINT64_MAX;
	if (timeout) {
		if (timeout->tv_sec < 0 || timeout->tv_nsec < 0 || timeout->tv_nsec >= 1000000000) {
			errno = EINVAL;
			return -1;
		}
		deadline = start + (uint64_t)timeout->tv_sec * 1000000000u +
			   (uint64_t)timeout->tv_nsec;
		if (deadline < start)
			deadline = UINT64_MAX;
	}
	sigset_t all, old;
	sigfillset(&all);
	if (pthread_sigmask(SIG_SETMASK, &all, &old))
		return util_sys_ppoll(fds, nfds, timeout, mask);
	int n = wait_here(fds, nfds, deadline, mask ? mask : &old, ready, arg);
	int err = errno;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = err;
	return n;
}
