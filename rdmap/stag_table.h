/*
 * stag_table.h: which 24-bit STag index names which slot of a context's
 * memory table, with indices that cannot be guessed (pure: no locks, no
 * clocks; randomness comes from the caller).
 *
 * An STag is index << 8 | key (RFC 5040 section 8 and RFC 5042 section 5:
 * a peer must not be able to forge one). A sequential index let a client
 * walk the table and find other connections' regions; here every index is
 * drawn at random from the whole 24-bit space, never 0, never one in use,
 * and never one freed within the last STAG_QUARANTINE frees (an STag that
 * was just invalidated does not come back soon under a new region).
 */
#ifndef UWARP_STAG_TABLE_H
#define UWARP_STAG_TABLE_H

#include <stdint.h>

#define STAG_INDEX_BITS 24
#define STAG_INDEX_MASK ((1u << STAG_INDEX_BITS) - 1)
/* live STags at most: half the index space, so a random draw finds a free
 * index in two tries on average even when full */
#define STAG_MAX_LIVE (1u << (STAG_INDEX_BITS - 1))
/* freed indices held back from reuse */
#define STAG_QUARANTINE 4096u

struct stag_bucket {
	uint32_t index; /* 0: empty */
	uint32_t slot;  /* STAG_SLOT_QUARANTINED: freed, held back */
};
#define STAG_SLOT_QUARANTINED UINT32_MAX

struct stag_table {
	struct stag_bucket *b; /* open addressing, linear probing */
	uint32_t cap;          /* a power of two, or 0 before the first add */
	uint32_t used;         /* buckets taken: live and quarantined */
	uint32_t live;
	uint32_t *quar; /* FIFO of quarantined indices */
	uint32_t quar_head, quar_len;
	uint32_t (*random32)(void *arg);
	void *random_arg;
};

void stag_table_init(struct stag_table *t, uint32_t (*random32)(void *arg), void *arg);
void stag_table_free(struct stag_table *t);
/* A fresh index for slot: 0 and *index set, or ENOMEM (no memory, or
 * STAG_MAX_LIVE reached). */
int stag_table_add(struct stag_table *t, uint32_t slot, uint32_t *index);
/* The slot index names, or -1 when it names nothing live. */
int64_t stag_table_find(const struct stag_table *t, uint32_t index);
/* index stops naming its slot and is held back from reuse. */
void stag_table_remove(struct stag_table *t, uint32_t index);

#endif
