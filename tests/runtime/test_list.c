/*
 * test_list.c: util/list.h's util_list_take_all, which the ES-API uses to
 * take the sockets marked for a round as one batch (exs__progress_pending):
 * the entries move in order, the source is left empty and usable, an entry
 * removed from the batch leaves it alone, and an empty source gives an
 * empty batch.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/list.h"

struct item {
	int v;
	struct util_list link;
};

static int values(struct util_list *l, int *out, int max)
{
	int n = 0;
	struct item *it;
	util_list_for_each(it, l, link)
		if (n < max)
			out[n++] = it->v;
	return n;
}

static void take_all_moves_every_entry_in_order(void **state)
{
	(void)state;
	struct util_list from, to;
	util_list_init(&from);
	struct item it[3] = { { .v = 1 }, { .v = 2 }, { .v = 3 } };
	for (int i = 0; i < 3; i++)
		util_list_add_tail(&from, &it[i].link);
	util_list_take_all(&to, &from);
	assert_true(util_list_empty(&from));
	int got[4];
	assert_int_equal(values(&to, got, 4), 3);
	assert_int_equal(got[0], 1);
	assert_int_equal(got[1], 2);
	assert_int_equal(got[2], 3);
	/* an entry leaves the batch alone; the source takes new ones */
	util_list_del(&it[1].link);
	assert_int_equal(values(&to, got, 4), 2);
	assert_int_equal(got[1], 3);
	util_list_add_tail(&from, &it[1].link);
	assert_int_equal(values(&from, got, 4), 1);
	assert_int_equal(values(&to, got, 4), 2);
}

static void take_all_of_an_empty_list_is_empty(void **state)
{
	(void)state;
	struct util_list from, to;
	util_list_init(&from);
	util_list_take_all(&to, &from);
	assert_true(util_list_empty(&to));
	assert_true(util_list_empty(&from));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(take_all_moves_every_entry_in_order),
		cmocka_unit_test(take_all_of_an_empty_list_is_empty),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
