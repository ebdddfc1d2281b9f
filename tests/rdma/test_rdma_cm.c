/*
 * test_rdma_cm: a program written to rdma-core's <rdma/rdma_cma.h> and
 * linked against Debian's librdmacm and libibverbs, run by ctest under
 * uwarp-run, so what it exercises is uwarp's librdmacm: the asynchronous
 * calls and their events (resolution, request with private data,
 * accept, establishment, data both ways with Send, RDMA Write and RDMA
 * Read, disconnection), the channel's descriptor under poll(), a
 * rejection, the synchronous endpoint calls (rdma_create_ep,
 * rdma_get_request) with rdma_verbs.h's helpers, and bad arguments and
 * unimplemented calls failing with rdma-core's errno.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <rdma/rsocket.h>

#include "../integration/ss_tos.h"

static struct rdma_cm_event *expect(struct rdma_event_channel *ch, enum rdma_cm_event_type t)
{
	struct rdma_cm_event *e = NULL;
	assert_int_equal(rdma_get_cm_event(ch, &e), 0);
	if (e->event != t)
		fail_msg("got %s (status %d), expected %s", rdma_event_str(e->event), e->status,
			 rdma_event_str(t));
	return e;
}

static void ack(struct rdma_cm_event *e) { assert_int_equal(rdma_ack_cm_event(e), 0); }

static struct sockaddr_in loopback(uint16_t port_be)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = port_be };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	return a;
}

/* one CQ per side, polled until n completions came */
static void wait_wc(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int got = 0;
	for (long spins = 0; got < n && spins < 50000000L; spins++) {
		int r = ibv_poll_cq(cq, n - got, wc + got);
		assert_true(r >= 0);
		got += r;
	}
	assert_int_equal(got, n);
	for (int i = 0; i < n; i++)
		if (wc[i].status != IBV_WC_SUCCESS)
			fail_msg("wc %d: %s", i, ibv_wc_status_str(wc[i].status));
}

struct side {
	struct rdma_cm_id *id;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char buf[4096];
};

static void make_qp(struct side *s)
{
	s->cq = ibv_create_cq(s->id->verbs, 16, NULL, NULL, 0);
	assert_non_null(s->cq);
	struct ibv_qp_init_attr a = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};
	/* no PD: the device's default one, as rdma-core gives */
	assert_int_equal(rdma_create_qp(s->id, NULL, &a), 0);
	assert_non_null(s->id->qp);
	s->mr = ibv_reg_mr(s->id->qp->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
}

static void post_recv(struct side *s, size_t off, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	assert_int_equal(ibv_post_recv(s->id->qp, &r, &bad), 0);
}

static void post(struct side *s, enum ibv_wr_opcode op, size_t off, uint32_t len, uint64_t raddr,
		 uint32_t rkey)
{
	struct ibv_sge sge = { (uintptr_t)s->buf + off, len, s->mr->lkey };
	struct ibv_send_wr w = { .wr_id = 2,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	w.wr.rdma.remote_addr = raddr;
	w.wr.rdma.rkey = rkey;
	assert_int_equal(ibv_post_send(s->id->qp, &w, &bad), 0);
}

static void teardown_side(struct side *s)
{
	rdma_destroy_qp(s->id);
	assert_int_equal(ibv_dereg_mr(s->mr), 0);
	assert_int_equal(ibv_destroy_cq(s->cq), 0);
	assert_int_equal(rdma_destroy_id(s->id), 0);
}

static void on_alarm(int sig) { (void)sig; }

/* The asynchronous calls end to end: events in rdma-core's order, the
 * private data both ways, data placed and verified, a clean end. */
static void connect_transfer_disconnect(void **state)
{
	if (fcntl(0, F_GETFD) < 0) /* descriptor 0 open, checked at the end */
		assert_int_equal(open("/dev/null", O_RDONLY), 0);
	struct rdma_event_channel *ch = rdma_create_event_channel();
	assert_non_null(ch);
	static struct side srv, cli;
	struct rdma_cm_id *listener;
	int lctx;
	assert_int_equal(rdma_create_id(ch, &listener, &lctx, RDMA_PS_TCP), 0);
	/* RDMA_OPTION_ID_TOS: the listener's before its bind (what it
	 * accepts inherits it), the client's before its connect */
	uint8_t ltos = 0x28, ctos = 0x48;
	assert_int_equal(rdma_set_option(listener, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &ltos, 1),
			 0);
	struct sockaddr_in any = loopback(0);
	assert_int_equal(rdma_bind_addr(listener, (struct sockaddr *)&any), 0);
	/* loopback is no interface of uwarp0's: no device yet (see
	 * bind_references_the_device_only_for_its_addresses) */
	assert_null(listener->verbs);
	assert_int_equal(rdma_listen(listener, 4), 0);
	uint16_t port = rdma_get_src_port(listener);
	assert_int_not_equal(port, 0);

	int cctx;
	assert_int_equal(rdma_create_id(ch, &cli.id, &cctx, RDMA_PS_TCP), 0);
	struct sockaddr_in to = loopback(port);
	assert_int_equal(rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&to, 2000), 0);
	/* the event made here wakes a poll() on the channel */
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED);
	assert_ptr_equal(e->id, cli.id);
	assert_ptr_equal(e->id->context, &cctx);
	ack(e);
	assert_non_null(cli.id->verbs);
	assert_int_equal(rdma_resolve_route(cli.id, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(&cli);
	post_recv(&cli, 0, 64);
	assert_int_equal(rdma_set_option(cli.id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &ctos, 1), 0);
	struct rdma_conn_param cp = { .private_data = "hello",
				      .private_data_len = 6,
				      .responder_resources = 4,
				      .initiator_depth = 4 };
	assert_int_equal(rdma_connect(cli.id, &cp), 0);

	assert_int_equal(poll(&pfd, 1, 5000), 1);
	e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	assert_ptr_equal(e->listen_id, listener);
	assert_ptr_equal(e->id->context, &lctx);
	assert_int_equal(e->param.conn.private_data_len, 6);
	assert_string_equal(e->param.conn.private_data, "hello");
	srv.id = e->id;
	assert_non_null(srv.id->verbs);
	ack(e);
	make_qp(&srv);
	post_recv(&srv, 0, 64);
	struct rdma_conn_param ap = { .private_data = "yes",
				      .private_data_len = 4,
				      .responder_resources = 4,
				      .initiator_depth = 4 };
	assert_int_equal(rdma_accept(srv.id, &ap), 0);
	/* both ESTABLISHED arrive, in either order */
	int seen_cli = 0, seen_srv = 0;
	for (int i = 0; i < 2; i++) {
		e = expect(ch, RDMA_CM_EVENT_ESTABLISHED);
		if (e->id == cli.id) {
			seen_cli++;
			assert_int_equal(e->param.conn.private_data_len, 4);
			assert_string_equal(e->param.conn.private_data, "yes");
		} else {
			assert_ptr_equal(e->id, srv.id);
			seen_srv++;
		}
		ack(e);
	}
	assert_int_equal(seen_cli + 10 * seen_srv, 11);
	struct sockaddr_in *peer = (struct sockaddr_in *)rdma_get_peer_addr(cli.id);
	assert_int_equal(peer->sin_port, port);
	assert_int_equal(rdma_get_dst_port(cli.id), port);
	assert_int_equal(rdma_get_src_port(srv.id), port);
	/* the kernel's view of the two TCP sockets: each end's type of
	 * service (the port is the listener's, big-endian in the id) */
	assert_true(ss_tos("dport", ntohs(port), "tos:0x48"));
	assert_true(ss_tos("sport", ntohs(port), "tos:0x28"));

	/* a Send each way, then a Write into the server and a Read back */
	struct ibv_wc wc[2];
	strcpy(cli.buf + 1024, "ping from the client");
	post(&cli, IBV_WR_SEND, 1024, 21, 0, 0);
	wait_wc(srv.cq, 1, wc);
	assert_int_equal(wc[0].opcode, IBV_WC_RECV);
	assert_int_equal(wc[0].byte_len, 21);
	assert_string_equal(srv.buf, "ping from the client");
	wait_wc(cli.cq, 1, wc);
	strcpy(srv.buf + 1024, "pong");
	post(&srv, IBV_WR_SEND, 1024, 5, 0, 0);
	wait_wc(cli.cq, 1, wc);
	assert_string_equal(cli.buf, "pong");
	wait_wc(srv.cq, 1, wc);
	memset(cli.buf + 2048, 0x5a, 1000);
	post(&cli, IBV_WR_RDMA_WRITE, 2048, 1000, (uintptr_t)srv.buf + 2048, srv.mr->rkey);
	wait_wc(cli.cq, 1, wc);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
	memset(cli.buf + 3072, 0, 1000);
	post(&cli, IBV_WR_RDMA_READ, 3072, 1000, (uintptr_t)srv.buf + 2048, srv.mr->rkey);
	wait_wc(cli.cq, 1, wc);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	for (int i = 0; i < 1000; i++)
		assert_int_equal((unsigned char)cli.buf[3072 + i], 0x5a);

	assert_int_equal(rdma_disconnect(cli.id), 0);
	for (int i = 0; i < 2; i++)
		ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	/* the other side's disconnect after the peer's is not an error */
	assert_int_equal(rdma_disconnect(srv.id), 0);
	teardown_side(&cli);
	teardown_side(&srv);
	assert_int_equal(rdma_destroy_id(listener), 0);
	/* ending ids closes no descriptor of the program's (an accepted
	 * id's once closed descriptor 0) */
	assert_true(fcntl(0, F_GETFD) >= 0);
	/* nothing left: a signal ends a blocking wait with EINTR */
	struct sigaction sa = { .sa_handler = on_alarm }, old;
	sigaction(SIGALRM, &sa, &old); /* no SA_RESTART */
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	setitimer(ITIMER_REAL, &it, NULL);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(ch, &e), -1);
	assert_int_equal(errno, EINTR);
	sigaction(SIGALRM, &old, NULL);
	/* and a non-blocking channel says EAGAIN */
	int fl = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(rdma_get_cm_event(ch, &e), -1);
	assert_int_equal(errno, EAGAIN);
	rdma_destroy_event_channel(ch);
}

/* The client's QP made with rdma_create_qp_ex and these send_ops_flags
 * (0: rdma_create_qp) */
static uint64_t client_send_ops;

static void make_qp_ex(struct side *s, uint64_t ops)
{
	s->cq = ibv_create_cq(s->id->verbs, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr_ex a = {
		.send_cq = s->cq,
		.recv_cq = s->cq,
		.cap = { .max_send_wr = 8,
			 .max_recv_wr = 8,
			 .max_send_sge = 2,
			 .max_recv_sge = 1,
			 .max_inline_data = 64 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.send_ops_flags = ops,
	};
	assert_int_equal(rdma_create_qp_ex(s->id, &a), 0);
	s->mr = ibv_reg_mr(s->id->qp->pd, s->buf, sizeof(s->buf),
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ);
	assert_non_null(s->mr);
}

/* A connected pair on one channel, each side's QP with a receive posted. */
static void pair_up(struct rdma_event_channel *ch, struct rdma_cm_id **listener, struct side *srv,
		    struct side *cli)
{
	assert_int_equal(rdma_create_id(ch, listener, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in a = loopback(0);
	assert_int_equal(rdma_bind_addr(*listener, (struct sockaddr *)&a), 0);
	assert_int_equal(rdma_listen(*listener, 4), 0);
	a = loopback(rdma_get_src_port(*listener));
	assert_int_equal(rdma_create_id(ch, &cli->id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(cli->id, NULL, (struct sockaddr *)&a, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(cli->id, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	if (client_send_ops)
		make_qp_ex(cli, client_send_ops);
	else
		make_qp(cli);
	post_recv(cli, 0, 64);
	struct rdma_conn_param cp = { .responder_resources = 4, .initiator_depth = 4 };
	assert_int_equal(rdma_connect(cli->id, &cp), 0);
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	srv->id = e->id;
	ack(e);
	make_qp(srv);
	post_recv(srv, 0, 64);
	assert_int_equal(rdma_accept(srv->id, &cp), 0);
	ack(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	ack(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
}

/* The client writes what at (rkey, to) and reads it back. */
static void write_read_back(struct side *cli, uint32_t rkey, uint64_t to, const char *what)
{
	struct ibv_wc wc;
	uint32_t n = (uint32_t)strlen(what) + 1;
	strcpy(cli->buf + 1024, what);
	post(cli, IBV_WR_RDMA_WRITE, 1024, n, to, rkey);
	wait_wc(cli->cq, 1, &wc);
	memset(cli->buf + 2048, 0, n);
	post(cli, IBV_WR_RDMA_READ, 2048, n, to, rkey);
	wait_wc(cli->cq, 1, &wc);
	assert_string_equal(cli->buf + 2048, what);
}

/* ibv_reg_mr_iova2, IBV_ACCESS_ZERO_BASED and memory windows of both types
 * with data: a peer addresses a region from its iova (or from 0), a
 * window keeps its region's addresses, ibv_bind_mw (type 1) and
 * IBV_WR_BIND_MW (type 2, the program's ibv_inc_rkey key) complete in the
 * send queue as IBV_WC_BIND_MW, a Send with Invalidate revokes a type 2
 * window, an ibv_bind_mw without a region unbinds, and a use of a revoked
 * key ends the connection with asynchronous events at both ends. */
static void iova_regions_and_windows_carry_data(void **state)
{
	const unsigned rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND;
	const uint64_t iova = 0xabc000000000ull;
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener;
	static struct side srv, cli;
	struct ibv_wc wc;
	static char mem[8192];

	pair_up(ch, &listener, &srv, &cli);
	struct ibv_pd *pd = srv.id->qp->pd;
	struct ibv_mr *mr = ibv_reg_mr_iova2(pd, mem, sizeof(mem), iova, rw);
	assert_non_null(mr);
	struct ibv_mr *zb = ibv_reg_mr(pd, mem, sizeof(mem), rw | IBV_ACCESS_ZERO_BASED);
	assert_non_null(zb);
	write_read_back(&cli, mr->rkey, iova + 100, "at iova + 100");
	assert_string_equal(mem + 100, "at iova + 100");
	write_read_back(&cli, zb->rkey, 300, "zero-based 300");
	assert_string_equal(mem + 300, "zero-based 300");

	/* type 1: ibv_bind_mw over [iova + 4096, + 1024) */
	struct ibv_mw *w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	assert_non_null(w1);
	uint32_t before = w1->rkey;
	struct ibv_mw_bind b = { .wr_id = 31,
				 .send_flags = IBV_SEND_SIGNALED,
				 .bind_info = { mr, iova + 4096, 1024,
						IBV_ACCESS_REMOTE_WRITE |
							IBV_ACCESS_REMOTE_READ } };
	assert_int_equal(ibv_bind_mw(srv.id->qp, w1, &b), 0);
	assert_int_not_equal(w1->rkey, before);
	wait_wc(srv.cq, 1, &wc);
	assert_int_equal(wc.wr_id, 31);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	write_read_back(&cli, w1->rkey, iova + 4096 + 8, "type 1 window");
	assert_string_equal(mem + 4096 + 8, "type 1 window");
	/* a right the window has not: refused at the call, not later */
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_ZERO_BASED;
	assert_int_equal(ibv_bind_mw(srv.id->qp, w1, &b), EINVAL);

	/* type 2: IBV_WR_BIND_MW with the program's key */
	struct ibv_mw *w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	assert_non_null(w2);
	uint32_t key2 = ibv_inc_rkey(w2->rkey);
	struct ibv_send_wr bw = { .wr_id = 32,
				  .opcode = IBV_WR_BIND_MW,
				  .send_flags = IBV_SEND_SIGNALED },
			   *bad;
	bw.bind_mw.mw = w2;
	bw.bind_mw.rkey = key2;
	bw.bind_mw.bind_info =
		(struct ibv_mw_bind_info){ mr, iova + 6144, 1024,
					   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ };
	assert_int_equal(ibv_post_send(srv.id->qp, &bw, &bad), 0);
	assert_int_equal(w2->rkey, key2);
	wait_wc(srv.cq, 1, &wc);
	assert_int_equal(wc.wr_id, 32);
	assert_int_equal(wc.opcode, IBV_WC_BIND_MW);
	write_read_back(&cli, key2, iova + 6144, "type 2 window");
	assert_string_equal(mem + 6144, "type 2 window");
	/* a type 1 window cannot be bound by a send request (rdma-core's rule) */
	bw.bind_mw.mw = w1;
	assert_int_equal(ibv_post_send(srv.id->qp, &bw, &bad), EINVAL);
	assert_ptr_equal(bad, &bw);

	/* the client revokes the type 2 window with its Send */
	struct ibv_sge sge = { (uintptr_t)cli.buf + 1024, 4, cli.mr->lkey };
	struct ibv_send_wr si = { .wr_id = 33,
				  .sg_list = &sge,
				  .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_INV,
				  .send_flags = IBV_SEND_SIGNALED,
				  .invalidate_rkey = key2 };
	assert_int_equal(ibv_post_send(cli.id->qp, &si, &bad), 0);
	wait_wc(cli.cq, 1, &wc);
	wait_wc(srv.cq, 1, &wc);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_true(wc.wc_flags & IBV_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, key2);

	/* ibv_bind_mw with no region: the type 1 window unbound, in order */
	b = (struct ibv_mw_bind){ .wr_id = 34, .send_flags = IBV_SEND_SIGNALED };
	assert_int_equal(ibv_bind_mw(srv.id->qp, w1, &b), 0);
	wait_wc(srv.cq, 1, &wc);
	assert_int_equal(wc.wr_id, 34);

	/* the revoked key used all the same: the server refuses the access
	 * (IBV_EVENT_QP_ACCESS_ERR), the client's QP fails (QP_FATAL); both
	 * ids share the device's context, so both events come to it */
	post(&cli, IBV_WR_RDMA_WRITE, 1024, 8, iova + 6144, key2);
	assert_ptr_equal(cli.id->verbs, srv.id->verbs);
	int seen = 0;
	for (int i = 0; i < 2; i++) {
		struct ibv_async_event ev;
		assert_int_equal(ibv_get_async_event(srv.id->verbs, &ev), 0);
		if (ev.element.qp == srv.id->qp) {
			assert_int_equal(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
			seen += 1;
		} else {
			assert_ptr_equal(ev.element.qp, cli.id->qp);
			assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
			seen += 10;
		}
		ibv_ack_async_event(&ev);
	}
	assert_int_equal(seen, 11);
	ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	assert_int_equal(ibv_dealloc_mw(w1), 0);
	assert_int_equal(ibv_dealloc_mw(w2), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_dereg_mr(zb), 0);
	teardown_side(&cli);
	teardown_side(&srv);
	assert_int_equal(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}

/* The ibv_wr_* calls (an extended QP, rdma-core's newer way to post): a
 * batch of a Write, a Send of inline data (its buffer reused before the
 * batch is posted) and a Read, posted by ibv_wr_complete, completing in
 * order; an aborted batch posts nothing; a batch with a request iWARP
 * cannot carry fails whole; send_ops_flags uwarp has not are refused. */
static void the_ibv_wr_calls_post_a_batch(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener;
	static struct side srv, cli;
	struct ibv_wc wc[3];

	client_send_ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
			  IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_SEND_WITH_INV;
	pair_up(ch, &listener, &srv, &cli);
	client_send_ops = 0;
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(cli.id->qp);
	assert_non_null(x);
	assert_ptr_equal(&x->qp_base, cli.id->qp);
	errno = 0;
	assert_null(ibv_qp_to_qp_ex(srv.id->qp)); /* made without send_ops_flags */
	assert_int_equal(errno, EOPNOTSUPP);

	memset(cli.buf + 1024, 0x3c, 100);
	memset(cli.buf + 3072, 0, 100);
	char tmp[16] = "inline hello";
	ibv_wr_start(x);
	x->wr_id = 11;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(x, srv.mr->rkey, (uintptr_t)srv.buf + 2048);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 100);
	x->wr_id = 12;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, tmp, 13);
	memset(tmp, 0, sizeof(tmp)); /* copied when set, as a device copies it */
	x->wr_id = 13;
	ibv_wr_rdma_read(x, srv.mr->rkey, (uintptr_t)srv.buf + 2048);
	struct ibv_sge rs = { (uintptr_t)cli.buf + 3072, 100, cli.mr->lkey };
	ibv_wr_set_sge_list(x, 1, &rs);
	assert_int_equal(ibv_wr_complete(x), 0);
	wait_wc(cli.cq, 3, wc);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].wr_id, 11 + (unsigned)i);
	assert_int_equal(wc[2].opcode, IBV_WC_RDMA_READ);
	for (int i = 0; i < 100; i++)
		assert_int_equal((unsigned char)cli.buf[3072 + i], 0x3c);
	wait_wc(srv.cq, 1, wc);
	assert_int_equal(wc[0].byte_len, 13);
	assert_string_equal(srv.buf, "inline hello");

	/* aborted: nothing goes */
	ibv_wr_start(x);
	x->wr_id = 21;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 8);
	ibv_wr_abort(x);
	/* Send with Immediate (not iWARP's): the whole batch fails, its
	 * Send included; so does an SGE set before any request */
	ibv_wr_start(x);
	x->wr_id = 22;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 8);
	ibv_wr_send_imm(x, htobe32(7));
	assert_int_equal(ibv_wr_complete(x), EINVAL);
	ibv_wr_start(x);
	ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 8);
	assert_int_equal(ibv_wr_complete(x), EINVAL);
	/* the other requests iWARP cannot carry: EOPNOTSUPP, each batch
	 * with a good Send ahead of it, and nothing of it goes */
	for (int k = 0; k < 4; k++) {
		static const uint8_t hdr[16], v8[8];
		ibv_wr_start(x);
		x->wr_id = 30 + (uint64_t)k;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 8);
		if (k == 0) {
			ibv_wr_send_tso(x, (void *)hdr, sizeof(hdr), 1460);
		} else if (k == 3) {
			ibv_wr_atomic_write(x, srv.mr->rkey, (uintptr_t)srv.buf, v8);
		} else {
			ibv_wr_send(x);
			ibv_wr_set_sge(x, cli.mr->lkey, (uintptr_t)cli.buf + 1024, 8);
			if (k == 1)
				ibv_wr_set_ud_addr(x, NULL, 1, 1);
			else
				ibv_wr_set_xrc_srqn(x, 1);
		}
		assert_int_equal(ibv_wr_complete(x), EOPNOTSUPP);
	}
	/* none of them went: the next Send is the first completion and the
	 * first message the server takes */
	post_recv(&srv, 0, 64);
	ibv_wr_start(x);
	x->wr_id = 23;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, "after", 6);
	assert_int_equal(ibv_wr_complete(x), 0);
	wait_wc(cli.cq, 1, wc);
	assert_int_equal(wc[0].wr_id, 23);
	wait_wc(srv.cq, 1, wc);
	assert_string_equal(srv.buf, "after");

	/* send_ops_flags uwarp has not */
	struct ibv_qp_init_attr_ex bad = {
		.send_cq = cli.cq,
		.recv_cq = cli.cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1 },
		.qp_type = IBV_QPT_RC,
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = cli.id->qp->pd,
		.send_ops_flags = IBV_QP_EX_WITH_SEND_WITH_IMM,
	};
	errno = 0;
	assert_null(ibv_create_qp_ex(cli.id->verbs, &bad));
	assert_int_equal(errno, EOPNOTSUPP);

	assert_int_equal(rdma_disconnect(cli.id), 0);
	ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	teardown_side(&cli);
	teardown_side(&srv);
	assert_int_equal(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}

/* An IPv4 client's connection to an IPv6 wildcard listener made with
 * RDMA_OPTION_ID_AFONLY = afonly: the event the client gets (and the
 * listener's CONNECT_REQUEST, accepted, when it comes). */
static enum rdma_cm_event_type ipv4_client_of_ipv6_listener(int afonly)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *l, *c;
	assert_int_equal(rdma_create_id(ch, &l, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(
		rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly)),
		0);
	struct sockaddr_in6 any6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_ANY_INIT };
	assert_int_equal(rdma_bind_addr(l, (struct sockaddr *)&any6), 0);
	/* once bound, it is too late (as the kernel says) */
	errno = 0;
	assert_int_equal(
		rdma_set_option(l, RDMA_OPTION_ID, RDMA_OPTION_ID_AFONLY, &afonly, sizeof(afonly)),
		-1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_listen(l, 4), 0);
	struct sockaddr_in to = loopback(rdma_get_src_port(l));
	assert_int_equal(rdma_create_id(ch, &c, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(c, NULL, (struct sockaddr *)&to, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(c, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC
	};
	assert_int_equal(rdma_create_qp(c, NULL, &qa), 0);
	struct rdma_conn_param cp = { 0 };
	assert_int_equal(rdma_connect(c, &cp), 0);
	struct rdma_cm_event *e = NULL;
	assert_int_equal(rdma_get_cm_event(ch, &e), 0);
	struct rdma_cm_id *srv = NULL;
	if (e->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		srv = e->id;
		ack(e);
		assert_int_equal(rdma_create_qp(srv, NULL, &qa), 0);
		assert_int_equal(rdma_accept(srv, &cp), 0);
		assert_int_equal(rdma_get_cm_event(ch, &e), 0);
		if (e->event == RDMA_CM_EVENT_ESTABLISHED && e->id == srv) {
			ack(e);
			assert_int_equal(rdma_get_cm_event(ch, &e), 0);
		}
	}
	enum rdma_cm_event_type got = e->event;
	ack(e);
	if (srv) {
		rdma_disconnect(c);
		ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
		rdma_destroy_qp(srv);
		assert_int_equal(rdma_destroy_id(srv), 0);
	}
	rdma_destroy_qp(c);
	assert_int_equal(rdma_destroy_id(c), 0);
	assert_int_equal(rdma_destroy_id(l), 0);
	rdma_destroy_event_channel(ch);
	return got;
}

/* RDMA_OPTION_ID_AFONLY: an IPv6 listener that is IPv6 only refuses an
 * IPv4 client (REJECTED, as a port nobody listens on); one that is not
 * takes it (its address mapped) */
static void afonly_keeps_ipv4_clients_out(void **state)
{
	assert_int_equal(ipv4_client_of_ipv6_listener(1), RDMA_CM_EVENT_REJECTED);
	assert_int_equal(ipv4_client_of_ipv6_listener(0), RDMA_CM_EVENT_ESTABLISHED);
}

/* A rejection reaches the client as REJECTED; so does a port nobody
 * listens on (TCP refused), as the kernel's iWARP manager reports it. */
static void rejected_and_refused(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener, *c1, *c2;
	assert_int_equal(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in any = loopback(0);
	assert_int_equal(rdma_bind_addr(listener, (struct sockaddr *)&any), 0);
	assert_int_equal(rdma_listen(listener, 1), 0);
	uint16_t port = rdma_get_src_port(listener);

	static struct side s1;
	assert_int_equal(rdma_create_id(ch, &c1, NULL, RDMA_PS_TCP), 0);
	s1.id = c1;
	struct sockaddr_in to = loopback(port);
	assert_int_equal(rdma_resolve_addr(c1, NULL, (struct sockaddr *)&to, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(c1, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(&s1);
	assert_int_equal(rdma_connect(c1, NULL), 0);
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	struct rdma_cm_id *req = e->id;
	ack(e);
	assert_int_equal(rdma_reject(req, "no", 3), 0);
	e = expect(ch, RDMA_CM_EVENT_REJECTED);
	assert_ptr_equal(e->id, c1);
	assert_true(e->status != 0);
	ack(e);
	assert_int_equal(rdma_destroy_id(req), 0);
	teardown_side(&s1);

	/* the listener gone, its port refuses */
	assert_int_equal(rdma_destroy_id(listener), 0);
	static struct side s2;
	assert_int_equal(rdma_create_id(ch, &c2, NULL, RDMA_PS_TCP), 0);
	s2.id = c2;
	assert_int_equal(rdma_resolve_addr(c2, NULL, (struct sockaddr *)&to, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(c2, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(&s2);
	assert_int_equal(rdma_connect(c2, NULL), 0);
	e = expect(ch, RDMA_CM_EVENT_REJECTED);
	assert_int_equal(e->status, -ECONNREFUSED);
	ack(e);
	teardown_side(&s2);
	rdma_destroy_event_channel(ch);
}

/* A connect that comes between the server's rdma_bind_addr and its
 * rdma_listen (qperf's server sends its port in between) waits for the
 * listen instead of being refused. */
static void a_connect_before_listen_waits_for_it(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *listener;
	assert_int_equal(rdma_create_id(ch, &listener, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in any = loopback(0);
	assert_int_equal(rdma_bind_addr(listener, (struct sockaddr *)&any), 0);
	uint16_t port = rdma_get_src_port(listener);
	assert_int_not_equal(port, 0);
	static struct side cli, srv;
	assert_int_equal(rdma_create_id(ch, &cli.id, NULL, RDMA_PS_TCP), 0);
	struct sockaddr_in to = loopback(port);
	assert_int_equal(rdma_resolve_addr(cli.id, NULL, (struct sockaddr *)&to, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED));
	assert_int_equal(rdma_resolve_route(cli.id, 2000), 0);
	ack(expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED));
	make_qp(&cli);
	assert_int_equal(rdma_connect(cli.id, NULL), 0);
	/* nothing for the client yet: no REJECTED while the server is slow */
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 300), 0);
	assert_int_equal(rdma_listen(listener, 1), 0);
	struct rdma_cm_event *e = expect(ch, RDMA_CM_EVENT_CONNECT_REQUEST);
	srv.id = e->id;
	ack(e);
	make_qp(&srv);
	assert_int_equal(rdma_accept(srv.id, NULL), 0);
	for (int i = 0; i < 2; i++)
		ack(expect(ch, RDMA_CM_EVENT_ESTABLISHED));
	assert_int_equal(rdma_disconnect(cli.id), 0);
	for (int i = 0; i < 2; i++)
		ack(expect(ch, RDMA_CM_EVENT_DISCONNECTED));
	teardown_side(&cli);
	teardown_side(&srv);
	assert_int_equal(rdma_destroy_id(listener), 0);
	rdma_destroy_event_channel(ch);
}

/* rdma_create_ep and rdma_get_request (synchronous ids), with
 * rdma_verbs.h's helpers, as rdma-core's rdma_server/rdma_client do. */
static uint16_t sync_port;
static pthread_mutex_t sync_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sync_cond = PTHREAD_COND_INITIALIZER;

static void *sync_server(void *arg)
{
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE, .ai_port_space = RDMA_PS_TCP },
			     *res;
	if (rdma_getaddrinfo("127.0.0.1", "0", &hints, &res))
		return "getaddrinfo";
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1
	};
	struct rdma_cm_id *listen, *id;
	if (rdma_create_ep(&listen, res, NULL, &a))
		return "create_ep";
	rdma_freeaddrinfo(res);
	if (rdma_listen(listen, 1))
		return "listen";
	pthread_mutex_lock(&sync_lock);
	sync_port = rdma_get_src_port(listen);
	pthread_cond_signal(&sync_cond);
	pthread_mutex_unlock(&sync_lock);
	if (rdma_get_request(listen, &id))
		return "get_request";
	if (!id->qp || !id->event || id->event->event != RDMA_CM_EVENT_CONNECT_REQUEST)
		return "the request's id has no QP or event";
	static char msg[64];
	struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof(msg));
	if (!mr || rdma_post_recv(id, NULL, msg, sizeof(msg), mr))
		return "post_recv";
	if (rdma_accept(id, NULL))
		return "accept";
	struct ibv_wc wc;
	if (rdma_get_recv_comp(id, &wc) != 1 || wc.status || strcmp(msg, "sync hello"))
		return "recv";
	if (rdma_post_send(id, NULL, msg, 11, mr, 0) || rdma_get_send_comp(id, &wc) != 1 ||
	    wc.status)
		return "send";
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(id->channel, &e) || e->event != RDMA_CM_EVENT_DISCONNECTED)
		return "no DISCONNECTED";
	rdma_ack_cm_event(e);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
	rdma_destroy_ep(listen);
	return NULL;
}

static void synchronous_endpoints(void **state)
{
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, sync_server, NULL), 0);
	pthread_mutex_lock(&sync_lock);
	while (!sync_port)
		pthread_cond_wait(&sync_cond, &sync_lock);
	pthread_mutex_unlock(&sync_lock);
	char port[8];
	snprintf(port, sizeof(port), "%u", ntohs(sync_port));
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *res;
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", port, &hints, &res), 0);
	assert_non_null(res->ai_dst_addr);
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1
	};
	struct rdma_cm_id *id;
	assert_int_equal(rdma_create_ep(&id, res, NULL, &a), 0);
	rdma_freeaddrinfo(res);
	/* no CQs given: rdma_create_qp made them, with channels */
	assert_non_null(id->send_cq);
	assert_non_null(id->recv_cq_channel);
	static char msg[64] = "sync hello";
	struct ibv_mr *mr = rdma_reg_msgs(id, msg, sizeof(msg));
	assert_non_null(mr);
	assert_int_equal(rdma_connect(id, NULL), 0);
	assert_int_equal(rdma_post_recv(id, NULL, msg + 32, 32, mr), 0);
	assert_int_equal(rdma_post_send(id, NULL, msg, 11, mr, 0), 0);
	struct ibv_wc wc;
	assert_int_equal(rdma_get_send_comp(id, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(rdma_get_recv_comp(id, &wc), 1);
	assert_string_equal(msg + 32, "sync hello");
	assert_int_equal(rdma_disconnect(id), 0);
	void *why;
	assert_int_equal(pthread_join(t, &why), 0);
	if (why)
		fail_msg("server: %s", (char *)why);
	rdma_dereg_mr(mr);
	rdma_destroy_ep(id);
}

static void bad_arguments_and_what_uwarp_has_not(void **state)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_cm_id *id;
	errno = 0;
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_UDP), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(rdma_create_id(ch, &id, NULL, RDMA_PS_TCP), 0);
	errno = 0;
	assert_int_equal(rdma_resolve_route(id, 100), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(rdma_listen(id, 1), -1);
	assert_int_equal(rdma_disconnect(id), -1);
	assert_int_equal(errno, EINVAL);
	/* an address that is not this host's */
	struct sockaddr_in far = loopback(0);
	far.sin_addr.s_addr = inet_addr("203.0.113.7");
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&far), -1);
	assert_int_equal(errno, EADDRNOTAVAIL);
	/* a port another listener holds */
	int s = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in lo = loopback(0);
	socklen_t sl = sizeof(lo);
	assert_int_equal(bind(s, (struct sockaddr *)&lo, sizeof(lo)), 0);
	assert_int_equal(listen(s, 1), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&lo, &sl), 0);
	errno = 0;
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&lo), -1);
	assert_int_equal(errno, EADDRINUSE);
	close(s);
	struct rdma_addrinfo *res;
	errno = 0;
	assert_int_equal(rdma_getaddrinfo("no-such-host.invalid", "1", NULL, &res), -1);
	assert_int_not_equal(errno, 0);
	errno = 0;
	assert_int_equal(rdma_join_multicast(id, (struct sockaddr *)&lo, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	/* every other call README names as not implemented */
	struct rdma_cm_join_mc_attr_ex mc = { .addr = (struct sockaddr *)&lo };
	errno = 0;
	assert_int_equal(rdma_join_multicast_ex(id, &mc, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(rdma_leave_multicast(id, (struct sockaddr *)&lo), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(rdma_notify(id, IBV_EVENT_COMM_EST), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_ece ece = { 0 };
	errno = 0;
	assert_int_equal(rdma_set_local_ece(id, &ece), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(rdma_get_remote_ece(id, &ece), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	int tos = 8; /* rdma-core takes one byte */
	errno = 0;
	assert_int_equal(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos, sizeof(tos)),
			 -1);
	assert_int_equal(errno, EINVAL);
	int ms = 100;
	errno = 0;
	assert_int_equal(
		rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &ms, sizeof(ms)),
		-1);
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_path_data path = { 0 }; /* an InfiniBand path record */
	errno = 0;
	assert_int_equal(
		rdma_set_option(id, RDMA_OPTION_IB, RDMA_OPTION_IB_PATH, &path, sizeof(path)), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	int on = 1;
	assert_int_equal(
		rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_REUSEADDR, &on, sizeof(on)), 0);
	/* rsockets are esock's streams (test_rsocket): no datagrams; rpoll
	 * takes any descriptor */
	errno = 0;
	assert_int_equal(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "x", 1), 1);
	struct pollfd pfd = { .fd = p[0], .events = POLLIN };
	assert_int_equal(rpoll(&pfd, 1, 0), 1);
	close(p[0]);
	close(p[1]);
	assert_string_equal(rdma_event_str(RDMA_CM_EVENT_ESTABLISHED), "RDMA_CM_EVENT_ESTABLISHED");
	int n = 0;
	struct ibv_context **devs = rdma_get_devices(&n);
	assert_int_equal(n, 1);
	assert_string_equal(ibv_get_device_name(devs[0]->device), "uwarp0");
	rdma_free_devices(devs);
	assert_int_equal(rdma_destroy_id(id), 0);
	rdma_destroy_event_channel(ch);
}

/* Neither node nor service: the hints' own addresses are the answer, as
 * libfabric's verbs provider asks for its endpoints' (rdma-core's
 * rdma_getaddrinfo(3): node and service are both optional) */
static void getaddrinfo_from_the_hints_addresses(void **state)
{
	(void)state;
	struct sockaddr_in src = loopback(htons(4791)), dst = loopback(htons(4792));
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP,
				       .ai_qp_type = IBV_QPT_RC,
				       .ai_src_addr = (struct sockaddr *)&src,
				       .ai_src_len = sizeof(src) };
	struct rdma_addrinfo *res = NULL;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	assert_int_equal(res->ai_family, AF_INET);
	assert_true(res->ai_flags & RAI_PASSIVE);
	assert_int_equal(res->ai_src_len, sizeof(src));
	assert_memory_equal(res->ai_src_addr, &src, sizeof(src));
	assert_null(res->ai_dst_addr);
	rdma_freeaddrinfo(res);
	/* active, both given */
	hints.ai_flags = 0;
	hints.ai_dst_addr = (struct sockaddr *)&dst;
	hints.ai_dst_len = sizeof(dst);
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &hints, &res), 0);
	assert_memory_equal(res->ai_dst_addr, &dst, sizeof(dst));
	assert_memory_equal(res->ai_src_addr, &src, sizeof(src));
	rdma_freeaddrinfo(res);
	/* a name resolved, and the hints' source kept beside it */
	assert_int_equal(rdma_getaddrinfo("127.0.0.1", "4793", &hints, &res), 0);
	assert_int_equal(ntohs(((struct sockaddr_in *)res->ai_dst_addr)->sin_port), 4793);
	assert_memory_equal(res->ai_src_addr, &src, sizeof(src));
	rdma_freeaddrinfo(res);
	/* nothing to answer from */
	struct rdma_addrinfo empty = { .ai_port_space = RDMA_PS_TCP };
	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &empty, &res), -1);
	assert_int_equal(errno, EINVAL);
	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, NULL, &res), -1);
	assert_int_equal(errno, EINVAL);
	/* not an IP address */
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct rdma_addrinfo local = { .ai_src_addr = (struct sockaddr *)&un,
				       .ai_src_len = sizeof(un) };
	errno = 0;
	assert_int_equal(rdma_getaddrinfo(NULL, NULL, &local, &res), -1);
	assert_int_equal(errno, EAFNOSUPPORT);
}

/* rdma_bind_addr(3): an id bound to one of the device's addresses
 * references it; a wildcard or loopback bind references none (libfabric's
 * verbs provider then gives its endpoints an interface's address, not
 * 127.0.0.1) */
static void bind_references_the_device_only_for_its_addresses(void **state)
{
	(void)state;
	struct rdma_cm_id *id;
	struct sockaddr_in a = loopback(0);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	assert_null(id->verbs);
	assert_int_equal(rdma_destroy_id(id), 0);
	a.sin_addr.s_addr = htonl(INADDR_ANY);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	assert_null(id->verbs);
	assert_int_equal(rdma_destroy_id(id), 0);
	struct ifaddrs *list, *i;
	assert_int_equal(getifaddrs(&list), 0);
	for (i = list; i; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    !(i->ifa_flags & IFF_LOOPBACK) && (i->ifa_flags & IFF_UP))
			break;
	if (!i) {
		freeifaddrs(list);
		skip(); /* a host with loopback only */
	}
	memcpy(&a, i->ifa_addr, sizeof(a));
	freeifaddrs(list);
	a.sin_port = 0;
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_bind_addr(id, (struct sockaddr *)&a), 0);
	assert_non_null(id->verbs);
	assert_string_equal(ibv_get_device_name(id->verbs->device), "uwarp0");
	assert_int_equal(rdma_destroy_id(id), 0);
}

/* A QP the program made itself (ibv_create_qp), named to the connection
 * manager only by conn_param.qp_num, as rping -q does: both ends, data
 * through it, rdma_establish on the active side, and the refusals */
struct own_qp {
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	char buf[64];
};

static int own_qp_make(struct own_qp *o, struct ibv_context *verbs)
{
	o->pd = ibv_alloc_pd(verbs);
	o->cq = o->pd ? ibv_create_cq(verbs, 8, NULL, NULL, 0) : NULL;
	struct ibv_qp_init_attr a = {
		.send_cq = o->cq,
		.recv_cq = o->cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
		.sq_sig_all = 1,
	};
	o->qp = o->cq ? ibv_create_qp(o->pd, &a) : NULL;
	o->mr = o->qp ? ibv_reg_mr(o->pd, o->buf, sizeof(o->buf), IBV_ACCESS_LOCAL_WRITE) : NULL;
	return o->mr ? 0 : -1;
}

static void own_qp_free(struct own_qp *o)
{
	ibv_dereg_mr(o->mr);
	ibv_destroy_qp(o->qp);
	ibv_destroy_cq(o->cq);
	ibv_dealloc_pd(o->pd);
}

static int own_qp_wait(struct own_qp *o, struct ibv_wc *wc)
{
	for (int i = 0; i < 2000000; i++) {
		int n = ibv_poll_cq(o->cq, 1, wc);
		if (n)
			return n;
	}
	return 0;
}

static pthread_mutex_t own_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t own_cond = PTHREAD_COND_INITIALIZER;
static uint16_t own_port;

static void *own_qp_server(void *arg)
{
	(void)arg;
	struct rdma_cm_id *listen, *id;
	struct sockaddr_in a = loopback(0);
	if (rdma_create_id(NULL, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen, (struct sockaddr *)&a) || rdma_listen(listen, 1))
		return "listen";
	pthread_mutex_lock(&own_lock);
	own_port = rdma_get_src_port(listen);
	pthread_cond_signal(&own_cond);
	pthread_mutex_unlock(&own_lock);
	if (rdma_get_request(listen, &id))
		return "get_request";
	static struct own_qp o;
	if (own_qp_make(&o, id->verbs))
		return "QP";
	struct ibv_sge sge = { (uintptr_t)o.buf, sizeof(o.buf), o.mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 9, .sg_list = &sge, .num_sge = 1 }, *bad;
	if (ibv_post_recv(o.qp, &r, &bad))
		return "post_recv";
	struct rdma_conn_param p = { .qp_num = o.qp->qp_num };
	if (rdma_accept(id, &p))
		return "accept";
	if (id->qp)
		return "rdma_accept set id->qp for the program's own QP";
	struct ibv_wc wc;
	if (own_qp_wait(&o, &wc) != 1 || wc.status || wc.wr_id != 9 ||
	    strcmp(o.buf, "own QP hello"))
		return "recv";
	struct rdma_cm_event *e;
	if (rdma_get_cm_event(id->channel, &e) || e->event != RDMA_CM_EVENT_DISCONNECTED)
		return "no DISCONNECTED";
	rdma_ack_cm_event(e);
	rdma_destroy_id(id);
	own_qp_free(&o);
	rdma_destroy_id(listen);
	return NULL;
}

static void a_qp_the_program_made_connects_by_its_number(void **state)
{
	(void)state;
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, own_qp_server, NULL), 0);
	pthread_mutex_lock(&own_lock);
	while (!own_port)
		pthread_cond_wait(&own_cond, &own_lock);
	pthread_mutex_unlock(&own_lock);
	struct rdma_cm_id *id;
	struct sockaddr_in to = loopback(own_port);
	assert_int_equal(rdma_create_id(NULL, &id, NULL, RDMA_PS_TCP), 0);
	assert_int_equal(rdma_resolve_addr(id, NULL, (struct sockaddr *)&to, 2000), 0);
	assert_int_equal(rdma_resolve_route(id, 2000), 0);
	static struct own_qp o;
	assert_int_equal(own_qp_make(&o, id->verbs), 0);
	/* before the connection, and with no QP or a number that names none */
	errno = 0;
	assert_int_equal(rdma_establish(id), -1);
	assert_int_equal(errno, EINVAL);
	struct rdma_conn_param p = { .qp_num = 0 };
	errno = 0;
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	p.qp_num = o.qp->qp_num + 1000;
	errno = 0;
	assert_int_equal(rdma_connect(id, &p), -1);
	assert_int_equal(errno, EINVAL);
	p.qp_num = o.qp->qp_num;
	assert_int_equal(rdma_connect(id, &p), 0);
	assert_null(id->qp);
	assert_int_equal(rdma_establish(id), 0);
	/* what rdma-core tells a program moving its own QP: the state uwarp
	 * has put it in */
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTS };
	int mask;
	assert_int_equal(rdma_init_qp_attr(id, &qa, &mask), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(ibv_modify_qp(o.qp, &qa, mask), 0);
	strcpy(o.buf, "own QP hello");
	struct ibv_sge sge = { (uintptr_t)o.buf, 13, o.mr->lkey };
	struct ibv_send_wr s = { .wr_id = 5, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND },
			   *bad;
	assert_int_equal(ibv_post_send(o.qp, &s, &bad), 0);
	struct ibv_wc wc;
	assert_int_equal(own_qp_wait(&o, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(rdma_disconnect(id), 0);
	void *why;
	assert_int_equal(pthread_join(t, &why), 0);
	if (why)
		fail_msg("server: %s", (char *)why);
	assert_int_equal(rdma_destroy_id(id), 0);
	own_qp_free(&o);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(connect_transfer_disconnect),
		cmocka_unit_test(iova_regions_and_windows_carry_data),
		cmocka_unit_test(the_ibv_wr_calls_post_a_batch),
		cmocka_unit_test(rejected_and_refused),
		cmocka_unit_test(afonly_keeps_ipv4_clients_out),
		cmocka_unit_test(a_connect_before_listen_waits_for_it),
		cmocka_unit_test(synchronous_endpoints),
		cmocka_unit_test(bad_arguments_and_what_uwarp_has_not),
		cmocka_unit_test(getaddrinfo_from_the_hints_addresses),
		cmocka_unit_test(bind_references_the_device_only_for_its_addresses),
		cmocka_unit_test(a_qp_the_program_made_connects_by_its_number),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
