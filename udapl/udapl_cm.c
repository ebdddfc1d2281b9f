/*
 * udapl_cm.c: connections. Service points are listening CM ids; a peer's
 * request becomes a CR and a connection request event; dat_ep_connect
 * and dat_cr_accept drive uwarp's connection manager, and one thread per
 * IA turns its events (and connect timeouts) into DAT connection events.
 * Connection qualifiers are TCP ports as the OpenFabrics provider maps
 * them (ud_qual_port), and a reject carries that provider's 4-byte
 * header before the consumer's private data, so either side may be a
 * DAPL iWARP IA over Linux siw.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "udapl_internal.h"
#include "util/clock.h"

static void set_port(struct sockaddr_storage *ss, unsigned short port)
{
	if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
	else
		((struct sockaddr_in *)ss)->sin_port = htons(port);
}

static unsigned short get_port(const struct sockaddr_storage *ss)
{
	return ntohs(ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port);
}

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

/* a connection event on the EP's connect EVD (under ia->mu) */
static void conn_event(struct ud_ep *ep, DAT_EVENT_NUMBER n, const void *pdata, int len)
{
	if (!ep->conn_evd)
		return;
	if (len > (int)sizeof(ep->pdata))
		len = sizeof(ep->pdata);
	if (len > 0)
		memcpy(ep->pdata, pdata, (size_t)len);
	DAT_EVENT ev = { .event_number = n };
	ev.event_data.connect_event_data =
		(DAT_CONNECTION_EVENT_DATA){ .ep_handle = ep,
					     .private_data_size = len > 0 ? len : 0,
					     .private_data = len > 0 ? ep->pdata : NULL };
	if (!ud_evd_post(ep->conn_evd, &ev) && ep->h.ia->async_evd) {
		DAT_EVENT ov = { .event_number = DAT_ASYNC_ERROR_EVD_OVERFLOW };
		ov.event_data.asynch_error_event_data =
			(DAT_ASYNCH_ERROR_EVENT_DATA){ .dat_handle = ep->conn_evd,
						       .reason = DAT_EVD_OVERFLOW_ERROR };
		ud_evd_post(ep->h.ia->async_evd, &ov);
	}
}

/* ---- the active side ---- */

DAT_RETURN DAT_API ud_ep_connect(DAT_EP_HANDLE h, DAT_IA_ADDRESS_PTR addr, DAT_CONN_QUAL qual,
				 DAT_TIMEOUT timeout, DAT_COUNT plen, const DAT_PVOID pdata,
				 DAT_QOS qos, DAT_CONNECT_FLAGS flags)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	if (!addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return UD_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNSUPPORTED);
	if (timeout == 0)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (plen < 0 || plen > UD_MAX_PDATA || (plen && !pdata))
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	if (qos != DAT_QOS_BEST_EFFORT || flags != DAT_CONNECT_DEFAULT_FLAG)
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_RETURN rc = DAT_SUCCESS;
	if (ep->param.ep_state != DAT_EP_STATE_UNCONNECTED)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED + 0);
	else if (!ep->conn_evd)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_EVD_CONNECT);
	else
		rc = ud_ep_make_qp(ep);
	if (rc != DAT_SUCCESS) {
		pthread_mutex_unlock(&ia->mu);
		return rc;
	}
	struct sockaddr_storage to;
	memset(&to, 0, sizeof(to));
	memcpy(&to, addr, addr_len(addr));
	set_port(&to, ud_qual_port(qual));
	const DAT_EP_ATTR *a = &ep->param.ep_attr;
	struct uw_conn_param p = {
		.private_data = pdata,
		.private_data_len = (uint16_t)plen,
		.ird = (uint16_t)(a->max_rdma_read_in > 0 ? a->max_rdma_read_in : 1),
		.ord = (uint16_t)(a->max_rdma_read_out > 0 ? a->max_rdma_read_out : 1)
	};
	ep->id = uw_cm_create_id(ia->cm, ep);
	int err = ep->id ? uw_cm_attach_qp(ep->id, ep->qp) : ENOMEM;
	if (!err)
		err = uw_cm_connect(ep->id, (struct sockaddr *)&to, &p);
	if (err) {
		if (ep->id) {
			ep->id->context_ptr = NULL;
			uw_cm_destroy_id(ep->id);
			ep->id = NULL;
		}
		pthread_mutex_unlock(&ia->mu);
		return ud_errno(err);
	}
	ep->remote = to;
	ep->param.remote_port_qual = qual;
	ep->param.ep_state = DAT_EP_STATE_ACTIVE_CONNECTION_PENDING;
	ep->flags |= UD_EP_ACTIVE;
	ep->deadline_ms =
		timeout == DAT_TIMEOUT_INFINITE ? 0 : util_now_ms() + (timeout + 999) / 1000;
	pthread_mutex_unlock(&ia->mu);
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_ep_disconnect(DAT_EP_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct ud_ep *ep = h;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	struct ud_ia *ia = ep->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_RETURN rc = DAT_SUCCESS;
	switch (ep->param.ep_state) {
	case DAT_EP_STATE_CONNECTED:
	case DAT_EP_STATE_PASSIVE_CONNECTION_PENDING:
		/* DISCONNECTED comes from the CM when the close is done */
		ep->param.ep_state = DAT_EP_STATE_DISCONNECT_PENDING;
		uw_cm_disconnect(ep->id);
		break;
	case DAT_EP_STATE_ACTIVE_CONNECTION_PENDING:
		/* the attempt is given up */
		ep->id->context_ptr = NULL;
		uw_cm_destroy_id(ep->id);
		ep->id = NULL;
		ep->deadline_ms = 0;
		ep->param.ep_state = DAT_EP_STATE_DISCONNECTED;
		conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED, NULL, 0);
		break;
	case DAT_EP_STATE_DISCONNECT_PENDING:
	case DAT_EP_STATE_DISCONNECTED:
		break; /* already on its way, or there */
	default:
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONNECTED);
	}
	pthread_mutex_unlock(&ia->mu);
	return rc;
}

/* ---- service points ---- */

static DAT_RETURN sp_listen(struct ud_ia *ia, struct ud_sp *sp, DAT_CONN_QUAL qual)
{
	struct sockaddr_storage at = ia->addr;
	set_port(&at, ud_qual_port(qual));
	sp->id = uw_cm_create_id(ia->cm, sp);
	if (!sp->id)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	int err = uw_cm_listen(sp->id, (struct sockaddr *)&at, 128);
	if (err) {
		uw_cm_destroy_id(sp->id);
		sp->id = NULL;
		return err == EADDRINUSE ? UD_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE)
					 : ud_errno(err);
	}
	sp->qual = qual ? qual : get_port(&sp->id->local_addr);
	return DAT_SUCCESS;
}

/* A service point listening on @qual: a PSP, or with @ep an RSP that
 * reserves it */
static DAT_RETURN sp_open(struct ud_ia *ia, struct ud_evd *evd, struct ud_ep *ep,
			  DAT_CONN_QUAL qual, DAT_PSP_FLAGS flags, struct ud_sp **out)
{
	struct ud_sp *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	sp->evd = evd;
	sp->ep = ep;
	sp->flags = flags;
	pthread_mutex_lock(&ia->mu);
	DAT_RETURN rc = ep && ep->param.ep_state != DAT_EP_STATE_UNCONNECTED
				? UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED)
				: sp_listen(ia, sp, qual);
	if (rc != DAT_SUCCESS) {
		pthread_mutex_unlock(&ia->mu);
		free(sp);
		return rc;
	}
	ud_obj_init(ia, &sp->h, ep ? UD_MAGIC_RSP : UD_MAGIC_PSP,
		    ep ? DAT_HANDLE_TYPE_RSP : DAT_HANDLE_TYPE_PSP);
	evd->users++;
	if (ep) {
		ep->rsp = sp;
		ep->param.ep_state = DAT_EP_STATE_RESERVED;
	}
	pthread_mutex_unlock(&ia->mu);
	*out = sp;
	return DAT_SUCCESS;
}

static DAT_RETURN psp_make(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evdh,
			   DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out, DAT_CONN_QUAL *got)
{
	struct ud_ia *ia = h;
	struct ud_evd *evd = evdh;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!ud_valid(evd, UD_MAGIC_EVD) || !(evd->flags & DAT_EVD_CR_FLAG))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (flags != DAT_PSP_CONSUMER_FLAG && flags != DAT_PSP_PROVIDER_FLAG)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	struct ud_sp *sp;
	DAT_RETURN rc = sp_open(ia, evd, NULL, qual, flags, &sp);
	if (rc != DAT_SUCCESS)
		return rc;
	if (got)
		*got = sp->qual;
	*out = sp;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_psp_create(DAT_IA_HANDLE ia, DAT_CONN_QUAL qual, DAT_EVD_HANDLE evd,
				 DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out)
{
	if (!qual)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return psp_make(ia, qual, evd, flags, out, NULL);
}

DAT_RETURN DAT_API ud_psp_create_any(DAT_IA_HANDLE ia, DAT_CONN_QUAL *qual, DAT_EVD_HANDLE evd,
				     DAT_PSP_FLAGS flags, DAT_PSP_HANDLE *out)
{
	if (!qual)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	/* port 0: the kernel picks a free one, and it is the qualifier */
	return psp_make(ia, 0, evd, flags, out, qual);
}

DAT_RETURN DAT_API ud_psp_query(DAT_PSP_HANDLE h, DAT_PSP_PARAM_MASK m, DAT_PSP_PARAM *p)
{
	struct ud_sp *sp = h;
	if (!ud_valid(sp, UD_MAGIC_PSP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	*p = (DAT_PSP_PARAM){ .ia_handle = sp->h.ia,
			      .conn_qual = sp->qual,
			      .evd_handle = sp->evd,
			      .psp_flags = sp->flags };
	return DAT_SUCCESS;
}

void ud_sp_destroy(struct ud_sp *sp)
{
	if (sp->id) {
		sp->id->context_ptr = NULL;
		uw_cm_destroy_id(sp->id);
	}
	/* requests that came through it stay answerable */
	struct ud_obj *o;
	util_list_for_each(o, &sp->h.ia->objs, link)
		if (o->magic == UD_MAGIC_CR && ((struct ud_cr *)o)->sp == sp)
			((struct ud_cr *)o)->sp = NULL;
	if (sp->ep) {
		if (sp->ep->param.ep_state == DAT_EP_STATE_RESERVED)
			sp->ep->param.ep_state = DAT_EP_STATE_UNCONNECTED;
		sp->ep->rsp = NULL;
	}
	sp->evd->users--;
	ud_obj_unlink(&sp->h);
	free(sp);
}

static DAT_RETURN sp_free(struct ud_sp *sp)
{
	struct ud_ia *ia = sp->h.ia;
	pthread_mutex_lock(&ia->mu);
	ud_sp_destroy(sp);
	pthread_mutex_unlock(&ia->mu);
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_psp_free(DAT_PSP_HANDLE h)
{
	if (!ud_valid(h, UD_MAGIC_PSP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PSP);
	return sp_free(h);
}

DAT_RETURN DAT_API ud_rsp_create(DAT_IA_HANDLE h, DAT_CONN_QUAL qual, DAT_EP_HANDLE eph,
				 DAT_EVD_HANDLE evdh, DAT_RSP_HANDLE *out)
{
	struct ud_ia *ia = h;
	struct ud_ep *ep = eph;
	struct ud_evd *evd = evdh;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!ud_valid(ep, UD_MAGIC_EP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	if (!ud_valid(evd, UD_MAGIC_EVD) || !(evd->flags & DAT_EVD_CR_FLAG))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EVD_CR);
	if (!qual)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG5);
	return sp_open(ia, evd, ep, qual, 0, (struct ud_sp **)out);
}

DAT_RETURN DAT_API ud_rsp_query(DAT_RSP_HANDLE h, DAT_RSP_PARAM_MASK m, DAT_RSP_PARAM *p)
{
	struct ud_sp *sp = h;
	if (!ud_valid(sp, UD_MAGIC_RSP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	*p = (DAT_RSP_PARAM){ .ia_handle = sp->h.ia,
			      .conn_qual = sp->qual,
			      .evd_handle = sp->evd,
			      .ep_handle = sp->ep };
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_rsp_free(DAT_RSP_HANDLE h)
{
	if (!ud_valid(h, UD_MAGIC_RSP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RSP);
	return sp_free(h);
}

/* ---- connection requests ---- */

void ud_cr_destroy(struct ud_cr *cr)
{
	if (cr->ep)
		ud_ep_destroy(cr->ep); /* made for the request, which went */
	if (cr->id) {
		cr->id->context_ptr = NULL;
		uw_cm_destroy_id(cr->id);
	}
	ud_obj_unlink(&cr->h);
	free(cr);
}

DAT_RETURN DAT_API ud_cr_query(DAT_CR_HANDLE h, DAT_CR_PARAM_MASK m, DAT_CR_PARAM *p)
{
	struct ud_cr *cr = h;
	if (!ud_valid(cr, UD_MAGIC_CR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	pthread_mutex_lock(&cr->h.ia->mu);
	*p = (DAT_CR_PARAM){ .remote_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&cr->remote,
			     .remote_port_qual = get_port(&cr->remote),
			     .private_data_size = cr->pdata_len,
			     .private_data = cr->pdata_len ? cr->pdata : NULL,
			     .local_ep_handle = cr->ep ? cr->ep
						: cr->sp && cr->sp->h.magic == UD_MAGIC_RSP
							? cr->sp->ep
							: NULL };
	pthread_mutex_unlock(&cr->h.ia->mu);
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_cr_accept(DAT_CR_HANDLE h, DAT_EP_HANDLE eph, DAT_COUNT plen,
				const DAT_PVOID pdata)
{
	struct ud_cr *cr = h;
	struct ud_ep *ep = eph;
	if (!ud_valid(cr, UD_MAGIC_CR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
	if (plen < 0 || plen > UD_MAX_PDATA || (plen && !pdata))
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	struct ud_ia *ia = cr->h.ia;
	pthread_mutex_lock(&ia->mu);
	/* the request's own EP: the RSP's, or the one made for it */
	struct ud_ep *reserved = cr->ep                                      ? cr->ep
				 : cr->sp && cr->sp->h.magic == UD_MAGIC_RSP ? cr->sp->ep
									     : NULL;
	if (!ep)
		ep = reserved;
	DAT_RETURN rc = DAT_SUCCESS;
	if (!ud_valid(ep, UD_MAGIC_EP) || (reserved && ep != reserved))
		rc = UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	else if (ep->param.ep_state == DAT_EP_STATE_UNCONFIGURED_TENTATIVE)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_UNCONFTENTATIVE);
	else if (ep->param.ep_state != DAT_EP_STATE_UNCONNECTED &&
		 ep->param.ep_state != DAT_EP_STATE_RESERVED &&
		 ep->param.ep_state != DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_CONNECTED);
	else if (!ep->conn_evd)
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_EVD_CONNECT);
	else
		rc = ud_ep_make_qp(ep);
	if (rc != DAT_SUCCESS) {
		pthread_mutex_unlock(&ia->mu);
		return rc;
	}
	const DAT_EP_ATTR *a = &ep->param.ep_attr;
	struct uw_conn_param p = {
		.private_data = pdata,
		.private_data_len = (uint16_t)plen,
		.ird = (uint16_t)(a->max_rdma_read_in > 0 ? a->max_rdma_read_in : 1),
		.ord = (uint16_t)(a->max_rdma_read_out > 0 ? a->max_rdma_read_out : 1)
	};
	int err = uw_cm_attach_qp(cr->id, ep->qp);
	if (!err)
		err = uw_cm_accept(cr->id, &p);
	if (err) {
		/* the request is spent: uwarp has closed or refused it (the
		 * EP stays the consumer's, whoever made it) */
		cr->ep = NULL;
		ud_cr_destroy(cr);
		pthread_mutex_unlock(&ia->mu);
		return err == ECONNRESET || err == ECONNREFUSED
			       ? UD_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE)
			       : ud_errno(err);
	}
	ep->id = cr->id;
	ep->id->context_ptr = ep;
	cr->id = NULL;
	ep->remote = cr->remote;
	ep->param.remote_port_qual = get_port(&cr->remote);
	ep->param.local_port_qual = cr->sp ? cr->sp->qual : 0;
	ep->param.ep_state = DAT_EP_STATE_PASSIVE_CONNECTION_PENDING;
	ep->flags &= ~UD_EP_ACTIVE;
	if (reserved && cr->sp && cr->sp->h.magic == UD_MAGIC_RSP) {
		cr->sp->ep = NULL;
		ep->rsp = NULL;
	}
	cr->ep = NULL; /* (the EP is the consumer's from now on) */
	ud_cr_destroy(cr);
	pthread_mutex_unlock(&ia->mu);
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_cr_reject(DAT_CR_HANDLE h, DAT_COUNT plen, const DAT_PVOID pdata)
{
	struct ud_cr *cr = h;
	if (!ud_valid(cr, UD_MAGIC_CR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CR);
	if (plen < 0 || plen > UD_MAX_PDATA || (plen && !pdata))
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	struct ud_ia *ia = cr->h.ia;
	/* DAPL's reject header: a consumer's reject, told apart from a
	 * provider's refusal, with the version of DAT that rejected */
	uint8_t buf[UD_REJ_HDR + UD_MAX_PDATA];
	uint32_t ver = htonl((DAT_VERSION_MAJOR << 24) | (DAT_VERSION_MINOR << 16) | (1 << 8));
	memcpy(buf, &ver, UD_REJ_HDR);
	if (plen)
		memcpy(buf + UD_REJ_HDR, pdata, (size_t)plen);
	pthread_mutex_lock(&ia->mu);
	struct ud_ep *reserved = cr->sp && cr->sp->h.magic == UD_MAGIC_RSP ? cr->sp->ep : NULL;
	if (reserved && reserved->param.ep_state == DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING)
		reserved->param.ep_state = DAT_EP_STATE_RESERVED;
	uw_cm_reject(cr->id, buf, (uint16_t)(UD_REJ_HDR + plen));
	ud_cr_destroy(cr);
	pthread_mutex_unlock(&ia->mu);
	return DAT_SUCCESS;
}

/* ---- the CM thread ---- */

static void on_request(struct ud_ia *ia, struct uw_cm_event *e)
{
	struct ud_sp *sp = e->listen_id ? e->listen_id->context_ptr : NULL;
	struct ud_cr *cr = sp ? calloc(1, sizeof(*cr)) : NULL;
	if (!cr) {
		/* the service point went, or no memory: refuse it */
		e->id->context_ptr = NULL;
		uw_cm_reject(e->id, NULL, 0);
		uw_cm_destroy_id(e->id);
		return;
	}
	cr->sp = sp;
	cr->id = e->id;
	cr->remote = e->id->peer_addr;
	cr->pdata_len = e->private_data_len > sizeof(cr->pdata) ? (DAT_COUNT)sizeof(cr->pdata)
								: e->private_data_len;
	memcpy(cr->pdata, e->private_data, (size_t)cr->pdata_len);
	cr->ird = e->ird;
	cr->ord = e->ord;
	e->id->context_ptr = cr;
	ud_obj_init(ia, &cr->h, UD_MAGIC_CR, DAT_HANDLE_TYPE_CR);
	if (sp->flags == DAT_PSP_PROVIDER_FLAG)
		/* the consumer gives it a PZ and EVDs (dat_ep_modify), then
		 * accepts with it; a reject or a free takes it away */
		cr->ep = ud_ep_for_request(ia);
	DAT_EVENT ev = { .event_number = DAT_CONNECTION_REQUEST_EVENT };
	DAT_CR_ARRIVAL_EVENT_DATA *d = &ev.event_data.cr_arrival_event_data;
	d->local_ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
	d->conn_qual = sp->qual;
	d->cr_handle = cr;
	d->truncate_flag = e->private_data_len > sizeof(cr->pdata) ? DAT_TRUE : DAT_FALSE;
	if (sp->h.magic == UD_MAGIC_RSP) {
		/* a reserved service point takes one request */
		d->sp_handle.rsp_handle = sp;
		if (sp->ep)
			sp->ep->param.ep_state = DAT_EP_STATE_TENTATIVE_CONNECTION_PENDING;
		sp->id->context_ptr = NULL;
		uw_cm_destroy_id(sp->id);
		sp->id = NULL;
	} else {
		d->sp_handle.psp_handle = sp;
	}
	if (!ud_evd_post(sp->evd, &ev)) {
		/* no room for the request: the peer is refused */
		ud_cr_destroy(cr);
	}
}

static void on_conn_event(struct ud_ia *ia, struct uw_cm_event *e)
{
	void *ctx = e->id ? e->id->context_ptr : NULL;
	if (ud_valid(ctx, UD_MAGIC_CR)) {
		/* the peer gave up before the consumer answered: its accept
		 * will fail */
		return;
	}
	struct ud_ep *ep = ctx;
	if (!ud_valid(ep, UD_MAGIC_EP))
		return;
	(void)ia;
	switch (e->event) {
	case UW_CM_EVENT_ESTABLISHED:
		ep->deadline_ms = 0;
		ep->param.ep_state = DAT_EP_STATE_CONNECTED;
		if (ep->flags & UD_EP_ACTIVE) /* the port TCP gave the connection */
			ep->param.local_port_qual = get_port(&e->id->local_addr);
		if (ep->flags & UD_EP_ACTIVE)
			conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, e->private_data,
				   e->private_data_len);
		else
			conn_event(ep, DAT_CONNECTION_EVENT_ESTABLISHED, NULL, 0);
		break;
	case UW_CM_EVENT_REJECTED:
		ep->deadline_ms = 0;
		ep->param.ep_state = DAT_EP_STATE_DISCONNECTED;
		if (e->private_data_len >= UD_REJ_HDR)
			conn_event(ep, DAT_CONNECTION_EVENT_PEER_REJECTED,
				   (const uint8_t *)e->private_data + UD_REJ_HDR,
				   e->private_data_len - UD_REJ_HDR);
		else
			conn_event(ep, DAT_CONNECTION_EVENT_NON_PEER_REJECTED, NULL, 0);
		break;
	case UW_CM_EVENT_CONNECT_ERROR:
		ep->deadline_ms = 0;
		ep->param.ep_state = DAT_EP_STATE_DISCONNECTED;
		if (!(ep->flags & UD_EP_ACTIVE))
			conn_event(ep, DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR, NULL, 0);
		else if (e->status == ETIMEDOUT)
			conn_event(ep, DAT_CONNECTION_EVENT_TIMED_OUT, NULL, 0);
		else
			/* as DAT asks: every other failure to reach the peer */
			conn_event(ep, DAT_CONNECTION_EVENT_UNREACHABLE, NULL, 0);
		break;
	case UW_CM_EVENT_DISCONNECTED: {
		bool asked = ep->param.ep_state == DAT_EP_STATE_DISCONNECT_PENDING;
		bool was = ep->param.ep_state == DAT_EP_STATE_CONNECTED || asked;
		ep->param.ep_state = DAT_EP_STATE_DISCONNECTED;
		if (!was)
			conn_event(ep,
				   ep->flags & UD_EP_ACTIVE
					   ? DAT_CONNECTION_EVENT_UNREACHABLE
					   : DAT_CONNECTION_EVENT_ACCEPT_COMPLETION_ERROR,
				   NULL, 0);
		else if (e->terminated && !asked)
			conn_event(ep, DAT_CONNECTION_EVENT_BROKEN, NULL, 0);
		else
			conn_event(ep, DAT_CONNECTION_EVENT_DISCONNECTED, NULL, 0);
		break;
	}
	default:
		break;
	}
}

/* active connects past their timeout (under ia->mu) */
static void timeouts(struct ud_ia *ia)
{
	uint64_t now = util_now_ms();
	struct ud_obj *o;
	util_list_for_each(o, &ia->objs, link) {
		if (o->magic != UD_MAGIC_EP)
			continue;
		struct ud_ep *ep = (struct ud_ep *)o;
		if (!ep->deadline_ms || now < ep->deadline_ms ||
		    ep->param.ep_state != DAT_EP_STATE_ACTIVE_CONNECTION_PENDING)
			continue;
		ep->deadline_ms = 0;
		if (ep->id) {
			ep->id->context_ptr = NULL;
			uw_cm_destroy_id(ep->id);
			ep->id = NULL;
		}
		ep->param.ep_state = DAT_EP_STATE_DISCONNECTED;
		conn_event(ep, DAT_CONNECTION_EVENT_TIMED_OUT, NULL, 0);
	}
}

/* UWARP_DAT_DEBUG=1: each connection event, as uwarp reported it */
static void trace(const struct uw_cm_event *e)
{
	char term[64] = "";
	if (e->terminated)
		snprintf(term, sizeof(term), ", Terminate %u/%u/0x%02x from %s", e->term_layer,
			 e->term_etype, e->term_ecode, e->term_remote ? "the peer" : "uwarp");
	ud_debug("%s status %d (%s)%s, private data %u bytes", uw_cm_event_str(e->event), e->status,
		 strerror(e->status), term, e->private_data_len);
}

void *ud_cm_thread(void *arg)
{
	struct ud_ia *ia = arg;
	while (!__atomic_load_n(&ia->stopping, __ATOMIC_ACQUIRE)) {
		struct uw_cm_event *e = NULL;
		/* a tenth of a second: connect timeouts, and the IA's close */
		int rc = uw_cm_get_event_timeout(ia->cm, &e, 100);
		pthread_mutex_lock(&ia->mu);
		if (!rc) {
			trace(e);
			if (e->event == UW_CM_EVENT_CONNECT_REQUEST)
				on_request(ia, e);
			else
				on_conn_event(ia, e);
		}
		timeouts(ia);
		pthread_mutex_unlock(&ia->mu);
		if (!rc)
			uw_cm_ack_event(e);
	}
	return NULL;
}
