/*
 * uw_mem.c: protection domains, memory regions, memory windows, and the
 * STag table every tagged access is checked against.
 *
 * STag = index << 8 | key. The index is drawn at random from the 24-bit
 * space and held back for a while once freed (stag_table.h), and the
 * 8-bit key is drawn again at each registration or bind, so a stale or
 * guessed STag misses. Index 0 is never used: STags below 256 name
 * nothing (siw's RTR uses STag 1 with zero length, which needs no lookup).
 * Entries live in a dense array of slots; the index names a slot.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem_range.h"
#include "uw_internal.h"

static uint32_t rights_of(int access)
{
	uint32_t r = 0;
	if (access & UW_ACCESS_LOCAL_WRITE)
		r |= DDP_LOCAL_WRITE;
	if (access & UW_ACCESS_REMOTE_WRITE)
		r |= DDP_REMOTE_WRITE;
	if (access & UW_ACCESS_REMOTE_READ)
		r |= DDP_REMOTE_READ;
	if (access & UW_ACCESS_REMOTE_ATOMIC)
		r |= DDP_REMOTE_ATOMIC;
	return r;
}

/* A free slot, named by a fresh random index (e->index). */
static int stag_alloc(struct uw_context *ctx, uint32_t *slot)
{
	uint32_t i;
	if (ctx->stag_free != UINT32_MAX) {
		i = ctx->stag_free;
	} else {
		if (ctx->nstags >= STAG_MAX_LIVE)
			return ENOMEM;
		/* grow in chunks; entries are small and slots index directly */
		if ((ctx->nstags & 255) == 0) {
			size_t cap = (size_t)ctx->nstags + 256;
			struct uw_stag_entry *n = realloc(ctx->stags, cap * sizeof(*n));
			if (!n)
				return ENOMEM;
			memset(n + ctx->nstags, 0, (cap - ctx->nstags) * sizeof(*n));
			ctx->stags = n;
		}
		i = ctx->nstags;
	}
	uint32_t index;
	int rc = stag_table_add(&ctx->stag_ix, i, &index);
	if (rc)
		return rc;
	if (i == ctx->stag_free)
		ctx->stag_free = ctx->stags[i].next_free;
	else
		ctx->nstags++;
	ctx->stags[i].index = index;
	*slot = i;
	return 0;
}

static void stag_free(struct uw_context *ctx, uint32_t slot)
{
	struct uw_stag_entry *e = &ctx->stags[slot];
	stag_table_remove(&ctx->stag_ix, e->index);
	uint8_t key = e->key; /* the next key of this slot differs from it */
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->next_free = ctx->stag_free;
	ctx->stag_free = slot;
}

static uint8_t new_key(struct uw_context *ctx, uint8_t old)
{
	uint8_t k;
	do
		k = (uint8_t)uw__random32(ctx);
	while (k == old);
	return k;
}

static struct uw_stag_entry *stag_find(struct uw_context *ctx, uint32_t stag)
{
	int64_t slot = stag_table_find(&ctx->stag_ix, stag >> 8);
	if (slot < 0)
		return NULL;
	struct uw_stag_entry *e = &ctx->stags[slot];
	if (e->kind == UW_STAG_FREE || e->key != (uint8_t)stag || !e->valid)
		return NULL;
	return e;
}

int uw__stag_lookup(void *arg, uint32_t stag, struct ddp_region *out)
{
	struct uw_context *ctx = arg;
	struct uw_stag_entry *e = stag_find(ctx, stag);
	if (!e)
		return -ENOENT;
	*out = (struct ddp_region){ e->addr, e->to_base, e->len, e->rights, e->pd, e->qp };
	return 0;
}

static void unbind(struct uw_mw_impl *mw);

int uw__stag_invalidate(void *arg, uint32_t stag, uint32_t pd, uint32_t qp)
{
	struct uw_context *ctx = arg;
	struct uw_stag_entry *e = stag_find(ctx, stag);
	/* Only windows can be invalidated: a plain MR's STag lives until it
	 * is deregistered (RDMAP 2/0x09 otherwise). */
	if (!e || e->kind != UW_STAG_MW || e->pd != pd || (e->qp && e->qp != qp))
		return -EACCES;
	e->valid = false;
	unbind(e->mw); /* the MR may be deregistered now */
	return 0;
}

int uw__sge_check(struct uw_context *ctx, uint32_t pd, const struct uw_sge *sge, uint32_t rights,
		  struct iovec *out)
{
	struct uw_stag_entry *e = stag_find(ctx, sge->lkey);
	uint64_t at = sge->addr; /* in the region's iova terms, as a peer's offsets */

	if (!e || e->kind != UW_STAG_MR || e->pd != pd)
		return EINVAL;
	if (at < e->to_base || at - e->to_base > e->len || sge->length > e->len - (at - e->to_base))
		return EINVAL;
	if ((e->rights & rights) != rights)
		return EACCES;
	out->iov_base = e->addr + (at - e->to_base);
	out->iov_len = sge->length;
	return 0;
}

struct uw_pd *uw_alloc_pd(struct uw_context *ctx)
{
	struct uw_pd_impl *pd;
	if (!ctx) {
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	pd->pub.context = ctx;
	pd->id = ctx->next_pd++;
	ctx->nobjects++;
	pthread_mutex_unlock(&ctx->lock);
	return &pd->pub;
}

int uw_dealloc_pd(struct uw_pd *p)
{
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	if (!pd)
		return EINVAL;
	struct uw_context *ctx = p->context;
	pthread_mutex_lock(&ctx->lock);
	if (pd->refs) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	ctx->nobjects--;
	pthread_mutex_unlock(&ctx->lock);
	free(pd);
	return 0;
}

struct uw_mr *uw_reg_mr(struct uw_pd *p, void *addr, size_t length, int access)
{
	return uw_reg_mr_iova(p, addr, length, (uint64_t)(uintptr_t)addr, access);
}

struct uw_mr *uw_reg_mr_iova(struct uw_pd *p, void *addr, size_t length, uint64_t iova, int access)
{
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	const int known = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ |
			  UW_ACCESS_REMOTE_ATOMIC | UW_ACCESS_MW_BIND;
	uint32_t slot;

	if (!pd || (!addr && length) || (access & ~known) ||
	    (length && iova + (length - 1) < iova) ||
	    ((access & (UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_ATOMIC)) &&
	     !(access & UW_ACCESS_LOCAL_WRITE))) {
		errno = EINVAL;
		return NULL;
	}
	/* as ibv_reg_mr: memory that is not there cannot be registered */
	int bad = mem_range_check(addr, length);
	if (bad) {
		errno = bad;
		return NULL;
	}
	struct uw_mr_impl *mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_context *ctx = p->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = stag_alloc(ctx, &slot);
	if (rc) {
		pthread_mutex_unlock(&ctx->lock);
		free(mr);
		errno = rc;
		return NULL;
	}
	struct uw_stag_entry *e = &ctx->stags[slot];
	e->kind = UW_STAG_MR;
	e->key = new_key(ctx, e->key);
	e->valid = true;
	e->pd = pd->id;
	e->rights = rights_of(access);
	e->addr = addr;
	e->to_base = iova;
	e->len = length;
	e->mr = &mr->pub;
	mr->pub = (struct uw_mr){
		ctx, p, addr, length, e->index << 8 | e->key, e->index << 8 | e->key, iova
	};
	mr->access = access;
	pd->refs++;
	pthread_mutex_unlock(&ctx->lock);
	return &mr->pub;
}

int uw_dereg_mr(struct uw_mr *m)
{
	struct uw_mr_impl *mr = (struct uw_mr_impl *)m;
	if (!mr)
		return EINVAL;
	struct uw_context *ctx = m->context;
	pthread_mutex_lock(&ctx->lock);
	if (mr->windows) {
		pthread_mutex_unlock(&ctx->lock);
		return EBUSY;
	}
	stag_free(ctx, (uint32_t)stag_table_find(&ctx->stag_ix, m->lkey >> 8));
	((struct uw_pd_impl *)m->pd)->refs--;
	pthread_mutex_unlock(&ctx->lock);
	free(mr);
	return 0;
}

struct uw_mw *uw_alloc_mw(struct uw_pd *p)
{
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	uint32_t slot;
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_mw_impl *mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_context *ctx = p->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = stag_alloc(ctx, &slot);
	if (rc) {
		pthread_mutex_unlock(&ctx->lock);
		free(mw);
		errno = rc;
		return NULL;
	}
	struct uw_stag_entry *e = &ctx->stags[slot];
	e->kind = UW_STAG_MW;
	e->valid = false;
	e->key = new_key(ctx, e->key);
	e->pd = pd->id;
	e->mw = mw;
	/* an STag already, naming nothing until bound: ibverbs programs make
	 * a type 2 window's rkey from it (ibv_inc_rkey) */
	mw->pub = (struct uw_mw){ ctx, p, e->index << 8 | e->key };
	mw->slot = slot;
	pd->refs++;
	pthread_mutex_unlock(&ctx->lock);
	return &mw->pub;
}

static void unbind(struct uw_mw_impl *mw)
{
	if (mw->over) {
		mw->over->windows--;
		mw->over = NULL;
	}
}

int uw_dealloc_mw(struct uw_mw *w)
{
	struct uw_mw_impl *mw = (struct uw_mw_impl *)w;
	if (!mw)
		return EINVAL;
	struct uw_context *ctx = w->context;
	pthread_mutex_lock(&ctx->lock);
	unbind(mw);
	stag_free(ctx, mw->slot);
	((struct uw_pd_impl *)w->pd)->refs--;
	pthread_mutex_unlock(&ctx->lock);
	free(mw);
	return 0;
}

/* May mw be bound over [at, at + length) of mr (at in mr's iova terms)
 * with access, for qp (NULL: any QP of the PD)? 0, EINVAL or EACCES. */
static int bind_check(const struct uw_mw *w, const struct uw_qp *qp, const struct uw_mr *m,
		      uint64_t at, uint64_t length, int access)
{
	const int remote = UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ | UW_ACCESS_REMOTE_ATOMIC;

	if (!w || !m || m->pd != w->pd || (qp && qp->pd != w->pd) || (access & ~remote))
		return EINVAL;
	if (at < m->iova || at - m->iova > m->length || length > m->length - (at - m->iova))
		return EINVAL;
	const struct uw_mr_impl *mr = (const struct uw_mr_impl *)m;
	if (!(mr->access & UW_ACCESS_MW_BIND) ||
	    ((access & (UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & UW_ACCESS_LOCAL_WRITE)))
		return EACCES;
	return 0;
}

/* Bind the window over [at, at + length) of a checked region with key; its
 * previous rkey dies. ctx->lock held. */
static void bind_entry(struct uw_context *ctx, struct uw_mw_impl *mw, struct uw_mr_impl *mr,
		       uint64_t at, uint64_t length, int access, uint32_t qp_num, uint8_t key)
{
	struct uw_stag_entry *e = &ctx->stags[mw->slot];
	unbind(mw);
	e->key = key;
	e->valid = true;
	e->qp = qp_num;
	e->rights = rights_of(access);
	e->addr = (uint8_t *)mr->pub.addr + (at - mr->pub.iova);
	e->to_base = at; /* a window keeps its region's addresses */
	e->len = length;
	e->mr = &mr->pub;
	mw->over = mr;
	mr->windows++;
}

int uw_bind_mw(struct uw_mw *w, struct uw_qp *qp, struct uw_mr *m, void *addr, size_t length,
	       int access)
{
	struct uw_mw_impl *mw = (struct uw_mw_impl *)w;
	if (!m || (uint8_t *)addr < (uint8_t *)m->addr)
		return EINVAL;
	uint64_t at = m->iova + (uint64_t)((uint8_t *)addr - (uint8_t *)m->addr);
	int rc = bind_check(w, qp, m, at, length, access);
	if (rc)
		return rc;
	struct uw_context *ctx = w->context;
	pthread_mutex_lock(&ctx->lock);
	uint8_t key = new_key(ctx, ctx->stags[mw->slot].key);
	bind_entry(ctx, mw, (struct uw_mr_impl *)m, at, length, access, qp ? qp->qp_num : 0, key);
	w->rkey = ctx->stags[mw->slot].index << 8 | key;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

int uw__bind_wr_check(struct uw_qp *qp, const struct uw_send_wr *wr, uint32_t *rkey)
{
	struct uw_mw *w = wr->bind.mw;
	int rc;
	if (!wr->bind.mr) /* an unbind: no region, no range, no rights */
		rc = !w || w->pd != qp->pd || wr->bind.addr || wr->bind.length || wr->bind.access
			     ? EINVAL
			     : 0;
	else
		rc = bind_check(w, qp, wr->bind.mr, wr->bind.addr, wr->bind.length,
				wr->bind.access);
	if (rc)
		return rc;
	struct uw_mw_impl *mw = (struct uw_mw_impl *)w;
	uint32_t index = qp->context->stags[mw->slot].index;
	uint32_t r = wr->bind.rkey;
	if (r && r >> 8 != index)
		return EINVAL;
	/* a fresh key differs from the one the last bind posted gave */
	if (!r)
		r = index << 8 | new_key(qp->context, (uint8_t)w->rkey);
	w->rkey = r; /* what a program sends its peer now */
	*rkey = r;
	return 0;
}

enum uw_wc_status uw__bind_wr_run(struct uw_qp *qp, const struct uw_swqe *w)
{
	struct uw_context *ctx = qp->context;
	uint32_t pd = ((struct uw_pd_impl *)qp->pd)->id;
	int64_t slot = stag_table_find(&ctx->stag_ix, w->wr.bind.rkey >> 8);
	struct uw_stag_entry *me = slot >= 0 ? &ctx->stags[slot] : NULL;

	/* deallocated or deregistered since it was posted (their indices are
	 * held back from reuse, and a region's key is checked) */
	if (!me || me->kind != UW_STAG_MW || me->pd != pd)
		return UW_WC_MW_BIND_ERR;
	if (!w->lkey0) { /* an unbind */
		me->key = (uint8_t)w->wr.bind.rkey;
		me->valid = false;
		unbind(me->mw);
		return UW_WC_SUCCESS;
	}
	struct uw_stag_entry *re = stag_find(ctx, w->lkey0);
	if (!re || re->kind != UW_STAG_MR || re->pd != pd)
		return UW_WC_MW_BIND_ERR;
	bind_entry(ctx, me->mw, (struct uw_mr_impl *)re->mr, w->wr.bind.addr, w->wr.bind.length,
		   w->wr.bind.access, w->wr.bind.any_qp ? 0 : qp->qp_num, (uint8_t)w->wr.bind.rkey);
	return UW_WC_SUCCESS;
}
