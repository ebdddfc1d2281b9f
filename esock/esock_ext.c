/*
 * esock_ext.c: the extended calls (esock.h): registered memory,
 * completion queues whose descriptors poll(2) can wait on, asynchronous
 * sends and receives on the stream, and one-sided writes and reads. Sends
 * and one-sided operations are exs operations on the socket's connection;
 * receives are served from the socket's receive buffers in order.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "esock_internal.h"
#include "util/evfd.h"

#define EXPORT __attribute__((visibility("default")))

struct esock_mr {
	exs_mhandle_t mh;
	uintptr_t addr;
	size_t len;
	int access;
};

struct esock_cq {
	int fd; /* an eventfd: readable while completions wait */
	pthread_mutex_t mu;
	struct esock_wc *wc;
	int cap, head, count, reserved;
	struct esock_cq *next;
};

static pthread_mutex_t cqs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct esock_cq *cqs;

static struct esock_cq *cq_of(int fd)
{
	pthread_mutex_lock(&cqs_mu);
	struct esock_cq *q = cqs;
	while (q && q->fd != fd)
		q = q->next;
	pthread_mutex_unlock(&cqs_mu);
	return q;
}

static int fail(int err)
{
	errno = err;
	return -1;
}

EXPORT esock_mr_t esock_mr_reg(void *addr, size_t len, int access)
{
	const int all = ESOCK_ACCESS_LOCAL | ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE;
	if (!addr || !len || !access || (access & ~all)) {
		errno = EINVAL;
		return NULL;
	}
	int rc = esock__engine();
	if (rc) {
		errno = -rc;
		return NULL;
	}
	struct esock_mr *m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	m->mh = exs_mregister(addr, len, EXS_ACCESS_READ | EXS_ACCESS_WRITE);
	if (m->mh == EXS_MHANDLE_INVALID) {
		int err = errno;
		free(m);
		errno = err;
		return NULL;
	}
	m->addr = (uintptr_t)addr;
	m->len = len;
	m->access = access;
	return m;
}

EXPORT int esock_mr_dereg(esock_mr_t m)
{
	if (!m)
		return fail(EINVAL);
	int rc = exs_mderegister(&m->mh);
	if (rc)
		return -1;
	free(m);
	return 0;
}

EXPORT int esock_cq_create(int depth)
{
	if (depth < 1 || depth > (1 << 20))
		return fail(EINVAL);
	struct esock_cq *q = calloc(1, sizeof(*q));
	if (q)
		q->wc = calloc((size_t)depth, sizeof(*q->wc));
	if (!q || !q->wc) {
		free(q);
		return fail(ENOMEM);
	}
	q->fd = util_evfd_open();
	if (q->fd < 0) {
		int err = errno;
		free(q->wc);
		free(q);
		return fail(err);
	}
	q->cap = depth;
	pthread_mutex_init(&q->mu, NULL);
	pthread_mutex_lock(&cqs_mu);
	q->next = cqs;
	cqs = q;
	pthread_mutex_unlock(&cqs_mu);
	return q->fd;
}

EXPORT int esock_cq_destroy(int fd)
{
	pthread_mutex_lock(&cqs_mu);
	struct esock_cq **pp = &cqs;
	while (*pp && (*pp)->fd != fd)
		pp = &(*pp)->next;
	struct esock_cq *q = *pp;
	int err = 0;
	if (!q) {
		err = EBADF;
	} else {
		pthread_mutex_lock(&q->mu);
		if (q->reserved)
			err = EBUSY;
		pthread_mutex_unlock(&q->mu);
		if (!err)
			*pp = q->next;
	}
	pthread_mutex_unlock(&cqs_mu);
	if (err)
		return fail(err);
	esock__close(q->fd);
	pthread_mutex_destroy(&q->mu);
	free(q->wc);
	free(q);
	return 0;
}

EXPORT int esock_cq_poll(int fd, struct esock_wc *wc, int n)
{
	struct esock_cq *q = cq_of(fd);
	if (!q)
		return fail(EBADF);
	if (!wc || n < 1)
		return fail(EINVAL);
	pthread_mutex_lock(&q->mu);
	int k = 0;
	while (k < n && q->count) {
		wc[k++] = q->wc[q->head];
		q->head = (q->head + 1) % q->cap;
		q->count--;
	}
	if (!q->count) {
		util_evfd_lower(q->fd);
	}
	pthread_mutex_unlock(&q->mu);
	return k;
}

/* a new operation completing on @cq: its place in the queue reserved */
static struct esock_aop *aop_new(int cqfd, int op, void *ctx)
{
	struct esock_cq *q = cq_of(cqfd);
	if (!q) {
		errno = EBADF;
		return NULL;
	}
	struct esock_aop *a = calloc(1, sizeof(*a));
	if (!a) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&q->mu);
	bool full = q->count + q->reserved >= q->cap;
	if (!full)
		q->reserved++;
	pthread_mutex_unlock(&q->mu);
	if (full) {
		free(a);
		errno = EAGAIN;
		return NULL;
	}
	a->tag = (struct esock_tag){ NULL, TAG_ASYNC, 0 };
	a->cq = q;
	a->ctx = ctx;
	a->op = op;
	return a;
}

/* an operation that was never posted: its place back */
static void aop_drop(struct esock_aop *a)
{
	pthread_mutex_lock(&a->cq->mu);
	a->cq->reserved--;
	pthread_mutex_unlock(&a->cq->mu);
	free(a);
}

void esock__async_done(struct esock_aop *a, int status, size_t bytes)
{
	if (a->carried) {
		exs_carried_done(a->carried, status, bytes);
		free(a);
		return;
	}
	struct esock_cq *q = a->cq;
	pthread_mutex_lock(&q->mu);
	q->wc[(q->head + q->count) % q->cap] = (struct esock_wc){
		.ctx = a->ctx, .op = a->op, .status = status, .bytes = status ? 0 : bytes
	};
	q->count++;
	q->reserved--;
	util_evfd_raise(q->fd);
	pthread_mutex_unlock(&q->mu);
	free(a);
}

void esock__serve_arecv(struct esock *e)
{
	struct esock_aop *a;
	while ((a = e->arecv)) {
		if (e->st == ES_CONNECTED)
			a->got += esock__take(e, a->iov, a->iovcnt, a->got, a->len - a->got, false);
		int err = 0;
		bool ended = e->eof || e->rd_shut || e->rstate[e->rhead] == RC_END;
		if (e->conn_err && e->rstate[e->rhead] != RC_FILLED) {
			if (!a->got)
				err = e->conn_err; /* (bytes before an error are the receive's) */
		} else if (!ended && (!a->got || (a->waitall && a->got < a->len))) {
			return; /* not yet */
		}
		e->arecv = a->next;
		if (!e->arecv)
			e->arecv_tail = NULL;
		esock__async_done(a, err, a->got);
	}
}

void esock__cancel_arecv(struct esock *e, int err)
{
	struct esock_aop *a;
	while ((a = e->arecv)) {
		e->arecv = a->next;
		esock__async_done(a, err, 0);
	}
	e->arecv_tail = NULL;
}

/* the DDP socket behind @fd, locked and connected; NULL with errno */
static struct esock *locked(int fd)
{
	struct esock *e = esock__get(fd);
	if (!e) {
		errno = REAL(fcntl)(fd, F_GETFD) < 0 ? EBADF : EOPNOTSUPP;
		return NULL;
	}
	if (esock__foreign(e)) {
		errno = ENOTCONN;
		return NULL;
	}
	pthread_mutex_lock(&e->mu);
	if (e->st != ES_CONNECTED || e->conn_err) {
		pthread_mutex_unlock(&e->mu);
		errno = ENOTCONN;
		return NULL;
	}
	return e;
}

static exs_mhandle_t mh_of(esock_mr_t mr) { return mr ? mr->mh : EXS_MHANDLE_INVALID; }

/* a send on the socket's connection (under e->mu: in order with
 * write(2)'s sends); 0 or an errno value */
static int post_send(struct esock *e, struct esock_aop *a, const struct iovec *iov, int iovcnt,
		     const exs_mhandle_t *mh)
{
	return exs_sendv(e->exs, iov, iovcnt, 0, esock_q, &a->tag, mh) < 0 ? errno : 0;
}

/* a receive behind those already waiting, served from the socket's
 * buffers in order with read(2)'s (under e->mu) */
static void queue_recv(struct esock *e, struct esock_aop *a)
{
	if (e->arecv_tail)
		e->arecv_tail->next = a;
	else
		e->arecv = a;
	e->arecv_tail = a;
	esock__serve_arecv(e);
	esock__update(e, false);
}

EXPORT int esock_send_async(int fd, const void *buf, size_t len, esock_mr_t mr, int cq, void *ctx)
{
	if (!buf || !len)
		return fail(EINVAL);
	struct esock *e = locked(fd);
	if (!e)
		return -1;
	if (e->wr_shut) {
		pthread_mutex_unlock(&e->mu);
		return fail(EPIPE);
	}
	struct esock_aop *a = aop_new(cq, ESOCK_OP_SEND, ctx);
	if (!a) {
		int err = errno;
		pthread_mutex_unlock(&e->mu);
		return fail(err);
	}
	struct iovec v = { (void *)buf, len };
	exs_mhandle_t mh = mh_of(mr);
	int err = post_send(e, a, &v, 1, mh ? &mh : NULL);
	pthread_mutex_unlock(&e->mu);
	if (err) {
		aop_drop(a);
		return fail(err);
	}
	return 0;
}

EXPORT int esock_recv_async(int fd, void *buf, size_t len, esock_mr_t mr, int cq, void *ctx)
{
	(void)mr; /* the bytes are copied out of the socket's own buffers */
	if (!buf || !len)
		return fail(EINVAL);
	struct esock *e = locked(fd);
	if (!e)
		return -1;
	struct esock_aop *a = aop_new(cq, ESOCK_OP_RECV, ctx);
	if (!a) {
		int err = errno;
		pthread_mutex_unlock(&e->mu);
		return fail(err);
	}
	a->iov[0] = (struct iovec){ buf, len };
	a->iovcnt = 1;
	a->len = len;
	queue_recv(e, a);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

/* ---- the ES-API's own calls on a DDP socket (exs_set_fd_carrier) ---- */

int esock__carry_send(int fd, const struct iovec *iov, int iovcnt, const exs_mhandle_t *mh,
		      void *op)
{
	struct esock *e = locked(fd);
	if (!e)
		return errno;
	struct esock_aop *a = e->wr_shut ? NULL : calloc(1, sizeof(*a));
	int err = e->wr_shut ? EPIPE : a ? 0 : ENOMEM;
	if (a) {
		a->tag = (struct esock_tag){ NULL, TAG_ASYNC, 0 };
		a->carried = op;
		a->op = ESOCK_OP_SEND;
		err = post_send(e, a, iov, iovcnt, mh);
	}
	pthread_mutex_unlock(&e->mu);
	if (err)
		free(a);
	return err;
}

int esock__carry_recv(int fd, const struct iovec *iov, int iovcnt, int flags, void *op)
{
	struct esock *e = locked(fd);
	if (!e)
		return errno;
	struct esock_aop *a = calloc(1, sizeof(*a));
	if (!a) {
		pthread_mutex_unlock(&e->mu);
		return ENOMEM;
	}
	a->carried = op;
	a->op = ESOCK_OP_RECV;
	memcpy(a->iov, iov, (size_t)iovcnt * sizeof(*iov));
	a->iovcnt = iovcnt;
	for (int i = 0; i < iovcnt; i++)
		a->len += iov[i].iov_len;
	a->waitall = flags & MSG_WAITALL;
	queue_recv(e, a);
	pthread_mutex_unlock(&e->mu);
	return 0;
}

EXPORT int esock_expose(int fd, esock_mr_t mr, void *addr, size_t len, int access,
			struct esock_remote *out)
{
	const int remote = ESOCK_ACCESS_REMOTE_READ | ESOCK_ACCESS_REMOTE_WRITE;
	if (!mr || !out || !access || (access & ~remote))
		return fail(EINVAL);
	if ((access & mr->access) != access)
		return fail(EACCES);
	struct esock *e = locked(fd);
	if (!e)
		return -1;
	struct exs_remote r;
	int xa = ((access & ESOCK_ACCESS_REMOTE_READ) ? EXS_REMOTE_READ : 0) |
		 ((access & ESOCK_ACCESS_REMOTE_WRITE) ? EXS_REMOTE_WRITE : 0);
	int rc = exs_expose(e->exs, mr->mh, addr, len, xa, &r);
	int err = errno;
	pthread_mutex_unlock(&e->mu);
	if (rc)
		return fail(err);
	*out = (struct esock_remote){ .addr = r.addr, .len = r.len, .stag = r.stag };
	return 0;
}

static int one_sided(int fd, bool write, void *buf, size_t len, esock_mr_t mr,
		     const struct esock_remote *rem, uint64_t off, int cq, void *ctx)
{
	if (!buf || !rem)
		return fail(EFAULT);
	struct esock *e = locked(fd);
	if (!e)
		return -1;
	struct esock_aop *a = aop_new(cq, write ? ESOCK_OP_WRITE : ESOCK_OP_READ, ctx);
	if (!a) {
		int err = errno;
		pthread_mutex_unlock(&e->mu);
		return fail(err);
	}
	struct exs_remote r = { .addr = rem->addr, .len = rem->len, .stag = rem->stag };
	ssize_t rc = write ? exs_rdma_write(e->exs, buf, len, mh_of(mr), &r, off, esock_q, &a->tag)
			   : exs_rdma_read(e->exs, buf, len, mh_of(mr), &r, off, esock_q, &a->tag);
	int err = errno;
	pthread_mutex_unlock(&e->mu);
	if (rc < 0) {
		aop_drop(a);
		return fail(err);
	}
	return 0;
}

EXPORT int esock_write_async(int fd, const void *buf, size_t len, esock_mr_t mr,
			     const struct esock_remote *rem, uint64_t off, int cq, void *ctx)
{
	return one_sided(fd, true, (void *)buf, len, mr, rem, off, cq, ctx);
}

EXPORT int esock_read_async(int fd, void *buf, size_t len, esock_mr_t mr,
			    const struct esock_remote *rem, uint64_t off, int cq, void *ctx)
{
	return one_sided(fd, false, buf, len, mr, rem, off, cq, ctx);
}
