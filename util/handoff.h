/*
 * util/handoff.h: a mutex's fairness for the threads that wait for it.
 *
 * A thread that works in rounds under a mutex and unlocks it only to sleep
 * (a progress thread while completions keep coming) keeps the others out:
 * glibc's mutex lets the thread that unlocks take it straight back. Here
 * the other threads say they wait (util_handoff_lock), and the worker,
 * between two rounds, lets one in (util_handoff_offer): it waits, the
 * mutex released, until a waiter has taken it, for at most a bound.
 */
#ifndef UWARP_UTIL_HANDOFF_H
#define UWARP_UTIL_HANDOFF_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct util_handoff {
	atomic_int wanted; /* threads blocked in util_handoff_lock */
	bool woken;        /* (under the mutex) a thread woken on a condition
			    * wants the mutex back: counts as waiting */
	bool offered;      /* (under the mutex) the worker waits to be taken up */
	pthread_cond_t cv;
};

/* Once, zeroed, before the worker's first offer (its wait reads the
 * monotonic clock). */
int util_handoff_init(struct util_handoff *h);

/* Take @mu as a thread the worker lets in. */
void util_handoff_lock(struct util_handoff *h, pthread_mutex_t *mu);
/* With @mu held again after a condition wait (or any other way): a
 * worker waiting to be taken up goes on once this thread lets go. */
void util_handoff_taken(struct util_handoff *h);
/* The worker, @mu held, between two rounds: if a thread waits, let it
 * have @mu; back (with @mu) once one took it, or after @max_ms. Returns
 * whether a thread took it. */
bool util_handoff_offer(struct util_handoff *h, pthread_mutex_t *mu, unsigned max_ms);

#endif
