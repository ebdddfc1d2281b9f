/*
 * util/progress_lease.h: who moves the data, a progress thread or the
 * program's own threads (pure: the caller passes the time in). The
 * runtime's engine thread under automatic progress (runtime/) and the
 * ES-API's progress thread under esock's waits (exs/exs_here.c) use it.
 *
 * A thread of the program that waits in uwarp (uw_cq_wait, a blocking
 * uw_get_cq_event or uw_cm_get_event; esock's poll and epoll_wait) sleeps
 * in poll(2) on the loop itself and progresses when it wakes; one that
 * polls an empty CQ progresses on the spot. Either way the data reaches
 * the thread that wants it with no hop through the progress thread (a
 * wake-up and a context switch per message, and on a small machine a
 * spinning program starves that thread of its core: docs/performance.md).
 * Meanwhile the progress thread stands back, or both would wake for every
 * message and contend for the lock.
 *
 * It stands back while a thread sleeps in the loop's poll, and for
 * UTIL_LEASE_NS after a program's thread last progressed, or, holding the
 * lease, posted or took completions: a program that waits again within
 * that time keeps the work. A program that stops
 * calling (it computes, or it sleeps on a descriptor of its own) gets the
 * progress thread back within the lease; one that says it is about to
 * sleep elsewhere (it arms a CQ, or a non-blocking channel is empty) gets
 * it back at once (util_lease_release).
 */
#ifndef UWARP_UTIL_PROGRESS_LEASE_H
#define UWARP_UTIL_PROGRESS_LEASE_H

#include <stdbool.h>
#include <stdint.h>

/* 1 ms: long against a spinning poller's gap between two polls (well
 * under a microsecond to some tens of them), short against the time a
 * computing program may leave one-sided operations unserved. */
#define UTIL_LEASE_NS 1000000u

/* While one sleep goes on, the engine looks again after 1, 2, 4, ... ms,
 * up to this: an idle program asleep in a wait costs its engine thread
 * some ten wake-ups a second, not a thousand. Since it then looks later
 * than a lease from now, the last sleeper to leave wakes it
 * (util_lease_sleep_end), as the program may go on to compute. */
#define UTIL_LEASE_DEEP_NS 128000000u

struct util_lease {
	unsigned sleepers; /* program threads asleep in the loop's poll */
	uint64_t until;    /* ns: the program progressed; the engine waits till then */
	uint64_t sleeps;   /* sleeps begun, ever */
	uint64_t seen;     /* the engine's: sleeps at its last look */
	uint64_t step;     /* the engine's: its wait while one sleep lasts (0: none yet) */
	bool deep;         /* the engine waits longer than a lease: wake it when they leave */
};

/* A program's thread progressed the loop at @now. */
static inline void util_lease_take(struct util_lease *l, uint64_t now)
{
	l->until = now + UTIL_LEASE_NS;
}

/* A program's thread that holds the lease called in again without
 * progressing (it posted, or took completions it found): it is still at
 * work and will progress at its next empty poll, so the lease runs on. One
 * that gave the work back (it armed a CQ and sleeps on its channel) does
 * not take it by posting: nobody would move the rest of its request. */
static inline void util_lease_keep(struct util_lease *l, uint64_t now)
{
	if (now < l->until)
		l->until = now + UTIL_LEASE_NS;
}

/* The program is about to sleep outside uwarp: the engine resumes now. */
static inline void util_lease_release(struct util_lease *l) { l->until = 0; }

/* A program's thread goes to sleep in the loop's poll. */
static inline void util_lease_sleep_begin(struct util_lease *l)
{
	l->sleepers++;
	l->sleeps++;
}

/* It woke: true when the caller must wake the engine (the last sleeper
 * left while the engine waits longer than a lease). */
static inline bool util_lease_sleep_end(struct util_lease *l)
{
	if (--l->sleepers || !l->deep)
		return false;
	l->deep = false;
	return true;
}

/*
 * The engine asks at @now whether to move the data: 0 if it should, else
 * the time until which it stands back (and asks again, or is woken).
 */
static inline uint64_t util_lease_engine_waits(struct util_lease *l, uint64_t now)
{
	if (l->sleepers) {
		/* no sleep began since its last look: one has lasted it through */
		if (!l->step || l->sleeps != l->seen)
			l->step = UTIL_LEASE_NS;
		else if (l->step < UTIL_LEASE_DEEP_NS)
			l->step *= 2;
		l->seen = l->sleeps;
		l->deep = l->step > UTIL_LEASE_NS;
		return now + l->step;
	}
	l->step = 0;
	l->deep = false;
	return now < l->until ? l->until : 0;
}

#endif
