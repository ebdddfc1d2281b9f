/*
 * test_failures.c: what happens when things go wrong between processes:
 * a peer killed in the middle of a transfer, a graceful disconnect with
 * work outstanding, an MPA exchange that stalls on either side, a refused
 * or rejected connection. Every posted work request completes; nothing
 * hangs; the server goes on serving.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

#include "proc.h"

static const char *perf = UWARP_PERF_BIN;

struct client {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	struct uw_qp *qp;
	struct uw_mr *mr;
	uint8_t *buf;
	uint64_t raddr;
	uint32_t rkey;
};

static struct sockaddr_in loopback(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	return a;
}

static void client_open_mode(struct client *c, size_t buflen, enum uw_progress mode)
{
	struct uw_context_attr ca = { .progress = mode };
	memset(c, 0, sizeof(*c));
	c->ctx = uw_open(&ca);
	assert_non_null(c->ctx);
	c->pd = uw_alloc_pd(c->ctx);
	c->cq = uw_create_cq(c->ctx, 4096, NULL, NULL);
	c->ch = uw_cm_create_channel(c->ctx);
	c->id = uw_cm_create_id(c->ch, NULL);
	c->buf = calloc(1, buflen);
	c->mr = uw_reg_mr(c->pd, c->buf, buflen, UW_ACCESS_LOCAL_WRITE);
	struct uw_qp_init_attr qa = { .send_cq = c->cq,
				      .recv_cq = c->cq,
				      .cap = { 256, 64, 4, 4, 0 } };
	c->qp = uw_cm_create_qp(c->id, c->pd, &qa);
	assert_non_null(c->qp);
}

static void client_open(struct client *c, size_t buflen)
{
	client_open_mode(c, buflen, UW_PROGRESS_MANUAL);
}

static struct uw_cm_event *next_event(struct uw_cm_channel *ch, int ms)
{
	struct uw_cm_event *e = NULL;
	if (uw_cm_get_event_timeout(ch, &e, ms))
		return NULL;
	return e;
}

/* Connect to a uwarp-perf server as a stranger: it offers its default
 * buffer (1 MiB) in the accept's private data. */
static void client_connect(struct client *c, int port)
{
	struct sockaddr_in a = loopback(port);
	assert_int_equal(uw_cm_connect(c->id, (struct sockaddr *)&a, NULL), 0);
	struct uw_cm_event *e = next_event(c->ch, 10000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
	assert_true(e->private_data_len >= 16);
	uint64_t addr;
	uint32_t rkey;
	memcpy(&rkey, (const uint8_t *)e->private_data + 4, 4);
	memcpy(&addr, (const uint8_t *)e->private_data + 8, 8);
	c->rkey = ntohl(rkey);
	c->raddr = be64toh(addr);
	uw_cm_ack_event(e);
}

static void client_close(struct client *c)
{
	struct uw_cm_event *e;
	while ((e = next_event(c->ch, 0)))
		uw_cm_ack_event(e);
	assert_int_equal(uw_destroy_qp(c->qp), 0);
	assert_int_equal(uw_cm_destroy_id(c->id), 0);
	assert_int_equal(uw_dereg_mr(c->mr), 0);
	assert_int_equal(uw_destroy_cq(c->cq), 0);
	assert_int_equal(uw_cm_destroy_channel(c->ch), 0);
	assert_int_equal(uw_dealloc_pd(c->pd), 0);
	assert_int_equal(uw_close(c->ctx), 0);
	free(c->buf);
}

/* Poll until n completions arrived or ms passed; counts by status. */
static int drain(struct client *c, int n, int ms, int *ok, int *flushed, int *other)
{
	int got = 0;
	long end = proc_ms() + ms;
	while (got < n && proc_ms() < end) {
		struct uw_wc wc[64];
		int k = uw_poll_cq(c->cq, 64, wc);
		if (!k)
			uw_cq_wait(c->cq, 1, 50);
		for (int i = 0; i < k; i++) {
			if (wc[i].status == UW_WC_SUCCESS)
				(*ok)++;
			else if (wc[i].status == UW_WC_WR_FLUSH_ERR)
				(*flushed)++;
			else
				(*other)++;
		}
		got += k;
	}
	return got;
}

static void post_writes_and_recvs(struct client *c, int writes, int recvs)
{
	for (int i = 0; i < writes; i++) {
		struct uw_sge s = { (uintptr_t)c->buf, 1 << 20, c->mr->lkey };
		struct uw_send_wr wr = { .wr_id = (uint64_t)i,
					 .sg_list = &s,
					 .num_sge = 1,
					 .opcode = UW_WR_RDMA_WRITE,
					 .send_flags = UW_SEND_SIGNALED,
					 .rdma = { c->raddr, c->rkey } };
		assert_int_equal(uw_post_send(c->qp, &wr, NULL), 0);
	}
	for (int i = 0; i < recvs; i++) {
		struct uw_sge s = { (uintptr_t)c->buf, 4096, c->mr->lkey };
		struct uw_recv_wr wr = { .wr_id = 1000 + (uint64_t)i, .sg_list = &s, .num_sge = 1 };
		assert_int_equal(uw_post_recv(c->qp, &wr, NULL), 0);
	}
}

static void peer_killed_mid_transfer_every_wr_completes(void **state)
{
	struct proc srv;
	struct client c;
	int port = perf_server_start(&srv, perf, NULL);
	assert_true(port > 0);
	client_open(&c, 1 << 20);
	client_connect(&c, port);
	post_writes_and_recvs(&c, 200, 16); /* 200 MiB: the kill lands mid-way */
	kill(srv.pid, SIGKILL);
	proc_end(&srv);
	int ok = 0, flushed = 0, other = 0;
	assert_int_equal(drain(&c, 216, 20000, &ok, &flushed, &other), 216);
	assert_int_equal(ok + flushed + other, 216);
	assert_true(flushed >= 16); /* at least every receive */
	struct uw_cm_event *e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	uw_cm_ack_event(e);
	assert_int_equal(uw_qp_get_state(c.qp), UW_QPS_ERR);
	/* a WR posted now completes at once, flushed */
	struct uw_send_wr wr = { .wr_id = 77,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(c.qp, &wr, NULL), 0);
	struct uw_wc wc;
	assert_int_equal(uw_poll_cq(c.cq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, UW_WC_WR_FLUSH_ERR);
	client_close(&c);
}

static void graceful_disconnect_flushes_outstanding_wrs(void **state)
{
	struct proc srv;
	struct client c;
	int port = perf_server_start(&srv, perf, NULL);
	assert_true(port > 0);
	client_open(&c, 1 << 20);
	client_connect(&c, port);
	post_writes_and_recvs(&c, 20, 32);
	assert_int_equal(uw_cm_disconnect(c.id), 0);
	int ok = 0, flushed = 0, other = 0;
	assert_int_equal(drain(&c, 52, 10000, &ok, &flushed, &other), 52);
	assert_int_equal(other, 0);
	assert_true(flushed >= 32);
	struct uw_cm_event *e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->terminated, 0); /* a graceful end is no Terminate */
	uw_cm_ack_event(e);
	assert_int_equal(uw_cm_disconnect(c.id), ENOTCONN);
	/* the server is still there for the next one */
	char portbuf[16], out[4096];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	char *argv[] = { (char *)perf, "-c",     "127.0.0.1", "-p",      portbuf, "--op",
			 "write",      "--size", "4096",      "--iters", "10",    NULL };
	assert_int_equal(proc_run(argv, 30000, out, sizeof(out)), 0);
	proc_end(&srv);
	client_close(&c);
}

static void client_killed_server_keeps_serving(void **state)
{
	struct proc srv, cl;
	int port = perf_server_start(&srv, perf, NULL);
	assert_true(port > 0);
	char portbuf[16], out[4096];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	char *argv[] = { (char *)perf, "-c",     "127.0.0.1", "-p",     portbuf, "--op",
			 "write",      "--size", "1M",        "--time", "30",    NULL };
	for (int round = 0; round < 3; round++) {
		assert_int_equal(proc_start(&cl, argv), 0);
		usleep(300 * 1000);
		kill(cl.pid, SIGKILL);
		proc_end(&cl);
	}
	char *argv2[] = { (char *)perf, "-c",     "127.0.0.1", "-p",      portbuf, "--op",
			  "send",       "--size", "4096",      "--iters", "100",   NULL };
	assert_int_equal(proc_run(argv2, 30000, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "data verified"));
	proc_end(&srv);
}

/* A responder that takes the TCP connection and never answers. */
static void mpa_reply_timeout_is_a_connect_error(void **state)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loopback(0);
	socklen_t al = sizeof(a);
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 4), 0);
	getsockname(l, (struct sockaddr *)&a, &al);
	struct client c;
	client_open(&c, 4096);
	struct uw_conn_param p = { .ird = 1, .ord = 1, .mpa_timeout_ms = 300 };
	long t0 = proc_ms();
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, &p), 0);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	struct uw_cm_event *e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_ERROR);
	/* ETIME: TCP was up and took the Request; no Reply came (a TCP
	 * connection that never came up is ETIMEDOUT) */
	assert_int_equal(e->status, ETIME);
	assert_true(proc_ms() - t0 < 3000);
	uw_cm_ack_event(e);
	/* the Request did go out */
	char req[20];
	assert_int_equal(recv(s, req, sizeof(req), MSG_WAITALL), 20);
	assert_memory_equal(req, "MPA ID Req Frame", 16);
	close(s);
	close(l);
	client_close(&c);
}

/* A server side: a context with auto progress that accepts everything. */
struct server {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq;
	struct uw_cm_channel *ch;
	struct uw_cm_id *lid;
	int port;
};

static void server_open(struct server *s, unsigned request_timeout_ms)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO,
				      .mpa_request_timeout_ms = request_timeout_ms };
	s->ctx = uw_open(&ca);
	assert_non_null(s->ctx);
	s->pd = uw_alloc_pd(s->ctx);
	s->cq = uw_create_cq(s->ctx, 256, NULL, NULL);
	s->ch = uw_cm_create_channel(s->ctx);
	s->lid = uw_cm_create_id(s->ch, NULL);
	struct sockaddr_in a = loopback(0);
	assert_int_equal(uw_cm_listen(s->lid, (struct sockaddr *)&a, 16), 0);
	s->port = ntohs(((struct sockaddr_in *)&s->lid->local_addr)->sin_port);
}

static void server_close(struct server *s)
{
	struct uw_cm_event *e;
	while ((e = next_event(s->ch, 0)))
		uw_cm_ack_event(e);
	assert_int_equal(uw_cm_destroy_id(s->lid), 0);
	assert_int_equal(uw_cm_destroy_channel(s->ch), 0);
	assert_int_equal(uw_destroy_cq(s->cq), 0);
	assert_int_equal(uw_dealloc_pd(s->pd), 0);
	assert_int_equal(uw_close(s->ctx), 0);
}

/* An initiator that connects and never sends its Request: the responder
 * gives up after its timeout and keeps serving. */
static void mpa_request_timeout_closes_and_server_goes_on(void **state)
{
	struct server s;
	server_open(&s, 300);
	int raw = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loopback(s.port);
	assert_int_equal(connect(raw, (struct sockaddr *)&a, sizeof(a)), 0);
	struct timeval tv = { 5, 0 };
	setsockopt(raw, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char b;
	long t0 = proc_ms();
	assert_int_equal(recv(raw, &b, 1, 0), 0); /* closed by the server */
	assert_true(proc_ms() - t0 < 3000);
	close(raw);
	/* nobody was told: the Request never arrived */
	assert_null(next_event(s.ch, 0));
	/* and a real client is served (both ends in this process: both
	 * need their own progress) */
	struct client c;
	client_open_mode(&c, 4096, UW_PROGRESS_AUTO);
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, NULL), 0);
	struct uw_cm_event *e = next_event(s.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	struct uw_cm_id *id = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr qa = { .send_cq = s.cq, .recv_cq = s.cq, .cap = { 4, 4, 1, 1, 0 } };
	struct uw_qp *qp = uw_cm_create_qp(id, s.pd, &qa);
	assert_non_null(qp);
	assert_int_equal(uw_cm_accept(id, NULL), 0);
	e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
	uw_cm_ack_event(e);
	uw_cm_disconnect(c.id);
	e = next_event(s.ch, 5000);
	while (e && e->event != UW_CM_EVENT_DISCONNECTED) {
		uw_cm_ack_event(e);
		e = next_event(s.ch, 5000);
	}
	assert_non_null(e);
	uw_cm_ack_event(e);
	uw_destroy_qp(qp);
	uw_cm_destroy_id(id);
	client_close(&c);
	server_close(&s);
}

static void reject_carries_private_data(void **state)
{
	struct server s;
	server_open(&s, 0);
	struct client c;
	client_open_mode(&c, 4096, UW_PROGRESS_AUTO);
	struct sockaddr_in a = loopback(s.port);
	struct uw_conn_param p = {
		.private_data = "may I?", .private_data_len = 6, .ird = 1, .ord = 1
	};
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, &p), 0);
	struct uw_cm_event *e = next_event(s.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	assert_int_equal(e->private_data_len, 6);
	assert_memory_equal(e->private_data, "may I?", 6);
	assert_true(e->rfc7306); /* both ends are uwarp */
	struct uw_cm_id *id = e->id;
	uw_cm_ack_event(e);
	assert_int_equal(uw_cm_reject(id, "no thanks", 9), 0);
	uw_cm_destroy_id(id);
	e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_REJECTED);
	assert_int_equal(e->private_data_len, 9);
	assert_memory_equal(e->private_data, "no thanks", 9);
	uw_cm_ack_event(e);
	client_close(&c);
	server_close(&s);
}

static void connection_refused_is_a_connect_error(void **state)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = loopback(0);
	socklen_t al = sizeof(a);
	bind(l, (struct sockaddr *)&a, sizeof(a));
	getsockname(l, (struct sockaddr *)&a, &al);
	close(l); /* nobody listens there now */
	struct client c;
	client_open(&c, 4096);
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, NULL), 0);
	struct uw_cm_event *e = next_event(c.ch, 5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_ERROR);
	assert_int_equal(e->status, ECONNREFUSED);
	uw_cm_ack_event(e);
	client_close(&c);
}

/* Bad arguments get an errno, not a crash. */
static void bad_arguments_get_an_errno(void **state)
{
	struct client c;
	client_open(&c, 4096);
	struct uw_send_wr *bad = NULL;
	struct uw_send_wr wr = { .opcode = UW_WR_SEND };
	/* not connected: INIT */
	assert_int_equal(uw_post_send(c.qp, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
	struct uw_sge s = { (uintptr_t)c.buf, 8192, c.mr->lkey }; /* beyond the MR */
	struct uw_recv_wr rw = { .sg_list = &s, .num_sge = 1 }, *rbad;
	assert_int_equal(uw_post_recv(c.qp, &rw, &rbad), EINVAL);
	s.length = 16;
	s.lkey ^= 0x55; /* a wrong key */
	assert_int_equal(uw_post_recv(c.qp, &rw, &rbad), EINVAL);
	assert_null(uw_reg_mr(c.pd, NULL, 10, 0));
	assert_int_equal(errno, EINVAL);
	assert_null(uw_reg_mr(c.pd, c.buf, 10, UW_ACCESS_REMOTE_WRITE)); /* needs LOCAL_WRITE */
	assert_int_equal(errno, EINVAL);
	assert_null(uw_create_cq(c.ctx, 0, NULL, NULL));
	assert_int_equal(errno, EINVAL);
	struct uw_qp_init_attr qa = { .send_cq = c.cq, .recv_cq = c.cq, .cap = { 4, 4, 99, 1, 0 } };
	assert_null(uw_create_qp(c.pd, &qa));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(uw_dealloc_pd(c.pd), EBUSY);
	assert_int_equal(uw_destroy_cq(c.cq), EBUSY);
	assert_int_equal(uw_close(c.ctx), EBUSY);
	assert_int_equal(uw_cm_disconnect(c.id), ENOTCONN);
	struct uw_context_attr ca = { .progress = 7 };
	assert_null(uw_open(&ca));
	assert_int_equal(errno, EINVAL);
	client_close(&c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(peer_killed_mid_transfer_every_wr_completes),
		cmocka_unit_test(graceful_disconnect_flushes_outstanding_wrs),
		cmocka_unit_test(client_killed_server_keeps_serving),
		cmocka_unit_test(mpa_reply_timeout_is_a_connect_error),
		cmocka_unit_test(mpa_request_timeout_closes_and_server_goes_on),
		cmocka_unit_test(reject_carries_private_data),
		cmocka_unit_test(connection_refused_is_a_connect_error),
		cmocka_unit_test(bad_arguments_get_an_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
