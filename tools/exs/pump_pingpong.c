/*
 * pump_pingpong.c: exs-pump's ping-pong latency test and ring sampler
 * (pump_pingpong.h). Synchronous ES-API calls: a round is one exs_send and
 * one exs_recv with MSG_WAITALL on each side, nothing outstanding between.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <exs.h>

#include "pump_pingpong.h"
#include "tools/lib/tool_interval.h"
#include "tools/lib/tool_stats.h"
#include "util/clock.h"

int64_t pingpong_serve(int fd, size_t size)
{
	uint8_t *buf = malloc(size);
	int64_t rounds = 0;
	if (!buf)
		return -1;
	for (;;) {
		ssize_t n = exs_recv(fd, buf, size, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL,
				     EXS_MHANDLE_INVALID);
		if (n == 0)
			break; /* the client's end of stream */
		if (n != (ssize_t)size) {
			if (n >= 0)
				errno = EPROTO; /* a stream cut short */
			rounds = -1;
			break;
		}
		if (exs_send(fd, buf, size, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) !=
		    (ssize_t)size) {
			rounds = -1;
			break;
		}
		rounds++;
	}
	free(buf);
	return rounds;
}

int pingpong_run(int fd, size_t size, double secs, uint64_t rounds, bool verify, double interval,
		 struct pingpong_result *r)
{
	uint8_t *out = malloc(size), *in = malloc(size);
	size_t cap = 1u << 16, n = 0;
	double *rtt = malloc(cap * sizeof(*rtt));
	int rc = -1;
	memset(r, 0, sizeof(*r));
	r->echoed = true;
	if (!out || !in || !rtt)
		goto end;
	for (size_t i = 0; i < size; i++)
		out[i] = (uint8_t)(i * 29 + 1);
	double t0 = util_now_s(), until = t0 + secs, half_sum = 0;
	struct tool_interval iv;
	tool_interval_start(&iv, interval, t0, stdout);
	for (uint64_t k = 0; rounds ? k < rounds : util_now_s() < until; k++) {
		out[0] = (uint8_t)k; /* each round's message differs */
		double a = util_now_s();
		if (exs_send(fd, out, size, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) !=
		    (ssize_t)size)
			goto end;
		ssize_t got = exs_recv(fd, in, size, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL,
				       EXS_MHANDLE_INVALID);
		if (got != (ssize_t)size) {
			if (got >= 0)
				errno = EPROTO;
			goto end;
		}
		double b = util_now_s();
		if (verify && memcmp(in, out, size))
			r->echoed = false;
		if (n == cap) {
			double *m = realloc(rtt, 2 * cap * sizeof(*rtt));
			if (!m)
				goto end;
			rtt = m;
			cap *= 2;
		}
		rtt[n++] = b - a;
		half_sum += (b - a) / 2 * 1e6;
		tool_interval_tick(&iv, b, n, 2 * n * size, half_sum);
	}
	tool_interval_finish(&iv, util_now_s(), n, 2 * n * size, half_sum);
	r->rounds = n;
	r->secs = util_now_s() - t0;
	if (n) {
		r->half_rtt_mean_us = half_sum / (double)n;
		r->half_rtt_p50_us = tool_percentile(rtt, n, 0.50) / 2 * 1e6;
		r->half_rtt_p99_us = tool_percentile(rtt, n, 0.99) / 2 * 1e6;
	}
	rc = 0;
end:
	free(out);
	free(in);
	free(rtt);
	return rc;
}

static void *sample(void *arg)
{
	struct ring_sampler *rs = arg;
	while (!rs->stop) {
		struct exs_stream_counters c;
		socklen_t cl = sizeof(c);
		if (exs_getsockopt(rs->fd, SOL_EXS, EXS_SO_COUNTERS, &c, &cl) == 0) {
			rs->sum += (double)c.ring_held;
			rs->n++;
		}
		struct timespec ts = { 0, 1000000 };
		nanosleep(&ts, NULL);
	}
	return NULL;
}

int ring_sampler_start(struct ring_sampler *rs, int fd)
{
	*rs = (struct ring_sampler){ .fd = fd };
	return pthread_create(&rs->thread, NULL, sample, rs) ? -1 : 0;
}

double ring_sampler_stop(struct ring_sampler *rs)
{
	rs->stop = true;
	pthread_join(rs->thread, NULL);
	return rs->n ? rs->sum / (double)rs->n : 0;
}
