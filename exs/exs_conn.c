/*
 * exs_conn.c: an ES-API connection over a uwarp QP: setting it up,
 * control messages and credits, data transfers, completions, connection
 * events, and tearing it down so that every operation completes.
 */
#include <errno.h>
#include <stdio.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

enum { TAG_CTL_RECV = 0, TAG_CTL_SEND = 1, TAG_XFER = 2, TAG_XFER_WRITE = 3, TAG_ONESIDED = 4 };
#define TAG(wr_id) ((int)((wr_id) & 7))

/* a one-sided operation's WR names the operation (malloc's alignment
 * leaves the tag's bits free) */
uint64_t exs__onesided_wr_id(struct exs_op *op) { return (uintptr_t)op | TAG_ONESIDED; }

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

/* the peer's receives a normal message may use: one stays for CREDIT,
 * so that returning credits can never deadlock */
static bool can_ctl(const struct exs_sock *s, bool credit_msg)
{
	return s->st == S_CONNECTED && s->credits >= (credit_msg ? 1 : 2) &&
	       s->sq_out + 1 <= EXS_SQ_DEPTH;
}

bool exs__can_xfer(const struct exs_sock *s)
{
	return s->st == S_CONNECTED && s->credits >= 2 && s->sq_out + 2 <= EXS_SQ_DEPTH &&
	       s->fl_count < EXS_SQ_DEPTH;
}

bool exs__can_ctl(const struct exs_sock *s) { return can_ctl(s, false); }

/* EXS_TRACE=1 prints every message each socket sends and receives, in
 * the paper's terms, on stderr */
static int trace = -1;
static const char *const ctl_names[EXS_CTL_MAX_] = {
	[EXS_CTL_ADVERT] = "ADVERT", [EXS_CTL_ACK] = "ACK",	     [EXS_CTL_PHASE] = "PHASE",
	[EXS_CTL_DATA] = "DATA",     [EXS_CTL_CREDIT] = "CREDIT", [EXS_CTL_FIN] = "FIN",
	[EXS_CTL_FIN_ACK] = "FIN_ACK",
};

static void trace_ctl(const struct exs_sock *s, const char *dir, const struct exs_ctl *m)
{
	if (trace < 0)
		trace = getenv("EXS_TRACE") != NULL;
	if (trace)
		fprintf(stderr,
			"exs %d %s %s phase %u id %u seq %llu off %u len %u%s credits %u stag %#x addr %#llx\n",
			s->fd, dir, ctl_names[m->type], m->phase, m->id, (unsigned long long)m->seq,
			m->off, m->len, (m->flags & EXS_CTL_F_WAITALL) && m->type == EXS_CTL_ADVERT
						? " WAITALL" : "", m->credits, m->stag,
			(unsigned long long)m->addr);
}

static void trace_note(const struct exs_sock *s, const char *dir, const struct exs_note *n)
{
	static const char *const kinds[] = { "?", "DIRECT", "INDIRECT", "MESSAGE" };
	if (trace < 0)
		trace = getenv("EXS_TRACE") != NULL;
	if (trace)
		fprintf(stderr, "exs %d %s %s phase %u id %u len %u%s\n", s->fd, dir, kinds[n->kind],
			n->phase, n->id, n->len, n->trunc ? " TRUNC" : "");
}

static int post_ctl_recv(struct exs_sock *s, unsigned i)
{
	struct uw_sge sge = { (uintptr_t)(s->ctl_buf + (size_t)i * EXS_CTL_LEN), EXS_CTL_LEN,
			      s->ctl_mr->lkey };
	struct uw_recv_wr wr = { .wr_id = (uint64_t)i << 3 | TAG_CTL_RECV, .sg_list = &sge,
				 .num_sge = 1 };
	return uw_post_recv(s->qp, &wr, NULL);
}

static int post_ctl_raw(struct exs_sock *s, struct exs_ctl *m)
{
	uint8_t buf[EXS_CTL_LEN];
	m->credits = (uint16_t)s->credits_owed;
	trace_ctl(s, "->", m);
	exs_ctl_encode(m, buf);
	struct uw_sge sge = { (uintptr_t)buf, EXS_CTL_LEN, 0 };
	struct uw_send_wr wr = { .wr_id = TAG_CTL_SEND, .sg_list = &sge, .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
	int rc = uw_post_send(s->qp, &wr, NULL);
	if (rc)
		return -rc;
	s->credits_owed = 0;
	s->credits--;
	s->sq_out++;
	return 0;
}

int exs__post_ctl(struct exs_sock *s, struct exs_ctl *m)
{
	if (!can_ctl(s, m->type == EXS_CTL_CREDIT))
		return -EAGAIN;
	return post_ctl_raw(s, m);
}

int exs__post_xfer(struct exs_sock *s, struct exs_op *op, size_t op_off, uint32_t len,
		   uint64_t raddr, uint32_t rkey, const struct exs_note *n)
{
	/* the operation's bytes [op_off, op_off + len) as SGEs */
	struct uw_sge sge[EXS_IOV_MAX];
	int ns = 0;
	size_t skip = op_off, left = len;
	for (int i = 0; i < op->iovcnt && left; i++) {
		size_t l = op->iov[i].iov_len;
		if (skip >= l) {
			skip -= l;
			continue;
		}
		size_t take = l - skip < left ? l - skip : left;
		sge[ns++] = (struct uw_sge){ (uintptr_t)op->iov[i].iov_base + skip, (uint32_t)take,
					     op->lkey[i] };
		left -= take;
		skip = 0;
	}
	struct uw_send_wr w[2];
	int nw = 0;
	if (s->imm) {
		trace_note(s, "->", n);
		w[nw++] = (struct uw_send_wr){ .wr_id = TAG_XFER, .sg_list = sge, .num_sge = ns,
					       .opcode = len ? UW_WR_RDMA_WRITE_WITH_IMM : UW_WR_IMM,
					       .send_flags = UW_SEND_SIGNALED,
					       .imm_data = exs_imm_pack(n),
					       .rdma = { raddr, rkey } };
	} else {
		if (len)
			w[nw++] = (struct uw_send_wr){ .wr_id = TAG_XFER_WRITE, .sg_list = sge,
						       .num_sge = ns, .opcode = UW_WR_RDMA_WRITE,
						       .send_flags = UW_SEND_SIGNALED,
						       .rdma = { raddr, rkey } };
	}
	for (int i = 0; i < nw; i++) {
		int rc = uw_post_send(s->qp, &w[i], NULL);
		if (rc)
			return -rc;
		s->sq_out++;
	}
	if (s->imm) {
		s->credits--;
	} else {
		/* the notification: everything the receiver needs, in full */
		struct exs_ctl m = { .type = EXS_CTL_DATA,
				     .flags = (uint8_t)(n->kind << 2 | (n->trunc ? EXS_CTL_F_TRUNC : 0)),
				     .phase = n->phase, .id = n->id, .len = n->len,
				     .seq = n->ring_off, .off = n->off };
		uint8_t buf[EXS_CTL_LEN];
		m.credits = (uint16_t)s->credits_owed;
		trace_ctl(s, "->", &m);
		exs_ctl_encode(&m, buf);
		struct uw_sge cs = { (uintptr_t)buf, EXS_CTL_LEN, 0 };
		struct uw_send_wr sw = { .wr_id = TAG_XFER, .sg_list = &cs, .num_sge = 1,
					 .opcode = UW_WR_SEND,
					 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
		int rc = uw_post_send(s->qp, &sw, NULL);
		if (rc)
			return -rc;
		s->credits_owed = 0;
		s->credits--;
		s->sq_out++;
	}
	s->fl[(s->fl_head + s->fl_count++) % EXS_SQ_DEPTH] = (struct exs_inflight){ op, len };
	return 0;
}

/* ---- setting up ---- */

/* room on the shared CQ for @n connections: it doubles as they come */
static int cq_room(int n)
{
	long need = (long)n * EXS_CONN_CQES;
	long cqe = exs_rt.cq->cqe;
	if (need <= cqe)
		return 0;
	while (cqe < need)
		cqe *= 2;
	if (cqe > EXS_CQ_MAX)
		cqe = EXS_CQ_MAX;
	if (need > cqe)
		return ENOBUFS;
	return uw_resize_cq(exs_rt.cq, (int)cqe);
}

static int qp_setup(struct exs_sock *s, struct uw_cm_id *id)
{
	s->id = id;
	id->context_ptr = s;
	struct uw_qp_init_attr qa = { .qp_context = s, .send_cq = exs_rt.cq, .recv_cq = exs_rt.cq,
				      .cap = { EXS_SQ_DEPTH, EXS_CTL_RECVS, EXS_IOV_MAX, 1, 64 } };
	if (cq_room(exs_rt.nconns + 1))
		return -ENOBUFS; /* the shared CQ holds no more */
	s->qp = uw_cm_create_qp(id, exs_rt.pd, &qa);
	if (s->qp)
		exs_rt.nconns++;
	s->ctl_buf = calloc(EXS_CTL_RECVS, EXS_CTL_LEN);
	s->fl = calloc(EXS_SQ_DEPTH, sizeof(*s->fl));
	if (!s->qp || !s->ctl_buf || !s->fl)
		return -ENOMEM;
	s->ctl_mr = uw_reg_mr(exs_rt.pd, s->ctl_buf, EXS_CTL_RECVS * EXS_CTL_LEN,
			      UW_ACCESS_LOCAL_WRITE);
	if (!s->ctl_mr)
		return -ENOMEM;
	for (unsigned i = 0; i < EXS_CTL_RECVS; i++)
		if (post_ctl_recv(s, i))
			return -ENOMEM;
	if (s->type == SOCK_STREAM) {
		s->ring = aligned_alloc(4096, s->ring_size);
		if (!s->ring)
			return -ENOMEM;
		/* Every socket's QP is in the runtime's one PD (a program's
		 * registered memory serves any socket), so the ring's own
		 * region has no remote rights: the peer reaches it through a
		 * window bound to this QP alone (docs/wire-notes.md, "STags
		 * and isolation"). */
		s->ring_mr = uw_reg_mr(exs_rt.pd, s->ring, s->ring_size,
				       UW_ACCESS_LOCAL_WRITE | UW_ACCESS_MW_BIND);
		s->ring_mw = s->ring_mr ? uw_alloc_mw(exs_rt.pd) : NULL;
		if (!s->ring_mw || uw_bind_mw(s->ring_mw, s->qp, s->ring_mr, s->ring, s->ring_size,
					      UW_ACCESS_REMOTE_WRITE))
			return -ENOMEM;
	} else {
		s->sp_adv = calloc(2 * EXS_MAX_RECVS, sizeof(*s->sp_adv));
		if (!s->sp_adv)
			return -ENOMEM;
	}
	return 0;
}

static void hello_of(const struct exs_sock *s, uint8_t out[EXS_HELLO_LEN])
{
	struct exs_hello h = { .version = 1,
			       .type = s->type == SOCK_STREAM ? EXS_WIRE_STREAM : EXS_WIRE_SEQPACKET,
			       .mode = (uint8_t)s->mode, .credits = EXS_CTL_RECVS };
	if (s->type == SOCK_STREAM && s->flow == EXS_FLOW_CREDIT)
		h.slot_log2 = (uint8_t)__builtin_ctz(s->credit_size);
	if (s->ring) {
		h.ring_stag = s->ring_mw->rkey;
		h.ring_addr = (uintptr_t)s->ring;
		h.ring_size = s->ring_size;
	}
	exs_hello_encode(&h, out);
}

static void take_hello(struct exs_sock *s, const struct exs_hello *h)
{
	s->credits = (int)(h->credits < EXS_CTL_RECVS ? h->credits : EXS_CTL_RECVS);
	s->peer_ring_addr = h->ring_addr;
	s->peer_ring_size = h->ring_size;
	s->peer_ring_stag = h->ring_stag;
	if (s->type == SOCK_STREAM) {
		s->tx.ring_size = h->ring_size;
		s->coal_size = (uint32_t)(h->ring_size / 2 < EXS_COALESCE_BUF ? h->ring_size / 2
									: EXS_COALESCE_BUF);
		if (s->flow == EXS_FLOW_CREDIT)
			exs_sp_tx_slots(&s->tx, s->credit_size);
		/* the peer's sends fill our ring as it said */
		if (h->slot_log2)
			exs_sp_rx_slots(&s->rx, 1u << h->slot_log2);
	}
}

/* The initiator asks for peer-to-peer mode: its RTR is the first FPDU,
 * and MPA lets the responder send only after that (RFC 5044 7.1.2, RFC
 * 6581). Without it a receiver that is the responder could not advertise
 * before the initiator had sent something. */
static struct uw_conn_param conn_param(const struct exs_sock *s, const uint8_t *hello)
{
	return (struct uw_conn_param){ .private_data = hello, .private_data_len = EXS_HELLO_LEN,
				       .crc = s->crc ? UW_CRC_DEFAULT : UW_CRC_OFF,
				       .no_extensions = s->no_imm, .p2p = 1,
				       .mpa_timeout_ms = s->timeout_ms,
				       .idle_timeout_ms = s->idle_ms,
				       .keepalive_s = s->keepalive_s };
}

int exs__connect_setup(struct exs_sock *s, int tcp_fd)
{
	struct uw_cm_id *id = uw_cm_create_id(exs_rt.cm, s);
	if (!id)
		return -errno;
	int rc = qp_setup(s, id);
	if (rc)
		return rc;
	uint8_t hello[EXS_HELLO_LEN];
	hello_of(s, hello);
	struct uw_conn_param p = conn_param(s, hello);
	rc = tcp_fd < 0 ? uw_cm_connect(id, (struct sockaddr *)&s->peer, &p)
			: uw_cm_connect_fd(id, tcp_fd, &p);
	return -rc;
}

/* ---- operations ending ---- */

static void complete_list(struct util_list *l, int err)
{
	struct exs_op *op;
	while ((op = exs__op_pop(l)))
		exs__op_complete(op, err, -1);
}

void exs__fail_ops(struct exs_sock *s, int err)
{
	for (unsigned i = 0; i < s->fl_count; i++)
		s->fl[(s->fl_head + i) % EXS_SQ_DEPTH].op = NULL;
	complete_list(&s->sends, err);
	s->nsends = 0;
	complete_list(&s->accepts, err);
	if (s->connect_op) {
		exs__op_complete(s->connect_op, err, 0);
		s->connect_op = NULL;
	}
	if (s->shut_op) {
		exs__op_complete(s->shut_op, err, 0);
		s->shut_op = NULL;
	}
}

/* Every outstanding receive completes: with @err, or, when @keep is set,
 * with the bytes it already holds (0 at the end of the stream) if it holds
 * any or the stream has ended. */
void exs__end_recvs(struct exs_sock *s, int err, bool keep)
{
	struct exs_op *op;
	bool eof = s->fin_seen || s->shut_rd;
	while ((op = exs__op_pop(&s->recvs))) {
		if (keep && (op->done || eof))
			exs__op_complete(op, 0, (ssize_t)op->done);
		else
			exs__op_complete(op, err, -1);
	}
	s->adv_next = NULL;
	s->nrecvs = 0;
	if (s->type == SOCK_STREAM)
		exs_sp_rx_abandon(&s->rx);
}

/* SHUT_RD or close: receives complete with ECANCELED, except those the
 * peer may still be writing into. A stream's receives stay, all of them,
 * while any has a live advert (the protocol's queue is in order); a
 * message socket's advertised receives stay. Those complete with what
 * they get, or when the connection ends: their memory must not be handed
 * back to the application while the peer holds a key to it. */
void exs__cancel_recvs(struct exs_sock *s)
{
	if (s->st != S_CONNECTED) {
		exs__end_recvs(s, ECANCELED, true);
		return;
	}
	if (s->type == SOCK_STREAM) {
		if (!exs_sp_rx_live_adverts(&s->rx))
			exs__end_recvs(s, ECANCELED, false);
		return;
	}
	/* the advertised ones are a prefix of the list: the rest go */
	for (struct exs_op *op = s->adv_next, *next; op; op = next) {
		next = exs__op_after(&s->recvs, op);
		util_list_del(&op->link);
		s->nrecvs--;
		exs__op_complete(op, ECANCELED, -1);
	}
	s->adv_next = NULL;
}

/* Receives after the connection is gone: what arrived still counts; the
 * end of the stream (a FIN with every byte here) reads as 0 bytes. */
static void finish_recvs(struct exs_sock *s, int err) { exs__end_recvs(s, err, true); }

void exs__recvs_after_close(struct exs_sock *s)
{
	if (s->type == SOCK_STREAM)
		exs__stream_pump(s);
	finish_recvs(s, s->error ? s->error : ECONNRESET);
}

static void connection_gone(struct exs_sock *s, int err)
{
	if (s->st == S_CLOSED)
		return;
	s->st = S_CLOSED;
	if (err && !s->error && !s->fin_seen)
		s->error = err;
	if (s->type == SOCK_STREAM)
		exs__stream_pump(s); /* the ring's data to the receives first */
	exs__fail_ops(s, err ? err : ECONNRESET);
	finish_recvs(s, err ? err : ECONNRESET);
	exs__changed();
}

void exs__abort(struct exs_sock *s, int err)
{
	if (s->closing && s->st == S_CONNECTED && !util_list_empty(&s->sends))
		s->close_err = err; /* sends posted before the close were lost */
	if (s->id && s->st == S_CONNECTED)
		uw_cm_disconnect(s->id);
	if (s->st == S_CONNECTING || s->st == S_CONNECTED)
		connection_gone(s, err);
	else
		s->st = S_CLOSED;
	if (!s->error)
		s->error = err; /* the first cause stays */
	exs__maybe_finish_close(s);
}

void exs__maybe_finish_close(struct exs_sock *s)
{
	if (!s->closing)
		return;
	if (s->st == S_CONNECTED) {
		/* still lingering: sends to finish, the peer's confirmation to
		 * come, a FIN_ACK we owe it, or WRs not yet written (the
		 * disconnection closes the TCP socket at once) */
		if (!util_list_empty(&s->sends) || !s->fin_acked || s->fin_ack_due || s->sq_out)
			return;
		uw_cm_disconnect(s->id);
		s->st = S_CLOSED;
	}
	/* receives kept while the peer could write into them end now */
	exs__end_recvs(s, ECANCELED, true);
	if (s->close_op) {
		exs__op_complete(s->close_op, s->close_err, 0);
		s->close_op = NULL;
	}
	exs__sock_free(s);
}

/* ---- the protocol, common part ---- */

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
	if (s->fin_ack_due && can_ctl(s, false)) {
		struct exs_ctl m = { .type = EXS_CTL_FIN_ACK, .seq = s->fin_seq };
		if (!post_ctl_raw(s, &m))
			s->fin_ack_due = false;
	}
	/* sends are handed out in order: all are when the last one is */
	struct exs_op *last = exs__op_last(&s->sends);
	bool all_assigned = !last || last->posted;
	if (s->wr_shut && !s->fin_sent && all_assigned && can_ctl(s, false)) {
		struct exs_ctl m = { .type = EXS_CTL_FIN, .seq = sent_total(s) };
		if (!post_ctl_raw(s, &m))
			s->fin_sent = true;
	}
	if (s->credits_owed >= EXS_CTL_RECVS / 4 && can_ctl(s, true)) {
		struct exs_ctl m = { .type = EXS_CTL_CREDIT };
		post_ctl_raw(s, &m);
	}
	if (s->fin_seen && !util_list_empty(&s->recvs) &&
	    (s->type == SOCK_SEQPACKET || !exs__stream_readable(s)))
		finish_recvs(s, 0); /* every byte is in: the rest read the end */
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
		if (s->fin_seen || m->seq != arrived_total(s))
			return -EPROTO;
		s->fin_seen = true;
		s->fin_seq = m->seq;
		s->fin_ack_due = true;
		return 0;
	case EXS_CTL_FIN_ACK:
		if (!s->fin_sent || s->fin_acked || m->seq != sent_total(s))
			return -EPROTO;
		s->fin_acked = true;
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

/* ---- completions ---- */

static void on_recv(struct exs_sock *s, struct uw_wc *wc)
{
	unsigned i = (unsigned)(wc->wr_id >> 3);
	int rc;
	if (wc->opcode == UW_WC_RECV_IMM) {
		struct exs_note n;
		rc = exs_imm_unpack(wc->imm_data, &n);
		if (!rc) {
			trace_note(s, "<-", &n);
			rc = on_note(s, &n, false);
		}
	} else {
		struct exs_ctl m;
		rc = exs_ctl_decode(s->ctl_buf + (size_t)i * EXS_CTL_LEN, wc->byte_len, &m);
		if (!rc) {
			trace_ctl(s, "<-", &m);
			s->credits += m.credits;
			if (s->credits > EXS_CTL_RECVS)
				rc = -EPROTO; /* more back than it was ever given */
		}
		if (!rc && m.type == EXS_CTL_DATA) {
			struct exs_note n = { .kind = (enum exs_xfer_kind)((m.flags & EXS_CTL_F_KIND) >> 2),
					      .trunc = (m.flags & EXS_CTL_F_TRUNC) != 0,
					      .len = m.len, .phase = m.phase, .id = m.id,
					      .off = m.off, .ring_off = m.seq };
			rc = on_note(s, &n, true);
		} else if (!rc) {
			rc = on_common_ctl(s, &m);
		}
	}
	if (rc) {
		if (trace)
			fprintf(stderr, "exs %d <- a message that breaks the protocol (%s, %u bytes): abort\n",
				s->fd, wc->opcode == UW_WC_RECV_IMM ? "Immediate Data" : "Send",
				wc->byte_len);
		exs__abort(s, EPROTO);
		return;
	}
	if (post_ctl_recv(s, i)) {
		exs__abort(s, ECONNRESET);
		return;
	}
	s->credits_owed++;
	s->pending = true;
}

static void on_sent(struct exs_sock *s, struct uw_wc *wc)
{
	s->sq_out--;
	if (TAG(wc->wr_id) == TAG_XFER && s->fl_count) {
		struct exs_inflight f = s->fl[s->fl_head];
		s->fl_head = (s->fl_head + 1) % EXS_SQ_DEPTH;
		s->fl_count--;
		struct exs_op *op = f.op;
		if (op && wc->status == UW_WC_SUCCESS) {
			op->done += s->type == SOCK_STREAM ? f.len : op->len;
			/* transfers complete in order: a finished send is the head */
			if (op->done == op->len && op == exs__op_first(&s->sends) && op->posted) {
				util_list_del(&op->link);
				s->nsends--;
				exs__op_complete(op, 0, (ssize_t)op->len);
			}
		}
	}
	if (wc->status != UW_WC_SUCCESS) {
		if (trace)
			fprintf(stderr, "exs %d: a send failed: %s (Terminate %u/%u/%u)\n", s->fd,
				uw_wc_status_str(wc->status), wc->term_layer, wc->term_etype,
				wc->term_ecode);
		if (s->st == S_CONNECTED) /* flushes after the fact say nothing new */
			exs__abort(s, wc_err(s, wc));
		return;
	}
	s->pending = true;
}

/* The protocol runs once per socket after a batch of completions, not
 * after each: a receiver that has seen every notification that came
 * together drains and advertises from the whole picture (an advert sent
 * between two pieces of one send would estimate a position the sender
 * has already passed). */
void exs__progress_pending(void)
{
	/* a socket's progress frees at most that socket (it leaves the table
	 * and its next pointer goes to the graveyard): take next first */
	struct exs_sock *next;
	for (struct exs_sock *s = exs_rt.socks; s; s = next) {
		next = s->next;
		if (s->pending) {
			s->pending = false;
			exs__progress(s);
		}
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
				s->pending = true;
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

/* ---- connection events ---- */

static struct exs_sock *accepted_socket(struct exs_sock *l, struct uw_cm_event *e,
					const struct exs_hello *h)
{
	struct exs_sock *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	exs__sock_init_lists(s);
	s->fd = exs__eventfd();
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	s->type = l->type;
	s->domain = l->domain;
	s->mode = h->mode;
	s->ring_size = l->ring_size;
	s->crc = l->crc;
	s->no_imm = l->no_imm;
	s->flow = l->flow;
	s->credit_size = l->credit_size;
	s->idle_ms = l->idle_ms;
	s->keepalive_s = l->keepalive_s;
	s->st = S_PENDING;
	s->listener = l;
	memcpy(&s->local, &e->id->local_addr, sizeof(s->local));
	memcpy(&s->peer, &e->id->peer_addr, sizeof(s->peer));
	s->next = exs_rt.socks;
	exs_rt.socks = s;
	if (s->type == SOCK_STREAM)
		exs__stream_init(s, s->mode);
	take_hello(s, h);
	return s;
}

static void on_request(struct uw_cm_event *e)
{
	struct exs_sock *l = e->listen_id ? e->listen_id->context_ptr : NULL;
	if (l && l->dead)
		l = NULL; /* closed: its id lives on only for this request */
	struct exs_hello h;
	int want = l && l->type == SOCK_STREAM ? EXS_WIRE_STREAM : EXS_WIRE_SEQPACKET;
	if (!l || l->st != S_LISTENING || exs_hello_decode(e->private_data, e->private_data_len, &h) ||
	    h.type != want || l->nready + l->nhalf >= l->backlog) {
		uw_cm_reject(e->id, "EXS", 3);
		uw_cm_destroy_id(e->id);
		return;
	}
	struct exs_sock *s = accepted_socket(l, e, &h);
	if (!s) {
		uw_cm_reject(e->id, NULL, 0);
		uw_cm_destroy_id(e->id);
		return;
	}
	uint8_t hello[EXS_HELLO_LEN];
	int rc = qp_setup(s, e->id);
	if (!rc) {
		hello_of(s, hello);
		struct uw_conn_param p = conn_param(s, hello);
		rc = uw_cm_accept(e->id, &p);
	}
	if (rc) {
		/* refused at once, not left to the peer's MPA timeout */
		uw_cm_reject(e->id, "EXS", 3);
		exs__sock_free(s);
		return;
	}
	l->nhalf++;
}

socklen_t exs__addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

void exs__complete_accept(struct exs_op *op, const struct exs_sock *s)
{
	exs_event_t ev = { .exs_evt_type = EXS_EVT_ACCEPT };
	ev.exs_evt_union.accept.fd = s->fd;
	ev.exs_evt_union.accept.addr = s->peer;
	ev.exs_evt_union.accept.addrlen = exs__addr_len(&s->peer);
	exs__op_complete_ev(op, &ev);
}

static void on_established(struct exs_sock *s, struct uw_cm_event *e)
{
	s->imm = e->rfc7306 && !s->no_imm;
	if (s->st == S_CONNECTING) {
		struct exs_hello h;
		int want = s->type == SOCK_STREAM ? EXS_WIRE_STREAM : EXS_WIRE_SEQPACKET;
		if (exs_hello_decode(e->private_data, e->private_data_len, &h) || h.type != want) {
			s->st = S_CONNECTED;
			exs__abort(s, EPROTO);
			return;
		}
		take_hello(s, &h);
		s->st = S_CONNECTED;
		memcpy(&s->local, &s->id->local_addr, sizeof(s->local));
		memcpy(&s->peer, &s->id->peer_addr, sizeof(s->peer));
		if (s->connect_op) {
			exs__op_complete(s->connect_op, 0, 0);
			s->connect_op = NULL;
		}
		exs__progress(s);
		return;
	}
	if (s->st != S_PENDING)
		return;
	struct exs_sock *l = s->listener;
	l->nhalf--;
	s->st = S_CONNECTED;
	s->listener = NULL;
	struct exs_op *op = exs__op_pop(&l->accepts);
	if (op) {
		exs__complete_accept(op, s);
	} else {
		/* waits for exs_accept, in arrival order */
		struct exs_sock **pp = &l->ready;
		while (*pp)
			pp = &(*pp)->next_ready;
		*pp = s;
		s->listener = l;
		l->nready++;
	}
	exs__progress(s);
	exs__changed();
}

static void on_failed(struct exs_sock *s, struct uw_cm_event *e)
{
	int err = e->event == UW_CM_EVENT_REJECTED ? ECONNREFUSED
		  : e->status			     ? e->status
						     : ECONNRESET;
	if (s->st == S_PENDING) {
		if (s->listener)
			s->listener->nhalf--;
		s->st = S_CLOSED;
		exs__sock_free(s);
		return;
	}
	if (s->st == S_CONNECTING) {
		s->st = S_CLOSED;
		s->error = err;
		if (s->connect_op) {
			exs__op_complete(s->connect_op, err, 0);
			s->connect_op = NULL;
		}
		exs__maybe_finish_close(s);
		return;
	}
	if (s->closing && !util_list_empty(&s->sends))
		s->close_err = err;
	connection_gone(s, err);
	exs__maybe_finish_close(s);
}

void exs__on_cm(struct uw_cm_event *e)
{
	if (e->event == UW_CM_EVENT_CONNECT_REQUEST) {
		on_request(e);
		uw_cm_ack_event(e);
		return;
	}
	/* a copy: acknowledging frees the event, and the handlers may free
	 * the socket (and destroy the id) */
	struct uw_cm_event ev = *e;
	uint8_t pd[512];
	if (ev.private_data_len > sizeof(pd))
		ev.private_data_len = sizeof(pd);
	if (ev.private_data_len)
		memcpy(pd, e->private_data, ev.private_data_len);
	ev.private_data = pd;
	uw_cm_ack_event(e);
	/* The completions that came before the event count first: a send
	 * that finished is not failed by the disconnection behind it. They
	 * may free sockets, so the event's is looked up afterwards. */
	if (ev.event != UW_CM_EVENT_ESTABLISHED) {
		exs__drain_cq();
		exs__progress_pending();
	}
	struct exs_sock *s = NULL;
	for (struct exs_sock *o = exs_rt.socks; o && !s; o = o->next)
		if (o->id && o->id == ev.id)
			s = o;
	if (!s)
		return;
	if (trace > 0 && ev.event != UW_CM_EVENT_ESTABLISHED)
		fprintf(stderr, "exs %d: %s (%s)%s layer %u type %u code %u%s\n", s->fd,
			uw_cm_event_str(ev.event), strerror(ev.status),
			ev.terminated ? " by a Terminate" : "", ev.term_layer, ev.term_etype,
			ev.term_ecode, ev.term_remote ? " from the peer" : "");
	switch (ev.event) {
	case UW_CM_EVENT_ESTABLISHED:
		on_established(s, &ev);
		break;
	case UW_CM_EVENT_REJECTED:
	case UW_CM_EVENT_CONNECT_ERROR:
	case UW_CM_EVENT_DISCONNECTED:
		on_failed(s, &ev);
		break;
	default:
		break;
	}
}
