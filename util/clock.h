/*
 * clock.h: the one clock of uwarp's timers, deadlines and timed waits.
 *
 * Everything that measures an interval reads CLOCK_MONOTONIC, which setting
 * the date does not move: a timed wait on the wall clock would sleep an
 * hour longer, or not at all, when the clock is set back or forward while
 * it waits. Condition variables that are waited on with a deadline are made
 * with util_cond_init, so that their deadlines are on this clock too.
 */
#ifndef UWARP_UTIL_CLOCK_H
#define UWARP_UTIL_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

static inline uint64_t util_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline uint64_t util_now_ms(void) { return util_now_ns() / 1000000u; }

/* seconds, for tools that print rates */
static inline double util_now_s(void) { return (double)util_now_ns() * 1e-9; }

/* The monotonic time @sec seconds and @nsec nanoseconds from now, as
 * pthread_cond_timedwait takes it for a util_cond_init variable. */
static inline struct timespec util_deadline(time_t sec, long nsec)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += sec + nsec / 1000000000L;
	ts.tv_nsec += nsec % 1000000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

/* @ms milliseconds as an interval (ppoll's timeout) */
static inline struct timespec util_ms_timespec(uint64_t ms)
{
	return (struct timespec){ (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
}

static inline struct timespec util_deadline_ms(uint64_t ms)
{
	return util_deadline((time_t)(ms / 1000), (long)(ms % 1000) * 1000000L);
}

/* has the monotonic clock reached @t? */
static inline int util_passed(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > t->tv_sec || (now.tv_sec == t->tv_sec && now.tv_nsec >= t->tv_nsec);
}

/* A condition variable whose timed waits read the monotonic clock. */
static inline int util_cond_init(pthread_cond_t *c)
{
	pthread_condattr_t ca;
	int rc = pthread_condattr_init(&ca);
	if (rc)
		return rc;
	rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	if (!rc)
		rc = pthread_cond_init(c, &ca);
	pthread_condattr_destroy(&ca);
	return rc;
}

#endif
