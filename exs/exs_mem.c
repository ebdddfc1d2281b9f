/*
 * exs_mem.c: registered memory, and the keys an operation's buffers use.
 */
#include <errno.h>
#include <stdlib.h>

#include "exs_internal.h"

static int uw_access(int access)
{
	/* Windows may be bound over any region: a receive's (below), or one
	 * exs_expose gives the peer. The region itself has no remote rights:
	 * every socket's QP shares the runtime's PD, and a region open to
	 * remote writes there would be open to every peer of the process. The
	 * peer writes a receive only through a window bound to its own QP. */
	(void)access;
	return UW_ACCESS_LOCAL_WRITE | UW_ACCESS_MW_BIND;
}

exs_mhandle_t exs_mregister(const void *addr, size_t len, int access)
{
	if (exs__ready())
		return EXS_MHANDLE_INVALID;
	if (!access) /* the ES-API's flags 0: for sends and receives alike */
		access = EXS_ACCESS_READ | EXS_ACCESS_WRITE;
	if (!addr || !len || (access & ~(EXS_ACCESS_READ | EXS_ACCESS_WRITE))) {
		errno = EINVAL;
		return EXS_MHANDLE_INVALID;
	}
	struct exs_mem *m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return EXS_MHANDLE_INVALID;
	}
	exs__lock();
	m->mr = uw_reg_mr(exs_rt.pd, (void *)addr, len, uw_access(access));
	int err = errno;
	pthread_mutex_unlock(&exs_rt.lock);
	if (!m->mr) {
		free(m);
		errno = err;
		return EXS_MHANDLE_INVALID;
	}
	m->addr = (uintptr_t)addr;
	m->len = len;
	m->access = access;
	return m;
}

int exs_mderegister(exs_mhandle_t *mh)
{
	if (!mh || !*mh) {
		errno = EINVAL;
		return -1;
	}
	struct exs_mem *m = *mh;
	exs__lock();
	if (m->users) {
		pthread_mutex_unlock(&exs_rt.lock);
		errno = EBUSY;
		return -1;
	}
	uw_dereg_mr(m->mr);
	pthread_mutex_unlock(&exs_rt.lock);
	free(m);
	*mh = EXS_MHANDLE_INVALID;
	return 0;
}

int exs__op_mem(struct exs_op *op, const exs_mhandle_t *mh, int access)
{
	for (int i = 0; i < op->iovcnt; i++) {
		uintptr_t a = (uintptr_t)op->iov[i].iov_base;
		size_t n = op->iov[i].iov_len;
		struct exs_mem *m = mh ? mh[i] : NULL;
		if (m) {
			/* a receive's memory is written by the peer: it must
			 * have been registered for that */
			if (a < m->addr || a + n > m->addr + m->len || a + n < a ||
			    ((access & EXS_ACCESS_WRITE) && !(m->access & EXS_ACCESS_WRITE)))
				return -EFAULT;
			m->users++;
			op->mem[i] = m;
			op->lkey[i] = m->mr->lkey;
			continue;
		}
		if (!n)
			continue;
		op->own[i] = uw_reg_mr(exs_rt.pd, op->iov[i].iov_base, n, uw_access(access));
		if (!op->own[i])
			return -errno;
		op->lkey[i] = op->own[i]->lkey;
	}
	return 0;
}

void exs__op_mem_release(struct exs_op *op)
{
	if (op->mw) {
		uw_dealloc_mw(op->mw); /* its key dies before the memory goes */
		op->mw = NULL;
	}
	for (int i = 0; i < op->iovcnt; i++) {
		if (op->mem[i])
			op->mem[i]->users--;
		if (op->own[i])
			uw_dereg_mr(op->own[i]);
		op->mem[i] = NULL;
		op->own[i] = NULL;
	}
	if (op->bounce_mr)
		uw_dereg_mr(op->bounce_mr);
	free(op->bounce);
	op->bounce_mr = NULL;
	op->bounce = NULL;
}

int exs__op_window(struct exs_sock *s, struct exs_op *op)
{
	struct uw_mr *mr = op->bounce_mr ? op->bounce_mr : op->mem[0] ? op->mem[0]->mr : op->own[0];
	void *buf = op->bounce ? op->bounce : op->iov[0].iov_base;
	if (!op->len || !mr)
		return 0;
	op->mw = uw_alloc_mw(exs_rt.pd);
	if (!op->mw)
		return -errno;
	int rc = uw_bind_mw(op->mw, s->qp, mr, buf, op->len, UW_ACCESS_REMOTE_WRITE);
	return -rc;
}

uint32_t exs__op_rkey(const struct exs_op *op)
{
	/* made when the receive was posted (exs_recvv); a region's own key
	 * is never sent (it has no remote rights) */
	return op->mw ? op->mw->rkey : 0;
}
