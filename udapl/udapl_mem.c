/*
 * udapl_mem.c: LMRs (registered memory regions) and RMRs (memory windows
 * a peer reaches through their RMR context). uwarp's memory is ordinary
 * virtual memory, coherent with the engine: the LMR sync calls have
 * nothing to do.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "udapl_internal.h"

static int uw_access_of(DAT_MEM_PRIV_FLAGS p)
{
	int a = UW_ACCESS_MW_BIND; /* any LMR may carry RMRs */
	if (p & (DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG))
		a |= UW_ACCESS_LOCAL_WRITE;
	if (p & DAT_MEM_PRIV_REMOTE_WRITE_FLAG)
		a |= UW_ACCESS_REMOTE_WRITE;
	if (p & DAT_MEM_PRIV_REMOTE_READ_FLAG)
		a |= UW_ACCESS_REMOTE_READ;
	return a;
}

DAT_RETURN DAT_API ud_lmr_create(DAT_IA_HANDLE h, DAT_MEM_TYPE type, DAT_REGION_DESCRIPTION region,
				 DAT_VLEN len, DAT_PZ_HANDLE pzh, DAT_MEM_PRIV_FLAGS priv,
				 DAT_VA_TYPE va_type, DAT_LMR_HANDLE *out, DAT_LMR_CONTEXT *lctx,
				 DAT_RMR_CONTEXT *rctx, DAT_VLEN *reg_size, DAT_VADDR *reg_addr)
{
	struct ud_ia *ia = h;
	struct ud_pz *pz = pzh;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!ud_valid(pz, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if (va_type != DAT_VA_TYPE_VA)
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE); /* no zero-based VAs */
	if (priv & ~DAT_MEM_PRIV_ALL_FLAG)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG8);
	void *addr;
	switch (type) {
	case DAT_MEM_TYPE_VIRTUAL:
		addr = region.for_va;
		break;
	case DAT_MEM_TYPE_LMR: {
		/* the same memory as another LMR, registered again */
		struct ud_lmr *o = region.for_lmr_handle;
		if (!ud_valid(o, UD_MAGIC_LMR))
			return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
		addr = o->param.region_desc.for_va;
		len = o->param.length;
		break;
	}
	default:
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE); /* no shared memory */
	}
	if (!len)
		return UD_ERR(DAT_LENGTH_ERROR, DAT_NO_SUBTYPE);
	if (!addr)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	struct ud_lmr *l = calloc(1, sizeof(*l));
	if (!l)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	l->mr = uw_reg_mr(pz->pd, addr, (size_t)len, uw_access_of(priv));
	if (!l->mr) {
		int err = errno;
		free(l);
		return err == ENOMEM
			       ? UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION)
			       : ud_errno(err);
	}
	l->pz = pz;
	l->param = (DAT_LMR_PARAM){ .ia_handle = ia,
				    .mem_type = DAT_MEM_TYPE_VIRTUAL,
				    .length = len,
				    .pz_handle = pz,
				    .mem_priv = priv,
				    .va_type = va_type,
				    .lmr_context = l->mr->lkey,
				    .rmr_context = l->mr->rkey,
				    .registered_size = len,
				    .registered_address = (DAT_VADDR)(uintptr_t)addr };
	l->param.region_desc.for_va = addr;
	pthread_mutex_lock(&ia->mu);
	ud_obj_init(ia, &l->h, UD_MAGIC_LMR, DAT_HANDLE_TYPE_LMR);
	pz->users++;
	pthread_mutex_unlock(&ia->mu);
	*out = l;
	if (lctx)
		*lctx = l->param.lmr_context;
	if (rctx)
		*rctx = l->param.rmr_context;
	if (reg_size)
		*reg_size = len;
	if (reg_addr)
		*reg_addr = l->param.registered_address;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_lmr_query(DAT_LMR_HANDLE h, DAT_LMR_PARAM_MASK m, DAT_LMR_PARAM *p)
{
	struct ud_lmr *l = h;
	if (!ud_valid(l, UD_MAGIC_LMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	*p = l->param;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_lmr_free(DAT_LMR_HANDLE h)
{
	struct ud_lmr *l = h;
	if (!ud_valid(l, UD_MAGIC_LMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
	struct ud_ia *ia = l->h.ia;
	pthread_mutex_lock(&ia->mu);
	if (l->windows) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_LMR_IN_USE);
	}
	ud_obj_unlink(&l->h);
	l->pz->users--;
	pthread_mutex_unlock(&ia->mu);
	uw_dereg_mr(l->mr);
	free(l);
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_lmr_sync(DAT_IA_HANDLE h, const DAT_LMR_TRIPLET *segs, DAT_VLEN n)
{
	if (!ud_valid(h, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (n && !segs)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	return DAT_SUCCESS; /* coherent memory: nothing to flush */
}

/* ---- RMRs ---- */

static DAT_RETURN rmr_make(DAT_PZ_HANDLE pzh, DAT_RMR_HANDLE *out, bool ep_scope)
{
	struct ud_pz *pz = pzh;
	if (!ud_valid(pz, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	struct ud_rmr *r = calloc(1, sizeof(*r));
	if (!r)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	r->mw = uw_alloc_mw(pz->pd);
	if (!r->mw) {
		free(r);
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
	}
	r->pz = pz;
	r->ep_scope = ep_scope;
	struct ud_ia *ia = pz->h.ia;
	r->param = (DAT_RMR_PARAM){ .ia_handle = ia,
				    .pz_handle = pz,
				    .rmr_scope = ep_scope ? DAT_RMR_SCOPE_EP : DAT_RMR_SCOPE_PZ,
				    .va_type = DAT_VA_TYPE_VA };
	pthread_mutex_lock(&ia->mu);
	ud_obj_init(ia, &r->h, UD_MAGIC_RMR, DAT_HANDLE_TYPE_RMR);
	pz->users++;
	pthread_mutex_unlock(&ia->mu);
	*out = r;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_rmr_create(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *out)
{
	return rmr_make(pz, out, false);
}

DAT_RETURN DAT_API ud_rmr_create_for_ep(DAT_PZ_HANDLE pz, DAT_RMR_HANDLE *out)
{
	return rmr_make(pz, out, true);
}

DAT_RETURN DAT_API ud_rmr_query(DAT_RMR_HANDLE h, DAT_RMR_PARAM_MASK m, DAT_RMR_PARAM *p)
{
	struct ud_rmr *r = h;
	if (!ud_valid(r, UD_MAGIC_RMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	*p = r->param;
	return DAT_SUCCESS;
}

/* the window gives up what it covered: a fresh, unbound window (its old
 * RMR context dies at once) */
static DAT_RETURN unbind(struct ud_rmr *r)
{
	struct uw_mw *fresh = uw_alloc_mw(r->pz->pd);
	if (!fresh)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY_REGION);
	uw_dealloc_mw(r->mw);
	r->mw = fresh;
	if (r->lmr)
		r->lmr->windows--;
	r->lmr = NULL;
	memset(&r->param.lmr_triplet, 0, sizeof(r->param.lmr_triplet));
	r->param.rmr_context = 0;
	return DAT_SUCCESS;
}

/*
 * dat_rmr_bind: the window over part of an LMR, for the EP's peer (an
 * EP-scope RMR, or any RMR given an EP: uwarp binds it to that QP) or for
 * any EP of the PZ. uwarp binds at once rather than through the send
 * queue, so the RMR context is live when the call returns; the bind's
 * completion event still goes to the EP's request EVD, unless suppressed.
 * An empty triplet (or no LMR) unbinds.
 */
DAT_RETURN DAT_API ud_rmr_bind(DAT_RMR_HANDLE h, DAT_LMR_HANDLE lh, const DAT_LMR_TRIPLET *t,
			       DAT_MEM_PRIV_FLAGS priv, DAT_VA_TYPE va_type, DAT_EP_HANDLE eph,
			       DAT_RMR_COOKIE cookie, DAT_COMPLETION_FLAGS flags,
			       DAT_RMR_CONTEXT *ctx)
{
	struct ud_rmr *r = h;
	struct ud_lmr *l = lh;
	struct ud_ep *ep = eph;
	if (!ud_valid(r, UD_MAGIC_RMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
	bool unbinding = !l || !t || !t->segment_length;
	if (!unbinding && !ud_valid(l, UD_MAGIC_LMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_LMR);
	if (!ud_valid(ep, UD_MAGIC_EP))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_EP);
	if (va_type != DAT_VA_TYPE_VA)
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	if (priv & ~(DAT_MEM_PRIV_REMOTE_READ_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG |
		     DAT_MEM_PRIV_LOCAL_READ_FLAG | DAT_MEM_PRIV_LOCAL_WRITE_FLAG))
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	struct ud_ia *ia = r->h.ia;
	pthread_mutex_lock(&ia->mu);
	DAT_RETURN rc = DAT_SUCCESS;
	if (!ep->qp || ep->pz != r->pz) {
		rc = UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_EP_NOTREADY);
	} else if (!unbinding && l->pz != r->pz) {
		rc = UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	} else if (!unbinding && (t->lmr_context != l->param.lmr_context ||
				  t->virtual_address < l->param.registered_address ||
				  t->virtual_address + t->segment_length >
					  l->param.registered_address + l->param.length)) {
		rc = UD_ERR(DAT_PROTECTION_VIOLATION, DAT_NO_SUBTYPE);
	} else if (!unbinding && (priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG) &&
		   !(l->param.mem_priv &
		     (DAT_MEM_PRIV_LOCAL_WRITE_FLAG | DAT_MEM_PRIV_REMOTE_WRITE_FLAG))) {
		rc = UD_ERR(DAT_PRIVILEGES_VIOLATION, DAT_PRIVILEGES_RDMA_WRITE);
	} else if (unbinding) {
		rc = unbind(r);
	} else {
		int a = ((priv & DAT_MEM_PRIV_REMOTE_READ_FLAG) ? UW_ACCESS_REMOTE_READ : 0) |
			((priv & DAT_MEM_PRIV_REMOTE_WRITE_FLAG) ? UW_ACCESS_REMOTE_WRITE : 0);
		int err = uw_bind_mw(r->mw, r->ep_scope ? ep->qp : NULL, l->mr,
				     (void *)(uintptr_t)t->virtual_address, t->segment_length, a);
		if (err) {
			rc = err == EACCES ? UD_ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE)
					   : ud_errno(err);
		} else {
			if (r->lmr)
				r->lmr->windows--;
			r->lmr = l;
			l->windows++;
			r->param.lmr_triplet = *t;
			r->param.mem_priv = priv;
			r->param.rmr_context = r->mw->rkey;
		}
	}
	if (rc == DAT_SUCCESS && ctx)
		*ctx = r->param.rmr_context;
	if (rc == DAT_SUCCESS && !(flags & DAT_COMPLETION_SUPPRESS_FLAG) && ep->req_evd) {
		DAT_EVENT ev = { .event_number = DAT_RMR_BIND_COMPLETION_EVENT };
		ev.event_data.rmr_completion_event_data = (DAT_RMR_BIND_COMPLETION_EVENT_DATA){
			.rmr_handle = r, .user_cookie = cookie, .status = DAT_DTO_SUCCESS
		};
		if (!ud_evd_post(ep->req_evd, &ev))
			rc = UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_TEVD);
	}
	pthread_mutex_unlock(&ia->mu);
	return rc;
}

DAT_RETURN DAT_API ud_rmr_free(DAT_RMR_HANDLE h)
{
	struct ud_rmr *r = h;
	if (!ud_valid(r, UD_MAGIC_RMR))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_RMR);
	struct ud_ia *ia = r->h.ia;
	pthread_mutex_lock(&ia->mu);
	ud_obj_unlink(&r->h);
	if (r->lmr)
		r->lmr->windows--;
	r->pz->users--;
	pthread_mutex_unlock(&ia->mu);
	uw_dealloc_mw(r->mw);
	free(r);
	return DAT_SUCCESS;
}
