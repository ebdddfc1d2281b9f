/*
 * rping_conn.c: what both roles of uwarp-rping share: buffers and their
 * registration, the 16-byte info Sends and their receives, completions.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rping.h"
#include "tools/lib/tool_conn.h"

static struct uw_mr *reg(struct rping_conn *c, void *p, size_t len, int access)
{
	struct uw_mr *mr = uw_reg_mr(c->pd, p, len, access);
	if (!mr)
		fprintf(stderr, "uwarp-rping: uw_reg_mr: %s\n", strerror(errno));
	return mr;
}

int rping_conn_buffers(struct rping_conn *c, uint32_t rdma_len, uint32_t start_len)
{
	/* rping's peers Read from the start buffer and Write into the
	 * rdma buffer; the server's Read lands in its rdma buffer */
	const int remote = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_READ | UW_ACCESS_REMOTE_WRITE;
	c->recv_mr = reg(c, &c->recv_buf, sizeof(c->recv_buf), UW_ACCESS_LOCAL_WRITE);
	c->send_mr = reg(c, &c->send_buf, sizeof(c->send_buf), 0);
	c->rdma_len = rdma_len;
	c->rdma_buf = calloc(1, rdma_len ? rdma_len : 1);
	c->rdma_mr = c->rdma_buf ? reg(c, c->rdma_buf, rdma_len ? rdma_len : 1, remote) : NULL;
	if (start_len) {
		c->start_len = start_len;
		c->start_buf = calloc(1, start_len);
		c->start_mr = c->start_buf ? reg(c, c->start_buf, start_len, remote) : NULL;
		if (!c->start_mr)
			return ENOMEM;
	}
	return c->recv_mr && c->send_mr && c->rdma_mr ? 0 : ENOMEM;
}

void rping_conn_free_buffers(struct rping_conn *c)
{
	struct uw_mr **mrs[] = { &c->recv_mr, &c->send_mr, &c->rdma_mr, &c->start_mr };
	for (size_t i = 0; i < sizeof(mrs) / sizeof(mrs[0]); i++)
		if (*mrs[i]) {
			uw_dereg_mr(*mrs[i]);
			*mrs[i] = NULL;
		}
	free(c->rdma_buf);
	free(c->start_buf);
	c->rdma_buf = c->start_buf = NULL;
}

int rping_post_recv(struct rping_conn *c)
{
	struct uw_sge s = { (uintptr_t)&c->recv_buf, sizeof(c->recv_buf), c->recv_mr->lkey };
	struct uw_recv_wr wr = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
	return uw_post_recv(c->qp, &wr, NULL);
}

int rping_send_info(struct rping_conn *c, const void *buf, uint32_t rkey, uint32_t size)
{
	if (buf) {
		c->send_buf.buf = htobe64((uintptr_t)buf);
		c->send_buf.rkey = htobe32(rkey);
		c->send_buf.size = htobe32(size);
	} else {
		memset(&c->send_buf, 0, sizeof(c->send_buf)); /* the server's "go" */
	}
	struct uw_sge s = { (uintptr_t)&c->send_buf, sizeof(c->send_buf), c->send_mr->lkey };
	struct uw_send_wr wr = { .wr_id = 2,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
	return uw_post_send(c->qp, &wr, NULL);
}

int rping_next_wc(struct rping_conn *c, struct uw_wc *wc)
{
	int n = uw_poll_cq(c->cq, 1, wc);
	if (n == 0) {
		n = uw_cq_wait(c->cq, 1, 30000);
		if (n < 0) {
			fprintf(stderr, "uwarp-rping: no completion in 30 s\n");
			return ETIMEDOUT;
		}
		n = uw_poll_cq(c->cq, 1, wc);
	}
	if (n != 1)
		return EIO;
	if (wc->status == UW_WC_WR_FLUSH_ERR)
		return ECONNRESET; /* the connection is gone */
	if (wc->status != UW_WC_SUCCESS) {
		fprintf(stderr, "uwarp-rping: completion error: %s", uw_wc_status_str(wc->status));
		if (wc->term_layer || wc->term_etype || wc->term_ecode)
			fprintf(stderr, " (Terminate %u/%u/0x%02x)", wc->term_layer, wc->term_etype,
				wc->term_ecode);
		fprintf(stderr, "\n");
		return EIO;
	}
	return 0;
}

struct uw_conn_param rping_param(const struct rping_opts *o)
{
	/* rping's client asks IRD = ORD = 1; the server takes the peer's */
	struct uw_conn_param p = {
		.ird = 1, .ord = 1, .crc = o->crc, .markers = o->markers, .mpa_rev = o->mpa_rev
	};
	return p;
}

int rping_report_end(struct rping_conn *c)
{
	struct uw_cm_event *e;
	int terminated = 0;
	while (!uw_cm_get_event_timeout(c->ch, &e, 2000)) {
		bool end = e->id == c->id && e->event == UW_CM_EVENT_DISCONNECTED;
		if (end && tool_report_terminate(stdout, "uwarp-rping", e))
			terminated = 1;
		uw_cm_ack_event(e);
		if (end)
			break;
	}
	fflush(stdout);
	return terminated;
}

void rping_report_params(const struct rping_opts *o, const struct uw_cm_event *e)
{
	if (!o->debug)
		return;
	printf("uwarp-rping: connected: MPA rev %d, CRC %s, markers %s/%s (ours/theirs), "
	       "IRD %u ORD %u\n",
	       e->mpa_rev, e->crc ? "on" : "off", e->markers_tx ? "on" : "off",
	       e->markers_rx ? "on" : "off", e->ird, e->ord);
	fflush(stdout);
}
