/*
 * rping_client.c: uwarp-rping -c: rping's client loop over uwarp.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rping.h"
#include "tools/lib/tool_conn.h"

/* rping's ping text: "rdma-ping-N: " then letters from 'A' + N on, NUL-ended. */
static void fill_ping(uint8_t *buf, uint32_t size, long ping)
{
	int cc = snprintf((char *)buf, size, RPING_MSG_FMT, (int)ping);
	unsigned char c = (unsigned char)(65 + ping % 58);
	for (uint32_t i = cc < 0 ? 0 : (uint32_t)cc; i < size; i++) {
		buf[i] = c;
		if (++c > 122)
			c = 65;
	}
	buf[size - 1] = 0;
}

/* Wait for the server's 16-byte "go"; completions of our own Sends are
 * taken on the way. */
static int wait_go(struct rping_conn *c)
{
	for (;;) {
		struct uw_wc wc;
		int rc = rping_next_wc(c, &wc);
		if (rc == ECONNRESET)
			fprintf(stderr, "uwarp-rping: the server closed the connection\n");
		if (rc)
			return rc;
		if (wc.opcode != UW_WC_RECV)
			continue;
		if (wc.byte_len != sizeof(struct rping_info)) {
			fprintf(stderr, "uwarp-rping: received bogus data, size %u\n", wc.byte_len);
			return EPROTO;
		}
		return rping_post_recv(c);
	}
}

static int connect_to(struct rping_conn *c, const struct rping_opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->addr, port, &hints, &ai)) {
		fprintf(stderr, "uwarp-rping: cannot resolve %s\n", o->addr);
		return ENOENT;
	}
	struct uw_conn_param p = rping_param(o);
	int rc = uw_cm_connect(c->id, ai->ai_addr, &p);
	freeaddrinfo(ai);
	if (rc)
		return rc;
	struct uw_cm_event *e;
	if ((rc = uw_cm_get_event_timeout(c->ch, &e, 30000)))
		return rc;
	enum uw_cm_event_type t = e->event;
	int status = e->status;
	if (t == UW_CM_EVENT_ESTABLISHED)
		rping_report_params(o, e);
	if (t == UW_CM_EVENT_REJECTED)
		/* what the Reject frame says is all there is to tell why */
		fprintf(stderr,
			"uwarp-rping: REJECTED by the server (its Reject: rev %d, CRC %s, M %d; "
			"we asked for markers: %s)\n",
			e->mpa_rev, e->crc ? "on" : "off", e->markers_tx,
			e->markers_rx ? "yes" : "no");
	else if (t == UW_CM_EVENT_CONNECT_ERROR) {
		char peer[300];
		snprintf(peer, sizeof(peer), "%s port %d", o->addr, o->port);
		tool_connect_failed("uwarp-rping", peer, status);
	} else if (t != UW_CM_EVENT_ESTABLISHED)
		fprintf(stderr, "uwarp-rping: %s (%s)\n", uw_cm_event_str(t), strerror(status));
	uw_cm_ack_event(e);
	if (t != UW_CM_EVENT_ESTABLISHED)
		return t == UW_CM_EVENT_REJECTED ? ECONNREFUSED : status ? status : EPROTO;
	return 0;
}

static int run(struct rping_conn *c, const struct rping_opts *o)
{
	uint32_t size = o->size;
	for (long ping = 0; !o->count || ping < o->count; ping++) {
		fill_ping(c->start_buf, size, ping);
		memset(c->rdma_buf, 0, size);
		/* the server Reads our start buffer, then says go */
		uint32_t rkey = c->start_mr->rkey ^ (o->fault_bad_rkey ? 0xff : 0);
		int rc = rping_send_info(c, c->start_buf, rkey, size);
		if (rc || (rc = wait_go(c)))
			return rc ? rc : EIO;
		/* it Writes the echo into our rdma buffer, then says go */
		if ((rc = rping_send_info(c, c->rdma_buf, c->rdma_mr->rkey, size)) ||
		    (rc = wait_go(c)))
			return rc;
		if (o->validate && memcmp(c->start_buf, c->rdma_buf, size)) {
			fprintf(stderr, "uwarp-rping: data mismatch in ping %ld\n", ping);
			return EILSEQ;
		}
		if (o->verbose)
			printf("ping data: %s\n", c->rdma_buf);
	}
	return 0;
}

int rping_client(const struct rping_opts *o)
{
	struct rping_conn c = { .o = o };
	struct uw_context_attr ca = { .progress = UW_PROGRESS_MANUAL };
	int rc = ENOMEM;
	c.ctx = uw_open(&ca);
	c.pd = c.ctx ? uw_alloc_pd(c.ctx) : NULL;
	c.cq = c.pd ? uw_create_cq(c.ctx, 16, NULL, NULL) : NULL;
	c.ch = c.cq ? uw_cm_create_channel(c.ctx) : NULL;
	c.id = c.ch ? uw_cm_create_id(c.ch, NULL) : NULL;
	struct uw_qp_init_attr qa = { .send_cq = c.cq, .recv_cq = c.cq, .cap = { 8, 8, 1, 1, 64 } };
	if (c.id && (c.qp = uw_cm_create_qp(c.id, c.pd, &qa)) &&
	    !(rc = rping_conn_buffers(&c, o->size, o->size)) && !(rc = rping_post_recv(&c)) &&
	    !(rc = connect_to(&c, o)) && (rc = run(&c, o)))
		rping_report_end(&c);
	if (c.id && !uw_cm_disconnect(c.id)) {
		struct uw_cm_event *e;
		while (!uw_cm_get_event_timeout(c.ch, &e, 1000)) {
			bool done = e->event == UW_CM_EVENT_DISCONNECTED;
			uw_cm_ack_event(e);
			if (done)
				break;
		}
	}
	if (!o->quiet && !rc)
		printf("client DISCONNECT EVENT...\n");
	if (c.qp)
		uw_destroy_qp(c.qp);
	if (c.id)
		uw_cm_destroy_id(c.id);
	rping_conn_free_buffers(&c);
	if (c.cq) {
		struct uw_wc wc;
		while (uw_poll_cq(c.cq, 1, &wc) > 0)
			;
		uw_destroy_cq(c.cq);
	}
	if (c.ch)
		uw_cm_destroy_channel(c.ch);
	if (c.pd)
		uw_dealloc_pd(c.pd);
	if (c.ctx)
		uw_close(c.ctx);
	return rc;
}
