/*
 * rdmap_atomic.c: FetchAdd, Swap and CompareSwap.
 */
#include "rdmap_atomic.h"

#include <stdbool.h>

#include <uwarp/wire.h>

/* Addition where a set mask bit stops the carry leaving that bit. */
static uint64_t masked_add(uint64_t a, uint64_t b, uint64_t mask)
{
	uint64_t sum = 0, carry = 0;

	if (!mask)
		return a + b;
	for (int i = 0; i < 64; i++) {
		uint64_t x = (a >> i) & 1, y = (b >> i) & 1;
		sum |= (x ^ y ^ carry) << i;
		carry = (x & y) | (x & carry) | (y & carry);
		if ((mask >> i) & 1)
			carry = 0;
	}
	return sum;
}

uint64_t rdmap_atomic_result(uint64_t original, uint8_t op, uint64_t data, uint64_t data_mask,
			     uint64_t cmp, uint64_t cmp_mask)
{
	switch (op) {
	case RDMAP_ATOMIC_FETCH_ADD:
		return masked_add(original, data, data_mask);
	case RDMAP_ATOMIC_SWAP:
		return (original & ~data_mask) | (data & data_mask);
	case RDMAP_ATOMIC_CMP_SWAP:
		if ((original ^ cmp) & cmp_mask)
			return original;
		return (original & ~data_mask) | (data & data_mask);
	}
	return original;
}

uint64_t rdmap_atomic_apply(uint64_t *word, uint8_t op, uint64_t data, uint64_t data_mask,
			    uint64_t cmp, uint64_t cmp_mask)
{
	uint64_t old = __atomic_load_n(word, __ATOMIC_ACQUIRE), new;

	do {
		new = rdmap_atomic_result(old, op, data, data_mask, cmp, cmp_mask);
	} while (!__atomic_compare_exchange_n(word, &old, new, false, __ATOMIC_ACQ_REL,
					      __ATOMIC_ACQUIRE));
	return old;
}
