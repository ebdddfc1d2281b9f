/*
 * ibv_mw.c: memory windows, reached through the context's ops as
 * rdma-core's inline ibv_alloc_mw, ibv_dealloc_mw and ibv_bind_mw call
 * them, and the IBV_WR_BIND_MW request of ibv_post_send (ibv_post.c).
 *
 * Both types are uwarp windows; what differs is who may use one and who
 * picks its key. A type 1 window is bound with ibv_bind_mw, for any QP of
 * its PD, and gets a key uwarp draws at random; a type 2 window is bound
 * by a send request, for that QP only, with the key the program chose
 * (ibv_inc_rkey), as the InfiniBand specification assigns them. Either
 * bind is a request in the QP's send queue: it takes effect and completes
 * (IBV_WC_BIND_MW, if signalled) in order, and the new rkey is in
 * mw->rkey when the call returns.
 */
#include <errno.h>
#include <stdlib.h>

#include "ibv_internal.h"

static struct ibv_mw *alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	struct uwv_mw *w = calloc(1, sizeof(*w));
	if (!w) {
		errno = ENOMEM;
		return NULL;
	}
	w->uw = uw_alloc_mw(uwv_from(pd, struct uwv_pd)->uw);
	if (!w->uw) {
		int e = errno;
		free(w);
		errno = e;
		return NULL;
	}
	w->ibv.context = pd->context;
	w->ibv.pd = pd;
	w->ibv.rkey = w->uw->rkey;
	w->ibv.type = type;
	return &w->ibv;
}

static int dealloc_mw(struct ibv_mw *mw)
{
	struct uwv_mw *w = uwv_from(mw, struct uwv_mw);
	int rc = uw_dealloc_mw(w->uw);
	if (rc == 0)
		free(w);
	return rc;
}

int uwv_bind_to_uw(struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *b,
		   struct uw_send_wr *u, const char *call)
{
	const unsigned remote =
		IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	if (!mw)
		return EINVAL;
	if (b->mw_access_flags & ~remote)
		return uwv_debug(EINVAL, call,
				 "window rights other than remote read, write and atomic "
				 "(zero-based windows)");
	int a = 0;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_WRITE)
		a |= UW_ACCESS_REMOTE_WRITE;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_READ)
		a |= UW_ACCESS_REMOTE_READ;
	if (b->mw_access_flags & IBV_ACCESS_REMOTE_ATOMIC)
		a |= UW_ACCESS_REMOTE_ATOMIC;
	u->opcode = UW_WR_BIND_MW;
	u->sg_list = NULL;
	u->num_sge = 0; /* a bind carries no data, whatever num_sge says */
	u->bind.mw = uwv_from(mw, struct uwv_mw)->uw;
	u->bind.mr = b->mr ? uwv_from(b->mr, struct uwv_mr)->uw : NULL;
	u->bind.addr = b->addr;
	u->bind.length = b->length;
	u->bind.access = a;
	u->bind.any_qp = mw->type == IBV_MW_TYPE_1;
	u->bind.rkey = rkey;
	return 0;
}

static int bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *bind)
{
	if (!qp || !bind)
		return EINVAL;
	unsigned known = IBV_SEND_SIGNALED | IBV_SEND_FENCE;
	if (bind->send_flags & ~known)
		return uwv_debug(EINVAL, "ibv_bind_mw", "a send flag a bind has not");
	struct uw_send_wr u = { .wr_id = bind->wr_id };
	if (bind->send_flags & IBV_SEND_SIGNALED)
		u.send_flags |= UW_SEND_SIGNALED;
	if (bind->send_flags & IBV_SEND_FENCE)
		u.send_flags |= UW_SEND_FENCE;
	int rc = uwv_bind_to_uw(mw, 0, &bind->bind_info, &u, "ibv_bind_mw");
	if (!rc)
		rc = uw_post_send(uwv_from(qp, struct uwv_qp)->uw, &u, NULL);
	if (!rc)
		mw->rkey = uwv_from(mw, struct uwv_mw)->uw->rkey;
	return rc;
}

void uwv_mw_ops(struct ibv_context *c)
{
	c->ops.alloc_mw = alloc_mw;
	c->ops.dealloc_mw = dealloc_mw;
	c->ops.bind_mw = bind_mw;
}
