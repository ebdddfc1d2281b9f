/*
 * cma_qp.c: the QP of an id (rdma_create_qp), and shared receive queues
 * made on one (rdma_create_srq).
 *
 * As rdma-core does: no PD means the device's default PD; no CQs means
 * CQs of the QP's depths, each with a completion channel, which
 * rdma_destroy_qp ends again. The QP is made with this library's
 * ibv_create_qp and handed to the uwarp id, which moves it through its
 * states as the connection comes up and goes down.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "cma_internal.h"

static pthread_once_t default_pd_once = PTHREAD_ONCE_INIT;
static struct ibv_pd *default_pd;

static void default_pd_make(void)
{
	struct ibv_context *v = ucm_verbs();
	if (v)
		default_pd = ibv_alloc_pd(v);
}

static struct ibv_pd *pd_of(struct rdma_cm_id *id, struct ibv_pd *pd)
{
	if (pd)
		return pd;
	if (id->pd)
		return id->pd;
	pthread_once(&default_pd_once, default_pd_make);
	return default_pd;
}

static void free_cqs(struct rdma_cm_id *id)
{
	if (id->recv_cq && id->recv_cq != id->send_cq)
		ibv_destroy_cq(id->recv_cq);
	if (id->send_cq)
		ibv_destroy_cq(id->send_cq);
	if (id->recv_cq_channel && id->recv_cq_channel != id->send_cq_channel)
		ibv_destroy_comp_channel(id->recv_cq_channel);
	if (id->send_cq_channel)
		ibv_destroy_comp_channel(id->send_cq_channel);
	id->send_cq = id->recv_cq = NULL;
	id->send_cq_channel = id->recv_cq_channel = NULL;
}

static int make_cq(struct rdma_cm_id *id, int depth, struct ibv_comp_channel **ch,
		   struct ibv_cq **cq)
{
	*ch = ibv_create_comp_channel(id->verbs);
	if (!*ch)
		return -1;
	*cq = ibv_create_cq(id->verbs, depth > 0 ? depth : 1, id, *ch, 0);
	return *cq ? 0 : -1;
}

int rdma_create_qp_ex(struct rdma_cm_id *id, struct ibv_qp_init_attr_ex *attr)
{
	if (!id || !attr || !id->verbs)
		return ucm_err(EINVAL);
	if (id->qp)
		return ucm_err(EBUSY);
	struct ucm_id *u = ucm_of(id);
	unsigned known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	if (attr->comp_mask & ~known)
		return ucm_err(
			uwv_debug(EOPNOTSUPP, "rdma_create_qp_ex",
				  "extended attributes other than the PD and send_ops_flags"));
	struct ibv_pd *pd = pd_of(id, attr->comp_mask & IBV_QP_INIT_ATTR_PD ? attr->pd : NULL);
	if (!pd)
		return -1;
	/* one create for both kinds: rdma-core's inline ibv_create_qp_ex
	 * takes a PD-only request to ibv_create_qp, one with send_ops_flags
	 * to the device's extended create (the ibv_wr_* calls) */
	struct ibv_qp_init_attr_ex a = *attr;
	a.srq = attr->srq ? attr->srq : id->srq;
	a.pd = pd;
	a.comp_mask |= IBV_QP_INIT_ATTR_PD;
	u->own_cqs = false;
	if (!a.send_cq) {
		if (make_cq(id, (int)a.cap.max_send_wr, &id->send_cq_channel, &id->send_cq))
			goto fail;
		a.send_cq = id->send_cq;
		u->own_cqs = true;
	}
	if (!a.recv_cq) {
		if (make_cq(id, (int)a.cap.max_recv_wr, &id->recv_cq_channel, &id->recv_cq))
			goto fail;
		a.recv_cq = id->recv_cq;
		u->own_cqs = true;
	}
	struct ibv_qp *qp = ibv_create_qp_ex(pd->context, &a);
	if (!qp)
		goto fail;
	int rc = uw_cm_attach_qp(u->uw, uwv_from(qp, struct uwv_qp)->uw);
	if (rc) {
		ibv_destroy_qp(qp);
		errno = rc;
		goto fail;
	}
	attr->cap = a.cap;
	id->qp = qp;
	/* rdma_verbs.h's helpers (rdma_reg_msgs, ...) register in id->pd */
	if (!id->pd)
		id->pd = pd;
	return 0;
fail:;
	int e = errno ? errno : ENOMEM;
	if (u->own_cqs)
		free_cqs(id);
	u->own_cqs = false;
	return ucm_err(e);
}

int rdma_create_qp(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!attr)
		return ucm_err(EINVAL);
	struct ibv_qp_init_attr_ex x = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	if (!pd && id)
		x.pd = pd_of(id, NULL);
	int rc = rdma_create_qp_ex(id, &x);
	if (!rc)
		attr->cap = x.cap;
	return rc;
}

void rdma_destroy_qp(struct rdma_cm_id *id)
{
	if (!id || !id->qp)
		return;
	ibv_destroy_qp(id->qp);
	id->qp = NULL;
	struct ucm_id *u = ucm_of(id);
	if (u->own_cqs)
		free_cqs(id);
	u->own_cqs = false;
}

int rdma_create_srq_ex(struct rdma_cm_id *id, struct ibv_srq_init_attr_ex *attr)
{
	if (!id || !attr || !id->verbs)
		return ucm_err(EINVAL);
	if (attr->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD) ||
	    ((attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) && attr->srq_type != IBV_SRQT_BASIC))
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_create_srq_ex", "only basic SRQs"));
	struct ibv_pd *pd = pd_of(id, attr->comp_mask & IBV_SRQ_INIT_ATTR_PD ? attr->pd : NULL);
	if (!pd)
		return -1;
	struct ibv_srq_init_attr a = { .srq_context = attr->srq_context, .attr = attr->attr };
	struct ibv_srq *srq = ibv_create_srq(pd, &a);
	if (!srq)
		return -1;
	id->srq = srq;
	return 0;
}

int rdma_create_srq(struct rdma_cm_id *id, struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!attr)
		return ucm_err(EINVAL);
	struct ibv_srq_init_attr_ex x = {
		.srq_context = attr->srq_context,
		.attr = attr->attr,
		.comp_mask = IBV_SRQ_INIT_ATTR_PD,
		.pd = pd,
	};
	if (!pd && id)
		x.pd = pd_of(id, NULL);
	return rdma_create_srq_ex(id, &x);
}

void rdma_destroy_srq(struct rdma_cm_id *id)
{
	if (!id || !id->srq)
		return;
	ibv_destroy_srq(id->srq);
	id->srq = NULL;
}
