/*
 * rping_server.c: uwarp-rping -s: rping's server over uwarp. One
 * connection, or with -P one after another until killed.
 */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rping.h"

/* The next completion of this kind; our own Send completions pass by. */
static int expect(struct rping_conn *c, enum uw_wc_opcode op, struct uw_wc *wc)
{
	for (;;) {
		int rc = rping_next_wc(c, wc);
		if (rc)
			return rc;
		if (wc->opcode == op)
			return 0;
		if (wc->opcode != UW_WC_SEND) {
			fprintf(stderr, "uwarp-rping: unexpected completion %d\n", wc->opcode);
			return EPROTO;
		}
	}
}

/* The client's 16 bytes: where to read or write. */
static int take_info(struct rping_conn *c, uint64_t *addr, uint32_t *rkey, uint32_t *len)
{
	struct uw_wc wc;
	int rc = expect(c, UW_WC_RECV, &wc);
	if (rc)
		return rc;
	if (wc.byte_len != sizeof(struct rping_info)) {
		fprintf(stderr, "uwarp-rping: received bogus data, size %u\n", wc.byte_len);
		return EPROTO;
	}
	*addr = be64toh(c->recv_buf.buf);
	*rkey = be32toh(c->recv_buf.rkey);
	*len = be32toh(c->recv_buf.size);
	return rping_post_recv(c);
}

/* rping's server buffer is its -S; a client that offers more gets a
 * larger one (stock rping would fail the Read instead). */
static int fit(struct rping_conn *c, uint32_t len)
{
	if (len <= c->rdma_len)
		return 0;
	if (len > RPING_MAX_SIZE)
		return EMSGSIZE;
	uw_dereg_mr(c->rdma_mr);
	free(c->rdma_buf);
	c->rdma_len = len;
	c->rdma_buf = calloc(1, len);
	c->rdma_mr = c->rdma_buf ? uw_reg_mr(c->pd, c->rdma_buf, len, UW_ACCESS_LOCAL_WRITE) : NULL;
	return c->rdma_mr ? 0 : ENOMEM;
}

static int rdma(struct rping_conn *c, enum uw_wr_opcode op, uint32_t len, uint64_t addr,
		uint32_t rkey)
{
	struct uw_sge s = { (uintptr_t)c->rdma_buf, len, c->rdma_mr->lkey };
	struct uw_send_wr wr = { .wr_id = 3,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = op,
				 .send_flags = UW_SEND_SIGNALED,
				 .rdma = { addr, rkey } };
	int rc = uw_post_send(c->qp, &wr, NULL);
	struct uw_wc wc;
	return rc ? rc : expect(c, op == UW_WR_RDMA_READ ? UW_WC_RDMA_READ : UW_WC_RDMA_WRITE, &wc);
}

/* Serve one client until it disconnects. */
static int serve(struct rping_conn *c, const struct rping_opts *o)
{
	for (;;) {
		uint64_t addr;
		uint32_t rkey, len;
		int rc = take_info(c, &addr, &rkey, &len);
		if (rc)
			return rc == ECONNRESET ? 0 : rc;
		if ((rc = fit(c, len)) || (rc = rdma(c, UW_WR_RDMA_READ, len, addr, rkey)))
			return rc;
		if (o->verbose)
			printf("server ping data: %.*s\n", (int)len, (char *)c->rdma_buf);
		if ((rc = rping_send_info(c, NULL, 0, 0)) ||
		    (rc = take_info(c, &addr, &rkey, &len)))
			return rc;
		/* the echo is the string read, with its NUL, as rping writes it */
		uint32_t n = (uint32_t)strnlen((char *)c->rdma_buf, c->rdma_len) + 1;
		if (n > c->rdma_len)
			n = c->rdma_len;
		if (n > len)
			n = len;
		if (o->fault_bad_rkey)
			rkey ^= 0xff;
		if ((rc = rdma(c, UW_WR_RDMA_WRITE, n, addr, rkey)) ||
		    (rc = rping_send_info(c, NULL, 0, 0)))
			return rc;
	}
}

/* Each connection has a protection domain of its own: its buffers are open
 * to its client alone (docs/wire-notes.md, "STags and isolation"). */
static int one_connection(struct uw_context *ctx, struct uw_cm_channel *ch, struct uw_cm_id *id,
			  const struct rping_opts *o)
{
	struct rping_conn c = { .o = o, .ctx = ctx, .ch = ch, .id = id };
	struct uw_qp_init_attr qa = { .send_cq = NULL, .cap = { 8, 8, 1, 1, 64 } };
	int rc = ENOMEM;
	c.pd = uw_alloc_pd(ctx);
	c.cq = c.pd ? uw_create_cq(ctx, 32, NULL, NULL) : NULL;
	qa.send_cq = qa.recv_cq = c.cq;
	if (c.cq && (c.qp = uw_cm_create_qp(id, c.pd, &qa)) &&
	    !(rc = rping_conn_buffers(&c, o->size, 0)) && !(rc = rping_post_recv(&c))) {
		/* our IRD/ORD default: relaxed negotiation meets the client's */
		struct uw_conn_param p = rping_param(o);
		p.ird = p.ord = 0;
		if (!(rc = uw_cm_accept(id, &p))) {
			struct uw_cm_event *e;
			if (o->debug && !uw_cm_get_event_timeout(ch, &e, 5000)) {
				if (e->event == UW_CM_EVENT_ESTABLISHED)
					rping_report_params(o, e);
				uw_cm_ack_event(e);
			}
			rc = serve(&c, o);
			/* a client that hangs up is a normal end; a Terminate is not */
			if (rping_report_end(&c) && (!rc || rc == ECONNRESET))
				rc = EPROTO;
		}
	}
	if (rc && rc != ECONNRESET)
		fprintf(stderr, "uwarp-rping: connection ended: %s\n", strerror(rc));
	else if (!o->quiet)
		printf("server DISCONNECT EVENT...\n");
	uw_cm_destroy_id(id);
	if (c.qp)
		uw_destroy_qp(c.qp);
	rping_conn_free_buffers(&c);
	if (c.cq) {
		struct uw_wc wc;
		while (uw_poll_cq(c.cq, 1, &wc) > 0)
			;
		uw_destroy_cq(c.cq);
	}
	if (c.pd)
		uw_dealloc_pd(c.pd);
	return rc == ECONNRESET ? 0 : rc;
}

/* -P: each client on a thread and a CM channel of its own, as rping's
 * persistent server does, so a client that stalls holds up only itself */
struct job {
	struct uw_context *ctx;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	const struct rping_opts *o;
};

static void *job_main(void *arg)
{
	struct job *j = arg;
	one_connection(j->ctx, j->ch, j->id, j->o);
	uw_cm_destroy_channel(j->ch);
	fflush(stdout);
	free(j);
	return NULL;
}

/* 0: the client is served on its own thread; else serve it here */
static int spawn(struct uw_context *ctx, struct uw_cm_channel *home, struct uw_cm_id *id,
		 const struct rping_opts *o)
{
	struct job *j = malloc(sizeof(*j));
	if (!j)
		return ENOMEM;
	*j = (struct job){ ctx, uw_cm_create_channel(ctx), id, o };
	pthread_t t;
	bool moved = j->ch && !uw_cm_migrate_id(id, j->ch);
	int rc = !moved ? ENOMEM : pthread_create(&t, NULL, job_main, j);
	if (rc) {
		if (moved)
			uw_cm_migrate_id(id, home);
		if (j->ch)
			uw_cm_destroy_channel(j->ch);
		free(j);
		return rc;
	}
	pthread_detach(t);
	return 0;
}

int rping_server(const struct rping_opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE },
			*ai;
	char port[16];
	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->addr, port, &hints, &ai)) {
		fprintf(stderr, "uwarp-rping: cannot resolve %s\n", o->addr ? o->addr : "*");
		return ENOENT;
	}
	struct addrinfo *pick = ai; /* no address: the IPv6 wildcard takes IPv4 too */
	for (struct addrinfo *a = ai; a && !o->addr; a = a->ai_next)
		if (a->ai_family == AF_INET6)
			pick = a;
	/* -P serves clients on threads of their own: the engine's thread moves
	 * every connection's data, each waits only for its own */
	struct uw_context_attr ca = { .progress = o->persistent ? UW_PROGRESS_AUTO
								: UW_PROGRESS_MANUAL };
	struct uw_context *ctx = uw_open(&ca);
	struct uw_cm_channel *ch = ctx ? uw_cm_create_channel(ctx) : NULL;
	struct uw_cm_id *lid = ch ? uw_cm_create_id(ch, NULL) : NULL;
	int rc = lid ? uw_cm_listen(lid, pick->ai_addr, 16) : ENOMEM;
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "uwarp-rping: listen on port %d: %s\n", o->port, strerror(rc));
		return rc;
	}
	if (!o->quiet) {
		printf("uwarp-rping: listening on port %d\n",
		       ntohs(((struct sockaddr_in *)&lid->local_addr)->sin_port));
		fflush(stdout);
	}
	int served = 0;
	while (o->persistent || served == 0) {
		struct uw_cm_event *e;
		if ((rc = uw_cm_get_event(ch, &e)))
			break;
		if (e->event != UW_CM_EVENT_CONNECT_REQUEST) {
			uw_cm_ack_event(e);
			continue;
		}
		struct uw_cm_id *id = e->id;
		uw_cm_ack_event(e);
		if (o->persistent && !spawn(ctx, ch, id, o)) {
			served++;
			continue;
		}
		rc = one_connection(ctx, ch, id, o);
		served++;
		fflush(stdout);
	}
	uw_cm_destroy_id(lid);
	uw_cm_destroy_channel(ch);
	uw_close(ctx);
	return rc;
}
