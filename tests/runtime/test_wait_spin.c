/*
 * test_wait_spin.c: a wait (uw_cq_wait) spins before it sleeps only while
 * the CPU is free (util/spin.h). Each turn of the spin yields; a yield
 * that comes back late means another task had the CPU meanwhile, and a
 * waiter that keeps spinning hands it a whole time slice at every yield
 * (under two CPU hogs on a 2-core machine, uwarp-perf's 64-byte ping-pong
 * took 1 to 8 ms a round trip so; docs/performance.md). After a late yield
 * the next waits sleep at once.
 *
 * This test's own sched_yield stands in for the busy CPU: it takes 2 ms,
 * as the other task's slice would, and counts the calls.
 */
#include <errno.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

static int yields;
static long yield_ns; /* what each yield takes (0: it returns at once) */

/* The runtime's calls land here (the program's definition comes first;
 * the build hides symbols by default, and the link exports this one).
 * No real yield: on a loaded machine (the test suite runs in parallel)
 * one could come back late by itself. */
__attribute__((visibility("default"))) int sched_yield(void)
{
	yields++;
	if (yield_ns) {
		struct timespec t = { 0, yield_ns };
		nanosleep(&t, NULL);
	}
	return 0;
}

/* Waits of 2 ms on an empty CQ: the yields each one made. */
static void waits(struct uw_cq *cq, int n, int *per_wait)
{
	for (int i = 0; i < n; i++) {
		yields = 0;
		assert_int_equal(uw_cq_wait(cq, 1, 2), -ETIMEDOUT);
		per_wait[i] = yields;
	}
}

static void after_a_late_yield_the_next_waits_sleep_at_once(void **state)
{
	(void)state;
	struct uw_context_attr attr = { .progress = UW_PROGRESS_MANUAL };
	struct uw_context *ctx = uw_open(&attr);
	assert_non_null(ctx);
	struct uw_cq *cq = uw_create_cq(ctx, 4, NULL, NULL);
	assert_non_null(cq);

	/* A free CPU: a wait spins (20 us by default) before it sleeps,
	 * yielding at each turn. (On a loaded machine, the suite running in
	 * parallel, a preemption can use up a wait's 20 us before its first
	 * turn, or make a yield look late: of 20 waits, one yields.) */
	int per[40];
	yield_ns = 0;
	waits(cq, 20, per);
	int spun = 0;
	for (int i = 0; i < 20; i++)
		spun += per[i] > 0;
	assert_true(spun > 0);

	/* A busy one: each yield takes 2 ms, as another task's time slice
	 * would. A wait whose yield came back late yields no more, and the
	 * next 8 waits sleep at once, then 16: of 40 waits, at most 3 yield
	 * (without the rule each one would, once: 2 ms is past its spin). A
	 * preemption of this test on a loaded machine could only make a
	 * yield seem later, never earlier. */
	yield_ns = 2000000;
	waits(cq, 40, per);
	int yielding = 0;
	for (int i = 0; i < 40; i++) {
		assert_true(per[i] <= 1);
		if (!per[i])
			continue;
		yielding++;
		for (int k = i + 1; k < 40 && k <= i + 8; k++)
			assert_int_equal(per[k], 0);
	}
	assert_true(yielding >= 1 && yielding <= 3);

	assert_int_equal(uw_destroy_cq(cq), 0);
	assert_int_equal(uw_close(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(after_a_late_yield_the_next_waits_sleep_at_once),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
