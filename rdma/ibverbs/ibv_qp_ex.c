/*
 * ibv_qp_ex.c: the extended QP (ibv_create_qp_ex with send_ops_flags,
 * ibv_qp_to_qp_ex) and its ibv_wr_* posting calls.
 *
 * The ibv_wr_* calls build a batch between ibv_wr_start and
 * ibv_wr_complete: each request is kept as the ibv_send_wr that
 * ibv_post_send would have been given, so ibv_wr_complete posts them as
 * one chain through the same translation (ibv_post.c). Inline data is
 * copied when it is set, as a device copies it into its queue, so the
 * program may reuse its buffer at once. The builders return nothing:
 * a request uwarp cannot carry makes ibv_wr_complete fail with its errno
 * and post nothing of the batch, and ibv_wr_abort drops the batch.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ibv_internal.h"

static struct uwv_qp *qp_of(struct ibv_qp_ex *x) { return uwv_from(x, struct uwv_qp); }

static void batch_reset(struct uwv_wr_batch *b)
{
	b->n = 0;
	b->nsge = 0;
	b->inl_len = 0;
	b->err = 0;
}

static bool grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return true;
	size_t c = *cap ? *cap : 8;
	while (c < need)
		c *= 2;
	void *n = realloc(*p, c * size);
	if (!n)
		return false;
	*p = n;
	*cap = c;
	return true;
}

/* A new request of the batch, with the QP's wr_id and wr_flags now. */
static struct ibv_send_wr *add(struct ibv_qp_ex *x, enum ibv_wr_opcode op)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	if (b->err)
		return NULL;
	if (!grow((void **)&b->wr, &b->wr_cap, b->n + 1, sizeof(*b->wr)) ||
	    !grow((void **)&b->sge_at, &b->at_cap, b->n + 1, sizeof(*b->sge_at)) ||
	    !grow((void **)&b->inl_at, &b->inl_at_cap, b->n + 1, sizeof(*b->inl_at))) {
		b->err = ENOMEM;
		return NULL;
	}
	struct ibv_send_wr *w = &b->wr[b->n];
	memset(w, 0, sizeof(*w));
	w->wr_id = x->wr_id;
	w->send_flags = x->wr_flags;
	w->opcode = op;
	b->sge_at[b->n] = b->nsge;
	b->inl_at[b->n] = false;
	b->n++;
	return w;
}

/* The batch's last request, for the wr_set_* calls */
static struct ibv_send_wr *last(struct ibv_qp_ex *x)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	if (b->err)
		return NULL;
	if (!b->n) {
		b->err = EINVAL; /* a wr_set_* before any request */
		return NULL;
	}
	return &b->wr[b->n - 1];
}

static void refuse(struct ibv_qp_ex *x, int err, const char *what)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	if (!b->err)
		b->err = uwv_debug(err, "ibv_wr_complete", what);
}

static void wr_send(struct ibv_qp_ex *x) { add(x, IBV_WR_SEND); }

static void wr_send_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct ibv_send_wr *w = add(x, IBV_WR_SEND_WITH_INV);
	if (w)
		w->invalidate_rkey = rkey;
}

static void rdma(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		 __be32 imm)
{
	struct ibv_send_wr *w = add(x, op);
	if (w) {
		w->wr.rdma.rkey = rkey;
		w->wr.rdma.remote_addr = addr;
		w->imm_data = imm;
	}
}

static void wr_rdma_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_WRITE, rkey, addr, 0);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, __be32 imm)
{
	rdma(x, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, addr, imm);
}

static void wr_rdma_read(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr)
{
	rdma(x, IBV_WR_RDMA_READ, rkey, addr, 0);
}

static void atomic(struct ibv_qp_ex *x, enum ibv_wr_opcode op, uint32_t rkey, uint64_t addr,
		   uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *w = add(x, op);
	if (w) {
		w->wr.atomic.rkey = rkey;
		w->wr.atomic.remote_addr = addr;
		w->wr.atomic.compare_add = compare_add;
		w->wr.atomic.swap = swap;
	}
}

static void wr_cmp_swp(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t cmp,
		       uint64_t swap)
{
	atomic(x, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, addr, cmp, swap);
}

static void wr_fetch_add(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, uint64_t add_)
{
	atomic(x, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, addr, add_, 0);
}

static void wr_local_inv(struct ibv_qp_ex *x, uint32_t rkey)
{
	struct ibv_send_wr *w = add(x, IBV_WR_LOCAL_INV);
	if (w)
		w->invalidate_rkey = rkey;
}

static void wr_bind_mw(struct ibv_qp_ex *x, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	struct ibv_send_wr *w = add(x, IBV_WR_BIND_MW);
	if (w) {
		w->bind_mw.mw = mw;
		w->bind_mw.rkey = rkey;
		w->bind_mw.bind_info = *info;
	}
}

static void wr_send_imm(struct ibv_qp_ex *x, __be32 imm)
{
	(void)imm;
	refuse(x, EINVAL,
	       "Send with Immediate: iWARP's Immediate Data (RFC 7306) is a message of its own");
}

static void wr_send_tso(struct ibv_qp_ex *x, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	refuse(x, EOPNOTSUPP, "TSO: an Ethernet offload of UD QPs");
}

static void wr_set_ud_addr(struct ibv_qp_ex *x, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	refuse(x, EOPNOTSUPP, "UD addresses: iWARP has only RC QPs");
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *x, uint32_t srqn)
{
	refuse(x, EOPNOTSUPP, "XRC: an InfiniBand transport");
}

static void wr_atomic_write(struct ibv_qp_ex *x, uint32_t rkey, uint64_t addr, const void *v)
{
	refuse(x, EOPNOTSUPP, "atomic write: not in RFC 7306");
}

/* num SGEs for the last request: stored now, pointed to at completion */
static struct ibv_sge *sges(struct ibv_qp_ex *x, size_t num)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	struct ibv_send_wr *w = last(x);
	if (!w)
		return NULL;
	/* a second wr_set_* replaces the first */
	b->nsge = b->sge_at[b->n - 1];
	if (!grow((void **)&b->sge, &b->sge_cap, b->nsge + num, sizeof(*b->sge))) {
		b->err = ENOMEM;
		return NULL;
	}
	w->num_sge = (int)num;
	b->inl_at[b->n - 1] = false;
	struct ibv_sge *s = &b->sge[b->nsge];
	b->nsge += num;
	return s;
}

static void wr_set_sge(struct ibv_qp_ex *x, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge *s = sges(x, 1);
	if (s)
		*s = (struct ibv_sge){ addr, length, lkey };
}

static void wr_set_sge_list(struct ibv_qp_ex *x, size_t num, const struct ibv_sge *list)
{
	struct ibv_sge *s = sges(x, num);
	if (s && num)
		memcpy(s, list, num * sizeof(*list));
}

/* inline data: copied now into the batch (its offset stands in the SGE's
 * address until completion), the request marked IBV_SEND_INLINE */
static void wr_set_inline_data_list(struct ibv_qp_ex *x, size_t num,
				    const struct ibv_data_buf *bufs)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	size_t total = 0;
	for (size_t i = 0; i < num; i++)
		total += bufs[i].length;
	struct ibv_sge *s = sges(x, 1);
	if (!s)
		return;
	if (!grow((void **)&b->inl, &b->inl_cap, b->inl_len + total, 1)) {
		b->err = ENOMEM;
		return;
	}
	*s = (struct ibv_sge){ b->inl_len, (uint32_t)total, 0 };
	for (size_t i = 0; i < num; i++) {
		memcpy(b->inl + b->inl_len, bufs[i].addr, bufs[i].length);
		b->inl_len += bufs[i].length;
	}
	b->wr[b->n - 1].send_flags |= IBV_SEND_INLINE;
	b->inl_at[b->n - 1] = true;
}

static void wr_set_inline_data(struct ibv_qp_ex *x, void *addr, size_t length)
{
	struct ibv_data_buf d = { addr, length };
	wr_set_inline_data_list(x, 1, &d);
}

static void wr_start(struct ibv_qp_ex *x) { batch_reset(&qp_of(x)->batch); }

static void wr_abort(struct ibv_qp_ex *x) { batch_reset(&qp_of(x)->batch); }

static int wr_complete(struct ibv_qp_ex *x)
{
	struct uwv_wr_batch *b = &qp_of(x)->batch;
	int rc = b->err;
	if (!rc && b->n) {
		for (size_t i = 0; i < b->n; i++) {
			struct ibv_send_wr *w = &b->wr[i];
			w->next = i + 1 < b->n ? &b->wr[i + 1] : NULL;
			w->sg_list = w->num_sge ? &b->sge[b->sge_at[i]] : NULL;
			if (b->inl_at[i])
				w->sg_list[0].addr += (uintptr_t)b->inl;
		}
		struct ibv_send_wr *bad;
		rc = uwv_post_send(&x->qp_base, b->wr, &bad);
	}
	batch_reset(b);
	return rc;
}

int uwv_qp_ex_init(struct uwv_qp *q, uint64_t send_ops)
{
	const uint64_t carried = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				 IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
				 IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				 IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD | IBV_QP_EX_WITH_LOCAL_INV |
				 IBV_QP_EX_WITH_BIND_MW | IBV_QP_EX_WITH_SEND_WITH_INV;
	if (send_ops & ~carried)
		return uwv_debug(EOPNOTSUPP, "ibv_create_qp_ex",
				 "send_ops_flags uwarp has not (Send with Immediate, TSO, atomic "
				 "write)");
	struct ibv_qp_ex *x = &q->qpx;
	x->comp_mask = 0;
	x->wr_atomic_cmp_swp = wr_cmp_swp;
	x->wr_atomic_fetch_add = wr_fetch_add;
	x->wr_bind_mw = wr_bind_mw;
	x->wr_local_inv = wr_local_inv;
	x->wr_rdma_read = wr_rdma_read;
	x->wr_rdma_write = wr_rdma_write;
	x->wr_rdma_write_imm = wr_rdma_write_imm;
	x->wr_send = wr_send;
	x->wr_send_imm = wr_send_imm;
	x->wr_send_inv = wr_send_inv;
	x->wr_send_tso = wr_send_tso;
	x->wr_set_ud_addr = wr_set_ud_addr;
	x->wr_set_xrc_srqn = wr_set_xrc_srqn;
	x->wr_set_inline_data = wr_set_inline_data;
	x->wr_set_inline_data_list = wr_set_inline_data_list;
	x->wr_set_sge = wr_set_sge;
	x->wr_set_sge_list = wr_set_sge_list;
	x->wr_start = wr_start;
	x->wr_complete = wr_complete;
	x->wr_abort = wr_abort;
	x->wr_atomic_write = wr_atomic_write;
	q->ex = true;
	return 0;
}

void uwv_qp_ex_free(struct uwv_qp *q)
{
	free(q->batch.wr);
	free(q->batch.sge_at);
	free(q->batch.inl_at);
	free(q->batch.sge);
	free(q->batch.inl);
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *qp)
{
	struct uwv_qp *q = qp ? uwv_from(qp, struct uwv_qp) : NULL;
	if (!q || !q->ex) {
		errno = EOPNOTSUPP; /* made without IBV_QP_INIT_ATTR_SEND_OPS_FLAGS */
		return NULL;
	}
	return &q->qpx;
}

struct ibv_qp *uwv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (!a || !(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd) {
		errno = EINVAL;
		return NULL;
	}
	if (a->comp_mask & ~known) {
		errno = uwv_debug(EOPNOTSUPP, "ibv_create_qp_ex",
				  "extended attributes other than the PD and send_ops_flags");
		return NULL;
	}
	struct ibv_qp_init_attr ia = {
		.qp_context = a->qp_context,
		.send_cq = a->send_cq,
		.recv_cq = a->recv_cq,
		.srq = a->srq,
		.cap = a->cap,
		.qp_type = a->qp_type,
		.sq_sig_all = a->sq_sig_all,
	};
	struct ibv_qp *qp = ibv_create_qp(a->pd, &ia);
	if (!qp)
		return NULL;
	a->cap = ia.cap;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		int rc = uwv_qp_ex_init(uwv_from(qp, struct uwv_qp), a->send_ops_flags);
		if (rc) {
			ibv_destroy_qp(qp);
			errno = rc;
			return NULL;
		}
	}
	return qp;
}
