/*
 * exs_io.c: exs_send, exs_recv and their vector forms.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "exs_internal.h"
#include "util/mem_range.h"

ssize_t exs__finish(struct exs_sync *w, exs_qhandle_t qh)
{
	if (qh != EXS_QHANDLE_INVALID) {
		pthread_mutex_unlock(&exs_rt.lock);
		return 0;
	}
	exs__sync_wait(w);
	pthread_mutex_unlock(&exs_rt.lock);
	if (w->ev.exs_evt_errno) {
		errno = w->ev.exs_evt_errno;
		return -1;
	}
	int t = w->ev.exs_evt_type;
	return t == EXS_EVT_SEND || t == EXS_EVT_RECV ? w->ev.exs_evt_union.xfer.bytes : 0;
}

static ssize_t fail(int err)
{
	pthread_mutex_unlock(&exs_rt.lock);
	errno = err;
	return -1;
}

/* The vector's total, which a call must be able to return (EINVAL past
 * SSIZE_MAX, as send(2)); memory with no handle is checked to be mapped
 * (EFAULT, never a crash when it is read or written later). Memory with
 * handles is checked against them (exs__op_mem). */
static int check_iov(const struct iovec *iov, int iovcnt, const exs_mhandle_t *mh, size_t *total)
{
	if (!iov || iovcnt < 1 || iovcnt > EXS_IOV_MAX)
		return EINVAL;
	size_t t = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (!iov[i].iov_base && iov[i].iov_len)
			return EFAULT;
		if (t + iov[i].iov_len < t || t + iov[i].iov_len > SSIZE_MAX)
			return EINVAL;
		t += iov[i].iov_len;
	}
	for (int i = 0; !mh && i < iovcnt; i++) {
		int err = mem_range_check(iov[i].iov_base, iov[i].iov_len);
		if (err)
			return err;
	}
	*total = t;
	return 0;
}

ssize_t exs_sendv(int fd, const struct iovec *iov, int iovcnt, int flags, exs_qhandle_t qh,
		  exs_ahandle_t ahandle, const exs_mhandle_t *mh)
{
	size_t total;
	int err = check_iov(iov, iovcnt, mh, &total);
	if (err || (flags & ~(MSG_NOSIGNAL | MSG_DONTWAIT))) {
		errno = err ? err : EINVAL;
		return -1;
	}
	int route;
	struct exs_sock *s = exs__lock_sock_or_switch(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN
			       ? exs__plain_sendv(fd, iov, iovcnt, total, qh, ahandle, mh)
		       : route == EXS_ROUTE_CARRIED ? exs__carried_xfer(fd, OP_SEND, iov, iovcnt,
									total, 0, qh, ahandle, mh)
						    : -1;
	if (exs_fin_wr_shut(&s->fin) || (s->st == S_CLOSED && !s->error))
		return fail(EPIPE);
	if (s->st == S_CLOSED)
		return fail(s->error);
	if (s->st != S_CONNECTED)
		return fail(ENOTCONN);
	if (s->type == SOCK_SEQPACKET && total > EXS_MSG_MAX)
		return fail(EMSGSIZE);
	if (s->nsends >= EXS_MAX_SENDS)
		return fail(EAGAIN);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_SEND, qh, ahandle, &w);
	if (!op)
		return fail(errno);
	memcpy(op->iov, iov, (size_t)iovcnt * sizeof(*iov));
	op->iovcnt = iovcnt;
	op->len = total;
	int rc = exs__send_post(s, op, mh);
	/* an advert held for this send (MSG_MORE) left with it; or the
	 * send waits (no advert, no room): the advert goes alone now */
	exs__flush_held();
	if (rc) {
		exs__op_drop(op);
		return fail(-rc);
	}
	return exs__finish(&w, qh);
}

int exs__send_post(struct exs_sock *s, struct exs_op *op, const exs_mhandle_t *mh)
{
	/* a handle is checked first; memory without one is registered only
	 * when the send is not copied */
	int rc = mh ? exs__op_mem(op, mh, EXS_ACCESS_READ) : 0;
	if (rc)
		return rc;
	if (s->type == SOCK_STREAM)
		util_list_add_tail(&s->send_order, &op->order);
	if (!op->len && s->type == SOCK_STREAM) {
		/* nothing to move: a byte stream has no empty messages */
		exs__send_finished(s, op, 0, 0);
		return 0;
	}
	if (s->type == SOCK_STREAM && exs__stream_coalesce(s, op->iov, op->iovcnt, op->len)) {
		exs__send_finished(s, op, 0, (ssize_t)op->len);
		/* behind transfers in flight a copy waits for their
		 * completions, which the progress thread handles; into an idle
		 * pipe the thread takes it, with the copies made meanwhile
		 * (EXS_FLOW_RDMA: without the thread, a call is the chance) */
		if (s->flow == EXS_FLOW_RDMA) {
			exs__progress(s);
		} else if (s->fl_count < EXS_COALESCE_INFLIGHT && !s->pending) {
			exs__mark_pending(s);
			exs__wake();
		}
		return 0;
	}
	if (!mh && (rc = exs__op_mem(op, NULL, EXS_ACCESS_READ))) {
		util_list_del(&op->order);
		return rc;
	}
	util_list_add_tail(&s->sends, &op->link);
	s->nsends++;
	exs__progress(s);
	return 0;
}

ssize_t exs_send(int fd, const void *buf, size_t len, int flags, exs_qhandle_t qh,
		 exs_ahandle_t ahandle, exs_mhandle_t mh)
{
	struct iovec v = { (void *)buf, len };
	return exs_sendv(fd, &v, 1, flags, qh, ahandle, mh ? &mh : NULL);
}

ssize_t exs_recvv(int fd, const struct iovec *iov, int iovcnt, int flags, exs_qhandle_t qh,
		  exs_ahandle_t ahandle, const exs_mhandle_t *mh)
{
	size_t total;
	int err = check_iov(iov, iovcnt, mh, &total);
	if (err || (flags & ~(MSG_WAITALL | MSG_MORE | MSG_DONTWAIT | MSG_NOSIGNAL))) {
		errno = err ? err : EINVAL;
		return -1;
	}
	int route;
	struct exs_sock *s = exs__lock_sock_or_switch(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN
			       ? exs__plain_recvv(fd, iov, iovcnt, total, flags, qh, ahandle, mh)
		       : route == EXS_ROUTE_CARRIED
			       ? exs__carried_xfer(fd, OP_RECV, iov, iovcnt, total, flags, qh,
						   ahandle, mh)
			       : -1;
	if (s->st != S_CONNECTED && s->st != S_CLOSED)
		return fail(ENOTCONN);
	if (s->nrecvs >= EXS_MAX_RECVS)
		return fail(EAGAIN);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_RECV, qh, ahandle, &w);
	if (!op)
		return fail(errno);
	memcpy(op->iov, iov, (size_t)iovcnt * sizeof(*iov));
	op->iovcnt = iovcnt;
	op->len = total;
	op->flags = flags & (MSG_WAITALL | MSG_MORE);
	/* the end already came (or reading was shut down), and nothing is
	 * left to read: 0 bytes, the end of the stream */
	bool ended = s->fin.rd_shut ||
		     (s->st == S_CLOSED && util_list_empty(&s->recvs) &&
		      !(s->type == SOCK_STREAM && exs__stream_readable(s))) ||
		     (exs_fin_peer_ended(&s->fin) && util_list_empty(&s->recvs) &&
		      !(s->type == SOCK_STREAM && exs__stream_readable(s)));
	if (ended) {
		if (s->st == S_CLOSED && !exs_fin_rd_ended(&s->fin) && s->error) {
			exs__op_drop(op);
			return fail(s->error);
		}
		exs__op_complete(op, 0, 0);
		return exs__finish(&w, qh);
	}
	int rc = exs__recv_post(s, op, mh);
	if (rc) {
		exs__op_drop(op);
		return fail(-rc);
	}
	return exs__finish(&w, qh);
}

int exs__recv_post(struct exs_sock *s, struct exs_op *op, const exs_mhandle_t *mh)
{
	int rc = 0;
	if (op->iovcnt > 1 && op->len) {
		/* the peer writes into one contiguous buffer: scatter later */
		op->bounce = malloc(op->len);
		/* the peer writes it through the window bound below */
		op->bounce_mr = op->bounce ? uw_reg_mr(exs_rt.pd, op->bounce, op->len,
						       UW_ACCESS_LOCAL_WRITE | UW_ACCESS_MW_BIND)
					   : NULL;
		if (!op->bounce_mr)
			rc = -ENOMEM;
	} else {
		rc = exs__op_mem(op, mh, EXS_ACCESS_WRITE);
	}
	if (!rc && s->type == SOCK_STREAM && !op->len) {
		/* as recv(2) with no room: 0 at once */
		exs__op_complete(op, 0, 0);
		return 0;
	}
	/* a receive the peer may write into gets its own window (before the
	 * protocol knows of it: nothing to undo there when this fails); a
	 * receive is posted only on a connected socket, so every advertised
	 * one has it */
	if (!rc && s->st == S_CONNECTED && exs__advertises(s))
		rc = exs__op_window(s, op);
	if (!rc)
		rc = s->type == SOCK_STREAM ? exs__stream_recv_post(s, op)
					    : exs__seq_recv_post(s, op);
	if (rc)
		return rc;
	util_list_add_tail(&s->recvs, &op->link);
	s->nrecvs++;
	if (!s->adv_next && s->type == SOCK_SEQPACKET)
		s->adv_next = op;
	if (s->st == S_CLOSED) {
		/* the connection is gone: only the ring's data is left */
		exs__recvs_after_close(s);
	} else {
		exs__progress(s);
	}
	return 0;
}

ssize_t exs_recv(int fd, void *buf, size_t len, int flags, exs_qhandle_t qh, exs_ahandle_t ahandle,
		 exs_mhandle_t mh)
{
	struct iovec v = { buf, len };
	return exs_recvv(fd, &v, 1, flags, qh, ahandle, mh ? &mh : NULL);
}
