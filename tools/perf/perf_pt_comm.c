/*
 * perf_pt_comm.c: perftest's communication connection. Each side keeps one
 * receive of PT_MSG_MAX bytes posted; an exchange is a Send each way, the
 * client's first, and the receiver posts its receive again before it
 * answers, so a message never finds the peer without one.
 */
#include <errno.h>
#include <string.h>

#include "perf_pt.h"

#define COMM_RECV_ID 1
#define COMM_SEND_ID 2

int pt_comm_open(struct pt_comm *c, struct uw_context *ctx, struct uw_pd *pd, bool client)
{
	struct uw_qp_cap cap = { .max_send_wr = 2,
				 .max_recv_wr = 2,
				 .max_send_sge = 1,
				 .max_recv_sge = 1,
				 .max_inline_data = 0 };
	memset(c, 0, sizeof(*c));
	c->client = client;
	c->timeout_ms = PT_STEP_MS;
	int rc = pt_link_open(&c->link, ctx, 8, &cap);
	if (rc)
		return rc;
	c->mr = uw_reg_mr(pd, c->msg, sizeof(c->msg), UW_ACCESS_LOCAL_WRITE);
	return c->mr ? 0 : -errno;
}

int pt_comm_post_recv(void *comm)
{
	struct pt_comm *c = comm;
	struct uw_sge s = { (uintptr_t)c->msg, PT_MSG_MAX, c->mr->lkey };
	struct uw_recv_wr wr = { .wr_id = COMM_RECV_ID, .sg_list = &s, .num_sge = 1 };
	return -uw_post_recv(c->link.qp, &wr, NULL);
}

/* Take one completion: the peer's message or our Send's end. */
static int take(struct pt_comm *c)
{
	struct uw_wc wc;
	int rc = pt_link_wc(&c->link, &wc, c->timeout_ms);
	if (rc == -EIO)
		return wc.status == UW_WC_WR_FLUSH_ERR ? -ECONNRESET : -EIO;
	if (rc)
		return rc;
	if (wc.wr_id == COMM_RECV_ID) {
		c->rx_ready = true;
		c->rx_len = wc.byte_len;
	} else {
		c->tx_done = true;
	}
	return 0;
}

static int comm_send(struct pt_comm *c, const void *data, size_t len)
{
	uint8_t *tx = c->msg + PT_MSG_MAX;
	memcpy(tx, data, len);
	struct uw_sge s = { (uintptr_t)tx, (uint32_t)len, c->mr->lkey };
	struct uw_send_wr wr = { .wr_id = COMM_SEND_ID,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED };
	c->tx_done = false;
	int rc = -uw_post_send(c->link.qp, &wr, NULL);
	while (!rc && !c->tx_done)
		rc = take(c);
	return rc;
}

static int comm_recv(struct pt_comm *c, void *data, size_t len)
{
	int rc = 0;
	while (!rc && !c->rx_ready)
		rc = take(c);
	if (rc)
		return rc;
	c->rx_ready = false;
	/* a size we did not expect means the two sides run different tests */
	if (c->rx_len != len)
		return -EPROTO;
	memcpy(data, c->msg, len);
	return pt_comm_post_recv(c);
}

int pt_xchg(struct pt_comm *c, const void *mine, void *theirs, size_t len)
{
	if (len > PT_MSG_MAX)
		return -EINVAL;
	if (c->client) {
		int rc = comm_send(c, mine, len);
		return rc ? rc : comm_recv(c, theirs, len);
	}
	int rc = comm_recv(c, theirs, len);
	return rc ? rc : comm_send(c, mine, len);
}

int pt_comm_close(struct pt_comm *c, int grace_ms)
{
	int rc = pt_link_close(&c->link, grace_ms);
	if (c->mr)
		uw_dereg_mr(c->mr);
	c->mr = NULL;
	return rc;
}
