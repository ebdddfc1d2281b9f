/*
 * rdmap_rx.c: the receive side of an RDMAP stream. Every segment is judged
 * on its header before a byte of its payload is placed; state advances only
 * once the whole FPDU has arrived with a good CRC.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "mpa/be.h"
#include "rdmap_atomic.h"
#include "rdmap_rx_ops.h"

/* The stream is finished: remember why and what the Terminate carries. */
static int terminate(struct rdmap_conn *c, uint8_t layer, uint8_t etype, uint8_t ecode,
		     const char *what, bool hdr, bool rdmap_hdr)
{
	rddp_error_set(&c->err, layer, etype, ecode, what);
	c->err_has_hdr = hdr;
	c->err_has_rdmap_hdr = rdmap_hdr;
	c->state = RDMAP_TERMINATING;
	return -EBADMSG;
}

/* A DDP-layer error found by ddp_rx: it carries the offending header. */
static int terminate_ddp(struct rdmap_conn *c, const struct rddp_error *e)
{
	return terminate(c, e->layer, e->etype, e->ecode, e->what, true, false);
}

static int rdmap_err(struct rdmap_conn *c, uint8_t etype, uint8_t ecode, const char *what)
{
	return terminate(c, UW_TERM_LAYER_RDMAP, etype, ecode, what, true, false);
}

/* A protection failure on memory an RDMAP request names (RFC 5040 7.2). */
static int protection(struct rdmap_conn *c, enum ddp_tag_check chk, bool rdmap_hdr)
{
	static const struct {
		uint8_t ecode;
		const char *what;
	} map[] = {
		[DDP_TAG_INVALID_STAG] = { UW_RDMAP_INVALID_STAG, "invalid STag" },
		[DDP_TAG_BOUNDS] = { UW_RDMAP_BASE_BOUNDS, "base or bounds violation" },
		[DDP_TAG_TO_WRAP] = { UW_RDMAP_TO_WRAP, "TO wrap" },
		[DDP_TAG_ACCESS] = { UW_RDMAP_ACCESS_RIGHTS, "access rights violation" },
	};
	return terminate(c, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION, map[chk].ecode,
			 map[chk].what, true, rdmap_hdr);
}

static void *ring_at(const struct rdmap_ring *r, uint32_t n)
{
	return (uint8_t *)r->e + (size_t)((r->head + n) % r->cap) * r->size;
}

static void ring_pop(struct rdmap_ring *r)
{
	r->head = (r->head + 1) % r->cap;
	r->count--;
}

static void *ring_push(struct rdmap_ring *r)
{
	void *e = ring_at(r, r->count);
	r->count++;
	return e;
}

static struct rdmap_orq_entry *orq_head(struct rdmap_conn *c)
{
	return c->orq.count ? ring_at(&c->orq, 0) : NULL;
}

/* Place len payload bytes at offset mo of a receive's scatter list. */
static int place_sge(struct rdmap_conn *c, struct rdmap_place *pl, const struct rdmap_recv *r,
		     uint32_t mo, uint32_t len)
{
	struct iov_cursor cur;
	struct iovec skip[RDMAP_PLACE_MAX_IOV];
	size_t took;

	iov_cursor_init(&cur, r->sge, r->nsge);
	while (mo) {
		iov_cursor_take(&cur, mo, skip, RDMAP_PLACE_MAX_IOV, &took);
		mo -= (uint32_t)took;
		if (!took)
			break;
	}
	pl->niov = iov_cursor_take(&cur, len, pl->iov, RDMAP_PLACE_MAX_IOV, &took);
	if (took != len)
		return terminate(c, UW_TERM_LAYER_RDMAP, UW_RDMAP_LOCAL_CATASTROPHIC, 0xff,
				 "receive scatter list longer than the placement limit", false,
				 false);
	return 0;
}

static void place_flat(struct rdmap_place *pl, uint8_t *addr, uint32_t len)
{
	pl->niov = len ? 1 : 0;
	pl->iov[0].iov_base = addr;
	pl->iov[0].iov_len = len;
}

int rdmap_rx_begin(struct rdmap_conn *c, const uint8_t *hdr, size_t hdr_len, uint32_t payload_len,
		   struct rdmap_place *pl)
{
	struct rddp_error e;
	struct ddp_hdr d;

	pl->niov = 0;
	pl->len = payload_len;
	if (c->state != RDMAP_OPEN)
		return -EBADMSG;
	c->seg.hdr_len = (uint16_t)(hdr_len < RDMAP_MAX_HDR ? hdr_len : RDMAP_MAX_HDR);
	memcpy(c->seg.hdr, hdr, c->seg.hdr_len);
	c->seg.payload_len = payload_len;
	if (!ddp_hdr_decode(hdr, hdr_len, &d))
		return terminate(c, UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, UW_MPA_ECODE_MARKER,
				 "ULPDU too short for its DDP header", false, false);
	c->seg.ddp = d;
	if (ddp_rx_check_version(&d, &e))
		return terminate_ddp(c, &e);
	if ((d.ulp_ctrl & RDMAP_CTRL_RV_MASK) >> RDMAP_CTRL_RV_SHIFT != RDMAP_VERSION)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_INVALID_VERSION,
				 "invalid RDMAP version");
	uint8_t opcode = d.ulp_ctrl & RDMAP_CTRL_OPCODE_MASK;
	const struct rdmap_op *op = rdmap_op(opcode);
	if (!op || (op->rfc7306 && !c->cfg.rfc7306))
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "unexpected opcode");
	/* The opcode decides the buffer model; a T bit that disagrees is a
	 * malformed message (RFC 5040 4.3 fixes T per opcode). */
	if ((op->qn == RDMAP_QN_TAGGED) != d.tagged)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "tagged flag does not match the opcode");
	if (hdr_len < op->hdr_len)
		return terminate(c, UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, UW_MPA_ECODE_MARKER,
				 "ULPDU too short for its RDMAP header", false, false);
	if (!d.tagged && d.qn != op->qn) {
		rddp_error_set(&e, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_QN,
			       "queue number does not belong to the opcode");
		return terminate_ddp(c, &e);
	}
	c->seg.op = op;
	c->seg.opcode = opcode;
	return op->rx(c, pl);
}

/* A message with no receive posted may wait for one (rdmap_conn.h) */
static bool may_wait(const struct rdmap_conn *c) { return c->cfg.recv_wait && !c->recv_wait_over; }

/* Untagged checks for a message that is always one segment with at most
 * max_payload bytes (Read Request, Terminate, Atomics, Immediate Data). */
static int one_segment(struct rdmap_conn *c, int64_t buf_len)
{
	struct rddp_error e;
	const struct ddp_hdr *d = &c->seg.ddp;

	if (ddp_rx_check_untagged(&c->ddp, d, c->seg.payload_len, buf_len, &e))
		return terminate_ddp(c, &e);
	if (!d->last)
		return terminate(c, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG,
				 "a one-segment message continues", true, false);
	return 0;
}

int rdmap_rx_write(struct rdmap_conn *c, struct rdmap_place *pl)
{
	struct rddp_error e;
	uint8_t *addr;

	if (c->ddp.tagged_in_msg && c->tagged_opcode != c->seg.opcode)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "tagged messages interleaved");
	int chk = ddp_rx_check_tagged(&c->ddp, &c->seg.ddp, c->seg.payload_len, &c->cfg.mem,
				      DDP_REMOTE_WRITE, c->cfg.pd, c->cfg.qp, &addr, &e);
	if (chk == DDP_TAG_ACCESS)
		return protection(c, DDP_TAG_ACCESS, false); /* RFC 5040: rights are RDMAP's */
	if (chk)
		return terminate_ddp(c, &e);
	place_flat(pl, addr, c->seg.payload_len);
	return 0;
}

int rdmap_rx_read_resp(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const struct ddp_hdr *d = &c->seg.ddp;
	struct rdmap_orq_entry *o = orq_head(c);
	struct rddp_error e;
	uint8_t *addr;

	if (!o || o->kind != RDMAP_ORQ_READ)
		return terminate(c, UW_TERM_LAYER_DDP, UW_DDP_CATASTROPHIC, 0,
				 "Read Response without an outstanding Read", false, false);
	if (c->ddp.tagged_in_msg && c->tagged_opcode != c->seg.opcode)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "tagged messages interleaved");
	if (d->stag != o->sink_stag) {
		rddp_error_set(&e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
			       "Read Response to an STag the Read did not name");
		return terminate_ddp(c, &e);
	}
	uint64_t end = (uint64_t)o->placed + c->seg.payload_len;
	if (d->to != o->sink_to + o->placed || end > o->len || (d->last && end != o->len)) {
		rddp_error_set(&e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
			       "Read Response does not match the Read's offset or length");
		return terminate_ddp(c, &e);
	}
	if (ddp_rx_check_tagged(&c->ddp, d, c->seg.payload_len, &c->cfg.mem, DDP_LOCAL_WRITE,
				c->cfg.pd, c->cfg.qp, &addr, &e))
		return terminate_ddp(c, &e);
	place_flat(pl, addr, c->seg.payload_len);
	return 0;
}

int rdmap_rx_send(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const struct ddp_hdr *d = &c->seg.ddp;
	const struct rdmap_recv *r = c->recv;
	struct rddp_error e;

	if (ddp_rx_untagged_starts(&c->ddp, d)) {
		/* Queue order first, so a bad MSN or MO never takes a buffer. */
		if (ddp_rx_check_untagged(&c->ddp, d, c->seg.payload_len, INT64_MAX, &e))
			return terminate_ddp(c, &e);
		r = c->cfg.recv_claim ? c->cfg.recv_claim(c->cfg.recv_ctx) : NULL;
		if (!r && may_wait(c))
			return -EAGAIN;
		c->recv = r;
		c->recv_opcode = c->seg.opcode;
	} else if (c->recv_opcode != c->seg.opcode) {
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "opcode changed inside a message");
	}
	if (ddp_rx_check_untagged(&c->ddp, d, c->seg.payload_len, r ? (int64_t)r->len : -1, &e))
		return terminate_ddp(c, &e);
	return place_sge(c, pl, r, d->mo, c->seg.payload_len);
}

int rdmap_rx_immediate(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const struct ddp_hdr *d = &c->seg.ddp;
	struct rddp_error e;

	if (ddp_rx_check_untagged(&c->ddp, d, c->seg.payload_len, INT64_MAX, &e))
		return terminate_ddp(c, &e);
	const struct rdmap_recv *r = c->cfg.recv_claim ? c->cfg.recv_claim(c->cfg.recv_ctx) : NULL;
	if (!r && may_wait(c))
		return -EAGAIN;
	c->recv = r;
	c->recv_opcode = c->seg.opcode;
	/* The value travels as payload but lands in the completion, not in
	 * the receive's buffer: its "buffer" is the 8-byte field. */
	int rc = one_segment(c, c->recv ? RDMAP_IMMEDIATE_LEN : -1);
	if (rc)
		return rc;
	if (c->seg.payload_len != RDMAP_IMMEDIATE_LEN)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_CATASTROPHIC_STREAM,
				 "Immediate Data shorter than 8 bytes");
	place_flat(pl, c->small, RDMAP_IMMEDIATE_LEN);
	return 0;
}

int rdmap_rx_read_req(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const uint8_t *rr = c->seg.hdr + DDP_UNTAGGED_HDR_LEN;
	int rc = one_segment(c, 0);

	if (rc)
		return rc;
	if (c->irq.count >= c->cfg.ird)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_CATASTROPHIC_STREAM,
				 "more Read Requests than the negotiated IRD");
	if (rdmap_ring_ready(&c->irq))
		/* a local catastrophe: RDMAP, type 0, code 0xff (as siw) */
		return rdmap_err(c, UW_RDMAP_LOCAL_CATASTROPHIC, UW_RDMAP_UNSPECIFIED,
				 "no memory for the Read Request queue");
	c->seg.sink_stag = be32_get(rr + RDMAP_RR_OFF_SINK_STAG);
	c->seg.sink_to = be64_get(rr + RDMAP_RR_OFF_SINK_TO);
	c->seg.size = be32_get(rr + RDMAP_RR_OFF_SIZE);
	c->seg.target = NULL;
	/* A zero-length Read touches no memory: answered without a check,
	 * as siw's own Read RTR with STag 1 needs. */
	if (c->seg.size) {
		enum ddp_tag_check chk =
			ddp_check_tagged(&c->cfg.mem, be32_get(rr + RDMAP_RR_OFF_SRC_STAG),
					 be64_get(rr + RDMAP_RR_OFF_SRC_TO), c->seg.size,
					 DDP_REMOTE_READ, c->cfg.pd, c->cfg.qp, &c->seg.target);
		if (chk)
			return protection(c, chk, true);
	}
	return 0;
}

int rdmap_rx_terminate(struct rdmap_conn *c, struct rdmap_place *pl)
{
	int rc = one_segment(c, RDMAP_TERM_MAX_PAYLOAD);

	if (rc)
		return rc;
	place_flat(pl, c->small, c->seg.payload_len);
	return 0;
}

int rdmap_rx_atomic_req(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const uint8_t *a = c->seg.hdr + DDP_UNTAGGED_HDR_LEN;
	int rc = one_segment(c, 0);

	if (rc)
		return rc;
	if (c->irq.count >= c->cfg.ird)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_CATASTROPHIC_STREAM,
				 "more Atomic and Read Requests than the negotiated IRD");
	if (rdmap_ring_ready(&c->irq))
		/* a local catastrophe: RDMAP, type 0, code 0xff (as siw) */
		return rdmap_err(c, UW_RDMAP_LOCAL_CATASTROPHIC, UW_RDMAP_UNSPECIFIED,
				 "no memory for the Read Request queue");
	c->seg.atomic_op = a[RDMAP_AREQ_OFF_OPCODE + 3] & 0xf;
	if (c->seg.atomic_op > RDMAP_ATOMIC_CMP_SWAP)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_UNEXPECTED_OPCODE,
				 "unknown atomic operation");
	c->seg.req_id = be32_get(a + RDMAP_AREQ_OFF_ID);
	c->seg.data = be64_get(a + RDMAP_AREQ_OFF_DATA);
	c->seg.data_mask = be64_get(a + RDMAP_AREQ_OFF_DATA_MASK);
	c->seg.cmp = be64_get(a + RDMAP_AREQ_OFF_CMP);
	c->seg.cmp_mask = be64_get(a + RDMAP_AREQ_OFF_CMP_MASK);
	uint64_t to = be64_get(a + RDMAP_AREQ_OFF_TO);
	enum ddp_tag_check chk = ddp_check_tagged(&c->cfg.mem, be32_get(a + RDMAP_AREQ_OFF_STAG),
						  to, sizeof(uint64_t), DDP_REMOTE_ATOMIC,
						  c->cfg.pd, c->cfg.qp, &c->seg.target);
	if (chk)
		return protection(c, chk, false);
	/* An atomic works on one naturally aligned 64-bit word. */
	if ((to & 7) || ((uintptr_t)c->seg.target & 7))
		return protection(c, DDP_TAG_BOUNDS, false);
	return 0;
}

int rdmap_rx_atomic_resp(struct rdmap_conn *c, struct rdmap_place *pl)
{
	const uint8_t *a = c->seg.hdr + DDP_UNTAGGED_HDR_LEN;
	struct rdmap_orq_entry *o = orq_head(c);
	int rc = one_segment(c, 0);

	if (rc)
		return rc;
	if (!o || o->kind != RDMAP_ORQ_ATOMIC)
		return terminate(c, UW_TERM_LAYER_DDP, UW_DDP_CATASTROPHIC, 0,
				 "Atomic Response without an outstanding Atomic Request", false,
				 false);
	if (be32_get(a + RDMAP_ARESP_OFF_ID) != o->req_id)
		return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION, UW_RDMAP_CATASTROPHIC_STREAM,
				 "Atomic Response for another request");
	return 0;
}

/*
 * The last byte goes last. Programs (dtest's and perftest's Write
 * latency loops) poll the last byte of a Write's target to learn that the
 * rest has landed, as an RNIC that places in order lets them; memcpy may
 * store the end of a block before its start.
 */
static void copy_last_last(uint8_t *dst, const uint8_t *src, size_t k)
{
	if (k > 1)
		memcpy(dst, src, k - 1);
	__atomic_store_n(dst + k - 1, src[k - 1], __ATOMIC_RELEASE);
}

void rdmap_place_copy(const struct rdmap_place *pl, uint32_t off, const void *data, size_t len)
{
	const uint8_t *src = data;
	for (int i = 0; i < pl->niov && len; i++) {
		size_t l = pl->iov[i].iov_len;
		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		size_t k = l - off < len ? l - off : len;
		copy_last_last((uint8_t *)pl->iov[i].iov_base + off, src, k);
		src += k;
		len -= k;
		off = 0;
	}
}

/* ---- end of segment ---- */

int rdmap_rx_end(struct rdmap_conn *c, struct rdmap_event *ev)
{
	const struct ddp_hdr *d = &c->seg.ddp;
	uint32_t len = c->seg.payload_len;

	memset(ev, 0, sizeof(*ev));
	if (c->state != RDMAP_OPEN)
		return -EBADMSG;
	if (d->tagged) {
		struct rdmap_orq_entry *o = orq_head(c);
		ddp_rx_commit_tagged(&c->ddp, d, len);
		c->tagged_opcode = c->seg.opcode;
		if (c->seg.opcode == RDMAP_RDMA_READ_RESP)
			o->placed += len;
		else
			c->tagged_bytes += len;
		if (!d->last)
			return 0;
		if (c->seg.opcode == RDMAP_RDMA_WRITE) {
			ev->kind = RDMAP_EV_WRITE;
			ev->len = c->tagged_bytes;
			c->tagged_bytes = 0;
			return 1;
		}
		ev->kind = RDMAP_EV_READ_DONE;
		ev->cookie = o->cookie;
		ev->len = o->len;
		ring_pop(&c->orq);
		return 1;
	}
	ddp_rx_commit_untagged(&c->ddp, d, len);

	switch (c->seg.opcode) {
	case RDMAP_SEND:
	case RDMAP_SEND_INVAL:
	case RDMAP_SEND_SE:
	case RDMAP_SEND_SE_INVAL:
		if (!d->last)
			return 0;
		ev->kind = RDMAP_EV_RECV;
		ev->cookie = c->recv->cookie;
		ev->len = (uint64_t)d->mo + len;
		ev->solicited =
			c->seg.opcode == RDMAP_SEND_SE || c->seg.opcode == RDMAP_SEND_SE_INVAL;
		if (c->seg.opcode == RDMAP_SEND_INVAL || c->seg.opcode == RDMAP_SEND_SE_INVAL) {
			if (!c->cfg.mem.invalidate ||
			    c->cfg.mem.invalidate(c->cfg.mem.ctx, d->ulp_word, c->cfg.pd,
						  c->cfg.qp))
				return rdmap_err(c, UW_RDMAP_REMOTE_OPERATION,
						 UW_RDMAP_CANNOT_INVALIDATE,
						 "STag cannot be invalidated");
			ev->invalidated = true;
			ev->inval_stag = d->ulp_word;
		}
		c->recv = NULL;
		return 1;
	case RDMAP_IMMEDIATE:
	case RDMAP_IMMEDIATE_SE:
		ev->kind = RDMAP_EV_IMMEDIATE;
		ev->cookie = c->recv->cookie;
		ev->value = be64_get(c->small);
		ev->solicited = c->seg.opcode == RDMAP_IMMEDIATE_SE;
		c->recv = NULL;
		return 1;
	case RDMAP_RDMA_READ_REQ: {
		struct rdmap_irq_entry *q = ring_push(&c->irq);
		q->kind = RDMAP_ORQ_READ;
		q->sink_stag = c->seg.sink_stag;
		q->sink_to = c->seg.sink_to;
		q->len = c->seg.size;
		q->src = c->seg.target;
		ev->kind = RDMAP_EV_READ_REQ;
		ev->len = c->seg.size;
		return 1;
	}
	case RDMAP_ATOMIC_REQ: {
		/* Executed only now that the CRC has vouched for the request. */
		uint64_t old = rdmap_atomic_apply((uint64_t *)(void *)c->seg.target,
						  c->seg.atomic_op, c->seg.data, c->seg.data_mask,
						  c->seg.cmp, c->seg.cmp_mask);
		struct rdmap_irq_entry *q = ring_push(&c->irq);
		q->kind = RDMAP_ORQ_ATOMIC;
		q->req_id = c->seg.req_id;
		q->value = old;
		ev->kind = RDMAP_EV_ATOMIC_REQ;
		ev->value = old;
		return 1;
	}
	case RDMAP_ATOMIC_RESP: {
		struct rdmap_orq_entry *o = orq_head(c);
		uint64_t v = be64_get(c->seg.hdr + DDP_UNTAGGED_HDR_LEN + RDMAP_ARESP_OFF_VALUE);
		if (o->result)
			memcpy(o->result, &v, sizeof(v));
		ev->kind = RDMAP_EV_ATOMIC_DONE;
		ev->cookie = o->cookie;
		ev->value = v;
		ring_pop(&c->orq);
		return 1;
	}
	case RDMAP_TERMINATE: {
		uint8_t t[RDMAP_TERM_CTRL_LEN + RDMAP_TERM_MAX_PAYLOAD];
		memcpy(t, c->seg.hdr + DDP_UNTAGGED_HDR_LEN, RDMAP_TERM_CTRL_LEN);
		memcpy(t + RDMAP_TERM_CTRL_LEN, c->small, len);
		rdmap_term_decode(t, RDMAP_TERM_CTRL_LEN + len, &ev->term);
		ev->kind = RDMAP_EV_TERMINATE;
		c->state = RDMAP_PEER_TERMINATED;
		return 1;
	}
	}
	return 0;
}
