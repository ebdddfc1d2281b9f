/*
 * exs_conn.c: an ES-API connection at work: the protocol's common part
 * (what runs after every event: the stream or message pump, FIN and
 * FIN_ACK, credits) and the dispatch of the completions of its QP. Setting
 * up is in exs_setup.c, messages in exs_ctl.c, the end in exs_teardown.c,
 * connection events in exs_cm.c.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

static uint64_t sent_total(const struct exs_sock *s)
{
	return s->type == SOCK_STREAM ? s->tx.seq : s->sent_seq;
}

static uint64_t arrived_total(const struct exs_sock *s)
{
	return s->type == SOCK_STREAM ? s->rx.arrived : s->rx_msgs;
}

void exs__progress(struct exs_sock *s)
{
	if (s->st != S_CONNECTED)
		return;
	if (s->type == SOCK_STREAM)
		exs__stream_pump(s);
	else
		exs__seq_pump(s);
	if (s->st != S_CONNECTED)
		return;
	/* sends are handed out in order: all are when the last one is */
	struct exs_op *last = exs__op_last(&s->sends);
	bool all_sent = !last || last->posted;
	enum exs_fin_send x;
	while ((x = exs_fin_next(&s->fin, all_sent)) != EXS_FIN_SEND_NONE &&
	       exs__ctl_room(s, false)) {
		struct exs_ctl m = { .type = x == EXS_FIN_SEND_FIN ? EXS_CTL_FIN : EXS_CTL_FIN_ACK,
				     .seq = x == EXS_FIN_SEND_FIN ? sent_total(s)
								  : s->fin.peer_len };
		if (exs__post_ctl_raw(s, &m))
			break;
		exs_fin_sent(&s->fin, x);
	}
	if (s->credits_owed >= EXS_CTL_RECVS / 4 && exs__ctl_room(s, true)) {
		struct exs_ctl m = { .type = EXS_CTL_CREDIT };
		exs__post_ctl_raw(s, &m);
	}
	if (exs_fin_peer_ended(&s->fin) && !util_list_empty(&s->recvs) &&
	    (s->type == SOCK_SEQPACKET || !exs__stream_readable(s)))
		exs__finish_recvs(s, 0); /* every byte is in: the rest read the end */
	exs__maybe_finish_close(s);
	exs__changed();
	exs__kick();
}

static int on_common_ctl(struct exs_sock *s, const struct exs_ctl *m)
{
	switch (m->type) {
	case EXS_CTL_CREDIT:
		return 0;
	case EXS_CTL_FIN:
		/* the FIN follows the last transfer on the same stream: by now
		 * every byte it counts has arrived */
		return exs_fin_on_fin(&s->fin, m->seq, arrived_total(s));
	case EXS_CTL_FIN_ACK:
		if (exs_fin_on_fin_ack(&s->fin, m->seq, sent_total(s)))
			return -EPROTO;
		if (s->shut_op) {
			exs__op_complete(s->shut_op, 0, 0);
			s->shut_op = NULL;
		}
		return 0;
	default:
		return s->type == SOCK_STREAM ? exs__stream_ctl(s, m) : exs__seq_ctl(s, m);
	}
}

static int on_note(struct exs_sock *s, const struct exs_note *n, bool full)
{
	if (s->type == SOCK_STREAM)
		return n->kind == EXS_XFER_MESSAGE ? -EPROTO : exs__stream_note(s, n, full);
	return n->kind != EXS_XFER_MESSAGE ? -EPROTO : exs__seq_note(s, n);
}

static void onesided_done(struct uw_wc *wc)
{
	struct exs_op *op = (struct exs_op *)(uintptr_t)(wc->wr_id & ~(uint64_t)7);
	int err = 0;
	if (wc->status == UW_WC_REM_ACCESS_ERR || wc->status == UW_WC_LOC_PROT_ERR)
		err = EACCES;
	else if (wc->status != UW_WC_SUCCESS)
		err = wc->status == UW_WC_WR_FLUSH_ERR ? ECONNRESET : EPROTO;
	exs__op_complete(op, err, err ? -1 : (ssize_t)op->len);
}

/* what a failed completion says of its connection: flushed ones, why the
 * connection ended if it was a limit running out (EXS_SO_IDLE_MS, the
 * keepalive), else a reset */
static int wc_err(const struct exs_sock *s, const struct uw_wc *wc)
{
	if (wc->status != UW_WC_WR_FLUSH_ERR)
		return EPROTO;
	return s->qp && uw_qp_end_errno(s->qp) == ETIMEDOUT ? ETIMEDOUT : ECONNRESET;
}

static void on_recv(struct exs_sock *s, struct uw_wc *wc)
{
	unsigned i = (unsigned)(wc->wr_id >> 3);
	int rc;
	if (wc->opcode == UW_WC_RECV_IMM) {
		struct exs_note n;
		rc = exs_imm_unpack(wc->imm_data, &n);
		if (!rc) {
			exs__trace_note(s, "<-", &n);
			rc = on_note(s, &n, false);
		}
	} else {
		struct exs_ctl m;
		rc = exs_ctl_decode(s->ctl_buf + (size_t)i * EXS_CTL_LEN, wc->byte_len, &m);
		if (!rc) {
			exs__trace_ctl(s, "<-", &m);
			s->credits += m.credits;
			if (s->credits > EXS_CTL_RECVS)
				rc = -EPROTO; /* more back than it was ever given */
		}
		if (!rc && m.type == EXS_CTL_DATA) {
			struct exs_note n = { .kind = (enum exs_xfer_kind)(
						      (m.flags & EXS_CTL_F_KIND) >> 2),
					      .trunc = (m.flags & EXS_CTL_F_TRUNC) != 0,
					      .len = m.len,
					      .phase = m.phase,
					      .id = m.id,
					      .off = m.off,
					      .ring_off = m.seq };
			rc = on_note(s, &n, true);
		} else if (!rc) {
			rc = on_common_ctl(s, &m);
		}
	}
	if (rc) {
		if (exs__tracing())
			fprintf(stderr,
				"exs %d <- a message that breaks the protocol (%s, %u bytes): "
				"abort\n",
				s->fd, wc->opcode == UW_WC_RECV_IMM ? "Immediate Data" : "Send",
				wc->byte_len);
		exs__abort(s, EPROTO);
		return;
	}
	if (exs__post_ctl_recv(s, i)) {
		exs__abort(s, ECONNRESET);
		return;
	}
	s->credits_owed++;
	exs__mark_pending(s);
}

static void on_sent(struct exs_sock *s, struct uw_wc *wc)
{
	s->sq_out--;
	if (TAG(wc->wr_id) == TAG_XFER && s->fl_count) {
		struct exs_inflight f = s->fl[s->fl_head];
		s->fl_head = (s->fl_head + 1) % EXS_SQ_DEPTH;
		s->fl_count--;
		struct exs_op *op = f.op;
		if (f.sendbuf)
			s->cbuf_busy--; /* its send buffer is free again */
		if (op && wc->status == UW_WC_SUCCESS) {
			op->done += s->type == SOCK_STREAM ? f.len : op->len;
			/* transfers complete in order: a finished send is the head */
			if (op->done == op->len && op == exs__op_first(&s->sends) && op->posted) {
				util_list_del(&op->link);
				s->nsends--;
				exs__send_finished(s, op, 0, (ssize_t)op->len);
				/* copied sends behind it were waiting for it */
				exs__stream_reap_copied(s);
			}
		}
	}
	if (wc->status != UW_WC_SUCCESS) {
		if (exs__tracing())
			fprintf(stderr, "exs %d: a send failed: %s (Terminate %u/%u/%u)\n", s->fd,
				uw_wc_status_str(wc->status), wc->term_layer, wc->term_etype,
				wc->term_ecode);
		if (s->st == S_CONNECTED) /* flushes after the fact say nothing new */
			exs__abort(s, wc_err(s, wc));
		return;
	}
	exs__mark_pending(s);
}

/* The protocol runs once per socket after a batch of completions, not
 * after each: a receiver that has seen every notification that came
 * together drains and advertises from the whole picture (an advert sent
 * between two pieces of one send would estimate a position the sender
 * has already passed). */
void exs__progress_pending(void)
{
	/* The ones marked so far; one marked again meanwhile runs at the
	 * next round. A socket's progress may free sockets (they leave the
	 * batch with the table), so each is taken off before it runs. */
	struct util_list batch;
	util_list_take_all(&batch, &exs_rt.pending);
	struct exs_sock *s;
	while ((s = util_list_first(&batch, struct exs_sock, pending_link))) {
		util_list_del(&s->pending_link);
		s->pending = false;
		exs__progress(s);
	}
}

void exs__on_wc(struct uw_wc *wc)
{
	if (wc->opcode != UW_WC_RECV && TAG(wc->wr_id) == TAG_ONESIDED) {
		/* its operation waits for this whatever became of the socket */
		struct exs_sock *s = wc->qp ? wc->qp->qp_context : NULL;
		onesided_done(wc);
		if (s && !s->dead) {
			s->sq_out--;
			if (wc->status != UW_WC_SUCCESS && s->st == S_CONNECTED)
				exs__abort(s, wc_err(s, wc));
			else
				exs__mark_pending(s);
		}
		return;
	}
	if (!wc->qp)
		return; /* its socket is gone, and with it what this was for */
	struct exs_sock *s = wc->qp->qp_context;
	if (s->dead)
		return;
	if (TAG(wc->wr_id) == TAG_CTL_RECV) {
		if (wc->status == UW_WC_SUCCESS)
			on_recv(s, wc);
		else if (s->st == S_CONNECTED)
			exs__abort(s, wc_err(s, wc));
		return;
	}
	on_sent(s, wc);
}
