/*
 * rdmap_tx.c: outgoing messages cut into segments, the Responses we owe,
 * and the Terminate.
 */
#include <errno.h>
#include <string.h>

#include "mpa/be.h"
#include "rdmap_conn.h"

static struct rdmap_orq_entry *orq_push(struct rdmap_conn *c)
{
	struct rdmap_ring *r = &c->orq;
	struct rdmap_orq_entry *e =
		(void *)((uint8_t *)r->e + (size_t)((r->head + r->count) % r->cap) * r->size);
	r->count++;
	memset(e, 0, sizeof(*e));
	return e;
}

int rdmap_tx_start(struct rdmap_conn *c, const struct rdmap_msg *m, struct rdmap_tx_msg *t)
{
	const struct rdmap_op *op = rdmap_op(m->opcode);
	struct ddp_hdr base;
	uint64_t len = 0;
	uint32_t qn;

	if (c->state != RDMAP_OPEN)
		return -EPIPE;
	if (!op || m->opcode == RDMAP_TERMINATE || (op->rfc7306 && !c->cfg.rfc7306))
		return -EINVAL;
	if (c->cfg.mulpdu <= op->hdr_len)
		return -EINVAL;
	bool request = m->opcode == RDMAP_RDMA_READ_REQ || m->opcode == RDMAP_ATOMIC_REQ;
	if (request && c->orq.count >= c->cfg.ord)
		return -EAGAIN;
	if (request && rdmap_ring_ready(&c->orq))
		return -ENOMEM;

	memset(&base, 0, sizeof(base));
	base.tagged = op->qn == RDMAP_QN_TAGGED;
	base.dv = DDP_VERSION;
	base.ulp_ctrl = (uint8_t)op->ctrl; /* the prebuilt RDMAP byte */
	memset(t, 0, sizeof(*t));
	t->m = *m;
	t->op = op;
	qn = op->qn;

	switch (m->opcode) {
	case RDMAP_RDMA_WRITE:
	case RDMAP_RDMA_READ_RESP:
		base.stag = m->stag;
		base.to = m->to;
		len = iov_total(m->sge, m->nsge);
		break;
	case RDMAP_SEND_INVAL:
	case RDMAP_SEND_SE_INVAL:
		base.ulp_word = m->inval_stag;
		/* fall through */
	case RDMAP_SEND:
	case RDMAP_SEND_SE:
		len = iov_total(m->sge, m->nsge);
		break;
	case RDMAP_IMMEDIATE:
	case RDMAP_IMMEDIATE_SE:
		/* The 8 bytes are payload on the wire, but they go out with the
		 * header bytes, which the caller keeps until the FPDU is
		 * written: *t itself is cleared by the next message's start,
		 * often before that. */
		be64_put(t->extra, m->value);
		t->m.nsge = 0;
		break;
	case RDMAP_RDMA_READ_REQ: {
		uint8_t *x = t->extra;
		be32_put(x + RDMAP_RR_OFF_SINK_STAG, m->sink_stag);
		be64_put(x + RDMAP_RR_OFF_SINK_TO, m->sink_to);
		be32_put(x + RDMAP_RR_OFF_SIZE, m->len);
		be32_put(x + RDMAP_RR_OFF_SRC_STAG, m->stag);
		be64_put(x + RDMAP_RR_OFF_SRC_TO, m->to);
		struct rdmap_orq_entry *o = orq_push(c);
		o->kind = RDMAP_ORQ_READ;
		o->cookie = m->cookie;
		o->sink_stag = m->sink_stag;
		o->sink_to = m->sink_to;
		o->len = m->len;
		break;
	}
	case RDMAP_ATOMIC_REQ: {
		uint8_t *x = t->extra;
		uint32_t id = c->next_atomic_id++;
		be32_put(x + RDMAP_AREQ_OFF_OPCODE, m->atomic_op & 0xf);
		be32_put(x + RDMAP_AREQ_OFF_ID, id);
		be32_put(x + RDMAP_AREQ_OFF_STAG, m->stag);
		be64_put(x + RDMAP_AREQ_OFF_TO, m->to);
		be64_put(x + RDMAP_AREQ_OFF_DATA, m->data);
		be64_put(x + RDMAP_AREQ_OFF_DATA_MASK, m->data_mask);
		be64_put(x + RDMAP_AREQ_OFF_CMP, m->cmp);
		be64_put(x + RDMAP_AREQ_OFF_CMP_MASK, m->cmp_mask);
		struct rdmap_orq_entry *o = orq_push(c);
		o->kind = RDMAP_ORQ_ATOMIC;
		o->cookie = m->cookie;
		o->req_id = id;
		o->result = m->result;
		break;
	}
	case RDMAP_ATOMIC_RESP:
		be32_put(t->extra + RDMAP_ARESP_OFF_ID, m->req_id);
		be64_put(t->extra + RDMAP_ARESP_OFF_VALUE, m->value);
		break;
	default:
		return -EINVAL;
	}
	if (!base.tagged) {
		base.qn = qn;
		base.msn = c->tx_msn[qn]++;
	}
	/* What follows the DDP header: the table knows how long it is. */
	t->extra_len = (uint8_t)(op->hdr_len - ddp_hdr_len(base.tagged));
	if (m->opcode == RDMAP_IMMEDIATE || m->opcode == RDMAP_IMMEDIATE_SE)
		t->extra_len += RDMAP_IMMEDIATE_LEN;
	ddp_segmenter_init(&t->seg, &base, len, c->cfg.mulpdu - op->hdr_len);
	iov_cursor_init(&t->cur, t->m.sge, t->m.nsge);
	return 0;
}

int rdmap_tx_next(struct rdmap_tx_msg *t, uint8_t *hdr, size_t *hdr_len, struct iovec *iov, int max,
		  int *niov)
{
	struct ddp_hdr h;
	uint64_t off;
	uint32_t n;
	size_t took;

	if (!ddp_segmenter_next(&t->seg, &h, &off, &n))
		return 0;
	uint8_t *p = hdr + MPA_ULPDU_LEN_SIZE;
	size_t k = ddp_hdr_encode(&h, p);
	if (t->extra_len)
		memcpy(p + k, t->extra, t->extra_len);
	*hdr_len = k + t->extra_len;
	*niov = iov_cursor_take(&t->cur, n, iov, max, &took);
	return took == n ? 1 : -E2BIG;
}

int rdmap_tx_response(struct rdmap_conn *c, struct rdmap_tx_msg *t)
{
	const struct rdmap_irq_entry *q = rdmap_irq_head(c);
	struct rdmap_msg m;

	if (!q)
		return -ENOENT;
	memset(&m, 0, sizeof(m));
	if (q->kind == RDMAP_ORQ_READ) {
		m.opcode = RDMAP_RDMA_READ_RESP;
		m.stag = q->sink_stag;
		m.to = q->sink_to;
		int rc = rdmap_tx_start(c, &m, t);
		if (rc)
			return rc;
		/* The source stays valid: the region was checked when the
		 * Request arrived and the IRQ entry pins it until popped. */
		t->own_iov = (struct iovec){ (void *)(uintptr_t)q->src, q->len };
		t->m.sge = &t->own_iov;
		t->m.nsge = 1;
		ddp_segmenter_init(&t->seg, &t->seg.base, q->len, c->cfg.mulpdu - t->op->hdr_len);
		iov_cursor_init(&t->cur, t->m.sge, 1);
		return 0;
	}
	m.opcode = RDMAP_ATOMIC_RESP;
	m.req_id = q->req_id;
	m.value = q->value;
	return rdmap_tx_start(c, &m, t);
}

size_t rdmap_tx_terminate(const struct rdmap_conn *c, uint8_t *out)
{
	const struct rdmap_op *op = rdmap_op(RDMAP_TERMINATE);
	struct ddp_hdr h;
	uint8_t *p = out + MPA_ULPDU_LEN_SIZE;
	const uint8_t *ddp_hdr = NULL, *rdmap_hdr = NULL;
	size_t ddp_len = 0;

	memset(&h, 0, sizeof(h));
	h.last = true;
	h.dv = DDP_VERSION;
	h.ulp_ctrl = (uint8_t)op->ctrl;
	h.qn = DDP_QN_TERMINATE;
	h.msn = 1; /* RFC 5040 4.8: a stream sends one Terminate, MSN 1 */
	size_t n = ddp_hdr_encode(&h, p);
	if (c->err_has_hdr && c->seg.hdr_len) {
		ddp_hdr = c->seg.hdr;
		ddp_len = ddp_hdr_len(c->seg.hdr[0] & (DDP_CTRL_T >> 8));
		if (ddp_len > c->seg.hdr_len)
			ddp_len = c->seg.hdr_len;
		if (c->err_has_rdmap_hdr &&
		    c->seg.hdr_len >= DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_RDMAP_HDR_LEN)
			rdmap_hdr = c->seg.hdr + DDP_UNTAGGED_HDR_LEN;
	}
	uint32_t seglen = (uint32_t)c->seg.hdr_len + c->seg.payload_len;
	n += rdmap_term_encode(&c->err, (uint16_t)seglen, ddp_hdr, ddp_len, rdmap_hdr, p + n);
	return n;
}
