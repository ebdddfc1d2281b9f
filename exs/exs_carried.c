/*
 * exs_carried.c: the ES-API's calls on a descriptor a library above
 * carries itself (esock's DDP sockets under its preload): the operation is
 * the ES-API's (its queue, its application handle, the program's
 * descriptor in its event), and the library moves its bytes, in order with
 * the program's own read(2) and write(2) on the same socket, and ends it
 * with exs_carried_done. Calls that are no transfer are the socket calls
 * the library provides for its descriptors, made at once.
 *
 * Lock order: the library calls back with its socket's lock held and then
 * takes the runtime's, so the runtime's lock is never held while the
 * library is called.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "exs_internal.h"

static const struct exs_fd_carrier *_Atomic carrier;

void exs_set_fd_carrier(const struct exs_fd_carrier *c) { carrier = c; }

const struct exs_fd_carrier *exs__carrier(void) { return carrier; }

void exs_carried_done(void *o, int status, size_t bytes)
{
	struct exs_op *op = o;
	exs__lock();
	exs__op_complete(op, status, status ? -1 : (ssize_t)bytes);
	pthread_mutex_unlock(&exs_rt.lock);
}

ssize_t exs__carried_xfer(int fd, enum exs_op_kind kind, const struct iovec *iov, int iovcnt,
			  size_t total, int flags, exs_qhandle_t qh, exs_ahandle_t ahandle,
			  const exs_mhandle_t *mh)
{
	const struct exs_fd_carrier *c = carrier;
	exs__lock();
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, kind, qh, ahandle, &w);
	int err = op ? 0 : errno;
	if (op) {
		memcpy(op->iov, iov, (size_t)iovcnt * sizeof(*iov));
		op->iovcnt = iovcnt;
		op->len = total;
		op->flags = flags & MSG_WAITALL;
		/* handles are checked to cover the buffers, and held (a region
		 * in use cannot be deregistered) until the event */
		if (mh)
			err = -exs__op_mem(op, mh,
					   kind == OP_SEND ? EXS_ACCESS_READ : EXS_ACCESS_WRITE);
	}
	pthread_mutex_unlock(&exs_rt.lock);
	if (!err && !total) {
		/* nothing to move: as on any stream socket */
		exs__lock();
		exs__op_complete(op, 0, 0);
		return exs__finish(&w, qh);
	}
	if (!err)
		err = kind == OP_SEND ? c->send(fd, iov, iovcnt, mh, op)
				      : c->recv(fd, iov, iovcnt, flags & MSG_WAITALL, op);
	exs__lock();
	if (err) {
		if (op)
			exs__op_drop(op);
		pthread_mutex_unlock(&exs_rt.lock);
		errno = err;
		return -1;
	}
	/* (it may have ended already: then this returns at once) */
	return exs__finish(&w, qh);
}

/* shutdown or close, the library's own, made at once: its event, or its
 * result (the operation is made first: a full queue refuses the call
 * before anything is done) */
static int at_once(int fd, enum exs_op_kind kind, int how, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	exs__lock();
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, kind, qh, ahandle, &w);
	pthread_mutex_unlock(&exs_rt.lock);
	if (!op)
		return -1;
	/* shutdown: after the sends made before it; close: the library's
	 * receives end, its sends linger */
	const struct exs_fd_carrier *c = carrier;
	int err = (kind == OP_SHUTDOWN ? c->shutdown(fd, how) : c->close(fd)) ? errno : 0;
	exs__lock();
	exs__op_complete(op, err, 0);
	return (int)exs__finish(&w, qh);
}

int exs__carried_shutdown(int fd, int how, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	return at_once(fd, OP_SHUTDOWN, how, qh, ahandle);
}

int exs__carried_close(int fd, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	return at_once(fd, OP_CLOSE, 0, qh, ahandle);
}
