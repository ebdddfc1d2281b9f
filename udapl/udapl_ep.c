/*
 * udapl_ep.c: endpoints and the data transfer operations posted on them.
 * An EP becomes a uwarp queue pair once it has a PZ (at creation, or when
 * dat_ep_modify gives it one); its CM id comes with a connection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "udapl_internal.h"

static DAT_RETURN bad_ep(void) { return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP); }

/* An EP made without attributes may use what the IA offers (as the
 * OpenFabrics provider's do), but for queue depths: 256 each. */
static const DAT_EP_ATTR default_attr = {
	.service_type = DAT_SERVICE_TYPE_RC,
	.max_message_size = UD_MAX_MESSAGE,
	.max_rdma_size = UD_MAX_MESSAGE,
	.qos = DAT_QOS_BEST_EFFORT,
	.recv_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
	.request_completion_flags = DAT_COMPLETION_DEFAULT_FLAG,
	.max_recv_dtos = 256,
	.max_request_dtos = 256,
	.max_recv_iov = UD_MAX_IOV,
	.max_request_iov = UD_MAX_IOV,
	.max_rdma_read_in = UD_MAX_RDMA_READ,
	.max_rdma_read_out = UD_MAX_RDMA_READ,
	.max_rdma_read_iov = UD_MAX_IOV,
	.max_rdma_write_iov = UD_MAX_IOV,
};

/* Is @a within what the provider offers? 0, or the failing DAT error. */
static DAT_RETURN check_attr(const DAT_EP_ATTR *a)
{
	if (a->service_type != DAT_SERVICE_TYPE_RC || a->qos != DAT_QOS_BEST_EFFORT)
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	if (a->max_recv_dtos < 0 || a->max_recv_dtos > UD_MAX_DTOS || a->max_request_dtos < 0 ||
	    a->max_request_dtos > UD_MAX_DTOS || a->max_recv_iov < 0 ||
	    a->max_recv_iov > UD_MAX_IOV || a->max_request_iov < 0 ||
	    a->max_request_iov > UD_MAX_IOV || a->max_rdma_read_in < 0 ||
	    a->max_rdma_read_in > UD_MAX_RDMA_READ || a->max_rdma_read_out < 0 ||
	    a->max_rdma_read_out > UD_MAX_RDMA_READ || a->max_message_size > UD_MAX_MESSAGE ||
	    a->max_rdma_size > UD_MAX_MESSAGE || a->max_rdma_read_iov > UD_MAX_IOV ||
	    a->max_rdma_write_iov > UD_MAX_IOV)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	return DAT_SUCCESS;
}

static bool dto_evd(struct ud_evd *e) { return e && (e->flags & DAT_EVD_DTO_FLAG); }

static int max3(int a, int b, int c)
{
	int m = a > b ? a : b;
	return m > c ? m : c;
}

static int ring_init(struct ud_cring *r, int n, struct ud_ep *ep, bool recv)
{
	r->cap = (uint32_t)(n > 0 ? n : 1);
	r->head = r->tail = 0;
	r->c = calloc(r->cap, sizeof(*r->c));
	if (!r->c)
		return -1;
	for (uint32_t i = 0; i < r->cap; i++) {
		r->c[i].ep = ep;
		r->c[i].recv = recv;
	}
	return 0;
}

DAT_RETURN ud_ep_make_qp(struct ud_ep *ep)
{
	if (ep->qp)
		return DAT_SUCCESS;
	if (!ep->pz)
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_PZ);
	struct ud_ia *ia = ep->h.ia;
	DAT_EP_ATTR *a = &ep->param.ep_attr;
	if (!ep->own_cq && (!ep->recv_evd || !ep->req_evd)) {
		/* a queue the consumer gave no EVD still completes somewhere */
		ep->own_cq = uw_create_cq(ia->ctx, max3(a->max_recv_dtos, a->max_request_dtos, 1),
					  NULL, NULL);
		if (!ep->own_cq)
			return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
	}
	/* a Read into k segments takes k send queue entries (one Read each) */
	uint32_t reads = (uint32_t)max3(a->max_request_iov, a->max_rdma_read_iov, 1);
	uint32_t sq = (uint32_t)(a->max_request_dtos > 0 ? a->max_request_dtos : 1) * reads;
	struct uw_qp_init_attr qa = {
		.qp_context = ep,
		.send_cq = ep->req_evd ? ep->req_evd->cq : ep->own_cq,
		.recv_cq = ep->recv_evd ? ep->recv_evd->cq : ep->own_cq,
		.cap = { .max_send_wr = sq,
			 .max_recv_wr = (uint32_t)(a->max_recv_dtos > 0 ? a->max_recv_dtos : 1),
			 .max_send_sge =
				 (uint32_t)max3(a->max_request_iov, a->max_rdma_write_iov, 1),
			 .max_recv_sge = (uint32_t)(a->max_recv_iov > 0 ? a->max_recv_iov : 1) },
	};
	if (ring_init(&ep->sq, (int)qa.cap.max_send_wr, ep, false) ||
	    ring_init(&ep->rq, (int)qa.cap.max_recv_wr, ep, true)) {
		free(ep->sq.c);
		free(ep->rq.c);
		ep->sq.c = ep->rq.c = NULL;
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	}
	ep->qp = uw_create_qp(ep->pz->pd, &qa);
	if (!ep->qp) {
		free(ep->sq.c);
		free(ep->rq.c);
		ep->sq.c = ep->rq.c = NULL;
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	}
	return DAT_SUCCESS;
}

/* take the EVDs' and PZ's references an EP holds, or give them back */
static void hold(struct ud_ep *ep, int d)
{
	struct ud_evd *e[] = { ep->recv_evd, ep->req_evd, ep->conn_evd };
	for (int i = 0; i < 3; i++)
		if (e[i])
			e[i]->users += d;
	if (ep->pz)
		ep->pz->users += d;
}

DAT_RETURN DAT_API ud_ep_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE recv,
				DAT_EVD_HANDLE req, DAT_EVD_HANDLE conn, const DAT_EP_ATTR *attr,
				DAT_EP_HANDLE *out)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (pz && !ud_valid(pz, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if (recv && (!ud_valid(recv, UD_MAGIC_EVD) || !dto_evd(recv)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if (req && (!ud_valid(req, UD_MAGIC_EVD) || !dto_evd(req)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
	if (conn && (!ud_valid(conn, UD_MAGIC_EVD) ||
		     !(((struct ud_evd *)conn)->flags & DAT_EVD_CONNECTION_FLAG)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG7);
	const DAT_EP_ATTR *a = attr ? attr : &default_attr;
	DAT_RETURN rc = check_attr(a);
	if (rc != DAT_SUCCESS)
		return rc;
	struct ud_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	ep->pz = pz;
	ep->recv_evd = recv;
	ep->req_evd = req;
	ep->conn_evd = conn;
	ep->local = ia->addr;
	ep->param = (DAT_EP_PARAM){ .ia_handle = ia,
				    .ep_state = DAT_EP_STATE_UNCONNECTED,
				    .local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->local,
				    .remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote,
				    .pz_handle = pz,
				    .recv_evd_handle = recv,
				    .request_evd_handle = req,
				    .connect_evd_handle = conn,
				    .ep_attr = *a };
	pthread_mutex_lock(&ia->mu);
	ud_obj_init(ia, &ep->h, UD_MAGIC_EP, DAT_HANDLE_TYPE_EP);
	rc = pz ? ud_ep_make_qp(ep) : DAT_SUCCESS;
	if (rc != DAT_SUCCESS) {
		ud_obj_unlink(&ep->h);
		pthread_mutex_unlock(&ia->mu);
		if (ep->own_cq)
			uw_destroy_cq(ep->own_cq);
		free(ep);
		return rc;
	}
	hold(ep, 1);
	pthread_mutex_unlock(&ia->mu);
	*out = ep;
	return DAT_SUCCESS;
}

struct ud_ep *ud_ep_for_request(struct ud_ia *ia)
{
	struct ud_ep *ep = calloc(1, sizeof(*ep));
	if (!ep)
		return NULL;
	ep->local = ia->addr;
	ep->param = (DAT_EP_PARAM){ .ia_handle = ia,
				    .ep_state = DAT_EP_STATE_UNCONFIGURED_TENTATIVE,
				    .local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->local,
				    .remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ep->remote,
				    .ep_attr = default_attr };
	ud_obj_init(ia, &ep->h, UD_MAGIC_EP, DAT_HANDLE_TYPE_EP);
	return ep;
}

DAT_RETURN DAT_API ud_ep_query(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK m, DAT_EP_PARAM *p)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	pthread_mutex_lock(&ep->h.ia->mu);
	*p = ep->param;
	pthread_mutex_unlock(&ep->h.ia->mu);
	return DAT_SUCCESS;
}

/* the QP and its cookies go (the EP is not connected); under ia->mu */
static void drop_qp(struct ud_ep *ep)
{
	if (!ep->qp)
		return;
	uw_destroy_qp(ep->qp); /* what was posted completes, flushed */
	ep->qp = NULL;
	struct ud_evd *e[] = { ep->recv_evd, ep->req_evd };
	for (int i = 0; i < 2; i++)
		if (e[i])
			ud_evd_purge(e[i], ep);
	if (ep->own_cq) {
		struct uw_wc wc;
		while (uw_poll_cq(ep->own_cq, 1, &wc) == 1)
			;
	}
	free(ep->sq.c);
	free(ep->rq.c);
	ep->sq.c = ep->rq.c = NULL;
}

/*
 * dat_ep_modify: what an unconnected EP may change: its PZ, its EVDs and
 * its attributes. A QP already made is made again for them, so only while
 * nothing is posted on it.
 */
DAT_RETURN DAT_API ud_ep_modify(DAT_EP_HANDLE h, DAT_EP_PARAM_MASK m, const DAT_EP_PARAM *p)
{
	struct ud_ep *ep = h;
	const DAT_EP_PARAM_MASK ok = DAT_EP_FIELD_PZ_HANDLE | DAT_EP_FIELD_RECV_EVD_HANDLE |
				     DAT_EP_FIELD_REQUEST_EVD_HANDLE |
				     DAT_EP_FIELD_CONNECT_EVD_HANDLE | DAT_EP_FIELD_EP_ATTR_ALL;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	if (!p || (m & ~ok))
		return UD_ERR(DAT_INVALID_PARAMETER, p ? DAT_INVALID_ARG2 : DAT_INVALID_ARG3);
	if ((m & DAT_EP_FIELD_PZ_HANDLE) && p->pz_handle && !ud_valid(p->pz_handle, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if ((m & DAT_EP_FIELD_RECV_EVD_HANDLE) && p->recv_evd_handle &&
	    (!ud_valid(p->recv_evd_handle, UD_MAGIC_EVD) || !dto_evd(p->recv_evd_handle)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_RECV);
	if ((m & DAT_EP_FIELD_REQUEST_EVD_HANDLE) && p->request_evd_handle &&
	    (!ud_valid(p->request_evd_handle, UD_MAGIC_EVD) || !dto_evd(p->request_evd_handle)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_REQUEST);
	if ((m & DAT_EP_FIELD_CONNECT_EVD_HANDLE) && p->connect_evd_handle &&
	    (!ud_valid(p->connect_evd_handle, UD_MAGIC_EVD) ||
	     !(((struct ud_evd *)p->connect_evd_handle)->flags & DAT_EVD_CONNECTION_FLAG)))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CONN);
	DAT_EP_ATTR a = ep->param.ep_attr;
	if (m & DAT_EP_FIELD_EP_ATTR_ALL) {
		/* (the mask names single fields; each is taken as given) */
		const DAT_EP_ATTR *n = &p->ep_attr;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_MESSAGE_SIZE)
			a.max_message_size = n->max_message_size;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_SIZE)
			a.max_rdma_size = n->max_rdma_size;
		if (m & DAT_EP_FIELD_EP_ATTR_QOS)
			a.qos = n->qos;
		if (m & DAT_EP_FIELD_EP_ATTR_RECV_COMPLETION_FLAGS)
			a.recv_completion_flags = n->recv_completion_flags;
		if (m & DAT_EP_FIELD_EP_ATTR_REQUEST_COMPLETION_FLAGS)
			a.request_completion_flags = n->request_completion_flags;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RECV_DTOS)
			a.max_recv_dtos = n->max_recv_dtos;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_DTOS)
			a.max_request_dtos = n->max_request_dtos;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RECV_IOV)
			a.max_recv_iov = n->max_recv_iov;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_REQUEST_IOV)
			a.max_request_iov = n->max_request_iov;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IN)
			a.max_rdma_read_in = n->max_rdma_read_in;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_OUT)
			a.max_rdma_read_out = n->max_rdma_read_out;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_READ_IOV)
			a.max_rdma_read_iov = n->max_rdma_read_iov;
		if (m & DAT_EP_FIELD_EP_ATTR_MAX_RDMA_WRITE_IOV)
			a.max_rdma_write_iov = n->max_rdma_write_iov;
		DAT_RETURN rc = check_attr(&a);
		if (rc != DAT_SUCCESS)
			return rc;
	}
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_EP_STATE st = ep->param.ep_state;
	bool tentative = st == DAT_EP_STATE_UNCONFIGURED_TENTATIVE ||
			 st == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
	if (st != DAT_EP_STATE_UNCONNECTED && st != DAT_EP_STATE_UNCONFIGURED_UNCONNECTED &&
	    !tentative) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	}
	if (ep->qp && ep->rq.head != ep->rq.tail) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_RECV_WATERMARK);
	}
	hold(ep, -1);
	drop_qp(ep);
	if (m & DAT_EP_FIELD_PZ_HANDLE)
		ep->pz = p->pz_handle;
	if (m & DAT_EP_FIELD_RECV_EVD_HANDLE)
		ep->recv_evd = p->recv_evd_handle;
	if (m & DAT_EP_FIELD_REQUEST_EVD_HANDLE)
		ep->req_evd = p->request_evd_handle;
	if (m & DAT_EP_FIELD_CONNECT_EVD_HANDLE)
		ep->conn_evd = p->connect_evd_handle;
	ep->param.ep_attr = a;
	ep->param.pz_handle = ep->pz;
	ep->param.recv_evd_handle = ep->recv_evd;
	ep->param.request_evd_handle = ep->req_evd;
	ep->param.connect_evd_handle = ep->conn_evd;
	hold(ep, 1);
	DAT_RETURN rc = ep->pz ? ud_ep_make_qp(ep) : DAT_SUCCESS;
	if (tentative)
		/* a provider's EP for a request: configured, it may accept */
		ep->param.ep_state = ep->qp && ep->conn_evd
					     ? DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING
					     : DAT_EP_STATE_UNCONFIGURED_TENTATIVE;
	pthread_mutex_unlock(&ia->mu);
	return rc;
}

DAT_RETURN DAT_API ud_ep_get_status(DAT_EP_HANDLE h, DAT_EP_STATE *st, DAT_BOOLEAN *recv_idle,
				    DAT_BOOLEAN *req_idle)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	pthread_mutex_lock(&ep->h.ia->mu);
	if (st)
		*st = ep->param.ep_state;
	if (recv_idle)
		*recv_idle = ep->rq.head == ep->rq.tail ? DAT_TRUE : DAT_FALSE;
	if (req_idle)
		*req_idle = ep->sq.head == ep->sq.tail ? DAT_TRUE : DAT_FALSE;
	pthread_mutex_unlock(&ep->h.ia->mu);
	return DAT_SUCCESS;
}

/* the connection and the QP go (under ia->mu) */
static void drop_conn(struct ud_ep *ep)
{
	if (ep->id) {
		ep->id->context_ptr = NULL; /* its events already taken find nothing */
		uw_cm_destroy_id(ep->id);
		ep->id = NULL;
	}
	ep->deadline_ms = 0;
}

void ud_ep_destroy(struct ud_ep *ep)
{
	drop_conn(ep);
	drop_qp(ep);
	if (ep->rsp)
		ep->rsp->ep = NULL;
	struct ud_obj *o;
	util_list_for_each(o, &ep->h.ia->objs, link)
		if (o->magic == UD_MAGIC_CR && ((struct ud_cr *)o)->ep == ep)
			((struct ud_cr *)o)->ep = NULL;
	hold(ep, -1);
	if (ep->own_cq)
		uw_destroy_cq(ep->own_cq);
	ud_obj_unlink(&ep->h);
	free(ep);
}

DAT_RETURN DAT_API ud_ep_free(DAT_EP_HANDLE h)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	/* (a connected EP is disconnected abruptly: DAT allows it) */
	ud_ep_destroy(ep);
	pthread_mutex_unlock(&ia->mu);
	return DAT_SUCCESS;
}

/*
 * dat_ep_reset: a disconnected EP becomes unconnected again, ready for
 * another connection; what was posted is flushed.
 */
DAT_RETURN DAT_API ud_ep_reset(DAT_EP_HANDLE h)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_EP_STATE st = ep->param.ep_state;
	if (st != DAT_EP_STATE_DISCONNECTED && st != DAT_EP_STATE_UNCONNECTED) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	}
	drop_conn(ep);
	DAT_RETURN rc = DAT_SUCCESS;
	if (ep->qp && uw_qp_get_state(ep->qp) != UW_QPS_INIT) {
		/* ERR -> RESET flushes what it held; RESET -> INIT: ready */
		uw_modify_qp(ep->qp, UW_QPS_ERR);
		if (uw_modify_qp(ep->qp, UW_QPS_RESET) || uw_modify_qp(ep->qp, UW_QPS_INIT))
			rc = UD_ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE);
	}
	ep->param.ep_state = DAT_EP_STATE_UNCONNECTED;
	memset(&ep->remote, 0, sizeof(ep->remote));
	ep->param.remote_port_qual = 0;
	pthread_mutex_unlock(&ia->mu);
	return rc;
}

/* ---- data transfer operations ---- */

void ud_ep_cookie_done(struct ud_cookie *c)
{
	struct ud_cring *r = c->recv ? &c->ep->rq : &c->ep->sq;
	uint32_t idx = (uint32_t)(c - r->c);
	/* this one and every older one (in posting order) are done */
	while (r->head != r->tail) {
		uint32_t h = r->head++ % r->cap;
		if (h == idx)
			break;
	}
}

static DAT_RETURN post_errno(int err)
{
	switch (err) {
	case ENOMEM:
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	case EOPNOTSUPP:
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	default:
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_NO_SUBTYPE);
	}
}

enum post_kind { P_SEND, P_RECV, P_WRITE, P_READ };

static const DAT_DTOS dto_of[] = { [P_SEND] = DAT_DTO_SEND,
				   [P_RECV] = DAT_DTO_RECEIVE,
				   [P_WRITE] = DAT_DTO_RDMA_WRITE,
				   [P_READ] = DAT_DTO_RDMA_READ };

/*
 * Post one DTO. A Read into several local segments becomes one Read per
 * segment, each of the matching part of the remote buffer: a Read
 * Request names a single sink. Only the last is signalled; the others are
 * shadows whose failure it reports (Reads complete in order).
 */
static DAT_RETURN post(DAT_EP_HANDLE h, enum post_kind k, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
		       DAT_DTO_COOKIE cookie, const DAT_RMR_TRIPLET *rmr,
		       DAT_COMPLETION_FLAGS flags, DAT_RMR_CONTEXT inval)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return bad_ep();
	const DAT_EP_ATTR *at = &ep->param.ep_attr;
	int max = k == P_RECV   ? at->max_recv_iov
		  : k == P_READ ? max3(at->max_request_iov, at->max_rdma_read_iov, 1)
				: max3(at->max_request_iov, at->max_rdma_write_iov, 0);
	if (n < 0 || n > max || n > UD_MAX_IOV) {
		ud_debug("a DTO of %d segments, the EP takes %d", n, max);
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	}
	if (n && !iov)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if ((k == P_WRITE || k == P_READ) && !rmr)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	struct uw_sge sge[UD_MAX_IOV];
	int ns = 0;
	uint64_t len = 0;
	for (int i = 0; i < n; i++) {
		if (!iov[i].segment_length)
			continue; /* DAT: the other fields may be anything */
		sge[ns++] = (struct uw_sge){ iov[i].virtual_address, iov[i].segment_length,
					     iov[i].lmr_context };
		len += iov[i].segment_length;
	}
	if (len > UD_MAX_MESSAGE || (rmr && len > rmr->segment_length)) {
		ud_debug("a DTO of %llu bytes for a remote segment of %u", (unsigned long long)len,
			 rmr ? rmr->segment_length : 0);
		return UD_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);
	}
	if (k == P_READ && !ns)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	int nwr = k == P_READ ? ns : 1;
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_EP_STATE st = ep->param.ep_state;
	struct ud_cring *r = k == P_RECV ? &ep->rq : &ep->sq;
	DAT_RETURN rc = DAT_SUCCESS;
	if (!ep->qp)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	else if (k != P_RECV && st != DAT_EP_STATE_CONNECTED)
		rc = UD_ERR(DAT_INVALID_STATE, st == DAT_EP_STATE_DISCONNECTED
						       ? DAT_INVALID_STATE_EP_DISCONNECTED
						       : DAT_INVALID_STATE_EP_UNCONNECTED);
	else if (!r->c || r->cap - (r->tail - r->head) < (uint32_t)nwr)
		rc = UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEP);
	if (rc != DAT_SUCCESS) {
		pthread_mutex_unlock(&ia->mu);
		return rc;
	}
	struct ud_cookie *last = &r->c[(r->tail + (uint32_t)nwr - 1) % r->cap];
	int err;
	if (k == P_RECV) {
		*last = (struct ud_cookie){ .user = cookie,
					    .len = (DAT_SEG_LENGTH)len,
					    .op = dto_of[k],
					    .ep = ep,
					    .recv = true };
		struct uw_recv_wr wr = { .wr_id = (uintptr_t)last, .sg_list = sge, .num_sge = ns };
		err = uw_post_recv(ep->qp, &wr, NULL);
		if (!err)
			r->tail++;
		goto out;
	}
	struct uw_send_wr wr[UD_MAX_IOV];
	uint64_t roff = 0;
	for (int i = 0; i < nwr; i++) {
		struct ud_cookie *c = &r->c[(r->tail + (uint32_t)i) % r->cap];
		bool shadow = i < nwr - 1;
		*c = (struct ud_cookie){ .user = cookie,
					 .len = (DAT_SEG_LENGTH)len,
					 .op = dto_of[k],
					 .ep = ep,
					 .shadow = shadow,
					 .final = shadow ? last : NULL };
		wr[i] = (struct uw_send_wr){ .wr_id = (uintptr_t)c,
					     .next = shadow ? &wr[i + 1] : NULL };
		if (k == P_READ) {
			wr[i].opcode = UW_WR_RDMA_READ;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].rdma.remote_addr = rmr->virtual_address + roff;
			roff += sge[i].length;
		} else {
			wr[i].opcode = k == P_WRITE ? UW_WR_RDMA_WRITE
				       : inval      ? UW_WR_SEND_WITH_INV
						    : UW_WR_SEND;
			wr[i].sg_list = sge;
			wr[i].num_sge = ns;
			wr[i].invalidate_rkey = inval;
			if (rmr)
				wr[i].rdma.remote_addr = rmr->virtual_address;
		}
		if (rmr)
			wr[i].rdma.rkey = rmr->rmr_context;
		if (!shadow && !(flags & DAT_COMPLETION_SUPPRESS_FLAG))
			wr[i].send_flags |= UW_SEND_SIGNALED;
		if (flags & DAT_COMPLETION_SOLICITED_WAIT_FLAG)
			wr[i].send_flags |= UW_SEND_SOLICITED;
		if (i == 0 && (flags & DAT_COMPLETION_BARRIER_FENCE_FLAG))
			wr[i].send_flags |= UW_SEND_FENCE;
	}
	struct uw_send_wr *bad = NULL;
	err = uw_post_send(ep->qp, wr, &bad);
	int posted = err ? (int)(bad - wr) : nwr;
	if (err && posted) {
		/* pieces of a Read went before one was refused: what they do
		 * concerns no event (the call fails) */
		for (int i = 0; i < posted; i++)
			r->c[(r->tail + (uint32_t)i) % r->cap] =
				(struct ud_cookie){ .ep = ep, .shadow = true, .final = NULL };
	}
	r->tail += (uint32_t)posted;
out:
	pthread_mutex_unlock(&ia->mu);
	if (err)
		ud_debug("uwarp refused a posted DTO: %s", strerror(err));
	return err ? post_errno(err) : DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_ep_post_send(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				   DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return post(ep, P_SEND, n, iov, c, NULL, f, 0);
}

DAT_RETURN DAT_API ud_ep_post_send_inv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				       DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f, DAT_BOOLEAN inv,
				       DAT_RMR_CONTEXT rmr)
{
	return post(ep, P_SEND, n, iov, c, NULL, f, inv ? rmr : 0);
}

DAT_RETURN DAT_API ud_ep_post_recv(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
				   DAT_DTO_COOKIE c, DAT_COMPLETION_FLAGS f)
{
	return post(ep, P_RECV, n, iov, c, NULL, f, 0);
}

DAT_RETURN DAT_API ud_ep_post_rdma_read(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r,
					DAT_COMPLETION_FLAGS f)
{
	return post(ep, P_READ, n, iov, c, r, f, 0);
}

DAT_RETURN DAT_API ud_ep_post_rdma_write(DAT_EP_HANDLE ep, DAT_COUNT n, DAT_LMR_TRIPLET *iov,
					 DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r,
					 DAT_COMPLETION_FLAGS f)
{
	return post(ep, P_WRITE, n, iov, c, r, f, 0);
}
