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
 * The kernel decides as for the socket call itself (signal(7)): without a
 * timeout the thread reads its eventfd, a blocking read, which the kernel
 * restarts after a handler with SA_RESTART and fails with EINTR after one
 * without; with a timeout (SO_RCVTIMEO, SO_SNDTIMEO) it polls, which a
 * handler always ends, as it ends a socket call that has a timeout.
 */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>

#include "esock_internal.h"
#include "util/clock.h"
#include "util/evfd.h"

struct esock_waiter {
	int fd;
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

void esock__wake(struct esock *e)
{
	for (struct esock_waiter *w = e->waiters; w; w = w->next)
		util_evfd_raise(w->fd);
	pthread_cond_broadcast(&e->cv);
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
	struct esock_waiter w = { fd, e->waiters };
	e->waiters = &w;
	pthread_mutex_unlock(&e->mu);
	int rc = 0;
	if (!ms) {
		eventfd_t v;
		if (eventfd_read(fd, &v) < 0 && errno == EINTR)
			rc = EINTR;
	} else {
		struct pollfd p = { fd, POLLIN, 0 };
		int n = REAL(poll)(&p, 1, (int)ms);
		if (n == 0)
			rc = ETIMEDOUT;
		else if (n < 0 && errno == EINTR)
			rc = EINTR;
		else if (n > 0)
			util_evfd_lower(fd); /* (non-blocking there: it is raised) */
	}
	pthread_mutex_lock(&e->mu);
	for (struct esock_waiter **pp = &e->waiters; *pp; pp = &(*pp)->next)
		if (*pp == &w) {
			*pp = w.next;
			break;
		}
	return rc;
}
