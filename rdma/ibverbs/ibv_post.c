/*
 * ibv_post.c: posting work requests, called through context->ops by
 * rdma-core's inline ibv_post_send, ibv_post_recv and ibv_post_srq_recv.
 *
 * ibverbs' requests are translated into uwarp's in batches on the stack
 * and posted with one uwarp call per batch, so a chain costs one lock
 * round, not one per request. The scatter/gather entries are the same
 * three fields in the same order in both APIs and are passed as they are.
 */
#include <assert.h>
#include <errno.h>
#include <stddef.h>

#include "ibv_internal.h"

static_assert(sizeof(struct ibv_sge) == sizeof(struct uw_sge), "sge layout");
static_assert(offsetof(struct ibv_sge, addr) == offsetof(struct uw_sge, addr), "sge addr");
static_assert(offsetof(struct ibv_sge, length) == offsetof(struct uw_sge, length), "sge length");
static_assert(offsetof(struct ibv_sge, lkey) == offsetof(struct uw_sge, lkey), "sge lkey");

#define UWV_BATCH 32

/* One ibverbs send request as uwarp's; EINVAL for what iWARP has not. */
static int send_to_uw(const struct ibv_send_wr *w, struct uw_send_wr *u)
{
	*u = (struct uw_send_wr){
		.wr_id = w->wr_id,
		.sg_list = (struct uw_sge *)(void *)w->sg_list,
		.num_sge = w->num_sge,
	};
	unsigned known = IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED | IBV_SEND_INLINE;
	if (w->send_flags & ~known)
		return uwv_debug(EINVAL, "ibv_post_send", "a send flag iWARP has not (IP_CSUM)");
	if (w->send_flags & IBV_SEND_FENCE)
		u->send_flags |= UW_SEND_FENCE;
	if (w->send_flags & IBV_SEND_SIGNALED)
		u->send_flags |= UW_SEND_SIGNALED;
	if (w->send_flags & IBV_SEND_SOLICITED)
		u->send_flags |= UW_SEND_SOLICITED;
	if (w->send_flags & IBV_SEND_INLINE)
		u->send_flags |= UW_SEND_INLINE;
	switch (w->opcode) {
	case IBV_WR_SEND:
		u->opcode = UW_WR_SEND;
		return 0;
	case IBV_WR_SEND_WITH_INV:
		u->opcode = UW_WR_SEND_WITH_INV;
		u->invalidate_rkey = w->invalidate_rkey;
		return 0;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
	case IBV_WR_RDMA_READ:
		u->opcode = w->opcode == IBV_WR_RDMA_WRITE  ? UW_WR_RDMA_WRITE
			    : w->opcode == IBV_WR_RDMA_READ ? UW_WR_RDMA_READ
							    : UW_WR_RDMA_WRITE_WITH_IMM;
		u->rdma.remote_addr = w->wr.rdma.remote_addr;
		u->rdma.rkey = w->wr.rdma.rkey;
		/* 32 bits in network order: RFC 7306's Immediate Data
		 * carries it in its low half (uwarp peers) */
		if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM)
			u->imm_data = be32toh(w->imm_data);
		return 0;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		u->opcode = w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ? UW_WR_ATOMIC_CMP_SWAP
								   : UW_WR_ATOMIC_FETCH_ADD;
		u->atomic.remote_addr = w->wr.atomic.remote_addr;
		u->atomic.rkey = w->wr.atomic.rkey;
		u->atomic.compare_add = w->wr.atomic.compare_add;
		u->atomic.swap = w->wr.atomic.swap;
		return 0;
	case IBV_WR_LOCAL_INV:
		u->opcode = UW_WR_LOCAL_INV;
		u->invalidate_rkey = w->invalidate_rkey;
		return 0;
	case IBV_WR_SEND_WITH_IMM:
		return uwv_debug(
			EINVAL, "ibv_post_send",
			"Send with Immediate: iWARP's Immediate Data (RFC 7306) is a message "
			"of its own");
	case IBV_WR_BIND_MW:
		/* type 1 windows are bound with ibv_bind_mw (rdma-core's rule) */
		if (!w->bind_mw.mw || w->bind_mw.mw->type != IBV_MW_TYPE_2)
			return uwv_debug(EINVAL, "ibv_post_send",
					 "IBV_WR_BIND_MW of a window that is not type 2");
		return uwv_bind_to_uw(w->bind_mw.mw, w->bind_mw.rkey, &w->bind_mw.bind_info, u,
				      "ibv_post_send");
	case IBV_WR_TSO:
	case IBV_WR_DRIVER1:
	case IBV_WR_ATOMIC_WRITE:
		break;
	}
	return uwv_debug(EINVAL, "ibv_post_send",
			 "an opcode uwarp has not (TSO, atomic write, ...)");
}

int uwv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct uw_qp *uq = uwv_from(qp, struct uwv_qp)->uw;
	struct uw_send_wr u[UWV_BATCH];
	struct ibv_send_wr *from[UWV_BATCH];
	while (wr) {
		int n = 0, bad_rc = 0;
		bool binds = false;
		for (; wr && n < UWV_BATCH; wr = wr->next, n++) {
			bad_rc = send_to_uw(wr, &u[n]);
			if (bad_rc)
				break;
			binds |= u[n].opcode == UW_WR_BIND_MW;
			from[n] = wr;
			u[n].next = NULL;
			if (n)
				u[n - 1].next = &u[n];
		}
		if (n) {
			struct uw_send_wr *ubad = NULL;
			int rc = uw_post_send(uq, u, &ubad);
			int done = rc ? (ubad ? (int)(ubad - u) : 0) : n;
			/* a window's new rkey, as the program asked, once posted */
			for (int i = 0; binds && i < done; i++)
				if (u[i].opcode == UW_WR_BIND_MW)
					from[i]->bind_mw.mw->rkey = u[i].bind.mw->rkey;
			if (rc) {
				*bad = from[done];
				return rc;
			}
		}
		if (bad_rc) {
			*bad = wr;
			return bad_rc;
		}
	}
	return 0;
}

static int post_recv_list(struct uw_qp *uq, struct uw_srq *us, struct ibv_recv_wr *wr,
			  struct ibv_recv_wr **bad)
{
	struct uw_recv_wr u[UWV_BATCH];
	struct ibv_recv_wr *from[UWV_BATCH];
	while (wr) {
		int n = 0;
		for (; wr && n < UWV_BATCH; wr = wr->next, n++) {
			u[n] = (struct uw_recv_wr){
				.wr_id = wr->wr_id,
				.sg_list = (struct uw_sge *)(void *)wr->sg_list,
				.num_sge = wr->num_sge,
			};
			from[n] = wr;
			if (n)
				u[n - 1].next = &u[n];
		}
		struct uw_recv_wr *ubad = NULL;
		int rc = uq ? uw_post_recv(uq, u, &ubad) : uw_post_srq_recv(us, u, &ubad);
		if (rc) {
			*bad = ubad ? from[ubad - u] : from[0];
			return rc;
		}
	}
	return 0;
}

int uwv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_list(uwv_from(qp, struct uwv_qp)->uw, NULL, wr, bad);
}

int uwv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_list(NULL, uwv_from(srq, struct uwv_srq)->uw, wr, bad);
}
