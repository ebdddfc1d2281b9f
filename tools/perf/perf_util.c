/*
 * perf_util.c: patterns, clocks and percentiles for uwarp-perf.
 */
#include <stdlib.h>
#include <time.h>

#include "perf.h"

const char *perf_op_name(enum perf_op op)
{
	static const char *names[] = { "send", "write", "read", "imm", "atomic" };
	return op < OP_COUNT ? names[op] : "?";
}

double perf_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void perf_fill(uint8_t *p, uint64_t len, uint64_t slot)
{
	for (uint64_t k = 0; k < len; k++)
		p[k] = perf_pattern(slot, k);
}

uint64_t perf_check(const uint8_t *p, uint64_t len, uint64_t slot)
{
	for (uint64_t k = 0; k < len; k++)
		if (p[k] != perf_pattern(slot, k))
			return k;
	return len;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double perf_percentile(double *v, size_t n, double p)
{
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	size_t i = (size_t)(p * (double)(n - 1) + 0.5);
	return v[i < n ? i : n - 1];
}
