/*
 * exs_stream.c: SOCK_STREAM over the dynamic stream protocol. The state
 * machines of stream_proto.c decide; this file carries out what they
 * decide: adverts and acks as control messages, transfers as RDMA Writes
 * with their notifications, copies out of the hidden ring.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exs_internal.h"

#define WHERE_N (2 * EXS_SP_MAX_ADVERTS)

void exs__stream_init(struct exs_sock *s, int mode)
{
	static const enum exs_sp_mode m[] = { [EXS_MODE_DYNAMIC] = EXS_SP_DYNAMIC,
					      [EXS_MODE_DIRECT] = EXS_SP_DIRECT_ONLY,
					      [EXS_MODE_INDIRECT] = EXS_SP_INDIRECT_ONLY,
					      [EXS_MODE_PAPER] = EXS_SP_PAPER };
	s->mode = mode;
	exs_sp_rx_init(&s->rx, m[mode], s->ring_size);
	/* the sender's ring size is the peer's: set when its hello comes */
	exs_sp_tx_init(&s->tx, m[mode], 0);
	exs__stream_rules(s);
}

_Static_assert(EXS_RULE_CHAIN == EXS_SP_RULE_CHAIN && EXS_RULE_PROBE == EXS_SP_RULE_PROBE &&
		       EXS_RULE_ACK_EMPTY == EXS_SP_RULE_ACK_EMPTY &&
		       EXS_RULE_HOLD == EXS_SP_RULE_HOLD && EXS_RULES_ALL == EXS_SP_RULES_ALL,
	       "EXS_SO_RULES names the protocol's own bits");

void exs__stream_rules(struct exs_sock *s)
{
	exs_sp_rx_rules(&s->rx, s->rules);
	/* A sender holds only towards a peer that says it will answer (its
	 * hello's features): a uwarp from before the hold refuses HOLD as an
	 * unknown message and ends the connection. Until the hello comes,
	 * no send goes out anyway. */
	unsigned tx = s->rules;
	if (!(s->peer_features & EXS_FEAT_HOLD))
		tx &= ~(unsigned)EXS_RULE_HOLD;
	exs_sp_tx_rules(&s->tx, tx);
}

static uint8_t *op_buf(const struct exs_op *op)
{
	return op->bounce ? op->bounce : op->iov[0].iov_base;
}

bool exs__stream_readable(struct exs_sock *s) { return s->rx.ring_in != s->rx.ring_out; }

int exs__stream_recv_post(struct exs_sock *s, struct exs_op *op)
{
	/* a receive longer than a transfer can say is still a byte-stream
	 * receive: it completes with what fits */
	uint32_t len = op->len > EXS_XFER_MAX ? EXS_XFER_MAX : (uint32_t)op->len;
	op->len = len;
	int rc = exs_sp_rx_post(&s->rx, len, (op->flags & MSG_WAITALL) != 0, &op->rid);
	return rc == -ENOBUFS ? -EAGAIN : rc;
}

static struct exs_op *recv_by_id(struct exs_sock *s, uint32_t id)
{
	struct exs_op *op;
	util_list_for_each(op, &s->recvs, link)
		if (op->rid == id)
			return op;
	return NULL;
}

static void pop_recv(struct exs_sock *s, struct exs_op *op)
{
	util_list_del(&op->link);
	s->nrecvs--;
}

/* Complete the receives at the head that are done. */
static void reap_done(struct exs_sock *s)
{
	uint32_t id, bytes;
	while (exs_sp_rx_complete(&s->rx, &id, &bytes)) {
		struct exs_op *op = exs__op_first(&s->recvs);
		pop_recv(s, op);
		exs__op_complete(op, 0, bytes);
	}
}

/* A sender that holds learns that no advert will come (stream_proto.h,
 * "Holding"), but not at once: a receive that just completed has not
 * reached the program yet, which as a rule posts the next one when it
 * takes it; told idle in between, the sender went to the ring and the
 * advert behind found it there, message after message. The IDLE waits
 * until a thread of the program waits in the ES-API (done with what it
 * took) or a lease has passed (exs__flush_idle). */
static void hold_idle(struct exs_sock *s)
{
	if (!s->idle_held && exs_sp_rx_idle(&s->rx)) {
		s->idle_held = true;
		exs__idle_held();
	}
}

void exs__stream_flush_idle(struct exs_sock *s)
{
	uint64_t at;
	s->idle_held = false;
	if (s->st != S_CONNECTED)
		return;
	if (!exs__can_ctl(s)) {
		hold_idle(s); /* (once credits come back) */
		return;
	}
	if (exs_sp_rx_idle_due(&s->rx, &at)) {
		struct exs_ctl m = { .type = EXS_CTL_IDLE, .seq = at };
		exs__post_ctl(s, &m);
	}
}

static void send_ack(struct exs_sock *s)
{
	uint64_t drained;
	if (exs__can_ctl(s) && exs_sp_rx_ack_due(&s->rx, &drained)) {
		struct exs_ctl m = { .type = EXS_CTL_ACK, .seq = drained };
		exs__post_ctl(s, &m);
	}
}

/* the receiver: ring copies, completions, adverts, acks */
static void rx_pump(struct exs_sock *s)
{
	for (;;) {
		struct exs_sp_copy cp;
		uint32_t id, bytes;
		if (exs_sp_rx_drain(&s->rx, &cp)) {
			struct exs_op *op = exs__op_first(&s->recvs);
			/* the state machine copies only into the head receive */
			memcpy(op_buf(op) + cp.off, s->ring + cp.ring_off, cp.len);
			op->done += cp.len;
			continue;
		}
		if (exs_sp_rx_complete(&s->rx, &id, &bytes)) {
			struct exs_op *op = exs__op_first(&s->recvs);
			pop_recv(s, op);
			exs__op_complete(op, 0, bytes);
			continue;
		}
		break;
	}
	if (s->st != S_CONNECTED)
		return;
	/* the paper acknowledges the ring as it drains, before adverts;
	 * uwarp's mode sends its adverts before the room (stream_proto.c) */
	if (s->mode == EXS_MODE_PAPER)
		send_ack(s);
	struct exs_sp_advert a;
	while (exs__can_ctl(s) && exs_sp_rx_advert(&s->rx, &a)) {
		struct exs_op *op = recv_by_id(s, a.id);
		struct exs_ctl m = { .type = EXS_CTL_ADVERT,
				     .flags = (uint8_t)((a.waitall ? EXS_CTL_F_WAITALL : 0) |
							(a.chain ? EXS_CTL_F_CHAIN : 0)),
				     .phase = a.phase,
				     .id = a.id,
				     .len = a.len,
				     .seq = a.seq,
				     .addr = (uintptr_t)op_buf(op),
				     .stag = exs__op_rkey(op),
				     .off = a.off };
		/* a receive made with MSG_MORE: the program's send follows,
		 * and the advert leaves with it (one segment, not two) */
		exs__post_advert(s, &m, op->flags & MSG_MORE);
		s->adverts_sent++;
	}
	send_ack(s);
	hold_idle(s);
}

/* EXS_FLOW_CREDIT's send buffers, made at the first indirect transfer:
 * one per credit, a slot each, as the SDP paper's credit scheme has them. */
static bool cbuf_ready(struct exs_sock *s)
{
	if (s->cbuf)
		return true;
	uint32_t n = (uint32_t)(s->tx.ring_size / s->tx.slot);
	size_t bytes = (size_t)n * s->tx.slot;
	s->cbuf = malloc(bytes);
	s->cbuf_mr = s->cbuf ? uw_reg_mr(exs_rt.pd, s->cbuf, bytes, UW_ACCESS_LOCAL_WRITE) : NULL;
	if (!s->cbuf_mr) {
		free(s->cbuf);
		s->cbuf = NULL;
		return false;
	}
	s->cbuf_n = n;
	return true;
}

/* An indirect transfer under credits: the bytes are copied into the next
 * send buffer and go from there; for the application they are sent. */
static int post_copied(struct exs_sock *s, struct exs_op *op, const struct exs_sp_xfer *x,
		       uint64_t raddr, uint32_t rkey, const struct exs_note *n)
{
	if (!cbuf_ready(s))
		return -ENOMEM;
	uint8_t *b = s->cbuf + (size_t)(s->cbuf_next % s->cbuf_n) * s->tx.slot;
	struct uw_sge sge[EXS_IOV_MAX];
	int ns = exs__op_sges(op, op->assigned, x->len, sge);
	uint8_t *at = b;
	for (int i = 0; i < ns; i++) {
		memcpy(at, (const void *)(uintptr_t)sge[i].addr, sge[i].length);
		at += sge[i].length;
	}
	int rc = exs__post_xfer_buf(s, b, s->cbuf_mr->lkey, x->len, raddr, rkey, n);
	if (rc)
		return rc;
	s->cbuf_next++;
	s->cbuf_busy++;
	s->sendbuf_bytes += x->len;
	op->done += x->len;
	op->copied = true;
	return 0;
}

void exs__stream_reap_copied(struct exs_sock *s)
{
	struct exs_op *op;
	while ((op = exs__op_first(&s->sends)) && op->copied && op->posted && op->done == op->len) {
		util_list_del(&op->link);
		s->nsends--;
		exs__send_finished(s, op, 0, (ssize_t)op->len);
	}
}

/* the sender: transfers while adverts or ring space allow */
static void tx_run(struct exs_sock *s)
{
	struct exs_op *op = exs__op_first(&s->sends);
	while (op && op->posted)
		op = exs__op_after(&s->sends, op);
	while (op && exs__can_xfer(s)) {
		/* every send buffer in flight: their completions come first
		 * (one per credit, so with credits to spend this is rare) */
		if (s->tx.slot && s->cbuf && s->cbuf_busy == s->cbuf_n)
			return;
		/* A coalescing buffer at the end fills while transfers are in
		 * flight; their completions bring it out (Nagle's rule, with
		 * the completion for the ACK). */
		if (op->coal_busy && !op->assigned && op == exs__op_last(&s->sends) &&
		    s->fl_count >= EXS_COALESCE_INFLIGHT && op->len < s->coal_size / 2)
			return;
		size_t left = op->len - op->assigned;
		struct exs_sp_xfer x;
		if (!exs_sp_tx_next(&s->tx, left > EXS_XFER_CAP ? EXS_XFER_CAP : left, &x)) {
			uint32_t phase;
			uint64_t at;
			if (exs__can_ctl(s) && exs_sp_tx_phase_due(&s->tx, &phase)) {
				struct exs_ctl m = { .type = EXS_CTL_PHASE, .phase = phase };
				exs__post_ctl(s, &m);
			}
			if (exs__can_ctl(s) && exs_sp_tx_hold_due(&s->tx, &at)) {
				struct exs_ctl m = { .type = EXS_CTL_HOLD, .seq = at };
				exs__post_ctl(s, &m);
			}
			return;
		}
		struct exs_note n = { .kind = x.kind == EXS_SP_DIRECT ? EXS_XFER_DIRECT
								      : EXS_XFER_INDIRECT,
				      .len = x.len,
				      .phase = x.phase,
				      .id = x.id,
				      .off = x.off,
				      .ring_off = x.ring_off };
		uint64_t raddr;
		uint32_t rkey;
		if (x.kind == EXS_SP_DIRECT) {
			struct exs_adv_where *w = &s->where[x.id % WHERE_N];
			if (!w->valid || w->id != x.id) {
				exs__abort(s, EPROTO);
				return;
			}
			raddr = w->addr + x.off;
			rkey = w->stag;
		} else {
			raddr = s->peer_ring_addr + x.ring_off;
			rkey = s->peer_ring_stag;
		}
		int rc = x.kind == EXS_SP_INDIRECT && s->tx.slot
				 ? post_copied(s, op, &x, raddr, rkey, &n)
				 : exs__post_xfer(s, op, op->assigned, x.len, raddr, rkey, &n);
		if (rc) {
			exs__abort(s, rc == -ENOMEM ? ENOMEM : ECONNRESET);
			return;
		}
		if (op->coal_busy && !op->assigned)
			s->flushes++;
		op->assigned += x.len;
		if (op->assigned == op->len) {
			op->posted = true;
			op = exs__op_after(&s->sends, op);
		}
	}
}

static void tx_pump(struct exs_sock *s)
{
	if (!exs__tx_may_run(s))
		return;
	tx_run(s);
	if (s->st == S_CONNECTED)
		exs__stream_reap_copied(s);
}

static struct exs_op *coal_op(struct exs_sock *s)
{
	struct exs_coal *c = NULL;
	for (int i = 0; i < EXS_COALESCE_BUFS && !c; i++)
		if (!s->coal[i].busy)
			c = &s->coal[i];
	if (!c)
		return NULL;
	if (!c->buf) {
		c->buf = malloc(s->coal_size);
		c->mr = c->buf ? uw_reg_mr(exs_rt.pd, c->buf, s->coal_size, UW_ACCESS_LOCAL_WRITE)
			       : NULL;
		if (!c->mr) {
			free(c->buf);
			c->buf = NULL;
			return NULL;
		}
	}
	struct exs_op *op = calloc(1, sizeof(*op));
	if (!op)
		return NULL;
	op->kind = OP_SEND;
	op->fd = s->fd;
	util_list_init(&op->order); /* (it has no event: on no send order) */
	op->iov[0].iov_base = c->buf;
	op->iovcnt = 1;
	op->lkey[0] = c->mr->lkey;
	op->coal_busy = &c->busy;
	c->busy = true;
	util_list_add_tail(&s->sends, &op->link);
	s->nsends++;
	return op;
}

/* The SDP paper's coalescing: a send behind one that waits would wait as
 * well; a small one is copied instead, and the copies go out together
 * (one transfer, one notification) when the sender moves again. Direct
 * mode never copies: it waits for the receiver's buffers; nor does the
 * paper's mode, whose sender has no buffer of its own. */
bool exs__stream_coalesce(struct exs_sock *s, const struct iovec *iov, int iovcnt, size_t len)
{
	struct exs_op *t = exs__op_last(&s->sends);
	bool behind = t && !t->posted; /* a send still waits */
	if (s->flow == EXS_FLOW_CREDIT || s->mode == EXS_MODE_DIRECT || s->mode == EXS_MODE_PAPER ||
	    s->st != S_CONNECTED || len > EXS_COALESCE_MAX || len > s->coal_size)
		return false;
	/* it would wait behind a send, or the pipe is busy: it can wait in
	 * the buffer as well, and the application has its buffer back */
	if (!behind && s->fl_count < EXS_COALESCE_INFLIGHT && len > EXS_COPY_SMALL)
		return false;
	if (!behind || !t->coal_busy || t->len + len > s->coal_size)
		t = coal_op(s);
	if (!t)
		return false;
	uint8_t *at = (uint8_t *)t->iov[0].iov_base + t->len;
	for (int i = 0; i < iovcnt; i++) {
		memcpy(at, iov[i].iov_base, iov[i].iov_len);
		at += iov[i].iov_len;
	}
	t->len += len;
	t->iov[0].iov_len = t->len;
	s->coalesced++;
	return true;
}

void exs__stream_free(struct exs_sock *s)
{
	if (s->cbuf_mr)
		uw_dereg_mr(s->cbuf_mr);
	free(s->cbuf);
	for (int i = 0; i < EXS_COALESCE_BUFS; i++) {
		if (s->coal[i].mr)
			uw_dereg_mr(s->coal[i].mr);
		free(s->coal[i].buf);
	}
}

void exs__stream_pump(struct exs_sock *s)
{
	rx_pump(s);
	if (s->st == S_CONNECTED)
		tx_pump(s);
}

int exs__stream_ctl(struct exs_sock *s, const struct exs_ctl *m)
{
	switch (m->type) {
	case EXS_CTL_ADVERT: {
		struct exs_sp_advert a = { .id = m->id,
					   .phase = m->phase,
					   .seq = m->seq,
					   .off = m->off,
					   .len = m->len,
					   .waitall = (m->flags & EXS_CTL_F_WAITALL) != 0,
					   .chain = (m->flags & EXS_CTL_F_CHAIN) != 0 };
		int rc = exs_sp_tx_advert(&s->tx, &a);
		if (rc)
			return -EPROTO;
		s->where[m->id % WHERE_N] = (struct exs_adv_where){
			.id = m->id, .addr = m->addr, .stag = m->stag, .len = m->len, .valid = true
		};
		return 0;
	}
	case EXS_CTL_ACK:
		if (exs_sp_tx_ack(&s->tx, m->seq))
			return -EPROTO;
		/* The paper's sender acts on each completion as it comes: room
		 * in the ring is used before adverts that arrived behind the ACK
		 * are looked at (uwarp's mode waits for the whole batch). */
		if (s->mode == EXS_MODE_PAPER && s->st == S_CONNECTED)
			tx_pump(s);
		return 0;
	case EXS_CTL_PHASE:
		return exs_sp_rx_phase(&s->rx, m->phase) ? -EPROTO : 0;
	case EXS_CTL_HOLD:
		return exs_sp_rx_hold(&s->rx, m->seq) ? -EPROTO : 0;
	case EXS_CTL_IDLE:
		return exs_sp_tx_idle(&s->tx, m->seq) ? -EPROTO : 0;
	default:
		return -EPROTO;
	}
}

int exs__stream_note(struct exs_sock *s, const struct exs_note *n, bool full)
{
	if (exs_fin_peer_ended(&s->fin))
		return -EPROTO; /* nothing follows the end */
	uint32_t phase = full ? n->phase : exs_phase_widen(s->rx.phase, n->phase);
	if (n->kind == EXS_XFER_DIRECT) {
		/* several notifications are handled before the protocol runs:
		 * a receive the last one filled makes room for this one */
		reap_done(s);
		struct exs_op *op = exs__op_first(&s->recvs);
		if (!op)
			return -EPROTO;
		/* Immediate Data names the receive by its low 16 bits, and only
		 * the head receive's next byte can be the place */
		uint32_t id = full ? n->id : op->rid;
		if (!full && (op->rid & 0xffff) != n->id)
			return -EPROTO;
		uint32_t off = full ? n->off : exs_sp_rx_head_filled(&s->rx);
		if (exs_sp_rx_direct(&s->rx, phase, id, off, n->len))
			return -EPROTO;
		op->done += n->len;
		s->rx_direct++;
		return 0;
	}
	uint64_t ring_off = full ? n->ring_off : exs_sp_rx_ring_next(&s->rx);
	if (exs_sp_rx_indirect(&s->rx, phase, ring_off, n->len))
		return -EPROTO;
	s->rx_indirect++;
	return 0;
}
