/*
 * tool_interval.c: reports per interval of a timed run (tool_interval.h).
 */
#include "tool_interval.h"

void tool_interval_start(struct tool_interval *iv, double every, double now, FILE *out)
{
	*iv = (struct tool_interval){
		.every = every, .t0 = now, .start = now, .next = now + every, .out = out
	};
}

static void report(struct tool_interval *iv, double now, uint64_t ops, uint64_t bytes,
		   double lat_us)
{
	double secs = now - iv->start;
	uint64_t n = ops - iv->ops;
	fprintf(iv->out, "[%7.2f-%7.2f s] %10.3f Gb/s %10llu ops", iv->start - iv->t0, now - iv->t0,
		secs > 0 ? (double)(bytes - iv->bytes) * 8 / secs / 1e9 : 0, (unsigned long long)n);
	if (lat_us >= 0)
		fprintf(iv->out, " %9.2f us mean", n ? (lat_us - iv->lat_us) / (double)n : 0);
	fputc('\n', iv->out);
	fflush(iv->out);
	iv->start = now;
	iv->ops = ops;
	iv->bytes = bytes;
	iv->lat_us = lat_us;
	while (iv->next <= now)
		iv->next += iv->every;
}

void tool_interval_tick(struct tool_interval *iv, double now, uint64_t ops, uint64_t bytes,
			double lat_us)
{
	if (iv->every > 0 && now >= iv->next)
		report(iv, now, ops, bytes, lat_us);
}

void tool_interval_finish(struct tool_interval *iv, double now, uint64_t ops, uint64_t bytes,
			  double lat_us)
{
	if (iv->every > 0 && ops > iv->ops && now > iv->start)
		report(iv, now, ops, bytes, lat_us);
}
