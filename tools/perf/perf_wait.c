/*
 * perf_wait.c: how uwarp-perf's latency loops wait for what comes next
 * (a completion, a Write's last byte, a client's message at the server).
 *
 * They poll, as perftest does: on a machine with a CPU to spare that is
 * the fastest way to see a reply. But a poller on a busy machine keeps
 * its CPU from the tasks that need it, its peer among them, and each
 * round trip then waits for time slices (milliseconds): under two CPU
 * hogs on a 2-core machine a 64-byte ping-pong's median went from some
 * 20 us to 1-8 ms, while the TCP baseline, asleep in read(2), stayed at
 * 20 (docs/performance.md). So with --wait adaptive a turn of the poll
 * that comes back late (another task ran on this CPU meanwhile) ends the
 * poll, and the next waits sleep until the network has something, with
 * util/spin.h's back-off: 8 waits, twice as many after each late turn (up
 * to 1024), one fewer for each undisturbed poll since. --wait poll (the
 * default) polls regardless.
 */
#include <poll.h>
#include <sched.h>

#include "perf.h"
#include "util/spin.h"

/* whether this CPU was busy lately (the loops run on one thread); its
 * spin length is not used: a poll that nothing disturbs goes on */
static struct util_spin busy_cpu;

bool perf_wait_spin(struct perf_wait *w)
{
	if (w->busy)
		return true;
	uint64_t now = util_now_ns();
	if (!w->begun) {
		w->begun = true;
		w->last = now;
		return util_spin_ns(&busy_cpu, 1) != 0; /* 0: sleep at once */
	}
	uint64_t turn = now - w->last;
	w->last = now;
	return util_spin_yielded(&busy_cpu, turn);
}

void perf_wait_end(struct perf_wait *w)
{
	if (w->begun)
		util_spin_ended(&busy_cpu, 1, 0);
	w->begun = false;
}

void perf_wait_net(struct uw_context *ctx, enum uw_progress progress)
{
	if (progress == UW_PROGRESS_AUTO) {
		/* the engine thread places the data and nothing tells a
		 * program that watches memory: look again soon */
		sched_yield();
		return;
	}
	struct pollfd pf[2];
	int t = uw_sleep_begin(ctx, pf);
	poll(pf, 2, t < 0 || t > 100 ? 100 : t);
	uw_sleep_end(ctx);
}
