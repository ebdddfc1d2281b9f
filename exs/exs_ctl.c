/*
 * exs_ctl.c: an ES-API connection's messages: control messages (adverts,
 * acks, phase changes, credits, FIN and FIN_ACK, exs/exs_wire.h) under the
 * credits that keep the peer's receives from running out, transfers (RDMA
 * Writes with their notification), and the EXS_TRACE log of both.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

/* a one-sided operation's WR names the operation (malloc's alignment
 * leaves the tag's bits free) */
uint64_t exs__onesided_wr_id(struct exs_op *op) { return (uintptr_t)op | TAG_ONESIDED; }

/* the peer's receives a normal message may use: one stays for CREDIT,
 * so that returning credits can never deadlock */
bool exs__ctl_room(const struct exs_sock *s, bool credit_msg)
{
	return s->st == S_CONNECTED && s->credits >= (credit_msg ? 1 : 2) &&
	       s->sq_out + 1 <= EXS_SQ_DEPTH;
}

bool exs__can_xfer(const struct exs_sock *s)
{
	return s->st == S_CONNECTED && s->credits >= 2 && s->sq_out + 2 <= EXS_SQ_DEPTH &&
	       s->fl_count < EXS_SQ_DEPTH;
}

bool exs__can_ctl(const struct exs_sock *s) { return exs__ctl_room(s, false); }

/* EXS_TRACE=1 prints every message each socket sends and receives, in
 * the paper's terms, on stderr */
static _Atomic int trace = -1;

bool exs__tracing(void)
{
	if (trace < 0)
		trace = getenv("EXS_TRACE") != NULL;
	return trace > 0;
}

static const char *const ctl_names[EXS_CTL_MAX_] = {
	[EXS_CTL_ADVERT] = "ADVERT",   [EXS_CTL_ACK] = "ACK",       [EXS_CTL_PHASE] = "PHASE",
	[EXS_CTL_DATA] = "DATA",       [EXS_CTL_CREDIT] = "CREDIT", [EXS_CTL_FIN] = "FIN",
	[EXS_CTL_FIN_ACK] = "FIN_ACK", [EXS_CTL_HOLD] = "HOLD",     [EXS_CTL_IDLE] = "IDLE",
};

void exs__trace_ctl(const struct exs_sock *s, const char *dir, const struct exs_ctl *m)
{
	if (exs__tracing())
		fprintf(stderr,
			"exs %d %s %s phase %u id %u seq %llu off %u len %u%s credits %u stag %#x "
			"addr %#llx\n",
			s->fd, dir, ctl_names[m->type], m->phase, m->id, (unsigned long long)m->seq,
			m->off, m->len,
			(m->flags & EXS_CTL_F_WAITALL) && m->type == EXS_CTL_ADVERT ? " WAITALL"
										    : "",
			m->credits, m->stag, (unsigned long long)m->addr);
}

void exs__trace_note(const struct exs_sock *s, const char *dir, const struct exs_note *n)
{
	static const char *const kinds[] = { "?", "DIRECT", "INDIRECT", "MESSAGE" };
	if (exs__tracing())
		fprintf(stderr, "exs %d %s %s phase %u id %u len %u%s\n", s->fd, dir,
			kinds[n->kind], n->phase, n->id, n->len, n->trunc ? " TRUNC" : "");
}

int exs__post_ctl_recv(struct exs_sock *s, unsigned i)
{
	struct uw_sge sge = { (uintptr_t)(s->ctl_buf + (size_t)i * EXS_CTL_LEN), EXS_CTL_LEN,
			      s->ctl_mr->lkey };
	struct uw_recv_wr wr = { .wr_id = (uint64_t)i << 3 | TAG_CTL_RECV,
				 .sg_list = &sge,
				 .num_sge = 1 };
	return uw_post_recv(s->qp, &wr, NULL);
}

static int post_ctl(struct exs_sock *s, struct exs_ctl *m, bool more);

int exs__post_ctl_raw(struct exs_sock *s, struct exs_ctl *m) { return post_ctl(s, m, false); }

int exs__post_advert(struct exs_sock *s, struct exs_ctl *m, bool more)
{
	if (!exs__ctl_room(s, false))
		return -EAGAIN;
	return post_ctl(s, m, more && exs__may_hold());
}

static int post_ctl(struct exs_sock *s, struct exs_ctl *m, bool more)
{
	uint8_t buf[EXS_CTL_LEN];
	m->credits = (uint16_t)s->credits_owed;
	exs__trace_ctl(s, "->", m);
	exs_ctl_encode(m, buf);
	struct uw_sge sge = { (uintptr_t)buf, EXS_CTL_LEN, 0 };
	struct uw_send_wr wr = { .wr_id = TAG_CTL_SEND,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
	if (more)
		wr.send_flags |= UW_SEND_MORE;
	int rc = uw_post_send(s->qp, &wr, NULL);
	if (rc)
		return -rc;
	if (more)
		exs__held();
	s->credits_owed = 0;
	s->credits--;
	s->sq_out++;
	return 0;
}

int exs__post_ctl(struct exs_sock *s, struct exs_ctl *m)
{
	if (!exs__ctl_room(s, m->type == EXS_CTL_CREDIT))
		return -EAGAIN;
	return exs__post_ctl_raw(s, m);
}

static int post_xfer(struct exs_sock *s, struct uw_sge *sge, int ns, uint32_t len, uint64_t raddr,
		     uint32_t rkey, const struct exs_note *n, struct exs_inflight f);

int exs__post_xfer_buf(struct exs_sock *s, void *buf, uint32_t lkey, uint32_t len, uint64_t raddr,
		       uint32_t rkey, const struct exs_note *n)
{
	struct uw_sge sge = { (uintptr_t)buf, len, lkey };
	return post_xfer(s, &sge, 1, len, raddr, rkey, n,
			 (struct exs_inflight){ .len = len, .sendbuf = true });
}

int exs__op_sges(const struct exs_op *op, size_t off, uint32_t len, struct uw_sge *sge)
{
	int ns = 0;
	size_t left = len;
	for (int i = 0; i < op->iovcnt && left; i++) {
		size_t l = op->iov[i].iov_len;
		if (off >= l) {
			off -= l;
			continue;
		}
		size_t take = l - off < left ? l - off : left;
		sge[ns++] = (struct uw_sge){ (uintptr_t)op->iov[i].iov_base + off, (uint32_t)take,
					     op->lkey[i] };
		left -= take;
		off = 0;
	}
	return ns;
}

int exs__post_xfer(struct exs_sock *s, struct exs_op *op, size_t op_off, uint32_t len,
		   uint64_t raddr, uint32_t rkey, const struct exs_note *n)
{
	struct uw_sge sge[EXS_IOV_MAX];
	int ns = exs__op_sges(op, op_off, len, sge);
	return post_xfer(s, sge, ns, len, raddr, rkey, n, (struct exs_inflight){ op, len, false });
}

static int post_xfer(struct exs_sock *s, struct uw_sge *sge, int ns, uint32_t len, uint64_t raddr,
		     uint32_t rkey, const struct exs_note *n, struct exs_inflight f)
{
	struct uw_send_wr w[2];
	int nw = 0;
	if (s->imm) {
		exs__trace_note(s, "->", n);
		w[nw++] =
			(struct uw_send_wr){ .wr_id = TAG_XFER,
					     .sg_list = sge,
					     .num_sge = ns,
					     .opcode = len ? UW_WR_RDMA_WRITE_WITH_IMM : UW_WR_IMM,
					     .send_flags = UW_SEND_SIGNALED,
					     .imm_data = exs_imm_pack(n),
					     .rdma = { raddr, rkey } };
	} else {
		if (len)
			w[nw++] = (struct uw_send_wr){ .wr_id = TAG_XFER_WRITE,
						       .sg_list = sge,
						       .num_sge = ns,
						       .opcode = UW_WR_RDMA_WRITE,
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
				     .flags = (uint8_t)(n->kind << 2 |
							(n->trunc ? EXS_CTL_F_TRUNC : 0)),
				     .phase = n->phase,
				     .id = n->id,
				     .len = n->len,
				     .seq = n->ring_off,
				     .off = n->off };
		uint8_t buf[EXS_CTL_LEN];
		m.credits = (uint16_t)s->credits_owed;
		exs__trace_ctl(s, "->", &m);
		exs_ctl_encode(&m, buf);
		struct uw_sge cs = { (uintptr_t)buf, EXS_CTL_LEN, 0 };
		struct uw_send_wr sw = { .wr_id = TAG_XFER,
					 .sg_list = &cs,
					 .num_sge = 1,
					 .opcode = UW_WR_SEND,
					 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
		int rc = uw_post_send(s->qp, &sw, NULL);
		if (rc)
			return -rc;
		s->credits_owed = 0;
		s->credits--;
		s->sq_out++;
	}
	s->fl[(s->fl_head + s->fl_count++) % EXS_SQ_DEPTH] = f;
	return 0;
}
