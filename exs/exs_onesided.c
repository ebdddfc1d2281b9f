/*
 * exs_onesided.c: one-sided RDMA Write and Read on an ES-API connection,
 * into memory the peer exposed through a window of its own (a uwarp
 * extension; esock's extended calls are built on it). They go on the
 * connection's QP after the stream's transfers already posted, and do not
 * touch the stream.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "exs_internal.h"

static int unlock_err(int err)
{
	pthread_mutex_unlock(&exs_rt.lock);
	errno = err;
	return err ? -1 : 0;
}

int exs_expose(int fd, exs_mhandle_t mh, const void *addr, size_t len, int access,
	       struct exs_remote *out)
{
	if (!mh || !addr || !len || !out || !access ||
	    (access & ~(EXS_REMOTE_READ | EXS_REMOTE_WRITE))) {
		errno = EINVAL;
		return -1;
	}
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	if (s->st != S_CONNECTED || !s->qp)
		return unlock_err(ENOTCONN);
	uintptr_t a = (uintptr_t)addr;
	if (a < mh->addr || len > mh->len || a - mh->addr > mh->len - len)
		return unlock_err(EFAULT);
	if ((access & EXS_REMOTE_WRITE) && !(mh->access & EXS_ACCESS_WRITE))
		return unlock_err(EACCES);
	struct exs_window *w = calloc(1, sizeof(*w));
	if (!w)
		return unlock_err(ENOMEM);
	w->mw = uw_alloc_mw(exs_rt.pd);
	int uwa = ((access & EXS_REMOTE_READ) ? UW_ACCESS_REMOTE_READ : 0) |
		  ((access & EXS_REMOTE_WRITE) ? UW_ACCESS_REMOTE_WRITE : 0);
	int rc = w->mw ? uw_bind_mw(w->mw, s->qp, mh->mr, (void *)addr, len, uwa) : ENOMEM;
	if (rc) {
		if (w->mw)
			uw_dealloc_mw(w->mw);
		free(w);
		return unlock_err(rc);
	}
	w->mem = mh;
	mh->users++; /* the region stays while the peer may reach it */
	util_list_add_head(&s->windows, &w->link);
	*out = (struct exs_remote){ .addr = a, .len = len, .stag = w->mw->rkey };
	return unlock_err(0);
}

static void window_free(struct exs_window *w)
{
	uw_dealloc_mw(w->mw);
	w->mem->users--;
	free(w);
}

int exs_unexpose(int fd, const struct exs_remote *r)
{
	if (!r) {
		errno = EINVAL;
		return -1;
	}
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	struct exs_window *w;
	util_list_for_each(w, &s->windows, link)
		if (w->mw->rkey == r->stag) {
			util_list_del(&w->link);
			window_free(w);
			return unlock_err(0);
		}
	return unlock_err(ENOENT);
}

void exs__windows_free(struct exs_sock *s)
{
	struct exs_window *w;
	while ((w = util_list_first(&s->windows, struct exs_window, link))) {
		util_list_del(&w->link);
		window_free(w);
	}
}

static ssize_t one_sided(int fd, bool write, void *buf, size_t len, exs_mhandle_t mh,
			 const struct exs_remote *r, uint64_t off, exs_qhandle_t qh,
			 exs_ahandle_t ahandle)
{
	if (!buf || !len || len > UINT32_MAX || !r || off > r->len || len > r->len - off) {
		errno = !buf || !r ? EFAULT : EINVAL;
		return -1;
	}
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	if (s->st != S_CONNECTED || !s->qp)
		return unlock_err(s->st == S_CLOSED && s->error ? s->error : ENOTCONN);
	if (s->sq_out + 1 > EXS_SQ_DEPTH)
		return unlock_err(EAGAIN);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_ONESIDED, qh, ahandle, &w);
	if (!op)
		return unlock_err(errno);
	op->iov[0] = (struct iovec){ buf, len };
	op->iovcnt = 1;
	op->len = len;
	exs_mhandle_t mhs[1] = { mh };
	int rc = exs__op_mem(op, mhs, write ? EXS_ACCESS_READ : EXS_ACCESS_WRITE);
	if (rc) {
		exs__op_drop(op);
		return unlock_err(-rc);
	}
	struct uw_sge sge = { (uintptr_t)buf, (uint32_t)len, op->lkey[0] };
	struct uw_send_wr wr = { .wr_id = exs__onesided_wr_id(op),
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = write ? UW_WR_RDMA_WRITE : UW_WR_RDMA_READ,
				 .send_flags = UW_SEND_SIGNALED,
				 .rdma = { r->addr + off, r->stag } };
	rc = uw_post_send(s->qp, &wr, NULL);
	if (rc) {
		exs__op_drop(op);
		return unlock_err(rc);
	}
	s->sq_out++;
	exs__kick();
	if (qh != EXS_QHANDLE_INVALID)
		return unlock_err(0);
	exs__sync_wait(&w);
	pthread_mutex_unlock(&exs_rt.lock);
	if (w.ev.exs_evt_errno) {
		errno = w.ev.exs_evt_errno;
		return -1;
	}
	return (ssize_t)len;
}

ssize_t exs_rdma_write(int fd, const void *buf, size_t len, exs_mhandle_t mh,
		       const struct exs_remote *to, uint64_t off, exs_qhandle_t qh,
		       exs_ahandle_t ahandle)
{
	return one_sided(fd, true, (void *)buf, len, mh, to, off, qh, ahandle);
}

ssize_t exs_rdma_read(int fd, void *buf, size_t len, exs_mhandle_t mh,
		      const struct exs_remote *from, uint64_t off, exs_qhandle_t qh,
		      exs_ahandle_t ahandle)
{
	return one_sided(fd, false, buf, len, mh, from, off, qh, ahandle);
}
