/*
 * uw_cq.c: completion queues and completion channels.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "uw_internal.h"

int uw__channel_fd(struct uw_context *ctx, int evfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0)
		return -errno;
	ev.data.fd = evfd;
	if (epoll_ctl(ep, EPOLL_CTL_ADD, evfd, &ev))
		goto fail;
	/* With manual progress nobody else watches the sockets: the channel
	 * fd must wake its owner when network input waits, so that the next
	 * call moves it (and may find nothing: a spurious wakeup). */
	if (ctx->progress == UW_PROGRESS_MANUAL) {
		ev.data.fd = uv_backend_fd(&ctx->loop);
		if (epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev))
			goto fail;
	}
	return ep;
fail:;
	int e = errno;
	close(ep);
	return -e;
}

struct uw_comp_channel *uw_create_comp_channel(struct uw_context *ctx)
{
	struct uw_channel_impl *ch;
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
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

int uw_destroy_comp_channel(struct uw_comp_channel *c)
{
	struct uw_channel_impl *ch = (struct uw_channel_impl *)c;
	if (!ch)
		return EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	if (ch->users) {
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

int uw_comp_channel_nonblock(struct uw_comp_channel *c, int nonblock)
{
	struct uw_channel_impl *ch = (struct uw_channel_impl *)c;
	if (!ch)
		return EINVAL;
	pthread_mutex_lock(&c->context->lock);
	ch->nonblock = nonblock;
	pthread_mutex_unlock(&c->context->lock);
	return 0;
}

struct uw_cq *uw_create_cq(struct uw_context *ctx, int cqe, void *cq_context,
			   struct uw_comp_channel *channel)
{
	struct uw_cq_impl *cq;
	if (!ctx || cqe <= 0 || cqe > (1 << 24)) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (cq)
		cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq || !cq->ring) {
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	cq->cap = (uint32_t)cqe;
	cq->pub = (struct uw_cq){ ctx, channel, cq_context, cqe };
	uw_list_init(&cq->fired);
	pthread_mutex_lock(&ctx->lock);
	if (channel)
		((struct uw_channel_impl *)channel)->users++;
	ctx->nobjects++;
	pthread_mutex_unlock(&ctx->lock);
	return &cq->pub;
}

int uw_destroy_cq(struct uw_cq *c)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq)
		return EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	if (cq->users) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	if (cq->queued)
		uw_list_del(&cq->fired);
	if (c->channel)
		((struct uw_channel_impl *)c->channel)->users--;
	ctx->nobjects--;
	pthread_mutex_unlock(&ctx->lock);
	free(cq->ring);
	free(cq);
	return 0;
}

int uw_resize_cq(struct uw_cq *c, int cqe)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq || cqe <= 0 || cqe > (1 << 24))
		return EINVAL;
	struct uw_context *ctx = c->context;
	/* allocated before the lock: the engine goes on meanwhile */
	struct uw_wc *ring = calloc((size_t)cqe, sizeof(*ring));
	if (!ring)
		return ENOMEM;
	pthread_mutex_lock(&ctx->lock);
	if (cq->count > (uint32_t)cqe) {
		pthread_mutex_unlock(&ctx->lock);
		free(ring);
		return EINVAL;
	}
	for (uint32_t i = 0; i < cq->count; i++)
		ring[i] = cq->ring[(cq->head + i) % cq->cap];
	struct uw_wc *old = cq->ring;
	cq->ring = ring;
	cq->head = 0;
	cq->cap = (uint32_t)cqe;
	c->cqe = cqe;
	pthread_mutex_unlock(&ctx->lock);
	free(old);
	return 0;
}

int uw__cq_push(struct uw_cq_impl *cq, const struct uw_wc *wc)
{
	if (cq->count == cq->cap) {
		cq->overflow = true;
		return -ENOSPC;
	}
	struct uw_wc *slot = &cq->ring[(cq->head + cq->count) % cq->cap];
	*slot = *wc;
	if (wc->qp)
		slot->qp_num = wc->qp->qp_num;
	cq->count++;
	bool fire = cq->armed == 1 ||
		    (cq->armed == 2 && ((wc->wc_flags & UW_WC_SOLICITED) || wc->status != UW_WC_SUCCESS));
	if (fire && cq->pub.channel) {
		struct uw_channel_impl *ch = (struct uw_channel_impl *)cq->pub.channel;
		uint64_t one = 1;
		cq->armed = 0;
		if (!cq->queued) {
			uw_list_add_tail(&ch->events, &cq->fired);
			cq->queued = true;
		}
		if (write(ch->evfd, &one, sizeof(one)) < 0) {
			/* the counter cannot overflow in practice; nothing to do */
		}
	}
	uw__notify(cq->pub.context);
	return 0;
}

int uw_poll_cq(struct uw_cq *c, int n, struct uw_wc *wc)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	int k = 0;
	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->progress == UW_PROGRESS_MANUAL && !cq->count)
		uw__progress(ctx);
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	pthread_mutex_unlock(&ctx->lock);
	return k;
}

int uw_req_notify_cq(struct uw_cq *c, int solicited_only)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq || !c->channel)
		return EINVAL;
	pthread_mutex_lock(&c->context->lock);
	cq->armed = solicited_only ? 2 : 1;
	pthread_mutex_unlock(&c->context->lock);
	return 0;
}

int uw_get_cq_event(struct uw_comp_channel *c, struct uw_cq **cqp, void **cq_context)
{
	struct uw_channel_impl *ch = (struct uw_channel_impl *)c;
	if (!ch || !cqp)
		return EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		if (ctx->progress == UW_PROGRESS_MANUAL)
			uw__progress(ctx);
		if (!uw_list_empty(&ch->events)) {
			struct uw_cq_impl *cq = uw_container_of(ch->events.next, struct uw_cq_impl, fired);
			uw_list_del(&cq->fired);
			cq->queued = false;
			cq->events++;
			if (uw_list_empty(&ch->events)) {
				uint64_t v;
				if (read(ch->evfd, &v, sizeof(v)) < 0) {
					/* already zero: fine */
				}
			}
			*cqp = &cq->pub;
			if (cq_context)
				*cq_context = cq->pub.cq_context;
			pthread_mutex_unlock(&ctx->lock);
			return 0;
		}
		if (ch->nonblock) {
			pthread_mutex_unlock(&ctx->lock);
			return EAGAIN;
		}
		uw__wait(ctx, -1, -1);
	}
}

void uw_ack_cq_events(struct uw_cq *c, unsigned nevents)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq)
		return;
	pthread_mutex_lock(&c->context->lock);
	cq->acked += nevents;
	pthread_mutex_unlock(&c->context->lock);
}

int uw_cq_wait(struct uw_cq *c, int threshold, int timeout_ms)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq || threshold <= 0 || (uint32_t)threshold > cq->cap)
		return -EINVAL;
	struct uw_context *ctx = c->context;
	uint64_t deadline = timeout_ms >= 0 ? uw__now_ms() + (uint64_t)timeout_ms : 0;
	pthread_mutex_lock(&ctx->lock);
	for (;;) {
		if (ctx->progress == UW_PROGRESS_MANUAL)
			uw__progress(ctx);
		if (cq->count >= (uint32_t)threshold) {
			int n = (int)cq->count;
			pthread_mutex_unlock(&ctx->lock);
			return n;
		}
		int left = -1;
		if (timeout_ms >= 0) {
			uint64_t now = uw__now_ms();
			if (now >= deadline) {
				pthread_mutex_unlock(&ctx->lock);
				return -ETIMEDOUT;
			}
			left = (int)(deadline - now);
		}
		uw__wait(ctx, -1, left);
	}
}

void uw__cq_forget_qp(struct uw_cq_impl *cq, const struct uw_qp *qp)
{
	for (uint32_t k = 0; k < cq->count; k++) {
		struct uw_wc *wc = &cq->ring[(cq->head + k) % cq->cap];
		if (wc->qp == qp)
			wc->qp = NULL;
	}
}
