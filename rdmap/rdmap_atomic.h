/*
 * rdmap_atomic.h: the RFC 7306 atomic operations on a 64-bit word in
 * registered memory (host byte order, as verbs atomics are), done with the
 * CPU's atomic instructions so local threads see them whole.
 */
#ifndef UWARP_RDMAP_ATOMIC_H
#define UWARP_RDMAP_ATOMIC_H

#include <stdint.h>

/*
 * Apply op to *word and return its original value.
 *   FetchAdd:    add data; a 1 in data_mask ends a field: no carry out of
 *                that bit (a zero mask is one 64-bit addition)
 *   Swap:        the bits set in data_mask take data's bits
 *   CompareSwap: when (original ^ cmp) & cmp_mask is zero, as Swap
 * word must be 8-byte aligned.
 */
uint64_t rdmap_atomic_apply(uint64_t *word, uint8_t op, uint64_t data, uint64_t data_mask,
			    uint64_t cmp, uint64_t cmp_mask);

/* The same operation on a value, without touching memory. */
uint64_t rdmap_atomic_result(uint64_t original, uint8_t op, uint64_t data, uint64_t data_mask,
			     uint64_t cmp, uint64_t cmp_mask);

#endif
