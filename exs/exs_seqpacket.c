/*
 * exs_seqpacket.c: SOCK_SEQPACKET. Every receive is advertised as it is
 * posted; every message waits for the advert at the head of the queue and
 * is written straight into it, cut to its length if longer (MSG_TRUNC at
 * the receiver). Message order is the adverts' order on both sides, so the
 * notification need only name the receive.
 */
#include <errno.h>

#include "exs_internal.h"

#define SP_ADV_CAP (2 * EXS_MAX_RECVS)

int exs__seq_recv_post(struct exs_sock *s, struct exs_op *op)
{
	if (op->len > EXS_MSG_MAX)
		op->len = EXS_MSG_MAX; /* no message can be longer */
	op->rid = s->sp_next_id++;
	return 0;
}

void exs__seq_pump(struct exs_sock *s)
{
	while (s->adv_next && exs__can_ctl(s)) {
		struct exs_op *op = s->adv_next;
		struct exs_ctl m = { .type = EXS_CTL_ADVERT,
				     .id = op->rid,
				     .len = op->len ? (uint32_t)op->len : 0,
				     .addr = op->len ? (uintptr_t)(op->bounce ? op->bounce
									      : op->iov[0].iov_base)
						     : 0,
				     .stag = op->len ? exs__op_rkey(op) : 0 };
		/* an empty receive still takes a message: advertise one byte of
		 * nothing (len 0 is not an advert); it gets only the cut */
		if (!m.len)
			m.len = 1, m.stag = 0;
		if (exs__post_ctl(s, &m))
			return;
		s->adverts_sent++;
		s->adv_next = exs__op_after(&s->recvs, op);
	}
	struct exs_op *op = exs__op_first(&s->sends);
	while (op && op->posted)
		op = exs__op_after(&s->sends, op);
	while (op && s->sp_count && exs__can_xfer(s)) {
		struct exs_adv_where *a = &s->sp_adv[s->sp_head];
		uint32_t room = a->stag ? a->len : 0;
		uint32_t n = op->len > room ? room : (uint32_t)op->len;
		struct exs_note note = {
			.kind = EXS_XFER_MESSAGE, .trunc = op->len > n, .len = n, .id = a->id
		};
		if (exs__post_xfer(s, op, 0, n, a->addr, a->stag, &note)) {
			exs__abort(s, ECONNRESET);
			return;
		}
		s->sp_head = (s->sp_head + 1) % SP_ADV_CAP;
		s->sp_count--;
		s->sent_seq++;
		op->assigned = op->len;
		op->posted = true;
		op = exs__op_after(&s->sends, op);
	}
}

int exs__seq_ctl(struct exs_sock *s, const struct exs_ctl *m)
{
	if (m->type != EXS_CTL_ADVERT || s->sp_count == SP_ADV_CAP)
		return -EPROTO;
	s->sp_adv[(s->sp_head + s->sp_count++) % SP_ADV_CAP] = (struct exs_adv_where){
		.id = m->id, .addr = m->addr, .stag = m->stag, .len = m->len, .valid = true
	};
	return 0;
}

int exs__seq_note(struct exs_sock *s, const struct exs_note *n)
{
	struct exs_op *op = exs__op_first(&s->recvs);
	/* messages land in the order of the adverts: the head receive, and
	 * only once it was advertised */
	if (exs_fin_peer_ended(&s->fin) || !op || op == s->adv_next ||
	    (op->rid & 0xffff) != (n->id & 0xffff) || n->len > op->len)
		return -EPROTO;
	util_list_del(&op->link);
	s->nrecvs--;
	s->rx_msgs++;
	op->done = n->len;
	if (n->trunc)
		op->flags |= MSG_TRUNC;
	exs__op_complete(op, 0, n->len);
	return 0;
}
