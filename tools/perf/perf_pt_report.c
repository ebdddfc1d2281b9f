/*
 * perf_pt_report.c: perftest's arithmetic and its result lines.
 *
 * Buffers: perftest sizes each half of its buffer as the larger of the
 * message and the page ("cycle buffer"), rounded up to the cache line, and
 * messages of up to half a page go to successive cache-line-aligned slots
 * of that page. Bandwidth is in MiB/s ("MB/sec"), the average over the
 * whole run and the peak over the best stretch of it. Latency is the time
 * between successive posts (halved for ping-pongs), the slowest two
 * dropped, as perftest's report does.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"
#include "perf_pt.h"

#define MIB 1048576.0
#define LAT_TAIL 2
/* the peak search looks at this many starting and ending points at most */
#define PEAK_POINTS 2000

static uint64_t inc(uint64_t size, uint32_t cache_line)
{
	return size > cache_line ? (size + cache_line - 1) / cache_line * cache_line : cache_line;
}

uint64_t pt_area_size(uint64_t size, uint32_t cycle_buffer, uint32_t cache_line)
{
	return inc(size < cycle_buffer ? cycle_buffer : size, cache_line);
}

uint64_t pt_cycle_offset(const struct pt_run *r, uint64_t i)
{
	uint64_t size = r->o->size, step = inc(size, r->cache_line);
	if (size > r->cycle_buffer / 2)
		return 0;
	return (i % (r->cycle_buffer / step)) * step;
}

void pt_bw_stats(uint64_t size, uint64_t iters, const double *posted, const double *completed,
		 struct pt_bw_report *rep)
{
	double last = 0, best = 0;
	for (uint64_t j = 0; j < iters; j++)
		last = completed[j] > last ? completed[j] : last;
	double t = last - posted[0];
	/* the shortest time per message over any stretch i..j */
	uint64_t step = iters / PEAK_POINTS + 1;
	for (uint64_t i = 0; i < iters; i += step) {
		for (uint64_t j = iters - 1;; j -= step) {
			double per = (completed[j] - posted[i]) / (double)(j - i + 1);
			if (per > 0 && (best == 0 || per < best))
				best = per;
			if (j < i + step)
				break;
		}
	}
	rep->size = size;
	rep->iters = iters;
	rep->bw_avg = t > 0 ? (double)size * (double)iters / t / MIB : 0;
	rep->msg_rate = t > 0 ? (double)iters / t / 1e6 : 0;
	rep->bw_peak = best > 0 ? (double)size / best / MIB : 0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int pt_lat_stats(uint64_t size, uint64_t iters, const double *t, int rtt_factor,
		 struct pt_lat_report *rep)
{
	*rep = (struct pt_lat_report){ .size = size, .iters = iters };
	if (iters < 2)
		return 0;
	uint64_t measured = iters - 1;
	double *d = malloc(measured * sizeof(*d));
	if (!d)
		return -ENOMEM;
	for (uint64_t k = 0; k < measured; k++)
		d[k] = (t[k + 1] - t[k]) * 1e6 / rtt_factor;
	qsort(d, measured, sizeof(*d), cmp_double);
	uint64_t n = measured > LAT_TAIL ? measured - LAT_TAIL : measured, top = measured - 1;
	double sum = 0, var = 0;
	for (uint64_t k = 0; k < n; k++)
		sum += d[k];
	rep->t_avg = sum / (double)n;
	for (uint64_t k = 0; k < n; k++)
		var += (d[k] - rep->t_avg) * (d[k] - rep->t_avg);
	rep->t_stdev = sqrt(var / (double)n);
	rep->t_min = d[0];
	rep->t_max = d[n < top ? n : top];
	rep->t_typical = n % 2 ? d[n / 2] : (d[n / 2] + d[n / 2 - 1]) / 2;
	uint64_t p99 = (uint64_t)ceil((double)n * 0.99), p999 = (uint64_t)ceil((double)n * 0.999);
	rep->t_p99 = d[p99 < top ? p99 : top];
	rep->t_p999 = d[p999 < top ? p999 : top];
	free(d);
	return 0;
}

/* JSON has no inf or NaN; a peer whose clock failed to calibrate sends them */
static void json_num(const char *key, double v, int prec)
{
	if (isfinite(v))
		printf(",\"%s\":%.*f", key, prec, v);
	else
		printf(",\"%s\":null", key);
}

static void json_head(const struct pt_opts *o, bool client, uint64_t size, uint64_t iters)
{
	printf("{\"perftest\":\"%s\",\"role\":\"%s\",\"bytes\":%llu,\"iterations\":%llu",
	       o->test->name, client ? "client" : "server", (unsigned long long)size,
	       (unsigned long long)iters);
}

#define LINE                                                                            \
	"-----------------------------------------------------------------------------" \
	"----------\n"

void pt_print_bw(const struct pt_opts *o, bool client, const struct pt_bw_report *rep)
{
	if (o->json) {
		json_head(o, client, rep->size, rep->iters);
		json_num("bw_peak_mbs", rep->bw_peak, 2);
		json_num("bw_avg_mbs", rep->bw_avg, 2);
		json_num("msg_rate_mpps", rep->msg_rate, 6);
		printf("}\n");
	} else {
		printf("uwarp-perf --perftest %s (%s)\n" LINE, o->test->name,
		       client ? "client" : "server");
		printf(" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   "
		       "MsgRate[Mpps]\n");
		printf(" %-10llu %-14llu %-18.2f %-20.2f %.6f\n" LINE,
		       (unsigned long long)rep->size, (unsigned long long)rep->iters, rep->bw_peak,
		       rep->bw_avg, rep->msg_rate);
	}
	fflush(stdout);
}

void pt_print_lat(const struct pt_opts *o, bool client, const struct pt_lat_report *rep)
{
	if (o->json) {
		json_head(o, client, rep->size, rep->iters);
		json_num("t_min_us", rep->t_min, 2);
		json_num("t_max_us", rep->t_max, 2);
		json_num("t_typical_us", rep->t_typical, 2);
		json_num("t_avg_us", rep->t_avg, 2);
		json_num("t_stdev_us", rep->t_stdev, 2);
		json_num("t_p99_us", rep->t_p99, 2);
		json_num("t_p999_us", rep->t_p999, 2);
		printf("}\n");
	} else {
		printf("uwarp-perf --perftest %s (%s)\n" LINE, o->test->name,
		       client ? "client" : "server");
		printf(" #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    "
		       "t_avg[usec]    t_stdev[usec]   99%% percentile[usec]   "
		       "99.9%% percentile[usec]\n");
		printf(" %-7llu %-14llu %-14.2f %-12.2f %-18.2f %-14.2f %-15.2f %-22.2f "
		       "%.2f\n" LINE,
		       (unsigned long long)rep->size, (unsigned long long)rep->iters, rep->t_min,
		       rep->t_max, rep->t_typical, rep->t_avg, rep->t_stdev, rep->t_p99,
		       rep->t_p999);
	}
	fflush(stdout);
}

void pt_print_served(const struct pt_opts *o)
{
	if (o->json) {
		json_head(o, false, o->size, o->iters);
		printf("}\n");
	} else {
		printf("uwarp-perf --perftest %s (server): served the client's Reads of %llu "
		       "bytes; the client reports the latency\n",
		       o->test->name, (unsigned long long)o->size);
	}
	fflush(stdout);
}
