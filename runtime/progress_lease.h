/*
 * progress_lease.h: who moves a context's data under automatic progress,
 * the engine thread or the program's own threads (pure: the caller passes
 * the time in).
 *
 * A thread of the program that waits in uwarp (uw_cq_wait, a blocking
 * uw_get_cq_event or uw_cm_get_event) sleeps in poll(2) on the loop itself
 * and progresses when it wakes; one that polls an empty CQ progresses on
 * the spot. Either way the data reaches the thread that wants it with no
 * hop through the engine thread (a wake-up and a context switch per
 * message, and on a small machine a spinning program starves the engine
 * of its core: docs/performance.md). Meanwhile the engine thread stands
 * back, or both would wake for every message and contend for the lock.
 *
 * The engine stands back while a thread sleeps in the loop's poll, and
 * for UW_LEASE_NS after a program's thread last progressed: a program
 * that polls again within that time keeps the work. A program that stops
 * calling (it computes, or it sleeps on a descriptor of its own) gets the
 * engine back within the lease; one that says it is about to sleep
 * elsewhere (it arms a CQ, or a non-blocking channel is empty) gets it
 * back at once (uw_lease_release).
 */
#ifndef UWARP_PROGRESS_LEASE_H
#define UWARP_PROGRESS_LEASE_H

#include <stdbool.h>
#include <stdint.h>

/* 1 ms: long against a spinning poller's gap between two polls (well
 * under a microsecond to some tens of them), short against the time a
 * computing program may leave one-sided operations unserved. */
#define UW_LEASE_NS 1000000u

struct uw_lease {
	unsigned sleepers; /* program threads asleep in the loop's poll */
	uint64_t until;    /* ns: the program progressed; the engine waits till then */
};

/* A program's thread progressed the loop at @now. */
static inline void uw_lease_take(struct uw_lease *l, uint64_t now) { l->until = now + UW_LEASE_NS; }

/* The program is about to sleep outside uwarp: the engine resumes now. */
static inline void uw_lease_release(struct uw_lease *l) { l->until = 0; }

/*
 * The engine thread asks at @now whether to move the data: 0 if it
 * should, else the time until which it stands back (and asks again).
 */
static inline uint64_t uw_lease_engine_waits(const struct uw_lease *l, uint64_t now)
{
	if (l->sleepers)
		return now + UW_LEASE_NS; /* they may sleep long: look again then */
	return now < l->until ? l->until : 0;
}

#endif
