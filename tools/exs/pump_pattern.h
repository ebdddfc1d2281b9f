/*
 * pump_pattern.h: exs-pump's data. Byte o of the stream is byte (o & 7) of
 * the little-endian 64-bit word (o >> 3) ^ seed, so either end can make or
 * check any stretch knowing only its offset, with word-wide loops.
 */
#ifndef EXS_PUMP_PATTERN_H
#define EXS_PUMP_PATTERN_H

#include <stddef.h>
#include <stdint.h>

void pump_fill(uint8_t *buf, size_t len, uint64_t off, uint64_t seed);
/* the offset of the first wrong byte, or UINT64_MAX when all are right */
uint64_t pump_check(const uint8_t *buf, size_t len, uint64_t off, uint64_t seed);

#endif
