/*
 * test_stag_table.c: STag indices cannot be walked (rdmap/stag_table.h;
 * docs/wire-notes.md, "STags and isolation"). Indices are random over the
 * 24-bit space, never 0, never two alike, found again after any number of
 * adds and removes, and a removed index is not handed out again until
 * STAG_QUARANTINE later removes, even by a random source that offers it.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "rdmap/stag_table.h"

/* xorshift: a repeatable stand-in for the kernel's generator */
static uint32_t xorshift(void *arg)
{
	uint64_t *x = arg;
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return (uint32_t)((*x * 0x2545F4914F6CDD1Dull) >> 32);
}

/* a source that replays a script of values, then counts up from 1 */
struct script {
	const uint32_t *v;
	size_t n, at;
	uint32_t next;
};
static uint32_t scripted(void *arg)
{
	struct script *s = arg;
	if (s->at < s->n)
		return s->v[s->at++];
	return ++s->next;
}

static void indices_are_random_distinct_and_found(void **state)
{
	(void)state;
	uint64_t seed = 0x1234567;
	struct stag_table t;
	stag_table_init(&t, xorshift, &seed);
	enum { N = 20000 };
	static uint32_t ix[N];
	uint32_t sequential = 0, high = 0;
	for (uint32_t i = 0; i < N; i++) {
		assert_int_equal(stag_table_add(&t, i, &ix[i]), 0);
		assert_true(ix[i] != 0 && ix[i] <= STAG_INDEX_MASK);
		if (i && ix[i] == ix[i - 1] + 1)
			sequential++;
		if (ix[i] >= (1u << 23))
			high++;
	}
	/* a walker's next guess is no better than chance */
	assert_true(sequential < 5);
	/* the whole space is used: about half land in its upper half */
	assert_in_range(high, N / 2 - N / 20, N / 2 + N / 20);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(stag_table_find(&t, ix[i]), i);
	/* remove every other one; the rest are still found, the removed not */
	for (uint32_t i = 0; i < N; i += 2)
		stag_table_remove(&t, ix[i]);
	for (uint32_t i = 0; i < N; i++)
		assert_int_equal(stag_table_find(&t, ix[i]), i % 2 ? (int64_t)i : -1);
	assert_int_equal(t.live, N / 2);
	stag_table_free(&t);
}

static void nothing_is_found_where_nothing_was_added(void **state)
{
	(void)state;
	uint64_t seed = 99;
	struct stag_table t;
	stag_table_init(&t, xorshift, &seed);
	assert_int_equal(stag_table_find(&t, 1), -1);
	uint32_t a;
	assert_int_equal(stag_table_add(&t, 7, &a), 0);
	assert_int_equal(stag_table_find(&t, 0), -1);
	assert_int_equal(stag_table_find(&t, a ^ 1), -1);
	assert_int_equal(stag_table_find(&t, STAG_INDEX_MASK + 1), -1);
	stag_table_remove(&t, a ^ 1); /* removing what is not there changes nothing */
	assert_int_equal(stag_table_find(&t, a), 7);
	stag_table_free(&t);
}

static void zero_and_taken_indices_are_drawn_again(void **state)
{
	(void)state;
	/* 0, then 5, then 5 again (taken), then 0x1000005 (5 once masked) */
	static const uint32_t v[] = { 0, 5, 5, 0x1000005, 9 };
	struct script s = { v, 5, 0, 100 };
	struct stag_table t;
	stag_table_init(&t, scripted, &s);
	uint32_t a, b;
	assert_int_equal(stag_table_add(&t, 1, &a), 0);
	assert_int_equal(a, 5);
	assert_int_equal(stag_table_add(&t, 2, &b), 0);
	assert_int_equal(b, 9);
	stag_table_free(&t);
}

static void a_removed_index_is_held_back(void **state)
{
	(void)state;
	/* the source offers the removed index first every time */
	uint32_t victim;
	uint64_t seed = 5;
	struct stag_table t;
	stag_table_init(&t, xorshift, &seed);
	assert_int_equal(stag_table_add(&t, 0, &victim), 0);
	stag_table_remove(&t, victim);
	assert_int_equal(stag_table_find(&t, victim), -1);
	uint32_t offer[1] = { victim };
	struct script s = { offer, 1, 0, 0x200000 };
	t.random32 = scripted;
	t.random_arg = &s;
	/* the victim, then STAG_QUARANTINE - 1 more removes fill the
	 * quarantine; it is released by the next remove, not before */
	for (uint32_t i = 1; i <= STAG_QUARANTINE; i++) {
		uint32_t x;
		s.at = 0; /* offer the victim again */
		assert_int_equal(stag_table_add(&t, i, &x), 0);
		assert_int_not_equal(x, victim);
		stag_table_remove(&t, x);
	}
	/* STAG_QUARANTINE removes after its own, the victim may come back */
	uint32_t x;
	s.at = 0;
	assert_int_equal(stag_table_add(&t, 0, &x), 0);
	assert_int_equal(x, victim);
	assert_int_equal(stag_table_find(&t, victim), 0);
	stag_table_free(&t);
}

static void a_source_that_never_offers_a_free_index_gives_enomem(void **state)
{
	(void)state;
	static const uint32_t v[64] = { 0 }; /* only zeros */
	struct script s = { v, 64, 0, 0 };
	struct stag_table t;
	stag_table_init(&t, scripted, &s);
	uint32_t a;
	assert_int_equal(stag_table_add(&t, 1, &a), ENOMEM);
	assert_int_equal(t.live, 0);
	stag_table_free(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(indices_are_random_distinct_and_found),
		cmocka_unit_test(nothing_is_found_where_nothing_was_added),
		cmocka_unit_test(zero_and_taken_indices_are_drawn_again),
		cmocka_unit_test(a_removed_index_is_held_back),
		cmocka_unit_test(a_source_that_never_offers_a_free_index_gives_enomem),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
