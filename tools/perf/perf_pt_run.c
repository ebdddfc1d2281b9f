/*
 * perf_pt_run.c: one perftest run, in perftest's order of steps. "D" is a
 * handshake (pt_handshake, a pingpong_dest each way).
 *
 *   communication connection; prologue (version, page, cache line, MTU)
 *   D (zeros); the test connection; D (zeros)
 *   D x3 with our QP number, PSN and memory (x4 for write_lat, read_lat);
 *   send_bw's memory is its credit word
 *   write_bw, read_bw  client: test, D, report (5 exchanges), D
 *                      server: D (while the client tests), report, D
 *   send_bw            server posts its receives; D; test; D
 *   write_lat          test (no closing D)
 *   read_lat           client: test, D; server: D
 *   send_lat           both post receives; D; test; D
 *
 * Then the test connection closes, then the communication connection. The
 * server serves both connections from one listener that it opens before
 * anything else, so the client's connects never find the port closed.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "perf.h"
#include "perf_pt.h"

/* a client's connects retry this long while nobody listens yet */
#define PT_RETRY_MS 10000
/* how long we leave the first disconnect to the peer */
#define PT_GRACE_MS 2000

static int fail(const struct pt_run *r, const char *what, int rc)
{
	const char *why = rc == -EPROTO ? "the peer's message has a size this test does not expect "
					  "(is it running the same test?)"
			  : rc == -ECONNRESET ? "the peer closed the connection"
					      : strerror(-rc);
	fprintf(stderr, "uwarp-perf --perftest %s %s: %s: %s\n", r->o->test->name,
		r->client ? "client" : "server", what, why);
	return rc;
}

static int resolve_peer(struct pt_run *r)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	snprintf(port, sizeof(port), "%d", r->o->port);
	int rc = getaddrinfo(r->o->host, port, &hints, &ai);
	if (rc) {
		fprintf(stderr, "uwarp-perf --perftest: cannot resolve %s: %s\n", r->o->host,
			gai_strerror(rc));
		return -ENOENT;
	}
	memcpy(&r->peer, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	return 0;
}

/* The IPv6 wildcard takes IPv4 too; an IPv4-only host gets 0.0.0.0. */
static int start_listener(struct pt_run *r)
{
	uint16_t port = htons((uint16_t)r->o->port);
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6,
				   .sin6_port = port,
				   .sin6_addr = IN6ADDR_ANY_INIT };
	struct sockaddr_in a4 = { .sin_family = AF_INET,
				  .sin_port = port,
				  .sin_addr = { htonl(INADDR_ANY) } };
	r->listen_ch = uw_cm_create_channel(r->ctx);
	r->listener = r->listen_ch ? uw_cm_create_id(r->listen_ch, NULL) : NULL;
	if (!r->listener)
		return fail(r, "listener", -errno);
	int rc = uw_cm_listen(r->listener, (struct sockaddr *)&a6, 4);
	if (rc == EAFNOSUPPORT)
		rc = uw_cm_listen(r->listener, (struct sockaddr *)&a4, 4);
	if (rc)
		return fail(r, "listen", -rc);
	/* the port bound, which -p 0 leaves to the kernel */
	if (!r->o->json)
		printf("uwarp-perf --perftest %s: server on port %d, waiting for a client\n",
		       r->o->test->name,
		       ntohs(((struct sockaddr_in *)&r->listener->local_addr)->sin_port));
	fflush(stdout);
	return 0;
}

/* perftest's depths: it caps both by the iterations and makes an odd
 * receive depth even */
static void set_depths(struct pt_run *r)
{
	const struct pt_test *t = r->o->test;
	uint64_t iters = r->o->iters;
	r->tx_depth = 1;
	if (t->kind == PT_BW)
		r->tx_depth = (uint32_t)(iters < PT_TX_DEPTH_BW ? iters : PT_TX_DEPTH_BW);
	r->rx_depth = 1;
	if (t->verb == PT_SEND) {
		r->rx_depth = (uint32_t)(iters < PT_RX_DEPTH_SEND ? iters : PT_RX_DEPTH_SEND);
		r->rx_depth += r->rx_depth % 2;
	}
}

static int alloc_memory(struct pt_run *r)
{
	r->area = pt_area_size(r->o->size, r->cycle_buffer, r->cache_line);
	uint64_t len = (2 * r->area + 4095) & ~4095ull;
	r->buf = aligned_alloc(4096, len);
	if (!r->buf)
		return -ENOMEM;
	memset(r->buf, 0, len);
	r->mr = uw_reg_mr(r->pd, r->buf, len,
			  UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ);
	if (!r->mr)
		return -errno;
	if (r->o->test->verb != PT_SEND || r->o->test->kind != PT_BW)
		return 0;
	r->credit = aligned_alloc(64, 64);
	if (!r->credit)
		return -ENOMEM;
	memset(r->credit, 0, 64);
	r->credit_mr = uw_reg_mr(r->pd, r->credit, 2 * sizeof(uint32_t),
				 UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	return r->credit_mr ? 0 : -errno;
}

static struct uw_conn_param test_param(const struct pt_run *r)
{
	struct uw_conn_param p = { .crc = r->o->crc };
	if (r->o->test->verb == PT_READ)
		p.ird = p.ord = PT_OUT_READS;
	return p;
}

static void fill_dest(struct pt_run *r)
{
	bool read = r->o->test->verb == PT_READ;
	r->mine = (struct pt_dest){ .out_reads = read ? PT_OUT_READS : 1,
				    .qpn = r->test.qp->qp_num,
				    .psn = (uint32_t)lrand48() & 0xffffff,
				    .rkey = r->mr->rkey,
				    .vaddr = (uintptr_t)(r->buf + r->area) };
	if (r->credit) {
		r->mine.rkey = r->credit_mr->rkey;
		r->mine.vaddr = (uintptr_t)&r->credit[1];
	}
}

/* Everything up to the test proper: both connections and the handshakes. */
static int connect_all(struct pt_run *r)
{
	struct uw_conn_param cp = { .crc = r->o->crc };
	struct pt_dest zero = { 0 };
	const struct sockaddr *peer = (const struct sockaddr *)&r->peer;
	int rc = pt_comm_open(&r->comm, r->ctx, r->pd, r->client);
	if (rc)
		return fail(r, "communication connection", rc);
	rc = r->client ? pt_link_connect(&r->comm.link, r->pd, peer, &cp, pt_comm_post_recv,
					 &r->comm, PT_RETRY_MS)
		       : pt_link_accept(&r->comm.link, r->pd, r->listen_ch, &cp, pt_comm_post_recv,
					&r->comm, -1);
	if (rc)
		return fail(r, "communication connection", rc);
	if ((rc = pt_prologue(&r->comm, &r->cycle_buffer, &r->cache_line)))
		return fail(r, "version, page size and MTU exchange", rc);
	set_depths(r);
	if ((rc = alloc_memory(r)))
		return fail(r, "test memory", rc);
	struct uw_qp_cap cap = { .max_send_wr = r->tx_depth + 8,
				 .max_recv_wr = r->rx_depth + 1,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .max_inline_data = 64 };
	int cqe = (int)(2 * (cap.max_send_wr + cap.max_recv_wr));
	if ((rc = pt_link_open(&r->test, r->ctx, cqe, &cap)))
		return fail(r, "test connection", rc);
	if ((rc = pt_handshake(&r->comm, &zero, &r->theirs)))
		return fail(r, "sync before the test connection", rc);
	struct uw_conn_param tp = test_param(r);
	rc = r->client ? pt_link_connect(&r->test, r->pd, peer, &tp, NULL, NULL, PT_RETRY_MS)
		       : pt_link_accept(&r->test, r->pd, r->listen_ch, &tp, NULL, NULL, PT_STEP_MS);
	if (rc)
		return fail(r, "test connection", rc);
	if ((rc = pt_handshake(&r->comm, &zero, &r->theirs)))
		return fail(r, "sync after the test connection", rc);
	fill_dest(r);
	int n = r->o->test->kind == PT_LAT && r->o->test->verb != PT_SEND ? 4 : 3;
	for (int k = 0; k < n && !rc; k++)
		rc = pt_handshake(&r->comm, &r->mine, &r->theirs);
	return rc ? fail(r, "exchange of QP and memory", rc) : 0;
}

/* A handshake that waits while the peer runs its test: as long as it takes. */
static int sync_after_peer_test(struct pt_run *r)
{
	r->comm.timeout_ms = -1;
	int rc = pt_handshake(&r->comm, &r->mine, &r->theirs);
	r->comm.timeout_ms = PT_STEP_MS;
	return rc;
}

static int rdma_bw(struct pt_run *r)
{
	struct pt_bw_report mine = { 0 }, theirs = { 0 };
	int rc;
	if (r->client) {
		if ((rc = pt_bw_client(r, &mine)))
			return fail(r, "test", rc);
		rc = pt_handshake(&r->comm, &r->mine, &r->theirs);
	} else {
		rc = sync_after_peer_test(r);
	}
	if (rc)
		return fail(r, "sync at the end of the test", rc);
	if ((rc = pt_xchg_report(&r->comm, &mine, &theirs)))
		return fail(r, "report exchange", rc);
	if ((rc = pt_handshake(&r->comm, &r->mine, &r->theirs)))
		return fail(r, "closing sync", rc);
	/* perftest's server prints what its client measured */
	pt_print_bw(r->o, r->client, r->client ? &mine : &theirs);
	return 0;
}

static int send_bw(struct pt_run *r)
{
	struct pt_bw_report rep = { 0 };
	uint64_t iters = r->o->iters;
	int rc = r->client ? 0 : pt_post_recvs(r, iters < r->rx_depth ? iters : r->rx_depth);
	if (rc)
		return fail(r, "post receives", rc);
	if ((rc = pt_handshake(&r->comm, &r->mine, &r->theirs)))
		return fail(r, "sync before the test", rc);
	rc = r->client ? pt_bw_client(r, &rep) : pt_send_bw_server(r, &rep);
	if (rc)
		return fail(r, "test", rc);
	if ((rc = pt_handshake(&r->comm, &r->mine, &r->theirs)))
		return fail(r, "closing sync", rc);
	pt_print_bw(r->o, r->client, &rep);
	return 0;
}

static int lat(struct pt_run *r)
{
	const struct pt_test *t = r->o->test;
	uint64_t iters = r->o->iters;
	int rc = 0;
	if (t->verb == PT_READ && !r->client) {
		if ((rc = sync_after_peer_test(r)))
			return fail(r, "closing sync", rc);
		pt_print_served(r->o);
		return 0;
	}
	if (t->verb == PT_SEND) {
		if ((rc = pt_post_recvs(r, iters < r->rx_depth ? iters : r->rx_depth)))
			return fail(r, "post receives", rc);
		if ((rc = pt_handshake(&r->comm, &r->mine, &r->theirs)))
			return fail(r, "sync before the test", rc);
	}
	double *times = calloc(iters, sizeof(double));
	if (!times)
		return fail(r, "test", -ENOMEM);
	rc = t->verb == PT_WRITE  ? pt_write_lat(r, times)
	     : t->verb == PT_READ ? pt_read_lat(r, times)
				  : pt_send_lat(r, times);
	struct pt_lat_report rep;
	if (!rc)
		rc = pt_lat_stats(r->o->size, iters, times, t->verb == PT_READ ? 1 : 2, &rep);
	free(times);
	if (rc)
		return fail(r, "test", rc);
	/* write_lat ends without a closing sync */
	if (t->verb != PT_WRITE && (rc = pt_handshake(&r->comm, &r->mine, &r->theirs)))
		return fail(r, "closing sync", rc);
	pt_print_lat(r->o, r->client, &rep);
	return 0;
}

/* Who closes first: the side whose last message has completed. siw
 * completes a WR some time after its bytes leave, and a disconnect that
 * arrives in between fails that WR (LOC_QP_OP_ERR) at the peer. perftest's
 * client closes once its own Sends have completed, its server once its
 * last answer has: so we leave the first move to a perftest peer in either
 * role. A uwarp peer completes a WR when its bytes are in the socket; our
 * server still waits for a uwarp client, which closes at once. */
static int teardown(struct pt_run *r)
{
	int grace = r->client && r->test.peer_uwarp ? 0 : PT_GRACE_MS;
	int rc = pt_link_close(&r->test, grace);
	if (rc)
		fail(r, "closing the test connection", rc);
	int rc2 = pt_comm_close(&r->comm, grace);
	if (rc2)
		fail(r, "closing the communication connection", rc2);
	if (r->mr)
		uw_dereg_mr(r->mr);
	if (r->credit_mr)
		uw_dereg_mr(r->credit_mr);
	free(r->buf);
	free(r->credit);
	if (r->listener)
		uw_cm_destroy_id(r->listener);
	if (r->listen_ch)
		uw_cm_destroy_channel(r->listen_ch);
	if (r->pd)
		uw_dealloc_pd(r->pd);
	if (r->ctx)
		uw_close(r->ctx);
	return rc ? rc : rc2;
}

int pt_run(const struct pt_opts *o)
{
	struct pt_run r = { .o = o, .client = o->host != NULL };
	struct uw_context_attr ca = { .progress = UW_PROGRESS_MANUAL };
	srand48((long)getpid() ^ (long)(util_now_s() * 1e6));
	r.ctx = uw_open(&ca);
	r.pd = r.ctx ? uw_alloc_pd(r.ctx) : NULL;
	int rc = r.pd ? 0 : fail(&r, "context", -errno);
	if (!rc)
		rc = r.client ? resolve_peer(&r) : start_listener(&r);
	if (!rc)
		rc = connect_all(&r);
	if (!rc && o->test->kind == PT_LAT)
		rc = lat(&r);
	else if (!rc)
		rc = o->test->verb == PT_SEND ? send_bw(&r) : rdma_bw(&r);
	int down = teardown(&r);
	return rc ? rc : down;
}
