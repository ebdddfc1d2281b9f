/*
 * exs_plain.c: the ES-API's calls on a stream socket the system made
 * (socket(2), accept(2)) and left in plain TCP: asynchronous I/O on the
 * TCP stream itself, so that an ES-API program talks to any TCP peer.
 *
 * Sends go out in the order they were made and complete once the kernel
 * has taken every byte; receives fill in order. Whoever holds the lock
 * moves the bytes, never blocking (MSG_DONTWAIT: the descriptor's own
 * flags are the program's): the calling thread at once, and the progress
 * thread when poll(2) says the socket is ready again.
 *
 * A socket is known here only while it has operations outstanding; once
 * it has none it is forgotten, so that the program's own send(2),
 * recv(2), shutdown(2) and close(2) between ES-API calls meet nothing
 * stale, and a descriptor number used again is a new socket. What the
 * stream knows (its end, an error, a shutdown) lives in the kernel.
 *
 * An accepted socket in DDP mode starts here too, sorted as esock sorts
 * its clients: its operations are held while the client's first bytes
 * are peeked at (at most ESOCK_PEEK_MS). An MPA Request's key hands the
 * connection to exs_ddp.c, and once that is established the held
 * operations move to its ES-API socket; anything else (or silence) and the
 * socket is the plain one it is, its operations run here.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "exs_internal.h"
#include "util/clock.h"
#include "util/ddpmode.h"

/* an accepted socket in DDP mode, its operations held (see above) */
enum plain_sort {
	SORT_NONE,      /* plain TCP: the operations run */
	SORT_PEEK,      /* waiting for the client's first bytes */
	SORT_NEGOTIATE, /* an MPA Request came: exs_ddp.c negotiates */
};

/* the longest an MPA exchange handed over may take before the held
 * operations fail: uwarp's Request timeout (5 s) and its wait for the
 * peer's first frame (10 s), with room to spare */
#define SORT_NEGOTIATE_MS 20000

struct exs_plain {
	int fd;
	struct util_list sends, recvs; /* struct exs_op, in the order made */
	int nsends, nrecvs;
	struct exs_op *shut_op;   /* SHUT_WR: once the sends before it are out */
	struct exs_op *close_op;  /* close(2): the same */
	uint64_t linger_deadline; /* ms clock: when a close stops waiting */
	bool rd_end;              /* the stream ended: later receives get 0 */
	int rd_err;               /* a receive failed: later ones fail alike */
	short polled;             /* what the progress thread waits for */
	enum plain_sort sort;
	uint64_t sort_deadline; /* ms clock */
	struct util_list link;  /* on exs_rt.plains */
};

/* (one system call: it is made on every call while the socket has no
 * operation outstanding, and getsockopt(2) itself tells a closed
 * descriptor, EBADF, from one that is not a socket, ENOTSOCK) */
int exs__fd_kind(int fd)
{
	int type = 0;
	socklen_t len = sizeof(type);
	if (fd < 0)
		return EBADF;
	if (util_sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len))
		return errno == EBADF ? EBADF : ENOTSOCK;
	return type == SOCK_STREAM ? 0 : EOPNOTSUPP;
}

static struct exs_plain *find(int fd)
{
	struct exs_plain *p;
	util_list_for_each(p, &exs_rt.plains, link)
		if (p->fd == fd)
			return p;
	return NULL;
}

bool exs__plain_known(int fd) { return find(fd) != NULL; }

/* find or make (under the lock); NULL: ENOMEM */
static struct exs_plain *get(int fd)
{
	struct exs_plain *p = find(fd);
	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->fd = fd;
	util_list_init(&p->sends);
	util_list_init(&p->recvs);
	util_list_add_tail(&exs_rt.plains, &p->link);
	return p;
}

static bool idle(const struct exs_plain *p)
{
	return util_list_empty(&p->sends) && util_list_empty(&p->recvs) && !p->shut_op &&
	       !p->close_op && p->sort == SORT_NONE;
}

static void forget_if_idle(struct exs_plain *p)
{
	if (!idle(p))
		return;
	util_list_del(&p->link);
	free(p);
}

/* the part of @op's buffers not yet moved, as an iovec */
static int rest_of(const struct exs_op *op, struct iovec *v)
{
	size_t skip = op->done;
	int n = 0;
	for (int i = 0; i < op->iovcnt; i++) {
		if (skip >= op->iov[i].iov_len) {
			skip -= op->iov[i].iov_len;
			continue;
		}
		v[n].iov_base = (char *)op->iov[i].iov_base + skip;
		v[n].iov_len = op->iov[i].iov_len - skip;
		skip = 0;
		n++;
	}
	return n;
}

static void end_sends(struct exs_plain *p, int err)
{
	struct exs_op *op;
	while ((op = exs__op_pop(&p->sends))) {
		p->nsends--;
		exs__op_complete(op, err, -1);
	}
}

/* the sends are out (or lost with @err): a half-close or a close waiting
 * for them happens now */
static void after_sends(struct exs_plain *p, int err)
{
	if (p->shut_op) {
		int rc = err ? err : util_sys_shutdown(p->fd, SHUT_WR) ? errno : 0;
		exs__op_complete(p->shut_op, rc, 0);
		p->shut_op = NULL;
	}
	if (p->close_op) {
		int rc = util_sys_close(p->fd) && !err ? errno : err;
		exs__op_complete(p->close_op, rc, 0);
		p->close_op = NULL;
		p->linger_deadline = 0;
	}
}

static void tx(struct exs_plain *p)
{
	struct exs_op *op;
	while ((op = exs__op_first(&p->sends))) {
		if (op->done < op->len) {
			struct iovec v[EXS_IOV_MAX];
			struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)rest_of(op, v) };
			ssize_t n = util_sys_sendmsg(p->fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n < 0) {
				/* the stream is broken: nothing after this goes */
				int err = errno;
				end_sends(p, err);
				after_sends(p, err);
				return;
			}
			op->done += (size_t)n;
			if (op->done < op->len)
				continue; /* (the kernel took part: try the rest) */
		}
		util_list_del(&op->link);
		p->nsends--;
		exs__op_complete(op, 0, (ssize_t)op->len);
	}
	after_sends(p, 0);
}

static void rx(struct exs_plain *p)
{
	struct exs_op *op;
	while ((op = exs__op_first(&p->recvs))) {
		int err = p->rd_err;
		if (!p->rd_end && !err && op->done < op->len) {
			struct iovec v[EXS_IOV_MAX];
			struct msghdr m = { .msg_iov = v, .msg_iovlen = (size_t)rest_of(op, v) };
			ssize_t n = util_sys_recvmsg(p->fd, &m, MSG_DONTWAIT);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
				return;
			if (n < 0)
				err = p->rd_err = errno;
			else if (n == 0)
				p->rd_end = true;
			else
				op->done += (size_t)n;
			if (n > 0 && (op->flags & MSG_WAITALL) && op->done < op->len)
				continue;
		}
		util_list_del(&op->link);
		p->nrecvs--;
		/* bytes that came before an error are the receive's; the error
		 * is the next one's (as recv(2) returns them) */
		if (op->done || !err)
			exs__op_complete(op, 0, (ssize_t)op->done);
		else
			exs__op_complete(op, err, -1);
	}
}

/* move what can move without waiting; the socket is forgotten when done */
static void progress(struct exs_plain *p)
{
	if (p->sort != SORT_NONE)
		return; /* held */
	tx(p);
	rx(p);
	forget_if_idle(p);
}

static short wants(const struct exs_plain *p)
{
	if (p->sort != SORT_NONE)
		return p->sort == SORT_PEEK ? POLLIN : 0;
	return (short)((util_list_empty(&p->recvs) ? 0 : POLLIN) |
		       (util_list_empty(&p->sends) ? 0 : POLLOUT));
}

/* every held operation fails with @err */
static void fail_held(struct exs_plain *p, int err)
{
	struct exs_op *op;
	end_sends(p, err);
	while ((op = exs__op_pop(&p->recvs))) {
		p->nrecvs--;
		exs__op_complete(op, err, -1);
	}
	if (p->shut_op) {
		exs__op_complete(p->shut_op, err, 0);
		p->shut_op = NULL;
	}
}

/* The sorting ends: plain TCP after all (@mpa false), or the MPA
 * exchange handed over; @late: the peek's time is up. */
static void sort_step(struct exs_plain *p, bool late)
{
	uint8_t b[UTIL_MPA_KEY_LEN];
	ssize_t n = util_sys_recv(p->fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	int v = n >= 0                              ? util_mpa_request_verdict(b, (size_t)n)
		: errno == EAGAIN || errno == EINTR ? -1
						    : 0;
	if (v < 0 && !late)
		return;
	if (v == 1) {
		int err = exs__ddp_passive(p->fd);
		if (!err) {
			p->sort = SORT_NEGOTIATE;
			p->sort_deadline = util_now_ms() + SORT_NEGOTIATE_MS;
			return;
		}
		/* the peer waits for an MPA Reply that will not come */
		util_sys_shutdown(p->fd, SHUT_RDWR);
		fail_held(p, err);
	}
	/* plain: the socket stays so (a mark, since this object goes once
	 * idle) and its operations run now */
	exs__ddp_set(p->fd, false);
	p->sort = SORT_NONE;
	p->sort_deadline = 0;
	progress(p);
}

int exs__plain_sort(int fd)
{
	struct exs_plain *p = get(fd);
	if (!p)
		return ENOMEM;
	p->sort = SORT_PEEK;
	p->sort_deadline = util_now_ms() + exs__ddp_peek_ms();
	sort_step(p, false); /* (the client may have spoken already) */
	if (p->sort == SORT_PEEK && exs_rt.sleeping)
		exs__wake(); /* its poll(2) must include this one */
	return 0;
}

void exs__plain_sorted(int fd, struct exs_sock *s, int err)
{
	struct exs_plain *p = find(fd);
	if (!p || p->sort != SORT_NEGOTIATE)
		return;
	p->sort = SORT_NONE;
	p->sort_deadline = 0;
	if (!s) {
		util_sys_shutdown(fd, SHUT_RDWR);
		fail_held(p, err);
		forget_if_idle(p);
		return;
	}
	/* in the order they were made: sends, then a half-close after them;
	 * receives on their own */
	struct exs_op *op;
	while ((op = exs__op_pop(&p->sends))) {
		p->nsends--;
		exs__ddp_repost(s, op);
	}
	while ((op = exs__op_pop(&p->recvs))) {
		p->nrecvs--;
		exs__ddp_repost(s, op);
	}
	if (p->shut_op) {
		exs__ddp_repost(s, p->shut_op);
		p->shut_op = NULL;
	}
	forget_if_idle(p);
}

/* after an application thread's progress: the progress thread, asleep,
 * must wait for what this socket still needs */
static void tell_thread(int fd)
{
	struct exs_plain *p = find(fd);
	if (p && exs_rt.sleeping && (wants(p) & ~p->polled))
		exs__wake();
}

/* a call refused with @err: the socket is forgotten again if the call
 * was all it had (NULL: it could not be made), and the lock let go */
static ssize_t refuse(struct exs_plain *p, int err)
{
	if (p)
		forget_if_idle(p);
	pthread_mutex_unlock(&exs_rt.lock);
	errno = err;
	return -1;
}

/* why a new send or receive cannot be made now (0: it can) */
static int xfer_refused(const struct exs_plain *p, bool send)
{
	if (p->close_op)
		return send ? EPIPE : EBADF;
	if (send && p->shut_op)
		return EPIPE;
	if (send ? p->nsends >= EXS_MAX_SENDS : p->nrecvs >= EXS_MAX_RECVS)
		return EAGAIN;
	return 0;
}

static struct exs_op *new_op(struct exs_plain *p, enum exs_op_kind kind, const struct iovec *iov,
			     int iovcnt, size_t total, exs_qhandle_t qh, exs_ahandle_t ahandle,
			     struct exs_sync *w)
{
	struct exs_op *op = exs__op_new(p->fd, kind, qh, ahandle, w);
	if (!op)
		return NULL;
	if (iovcnt)
		memcpy(op->iov, iov, (size_t)iovcnt * sizeof(*iov));
	op->iovcnt = iovcnt;
	op->len = total;
	return op;
}

/* a send or a receive: made, queued and moved as far as it goes now */
static ssize_t xfer(int fd, enum exs_op_kind kind, const struct iovec *iov, int iovcnt,
		    size_t total, int flags, exs_qhandle_t qh, exs_ahandle_t ahandle,
		    const exs_mhandle_t *mh)
{
	exs__lock();
	struct exs_plain *p = get(fd);
	if (!p)
		return refuse(NULL, ENOMEM);
	bool send = kind == OP_SEND;
	int err = xfer_refused(p, send);
	if (err)
		return refuse(p, err);
	struct exs_sync w;
	struct exs_op *op = new_op(p, kind, iov, iovcnt, total, qh, ahandle, &w);
	if (!op)
		return refuse(p, errno);
	/* a handle is checked to cover the buffers (the kernel copies: it
	 * needs no keys) */
	int rc = mh ? exs__op_mem(op, mh, send ? EXS_ACCESS_READ : EXS_ACCESS_WRITE) : 0;
	if (rc) {
		exs__op_drop(op);
		return refuse(p, -rc);
	}
	op->flags = flags & MSG_WAITALL;
	util_list_add_tail(send ? &p->sends : &p->recvs, &op->link);
	*(send ? &p->nsends : &p->nrecvs) += 1;
	progress(p);
	tell_thread(fd);
	return exs__finish(&w, qh);
}

ssize_t exs__plain_sendv(int fd, const struct iovec *iov, int iovcnt, size_t total,
			 exs_qhandle_t qh, exs_ahandle_t ahandle, const exs_mhandle_t *mh)
{
	return xfer(fd, OP_SEND, iov, iovcnt, total, 0, qh, ahandle, mh);
}

ssize_t exs__plain_recvv(int fd, const struct iovec *iov, int iovcnt, size_t total, int flags,
			 exs_qhandle_t qh, exs_ahandle_t ahandle, const exs_mhandle_t *mh)
{
	return xfer(fd, OP_RECV, iov, iovcnt, total, flags, qh, ahandle, mh);
}

static void cancel_recvs(struct exs_plain *p)
{
	struct exs_op *op;
	while ((op = exs__op_pop(&p->recvs))) {
		p->nrecvs--;
		exs__op_complete(op, ECANCELED, -1);
	}
}

int exs__plain_shutdown(int fd, int how, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	exs__lock();
	struct exs_plain *p = get(fd);
	if (!p)
		return (int)refuse(NULL, ENOMEM);
	if (p->close_op || (how != SHUT_RD && p->shut_op))
		return (int)refuse(p, p->close_op ? EBADF : EALREADY);
	if (how != SHUT_WR) {
		/* the system's SHUT_RD first: a receive made after it reads
		 * the end, as it would with recv(2) */
		if (util_sys_shutdown(fd, SHUT_RD))
			return (int)refuse(p, errno);
		cancel_recvs(p);
		if (how == SHUT_RD) {
			forget_if_idle(p);
			pthread_mutex_unlock(&exs_rt.lock);
			return 0;
		}
	}
	struct exs_sync w;
	struct exs_op *op = new_op(p, OP_SHUTDOWN, NULL, 0, 0, qh, ahandle, &w);
	if (!op)
		return (int)refuse(p, errno);
	p->shut_op = op;
	progress(p); /* (goes now when no send waits) */
	tell_thread(fd);
	return (int)exs__finish(&w, qh);
}

int exs__plain_close(int fd, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	exs__lock();
	exs__ddp_forget_mark(fd); /* (the number may name another socket next) */
	struct exs_plain *p = get(fd);
	if (!p)
		return (int)refuse(NULL, ENOMEM);
	if (p->close_op)
		return (int)refuse(p, EBADF);
	if (p->sort != SORT_NONE) {
		/* closed before its DDP mode was settled: what was held is
		 * cancelled, and a negotiation under way is dropped */
		if (p->sort == SORT_NEGOTIATE)
			exs__ddp_passive_drop(fd);
		p->sort = SORT_NONE;
		p->sort_deadline = 0;
		fail_held(p, ECANCELED);
	}
	struct exs_sync w;
	struct exs_op *op = new_op(p, OP_CLOSE, NULL, 0, 0, qh, ahandle, &w);
	if (!op)
		return (int)refuse(p, errno);
	/* receives are over; sends already made still go, for at most
	 * EXS_LINGER_MS, and the descriptor is closed after them */
	cancel_recvs(p);
	p->close_op = op;
	p->linger_deadline = util_now_ms() + EXS_LINGER_MS;
	progress(p);
	tell_thread(fd);
	return (int)exs__finish(&w, qh);
}

int exs__plain_pollfds(struct pollfd *pf, int room)
{
	int n = 0;
	struct exs_plain *p;
	util_list_for_each(p, &exs_rt.plains, link) {
		p->polled = n < room ? wants(p) : 0;
		if (p->polled)
			pf[n++] = (struct pollfd){ p->fd, p->polled, 0 };
	}
	return n;
}

int exs__plain_count(void)
{
	int n = 0;
	struct exs_plain *p;
	util_list_for_each(p, &exs_rt.plains, link)
		n++;
	return n;
}

void exs__plain_ready(const struct pollfd *pf, int n)
{
	for (int i = 0; i < n; i++) {
		struct exs_plain *p = pf[i].revents ? find(pf[i].fd) : NULL;
		if (p && p->sort == SORT_PEEK)
			sort_step(p, false);
		else if (p)
			progress(p);
	}
}

int exs__plain_linger(uint64_t now)
{
	uint64_t first = UINT64_MAX;
	struct exs_plain *p, *next;
	util_list_for_each_safe(p, next, &exs_rt.plains, link) {
		if (p->sort_deadline && p->sort_deadline <= now) {
			if (p->sort == SORT_PEEK) {
				sort_step(p, true);
			} else {
				/* the negotiation never ended: give up on it */
				exs__ddp_passive_drop(p->fd);
				exs__plain_sorted(p->fd, NULL, ETIMEDOUT);
			}
			continue; /* (it may be gone; its deadlines count next round) */
		}
		if (p->sort_deadline && p->sort_deadline < first)
			first = p->sort_deadline;
		if (!p->linger_deadline)
			continue;
		if (p->linger_deadline <= now) {
			/* the peer takes nothing: the sends are lost, and the
			 * close reports it */
			end_sends(p, ETIMEDOUT);
			after_sends(p, ETIMEDOUT);
			forget_if_idle(p);
			continue;
		}
		if (p->linger_deadline < first)
			first = p->linger_deadline;
	}
	return first == UINT64_MAX ? -1 : (int)(first - now);
}
