/*
 * tool_interval.h: a timed run's report every few seconds, as iperf3 and
 * perftest give one: what the last interval moved (throughput and
 * operations, or round trips and their mean time), so that a long run
 * shows its progress and its swings instead of one figure at the end.
 */
#ifndef UWARP_TOOL_INTERVAL_H
#define UWARP_TOOL_INTERVAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct tool_interval {
	double every;           /* seconds; 0: no reports */
	double t0, start, next; /* the run's start, this interval's, its end */
	uint64_t ops, bytes;    /* totals at this interval's start */
	double lat_us;          /* ...and the sum of round trips */
	FILE *out;
};

/* Reports every @every seconds (0: none) from @now on, to @out. */
void tool_interval_start(struct tool_interval *iv, double every, double now, FILE *out);
/* The run's totals at @now: operations, bytes and (latency runs; < 0
 * otherwise) the sum of their round trips in microseconds. Prints a line
 * for an interval that ended; cheap when none did. */
void tool_interval_tick(struct tool_interval *iv, double now, uint64_t ops, uint64_t bytes,
			double lat_us);
/* The run ended at @now: the last, shorter interval's line, if it moved
 * anything. */
void tool_interval_finish(struct tool_interval *iv, double now, uint64_t ops, uint64_t bytes,
			  double lat_us);

#endif
