/*
 * uw_async.c: asynchronous event channels. A third use of the channel
 * type (uw_channel.c): a queue under the context lock with a descriptor
 * poll sees readable while it is not empty. Its events are nodes inside
 * the QPs, CQs and SRQs that raised them, one per kind, so raising never
 * allocates and an object that goes takes its waiting events with it.
 */
#include <errno.h>
#include <stddef.h>

#include "uw_internal.h"

struct uw_async_channel *uw_create_async_channel(struct uw_context *ctx)
{
	struct uw_async_impl *ch =
		uw__chan_create(ctx, sizeof(*ch), offsetof(struct uw_async_impl, ch));
	return ch ? &ch->pub : NULL;
}

int uw_destroy_async_channel(struct uw_async_channel *ch)
{
	return uw__chan_destroy(ch, offsetof(struct uw_async_impl, ch), false);
}

void uw__async_raise(struct uw_async_impl *ch, struct uw__async_node *n,
		     enum uw_async_event_type type)
{
	if (!ch || n->queued)
		return;
	n->ev.type = type;
	n->queued = true;
	uw__chan_push(&ch->ch, &n->link);
	uw__notify(ch->pub.context);
}

void uw__async_drop(struct uw_async_impl *ch, struct uw__async_node *n)
{
	if (!ch || !n->queued)
		return;
	util_list_del(&n->link);
	n->queued = false;
	uw__chan_settle(&ch->ch);
}

void uw__async_move(struct uw_async_impl **at, struct uw_async_impl *to,
		    struct uw__async_node *const *nodes, int n)
{
	if (*at == to)
		return;
	for (int i = 0; i < n; i++) {
		bool was = nodes[i]->queued;
		uw__async_drop(*at, nodes[i]);
		if (was)
			uw__async_raise(to, nodes[i], nodes[i]->ev.type);
	}
	if (*at)
		(*at)->ch.users--;
	if (to)
		to->ch.users++;
	*at = to;
}

int uw_async_report(struct uw_async_channel *c, struct uw_qp *q, struct uw_cq *cq_pub,
		    struct uw_srq *s)
{
	struct uw_async_impl *ch = (struct uw_async_impl *)c;
	struct uw_context *ctx = c        ? c->context
				 : q      ? q->context
				 : cq_pub ? cq_pub->context
				 : s      ? s->context
					  : NULL;
	if (!ctx || (q && q->context != ctx) || (cq_pub && cq_pub->context != ctx) ||
	    (s && s->context != ctx))
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (q) {
		struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
		struct uw__async_node *nodes[] = { &qp->async_err, &qp->async_last };
		uw__async_move(&qp->async, ch, nodes, 2);
	}
	if (cq_pub) {
		struct uw_cq_impl *cq = (struct uw_cq_impl *)cq_pub;
		struct uw__async_node *nodes[] = { &cq->async_err };
		uw__async_move(&cq->async, ch, nodes, 1);
	}
	if (s) {
		struct uw_srq_impl *srq = (struct uw_srq_impl *)s;
		struct uw__async_node *nodes[] = { &srq->async_limit };
		uw__async_move(&srq->async, ch, nodes, 1);
	}
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int uw_get_async_event(struct uw_async_channel *c, struct uw_async_event *ev, int timeout_ms)
{
	struct uw_async_impl *ch = (struct uw_async_impl *)c;
	if (!ch || !ev)
		return EINVAL;
	struct uw_context *ctx = c->context;
	int err = 0;
	pthread_mutex_lock(&ctx->lock);
	struct util_list *l = uw__chan_take(&ch->ch, ctx, timeout_ms, &err);
	if (l) {
		struct uw__async_node *n = util_container_of(l, struct uw__async_node, link);
		n->queued = false;
		*ev = n->ev;
	}
	pthread_mutex_unlock(&ctx->lock);
	return l ? 0 : err;
}

const char *uw_async_event_str(enum uw_async_event_type type)
{
	switch (type) {
	case UW_EVENT_QP_FATAL:
		return "QP fatal error";
	case UW_EVENT_QP_REQ_ERR:
		return "QP invalid request error";
	case UW_EVENT_QP_ACCESS_ERR:
		return "QP access error";
	case UW_EVENT_QP_LAST_WQE_REACHED:
		return "last WQE reached";
	case UW_EVENT_CQ_ERR:
		return "CQ error";
	case UW_EVENT_SRQ_LIMIT_REACHED:
		return "SRQ limit reached";
	}
	return "unknown";
}
