/*
 * test_exs_here.c: exs_ppoll_here moves the ES-API's data on the thread
 * that waits (exs/exs_here.c): the completion of a receive and its queue's
 * notification run there, not on the progress thread; a signal that comes
 * while it spins ends the wait as it would end ppoll's sleep; otherwise
 * it returns as ppoll(2) does. Run twice by ctest: with UWARP_SPIN_US=0
 * (the wait sleeps at once, on the program's descriptors and uwarp's) and
 * with 200000 (it spins for 200 ms first). Also the policy of that spin
 * (util/spin.h, pure).
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <exs.h>

#include "../runtime/thread_wakes.h"
#include "util/spin.h"

static exs_qhandle_t Q;

static int setup(void **state)
{
	(void)state;
	if (exs_init(EXS_VERSION))
		return -1;
	Q = exs_qcreate(64);
	return Q == EXS_QHANDLE_INVALID ? -1 : 0;
}

/* a connected stream pair, both ends here */
static void pair(int *c, int *s)
{
	int l = exs_socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(exs_bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(exs_listen(l, 4), 0);
	socklen_t al = sizeof(a);
	assert_int_equal(exs_getsockname(l, (struct sockaddr *)&a, &al), 0);
	*c = exs_socket(AF_INET, SOCK_STREAM, 0);
	assert_true(*c >= 0);
	assert_int_equal(exs_connect(*c, (struct sockaddr *)&a, sizeof(a), Q, (void *)1), 0);
	*s = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	assert_true(*s >= 0);
	exs_event_t ev;
	struct timespec t = { 20, 0 };
	assert_int_equal(exs_qdequeue(Q, &ev, -1, &t), 1);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_CONNECT);
	assert_int_equal(ev.exs_evt_errno, 0);
	assert_int_equal(exs_close(l, EXS_QHANDLE_INVALID, NULL), 0);
}

/* The notified queue's events, and the thread each notification ran on. */
static int note_fd;
static pthread_t note_thread;
static atomic_int notes;
static exs_event_t note_ev;

static void on_note(exs_qhandle_t q, void *arg)
{
	(void)arg;
	exs_event_t ev;
	if (exs_qdequeue(q, &ev, 1, NULL) != 1)
		return;
	note_ev = ev;
	note_thread = pthread_self();
	atomic_fetch_add(&notes, 1);
	eventfd_write(note_fd, 1);
}

/* A connected pair and a queue whose notification is @fn, for its
 * receives; note_fd is what @fn raises. */
static exs_qhandle_t notified_pair(exs_qnotify_fn fn, int *c, int *s)
{
	pair(c, s);
	exs_qhandle_t n = exs_qcreate(8);
	assert_true(n != EXS_QHANDLE_INVALID);
	note_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(note_fd >= 0);
	assert_int_equal(exs_qnotify(n, fn, NULL), 0);
	return n;
}

static void close_notified(exs_qhandle_t n, int c, int s)
{
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(s, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_qnotify(n, NULL, NULL), 0);
	close(note_fd);
}

struct sender {
	pid_t waiter;
	int fd;
	atomic_bool sent;
};

/* Sends once the waiting thread is inside exs_ppoll_here (in ppoll:
 * asleep there, or looking at the program's descriptors between two
 * rounds), so that the bytes arrive while it holds the lease. */
static void *send_when_waiting(void *arg)
{
	struct sender *sd = arg;
	while (!thread_in_syscall(sd->waiter, SYS_ppoll))
		sched_yield();
	static const char msg[] = "here";
	if (exs_send(sd->fd, msg, sizeof(msg), 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) ==
	    (ssize_t)sizeof(msg))
		atomic_store(&sd->sent, true);
	return NULL;
}

/* One receive on a notified queue, sent by a thread of its own once this
 * one waits. */
struct note_round {
	char buf[16];
	struct sender sd;
	pthread_t t;
};

/* posts a receive on @s with queue @n, and starts @fn sending on @c */
static void note_round_begin(struct note_round *r, exs_qhandle_t n, int c, int s,
			     void *(*fn)(void *))
{
	memset(r->buf, 0, sizeof(r->buf));
	atomic_store(&notes, 0);
	assert_int_equal(exs_recv(s, r->buf, sizeof(r->buf), 0, n, r->buf, EXS_MHANDLE_INVALID), 0);
	r->sd = (struct sender){ (pid_t)syscall(SYS_gettid), c, false };
	assert_int_equal(pthread_create(&r->t, NULL, fn, &r->sd), 0);
}

/* the sender done and the receive's one notification seen: whether that
 * ran on this thread */
static bool note_round_end(struct note_round *r)
{
	pthread_join(r->t, NULL);
	assert_true(atomic_load(&r->sd.sent));
	eventfd_t v;
	assert_int_equal(eventfd_read(note_fd, &v), 0);
	assert_int_equal(atomic_load(&notes), 1);
	assert_int_equal(note_ev.exs_evt_type, EXS_EVT_RECV);
	assert_int_equal(note_ev.exs_evt_errno, 0);
	assert_string_equal(r->buf, "here");
	return pthread_equal(note_thread, pthread_self());
}

static void a_receive_completes_on_the_thread_that_waits(void **state)
{
	(void)state;
	int c, s;
	exs_qhandle_t n = notified_pair(on_note, &c, &s);
	for (int round = 0; round < 5; round++) {
		struct note_round r;
		note_round_begin(&r, n, c, s, send_when_waiting);
		struct pollfd p = { note_fd, POLLIN, 0 };
		struct timespec ten = { 10, 0 };
		assert_int_equal(exs_ppoll_here(&p, 1, &ten, NULL), 1);
		assert_int_equal(p.revents, POLLIN);
		/* made here, while this thread waited: not by the progress
		 * thread, then handed over */
		assert_true(note_round_end(&r));
	}
	close_notified(n, c, s);
}

/* send_when_waiting, then waits for the notified queue's event and sends
 * again with queue Q: the event that ends the waiting thread's
 * exs_qdequeue. */
static void *send_then_end_the_wait(void *arg)
{
	struct sender *sd = arg;
	send_when_waiting(sd);
	if (!atomic_exchange(&sd->sent, false))
		return NULL;
	struct pollfd p = { note_fd, POLLIN, 0 };
	static const char msg[] = "here";
	if (poll(&p, 1, 10000) == 1 &&
	    exs_send(sd->fd, msg, sizeof(msg), 0, Q, (void *)2, EXS_MHANDLE_INVALID) == 0)
		atomic_store(&sd->sent, true);
	return NULL;
}

/* A thread waiting in exs_qdequeue (or a call without a queue) sleeps and
 * leaves the data to the progress thread: a bulk receiver that read the
 * stream on its one thread posted its receives again late (the paper's
 * rules then stayed in the ring: docs/performance.md, "The ES-API's own
 * waits"). Only exs_ppoll_here, through which esock waits, moves it. */
static void a_queue_wait_leaves_the_data_to_the_progress_thread(void **state)
{
	(void)state;
	int c, s;
	exs_qhandle_t n = notified_pair(on_note, &c, &s);
	struct note_round r;
	note_round_begin(&r, n, c, s, send_then_end_the_wait);
	exs_event_t ev;
	struct timespec ten = { 10, 0 };
	assert_int_equal(exs_qdequeue(Q, &ev, -1, &ten), 1);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_SEND);
	assert_false(note_round_end(&r));
	close_notified(n, c, s);
}

/* So does a thread waiting in exs_poll: a server's accept loop there that
 * moved the data left the streams its other threads served with late
 * adverts. */
static void an_exs_poll_wait_leaves_the_data_to_the_progress_thread(void **state)
{
	(void)state;
	int c, s;
	exs_qhandle_t n = notified_pair(on_note, &c, &s);
	struct note_round r;
	note_round_begin(&r, n, c, s, send_when_waiting);
	struct pollfd p = { note_fd, POLLIN, 0 };
	assert_int_equal(exs_poll(&p, 1, 10000), 1);
	assert_false(note_round_end(&r));
	close_notified(n, c, s);
}

/* The executable exports sched_yield (tests/CMakeLists.txt), so it stands
 * in for the C library's in the ES-API's library too: the spin's first
 * yield sends this thread SIGUSR1 when asked, at a moment the wait is
 * known to be spinning in user space. */
static __thread bool raise_at_yield;
static __thread int raised;

__attribute__((visibility("default"))) int sched_yield(void)
{
	if (raise_at_yield) {
		raise_at_yield = false;
		raised++;
		pthread_kill(pthread_self(), SIGUSR1);
	}
	return (int)syscall(SYS_sched_yield);
}

static atomic_int handled;
static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&handled, 1);
}

struct spin_wait {
	int fd;
	int n, err, raised;
};

static void *wait_with_raise(void *arg)
{
	struct spin_wait *w = arg;
	struct pollfd p = { w->fd, POLLIN, 0 };
	struct timespec two = { 2, 0 };
	raise_at_yield = true;
	errno = 0;
	w->n = exs_ppoll_here(&p, 1, &two, NULL);
	w->err = errno;
	raise_at_yield = false;
	w->raised = raised;
	return NULL;
}

static void a_signal_that_comes_while_it_spins_ends_the_wait(void **state)
{
	(void)state;
	int c, s;
	pair(&c, &s); /* (connections the rounds look at) */
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(fd >= 0);
	struct sigaction sa = { .sa_handler = on_usr1 }, old;
	sigemptyset(&sa.sa_mask);
	assert_int_equal(sigaction(SIGUSR1, &sa, &old), 0);
	atomic_store(&handled, 0);
	/* on a thread of its own: this one's spin may have learnt not to
	 * spin (util/spin.h: a yield that came back late, on a loaded
	 * machine, in an earlier test) */
	struct spin_wait w = { fd, 0, 0, 0 };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, wait_with_raise, &w), 0);
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	assert_int_equal(w.raised, 1); /* (it spun) */
	/* the handler ran and the wait ended, as ppoll's sleep ends: a spin
	 * that let the handler run in user space would wait on for the 2 s */
	assert_int_equal(atomic_load(&handled), 1);
	assert_int_equal(w.n, -1);
	assert_int_equal(w.err, EINTR);
	close(fd);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(s, EXS_QHANDLE_INVALID, NULL), 0);
}

/* A notification that blocks, the first time, until a second thread has
 * done rounds of its own meanwhile (in exs_ppoll_here, for 300 ms after
 * its send): the second thread must not run it too. */
static sem_t entered, release;
static atomic_int in_note, most_in_note, note_calls, note_events;

static void on_note_slow(exs_qhandle_t q, void *arg)
{
	(void)arg;
	int now = atomic_fetch_add(&in_note, 1) + 1;
	int most = atomic_load(&most_in_note);
	while (now > most && !atomic_compare_exchange_weak(&most_in_note, &most, now))
		;
	if (atomic_fetch_add(&note_calls, 1) == 0) {
		sem_post(&entered);
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_sec += 10; /* (the bound of a hang) */
		sem_timedwait(&release, &t);
	}
	exs_event_t ev[4];
	int n = exs_qdequeue(q, ev, 4, NULL);
	if (n > 0) {
		atomic_fetch_add(&note_events, n);
		eventfd_write(note_fd, (eventfd_t)n);
	}
	atomic_fetch_sub(&in_note, 1);
}

static void *send_while_notified(void *arg)
{
	int fd = *(int *)arg;
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	t.tv_sec += 10;
	if (sem_timedwait(&entered, &t) == 0 &&
	    exs_send(fd, "m2", 3, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) == 3) {
		/* rounds on this thread for a while: the second receive
		 * completes in one of them, and its notification is due */
		int idle = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		struct pollfd p = { idle, POLLIN, 0 };
		struct timespec a_while = { 0, 300000000 };
		exs_ppoll_here(&p, 1, &a_while, NULL);
		close(idle);
	}
	sem_post(&release);
	return NULL;
}

static void one_thread_at_a_time_runs_a_notification(void **state)
{
	(void)state;
	int c, s;
	sem_init(&entered, 0, 0);
	sem_init(&release, 0, 0);
	exs_qhandle_t n = notified_pair(on_note_slow, &c, &s);
	char a[3], b[3];
	/* (two receives of a message each: with the default dynamic stream
	 * each send's bytes fill one) */
	assert_int_equal(exs_recv(s, a, sizeof(a), MSG_WAITALL, n, a, EXS_MHANDLE_INVALID), 0);
	assert_int_equal(exs_recv(s, b, sizeof(b), MSG_WAITALL, n, b, EXS_MHANDLE_INVALID), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, send_while_notified, &c), 0);
	assert_int_equal(exs_send(c, "m1", 3, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID),
			 3);
	while (atomic_load(&note_events) < 2) {
		struct pollfd p = { note_fd, POLLIN, 0 };
		struct timespec ten = { 10, 0 };
		assert_int_equal(exs_ppoll_here(&p, 1, &ten, NULL), 1);
		eventfd_t v;
		eventfd_read(note_fd, &v);
	}
	pthread_join(t, NULL);
	assert_int_equal(atomic_load(&most_in_note), 1);
	assert_int_equal(atomic_load(&note_events), 2);
	assert_string_equal(a, "m1");
	assert_string_equal(b, "m2");
	close_notified(n, c, s);
	sem_destroy(&entered);
	sem_destroy(&release);
}

static void it_returns_as_ppoll_does(void **state)
{
	(void)state;
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(fd >= 0);
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { fd, POLLOUT, 0 } };
	/* nothing readable: the time runs out */
	struct timespec t = { 0, 30000000 };
	assert_int_equal(exs_ppoll_here(p, 1, &t, NULL), 0);
	assert_int_equal(p[0].revents, 0);
	/* each ready entry counts, with its events */
	eventfd_write(fd, 1);
	assert_int_equal(exs_ppoll_here(p, 2, &t, NULL), 2);
	assert_int_equal(p[0].revents, POLLIN);
	assert_int_equal(p[1].revents, POLLOUT);
	/* a closed descriptor is POLLNVAL, as ppoll says it */
	struct pollfd bad = { 1000000, POLLIN, 0 };
	assert_int_equal(exs_ppoll_here(&bad, 1, &t, NULL), 1);
	assert_int_equal(bad.revents, POLLNVAL);
	/* a time that is not one */
	struct timespec nonsense = { 0, 1000000000 };
	errno = 0;
	assert_int_equal(exs_ppoll_here(p, 1, &nonsense, NULL), -1);
	assert_int_equal(errno, EINVAL);
	/* the program's mask during the wait, its own after */
	sigset_t block, now;
	sigemptyset(&block);
	sigaddset(&block, SIGUSR2);
	eventfd_t v;
	eventfd_read(fd, &v);
	assert_int_equal(exs_ppoll_here(p, 1, &t, &block), 0);
	pthread_sigmask(SIG_SETMASK, NULL, &now);
	assert_false(sigismember(&now, SIGUSR2));
	close(fd);
}

/* While a thread sleeps in exs_ppoll_here on a quiet descriptor the
 * progress thread stands back, looking again after 1, 2, 4, ... ms up to
 * 128 ms (util/progress_lease.h): about a dozen wake-ups in 600 ms. It
 * looked every millisecond before, some six hundred (fewer only on a
 * machine too busy to run it that often). */
static void a_quiet_wait_leaves_the_progress_thread_asleep(void **state)
{
	(void)state;
	const char *spin = getenv("UWARP_SPIN_US");
	if (spin && strcmp(spin, "0"))
		skip(); /* (a spin holds the lease and is seen by it) */
	int c, s;
	pair(&c, &s); /* (the progress thread runs once there are connections) */
	int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	assert_true(fd >= 0);
	struct pollfd p = { fd, POLLIN, 0 };
	struct timespec t = { 0, 600000000 };
	long before = thread_wakes_of_others();
	assert_true(before >= 0);
	assert_int_equal(exs_ppoll_here(&p, 1, &t, NULL), 0);
	long woke = thread_wakes_of_others() - before;
	printf("other threads woke %ld times in 600 ms\n", woke);
	assert_true(woke < 60);
	close(fd);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(s, EXS_QHANDLE_INVALID, NULL), 0);
}

/* The spin before a sleep (util/spin.h, pure): a reply that came just
 * after it doubles it, up to the maximum; one that took longer than the
 * maximum halves it, down to the base; a base of 0 never spins. */
static void the_spin_grows_for_replies_just_after_it_and_shrinks_for_late_ones(void **state)
{
	(void)state;
	const uint64_t base = 20000;
	struct util_spin s = { 0 };
	assert_int_equal(util_spin_ns(&s, base), base);
	util_spin_ended(&s, base, 10000); /* 20 + 10 us: the next spin catches it */
	assert_int_equal(util_spin_ns(&s, base), 40000);
	util_spin_ended(&s, base, 50000);
	assert_int_equal(util_spin_ns(&s, base), 80000);
	util_spin_ended(&s, base, 100000);
	assert_int_equal(util_spin_ns(&s, base), 160000);
	util_spin_ended(&s, base, 40000); /* (160 + 40 us: still within) */
	assert_int_equal(util_spin_ns(&s, base), UTIL_SPIN_MAX_NS);
	/* the peer now answers after 300 us: spinning cannot catch it */
	util_spin_ended(&s, base, 100000);
	assert_int_equal(util_spin_ns(&s, base), UTIL_SPIN_MAX_NS / 2);
	for (int i = 0; i < 8; i++)
		util_spin_ended(&s, base, 1000000);
	assert_int_equal(util_spin_ns(&s, base), base);
	/* UWARP_SPIN_US=0: no spin, whatever the sleeps */
	struct util_spin z = { 0 };
	util_spin_ended(&z, 0, 1000);
	assert_int_equal(util_spin_ns(&z, 0), 0);
	/* a base above the maximum stays the spin */
	struct util_spin big = { 0 };
	util_spin_ended(&big, 2 * UTIL_SPIN_MAX_NS, 1000);
	assert_int_equal(util_spin_ns(&big, 2 * UTIL_SPIN_MAX_NS), 2 * UTIL_SPIN_MAX_NS);
}

/* The spin stops when the CPU is busy (util/spin.h, pure): a yield that
 * comes back late (another task had the CPU for a time slice) ends the
 * spin; the next 8 waits sleep at once, twice as many after each late
 * yield (up to 1024), one fewer for each undisturbed spin since.
 * A spinning waiter on a busy machine otherwise hands the other task a
 * whole slice at each yield. */
static void a_late_yield_ends_the_spin_and_the_next_waits_sleep_at_once(void **state)
{
	(void)state;
	const uint64_t base = 20000;
	struct util_spin s = { 0 };
	util_spin_ended(&s, base, 10000);
	util_spin_ended(&s, base, 10000);
	assert_int_equal(util_spin_ns(&s, base), 80000);
	/* a yield back within the limit: spin on */
	assert_true(util_spin_yielded(&s, 2000));
	assert_int_equal(util_spin_ns(&s, base), 80000);
	/* a late one: this wait spins no more */
	assert_false(util_spin_yielded(&s, UTIL_SPIN_LATE_NS + 1));
	assert_int_equal(util_spin_ns(&s, base), 0);
	util_spin_ended(&s, base, 3000000);
	for (int i = 0; i < 8; i++) {
		assert_int_equal(util_spin_ns(&s, base), 0);
		util_spin_ended(&s, base, 30000);
	}
	/* spins resume at the base, not at what they had learnt */
	assert_int_equal(util_spin_ns(&s, base), base);
	/* late again: twice as many waits sleep at once */
	assert_false(util_spin_yielded(&s, 4000000));
	util_spin_ended(&s, base, 0);
	int skipped = 0;
	while (!util_spin_ns(&s, base)) {
		util_spin_ended(&s, base, 30000);
		skipped++;
	}
	assert_int_equal(skipped, 16);
	/* each undisturbed spin takes one off: after 12 of them the next
	 * late yield skips 2 x (16 - 12) */
	for (int i = 0; i < 12; i++)
		util_spin_ended(&s, base, 0);
	assert_false(util_spin_yielded(&s, 4000000));
	util_spin_ended(&s, base, 0);
	for (skipped = 0; !util_spin_ns(&s, base); skipped++)
		util_spin_ended(&s, base, 30000);
	assert_int_equal(skipped, 8);
	/* late yield after late yield: the skip doubles up to its maximum */
	for (int i = 0; i < 12; i++) {
		assert_false(util_spin_yielded(&s, 4000000));
		util_spin_ended(&s, base, 0);
		while (!util_spin_ns(&s, base))
			util_spin_ended(&s, base, 30000);
	}
	assert_false(util_spin_yielded(&s, 4000000));
	util_spin_ended(&s, base, 0);
	for (skipped = 0; !util_spin_ns(&s, base); skipped++)
		util_spin_ended(&s, base, 30000);
	assert_int_equal(skipped, UTIL_SPIN_SKIP_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(
			the_spin_grows_for_replies_just_after_it_and_shrinks_for_late_ones),
		cmocka_unit_test(a_late_yield_ends_the_spin_and_the_next_waits_sleep_at_once),
		cmocka_unit_test(a_receive_completes_on_the_thread_that_waits),
		cmocka_unit_test(a_queue_wait_leaves_the_data_to_the_progress_thread),
		cmocka_unit_test(an_exs_poll_wait_leaves_the_data_to_the_progress_thread),
		cmocka_unit_test(one_thread_at_a_time_runs_a_notification),
		cmocka_unit_test(it_returns_as_ppoll_does),
		cmocka_unit_test(a_quiet_wait_leaves_the_progress_thread_asleep),
	};
	const struct CMUnitTest spinning[] = {
		cmocka_unit_test(a_signal_that_comes_while_it_spins_ends_the_wait),
	};
	int failed = cmocka_run_group_tests(tests, setup, NULL);
	/* (only a wait that spins has a spin to catch a signal in) */
	const char *spin = getenv("UWARP_SPIN_US");
	if (spin && strcmp(spin, "0"))
		failed += cmocka_run_group_tests(spinning, NULL, NULL);
	return failed;
}
