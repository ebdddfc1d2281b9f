/*
 * exs_setup.c: an ES-API connection's setting up: the QP with its control
 * receives and the shared CQ's room, and the hello each side puts in the
 * MPA private data (what it offers: mode, ring, credits).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

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

int exs__qp_setup(struct exs_sock *s, struct uw_cm_id *id)
{
	s->id = id;
	id->context_ptr = s;
	struct uw_qp_init_attr qa = { .qp_context = s,
				      .send_cq = exs_rt.cq,
				      .recv_cq = exs_rt.cq,
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
		if (exs__post_ctl_recv(s, i))
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

void exs__hello_of(const struct exs_sock *s, uint8_t out[EXS_HELLO_LEN])
{
	struct exs_hello h = { .version = 1,
			       .type = s->type == SOCK_STREAM ? EXS_WIRE_STREAM
							      : EXS_WIRE_SEQPACKET,
			       .mode = (uint8_t)s->mode,
			       .credits = EXS_CTL_RECVS,
			       .features = EXS_FEAT_HOLD };
	if (s->type == SOCK_STREAM && s->flow == EXS_FLOW_CREDIT)
		h.slot_log2 = (uint8_t)__builtin_ctz(s->credit_size);
	if (s->ring) {
		h.ring_stag = s->ring_mw->rkey;
		h.ring_addr = (uintptr_t)s->ring;
		h.ring_size = s->ring_size;
	}
	exs_hello_encode(&h, out);
}

void exs__take_hello(struct exs_sock *s, const struct exs_hello *h)
{
	s->credits = (int)(h->credits < EXS_CTL_RECVS ? h->credits : EXS_CTL_RECVS);
	s->peer_ring_addr = h->ring_addr;
	s->peer_ring_size = h->ring_size;
	s->peer_ring_stag = h->ring_stag;
	s->peer_features = h->features;
	if (s->type == SOCK_STREAM) {
		exs__stream_rules(s); /* (what the peer understands is known now) */
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
struct uw_conn_param exs__conn_param(const struct exs_sock *s, const uint8_t *hello)
{
	return (struct uw_conn_param){ .private_data = hello,
				       .private_data_len = EXS_HELLO_LEN,
				       .crc = s->crc ? UW_CRC_DEFAULT : UW_CRC_OFF,
				       .no_extensions = s->no_imm,
				       .p2p = 1,
				       .mpa_timeout_ms = s->timeout_ms,
				       .idle_timeout_ms = s->idle_ms,
				       .keepalive_s = s->keepalive_s };
}

int exs__connect_setup(struct exs_sock *s, int tcp_fd)
{
	struct uw_cm_id *id = uw_cm_create_id(exs_rt.cm, s);
	if (!id)
		return -errno;
	int rc = exs__qp_setup(s, id);
	if (rc)
		return rc;
	uint8_t hello[EXS_HELLO_LEN];
	exs__hello_of(s, hello);
	struct uw_conn_param p = exs__conn_param(s, hello);
	rc = tcp_fd < 0 ? uw_cm_connect(id, (struct sockaddr *)&s->peer, &p)
			: uw_cm_connect_fd(id, tcp_fd, &p);
	return -rc;
}
