/*
 * test_handoff.c: util/handoff.h. A worker that keeps a mutex round after
 * round, unlocking it never (as the ES-API's progress thread did while
 * completions kept coming), lets a thread that waits for the mutex in
 * between two rounds, and a thread woken on a condition as well; with
 * nobody waiting it does not stop at all.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/clock.h"
#include "util/handoff.h"

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static struct util_handoff h; /* util_handoff_init in main */
static atomic_bool running, got_in;
static bool woke; /* under mu */

struct worker {
	bool offer;      /* the fix under test: offer between rounds */
	bool wake;       /* signal cv in the first round, as a completion does */
	unsigned ms;     /* how long the rounds go on at most */
	bool let_in;     /* result: a thread got in while the rounds went on */
	uint64_t rounds; /* result */
};

/* Rounds under the mutex until a thread says it got in, or w->ms (the
 * failure: it never did). */
static void *work(void *arg)
{
	struct worker *w = arg;
	pthread_mutex_lock(&mu);
	atomic_store(&running, true);
	uint64_t deadline = util_now_ms() + w->ms;
	while (!atomic_load(&got_in) && util_now_ms() < deadline) {
		for (volatile int i = 0; i < 1000; i++) {
		}
		if (w->wake && !w->rounds) {
			woke = true;
			h.woken = true; /* the thread on cv wants the mutex back */
			pthread_cond_signal(&cv);
		}
		w->rounds++;
		if (w->offer)
			util_handoff_offer(&h, &mu, 1);
	}
	w->let_in = atomic_load(&got_in);
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* A worker running rounds; this thread waits for the mutex the way an
 * application thread does; whether the worker saw it get in. */
static bool waiter_gets_in(struct worker *w)
{
	pthread_t t;
	atomic_store(&running, false);
	atomic_store(&got_in, false);
	assert_int_equal(pthread_create(&t, NULL, work, w), 0);
	while (!atomic_load(&running))
		sched_yield();
	util_handoff_lock(&h, &mu);
	atomic_store(&got_in, true);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	return w->let_in;
}

static void a_waiting_thread_gets_in_between_rounds(void **state)
{
	(void)state;
	struct worker w = { .offer = true, .ms = 20000 };
	assert_true(waiter_gets_in(&w));
}

/* Without the offer the worker keeps the mutex until it stops. */
static void without_the_offer_it_never_does(void **state)
{
	(void)state;
	struct worker w = { .offer = false, .ms = 300 };
	assert_false(waiter_gets_in(&w));
}

static void a_thread_woken_on_a_condition_gets_in(void **state)
{
	(void)state;
	struct worker w = { .offer = true, .wake = true, .ms = 20000 };
	pthread_t t;
	pthread_mutex_lock(&mu);
	woke = false;
	atomic_store(&running, false);
	atomic_store(&got_in, false);
	assert_int_equal(pthread_create(&t, NULL, work, &w), 0);
	while (!woke)
		pthread_cond_wait(&cv, &mu); /* lets the worker start */
	util_handoff_taken(&h);
	atomic_store(&got_in, true);
	pthread_mutex_unlock(&mu);
	pthread_join(t, NULL);
	assert_true(w.let_in);
}

/* (Were it to wait, a thousand offers of 1 s each would outlast the
 * test's timeout.) */
static void with_nobody_waiting_the_offer_returns_at_once(void **state)
{
	(void)state;
	pthread_mutex_lock(&mu);
	int taken = 0;
	for (int i = 0; i < 1000; i++)
		taken += util_handoff_offer(&h, &mu, 1000);
	assert_false(h.offered);
	pthread_mutex_unlock(&mu);
	assert_int_equal(taken, 0);
}

int main(void)
{
	util_handoff_init(&h);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_waiting_thread_gets_in_between_rounds),
		cmocka_unit_test(without_the_offer_it_never_does),
		cmocka_unit_test(a_thread_woken_on_a_condition_gets_in),
		cmocka_unit_test(with_nobody_waiting_the_offer_returns_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
