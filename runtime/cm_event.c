/*
 * cm_event.c: the connection manager's events (what each one reports:
 * the MPA parameters in force, the peer's private data without uwarp's
 * RFC 7306 offer, a Terminate's codes) and the channels that deliver them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rdmap/rdmap_offer.h"
#include "rdmap/rdmap_term.h"
#include "uw_internal.h"
#include "util/connect_words.h"

void uw__cm_event(struct uw_cm_id_impl *id, enum uw_cm_event_type type, int status,
		  struct uw_cm_id_impl *listen_id, const struct uw_conn *c)
{
	struct uw_cm_event_impl *e = calloc(1, sizeof(*e));
	if (!e || !id->ch)
		return; /* out of memory: the event is lost, the state is right */
	e->pub.event = type;
	e->pub.id = &id->pub;
	e->pub.listen_id = listen_id ? &listen_id->pub : NULL;
	e->pub.status = status;
	if (c) {
		const uint8_t *pd = NULL;
		size_t len = 0;
		bool ext;
		if (type == UW_CM_EVENT_CONNECT_REQUEST) {
			pd = c->req.pdata;
			len = c->req.pdata_len;
			e->pub.ird = c->req.ird;
			e->pub.ord = c->req.ord;
			e->pub.crc = c->req.crc;
			e->pub.markers_tx = c->req.markers;
			e->pub.mpa_rev = c->req.rev;
			e->pub.rfc7306 = c->peer_ext;
		} else if (c->life.initiator && c->frame_len >= MPA_FRAME_HDR_LEN &&
			   (type == UW_CM_EVENT_ESTABLISHED || type == UW_CM_EVENT_REJECTED)) {
			struct mpa_frame rep;
			if (mpa_frame_decode(c->frame, c->frame_len, MPA_PD_MAX_RFC, &rep) > 0) {
				pd = rep.pdata;
				len = rep.pdata_len;
				if (type == UW_CM_EVENT_REJECTED) {
					/* nothing was negotiated: what the Reject
					 * itself says, for the application to tell
					 * why (siw rejects any request for markers
					 * with M clear) */
					e->pub.crc = rep.crc;
					e->pub.markers_tx = rep.markers;
					e->pub.markers_rx = c->req.markers;
					e->pub.mpa_rev = rep.rev;
				}
			}
		}
		if (type != UW_CM_EVENT_CONNECT_REQUEST && type != UW_CM_EVENT_REJECTED) {
			e->pub.ird = c->mp.ird;
			e->pub.ord = c->mp.ord;
			e->pub.crc = c->mp.crc;
			e->pub.markers_tx = c->mp.markers_tx;
			e->pub.markers_rx = c->mp.markers_rx;
			e->pub.mpa_rev = c->mp.rev;
			e->pub.rfc7306 = c->qp ? c->qp->rfc7306 : 0;
		}
		if (pd) {
			len = rdmap_offer_strip(pd, len, &ext);
			memcpy(e->pdata, pd, len);
			e->pub.private_data = e->pdata;
			e->pub.private_data_len = (uint16_t)len;
		}
		if (c->peer_terminated) {
			const struct rdmap_term_reading *r = rdmap_term_reading(&c->peer_term);
			e->pub.term_layer = r->layer;
			e->pub.term_etype = r->etype;
			e->pub.term_ecode = r->ecode;
			e->pub.terminated = 1;
			e->pub.term_remote = 1;
			e->pub.term_siw_layout = c->peer_term.siw_likely;
		} else if (c->rd_init && c->rd.state == RDMAP_TERMINATING) {
			e->pub.terminated = 1;
			e->pub.term_layer = c->rd.err.layer;
			e->pub.term_etype = c->rd.err.etype;
			e->pub.term_ecode = c->rd.err.ecode;
		}
	}
	id->refs++; /* the event names the id until acknowledged */
	uw__chan_push(&id->ch->ch, &e->link);
	uw__notify(id->pub.context);
}

struct uw_cm_channel *uw_cm_create_channel(struct uw_context *ctx)
{
	struct uw_cm_channel_impl *ch =
		uw__chan_create(ctx, sizeof(*ch), offsetof(struct uw_cm_channel_impl, ch));
	return ch ? &ch->pub : NULL;
}

int uw_cm_destroy_channel(struct uw_cm_channel *c)
{
	/* events not acknowledged name ids that report here */
	return uw__chan_destroy(c, offsetof(struct uw_cm_channel_impl, ch), true);
}

int uw_cm_channel_nonblock(struct uw_cm_channel *c, int nonblock)
{
	struct uw_cm_channel_impl *ch = (struct uw_cm_channel_impl *)c;
	if (!ch)
		return EINVAL;
	uw__chan_nonblock(&ch->ch, c->context, nonblock);
	return 0;
}

int uw_cm_get_event_timeout(struct uw_cm_channel *c, struct uw_cm_event **event, int timeout_ms)
{
	struct uw_cm_channel_impl *ch = (struct uw_cm_channel_impl *)c;
	if (!ch || !event)
		return EINVAL;
	struct uw_context *ctx = c->context;
	int err = 0;
	pthread_mutex_lock(&ctx->lock);
	struct util_list *n = uw__chan_take(&ch->ch, ctx, timeout_ms, &err);
	pthread_mutex_unlock(&ctx->lock);
	if (!n)
		return err;
	*event = &util_container_of(n, struct uw_cm_event_impl, link)->pub;
	return 0;
}

int uw_cm_get_event(struct uw_cm_channel *ch, struct uw_cm_event **event)
{
	return uw_cm_get_event_timeout(ch, event, -1);
}

int uw_cm_ack_event(struct uw_cm_event *event)
{
	if (!event)
		return EINVAL;
	struct uw_cm_event_impl *e = (struct uw_cm_event_impl *)event;
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)event->id;
	struct uw_context *ctx = id->pub.context;
	pthread_mutex_lock(&ctx->lock);
	uw__cm_id_put(id);
	pthread_mutex_unlock(&ctx->lock);
	free(e);
	return 0;
}

const char *uw_cm_event_str(enum uw_cm_event_type t)
{
	switch (t) {
	case UW_CM_EVENT_CONNECT_REQUEST:
		return "CONNECT_REQUEST";
	case UW_CM_EVENT_ESTABLISHED:
		return "ESTABLISHED";
	case UW_CM_EVENT_REJECTED:
		return "REJECTED";
	case UW_CM_EVENT_CONNECT_ERROR:
		return "CONNECT_ERROR";
	case UW_CM_EVENT_DISCONNECTED:
		return "DISCONNECTED";
	}
	return "UNKNOWN";
}

const char *uw_connect_strerror(int status)
{
	const char *w = util_connect_words(status);
	return w ? w : strerror(status);
}
