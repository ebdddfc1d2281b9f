/*
 * test_progress_here.c: with automatic progress, the thread that waits for
 * a completion makes it (util/progress_lease.h).
 *
 * - the lease itself (pure): the engine stands back while a thread sleeps
 *   in the loop or for UTIL_LEASE_NS after one progressed, and at once is
 *   asked back when the program arms a CQ;
 * - a ping-pong whose client spins in uw_poll_cq, and one whose client
 *   sleeps in uw_cq_wait: the client's engine thread runs its loop for
 *   almost none of the messages (before, it made every completion and
 *   woke the program for it);
 * - a thread about to sleep in the loop's poll whose completion another
 *   thread makes meanwhile is woken (it slept until its timeout when the
 *   wake-up went through libuv's async handle).
 *
 * The test links the engine statically with uv_run wrapped, to count who
 * runs each loop, and util_sys_poll wrapped, to hold a sleeper at the
 * moment before its poll (tests/CMakeLists.txt).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <poll.h>
#include <sched.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

#include "util/clock.h"
#include "util/progress_lease.h"
#include "thread_wakes.h"
#include "runtime/uw_internal.h"

#define ROUNDS 2000
#define MSG 64

/* ---- uv_run, counted ---- */

int __real_uv_run(uv_loop_t *loop, uv_run_mode mode);
int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode);

static uv_loop_t *_Atomic watched; /* the client's loop */
static pthread_t _Atomic counted_thread;
static atomic_uint runs_by_thread, runs_by_others;

int __wrap_uv_run(uv_loop_t *loop, uv_run_mode mode)
{
	if (loop == atomic_load(&watched)) {
		if (pthread_equal(pthread_self(), atomic_load(&counted_thread)))
			atomic_fetch_add(&runs_by_thread, 1);
		else
			atomic_fetch_add(&runs_by_others, 1);
	}
	return __real_uv_run(loop, mode);
}

/* ---- the lease, pure ---- */

static void the_engine_stands_back_while_the_program_progresses(void **state)
{
	(void)state;
	struct util_lease l = { 0 };
	assert_int_equal(util_lease_engine_waits(&l, 5000), 0); /* nobody: the engine moves */
	util_lease_take(&l, 5000);
	assert_int_equal(util_lease_engine_waits(&l, 5000), 5000 + UTIL_LEASE_NS);
	assert_int_equal(util_lease_engine_waits(&l, 5000 + UTIL_LEASE_NS - 1),
			 5000 + UTIL_LEASE_NS);
	/* the program stopped calling: the lease runs out */
	assert_int_equal(util_lease_engine_waits(&l, 5000 + UTIL_LEASE_NS), 0);
	/* a thread asleep in the loop's poll holds it however long it sleeps */
	util_lease_sleep_begin(&l);
	assert_int_equal(util_lease_engine_waits(&l, 1u << 30), (1u << 30) + UTIL_LEASE_NS);
	assert_false(util_lease_sleep_end(&l)); /* the engine looks within a lease: no wake */
	assert_int_equal(util_lease_engine_waits(&l, 1u << 30), 0);
	/* arming a CQ gives the engine the work back at once */
	util_lease_take(&l, 7000);
	util_lease_release(&l);
	assert_int_equal(util_lease_engine_waits(&l, 7001), 0);
}

/* A thread that holds the lease and calls in without progressing (it
 * posts, or finds completions waiting) keeps it; one that lost it, or gave
 * it back when it armed a CQ, does not get it back that way. */
static void posting_and_reaping_keep_the_lease(void **state)
{
	(void)state;
	struct util_lease l = { 0 };
	util_lease_keep(&l, 100); /* nobody held it */
	assert_int_equal(util_lease_engine_waits(&l, 100), 0);
	util_lease_take(&l, 1000);
	util_lease_keep(&l, 1000 + UTIL_LEASE_NS - 1);
	assert_int_equal(util_lease_engine_waits(&l, 1000 + UTIL_LEASE_NS),
			 1000 + 2 * UTIL_LEASE_NS - 1);
	/* it ran out: a post then leaves it with the engine */
	util_lease_keep(&l, 1000 + 2 * UTIL_LEASE_NS);
	assert_int_equal(util_lease_engine_waits(&l, 1000 + 2 * UTIL_LEASE_NS), 0);
	/* given back (an armed CQ): nobody would move the rest of a post */
	util_lease_take(&l, 5000);
	util_lease_release(&l);
	util_lease_keep(&l, 5001);
	assert_int_equal(util_lease_engine_waits(&l, 5001), 0);
}

/* An engine that stands back for one long sleep looks again after 1, 2,
 * 4, ... ms up to UTIL_LEASE_DEEP_NS (a thousand wake-ups a second of an
 * idle program's engine thread before), is woken when the last sleeper
 * leaves, and starts from 1 ms again for a new sleep. */
static void the_engine_looks_ever_later_while_one_sleep_lasts(void **state)
{
	(void)state;
	struct util_lease l = { 0 };
	uint64_t now = 1000, step = UTIL_LEASE_NS;
	util_lease_sleep_begin(&l);
	int looks = 0;
	while (step < UTIL_LEASE_DEEP_NS) {
		assert_int_equal(util_lease_engine_waits(&l, now), now + step);
		now += step;
		step *= 2;
		looks++;
	}
	assert_int_equal(looks, 7); /* 1 ms ... 64 ms */
	assert_int_equal(util_lease_engine_waits(&l, now), now + UTIL_LEASE_DEEP_NS);
	assert_int_equal(util_lease_engine_waits(&l, now), now + UTIL_LEASE_DEEP_NS); /* capped */
	/* a second thread goes to sleep: from 1 ms again */
	util_lease_sleep_begin(&l);
	assert_int_equal(util_lease_engine_waits(&l, now), now + UTIL_LEASE_NS);
	assert_int_equal(util_lease_engine_waits(&l, now), now + 2 * UTIL_LEASE_NS);
	/* the first leaves: one still sleeps, nobody is woken */
	assert_false(util_lease_sleep_end(&l));
	/* the last leaves while the engine looks later than a lease: woken,
	 * once; it then stands back for the lease the sleeper took */
	assert_true(util_lease_sleep_end(&l));
	util_lease_take(&l, now);
	assert_int_equal(util_lease_engine_waits(&l, now), now + UTIL_LEASE_NS);
	util_lease_sleep_begin(&l);
	assert_false(util_lease_sleep_end(&l)); /* (not deep since) */
	/* a new sleep after that one starts from 1 ms */
	util_lease_sleep_begin(&l);
	assert_int_equal(util_lease_engine_waits(&l, now), now + UTIL_LEASE_NS);
	assert_false(util_lease_sleep_end(&l));
}

/* ---- a connected pair in one process ---- */

struct side {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq[2];
	struct uw_cm_channel *ch;
	struct uw_cm_id *id[2];
	struct uw_qp *qp[2];
	struct uw_mr *mr;
	uint8_t buf[4 * MSG];
};

static struct side srv, cli;
static atomic_bool echo_stop;

static void side_open(struct side *s, enum uw_progress p)
{
	struct uw_context_attr ca = { .progress = p };
	s->ctx = uw_open(&ca);
	assert_non_null(s->ctx);
	s->pd = uw_alloc_pd(s->ctx);
	s->ch = uw_cm_create_channel(s->ctx);
	s->mr = uw_reg_mr(s->pd, s->buf, sizeof(s->buf),
			  UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
	for (int i = 0; i < 2; i++)
		s->cq[i] = uw_create_cq(s->ctx, 64, NULL, NULL);
}

/* (no cmocka assertions in these two: threads call them) */
static int post_recv(struct side *s, int q)
{
	struct uw_sge sg = { (uintptr_t)(s->buf + 2 * q * MSG), MSG, s->mr->lkey };
	struct uw_recv_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1 };
	return uw_post_recv(s->qp[q], &wr, NULL);
}

static int post_send(struct side *s, int q)
{
	struct uw_sge sg = { (uintptr_t)(s->buf + (2 * q + 1) * MSG), MSG, s->mr->lkey };
	struct uw_send_wr wr = { .wr_id = 2,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED };
	return uw_post_send(s->qp[q], &wr, NULL);
}

static void pair_up(int q)
{
	struct uw_cm_event *e;
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	struct uw_cm_id *lid = uw_cm_create_id(srv.ch, NULL);
	assert_int_equal(uw_cm_listen(lid, (struct sockaddr *)&a, 1), 0);
	a.sin_port = ((struct sockaddr_in *)&lid->local_addr)->sin_port;
	struct uw_qp_init_attr qa = { .send_cq = cli.cq[q],
				      .recv_cq = cli.cq[q],
				      .cap = { 8, 8, 1, 1, 0 } };
	cli.id[q] = uw_cm_create_id(cli.ch, NULL);
	cli.qp[q] = uw_cm_create_qp(cli.id[q], cli.pd, &qa);
	assert_non_null(cli.qp[q]);
	assert_int_equal(uw_cm_connect(cli.id[q], (struct sockaddr *)&a, NULL), 0);
	assert_int_equal(uw_cm_get_event_timeout(srv.ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	srv.id[q] = e->id;
	uw_cm_ack_event(e);
	qa.send_cq = qa.recv_cq = srv.cq[0]; /* one CQ: one echo thread serves both */
	srv.qp[q] = uw_cm_create_qp(srv.id[q], srv.pd, &qa);
	assert_non_null(srv.qp[q]);
	assert_int_equal(post_recv(&srv, q), 0);
	assert_int_equal(uw_cm_accept(srv.id[q], NULL), 0);
	struct uw_cm_channel *ch[2] = { cli.ch, srv.ch };
	for (int k = 0; k < 2; k++) {
		assert_int_equal(uw_cm_get_event_timeout(ch[k], &e, 5000), 0);
		assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
		uw_cm_ack_event(e);
	}
	assert_int_equal(uw_cm_destroy_id(lid), 0);
}

/* The server answers every Send on either QP with one (manual progress:
 * this thread moves its data). */
static void *echo(void *arg)
{
	(void)arg;
	while (!atomic_load(&echo_stop)) {
		struct uw_wc wc;
		if (uw_poll_cq(srv.cq[0], 1, &wc) != 1) {
			uw_cq_wait(srv.cq[0], 1, 1);
			continue;
		}
		if (wc.status != UW_WC_SUCCESS)
			return (void *)1;
		int q = wc.qp == srv.qp[1];
		if (wc.opcode == UW_WC_RECV) {
			if (post_recv(&srv, q) || post_send(&srv, q))
				return (void *)1;
		}
	}
	return NULL;
}

static int setup(void **state)
{
	(void)state;
	atomic_store(&echo_stop, false);
	memset(&srv, 0, sizeof(srv));
	memset(&cli, 0, sizeof(cli));
	side_open(&srv, UW_PROGRESS_MANUAL);
	side_open(&cli, UW_PROGRESS_AUTO);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	atomic_store(&watched, NULL);
	struct side *s[2] = { &cli, &srv };
	for (int k = 0; k < 2; k++)
		for (int q = 0; q < 2; q++)
			if (s[k]->qp[q])
				uw_cm_disconnect(s[k]->id[q]);
	for (int k = 0; k < 2; k++) {
		struct uw_cm_event *e;
		while (!uw_cm_get_event_timeout(s[k]->ch, &e, 100))
			uw_cm_ack_event(e);
	}
	for (int k = 0; k < 2; k++)
		for (int q = 0; q < 2; q++)
			if (s[k]->qp[q]) {
				assert_int_equal(uw_destroy_qp(s[k]->qp[q]), 0);
				assert_int_equal(uw_cm_destroy_id(s[k]->id[q]), 0);
			}
	for (int k = 0; k < 2; k++) {
		for (int q = 0; q < 2; q++)
			assert_int_equal(uw_destroy_cq(s[k]->cq[q]), 0);
		assert_int_equal(uw_dereg_mr(s[k]->mr), 0);
		assert_int_equal(uw_cm_destroy_channel(s[k]->ch), 0);
		assert_int_equal(uw_dealloc_pd(s[k]->pd), 0);
		assert_int_equal(uw_close(s[k]->ctx), 0);
	}
	return 0;
}

/* The server's Send completion (manual progress: this call moves it). */
static int srv_take_send(void)
{
	struct uw_wc wc;
	if (uw_cq_wait(srv.cq[0], 1, 5000) < 1 || uw_poll_cq(srv.cq[0], 1, &wc) != 1)
		return -1;
	return wc.opcode == UW_WC_SEND && wc.status == UW_WC_SUCCESS ? 0 : -1;
}

/* One round trip on QP q: the client's Send, then the server's. */
static int round_trip(int q, bool sleep)
{
	if (post_recv(&cli, q) || post_send(&cli, q))
		return -1;
	for (int got = 0; got < 2;) {
		struct uw_wc wc;
		int n = uw_poll_cq(cli.cq[q], 1, &wc);
		if (n == 0 && sleep && uw_cq_wait(cli.cq[q], 1, 5000) == -ETIMEDOUT)
			return -ETIMEDOUT;
		if (n == 1 && wc.status != UW_WC_SUCCESS)
			return -1;
		got += n;
	}
	return 0;
}

/* Runs ROUNDS round trips on QP 0 with the client's loop counted; the
 * uv_runs by other threads than this one are the engine thread's. */
static void ping_pong(bool sleep)
{
	pair_up(0);
	pthread_t t;
	pthread_create(&t, NULL, echo, NULL);
	atomic_store(&counted_thread, pthread_self());
	atomic_store(&runs_by_thread, 0);
	atomic_store(&runs_by_others, 0);
	atomic_store(&watched, &cli.ctx->loop);
	for (int i = 0; i < ROUNDS; i++)
		assert_int_equal(round_trip(0, sleep), 0);
	atomic_store(&watched, NULL);
	atomic_store(&echo_stop, true);
	void *rc;
	pthread_join(t, &rc);
	assert_null(rc);
	unsigned mine = atomic_load(&runs_by_thread), engine = atomic_load(&runs_by_others);
	print_message("%d round trips: the client's loop ran %u times on its thread, %u on the "
		      "engine thread\n",
		      ROUNDS, mine, engine);
	/* Before, the engine thread made every completion (0 and ROUNDS).
	 * The engine still runs now and then: a poller descheduled for
	 * longer than the lease hands it the work (on a loaded machine,
	 * some hundreds of the 2000), so the bound is loose. */
	assert_true(mine >= ROUNDS / 2);
	assert_true(engine < mine);
}

static void a_spinning_poller_makes_its_own_completions(void **state)
{
	(void)state;
	ping_pong(false);
}

static void a_sleeping_waiter_makes_its_own_completions(void **state)
{
	(void)state;
	ping_pong(true);
}

/* ---- a lost wake-up, made to happen ----
 *
 * A thread that sleeps in uw__wait releases the lock, then enters poll(2)
 * on the loop. If, between the two, another thread runs the loop and
 * makes the sleeper's completion, the readiness the sleeper would have
 * seen is gone; it must be woken by hand. The hook below holds the
 * sleeper in exactly that gap while the main thread runs the loop. */

int __real_util_sys_poll(struct pollfd *p, nfds_t n, int t);
int __wrap_util_sys_poll(struct pollfd *p, nfds_t n, int t);

static atomic_bool hook_armed;
static pthread_t _Atomic hook_thread;
static sem_t in_gap, gap_done;
static atomic_int hook_result = -2;

int __wrap_util_sys_poll(struct pollfd *p, nfds_t n, int t)
{
	if (!pthread_equal(pthread_self(), atomic_load(&hook_thread)) ||
	    !atomic_exchange(&hook_armed, false))
		return __real_util_sys_poll(p, n, t);
	sem_post(&in_gap);
	sem_wait(&gap_done);
	int r = __real_util_sys_poll(p, n, t);
	atomic_store(&hook_result, r);
	return r;
}

static void *sleeper(void *arg)
{
	(void)arg;
	atomic_store(&hook_thread, pthread_self());
	atomic_store(&hook_armed, true);
	return (void *)(intptr_t)uw_cq_wait(cli.cq[0], 1, 3000);
}

static void a_sleeper_is_woken_for_a_completion_another_thread_made(void **state)
{
	(void)state;
	pair_up(0);
	/* the client speaks first: an MPA responder sends nothing before the
	 * initiator's first FPDU (RFC 5044, 7.1.2) */
	struct uw_wc wc;
	assert_int_equal(post_send(&cli, 0), 0);
	assert_int_equal(uw_cq_wait(srv.cq[0], 1, 5000), 1);
	assert_int_equal(uw_poll_cq(srv.cq[0], 1, &wc), 1);
	assert_int_equal(wc.opcode, UW_WC_RECV);
	assert_int_equal(uw_cq_wait(cli.cq[0], 1, 5000), 1);
	assert_int_equal(uw_poll_cq(cli.cq[0], 1, &wc), 1);
	assert_int_equal(wc.opcode, UW_WC_SEND);
	assert_int_equal(post_recv(&cli, 0), 0);
	sem_init(&in_gap, 0, 0);
	sem_init(&gap_done, 0, 0);
	pthread_t t;
	pthread_create(&t, NULL, sleeper, NULL);
	sem_wait(&in_gap); /* it has let go of the lock, not yet polled */
	/* the engine thread may be in the loop's poll from before: rouse
	 * it, and let it see the sleeper and stand back */
	pthread_mutex_lock(&cli.ctx->lock);
	uw__kick(cli.ctx);
	while (!cli.ctx->engine_parked) {
		pthread_mutex_unlock(&cli.ctx->lock);
		sched_yield();
		pthread_mutex_lock(&cli.ctx->lock);
	}
	uw__progress(cli.ctx); /* nothing left pending in the loop */
	pthread_mutex_unlock(&cli.ctx->lock);
	/* the server's Send reaches the client's socket... */
	assert_int_equal(post_send(&srv, 0), 0);
	struct pollfd ready = { uv_backend_fd(&cli.ctx->loop), POLLIN, 0 };
	assert_int_equal(poll(&ready, 1, 5000), 1);
	/* ...and this thread runs the client's loop: the completion is made
	 * here, and the readiness taken. A change to the loop just before
	 * (uw__kick: another thread started a watcher) leaves libuv's async
	 * handle pending, so that waking the sleeper through it would be
	 * skipped and then drained in this same turn. */
	pthread_mutex_lock(&cli.ctx->lock);
	uw__kick(cli.ctx);
	uw__progress(cli.ctx);
	pthread_mutex_unlock(&cli.ctx->lock);
	sem_post(&gap_done);
	void *rc;
	pthread_join(t, &rc);
	assert_int_equal((intptr_t)rc, 1);
	/* its poll was ended by the wake-up, not by its timeout */
	assert_true(atomic_load(&hook_result) > 0);
	assert_int_equal(uw_poll_cq(cli.cq[0], 1, &wc), 1);
	assert_int_equal(wc.opcode, UW_WC_RECV);
	assert_int_equal(srv_take_send(), 0);
	sem_destroy(&in_gap);
	sem_destroy(&gap_done);
}

/* Kicks the client's loop once @arg (a thread id) sleeps in poll(2): its
 * engine thread wakes and finds that thread asleep in the loop. */
static void *kick_when_asleep(void *arg)
{
	pid_t tid = *(pid_t *)arg;
	while (!thread_in_syscall(tid, SYS_poll))
		sched_yield();
	uw__kick(cli.ctx);
	return NULL;
}

/* A client that sleeps in uw_cq_wait on a quiet CQ for 600 ms, its engine
 * thread woken meanwhile (as traffic or a post wakes it), leaves that
 * thread asleep but for a dozen looks (1, 2, 4, ... up to 128 ms:
 * util/progress_lease.h); it looked every millisecond before, some six
 * hundred times (fewer only on a machine too busy to run it so often). */
static void a_quiet_wait_leaves_the_engine_asleep(void **state)
{
	(void)state;
	pair_up(0);
	pid_t me = (pid_t)syscall(SYS_gettid);
	long before = thread_wakes_of_others();
	assert_true(before >= 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, kick_when_asleep, &me), 0);
	assert_int_equal(uw_cq_wait(cli.cq[0], 1, 600), -ETIMEDOUT);
	pthread_join(t, NULL);
	long woke = thread_wakes_of_others() - before;
	print_message("other threads woke %ld times in 600 ms\n", woke);
	assert_true(woke < 60);
}

static uint64_t lease_until(void)
{
	pthread_mutex_lock(&cli.ctx->lock);
	uint64_t u = cli.ctx->lease.until;
	pthread_mutex_unlock(&cli.ctx->lock);
	return u;
}

static void spin_us(unsigned us)
{
	uint64_t end = util_now_ns() + us * 1000ull;
	while (util_now_ns() < end)
		;
}

/* A program that posts, and reaps completions it finds, between its
 * empty polls keeps the work from the engine thread: before, the lease
 * ran out while ib_write_bw's client posted 1 MiB Writes (each sendmsg a
 * few hundred microseconds on loopback) and reaped their completions, and
 * the engine woke for every writable socket and fought each post for the
 * lock (docs/performance.md). A try fails when this thread was kept off
 * its CPU for a lease meanwhile; one of 20 is enough. */
static void a_thread_that_posts_and_reaps_keeps_the_lease(void **state)
{
	(void)state;
	pair_up(0);
	pthread_t t;
	pthread_create(&t, NULL, echo, NULL);
	bool posted = false, reaped = false;
	int owed = 0; /* completions to come: a Send's and its answer's */
	for (int i = 0; i < 20 && !(posted && reaped); i++) {
		struct uw_wc wc;
		assert_int_equal(post_recv(&cli, 0), 0);
		/* whatever came, taken; the empty poll that ends it takes the lease */
		while (uw_poll_cq(cli.cq[0], 1, &wc) == 1) {
			assert_int_equal(wc.status, UW_WC_SUCCESS);
			owed--;
		}
		uint64_t u0 = lease_until();
		spin_us(50);
		assert_int_equal(post_send(&cli, 0), 0);
		owed += 2;
		uint64_t u1 = lease_until();
		posted |= u1 > u0;
		spin_us(50);
		/* the Send's completion, made by the post (its bytes fit) */
		int n = uw_poll_cq(cli.cq[0], 1, &wc);
		assert_true(n >= 0);
		owed -= n;
		reaped |= n == 1 && lease_until() > u1;
		/* the answer before the next try (the queue holds one receive) */
		while (owed > 0) {
			n = uw_poll_cq(cli.cq[0], 1, &wc);
			assert_true(n >= 0);
			owed -= n;
		}
	}
	atomic_store(&echo_stop, true);
	void *rc;
	pthread_join(t, &rc);
	assert_null(rc);
	assert_true(posted);
	assert_true(reaped);
}

/* uw_poll_cq_queued takes what is in the CQ and moves no data: the
 * server (manual progress) has the client's Send in its socket, and the
 * queued poll neither runs its loop nor finds the Send; once a poll of
 * nothing (uw_poll_cq with n = 0, which moves data) has read it, the
 * queued poll takes its completion, again without a run of the loop. */
static void a_queued_poll_takes_what_is_queued_and_moves_no_data(void **state)
{
	(void)state;
	pair_up(0);
	struct uw_qp_impl *qp = (struct uw_qp_impl *)srv.qp[0];
	assert_non_null(qp->conn);
	int fd = qp->conn->fd;
	assert_int_equal(post_recv(&cli, 0), 0);
	assert_int_equal(post_send(&cli, 0), 0); /* (automatic progress: it leaves) */
	struct pollfd p = { fd, POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 5000), 1); /* (the bound of a hang) */

	atomic_store(&counted_thread, pthread_self());
	atomic_store(&runs_by_thread, 0);
	atomic_store(&watched, &srv.ctx->loop);
	struct uw_wc wc;
	for (int i = 0; i < 3; i++)
		assert_int_equal(uw_poll_cq_queued(srv.cq[0], 1, &wc), 0);
	assert_int_equal(atomic_load(&runs_by_thread), 0);
	assert_int_equal(poll(&p, 1, 0), 1); /* the Send is still unread */

	uint64_t end = util_now_ms() + 5000;
	int n;
	do {
		assert_int_equal(uw_poll_cq(srv.cq[0], 0, NULL), 0);
		unsigned runs = atomic_load(&runs_by_thread);
		n = uw_poll_cq_queued(srv.cq[0], 1, &wc);
		assert_int_equal(atomic_load(&runs_by_thread), runs);
	} while (n == 0 && util_now_ms() < end);
	atomic_store(&watched, NULL);
	assert_int_equal(n, 1);
	assert_int_equal(wc.opcode, UW_WC_RECV);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_true(atomic_load(&runs_by_thread) > 0);
	assert_int_equal(uw_poll_cq_queued(NULL, 1, &wc), -EINVAL);
	assert_int_equal(uw_poll_cq_queued(srv.cq[0], 1, NULL), -EINVAL);
}

int main(void)
{
	/* the waits below must sleep, not spin their way past a lost wake-up */
	setenv("UWARP_SPIN_US", "0", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_engine_stands_back_while_the_program_progresses),
		cmocka_unit_test(the_engine_looks_ever_later_while_one_sleep_lasts),
		cmocka_unit_test(posting_and_reaping_keep_the_lease),
		cmocka_unit_test_setup_teardown(a_spinning_poller_makes_its_own_completions, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_sleeping_waiter_makes_its_own_completions, setup,
						teardown),
		cmocka_unit_test_setup_teardown(
			a_sleeper_is_woken_for_a_completion_another_thread_made, setup, teardown),
		cmocka_unit_test_setup_teardown(a_quiet_wait_leaves_the_engine_asleep, setup,
						teardown),
		cmocka_unit_test_setup_teardown(a_thread_that_posts_and_reaps_keeps_the_lease,
						setup, teardown),
		cmocka_unit_test_setup_teardown(
			a_queued_poll_takes_what_is_queued_and_moves_no_data, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
