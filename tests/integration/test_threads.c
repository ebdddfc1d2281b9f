/*
 * test_threads.c: threads posting to one QP and polling one CQ at once
 * (built with ThreadSanitizer by scripts/test). Four threads post Sends on
 * one QP, two threads take completions from its CQ, the receiving side
 * reposts from a thread of its own; every message arrives once, in each
 * sender's order, and every request completes.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

#define POSTERS 4
#define POLLERS 2
#define PER_THREAD 3000
#define WINDOW 512 /* receives the server keeps posted */
#define MSG 32

struct side {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	struct uw_qp *qp;
	struct uw_mr *mr;
	uint8_t *buf;
};

static struct side srv, cli;
static struct uw_cm_id *sid;
static atomic_uint_fast64_t received, completed, posted, errors;
static uint32_t last_seq[POSTERS];

static void side_open(struct side *s, size_t buflen)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	s->ctx = uw_open(&ca);
	assert_non_null(s->ctx);
	s->pd = uw_alloc_pd(s->ctx);
	s->cq = uw_create_cq(s->ctx, 8192, NULL, NULL);
	s->ch = uw_cm_create_channel(s->ctx);
	s->id = uw_cm_create_id(s->ch, NULL);
	s->buf = calloc(1, buflen);
	s->mr = uw_reg_mr(s->pd, s->buf, buflen, UW_ACCESS_LOCAL_WRITE);
	assert_non_null(s->mr);
}

static void post_recv_slot(uint64_t slot)
{
	struct uw_sge sg = { (uintptr_t)(srv.buf + (slot % WINDOW) * MSG), MSG, srv.mr->lkey };
	struct uw_recv_wr wr = { .wr_id = slot, .sg_list = &sg, .num_sge = 1 };
	if (uw_post_recv(srv.qp, &wr, NULL))
		atomic_fetch_add(&errors, 1);
}

static void *reposter(void *arg)
{
	uint64_t next = WINDOW;
	while (atomic_load(&received) < POSTERS * PER_THREAD) {
		struct uw_wc wc[32];
		int n = uw_poll_cq(srv.cq, 32, wc);
		if (!n) {
			uw_cq_wait(srv.cq, 1, 10);
			continue;
		}
		for (int i = 0; i < n; i++) {
			uint32_t hdr[2];
			if (wc[i].status != UW_WC_SUCCESS || wc[i].byte_len != MSG) {
				atomic_fetch_add(&errors, 1);
				continue;
			}
			memcpy(hdr, srv.buf + (wc[i].wr_id % WINDOW) * MSG, sizeof(hdr));
			/* each sender's messages arrive in its order */
			if (hdr[0] >= POSTERS || hdr[1] != last_seq[hdr[0]] + 1)
				atomic_fetch_add(&errors, 1);
			else
				last_seq[hdr[0]] = hdr[1];
			post_recv_slot(next++);
			atomic_fetch_add(&received, 1);
		}
	}
	return NULL;
}

static void *poster(void *arg)
{
	uint32_t t = (uint32_t)(uintptr_t)arg;
	uint8_t *mine = cli.buf + t * MSG;
	for (uint32_t seq = 1; seq <= PER_THREAD;) {
		/* never more in flight than the server has receives for */
		if (atomic_load(&posted) - atomic_load(&received) >= WINDOW - POSTERS) {
			sched_yield();
			continue;
		}
		/* the buffer is ours alone, rewritten only after our last Send
		 * completed: inline data copies it at post time */
		uint32_t hdr[2] = { t, seq };
		memcpy(mine, hdr, sizeof(hdr));
		struct uw_sge sg = { (uintptr_t)mine, MSG, cli.mr->lkey };
		struct uw_send_wr wr = { .wr_id = (uint64_t)t << 32 | seq,
					 .sg_list = &sg,
					 .num_sge = 1,
					 .opcode = UW_WR_SEND,
					 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
		atomic_fetch_add(&posted, 1);
		int rc = uw_post_send(cli.qp, &wr, NULL);
		if (rc == ENOMEM) { /* send queue full: the pollers will free it */
			atomic_fetch_sub(&posted, 1);
			sched_yield();
			continue;
		}
		if (rc)
			atomic_fetch_add(&errors, 1);
		seq++;
	}
	return NULL;
}

static void *poller(void *arg)
{
	while (atomic_load(&completed) < POSTERS * PER_THREAD) {
		struct uw_wc wc[16];
		int n = uw_poll_cq(cli.cq, 16, wc);
		if (!n) {
			uw_cq_wait(cli.cq, 1, 10);
			continue;
		}
		for (int i = 0; i < n; i++)
			if (wc[i].status != UW_WC_SUCCESS)
				atomic_fetch_add(&errors, 1);
		atomic_fetch_add(&completed, (uint64_t)n);
	}
	return NULL;
}

static void threads_post_and_poll_one_qp_and_cq(void **state)
{
	struct uw_cm_event *e;
	side_open(&srv, WINDOW * MSG);
	side_open(&cli, POSTERS * MSG);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uw_cm_listen(srv.id, (struct sockaddr *)&a, 4), 0);
	a.sin_port = ((struct sockaddr_in *)&srv.id->local_addr)->sin_port;
	struct uw_qp_init_attr qa = { .send_cq = cli.cq,
				      .recv_cq = cli.cq,
				      .cap = { 256, 4, 1, 1, MSG } };
	cli.qp = uw_cm_create_qp(cli.id, cli.pd, &qa);
	assert_non_null(cli.qp);
	assert_int_equal(uw_cm_connect(cli.id, (struct sockaddr *)&a, NULL), 0);
	assert_int_equal(uw_cm_get_event_timeout(srv.ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	sid = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr sa = { .send_cq = srv.cq,
				      .recv_cq = srv.cq,
				      .cap = { 4, WINDOW, 1, 1, 0 } };
	srv.qp = uw_cm_create_qp(sid, srv.pd, &sa);
	assert_non_null(srv.qp);
	for (uint64_t i = 0; i < WINDOW; i++)
		post_recv_slot(i);
	assert_int_equal(uw_cm_accept(sid, NULL), 0);
	assert_int_equal(uw_cm_get_event_timeout(cli.ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
	uw_cm_ack_event(e);

	pthread_t r, p[POSTERS], q[POLLERS];
	pthread_create(&r, NULL, reposter, NULL);
	for (uintptr_t i = 0; i < POLLERS; i++)
		pthread_create(&q[i], NULL, poller, NULL);
	for (uintptr_t i = 0; i < POSTERS; i++)
		pthread_create(&p[i], NULL, poster, (void *)i);
	for (int i = 0; i < POSTERS; i++)
		pthread_join(p[i], NULL);
	for (int i = 0; i < POLLERS; i++)
		pthread_join(q[i], NULL);
	pthread_join(r, NULL);

	assert_int_equal(atomic_load(&errors), 0);
	assert_int_equal(atomic_load(&completed), POSTERS * PER_THREAD);
	assert_int_equal(atomic_load(&received), POSTERS * PER_THREAD);
	for (int i = 0; i < POSTERS; i++)
		assert_int_equal(last_seq[i], PER_THREAD);

	uw_cm_disconnect(cli.id);
	while (!uw_cm_get_event_timeout(cli.ch, &e, 200))
		uw_cm_ack_event(e);
	while (!uw_cm_get_event_timeout(srv.ch, &e, 200))
		uw_cm_ack_event(e);
	struct side *s[2] = { &cli, &srv };
	uw_destroy_qp(srv.qp);
	uw_cm_destroy_id(sid);
	for (int k = 0; k < 2; k++) {
		struct uw_wc wc[64];
		if (k == 0)
			uw_destroy_qp(cli.qp);
		while (uw_poll_cq(s[k]->cq, 64, wc) > 0)
			;
		assert_int_equal(uw_cm_destroy_id(s[k]->id), 0);
		assert_int_equal(uw_dereg_mr(s[k]->mr), 0);
		assert_int_equal(uw_destroy_cq(s[k]->cq), 0);
		assert_int_equal(uw_cm_destroy_channel(s[k]->ch), 0);
		assert_int_equal(uw_dealloc_pd(s[k]->pd), 0);
		assert_int_equal(uw_close(s[k]->ctx), 0);
		free(s[k]->buf);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(threads_post_and_poll_one_qp_and_cq),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
