/*
 * ibv_qp.c: reliable connected queue pairs and shared receive queues.
 *
 * An iWARP QP is connected by the connection manager (librdmacm), which
 * moves it to RTS; what a program may do itself is what uwarp's QPs allow
 * (uw_modify_qp): INIT and RESET before a connection, SQD and back, and
 * ERR at any time. Asking for the state the QP is already in succeeds, so
 * rdma-core's RESET -> INIT -> RTR -> RTS sequence made after the
 * connection manager has done its part is harmless.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ibv_internal.h"

enum ibv_qp_state uwv_state_to_ibv(enum uw_qp_state s)
{
	switch (s) {
	case UW_QPS_RESET:
		return IBV_QPS_RESET;
	case UW_QPS_INIT:
		return IBV_QPS_INIT;
	case UW_QPS_RTR:
		return IBV_QPS_RTR;
	case UW_QPS_RTS:
		return IBV_QPS_RTS;
	case UW_QPS_SQD:
		return IBV_QPS_SQD;
	case UW_QPS_ERR:
		return IBV_QPS_ERR;
	}
	return IBV_QPS_ERR;
}

static int state_from_ibv(enum ibv_qp_state s, enum uw_qp_state *out)
{
	switch (s) {
	case IBV_QPS_RESET:
		*out = UW_QPS_RESET;
		return 0;
	case IBV_QPS_INIT:
		*out = UW_QPS_INIT;
		return 0;
	case IBV_QPS_RTR:
		*out = UW_QPS_RTR;
		return 0;
	case IBV_QPS_RTS:
		*out = UW_QPS_RTS;
		return 0;
	case IBV_QPS_SQD:
		*out = UW_QPS_SQD;
		return 0;
	case IBV_QPS_SQE:
	case IBV_QPS_ERR:
		*out = UW_QPS_ERR;
		return 0;
	case IBV_QPS_UNKNOWN:
		break;
	}
	return EINVAL;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	if (!pd || !attr || !attr->send_cq || !attr->recv_cq) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->qp_type != IBV_QPT_RC) {
		errno = uwv_debug(EOPNOTSUPP, "ibv_create_qp", "iWARP has only RC queue pairs");
		return NULL;
	}
	struct uwv_qp *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_qp_init_attr ua = {
		.qp_context = q,
		.send_cq = uwv_from(attr->send_cq, struct uwv_cq)->uw,
		.recv_cq = uwv_from(attr->recv_cq, struct uwv_cq)->uw,
		.srq = attr->srq ? uwv_from(attr->srq, struct uwv_srq)->uw : NULL,
		.cap = {
			/* a receive-only QP (qperf's) still gets one send
			 * slot: uwarp's send queue is never empty; the
			 * caps returned say so, as providers round up */
			.max_send_wr = attr->cap.max_send_wr ? attr->cap.max_send_wr : 1,
			.max_recv_wr = attr->cap.max_recv_wr,
			/* 0 SGEs: uwarp makes it 1, as rdma-core providers do */
			.max_send_sge = attr->cap.max_send_sge,
			.max_recv_sge = attr->cap.max_recv_sge,
			.max_inline_data = attr->cap.max_inline_data,
		},
		.sq_sig_all = attr->sq_sig_all,
	};
	q->uw = uw_create_qp(uwv_from(pd, struct uwv_pd)->uw, &ua);
	if (!q->uw) {
		int e = errno;
		free(q);
		errno = e;
		return NULL;
	}
	if (!attr->cap.max_send_wr)
		attr->cap.max_send_wr = 1;
	q->cap = attr->cap;
	q->sq_sig_all = attr->sq_sig_all;
	q->max_rd_atomic = q->max_dest_rd_atomic = 16; /* uwarp's default IRD and ORD */
	q->ibv.context = pd->context;
	q->ibv.qp_context = attr->qp_context;
	q->ibv.pd = pd;
	q->ibv.send_cq = attr->send_cq;
	q->ibv.recv_cq = attr->recv_cq;
	q->ibv.srq = attr->srq;
	q->ibv.qp_num = q->uw->qp_num;
	q->ibv.state = uwv_state_to_ibv(uw_qp_get_state(q->uw));
	q->ibv.qp_type = IBV_QPT_RC;
	uwv_async_report(pd->context, q->uw, NULL, NULL);
	pthread_mutex_init(&q->ibv.mutex, NULL);
	pthread_cond_init(&q->ibv.cond, NULL);
	uwv_qp_table_add(q);
	return &q->ibv;
}

int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	if (!qp || !attr)
		return EINVAL;
	struct uwv_qp *q = uwv_from(qp, struct uwv_qp);
	if (mask & IBV_QP_CAP)
		return uwv_debug(EINVAL, "ibv_modify_qp",
				 "IBV_QP_CAP: a QP's queues keep their size");
	if (mask & IBV_QP_STATE) {
		enum uw_qp_state want;
		if (state_from_ibv(attr->qp_state, &want))
			return EINVAL;
		enum uw_qp_state now = uw_qp_get_state(q->uw);
		if (want != now) {
			int rc = uw_modify_qp(q->uw, want);
			if (rc)
				return uwv_debug(rc, "ibv_modify_qp",
						 "a transition only the connection manager makes");
		}
		qp->state = uwv_state_to_ibv(uw_qp_get_state(q->uw));
	}
	/* what iWARP's QPs have no use for (port, P_Key, paths, PSNs,
	 * timers) is accepted and kept only where ibv_query_qp says it */
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->access = attr->qp_access_flags;
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = attr->max_rd_atomic;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC)
		q->max_dest_rd_atomic = attr->max_dest_rd_atomic;
	return 0;
}

int ibv_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init)
{
	if (!qp || !attr || !init)
		return EINVAL;
	(void)mask; /* everything is cheap to fill */
	struct uwv_qp *q = uwv_from(qp, struct uwv_qp);
	memset(attr, 0, sizeof(*attr));
	memset(init, 0, sizeof(*init));
	qp->state = uwv_state_to_ibv(uw_qp_get_state(q->uw));
	attr->qp_state = attr->cur_qp_state = qp->state;
	attr->path_mtu = IBV_MTU_4096;
	attr->qp_access_flags = q->access;
	attr->cap = q->cap;
	attr->max_rd_atomic = q->max_rd_atomic;
	attr->max_dest_rd_atomic = q->max_dest_rd_atomic;
	attr->port_num = 1;
	attr->sq_draining = qp->state == IBV_QPS_SQD;
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->cap = q->cap;
	init->qp_type = IBV_QPT_RC;
	init->sq_sig_all = q->sq_sig_all;
	return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp)
{
	if (!qp)
		return EINVAL;
	struct uwv_qp *q = uwv_from(qp, struct uwv_qp);
	uwv_qp_table_remove(q);
	int rc = uw_destroy_qp(q->uw);
	if (rc) {
		uwv_qp_table_add(q);
		return rc;
	}
	pthread_cond_destroy(&qp->cond);
	pthread_mutex_destroy(&qp->mutex);
	uwv_qp_ex_free(q);
	free(q);
	return 0;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	if (!pd || !attr) {
		errno = EINVAL;
		return NULL;
	}
	struct uwv_srq *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_srq_init_attr ua = {
		.srq_context = s,
		.max_wr = attr->attr.max_wr,
		.max_sge = attr->attr.max_sge,
	};
	s->uw = uw_create_srq(uwv_from(pd, struct uwv_pd)->uw, &ua);
	if (!s->uw) {
		int e = errno;
		free(s);
		errno = e;
		return NULL;
	}
	s->attr = attr->attr;
	s->ibv.context = pd->context;
	s->ibv.srq_context = attr->srq_context;
	s->ibv.pd = pd;
	uwv_async_report(pd->context, NULL, NULL, s->uw);
	pthread_mutex_init(&s->ibv.mutex, NULL);
	pthread_cond_init(&s->ibv.cond, NULL);
	return &s->ibv;
}

int ibv_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	if (!srq || !attr || (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	/* uwarp's SRQs keep the size they were made with */
	if (mask & IBV_SRQ_MAX_WR)
		return uwv_debug(EOPNOTSUPP, "ibv_modify_srq", "resizing an SRQ");
	if (mask & IBV_SRQ_LIMIT)
		return uw_modify_srq_limit(uwv_from(srq, struct uwv_srq)->uw, attr->srq_limit);
	return 0;
}

int ibv_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	if (!srq || !attr)
		return EINVAL;
	struct uwv_srq *s = uwv_from(srq, struct uwv_srq);
	*attr = s->attr;
	attr->srq_limit = uw_srq_limit(s->uw); /* 0 again once it fired */
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *srq)
{
	if (!srq)
		return EINVAL;
	struct uwv_srq *s = uwv_from(srq, struct uwv_srq);
	int rc = uw_destroy_srq(s->uw);
	if (rc)
		return rc;
	pthread_cond_destroy(&srq->cond);
	pthread_mutex_destroy(&srq->mutex);
	free(s);
	return 0;
}
