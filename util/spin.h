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
 *
 * A spin is only worth its CPU while a CPU is free. Each turn of it yields
 * (the peer may need this core); when a yield comes back late, another
 * task ran on this CPU meanwhile: the machine is busy, and a spinning
 * waiter hands a whole time slice (milliseconds) to whatever else is
 * runnable each time it yields, while a sleeper's wake-up runs at once.
 * Under two CPU hogs on a 2-core machine a 64-byte ping-pong's median went
 * from 20 us to 1-8 ms so (docs/performance.md). So a late yield ends the
 * spin and the next waits sleep at once: 8 of them, twice as many after
 * each late yield (up to 1024), one fewer for each spin that came back
 * undisturbed since.
 */
#ifndef UWARP_UTIL_SPIN_H
#define UWARP_UTIL_SPIN_H

#include <stdbool.h>
#include <stdint.h>

/* the longest spin (the kernel's halt polling stops at the same) */
#define UTIL_SPIN_MAX_NS 200000u
/* A yield with nothing else runnable on the CPU returns within about a
 * microsecond, and one that ran the peer's thread for its turn within
 * some tens: this is another task's time slice (so is a turn of a poll
 * that took this long: tools/perf/perf_wait.c). */
#define UTIL_SPIN_LATE_NS 100000u
/* waits that sleep at once after a late yield: the first, the most */
#define UTIL_SPIN_SKIP_MIN 8u
#define UTIL_SPIN_SKIP_MAX 1024u

struct util_spin {
	uint64_t ns;      /* the spin now; below the base (0 at first): the base */
	uint32_t skip;    /* waits left that sleep at once (the CPU was busy) */
	uint32_t backoff; /* what skip was set to last (0: no late yield lately) */
	bool late;        /* this wait saw a late yield */
};

/* How long to spin before sleeping; @base is the configured spin (0: never
 * spin, whatever the sleeps say). */
static inline uint64_t util_spin_ns(const struct util_spin *s, uint64_t base)
{
	if (!base || s->skip || s->late)
		return 0;
	return s->ns > base ? s->ns : base;
}

/* A yield within a spin took @yield_ns: true to go on spinning, false when
 * it came back late (the wait must sleep now). */
static inline bool util_spin_yielded(struct util_spin *s, uint64_t yield_ns)
{
	if (yield_ns <= UTIL_SPIN_LATE_NS)
		return true;
	s->late = true;
	return false;
}

/* A wait ends: it spun util_spin_ns(s, base) at its start (less if a yield
 * came back late), then slept @slept_ns (0: it never slept) before what it
 * waited for came (or it gave up). */
static inline void util_spin_ended(struct util_spin *s, uint64_t base, uint64_t slept_ns)
{
	if (s->late) {
		s->late = false;
		s->backoff = s->backoff ? 2 * s->backoff : UTIL_SPIN_SKIP_MIN;
		if (s->backoff > UTIL_SPIN_SKIP_MAX)
			s->backoff = UTIL_SPIN_SKIP_MAX;
		s->skip = s->backoff;
		s->ns = 0; /* back to the base when spins resume */
		return;
	}
	if (s->skip) {
		s->skip--;
		return;
	}
	uint64_t cur = util_spin_ns(s, base);
	if (!cur)
		return;
	/* a spin no other task disturbed; one at a time, not halving:
	 * under steady contention a few short undisturbed waits between
	 * late yields would otherwise keep the back-off low, and each late
	 * yield costs a time slice */
	if (s->backoff)
		s->backoff--;
	if (!slept_ns)
		return;
	if (cur + slept_ns <= UTIL_SPIN_MAX_NS)
		s->ns = 2 * cur < UTIL_SPIN_MAX_NS ? 2 * cur : UTIL_SPIN_MAX_NS;
	else
		s->ns = cur / 2 > base ? cur / 2 : base;
}

#endif
