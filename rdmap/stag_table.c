/*
 * stag_table.c: random STag indices over open addressing (stag_table.h).
 */
#include "stag_table.h"

#include <errno.h>
#include <stdlib.h>

/* Draws that may all hit taken indices before the table gives up: with at
 * most half the space taken, 64 misses in a row has odds of 2^-64. */
#define STAG_DRAWS 64

void stag_table_init(struct stag_table *t, uint32_t (*random32)(void *arg), void *arg)
{
	*t = (struct stag_table){ .random32 = random32, .random_arg = arg };
}

void stag_table_free(struct stag_table *t)
{
	free(t->b);
	free(t->quar);
	stag_table_init(t, t->random32, t->random_arg);
}

static uint32_t home(const struct stag_table *t, uint32_t index)
{
	/* Fibonacci hashing: the top bits of the product */
	unsigned shift = 32 - (unsigned)__builtin_ctz(t->cap);
	return shift == 32 ? 0 : (index * 0x9E3779B1u) >> shift;
}

/* The bucket holding index, or the empty one where it would go. */
static uint32_t probe(const struct stag_table *t, uint32_t index)
{
	uint32_t m = t->cap - 1, i = home(t, index);
	while (t->b[i].index && t->b[i].index != index)
		i = (i + 1) & m;
	return i;
}

static int grow(struct stag_table *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 64;
	struct stag_bucket *old = t->b;
	uint32_t ocap = t->cap;
	struct stag_bucket *b = calloc(cap, sizeof(*b));
	if (!b)
		return ENOMEM;
	t->b = b;
	t->cap = cap;
	for (uint32_t i = 0; i < ocap; i++)
		if (old[i].index)
			t->b[probe(t, old[i].index)] = old[i];
	free(old);
	return 0;
}

/* Empties bucket i, shifting later members of its probe run back so that
 * every lookup still finds them (no tombstones). */
static void erase_at(struct stag_table *t, uint32_t i)
{
	uint32_t m = t->cap - 1, j = i;
	for (;;) {
		j = (j + 1) & m;
		if (!t->b[j].index)
			break;
		uint32_t k = home(t, t->b[j].index);
		/* j stays if its home lies cyclically in (i, j] */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		t->b[i] = t->b[j];
		i = j;
	}
	t->b[i].index = 0;
	t->used--;
}

int stag_table_add(struct stag_table *t, uint32_t slot, uint32_t *index)
{
	if (t->live >= STAG_MAX_LIVE || slot == STAG_SLOT_QUARANTINED)
		return ENOMEM;
	if ((uint64_t)(t->used + 1) * 2 > t->cap && grow(t))
		return ENOMEM;
	for (int n = 0; n < STAG_DRAWS; n++) {
		uint32_t x = t->random32(t->random_arg) & STAG_INDEX_MASK;
		if (!x)
			continue;
		uint32_t i = probe(t, x);
		if (t->b[i].index)
			continue; /* live or quarantined: draw again */
		t->b[i] = (struct stag_bucket){ x, slot };
		t->used++;
		t->live++;
		*index = x;
		return 0;
	}
	return ENOMEM;
}

int64_t stag_table_find(const struct stag_table *t, uint32_t index)
{
	if (!t->cap || !index || index > STAG_INDEX_MASK)
		return -1;
	const struct stag_bucket *b = &t->b[probe(t, index)];
	if (!b->index || b->slot == STAG_SLOT_QUARANTINED)
		return -1;
	return b->slot;
}

void stag_table_remove(struct stag_table *t, uint32_t index)
{
	if (!t->cap || !index || index > STAG_INDEX_MASK)
		return;
	uint32_t i = probe(t, index);
	if (!t->b[i].index || t->b[i].slot == STAG_SLOT_QUARANTINED)
		return;
	t->live--;
	if (!t->quar)
		t->quar = malloc(STAG_QUARANTINE * sizeof(*t->quar));
	if (!t->quar) {
		erase_at(t, i); /* no memory to hold it back: free at once */
		return;
	}
	t->b[i].slot = STAG_SLOT_QUARANTINED;
	if (t->quar_len == STAG_QUARANTINE) {
		/* the oldest held-back index is released for reuse */
		uint32_t old = t->quar[t->quar_head];
		erase_at(t, probe(t, old));
		t->quar_head = (t->quar_head + 1) % STAG_QUARANTINE;
		t->quar_len--;
	}
	t->quar[(t->quar_head + t->quar_len) % STAG_QUARANTINE] = index;
	t->quar_len++;
}
