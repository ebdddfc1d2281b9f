/*
 * perf_util.c: patterns, clocks and percentiles for uwarp-perf.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

const char *perf_op_name(enum perf_op op)
{
	static const char *names[] = { "send", "write", "read", "imm", "atomic" };
	return op < OP_COUNT ? names[op] : "?";
}

static uint8_t *ref;
static uint64_t ref_len;

int perf_pattern_init(uint64_t len)
{
	uint64_t need = len + PERF_PATTERN_SHIFTS;
	if (need <= ref_len)
		return 0;
	uint8_t *r = realloc(ref, need);
	if (!r)
		return -1;
	uint64_t x = 0x9E3779B97F4A7C15ull;
	for (uint64_t i = 0; i < need; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		r[i] = (uint8_t)x;
	}
	ref = r;
	ref_len = need;
	return 0;
}

void perf_fill(uint8_t *p, uint64_t len, uint64_t slot)
{
	if (len)
		memcpy(p, ref + slot % PERF_PATTERN_SHIFTS, len);
}

uint64_t perf_check(const uint8_t *p, uint64_t len, uint64_t slot)
{
	const uint8_t *w = ref + slot % PERF_PATTERN_SHIFTS;
	if (!len || !memcmp(p, w, len))
		return len;
	for (uint64_t k = 0; k < len; k++)
		if (p[k] != w[k])
			return k;
	return len;
}
