/*
 * cm_id.c: connection manager ids: made on a channel, moved to another with
 * their queued events, given a QP, and destroyed (closing what they hold,
 * and dropping their events that were never taken).
 */
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include "uw_internal.h"

struct uw_cm_id_impl *uw__cm_id_new(struct uw_cm_channel_impl *ch, void *context)
{
	struct uw_cm_id_impl *id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->pub.context = ch->pub.context;
	id->pub.channel = &ch->pub;
	id->pub.context_ptr = context;
	id->ch = ch;
	id->listen_fd = -1;
	id->refs = 1;
	id->tos = -1;
	ch->ch.users++;
	ch->pub.context->nobjects++;
	return id;
}

void uw__cm_id_put(struct uw_cm_id_impl *id)
{
	if (--id->refs)
		return;
	id->ch->ch.users--;
	id->pub.context->nobjects--;
	free(id);
}

struct uw_cm_id *uw_cm_create_id(struct uw_cm_channel *c, void *context)
{
	if (!c) {
		errno = EINVAL;
		return NULL;
	}
	pthread_mutex_lock(&c->context->lock);
	struct uw_cm_id_impl *id = uw__cm_id_new((struct uw_cm_channel_impl *)c, context);
	pthread_mutex_unlock(&c->context->lock);
	if (!id)
		errno = ENOMEM;
	return id ? &id->pub : NULL;
}

static void listen_closed(uv_handle_t *h) { uw__cm_id_put(h->data); }

int uw_cm_destroy_id(struct uw_cm_id *i)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	if (id->destroyed) {
		pthread_mutex_unlock(&ctx->lock);
		return EINVAL;
	}
	id->destroyed = true;
	if (id->conn)
		uw__conn_close(id->conn, ECONNABORTED, UW_EV_NONE);
	if (i->qp) {
		((struct uw_qp_impl *)i->qp)->id = NULL;
		i->qp = NULL;
	}
	if (id->listening && id->listen_fd < 0) {
		id->listening = false; /* handed sockets only: nothing to close */
	} else if (id->listening) {
		id->listening = false;
		uv_poll_stop(&id->listen_poll);
		id->refs++;
		uv_close((uv_handle_t *)&id->listen_poll, listen_closed);
		util_sys_close(id->listen_fd); /* after uv_close (see uw__conn_close) */
		/* the close completes in the loop's next turn: take it now, so
		 * the channel is free when this call returns */
		uw__progress(ctx);
	}
	/* events still queued for this id would point at freed memory */
	struct uw_cm_event_impl *e, *next;
	util_list_for_each_safe(e, next, &id->ch->ch.events, link)
		if (e->pub.id == i) {
			util_list_del(&e->link);
			free(e);
			id->refs--;
		}
	/* with them gone the channel may have nothing left: a descriptor
	 * left readable would wake its poller for ever (an idle server spun
	 * a core) */
	uw__chan_settle(&id->ch->ch);
	uw__cm_id_put(id);
	uw__kick(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int uw_cm_migrate_id(struct uw_cm_id *i, struct uw_cm_channel *c)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	struct uw_cm_channel_impl *to = (struct uw_cm_channel_impl *)c;
	if (!id || !to || c->context != i->context)
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_cm_channel_impl *from = id->ch;
	if (id->destroyed || from == to) {
		pthread_mutex_unlock(&ctx->lock);
		return id->destroyed ? EINVAL : 0;
	}
	/* its queued events go with it, in their order */
	struct uw_cm_event_impl *e, *next;
	util_list_for_each_safe(e, next, &from->ch.events, link)
		if (e->pub.id == i) {
			util_list_del(&e->link);
			uw__chan_push(&to->ch, &e->link);
		}
	uw__chan_settle(&from->ch);
	from->ch.users--;
	to->ch.users++;
	id->ch = to;
	i->channel = c;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int uw_cm_attach_qp(struct uw_cm_id *i, struct uw_qp *q)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	if (!id || !qp || q->context != i->context)
		return EINVAL;
	pthread_mutex_lock(&i->context->lock);
	int rc = 0;
	if (qp->id || qp->conn || q->state != UW_QPS_INIT)
		rc = EBUSY;
	else {
		i->qp = q;
		qp->id = id;
	}
	pthread_mutex_unlock(&i->context->lock);
	return rc;
}

struct uw_qp *uw_cm_create_qp(struct uw_cm_id *id, struct uw_pd *pd, struct uw_qp_init_attr *attr)
{
	struct uw_qp *qp = uw_create_qp(pd, attr);
	if (!qp)
		return NULL;
	int rc = uw_cm_attach_qp(id, qp);
	if (rc) {
		uw_destroy_qp(qp);
		errno = rc;
		return NULL;
	}
	return qp;
}
