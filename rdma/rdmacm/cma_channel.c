/*
 * cma_channel.c: event channels, and the events on them: uwarp's, turned
 * into rdma-core's, and the resolution events made here.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "cma_internal.h"

struct ucm_channel *ucm_channel_new(void)
{
	struct ibv_context *verbs = ucm_verbs();
	if (!verbs)
		return NULL;
	struct ucm_channel *c = calloc(1, sizeof(*c));
	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->ch.fd = c->queued_fd = -1;
	c->tail = &c->head;
	pthread_mutex_init(&c->lock, NULL);
	c->uw = uw_cm_create_channel(uwv_ctx(verbs)->uw);
	if (!c->uw)
		goto fail;
	/* we wait in poll() ourselves: uwarp's calls never block */
	uw_cm_channel_nonblock(c->uw, 1);
	c->queued_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK | EFD_SEMAPHORE);
	c->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	if (c->queued_fd < 0 || c->ch.fd < 0)
		goto fail;
	/* data.ptr NULL: not a listener's socket */
	struct epoll_event a = { .events = EPOLLIN }, b = { .events = EPOLLIN };
	if (epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, c->uw->fd, &a) ||
	    epoll_ctl(c->ch.fd, EPOLL_CTL_ADD, c->queued_fd, &b))
		goto fail;
	return c;
fail:;
	int e = errno ? errno : ENOMEM;
	ucm_channel_free(c);
	errno = e;
	return NULL;
}

void ucm_channel_free(struct ucm_channel *c)
{
	if (!c)
		return;
	while (c->head) {
		struct ucm_event *e = c->head;
		c->head = e->next;
		free(e);
	}
	if (c->ch.fd >= 0)
		close(c->ch.fd);
	if (c->queued_fd >= 0)
		close(c->queued_fd);
	if (c->uw)
		uw_cm_destroy_channel(c->uw);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct ucm_channel *c = ucm_channel_new();
	return c ? &c->ch : NULL;
}

void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	ucm_channel_free(ucm_chan(channel));
}

int ucm_queue(struct ucm_id *u, enum rdma_cm_event_type type, int status)
{
	struct ucm_channel *c = ucm_chan(u->id.channel);
	struct ucm_event *e = calloc(1, sizeof(*e));
	if (!e)
		return ucm_err(ENOMEM);
	e->ev.id = &u->id;
	e->ev.event = type;
	e->ev.status = status;
	pthread_mutex_lock(&c->lock);
	*c->tail = e;
	c->tail = &e->next;
	uint64_t one = 1;
	ssize_t w = write(c->queued_fd, &one, sizeof(one));
	pthread_mutex_unlock(&c->lock);
	(void)w; /* an eventfd write fails only at 2^64 - 1 events */
	return 0;
}

int ucm_watch_listener(struct ucm_channel *c, struct ucm_id *u, bool on)
{
	struct epoll_event e = { .events = EPOLLIN, .data.ptr = u };
	return epoll_ctl(c->ch.fd, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, u->bound_fd, &e);
}

/* Connections waiting on the channel's listeners, each handed to its
 * listener's uwarp id, whose MPA exchange makes the CONNECT_REQUEST. */
static void accept_waiting(struct ucm_channel *c)
{
	struct epoll_event ev[16];
	int n = epoll_wait(c->ch.fd, ev, 16, 0);
	for (int i = 0; i < n; i++) {
		struct ucm_id *l = ev[i].data.ptr;
		if (!l)
			continue;
		int fd;
		while ((fd = accept4(l->bound_fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
			if (uw_cm_request_fd(l->uw, fd))
				close(fd);
	}
}

static struct ucm_event *take_queued(struct ucm_channel *c)
{
	pthread_mutex_lock(&c->lock);
	struct ucm_event *e = c->head;
	if (e) {
		c->head = e->next;
		if (!c->head)
			c->tail = &c->head;
		uint64_t v;
		ssize_t r = read(c->queued_fd, &v, sizeof(v));
		(void)r;
	}
	pthread_mutex_unlock(&c->lock);
	return e;
}

void ucm_copy_addrs(struct ucm_id *u)
{
	struct rdma_addr *a = &u->id.route.addr;
	memcpy(&a->src_storage, &u->uw->local_addr, sizeof(a->src_storage));
	memcpy(&a->dst_storage, &u->uw->peer_addr, sizeof(a->dst_storage));
}

/* A connection request's new id: the listener's channel, context and
 * port space, as rdma-core gives it. */
static struct ucm_id *accept_id(struct ucm_id *listener, struct uw_cm_id *uw)
{
	struct ucm_id *n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->uw = uw;
	n->bound_fd = -1;
	n->tos = -1;
	n->afonly = -1;
	uw->context_ptr = n;
	n->id.verbs = ucm_verbs();
	n->id.channel = listener->id.channel;
	n->id.context = listener->id.context;
	n->id.ps = listener->id.ps;
	n->id.qp_type = IBV_QPT_RC;
	n->id.port_num = 1;
	n->addr_done = n->route_done = true;
	ucm_copy_addrs(n);
	if (listener->ep_qp) {
		n->ep_qp = true;
		n->ep_attr = listener->ep_attr;
	}
	return n;
}

/* uwarp's failure statuses as the kernel's iWARP connection manager
 * reports them through rdma-core: a refusal is REJECTED, a peer that
 * never answered UNREACHABLE, anything else CONNECT_ERROR; the status
 * is a negative errno. */
static enum rdma_cm_event_type failure_type(int status)
{
	switch (status) {
	case ECONNREFUSED:
		return RDMA_CM_EVENT_REJECTED;
	case ETIMEDOUT:
	case ETIME:
	case EHOSTUNREACH:
	case ENETUNREACH:
		return RDMA_CM_EVENT_UNREACHABLE;
	default:
		return RDMA_CM_EVENT_CONNECT_ERROR;
	}
}

/* uwarp's event as rdma-core's; NULL (and the event acknowledged) when
 * it has no rdma-core counterpart left to report. */
static struct ucm_event *translate(struct uw_cm_event *ue)
{
	struct ucm_event *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->uw = ue;
	struct rdma_conn_param *p = &e->ev.param.conn;
	p->private_data = ue->private_data_len ? ue->private_data : NULL;
	/* rdma-core's length is 8 bits; uwarp's iWARP private data can be
	 * longer (up to 512 bytes) only when the peer sends that much */
	p->private_data_len = ue->private_data_len > 255 ? 255 : (uint8_t)ue->private_data_len;
	switch (ue->event) {
	case UW_CM_EVENT_CONNECT_REQUEST: {
		struct ucm_id *l = ue->listen_id->context_ptr;
		struct ucm_id *n = accept_id(l, ue->id);
		if (!n) {
			uw_cm_reject(ue->id, NULL, 0);
			uw_cm_destroy_id(ue->id);
			uw_cm_ack_event(ue);
			free(e);
			return NULL;
		}
		e->ev.id = &n->id;
		e->ev.listen_id = &l->id;
		e->ev.event = RDMA_CM_EVENT_CONNECT_REQUEST;
		/* what the peer may read from us and what it answers:
		 * the accepting side mirrors them in rdma_accept */
		p->initiator_depth = ue->ird > 255 ? 255 : (uint8_t)ue->ird;
		p->responder_resources = ue->ord > 255 ? 255 : (uint8_t)ue->ord;
		return e;
	}
	case UW_CM_EVENT_ESTABLISHED:
		e->ev.event = RDMA_CM_EVENT_ESTABLISHED;
		p->initiator_depth = ue->ord > 255 ? 255 : (uint8_t)ue->ord;
		p->responder_resources = ue->ird > 255 ? 255 : (uint8_t)ue->ird;
		break;
	case UW_CM_EVENT_REJECTED:
		e->ev.event = RDMA_CM_EVENT_REJECTED;
		e->ev.status = -ECONNREFUSED;
		break;
	case UW_CM_EVENT_CONNECT_ERROR:
		e->ev.event = failure_type(ue->status);
		e->ev.status = -(ue->status ? ue->status : ECONNABORTED);
		break;
	case UW_CM_EVENT_DISCONNECTED:
		e->ev.event = RDMA_CM_EVENT_DISCONNECTED;
		break;
	}
	struct ucm_id *u = ue->id->context_ptr;
	e->ev.id = &u->id;
	if (ue->event == UW_CM_EVENT_ESTABLISHED) {
		ucm_copy_addrs(u);
		u->established = true;
	}
	return e;
}

int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	if (!channel || !event)
		return ucm_err(EINVAL);
	struct ucm_channel *c = ucm_chan(channel);
	for (;;) {
		struct ucm_event *e = take_queued(c);
		if (e) {
			*event = &e->ev;
			return 0;
		}
		accept_waiting(c);
		struct uw_cm_event *ue;
		int rc = uw_cm_get_event(c->uw, &ue);
		if (rc == 0) {
			e = translate(ue);
			if (e) {
				*event = &e->ev;
				return 0;
			}
			continue;
		}
		if (rc != EAGAIN)
			return ucm_err(rc);
		int fl = fcntl(channel->fd, F_GETFL);
		if (fl >= 0 && (fl & O_NONBLOCK))
			return ucm_err(EAGAIN);
		/* a signal ends the wait with EINTR, as rdma-core's read() */
		struct pollfd pfd = { .fd = channel->fd, .events = POLLIN };
		if (poll(&pfd, 1, -1) < 0)
			return -1;
	}
}

int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	if (!event)
		return ucm_err(EINVAL);
	struct ucm_event *e = (struct ucm_event *)(void *)event;
	if (e->uw)
		uw_cm_ack_event(e->uw);
	free(e);
	return 0;
}

int ucm_complete(struct ucm_id *u, enum rdma_cm_event_type want)
{
	if (!u->sync)
		return 0;
	struct rdma_cm_event *ev;
	if (rdma_get_cm_event(u->id.channel, &ev))
		return -1;
	if (u->id.event)
		rdma_ack_cm_event(u->id.event);
	u->id.event = ev;
	if (ev->event != want || ev->status) {
		int st = ev->status ? -ev->status : ECONNREFUSED;
		return ucm_err(st > 0 ? st : EIO);
	}
	return 0;
}

const char *rdma_event_str(enum rdma_cm_event_type event)
{
	static const char *const n[] = {
		[RDMA_CM_EVENT_ADDR_RESOLVED] = "RDMA_CM_EVENT_ADDR_RESOLVED",
		[RDMA_CM_EVENT_ADDR_ERROR] = "RDMA_CM_EVENT_ADDR_ERROR",
		[RDMA_CM_EVENT_ROUTE_RESOLVED] = "RDMA_CM_EVENT_ROUTE_RESOLVED",
		[RDMA_CM_EVENT_ROUTE_ERROR] = "RDMA_CM_EVENT_ROUTE_ERROR",
		[RDMA_CM_EVENT_CONNECT_REQUEST] = "RDMA_CM_EVENT_CONNECT_REQUEST",
		[RDMA_CM_EVENT_CONNECT_RESPONSE] = "RDMA_CM_EVENT_CONNECT_RESPONSE",
		[RDMA_CM_EVENT_CONNECT_ERROR] = "RDMA_CM_EVENT_CONNECT_ERROR",
		[RDMA_CM_EVENT_UNREACHABLE] = "RDMA_CM_EVENT_UNREACHABLE",
		[RDMA_CM_EVENT_REJECTED] = "RDMA_CM_EVENT_REJECTED",
		[RDMA_CM_EVENT_ESTABLISHED] = "RDMA_CM_EVENT_ESTABLISHED",
		[RDMA_CM_EVENT_DISCONNECTED] = "RDMA_CM_EVENT_DISCONNECTED",
		[RDMA_CM_EVENT_DEVICE_REMOVAL] = "RDMA_CM_EVENT_DEVICE_REMOVAL",
		[RDMA_CM_EVENT_MULTICAST_JOIN] = "RDMA_CM_EVENT_MULTICAST_JOIN",
		[RDMA_CM_EVENT_MULTICAST_ERROR] = "RDMA_CM_EVENT_MULTICAST_ERROR",
		[RDMA_CM_EVENT_ADDR_CHANGE] = "RDMA_CM_EVENT_ADDR_CHANGE",
		[RDMA_CM_EVENT_TIMEWAIT_EXIT] = "RDMA_CM_EVENT_TIMEWAIT_EXIT",
	};
	return (unsigned)event < sizeof(n) / sizeof(n[0]) && n[event] ? n[event] : "UNKNOWN EVENT";
}
