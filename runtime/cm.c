/*
 * cm.c: the connection manager: ids, listening, connecting, accepting and
 * rejecting (the MPA exchange of RFC 5044 7.1 and RFC 6581 on a fresh TCP
 * connection), disconnecting, and the events that report all of it.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "be.h"
#include "rdmap_term.h"
#include "uw_internal.h"

/* ---- the RFC 7306 offer between uwarp peers ---- */

size_t uw__ext_strip(const uint8_t *pd, size_t len, bool *offered)
{
	*offered = false;
	if (len < UW_EXT_TRAILER_LEN || memcmp(pd + len - UW_EXT_TRAILER_LEN, UW_EXT_MAGIC, 7))
		return len;
	*offered = pd[len - 1] & 1;
	return len - UW_EXT_TRAILER_LEN;
}

size_t uw__ext_append(uint8_t *pd, size_t len)
{
	memcpy(pd + len, UW_EXT_MAGIC, 7);
	pd[len + 7] = 1;
	return len + UW_EXT_TRAILER_LEN;
}

/* ---- events ---- */

/* The channel's descriptor is readable exactly while events are queued:
 * signalled when one is queued, drained when the last one leaves, by
 * whatever path it leaves (taken, moved with its id, or dropped with it). */
static void ch_signal(struct uw_cm_channel_impl *ch)
{
	uint64_t one = 1;
	if (write(ch->evfd, &one, sizeof(one)) < 0) {
		/* cannot overflow in practice */
	}
}

static void ch_settle(struct uw_cm_channel_impl *ch)
{
	uint64_t v;
	if (uw_list_empty(&ch->events) && read(ch->evfd, &v, sizeof(v)) < 0) {
		/* nothing was signalled */
	}
}

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
		} else if (c->initiator && c->frame_len >= MPA_FRAME_HDR_LEN &&
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
			len = uw__ext_strip(pd, len, &ext);
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
	uw_list_add_tail(&id->ch->events, &e->link);
	ch_signal(id->ch);
	uw__notify(id->pub.context);
}

struct uw_cm_channel *uw_cm_create_channel(struct uw_context *ctx)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_cm_channel_impl *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (ch->evfd < 0) {
		int e = errno;
		free(ch);
		errno = e;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	int fd = uw__channel_fd(ctx, ch->evfd);
	if (fd >= 0)
		ctx->nobjects++;
	pthread_mutex_unlock(&ctx->lock);
	if (fd < 0) {
		close(ch->evfd);
		free(ch);
		errno = -fd;
		return NULL;
	}
	ch->pub.context = ctx;
	ch->pub.fd = fd;
	uw_list_init(&ch->events);
	return &ch->pub;
}

int uw_cm_destroy_channel(struct uw_cm_channel *c)
{
	struct uw_cm_channel_impl *ch = (struct uw_cm_channel_impl *)c;
	if (!ch)
		return EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	if (ch->users || !uw_list_empty(&ch->events)) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	ctx->nobjects--;
	pthread_mutex_unlock(&ctx->lock);
	close(c->fd);
	close(ch->evfd);
	free(ch);
	return 0;
}

int uw_cm_channel_nonblock(struct uw_cm_channel *c, int nonblock)
{
	struct uw_cm_channel_impl *ch = (struct uw_cm_channel_impl *)c;
	if (!ch)
		return EINVAL;
	pthread_mutex_lock(&c->context->lock);
	ch->nonblock = nonblock;
	pthread_mutex_unlock(&c->context->lock);
	return 0;
}

int uw_cm_get_event_timeout(struct uw_cm_channel *c, struct uw_cm_event **event, int timeout_ms)
{
	struct uw_cm_channel_impl *ch = (struct uw_cm_channel_impl *)c;
	if (!ch || !event)
		return EINVAL;
	struct uw_context *ctx = c->context;
	uint64_t deadline = timeout_ms >= 0 ? uw__now_ms() + (uint64_t)timeout_ms : 0;
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		if (ctx->progress == UW_PROGRESS_MANUAL)
			uw__progress(ctx);
		if (!uw_list_empty(&ch->events)) {
			struct uw_cm_event_impl *e =
				uw_container_of(ch->events.next, struct uw_cm_event_impl, link);
			uw_list_del(&e->link);
			ch_settle(ch);
			*event = &e->pub;
			pthread_mutex_unlock(&ctx->lock);
			return 0;
		}
		int left = -1;
		if (ch->nonblock)
			left = 0;
		else if (timeout_ms >= 0) {
			uint64_t now = uw__now_ms();
			left = now >= deadline ? 0 : (int)(deadline - now);
		}
		if (left == 0) {
			pthread_mutex_unlock(&ctx->lock);
			return ch->nonblock ? EAGAIN : ETIMEDOUT;
		}
		uw__wait(ctx, -1, left);
	}
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

/* ---- ids ---- */

static struct uw_cm_id_impl *id_new(struct uw_cm_channel_impl *ch, void *context)
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
	ch->users++;
	ch->pub.context->nobjects++;
	return id;
}

void uw__cm_id_put(struct uw_cm_id_impl *id)
{
	if (--id->refs)
		return;
	id->ch->users--;
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
	struct uw_cm_id_impl *id = id_new((struct uw_cm_channel_impl *)c, context);
	pthread_mutex_unlock(&c->context->lock);
	if (!id)
		errno = ENOMEM;
	return id ? &id->pub : NULL;
}

static void listen_closed(uv_handle_t *h)
{
	uw__cm_id_put(h->data);
}

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
		close(id->listen_fd); /* after uv_close (see uw__conn_close) */
		/* the close completes in the loop's next turn: take it now, so
		 * the channel is free when this call returns */
		uw__progress(ctx);
	}
	/* events still queued for this id would point at freed memory */
	struct uw_list *l = id->ch->events.next;
	while (l != &id->ch->events) {
		struct uw_cm_event_impl *e = uw_container_of(l, struct uw_cm_event_impl, link);
		l = l->next;
		if (e->pub.id == i) {
			uw_list_del(&e->link);
			free(e);
			id->refs--;
		}
	}
	/* with them gone the channel may have nothing left: a descriptor
	 * left readable would wake its poller for ever (an idle server spun
	 * a core) */
	ch_settle(id->ch);
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
	bool moved = false;
	struct uw_list *l = from->events.next;
	while (l != &from->events) {
		struct uw_cm_event_impl *e = uw_container_of(l, struct uw_cm_event_impl, link);
		l = l->next;
		if (e->pub.id == i) {
			uw_list_del(&e->link);
			uw_list_add_tail(&to->events, &e->link);
			moved = true;
		}
	}
	ch_settle(from);
	from->users--;
	to->users++;
	id->ch = to;
	i->channel = c;
	if (moved)
		ch_signal(to);
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

/* ---- MPA policy from connection parameters ---- */

static const struct uw_conn_param default_param = { .ird = 16, .ord = 16 };

static void policy_from(const struct uw_conn_param *p, bool responder, struct mpa_policy *pol)
{
	mpa_policy_default(pol);
	pol->rev = p->mpa_rev == 1 ? MPA_REV_1 : MPA_REV_2;
	pol->enhanced = pol->rev == MPA_REV_2;
	pol->crc = p->crc != UW_CRC_OFF;
	pol->markers_rx = p->markers;
	/* zero means the default here, as in every field of uw_conn_param */
	pol->ird = p->ird ? p->ird : default_param.ird;
	pol->ord = p->ord ? p->ord : default_param.ord;
	pol->p2p_request = !responder && p->p2p;
	uint8_t rtr = (uint8_t)((p->rtr_types & UW_RTR_SEND ? MPA_RTR_SEND : 0) |
				(p->rtr_types & UW_RTR_WRITE ? MPA_RTR_WRITE : 0) |
				(p->rtr_types & UW_RTR_READ ? MPA_RTR_READ : 0));
	pol->rtr_types = rtr ? rtr : responder ? MPA_RTR_ALL : MPA_RTR_WRITE | MPA_RTR_READ;
}

/* Our private data, with the RFC 7306 offer behind it when it fits. */
static size_t pdata_with_offer(const struct uw_conn_param *p, bool offer, uint8_t *out)
{
	size_t len = p->private_data_len;
	if (len)
		memcpy(out, p->private_data, len);
	if (offer && !p->no_extensions && len + UW_EXT_TRAILER_LEN + MPA_V2_BLOCK_LEN <= MPA_PD_MAX_RFC)
		len = uw__ext_append(out, len);
	return len;
}

static int send_frame(struct uw_conn *c, const struct mpa_frame *f)
{
	ssize_t n = mpa_frame_encode(f, c->out, sizeof(c->out));
	if (n < 0)
		return (int)-n;
	c->out_len = (size_t)n;
	c->out_off = 0;
	/* one write for the whole frame: older siw aborts on a split one */
	ssize_t w = uw__sock_write(c->fd, c->out, c->out_len);
	if (w > 0)
		c->out_off = (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		return errno;
	if (c->out_off < c->out_len)
		uw__conn_poll(c, UV_READABLE | UV_WRITABLE);
	return 0;
}

/* A Terminate while still in setup (insufficient IRD, no RTR match): the
 * peer already switched to FPDUs with the CRC it negotiated. */
static void setup_terminate(struct uw_conn *c, uint8_t ecode, bool crc)
{
	uint8_t t[MPA_ULPDU_LEN_SIZE + RDMAP_TERM_MAX_ULPDU], *p = t + MPA_ULPDU_LEN_SIZE;
	struct rddp_error e = { UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, ecode, "setup" };
	struct ddp_hdr h = { .last = true, .dv = DDP_VERSION,
			     .ulp_ctrl = (uint8_t)rdmap_op(RDMAP_TERMINATE)->ctrl,
			     .qn = DDP_QN_TERMINATE, .msn = 1 };
	struct iovec iov[4];
	uint8_t scratch[16];
	struct fpdu_batch b;
	struct fpdu_tx tx;
	size_t n = ddp_hdr_encode(&h, p);
	n += rdmap_term_encode(&e, 0, NULL, 0, NULL, p + n);
	fpdu_tx_init(&tx, crc, false);
	fpdu_batch_init(&b, iov, 4, scratch, sizeof(scratch));
	if (fpdu_tx_append(&tx, &b, t, n, NULL, 0) == 0 && uw__sock_writev(c->fd, b.iov, b.niov) < 0) {
		/* best effort: the connection closes either way */
	}
}

/* ---- listening and accepting ---- */

/* An accepted TCP connection: read its MPA Request (ctx locked). */
static int take_accepted(struct uw_cm_id_impl *id, int fd)
{
	struct uw_context *ctx = id->pub.context;
	struct uw_conn *c = uw__conn_new(ctx, fd, false);
	if (!c)
		return ENOMEM;
	mpa_policy_default(&c->pol);
	c->listener = id;
	id->refs++;
	uw__conn_poll(c, UV_READABLE);
	uw__conn_timer(c, ctx->request_timeout_ms);
	return 0;
}

static void listen_cb(uv_poll_t *h, int status, int events)
{
	struct uw_cm_id_impl *id = h->data;
	for (int i = 0; i < 64 && id->listening && status >= 0; i++) {
		int fd = accept4(id->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (take_accepted(id, fd))
			close(fd);
	}
}

/* Whether @fd is a TCP socket a caller may hand over; nothing changes. */
static int check_fd(int fd)
{
	int type = 0;
	socklen_t tl = sizeof(type);
	if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) || type != SOCK_STREAM)
		return EINVAL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return EINVAL;
	return 0;
}

static int hand_over(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param);

int uw_cm_listen_handoff(struct uw_cm_id *i)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = id->listening || id->conn || id->destroyed ? EBUSY : 0;
	if (!rc) {
		id->listen_fd = -1;
		id->listening = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_request_fd(struct uw_cm_id *i, int fd)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	return id ? hand_over(id, fd, NULL) : EINVAL;
}

int uw_cm_listen(struct uw_cm_id *i, const struct sockaddr *addr, int backlog)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EINVAL;
	socklen_t len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	/* the system's largest queue whatever @backlog says (verbs.h): the
	 * kernel cuts INT_MAX down to net.core.somaxconn */
	(void)backlog;
	if (bind(fd, addr, len) || listen(fd, INT_MAX)) {
		int e = errno;
		close(fd);
		return e;
	}
	socklen_t sl = sizeof(i->local_addr);
	getsockname(fd, (struct sockaddr *)&i->local_addr, &sl);
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = id->listening || id->conn ? EBUSY : -uv_poll_init(&ctx->loop, &id->listen_poll, fd);
	if (!rc) {
		id->listen_fd = fd;
		id->listening = true;
		id->listen_poll.data = id;
		uv_poll_start(&id->listen_poll, UV_READABLE, listen_cb);
		uw__kick(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (rc)
		close(fd);
	return rc;
}

void uw__cm_request_arrived(struct uw_conn *c)
{
	struct uw_cm_id_impl *l = c->listener;
	if (!l || !l->listening) {
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
		return;
	}
	struct uw_cm_id_impl *id = id_new(l->ch, l->pub.context_ptr);
	if (!id) {
		uw__conn_close(c, ENOMEM, UW_EV_NONE);
		return;
	}
	uw__ext_strip(c->req.pdata, c->req.pdata_len, &c->peer_ext);
	socklen_t sl = sizeof(id->pub.peer_addr);
	getpeername(c->fd, (struct sockaddr *)&id->pub.peer_addr, &sl);
	sl = sizeof(id->pub.local_addr);
	getsockname(c->fd, (struct sockaddr *)&id->pub.local_addr, &sl);
	id->conn = c;
	c->id = id;
	c->st = UW_CONN_REQ_HELD;
	/* The Request is the application's now: no more reading (and no
	 * timer) until it accepts or rejects. */
	uw__conn_poll(c, 0);
	uw__cm_event(id, UW_CM_EVENT_CONNECT_REQUEST, 0, l, c);
}

/* The defaults for NULL; NULL when @p's private data cannot be sent or
 * a limit is out of range (keepalive_s: the kernel's TCP_KEEPIDLE takes
 * at most 32767 s, and would refuse more without a word to us). */
static const struct uw_conn_param *param_or_default(const struct uw_conn_param *p)
{
	if (!p)
		return &default_param;
	if (p->private_data_len > MPA_PD_MAX_RFC - MPA_V2_BLOCK_LEN ||
	    (p->private_data_len && !p->private_data) || p->keepalive_s > UW_KEEPALIVE_MAX_S)
		return NULL;
	return p;
}

int uw_cm_accept(struct uw_cm_id *i, const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	if (!(param = param_or_default(param)))
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_conn *c = id->conn;
	struct uw_qp_impl *qp = (struct uw_qp_impl *)i->qp;
	int rc = 0;
	if (!c || c->st != UW_CONN_REQ_HELD || !qp || qp->pub.state != UW_QPS_INIT) {
		rc = EINVAL;
		goto out;
	}
	/* an initiator that gave up while the application thought it over
	 * has closed its end: say so now rather than report ESTABLISHED */
	char b;
	ssize_t k = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		uw__conn_close(c, ECONNRESET, UW_EV_NONE);
		rc = ECONNRESET;
		goto out;
	}
	struct mpa_frame rep;
	struct mpa_verdict v;
	uint8_t pd[MPA_PD_MAX_RFC];
	c->param = *param;
	policy_from(param, true, &c->pol);
	size_t len = pdata_with_offer(param, c->peer_ext, pd);
	if (mpa_respond(&c->pol, &c->req, pd, (uint16_t)len, &rep, &c->mp, &v)) {
		if (v.send_reject)
			send_frame(c, &rep);
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
		rc = ECONNREFUSED;
		goto out;
	}
	c->qp = qp;
	rc = send_frame(c, &rep);
	if (!rc)
		rc = -uw__conn_start(c);
	if (rc) {
		uw__conn_close(c, rc, UW_EV_NONE);
		goto out;
	}
	/* A siw initiator takes FPDUs behind the Reply for "extra data" and
	 * drops us, so hold until the peer's first FPDU or a short fallback
	 * (docs/wire-notes.md, "The responder's hold"). In P2P mode its RTR
	 * is that FPDU. */
	c->hold_tx = true;
	c->wait_rtr = c->mp.p2p;
	qp->pub.state = UW_QPS_RTR; /* receiving; sends queue until the hold ends */
	if (!c->wait_rtr) {
		uw__conn_timer(c, UW_MPA_HOLD_MS);
		uw__cm_event(id, UW_CM_EVENT_ESTABLISHED, 0, NULL, c);
	} else {
		/* the RTR is waited for as long as a Request is */
		uw__conn_timer(c, ctx->request_timeout_ms);
	}
	if (c->rxlen)
		uw__conn_rx(c);
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_reject(struct uw_cm_id *i, const void *private_data, uint16_t len)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || len > MPA_PD_MAX_RFC - MPA_V2_BLOCK_LEN || (len && !private_data))
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_conn *c = id->conn;
	int rc = EINVAL;
	if (c && c->st == UW_CONN_REQ_HELD) {
		struct mpa_frame rej;
		mpa_policy_default(&c->pol);
		mpa_reject_reply(&c->pol, &c->req, private_data, len, &rej);
		rc = send_frame(c, &rej);
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

/* ---- connecting ---- */

static bool can_connect(const struct uw_cm_id_impl *id)
{
	const struct uw_qp_impl *qp = (const struct uw_qp_impl *)id->pub.qp;
	return qp && qp->pub.state == UW_QPS_INIT && !id->conn && !id->listening && !id->destroyed;
}

/* A connection on @fd (connected or connecting) that sends the MPA
 * Request once it is writable (ctx locked); it owns @fd on 0. */
static int start_connect(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param)
{
	struct uw_context *ctx = id->pub.context;
	struct uw_conn *c = uw__conn_new(ctx, fd, true);
	if (!c)
		return ENOMEM;
	c->param = *param;
	if (param->private_data_len)
		memcpy(c->param_pdata, param->private_data, param->private_data_len);
	c->param.private_data = c->param_pdata;
	c->id = id;
	c->qp = (struct uw_qp_impl *)id->pub.qp;
	id->conn = c;
	policy_from(&c->param, false, &c->pol);
	uw__conn_poll(c, UV_WRITABLE);
	uw__conn_timer(c, param->mpa_timeout_ms ? param->mpa_timeout_ms : ctx->reply_timeout_ms);
	return 0;
}

/* A caller's TCP socket becomes a connection of @id: an initiator's with
 * @param, else a request for the listener @id. uwarp makes it
 * non-blocking and close-on-exec (the engine's way) and owns it on 0; on
 * any error the socket is as the caller gave it. */
static int hand_over(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param)
{
	int rc = check_fd(fd);
	if (rc)
		return rc;
	struct uw_context *ctx = id->pub.context;
	pthread_mutex_lock(&ctx->lock);
	int fl = fcntl(fd, F_GETFL), fdfl = fcntl(fd, F_GETFD);
	if (!(param ? can_connect(id) : id->listening))
		rc = EINVAL;
	else if (fl < 0 || fdfl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
		 fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC))
		rc = errno;
	else if ((rc = param ? start_connect(id, fd, param) : take_accepted(id, fd))) {
		fcntl(fd, F_SETFL, fl);
		fcntl(fd, F_SETFD, fdfl);
	}
	if (!rc && param) {
		/* (still connecting: uw__cm_connected reads it again) */
		socklen_t sl = sizeof(id->pub.peer_addr);
		getpeername(fd, (struct sockaddr *)&id->pub.peer_addr, &sl);
	}
	if (!rc)
		uw__kick(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_connect(struct uw_cm_id *i, const struct sockaddr *addr, const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EINVAL;
	if (!(param = param_or_default(param)))
		return EINVAL;
	socklen_t len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = 0, fd = -1;
	if (!can_connect(id)) {
		rc = EINVAL;
		goto out;
	}
	fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || (connect(fd, addr, len) && errno != EINPROGRESS)) {
		rc = errno;
		goto out;
	}
	if (!(rc = start_connect(id, fd, param))) {
		fd = -1;
		memcpy(&i->peer_addr, addr, len);
	}
out:
	if (fd >= 0)
		close(fd);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_connect_fd(struct uw_cm_id *i, int fd, const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	if (!(param = param_or_default(param)))
		return EINVAL;
	return hand_over(id, fd, param);
}

void uw__cm_connected(struct uw_conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);
	if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
		uw__conn_close(c, err ? err : errno, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	if (c->id) {
		socklen_t sl = sizeof(c->id->pub.local_addr);
		getsockname(c->fd, (struct sockaddr *)&c->id->pub.local_addr, &sl);
		sl = sizeof(c->id->pub.peer_addr);
		getpeername(c->fd, (struct sockaddr *)&c->id->pub.peer_addr, &sl);
	}
	uint8_t pd[MPA_PD_MAX_RFC];
	size_t len = pdata_with_offer(&c->param, true, pd);
	mpa_request(&c->pol, pd, (uint16_t)len, &c->req);
	c->st = UW_CONN_REQ_SENT;
	uw__conn_poll(c, UV_READABLE);
	int rc = send_frame(c, &c->req);
	c->req.pdata = NULL; /* pd is gone; only the frame's fields matter now */
	c->req.pdata_len = 0;
	if (rc)
		uw__conn_close(c, rc, UW_CM_EVENT_CONNECT_ERROR);
}

void uw__cm_reply_arrived(struct uw_conn *c)
{
	struct mpa_frame rep;
	struct mpa_verdict v;
	if (mpa_frame_decode(c->frame, c->frame_len, c->pol.pd_max, &rep) <= 0) {
		uw__conn_close(c, EPROTO, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	if (mpa_conclude(&c->pol, &c->req, &rep, &c->mp, &v)) {
		if (v.reason == MPA_REFUSE_PEER_REJECTED) {
			uw__conn_close(c, ECONNREFUSED, UW_CM_EVENT_REJECTED);
			return;
		}
		if (v.llp_ecode)
			setup_terminate(c, v.llp_ecode, c->req.crc || rep.crc);
		uw__conn_close(c, ECONNREFUSED, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	uw__ext_strip(rep.pdata, rep.pdata_len, &c->peer_ext);
	int rc = uw__conn_start(c);
	if (rc) {
		uw__conn_close(c, -rc, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	c->send_rtr = c->mp.p2p;
	if (!c->peer_ext) {
		/* siw may miss FPDUs that arrive right behind its Reply */
		c->nudge_ticks = UW_NUDGE_TICKS;
		uw__conn_timer(c, UW_NUDGE_TICK_MS);
	}
	if (c->id)
		uw__cm_event(c->id, UW_CM_EVENT_ESTABLISHED, 0, NULL, c);
	/* a responder that spoke first (siw does) may already be in rxbuf */
	if (c->rxlen)
		uw__conn_rx(c);
	uw__conn_tx(c);
}

int uw_cm_disconnect(struct uw_cm_id *i)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	pthread_mutex_lock(&i->context->lock);
	int rc = ENOTCONN;
	if (id->conn) {
		uw__conn_close(id->conn, 0, UW_CM_EVENT_DISCONNECTED);
		rc = 0;
	}
	pthread_mutex_unlock(&i->context->lock);
	return rc;
}

const char *uw_cm_event_str(enum uw_cm_event_type t)
{
	switch (t) {
	case UW_CM_EVENT_CONNECT_REQUEST: return "CONNECT_REQUEST";
	case UW_CM_EVENT_ESTABLISHED: return "ESTABLISHED";
	case UW_CM_EVENT_REJECTED: return "REJECTED";
	case UW_CM_EVENT_CONNECT_ERROR: return "CONNECT_ERROR";
	case UW_CM_EVENT_DISCONNECTED: return "DISCONNECTED";
	}
	return "UNKNOWN";
}

const char *uw_wc_status_str(enum uw_wc_status s)
{
	switch (s) {
	case UW_WC_SUCCESS: return "success";
	case UW_WC_LOC_LEN_ERR: return "local length error";
	case UW_WC_LOC_PROT_ERR: return "local protection error";
	case UW_WC_WR_FLUSH_ERR: return "flushed";
	case UW_WC_REM_ACCESS_ERR: return "remote access error";
	case UW_WC_REM_OP_ERR: return "remote operation error";
	case UW_WC_FATAL_ERR: return "fatal error";
	}
	return "unknown";
}
