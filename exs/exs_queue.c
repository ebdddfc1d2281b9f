/*
 * exs_queue.c: event queues, completing operations, exs_poll.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"
#include "util/clock.h"
#include "util/evfd.h"

struct exs_queue *exs__queue(exs_qhandle_t qh)
{
	struct exs_queue *q;
	util_list_for_each(q, &exs_rt.queues, link)
		if (q->qh == qh)
			return q;
	return NULL;
}

exs_qhandle_t exs_qcreate(int depth)
{
	if (exs__ready())
		return EXS_QHANDLE_INVALID;
	if (depth < 1) {
		errno = EINVAL;
		return EXS_QHANDLE_INVALID;
	}
	struct exs_queue *q = calloc(1, sizeof(*q));
	if (q)
		q->ev = calloc((size_t)depth, sizeof(*q->ev));
	if (!q || !q->ev) {
		free(q);
		errno = ENOMEM;
		return EXS_QHANDLE_INVALID;
	}
	q->qh = exs__eventfd();
	if (q->qh < 0) {
		int err = errno;
		free(q->ev);
		free(q);
		errno = err;
		return EXS_QHANDLE_INVALID;
	}
	q->cap = depth;
	util_list_init(&q->waiters);
	exs__lock();
	util_list_add_head(&exs_rt.queues, &q->link);
	pthread_mutex_unlock(&exs_rt.lock);
	return q->qh;
}

int exs_qresize(exs_qhandle_t qh, int depth)
{
	if (depth < 1) {
		errno = EINVAL;
		return -1;
	}
	/* allocated before the lock: the progress thread goes on meanwhile */
	exs_event_t *ev = calloc((size_t)depth, sizeof(*ev));
	if (!ev) {
		errno = ENOMEM;
		return -1;
	}
	exs__lock();
	struct exs_queue *q = exs__queue(qh);
	int err = !q ? EBADF : q->count + q->reserved > depth ? EINVAL : 0;
	if (!err) {
		for (int i = 0; i < q->count; i++)
			ev[i] = q->ev[(q->head + i) % q->cap];
		exs_event_t *old = q->ev;
		q->ev = ev;
		q->head = 0;
		q->cap = depth;
		ev = old;
	}
	pthread_mutex_unlock(&exs_rt.lock);
	free(ev);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int exs_qdelete(exs_qhandle_t qh)
{
	exs__lock();
	struct exs_queue *q = exs__queue(qh);
	int err = !q ? EBADF
		  : q->reserved || !util_list_empty(&q->waiters) || q->notify || q->notifying
			  ? EBUSY
			  : 0;
	if (!err)
		util_list_del(&q->link);
	pthread_mutex_unlock(&exs_rt.lock);
	if (err) {
		errno = err;
		return -1;
	}
	util_sys_close(q->qh);
	free(q->ev);
	free(q);
	return 0;
}

int exs_qnotify(exs_qhandle_t qh, exs_qnotify_fn fn, void *arg)
{
	if (exs__ready())
		return -1;
	exs__lock();
	struct exs_queue *q = exs__queue(qh);
	if (q) {
		q->notify = fn;
		q->notify_arg = arg;
		q->notify_due = fn && q->count > 0;
	}
	pthread_mutex_unlock(&exs_rt.lock);
	if (!q) {
		errno = EBADF;
		return -1;
	}
	if (fn)
		exs__wake();
	return 0;
}

void exs__run_notifies(void)
{
	bool again = true;
	while (again) {
		again = false;
		struct exs_queue *q;
		util_list_for_each(q, &exs_rt.queues, link) {
			/* One thread at a time runs a queue's notification: the
			 * progress thread and a thread waiting in exs_ppoll_here
			 * may both do a round, and a library's handler takes its
			 * events in order (esock freed a socket in one thread
			 * while the other still handled its receive). The one
			 * running it comes back here and runs it again for what
			 * came meanwhile. */
			if (!q->notify_due || !q->notify || q->notifying)
				continue;
			q->notify_due = false;
			q->notifying = true;
			exs_qnotify_fn fn = q->notify;
			void *arg = q->notify_arg;
			exs_qhandle_t qh = q->qh;
			pthread_mutex_unlock(&exs_rt.lock);
			fn(qh, arg);
			pthread_mutex_lock(&exs_rt.lock);
			q->notifying = false;
			again = true; /* the list may have changed meanwhile */
			break;
		}
	}
}

int exs__op_reserve(struct exs_queue *q)
{
	if (q->count + q->reserved >= q->cap) {
		errno = EAGAIN;
		return -1;
	}
	q->reserved++;
	return 0;
}

void exs__op_complete_ev(struct exs_op *op, exs_event_t *ev)
{
	ev->exs_evt_ahandle = op->ahandle;
	ev->exs_evt_fd = op->fd;
	if (op->sync) {
		op->sync->ev = *ev;
		op->sync->done = true;
		if (op->sync->fd >= 0)
			util_evfd_raise(op->sync->fd);
		pthread_cond_broadcast(&exs_rt.sync_cv);
		if (exs_rt.sync_waiting)
			exs_rt.handoff.woken = true; /* it wants the lock back */
	} else if (op->q) {
		struct exs_queue *q = op->q;
		q->ev[(q->head + q->count) % q->cap] = *ev;
		q->count++;
		q->reserved--;
		struct exs_qwaiter *w;
		util_list_for_each(w, &q->waiters, link)
			if (!w->woken && q->count >= w->want) {
				w->woken = true;
				util_evfd_raise(w->fd);
			}
		exs__changed();
		if (q->notify && !q->notify_due) {
			q->notify_due = true;
			if (!exs__on_progress_thread())
				exs__wake();
		}
	}
	exs__op_free(op);
}

void exs__op_complete(struct exs_op *op, int status, ssize_t bytes)
{
	static const int kinds[] = {
		[OP_SEND] = EXS_EVT_SEND,         [OP_RECV] = EXS_EVT_RECV,
		[OP_ACCEPT] = EXS_EVT_ACCEPT,     [OP_CONNECT] = EXS_EVT_CONNECT,
		[OP_SHUTDOWN] = EXS_EVT_SHUTDOWN, [OP_CLOSE] = EXS_EVT_CLOSE,
		[OP_ONESIDED] = EXS_EVT_RDMA
	};
	exs_event_t ev = { .exs_evt_type = kinds[op->kind], .exs_evt_errno = status };
	if (op->kind == OP_SEND || op->kind == OP_RECV || op->kind == OP_ONESIDED) {
		if (op->kind == OP_RECV && op->bounce && !status && bytes > 0) {
			/* a scattered receive: one copy into its buffers */
			size_t off = 0;
			for (int i = 0; i < op->iovcnt && off < (size_t)bytes; i++) {
				size_t n = op->iov[i].iov_len;
				if (n > (size_t)bytes - off)
					n = (size_t)bytes - off;
				memcpy(op->iov[i].iov_base, (uint8_t *)op->bounce + off, n);
				off += n;
			}
		}
		ev.exs_evt_union.xfer.buf = op->iovcnt ? op->iov[0].iov_base : NULL;
		ev.exs_evt_union.xfer.len = op->len;
		ev.exs_evt_union.xfer.bytes = status ? -1 : bytes;
		ev.exs_evt_union.xfer.flags = op->kind == OP_RECV ? (op->flags & MSG_TRUNC) : 0;
	}
	exs__op_complete_ev(op, &ev);
}

void exs__send_finished(struct exs_sock *s, struct exs_op *op, int status, ssize_t bytes)
{
	if (util_list_empty(&op->order)) { /* not in a stream's order */
		exs__op_complete(op, status, bytes);
		return;
	}
	op->finished = true;
	op->fin_status = status;
	op->fin_bytes = bytes;
	struct exs_op *h;
	while ((h = util_list_first(&s->send_order, struct exs_op, order)) && h->finished) {
		util_list_del(&h->order);
		exs__op_complete(h, h->fin_status, h->fin_bytes);
	}
}

void exs__op_free(struct exs_op *op)
{
	if (op->coal_busy)
		*op->coal_busy = false;
	exs__op_mem_release(op);
	free(op);
}

/* An application thread inside a call: EXS_FLOW_RDMA's senders move now
 * and, through the progress thread, until it leaves. */
static void app_enter(void)
{
	exs_rt.app_inside++;
	exs__app_progress();
}

static void app_leave(void) { exs_rt.app_inside--; }

/* this thread's eventfd for its waits (exs_qdequeue, the synchronous
 * calls): made at its first wait, closed when the thread ends */
static pthread_key_t waitfd_key;
static pthread_once_t waitfd_once = PTHREAD_ONCE_INIT;
static __thread int waitfd = -1;

static void waitfd_close(void *v) { util_sys_close((int)(intptr_t)v - 1); }
static void waitfd_key_make(void) { pthread_key_create(&waitfd_key, waitfd_close); }

static int thread_waitfd(void)
{
	if (waitfd < 0) {
		pthread_once(&waitfd_once, waitfd_key_make);
		waitfd = exs__eventfd();
		if (waitfd >= 0)
			pthread_setspecific(waitfd_key, (void *)(intptr_t)(waitfd + 1));
	}
	return waitfd;
}

static void sync_cv_wait(void)
{
	exs__flush_held(); /* (no advert waits for a send while it sleeps) */
	exs__flush_idle(); /* (nor an IDLE for its next receive) */
	exs_rt.sync_waiting++;
	pthread_cond_wait(&exs_rt.sync_cv, &exs_rt.lock);
	exs_rt.sync_waiting--;
	exs__lock_taken();
}

void exs__sync_wait_change(void)
{
	app_enter();
	sync_cv_wait();
	app_leave();
}

/* Sleep on this thread's eventfd (exs_rt.lock held, let go meanwhile)
 * for at most @ms (-1: no bound). The progress thread moves the data
 * meanwhile, not this one (exs_ppoll_here, which esock's waits use): a
 * bulk receiver whose one thread both read the stream and posted its
 * receives again posted them late, and the paper's rules, once a sender
 * found no advert, stayed in the ring for good (MSG_WAITALL at 8 sends and
 * 16 receives, direct ratio 0.006 against 0.9998; docs/performance.md,
 * "The ES-API's own waits"). The poll's result. */
static int fd_wait(int fd, int ms)
{
	exs__flush_idle(); /* (the program has done with what it took) */
	pthread_mutex_unlock(&exs_rt.lock);
	struct pollfd p = { fd, POLLIN, 0 };
	struct timespec t = util_ms_timespec(ms >= 0 ? (uint64_t)ms : 0);
	int n = util_sys_ppoll(&p, 1, ms >= 0 ? &t : NULL, NULL);
	int err = errno;
	exs__lock();
	if (n > 0)
		util_evfd_lower(fd);
	errno = err;
	return n;
}

void exs__sync_wait(struct exs_sync *w)
{
	app_enter();
	w->fd = thread_waitfd();
	while (!w->done) {
		if (w->fd < 0)
			sync_cv_wait();
		else
			fd_wait(w->fd, -1); /* (a signal does not end it) */
	}
	w->fd = -1;
	app_leave();
}

/* Wait (exs_rt.lock held, let go meanwhile) until @q holds @want events,
 * @deadline_ms passes (0: none) or a signal handler runs: 0, or EINTR. */
static int queue_wait(struct exs_queue *q, int want, uint64_t deadline_ms)
{
	struct exs_qwaiter w = { .fd = thread_waitfd(), .want = want };
	if (w.fd < 0)
		return errno;
	util_list_add_tail(&q->waiters, &w.link);
	int err = 0;
	app_enter();
	while (q->count < want) {
		int ms = -1;
		if (deadline_ms) {
			uint64_t now = util_now_ms();
			if (now >= deadline_ms)
				break;
			ms = deadline_ms - now > INT32_MAX ? INT32_MAX : (int)(deadline_ms - now);
		}
		w.woken = false;
		int n = fd_wait(w.fd, ms);
		err = n < 0 ? errno : 0;
		if (err == EINTR)
			break;
		err = 0;
	}
	app_leave();
	util_list_del(&w.link);
	/* what came meanwhile is taken, as recv(2) returns data that beat
	 * the signal */
	return err && q->count < want ? err : 0;
}

int exs_qdequeue(exs_qhandle_t qh, exs_event_t *events, int count, const struct timespec *timeout)
{
	if ((!events && count) || (timeout && (timeout->tv_sec < 0 || timeout->tv_nsec < 0 ||
					       timeout->tv_nsec >= 1000000000))) {
		errno = EINVAL;
		return -1;
	}
	exs__lock();
	struct exs_queue *q = exs__queue(qh);
	if (!q) {
		pthread_mutex_unlock(&exs_rt.lock);
		errno = EBADF;
		return -1;
	}
	int want = count < 0 ? -count : 0;
	if (want > q->cap) {
		pthread_mutex_unlock(&exs_rt.lock);
		errno = EINVAL;
		return -1;
	}
	if (q->count < want) {
		/* (a timeout is rounded up to whole milliseconds: no spinning;
		 * a zero one looks without waiting) */
		uint64_t ms = timeout ? (uint64_t)timeout->tv_sec * 1000 +
						((uint64_t)timeout->tv_nsec + 999999) / 1000000
				      : 0;
		int err = timeout && !ms ? 0 : queue_wait(q, want, ms ? util_now_ms() + ms : 0);
		if (err) {
			pthread_mutex_unlock(&exs_rt.lock);
			errno = err;
			return -1;
		}
	}
	int n = count < 0 ? (q->count < want ? q->count : want)
			  : (q->count < count ? q->count : count);
	for (int i = 0; i < n; i++) {
		events[i] = q->ev[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
	}
	pthread_mutex_unlock(&exs_rt.lock);
	return n;
}

static short sock_revents(struct exs_sock *s, short events)
{
	short r = 0;
	if (s->st == S_LISTENING) {
		if (s->nready)
			r |= POLLIN;
	} else if (s->st == S_CONNECTED || s->st == S_CLOSED) {
		if (s->type == SOCK_STREAM && exs__stream_readable(s))
			r |= POLLIN;
		if (exs_fin_peer_ended(&s->fin))
			r |= POLLIN | POLLRDHUP;
		if (s->st == S_CONNECTED && !exs_fin_wr_shut(&s->fin) && s->nsends < EXS_MAX_SENDS)
			r |= POLLOUT;
		if (s->st == S_CLOSED)
			r |= POLLHUP | POLLIN;
	}
	if (s->error)
		r |= POLLERR;
	return r & (events | POLLHUP | POLLERR);
}

int exs_poll(struct pollfd *fds, nfds_t nfds, int timeout_ms)
{
	if (nfds && !fds) {
		errno = EFAULT;
		return -1;
	}
	struct pollfd *os = calloc(nfds + 1, sizeof(*os));
	int *at = calloc(nfds + 1, sizeof(*at)); /* fds[i] is os[at[i]], or -1 */
	if (!os || !at) {
		free(os);
		free(at);
		errno = ENOMEM;
		return -1;
	}
	int me = exs__eventfd();
	if (me < 0) {
		free(os);
		free(at);
		return -1;
	}
	uint64_t deadline = timeout_ms >= 0 ? util_now_ms() + (uint64_t)timeout_ms : 0;
	int ready = -1;
	exs__lock();
	bool registered =
		exs_rt.npollers < (int)(sizeof(exs_rt.pollers) / sizeof(exs_rt.pollers[0]));
	if (registered)
		exs_rt.pollers[exs_rt.npollers++] = me;
	app_enter();
	for (;;) {
		/* ES-API objects answer from their state; the rest go to poll(2)
		 * together with our wake-up descriptor */
		int nos = 0;
		ready = 0;
		for (nfds_t i = 0; i < nfds; i++) {
			fds[i].revents = 0;
			at[i] = -1;
			struct exs_sock *s = exs__sock(fds[i].fd);
			struct exs_queue *q = s ? NULL : exs__queue(fds[i].fd);
			if (s)
				fds[i].revents = sock_revents(s, fds[i].events);
			else if (q)
				fds[i].revents = q->count ? (fds[i].events & POLLIN) : 0;
			else {
				at[i] = nos;
				os[nos++] = fds[i];
			}
			ready += fds[i].revents != 0;
		}
		int wait = ready ? 0
			   : timeout_ms < 0
				   ? -1
				   : (int)(deadline > util_now_ms() ? deadline - util_now_ms() : 0);
		if (!registered && wait != 0 && (wait < 0 || wait > 10))
			wait = 10; /* too many pollers to tell: look again soon */
		os[nos] = (struct pollfd){ me, POLLIN, 0 };
		pthread_mutex_unlock(&exs_rt.lock);
		/* (a descriptor a library above carries is ready as the
		 * kernel says: esock keeps its end of the socket pair readable
		 * while data it holds waits. The progress thread moves the
		 * data meanwhile, as for exs_qdequeue (fd_wait): a server's
		 * accept loop here that moved it left the streams its other
		 * threads serve with late adverts) */
		struct timespec t = util_ms_timespec(wait > 0 ? (uint64_t)wait : 0);
		int n = wait ? util_sys_ppoll(os, (nfds_t)nos + 1, wait > 0 ? &t : NULL, NULL)
			     : util_sys_poll(os, (nfds_t)nos + 1, 0);
		exs__lock();
		if (n < 0) {
			ready = -1;
			break;
		}
		for (nfds_t i = 0; i < nfds; i++) {
			if (at[i] < 0)
				continue;
			fds[i].revents = os[at[i]].revents;
			ready += fds[i].revents != 0;
		}
		if (os[nos].revents)
			util_evfd_lower(me);
		if (ready || (timeout_ms >= 0 && util_now_ms() >= deadline))
			break;
	}
	app_leave();
	if (registered)
		for (int i = 0; i < exs_rt.npollers; i++)
			if (exs_rt.pollers[i] == me) {
				exs_rt.pollers[i] = exs_rt.pollers[--exs_rt.npollers];
				break;
			}
	int err = errno;
	pthread_mutex_unlock(&exs_rt.lock);
	util_sys_close(me);
	free(os);
	free(at);
	errno = err;
	return ready;
}
