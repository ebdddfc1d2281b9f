/*
 * uw_channel.c: the one channel type, used twice: a completion channel
 * (its events are CQs that fired) and a CM event channel (its events are
 * connection events). Both are a queue under the context lock with a
 * descriptor that poll and epoll see readable exactly while the queue is
 * not empty, and, with manual progress, while network input waits too (so
 * that a program sleeping on it wakes to call in and move the data).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "uw_internal.h"
#include "util/clock.h"
#include "util/evfd.h"

/* The descriptor a program waits on: an epoll set of the channel's flag
 * and, with manual progress, the loop's backend. */
static int channel_fd(struct uw_context *ctx, int evfd)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN };
	if (ep < 0)
		return -errno;
	ev.data.fd = evfd;
	if (util_sys_epoll_ctl(ep, EPOLL_CTL_ADD, evfd, &ev))
		goto fail;
	/* With manual progress nobody else watches the sockets: the channel
	 * fd must wake its owner when network input waits, so that the next
	 * call moves it (and may find nothing: a spurious wakeup). */
	if (ctx->progress == UW_PROGRESS_MANUAL) {
		ev.data.fd = uv_backend_fd(&ctx->loop);
		if (util_sys_epoll_ctl(ep, EPOLL_CTL_ADD, ev.data.fd, &ev))
			goto fail;
	}
	return ep;
fail:;
	int e = errno;
	util_sys_close(ep);
	return -e;
}

int uw__chan_open(struct uw__chan *ch, struct uw_context *ctx, int *fd)
{
	ch->evfd = util_evfd_open();
	if (ch->evfd < 0)
		return errno;
	util_list_init(&ch->events);
	ch->nonblock = false;
	ch->users = 0;
	pthread_mutex_lock(&ctx->lock);
	*fd = channel_fd(ctx, ch->evfd);
	if (*fd >= 0)
		ctx->nobjects++;
	pthread_mutex_unlock(&ctx->lock);
	if (*fd < 0) {
		int e = -*fd;
		util_sys_close(ch->evfd);
		return e;
	}
	return 0;
}

int uw__chan_close(struct uw__chan *ch, struct uw_context *ctx, int fd, bool refuse_queued)
{
	pthread_mutex_lock(&ctx->lock);
	if (ch->users || (refuse_queued && !util_list_empty(&ch->events))) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	ctx->nobjects--;
	pthread_mutex_unlock(&ctx->lock);
	util_sys_close(fd);
	util_sys_close(ch->evfd);
	return 0;
}

/* Both public channel types begin so (checked below): the shared create
 * and destroy fill and read these two fields. */
struct chan_pub {
	struct uw_context *context;
	int fd;
};
_Static_assert(offsetof(struct uw_comp_channel, context) == offsetof(struct chan_pub, context) &&
		       offsetof(struct uw_comp_channel, fd) == offsetof(struct chan_pub, fd) &&
		       offsetof(struct uw_cm_channel, context) ==
			       offsetof(struct chan_pub, context) &&
		       offsetof(struct uw_cm_channel, fd) == offsetof(struct chan_pub, fd),
	       "a public channel begins with its context and descriptor");

void *uw__chan_create(struct uw_context *ctx, size_t size, size_t off)
{
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	uint8_t *impl = calloc(1, size);
	if (!impl) {
		errno = ENOMEM;
		return NULL;
	}
	struct chan_pub *pub = (struct chan_pub *)(void *)impl;
	int rc = uw__chan_open((struct uw__chan *)(void *)(impl + off), ctx, &pub->fd);
	if (rc) {
		free(impl);
		errno = rc;
		return NULL;
	}
	pub->context = ctx;
	return impl;
}

int uw__chan_destroy(void *impl, size_t off, bool refuse_queued)
{
	if (!impl)
		return EINVAL;
	struct chan_pub *pub = impl;
	int rc = uw__chan_close((struct uw__chan *)(void *)((uint8_t *)impl + off), pub->context,
				pub->fd, refuse_queued);
	if (!rc)
		free(impl);
	return rc;
}

void uw__chan_nonblock(struct uw__chan *ch, struct uw_context *ctx, int nonblock)
{
	pthread_mutex_lock(&ctx->lock);
	ch->nonblock = nonblock;
	pthread_mutex_unlock(&ctx->lock);
}

void uw__chan_push(struct uw__chan *ch, struct util_list *n)
{
	util_list_add_tail(&ch->events, n);
	util_evfd_raise(ch->evfd);
}

void uw__chan_settle(struct uw__chan *ch)
{
	if (util_list_empty(&ch->events))
		util_evfd_lower(ch->evfd);
}

struct util_list *uw__chan_take(struct uw__chan *ch, struct uw_context *ctx, int timeout_ms,
				int *err)
{
	uint64_t deadline = timeout_ms >= 0 ? util_now_ms() + (uint64_t)timeout_ms : 0;
	struct uw__spin_wait w = { 0 };
	struct util_list *n = NULL;
	/* once here; each wait below progresses when it ends */
	if (util_list_empty(&ch->events))
		uw__progress_caller(ctx);
	for (;;) {
		if (!util_list_empty(&ch->events)) {
			n = ch->events.next;
			util_list_del(n);
			uw__chan_settle(ch);
			break;
		}
		int left = -1;
		if (ch->nonblock)
			left = 0;
		else if (timeout_ms >= 0) {
			uint64_t now = util_now_ms();
			left = now >= deadline ? 0 : (int)(deadline - now);
		}
		if (left == 0) {
			if (ch->nonblock)
				uw__lease_release(ctx); /* it sleeps on the descriptor */
			*err = ch->nonblock ? EAGAIN : ETIMEDOUT;
			break;
		}
		uw__wait_spin(ctx, &w, left);
	}
	uw__wait_done(ctx, &w);
	return n;
}
