/*
 * util/handoff.c: letting waiting threads in between a worker's rounds
 * (handoff.h).
 */
#include <errno.h>

#include "clock.h"
#include "handoff.h"

void util_handoff_lock(struct util_handoff *h, pthread_mutex_t *mu)
{
	atomic_fetch_add_explicit(&h->wanted, 1, memory_order_relaxed);
	pthread_mutex_lock(mu);
	atomic_fetch_sub_explicit(&h->wanted, 1, memory_order_relaxed);
	util_handoff_taken(h);
}

void util_handoff_taken(struct util_handoff *h)
{
	if (h->offered) {
		h->offered = false;
		pthread_cond_signal(&h->cv);
	}
}

int util_handoff_init(struct util_handoff *h) { return util_cond_init(&h->cv); }

bool util_handoff_offer(struct util_handoff *h, pthread_mutex_t *mu, unsigned max_ms)
{
	if (!atomic_load_explicit(&h->wanted, memory_order_relaxed) && !h->woken)
		return false;
	h->woken = false;
	h->offered = true;
	struct timespec dl = util_deadline_ms(max_ms);
	while (h->offered && pthread_cond_timedwait(&h->cv, mu, &dl) != ETIMEDOUT) {
	}
	bool taken = !h->offered;
	h->offered = false;
	return taken;
}
