/*
 * pump_pingpong.h: exs-pump's latency test and its ring sampler.
 *
 * Ping-pong as the SDP paper measures it: one message of SIZE bytes each
 * way per round, the next only once the reply is whole; the latency is half
 * the round trip. The sampler reads a socket's ring occupancy every
 * millisecond while a transfer runs, for the paper's buffer utilisation
 * (the time average of the data held in the receive buffer over its size).
 */
#ifndef EXS_PUMP_PINGPONG_H
#define EXS_PUMP_PINGPONG_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct pingpong_result {
	uint64_t rounds;
	double secs;
	double half_rtt_mean_us, half_rtt_p50_us, half_rtt_p99_us;
	bool echoed; /* every reply equal to its message (unless not checked) */
};

/* The server's side: echo each SIZE-byte message until the client ends
 * its stream. Returns the rounds, or -1 with errno. */
int64_t pingpong_serve(int fd, size_t size);
/* The client's: rounds for @secs seconds (or @rounds of them when not 0);
 * 0, or -1 with errno. */
int pingpong_run(int fd, size_t size, double secs, uint64_t rounds, bool verify, double interval,
		 struct pingpong_result *r);

struct ring_sampler {
	int fd;
	pthread_t thread;
	atomic_bool stop;
	double sum; /* of the samples, in bytes */
	uint64_t n;
};

/* Start sampling @fd's EXS_SO_COUNTERS ring_held every millisecond. */
int ring_sampler_start(struct ring_sampler *rs, int fd);
/* Stop; the mean of the samples in bytes (0 without any). */
double ring_sampler_stop(struct ring_sampler *rs);

#endif
