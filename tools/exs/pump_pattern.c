/*
 * pump_pattern.c: exs-pump's data pattern (pump_pattern.h).
 */
#include <endian.h>
#include <string.h>

#include "pump_pattern.h"

static uint8_t byte_at(uint64_t o, uint64_t seed)
{
	return (uint8_t)(((o >> 3) ^ seed) >> (8 * (o & 7)));
}

/* the word as it lies in memory: little-endian on every host */
static uint64_t word_at(uint64_t w, uint64_t seed) { return htole64(w ^ seed); }

void pump_fill(uint8_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	size_t i = 0;
	for (; i < len && ((off + i) & 7); i++)
		buf[i] = byte_at(off + i, seed);
	for (; i + 8 <= len; i += 8) {
		uint64_t v = word_at((off + i) >> 3, seed);
		memcpy(buf + i, &v, 8);
	}
	for (; i < len; i++)
		buf[i] = byte_at(off + i, seed);
}

uint64_t pump_check(const uint8_t *buf, size_t len, uint64_t off, uint64_t seed)
{
	size_t i = 0;
	for (; i < len && ((off + i) & 7); i++)
		if (buf[i] != byte_at(off + i, seed))
			return off + i;
	for (; i + 8 <= len; i += 8) {
		uint64_t v;
		memcpy(&v, buf + i, 8);
		if (v != word_at((off + i) >> 3, seed))
			break;
	}
	for (; i < len; i++)
		if (buf[i] != byte_at(off + i, seed))
			return off + i;
	return UINT64_MAX;
}
