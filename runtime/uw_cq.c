/*
 * uw_cq.c: completion queues and completion channels.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "uw_internal.h"
#include "util/clock.h"

struct uw_comp_channel *uw_create_comp_channel(struct uw_context *ctx)
{
	struct uw_channel_impl *ch =
		uw__chan_create(ctx, sizeof(*ch), offsetof(struct uw_channel_impl, ch));
	return ch ? &ch->pub : NULL;
}

int uw_destroy_comp_channel(struct uw_comp_channel *c)
{
	return uw__chan_destroy(c, offsetof(struct uw_channel_impl, ch), false);
}

int uw_comp_channel_nonblock(struct uw_comp_channel *c, int nonblock)
{
	struct uw_channel_impl *ch = (struct uw_channel_impl *)c;
	if (!ch)
		return EINVAL;
	uw__chan_nonblock(&ch->ch, c->context, nonblock);
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
	cq->async_err.ev.cq = &cq->pub;
	util_list_init(&cq->fired);
	pthread_mutex_lock(&ctx->lock);
	if (channel)
		((struct uw_channel_impl *)channel)->ch.users++;
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
	if (c->channel) {
		struct uw__chan *ch = &((struct uw_channel_impl *)c->channel)->ch;
		if (cq->queued) {
			util_list_del(&cq->fired);
			uw__chan_settle(ch);
		}
		ch->users--;
	}
	struct uw__async_node *nodes[] = { &cq->async_err };
	uw__async_move(&cq->async, NULL, nodes, 1);
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
		if (!cq->overflow)
			uw__async_raise(cq->async, &cq->async_err, UW_EVENT_CQ_ERR);
		cq->overflow = true;
		return -ENOSPC;
	}
	struct uw_wc *slot = &cq->ring[(cq->head + cq->count) % cq->cap];
	*slot = *wc;
	if (wc->qp)
		slot->qp_num = wc->qp->qp_num;
	cq->count++;
	bool fire = cq->armed == 1 || (cq->armed == 2 && ((wc->wc_flags & UW_WC_SOLICITED) ||
							  wc->status != UW_WC_SUCCESS));
	if (fire && cq->pub.channel) {
		struct uw_channel_impl *ch = (struct uw_channel_impl *)cq->pub.channel;
		cq->armed = 0;
		if (!cq->queued) {
			uw__chan_push(&ch->ch, &cq->fired);
			cq->queued = true;
		}
	}
	uw__notify(cq->pub.context);
	return 0;
}

/* What uw_poll_cq does before it takes (uw_poll_cq_queued does none of
 * it, and leaves the lease alone: a caller that moves no data is no
 * progress for the engine to stand back for). Under the context's lock. */
static void move_first(struct uw_cq_impl *cq, struct uw_context *ctx)
{
	if (!cq->count) {
		/* Nothing to take: move what the network has, on this thread.
		 * With automatic progress that saves the hop through the engine
		 * thread (util/progress_lease.h); a poll of an armed CQ is the
		 * program's last look before it sleeps on the channel, and
		 * takes no lease. */
		if (ctx->progress == UW_PROGRESS_AUTO && !cq->armed)
			uw__progress_caller(ctx);
		else
			uw__progress(ctx);
	} else if (!cq->armed) {
		uw__lease_keep(ctx);
	}
}

/* @progress: uw_poll_cq (move first) or uw_poll_cq_queued (take only) */
static int poll_cq(struct uw_cq *c, int n, struct uw_wc *wc, bool progress)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	int k = 0;
	if (!cq || n < 0 || (n && !wc))
		return -EINVAL;
	struct uw_context *ctx = c->context;
	pthread_mutex_lock(&ctx->lock);
	if (progress)
		move_first(cq, ctx);
	while (k < n && cq->count) {
		wc[k++] = cq->ring[cq->head];
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	/* An empty ring starts again at its first entry: a CQ sized for
	 * many QPs then keeps its few busy entries on warm pages rather
	 * than touch a fresh page (a page fault) every few dozen entries
	 * through its first lap. */
	if (!cq->count)
		cq->head = 0;
	pthread_mutex_unlock(&ctx->lock);
	/* Nothing found with automatic progress: give the CPU to what else
	 * is runnable (a program spinning here on a small machine held the
	 * core that its engine thread or its peer needed:
	 * docs/performance.md); with nothing else runnable the call returns
	 * at once. */
	if (!k && n && progress && ctx->progress == UW_PROGRESS_AUTO)
		sched_yield();
	return k;
}

int uw_poll_cq(struct uw_cq *cq, int n, struct uw_wc *wc) { return poll_cq(cq, n, wc, true); }

int uw_poll_cq_queued(struct uw_cq *cq, int n, struct uw_wc *wc)
{
	return poll_cq(cq, n, wc, false);
}

int uw_req_notify_cq(struct uw_cq *c, int solicited_only)
{
	struct uw_cq_impl *cq = (struct uw_cq_impl *)c;
	if (!cq || !c->channel)
		return EINVAL;
	pthread_mutex_lock(&c->context->lock);
	cq->armed = solicited_only ? 2 : 1;
	uw__lease_release(c->context); /* it will sleep on the channel */
	pthread_mutex_unlock(&c->context->lock);
	return 0;
}

int uw_get_cq_event(struct uw_comp_channel *c, struct uw_cq **cqp, void **cq_context)
{
	struct uw_channel_impl *ch = (struct uw_channel_impl *)c;
	if (!ch || !cqp)
		return EINVAL;
	struct uw_context *ctx = c->context;
	int err = 0;
	pthread_mutex_lock(&ctx->lock);
	struct util_list *n = uw__chan_take(&ch->ch, ctx, -1, &err);
	if (n) {
		struct uw_cq_impl *cq = util_container_of(n, struct uw_cq_impl, fired);
		cq->queued = false;
		cq->events++;
		*cqp = &cq->pub;
		if (cq_context)
			*cq_context = cq->pub.cq_context;
	}
	pthread_mutex_unlock(&ctx->lock);
	return n ? 0 : err;
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
	uint64_t deadline = timeout_ms >= 0 ? util_now_ms() + (uint64_t)timeout_ms : 0;
	struct uw__spin_wait w = { 0 };
	int n;
	pthread_mutex_lock(&ctx->lock);
	/* once here; each wait below progresses when it ends */
	if (cq->count < (uint32_t)threshold)
		uw__progress_caller(ctx);
	for (;;) {
		if (cq->count >= (uint32_t)threshold) {
			n = (int)cq->count;
			break;
		}
		int left = -1;
		if (timeout_ms >= 0) {
			uint64_t now = util_now_ms();
			if (now >= deadline) {
				n = -ETIMEDOUT;
				break;
			}
			left = (int)(deadline - now);
		}
		uw__wait_spin(ctx, &w, left);
	}
	uw__wait_done(ctx, &w);
	pthread_mutex_unlock(&ctx->lock);
	return n;
}

void uw__cq_forget_qp(struct uw_cq_impl *cq, const struct uw_qp *qp)
{
	for (uint32_t k = 0; k < cq->count; k++) {
		struct uw_wc *wc = &cq->ring[(cq->head + k) % cq->cap];
		if (wc->qp == qp)
			wc->qp = NULL;
	}
}

const char *uw_wc_status_str(enum uw_wc_status s)
{
	switch (s) {
	case UW_WC_SUCCESS:
		return "success";
	case UW_WC_LOC_LEN_ERR:
		return "local length error";
	case UW_WC_LOC_PROT_ERR:
		return "local protection error";
	case UW_WC_WR_FLUSH_ERR:
		return "flushed";
	case UW_WC_REM_ACCESS_ERR:
		return "remote access error";
	case UW_WC_REM_OP_ERR:
		return "remote operation error";
	case UW_WC_FATAL_ERR:
		return "fatal error";
	case UW_WC_MW_BIND_ERR:
		return "memory window bind error";
	}
	return "unknown";
}
