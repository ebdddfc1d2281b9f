/*
 * util/spin.h: how long a waiting thread spins before it sleeps, adapted
 * to how long its sleeps turn out to last (pure: the caller measures).
 *
 * A thread that waits for a reply spins first (UWARP_SPIN_US, 20 us by
 * default) and then sleeps in poll(2); waking a sleeper costs the wake-up
 * of an idle CPU, on a virtual machine some tens of microseconds. A reply
 * that comes just after the spin ended pays all of it: a 64-byte ping-pong
 * over esock whose one-way time is a little above the spin (the advert now
 * rides with the reply instead of arriving ahead of it as a wake-up call)
 * lost a fifth of its speed so (docs/performance.md). As the kernel's halt
 * polling does for a virtual CPU: a wait whose spin and sleep together
 * lasted at most UTIL_SPIN_MAX_NS doubles the spin (up to that), so the
 * next one catches its reply spinning; a longer one halves it, down to the
 * base. A thread whose peer answers later than that (or is idle) keeps the
 * base, and its CPU.
 */
#ifndef UWARP_UTIL_SPIN_H
#define UWARP_UTIL_SPIN_H

#include <stdint.h>

/* the longest spin (the kernel's halt polling stops at the same) */
#define UTIL_SPIN_MAX_NS 200000u

struct util_spin {
	uint64_t ns; /* the spin now; below the base (0 at first): the base */
};

/* How long to spin before sleeping; @base is the configured spin (0: never
 * spin, whatever the sleeps say). */
static inline uint64_t util_spin_ns(const struct util_spin *s, uint64_t base)
{
	if (!base)
		return 0;
	return s->ns > base ? s->ns : base;
}

/* A wait spun util_spin_ns(s, base), then slept @slept_ns before what it
 * waited for came (or it gave up). */
static inline void util_spin_slept(struct util_spin *s, uint64_t base, uint64_t slept_ns)
{
	uint64_t cur = util_spin_ns(s, base);
	if (!cur)
		return;
	if (cur + slept_ns <= UTIL_SPIN_MAX_NS)
		s->ns = 2 * cur < UTIL_SPIN_MAX_NS ? 2 * cur : UTIL_SPIN_MAX_NS;
	else
		s->ns = cur / 2 > base ? cur / 2 : base;
}

#endif
