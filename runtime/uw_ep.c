/*
 * uw_ep.c: endpoints (uwarp/ep.h), blocking conveniences made only of
 * public verbs and CM calls, so they behave exactly as a program doing the
 * same steps by hand would.
 */
#include <errno.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <uwarp/ep.h>
#include "util/clock.h"

#define EP_PDATA_MAX 512

struct uw_ep {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	struct uw_cq *cq;
	struct uw_qp *qp;
	struct uw_ep *listener; /* the listener this endpoint came from */
	int children;           /* a listener: endpoints taken from it */
	struct uw_qp_cap cap;
	bool has_param;
	struct uw_conn_param param; /* its private data points at pdata */
	uint8_t pdata[EP_PDATA_MAX];
	uint16_t peer_len;
	uint8_t peer[EP_PDATA_MAX];
};

/* Milliseconds left before @deadline (0: none), as a timeout argument. */
static int left_ms(uint64_t deadline)
{
	if (!deadline)
		return -1;
	uint64_t now = util_now_ms();
	return now >= deadline ? 0 : (int)(deadline - now);
}

static void ep_set_attr(struct uw_ep *ep, const struct uw_ep_attr *attr)
{
	static const struct uw_qp_cap def = { 64, 64, 4, 4, 64 };
	ep->cap = attr ? attr->cap : def;
	struct uw_qp_cap *c = &ep->cap;
	c->max_send_wr = c->max_send_wr ? c->max_send_wr : def.max_send_wr;
	c->max_recv_wr = c->max_recv_wr ? c->max_recv_wr : def.max_recv_wr;
	c->max_send_sge = c->max_send_sge ? c->max_send_sge : def.max_send_sge;
	c->max_recv_sge = c->max_recv_sge ? c->max_recv_sge : def.max_recv_sge;
	c->max_inline_data = c->max_inline_data ? c->max_inline_data : def.max_inline_data;
	if (attr && attr->param) {
		/* the caller's parameters may not outlive this call */
		ep->has_param = true;
		ep->param = *attr->param;
		uint16_t n = attr->param->private_data_len;
		if (n > EP_PDATA_MAX)
			n = EP_PDATA_MAX + 1; /* let the CM refuse it: EINVAL */
		else if (n)
			memcpy(ep->pdata, attr->param->private_data, n);
		ep->param.private_data = n <= EP_PDATA_MAX ? ep->pdata : attr->param->private_data;
	}
}

static void keep_peer_data(struct uw_ep *ep, const struct uw_cm_event *e)
{
	ep->peer_len = e->private_data_len <= EP_PDATA_MAX ? e->private_data_len : 0;
	if (ep->peer_len)
		memcpy(ep->peer, e->private_data, ep->peer_len);
}

/* The CQ and, on @id, the QP of an endpoint. */
static int ep_make_qp(struct uw_ep *ep, struct uw_cm_id *id)
{
	int depth = (int)(ep->cap.max_send_wr + ep->cap.max_recv_wr);
	if (!ep->cq && !(ep->cq = uw_create_cq(ep->ctx, depth, ep, NULL)))
		return errno;
	struct uw_qp_init_attr qa = {
		.qp_context = ep, .send_cq = ep->cq, .recv_cq = ep->cq, .cap = ep->cap
	};
	if (!(ep->qp = uw_cm_create_qp(id, ep->pd, &qa)))
		return errno;
	ep->id = id;
	return 0;
}

/* Close the connection and free its id and QP, keeping the CQ. */
static void ep_drop_conn(struct uw_ep *ep)
{
	if (ep->id) {
		uw_cm_destroy_id(ep->id); /* flushes the QP */
		ep->id = NULL;
	}
	if (ep->qp) {
		uw_destroy_qp(ep->qp);
		ep->qp = NULL;
	}
	if (ep->cq) {
		struct uw_wc wc[16];
		while (uw_poll_cq(ep->cq, 16, wc) > 0)
			;
	}
}

static void ep_free(struct uw_ep *ep)
{
	int saved = errno;
	ep_drop_conn(ep);
	if (ep->cq)
		uw_destroy_cq(ep->cq);
	if (ep->ch)
		uw_cm_destroy_channel(ep->ch);
	if (ep->listener) {
		ep->listener->children--;
	} else {
		if (ep->pd)
			uw_dealloc_pd(ep->pd);
		if (ep->ctx)
			uw_close(ep->ctx);
	}
	free(ep);
	errno = saved;
}

/* A fresh endpoint with its own context, or its listener's. */
static struct uw_ep *ep_new(const struct uw_ep_attr *attr, struct uw_ep *listener)
{
	struct uw_ep *ep = calloc(1, sizeof(*ep));
	if (!ep) {
		errno = ENOMEM;
		return NULL;
	}
	if (listener) {
		ep->listener = listener;
		listener->children++;
		ep->ctx = listener->ctx;
		ep->pd = listener->pd;
		ep->cap = listener->cap;
		if (listener->has_param) {
			ep->has_param = true;
			ep->param = listener->param;
			memcpy(ep->pdata, listener->pdata, sizeof(ep->pdata));
			ep->param.private_data = ep->pdata;
		}
	} else {
		ep_set_attr(ep, attr);
		struct uw_context_attr ca = { .progress =
						      attr ? attr->progress : UW_PROGRESS_MANUAL };
		if (!(ep->ctx = uw_open(&ca)) || !(ep->pd = uw_alloc_pd(ep->ctx)))
			goto fail;
	}
	if (!(ep->ch = uw_cm_create_channel(ep->ctx)))
		goto fail;
	return ep;
fail:
	ep_free(ep);
	return NULL;
}

static int resolve(const char *host, const char *port, bool passive, struct addrinfo **res)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : AI_ADDRCONFIG };
	if (!port)
		return EINVAL;
	int rc = getaddrinfo(host, port, &hints, res);
	if (rc == 0)
		return 0;
	return rc == EAI_MEMORY ? ENOMEM : rc == EAI_SYSTEM ? errno : ENOENT;
}

/* Wait on the endpoint's channel for the event that ends a connect or an
 * accept; 0 when established. */
static int wait_established(struct uw_ep *ep, uint64_t deadline)
{
	for (;;) {
		struct uw_cm_event *e;
		int rc = uw_cm_get_event_timeout(ep->ch, &e, left_ms(deadline));
		if (rc)
			return rc;
		enum uw_cm_event_type t = e->event;
		int status = e->status;
		if (t == UW_CM_EVENT_ESTABLISHED && ep->id && e->id == ep->id && !ep->listener)
			keep_peer_data(ep, e);
		uw_cm_ack_event(e);
		switch (t) {
		case UW_CM_EVENT_ESTABLISHED:
			return 0;
		case UW_CM_EVENT_REJECTED:
			return ECONNREFUSED;
		case UW_CM_EVENT_CONNECT_ERROR:
			return status ? status : EPROTO;
		case UW_CM_EVENT_DISCONNECTED:
			return ECONNRESET;
		case UW_CM_EVENT_CONNECT_REQUEST:
			break; /* not on this channel */
		}
	}
}

struct uw_ep *uw_ep_connect(const char *host, const char *port, const struct uw_ep_attr *attr)
{
	struct addrinfo *res;
	int rc = host ? resolve(host, port, false, &res) : EINVAL;
	if (rc) {
		errno = rc;
		return NULL;
	}
	int timeout = attr && attr->timeout_ms ? attr->timeout_ms : 15000;
	uint64_t deadline = timeout > 0 ? util_now_ms() + (uint64_t)timeout : 0;
	struct uw_ep *ep = ep_new(attr, NULL);
	if (!ep) {
		freeaddrinfo(res);
		return NULL;
	}
	rc = ENOENT;
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		struct uw_cm_id *id = uw_cm_create_id(ep->ch, ep);
		if (!id) {
			rc = errno;
			break;
		}
		rc = ep_make_qp(ep, id);
		if (rc) {
			uw_cm_destroy_id(id);
			break;
		}
		/* a timeout the caller gave ends the connection's own MPA
		 * timer too, so a failure says which step did not finish
		 * (ETIMEDOUT: TCP; ETIME: the peer's Reply); the wait allows
		 * its event a moment more */
		struct uw_conn_param p = ep->has_param ? ep->param : (struct uw_conn_param){ 0 };
		if (!p.mpa_timeout_ms && deadline && attr && attr->timeout_ms > 0)
			p.mpa_timeout_ms = left_ms(deadline) ? (unsigned)left_ms(deadline) : 1;
		rc = uw_cm_connect(id, ai->ai_addr, &p);
		if (!rc)
			rc = wait_established(ep, deadline ? deadline + 1000 : 0);
		if (!rc)
			break;
		ep_drop_conn(ep);
		if (rc == ETIMEDOUT || left_ms(deadline) == 0)
			break;
	}
	freeaddrinfo(res);
	if (rc) {
		ep_free(ep);
		errno = rc;
		return NULL;
	}
	return ep;
}

struct uw_ep *uw_ep_listen(const char *host, const char *port, const struct uw_ep_attr *attr)
{
	struct addrinfo *res;
	int rc = resolve(host, port, true, &res);
	if (rc) {
		errno = rc;
		return NULL;
	}
	struct uw_ep *ep = ep_new(attr, NULL);
	if (!ep) {
		freeaddrinfo(res);
		return NULL;
	}
	/* AI_PASSIVE lists the IPv4 wildcard first; the IPv6 one takes IPv4
	 * too, so prefer it when there is one */
	struct addrinfo *pick = res;
	for (struct addrinfo *ai = res; ai && !host; ai = ai->ai_next)
		if (ai->ai_family == AF_INET6)
			pick = ai;
	rc = ENOMEM;
	if ((ep->id = uw_cm_create_id(ep->ch, ep)))
		rc = uw_cm_listen(ep->id, pick->ai_addr, 128);
	freeaddrinfo(res);
	if (rc) {
		ep_free(ep);
		errno = rc;
		return NULL;
	}
	return ep;
}

struct uw_ep *uw_ep_get_request(struct uw_ep *l, int timeout_ms)
{
	if (!l || l->listener || l->qp || !l->id) {
		errno = EINVAL;
		return NULL;
	}
	uint64_t deadline = timeout_ms >= 0 ? util_now_ms() + (uint64_t)timeout_ms : 0;
	for (;;) {
		struct uw_cm_event *e;
		int rc = uw_cm_get_event_timeout(l->ch, &e, left_ms(deadline));
		if (rc) {
			errno = rc;
			return NULL;
		}
		if (e->event != UW_CM_EVENT_CONNECT_REQUEST) {
			/* a request that failed before we took it: nothing to do */
			uw_cm_ack_event(e);
			continue;
		}
		struct uw_cm_id *id = e->id;
		struct uw_ep *ep = ep_new(NULL, l);
		if (ep) {
			keep_peer_data(ep, e);
			if ((rc = uw_cm_migrate_id(id, ep->ch)) || (rc = ep_make_qp(ep, id))) {
				ep->id = id; /* ep_free destroys it */
				uw_cm_ack_event(e);
				ep_free(ep);
				errno = rc;
				return NULL;
			}
			uw_cm_ack_event(e);
			return ep;
		}
		rc = errno;
		uw_cm_reject(id, NULL, 0);
		uw_cm_ack_event(e);
		uw_cm_destroy_id(id);
		errno = rc;
		return NULL;
	}
}

int uw_ep_accept(struct uw_ep *ep, int timeout_ms)
{
	if (!ep || !ep->listener || !ep->qp)
		return EINVAL;
	int rc = uw_cm_accept(ep->id, ep->has_param ? &ep->param : NULL);
	if (rc)
		return rc;
	return wait_established(ep, timeout_ms >= 0 ? util_now_ms() + (uint64_t)timeout_ms : 0);
}

int uw_ep_reject(struct uw_ep *ep, const void *private_data, uint16_t len)
{
	if (!ep || !ep->listener || !ep->qp || uw_qp_get_state(ep->qp) == UW_QPS_RTS)
		return EINVAL;
	int rc = uw_cm_reject(ep->id, private_data, len);
	if (rc)
		return rc;
	ep_free(ep);
	return 0;
}

int uw_ep_wait(struct uw_ep *ep, struct uw_wc *wc, int timeout_ms)
{
	if (!ep || !wc || !ep->cq)
		return -EINVAL;
	int n = uw_poll_cq(ep->cq, 1, wc);
	if (n)
		return n;
	n = uw_cq_wait(ep->cq, 1, timeout_ms);
	if (n < 0)
		return n;
	return uw_poll_cq(ep->cq, 1, wc);
}

int uw_ep_close(struct uw_ep *ep)
{
	if (!ep)
		return EINVAL;
	if (ep->children)
		return EBUSY;
	ep_free(ep);
	return 0;
}

struct uw_context *uw_ep_context(const struct uw_ep *ep) { return ep ? ep->ctx : NULL; }

struct uw_pd *uw_ep_pd(const struct uw_ep *ep) { return ep ? ep->pd : NULL; }

struct uw_cq *uw_ep_cq(const struct uw_ep *ep) { return ep ? ep->cq : NULL; }

struct uw_qp *uw_ep_qp(const struct uw_ep *ep) { return ep ? ep->qp : NULL; }

struct uw_cm_id *uw_ep_id(const struct uw_ep *ep) { return ep ? ep->id : NULL; }

const void *uw_ep_peer_data(const struct uw_ep *ep, uint16_t *len)
{
	uint16_t n = ep ? ep->peer_len : 0;
	if (len)
		*len = n;
	return n ? ep->peer : NULL;
}
