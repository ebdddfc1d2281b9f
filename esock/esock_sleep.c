/*
 * esock_sleep.c: how a blocking call on a DDP socket sleeps, and how a
 * signal ends that sleep as it would end the socket call.
 *
 * A thread that waits (a blocking read, write or connect) sleeps on an
 * eventfd of its own, listed on the socket; esock__wake raises every listed
 * one. A condition variable would do the waking, but no signal ends a wait
 * on one: a program whose handler has no SA_RESTART (qperf stops its timed
 * runs with SIGALRM so, and many servers stop so) expects its blocked
 * recv(2) to fail with EINTR, and waited instead for data that never came.
 *
 * The thread waits in exs_ppoll_here, which moves the ES-API's data on
 * this thread meanwhile (the bytes or the room it waits for are made
 * here, with no hand-off to the progress thread and back). A handler
 * ends that wait as it ends poll(2); the socket call itself (signal(7))
 * fails with EINTR then only if it has a timeout (SO_RCVTIMEO,
 * SO_SNDTIMEO) or the handler has no SA_RESTART, and is restarted after
 * one with SA_RESTART. Which handler ran is not known here: the wait goes
 * on if every handler the thread lets in has SA_RESTART, and fails with
 * EINTR if one has not (a program with such a handler copes with EINTR
 * from this call: its signal could have come). Where the waits leave the
 * data to the progress thread (ThreadSanitizer's build, esock_engine.c),
 * a wait without a timeout reads the eventfd, a blocking read the kernel
 * restarts or ends exactly as it would the socket call.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/eventfd.h>

#include "esock_internal.h"
#include "util/clock.h"
#include "util/evfd.h"

struct esock_waiter {
	int fd;
	_Atomic bool woken; /* esock__wake came (its own thread raises no fd) */
	struct esock_waiter *next;
};

/* this thread's eventfd (blocking), made at its first wait and closed when
 * the thread ends; -1 if none could be made */
static pthread_key_t sleep_key;
static pthread_once_t sleep_once = PTHREAD_ONCE_INIT;
static __thread int sleep_fd = -1;

static void sleep_fd_close(void *v) { REAL(close)((int)(intptr_t)v - 1); }
static void sleep_key_make(void) { pthread_key_create(&sleep_key, sleep_fd_close); }

static int thread_sleep_fd(void)
{
	if (sleep_fd < 0) {
		pthread_once(&sleep_once, sleep_key_make);
		int fd = eventfd(0, EFD_CLOEXEC);
		if (fd >= 0) {
			sleep_fd = esock__hide(fd); /* out of the program's numbers */
			pthread_setspecific(sleep_key, (void *)(intptr_t)(sleep_fd + 1));
		}
	}
	return sleep_fd;
}

/* A waiter's own thread wakes it in its wait's round (exs_ppoll_here
 * moved the data there): its flag says so, with no eventfd raised and
 * lowered, two system calls per message of a blocking reader
 * (docs/performance.md). Another thread raises the eventfd. */
void esock__wake(struct esock *e)
{
	for (struct esock_waiter *w = e->waiters; w; w = w->next) {
		atomic_store(&w->woken, true);
		if (w->fd != sleep_fd)
			util_evfd_raise(w->fd);
	}
	pthread_cond_broadcast(&e->cv);
}

static int woken(void *arg)
{
	const struct esock_waiter *w = arg;
	return atomic_load(&w->woken);
}

/* Whether a handler without SA_RESTART may have run: one is set for a
 * signal this thread does not block. */
static bool interrupting_handler(void)
{
	sigset_t blocked;
	pthread_sigmask(SIG_SETMASK, NULL, &blocked);
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction sa;
		if (sigismember(&blocked, sig) == 1 || sigaction(sig, NULL, &sa))
			continue;
		bool handled = (sa.sa_flags & SA_SIGINFO) ||
			       (sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
		if (handled && !(sa.sa_flags & SA_RESTART))
			return true;
	}
	return false;
}

int esock__wait(struct esock *e, unsigned ms)
{
	int fd = thread_sleep_fd();
	if (fd < 0) { /* no descriptor to spare: wait as before, signals aside */
		if (!ms) {
			pthread_cond_wait(&e->cv, &e->mu);
			return 0;
		}
		struct timespec ts = util_deadline_ms(ms);
		return pthread_cond_timedwait(&e->cv, &e->mu, &ts);
	}
	struct esock_waiter w = { .fd = fd, .next = e->waiters };
	e->waiters = &w;
	pthread_mutex_unlock(&e->mu);
	int rc = 0;
	if (!ms && !esock__waits_here()) {
		/* the progress thread raises it: a blocking read, which the
		 * kernel restarts or ends as it would the socket call */
		eventfd_t v;
		if (eventfd_read(fd, &v) < 0 && errno == EINTR)
			rc = EINTR;
	} else {
		struct pollfd p = { fd, POLLIN, 0 };
		struct timespec t = util_ms_timespec(ms);
		int n;
		while ((n = esock__ppoll_here_until(&p, 1, ms ? &t : NULL, NULL, woken, &w)) < 0 &&
		       errno == EINTR && !ms && !interrupting_handler())
			; /* restarted, as the kernel restarts the call */
		if (n == 0 && atomic_load(&w.woken))
			rc = 0; /* (woken in its own round: nothing raised) */
		else if (n == 0)
			rc = ETIMEDOUT;
		else if (n < 0 && errno == EINTR)
			rc = EINTR;
		else if (n > 0)
			util_evfd_lower(fd); /* (raised: the read does not block) */
	}
	pthread_mutex_lock(&e->mu);
	for (struct esock_waiter **pp = &e->waiters; *pp; pp = &(*pp)->next)
		if (*pp == &w) {
			*pp = w.next;
			break;
		}
	return rc;
}
