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
	/* tagged offsets are virtual addresses */
	*out = (struct ddp_region){ e->addr, (uint64_t)(uintptr_t)e->addr, e->len, e->rights, e->pd,
				    e->qp };
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
	uint8_t *a = (uint8_t *)(uintptr_t)sge->addr;

	if (!e || e->kind != UW_STAG_MR || e->pd != pd)
		return EINVAL;
	if (a < e->addr || (uint64_t)(a - e->addr) > e->len ||
	    sge->length > e->len - (uint64_t)(a - e->addr))
		return EINVAL;
	if ((e->rights & rights) != rights)
		return EACCES;
	out->iov_base = a;
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
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	const int known = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ |
			  UW_ACCESS_REMOTE_ATOMIC | UW_ACCESS_MW_BIND;
	uint32_t slot;

	if (!pd || (!addr && length) || (access & ~known) ||
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
	e->len = length;
	e->mr = &mr->pub;
	mr->pub = (struct uw_mr){
		ctx, p, addr, length, e->index << 8 | e->key, e->index << 8 | e->key
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
	e->pd = pd->id;
	e->mw = mw;
	mw->pub = (struct uw_mw){ ctx, p, 0 };
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

int uw_bind_mw(struct uw_mw *w, struct uw_qp *qp, struct uw_mr *m, void *addr, size_t length,
	       int access)
{
	struct uw_mw_impl *mw = (struct uw_mw_impl *)w;
	struct uw_mr_impl *mr = (struct uw_mr_impl *)m;
	const int remote = UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ | UW_ACCESS_REMOTE_ATOMIC;

	if (!mw || !mr || m->pd != w->pd || (qp && qp->pd != w->pd) || (access & ~remote))
		return EINVAL;
	uint8_t *a = addr, *base = m->addr;
	if (a < base || (size_t)(a - base) > m->length || length > m->length - (size_t)(a - base))
		return EINVAL;
	if (!(mr->access & UW_ACCESS_MW_BIND) ||
	    ((access & (UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & UW_ACCESS_LOCAL_WRITE)))
		return EACCES;
	struct uw_context *ctx = w->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_stag_entry *e = &ctx->stags[mw->slot];
	unbind(mw);
	e->key = new_key(ctx, e->key); /* the previous rkey dies here */
	e->valid = true;
	e->qp = qp ? qp->qp_num : 0;
	e->rights = rights_of(access);
	e->addr = a;
	e->len = length;
	e->mr = m;
	mw->over = mr;
	mr->windows++;
	w->rkey = e->index << 8 | e->key;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}
