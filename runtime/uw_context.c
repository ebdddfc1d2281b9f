/*
 * uw_context.c: the context, its lock and event loop, and the two ways
 * progress happens (the application's calls, or an engine thread).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "uw_internal.h"
#include "util/clock.h"
#include "util/env_ms.h"
#include "util/evfd.h"
#include "util/spin.h"

/* Fills buf from the kernel: getrandom, or /dev/urandom where a sandbox
 * refuses the system call. With neither there is no safe STag to give. */
static void kernel_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	while (len) {
		ssize_t n = getrandom(p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (!len)
		return;
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	while (fd >= 0 && len) {
		ssize_t n = util_sys_read(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		p += n;
		len -= (size_t)n;
	}
	if (fd >= 0)
		util_sys_close(fd);
	if (len) {
		fprintf(stderr,
			"uwarp: no random bytes from the kernel (getrandom, /dev/urandom)\n");
		abort();
	}
}

uint32_t uw__random32(struct uw_context *ctx)
{
	/* the kernel's CSPRNG, a system call per 64 draws: a peer that has
	 * seen its own STags learns nothing of the next ones */
	if (!ctx->rand_left) {
		kernel_random(ctx->rand_pool, sizeof(ctx->rand_pool));
		ctx->rand_left = sizeof(ctx->rand_pool) / sizeof(ctx->rand_pool[0]);
	}
	return ctx->rand_pool[--ctx->rand_left];
}

static uint32_t stag_random(void *ctx) { return uw__random32(ctx); }

void uw__progress(struct uw_context *ctx) { uv_run(&ctx->loop, UV_RUN_NOWAIT); }

int uw_sleep_begin(struct uw_context *ctx, struct pollfd pf[2])
{
	pthread_mutex_lock(&ctx->lock);
	uw__flush_held(ctx); /* (UW_SEND_MORE: nothing stays held while a thread sleeps) */
	pf[0] = (struct pollfd){ uv_backend_fd(&ctx->loop), POLLIN, 0 };
	pf[1] = (struct pollfd){ ctx->bell, POLLIN, 0 };
	int t = uv_backend_timeout(&ctx->loop);
	util_lease_sleep_begin(&ctx->lease); /* uw__notify rings for it */
	pthread_mutex_unlock(&ctx->lock);
	return t;
}

/* a sleeper in the loop's poll woke (under the lock) */
static void sleep_end(struct uw_context *ctx)
{
	/* an engine that stood back long for it takes over after its lease */
	if (util_lease_sleep_end(&ctx->lease) && ctx->engine_parked)
		pthread_cond_signal(&ctx->cond);
	if (!ctx->lease.sleepers && ctx->bell_up) {
		util_evfd_lower(ctx->bell);
		ctx->bell_up = false;
	}
}

void uw_sleep_end(struct uw_context *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	sleep_end(ctx);
	pthread_mutex_unlock(&ctx->lock);
}

int uw_progress_timeout(struct uw_context *ctx)
{
	if (!ctx)
		return -1;
	pthread_mutex_lock(&ctx->lock);
	int t = uv_backend_timeout(&ctx->loop);
	pthread_mutex_unlock(&ctx->lock);
	return t;
}

void uw__progress_caller(struct uw_context *ctx)
{
	uw__progress(ctx);
	if (ctx->progress == UW_PROGRESS_AUTO)
		util_lease_take(&ctx->lease, util_now_ns());
}

void uw__lease_keep(struct uw_context *ctx)
{
	if (ctx->progress == UW_PROGRESS_AUTO)
		util_lease_keep(&ctx->lease, util_now_ns());
}

void uw__lease_release(struct uw_context *ctx)
{
	if (ctx->progress != UW_PROGRESS_AUTO)
		return;
	util_lease_release(&ctx->lease);
	if (ctx->engine_parked)
		pthread_cond_signal(&ctx->cond);
}

void uw__kick(struct uw_context *ctx)
{
	/* libuv applies a watcher's or timer's change when the loop next
	 * runs: whoever sleeps in its poll must wake and run it. That is
	 * the engine thread or a waiter here, and with manual progress also
	 * a thread asleep on a channel's descriptor in a poll of its own,
	 * which the loop's backend is part of (the ES-API's waits: a socket
	 * accepted in the loop's last run before such a sleep was not read
	 * until something else woke it) */
	uv_async_send(&ctx->wake);
}

void uw__notify(struct uw_context *ctx)
{
	/* Called with the lock: any thread asleep in the loop's poll is
	 * another, and may wait for this completion or event; the readiness
	 * that made it may be taken already, so its poll must be ended by
	 * hand. Not with the loop's own async handle: libuv skips the write
	 * while one is pending, and the loop runner then drains it unseen. */
	if (ctx->lease.sleepers && !ctx->bell_up) {
		util_evfd_raise(ctx->bell);
		ctx->bell_up = true;
	}
}

int uw__wait(struct uw_context *ctx, int fd, int timeout_ms)
{
	uint64_t start = util_now_ms();

	/* With either kind of progress the waiting thread sleeps on the
	 * loop itself and progresses when it wakes: the completion it waits
	 * for is made on its own thread (with automatic progress the engine
	 * thread stands back meanwhile: util/progress_lease.h). */
	uw__flush_held(ctx); /* (UW_SEND_MORE: nothing stays held while a thread sleeps) */
	struct pollfd p[3] = { { uv_backend_fd(&ctx->loop), POLLIN, 0 },
			       { ctx->bell, POLLIN, 0 },
			       { fd, POLLIN, 0 } };
	int t = uv_backend_timeout(&ctx->loop);
	if (t < 0 || (timeout_ms >= 0 && timeout_ms < t))
		t = timeout_ms;
	util_lease_sleep_begin(&ctx->lease);
	pthread_mutex_unlock(&ctx->lock);
	util_sys_poll(p, fd >= 0 ? 3 : 2, t);
	pthread_mutex_lock(&ctx->lock);
	sleep_end(ctx);
	uw__progress_caller(ctx);
	if (timeout_ms >= 0 && util_now_ms() - start >= (uint64_t)timeout_ms)
		return -ETIMEDOUT;
	return 0;
}

/* the spin of this thread's waits (util/spin.h) */
static _Thread_local struct util_spin spin;

int uw__wait_spin(struct uw_context *ctx, struct uw__spin_wait *w, int timeout_ms)
{
	uint64_t now = util_now_ns();
	if (!w->begun) {
		w->begun = true;
		w->spin_until = now + util_spin_ns(&spin, ctx->spin_ns);
	}
	if (now >= w->spin_until || !timeout_ms) {
		if (!w->slept_at)
			w->slept_at = now;
		return uw__wait(ctx, -1, timeout_ms);
	}
	pthread_mutex_unlock(&ctx->lock);
	sched_yield();
	/* another task had this CPU meanwhile: sleep from now on */
	if (!util_spin_yielded(&spin, util_now_ns() - now))
		w->spin_until = 0;
	pthread_mutex_lock(&ctx->lock);
	uw__progress_caller(ctx);
	return 0;
}

void uw__wait_done(struct uw_context *ctx, struct uw__spin_wait *w)
{
	if (w->begun)
		util_spin_ended(&spin, ctx->spin_ns, w->slept_at ? util_now_ns() - w->slept_at : 0);
}

static void wake_cb(uv_async_t *h) { (void)h; /* only here to end a poll of the loop */ }

static void *engine_thread(void *arg)
{
	struct uw_context *ctx = arg;
	pthread_setname_np(pthread_self(), "uwarp-engine"); /* (top -H, gdb, perf) */
	pthread_mutex_lock(&ctx->lock);
	while (!ctx->stopping) {
		/* what UW_SEND_MORE held while this thread would look within a
		 * lease (uw_qp.c, may_hold) */
		uw__flush_held(ctx);
		uint64_t now = util_now_ns();
		uint64_t until = util_lease_engine_waits(&ctx->lease, now);
		if (until) {
			/* a thread of the program moves the data */
			struct timespec ts = util_deadline(0, (long)(until - now));
			ctx->engine_parked = true;
			ctx->engine_looks_by = until;
			pthread_cond_timedwait(&ctx->cond, &ctx->lock, &ts);
			ctx->engine_parked = false;
			ctx->engine_looks_by = 0;
			continue;
		}
		struct pollfd p = { uv_backend_fd(&ctx->loop), POLLIN, 0 };
		int t = uv_backend_timeout(&ctx->loop);
		ctx->engine_looks_by = t < 0 ? UINT64_MAX : now + (uint64_t)t * 1000000u;
		pthread_mutex_unlock(&ctx->lock);
		util_sys_poll(&p, 1, t);
		pthread_mutex_lock(&ctx->lock);
		ctx->engine_looks_by = 0;
		uw__progress(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	return NULL;
}

struct uw_context *uw_open(const struct uw_context_attr *attr)
{
	struct uw_context *ctx = calloc(1, sizeof(*ctx));
	int rc;

	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->progress = attr ? attr->progress : UW_PROGRESS_MANUAL;
	if (ctx->progress != UW_PROGRESS_MANUAL && ctx->progress != UW_PROGRESS_AUTO) {
		free(ctx);
		errno = EINVAL;
		return NULL;
	}
	ctx->rxbuf = malloc(UW_CONN_RXBUF_MARKERS);
	if (!ctx->rxbuf) {
		free(ctx);
		errno = ENOMEM;
		return NULL;
	}
	ctx->reply_timeout_ms =
		attr && attr->mpa_reply_timeout_ms
			? attr->mpa_reply_timeout_ms
			: util_env_ms("uwarp", "UWARP_MPA_REPLY_MS", UW_MPA_REPLY_MS_DEFAULT, 1,
				      UW_MPA_REPLY_MS_MAX);
	ctx->spin_ns = (uint64_t)util_env_uint("uwarp", "UWARP_SPIN_US", "microseconds",
					       UW_SPIN_US_DEFAULT, 0, 1000000) *
		       1000u;
	ctx->recv_wait_ms =
		util_env_ms("uwarp", "UWARP_RECV_WAIT_MS", UW_RECV_WAIT_MS_DEFAULT, 0, 600000);
	ctx->request_timeout_ms =
		attr && attr->mpa_request_timeout_ms ? attr->mpa_request_timeout_ms : 5000;
	ctx->next_qpn = 1;
	ctx->next_pd = 1;
	ctx->stag_free = UINT32_MAX;
	stag_table_init(&ctx->stag_ix, stag_random, ctx);
	util_list_init(&ctx->conns);
	util_list_init(&ctx->held);
	pthread_mutex_init(&ctx->lock, NULL);
	util_cond_init(&ctx->cond);
	ctx->bell = util_evfd_open();
	rc = ctx->bell < 0 ? -errno : uv_loop_init(&ctx->loop);
	if (rc)
		goto fail;
	rc = uv_async_init(&ctx->loop, &ctx->wake, wake_cb);
	if (rc) {
		uv_loop_close(&ctx->loop);
		goto fail;
	}
	if (ctx->progress == UW_PROGRESS_AUTO) {
		rc = -pthread_create(&ctx->thread, NULL, engine_thread, ctx);
		if (rc) {
			uv_close((uv_handle_t *)&ctx->wake, NULL);
			uv_run(&ctx->loop, UV_RUN_DEFAULT);
			uv_loop_close(&ctx->loop);
			goto fail;
		}
		ctx->thread_running = true;
	}
	return ctx;
fail:
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
	if (ctx->bell >= 0)
		util_sys_close(ctx->bell);
	free(ctx->rxbuf);
	free(ctx);
	errno = -rc;
	return NULL;
}

int uw_close(struct uw_context *ctx)
{
	if (!ctx)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	if (ctx->nobjects) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	/* connections of destroyed ids may still be closing their sockets;
	 * one that lingers after its Terminate need not wait for its peer */
	for (struct util_list *l = ctx->conns.next; l != &ctx->conns; l = l->next) {
		struct uw_conn *c = util_container_of(l, struct uw_conn, link);
		if (c->life.st == UW_LIFE_LINGER)
			uw__conn_close(c, 0, UW_EV_NONE); /* stays listed until its handles close */
	}
	while (!util_list_empty(&ctx->conns))
		uw__wait(ctx, -1, 10);
	ctx->stopping = true;
	uv_async_send(&ctx->wake);
	pthread_cond_signal(&ctx->cond); /* an engine standing back */
	pthread_mutex_unlock(&ctx->lock);
	if (ctx->thread_running)
		pthread_join(ctx->thread, NULL);
	uv_close((uv_handle_t *)&ctx->wake, NULL);
	uv_run(&ctx->loop, UV_RUN_DEFAULT);
	uv_loop_close(&ctx->loop);
	pthread_mutex_destroy(&ctx->lock);
	pthread_cond_destroy(&ctx->cond);
	util_sys_close(ctx->bell);
	free(ctx->stags);
	stag_table_free(&ctx->stag_ix);
	uw__txsets_free(ctx);
	free(ctx->rxbuf);
	free(ctx);
	return 0;
}
