/*
 * udapl_provider.c: how the DAT registry finds the provider (its init and
 * fini entry points), the table of calls it dispatches through, and what
 * every handle shares (type, consumer context, validity).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "udapl_internal.h"

/* ---- calls the provider does not implement: the DAT error that says
 * so, never a silent success ---- */

static DAT_RETURN DAT_API no_cr_handoff(DAT_CR_HANDLE cr, DAT_CONN_QUAL q)
{
	(void)cr, (void)q;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_dup_connect(DAT_EP_HANDLE ep, DAT_EP_HANDLE dup, DAT_TIMEOUT t,
					 DAT_COUNT n, const DAT_PVOID p, DAT_QOS q)
{
	(void)ep, (void)dup, (void)t, (void)n, (void)p, (void)q;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_common_connect(DAT_EP_HANDLE ep, DAT_IA_ADDRESS_PTR a, DAT_TIMEOUT t,
					    DAT_COUNT n, const DAT_PVOID p)
{
	(void)ep, (void)a, (void)t, (void)n, (void)p;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_create_with_srq(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_EVD_HANDLE r,
					     DAT_EVD_HANDLE q, DAT_EVD_HANDLE c, DAT_SRQ_HANDLE s,
					     const DAT_EP_ATTR *a, DAT_EP_HANDLE *ep)
{
	(void)ia, (void)pz, (void)r, (void)q, (void)c, (void)s, (void)a, (void)ep;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_recv_query(DAT_EP_HANDLE ep, DAT_COUNT *n, DAT_COUNT *s)
{
	(void)ep, (void)n, (void)s;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_set_watermark(DAT_EP_HANDLE ep, DAT_COUNT s, DAT_COUNT h)
{
	(void)ep, (void)s, (void)h;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_srq_create(DAT_IA_HANDLE ia, DAT_PZ_HANDLE pz, DAT_SRQ_ATTR *a,
					DAT_SRQ_HANDLE *s)
{
	(void)ia, (void)pz, (void)a, (void)s;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_srq_free(DAT_SRQ_HANDLE s)
{
	(void)s;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_srq_post_recv(DAT_SRQ_HANDLE s, DAT_COUNT n, DAT_LMR_TRIPLET *l,
					   DAT_DTO_COOKIE c)
{
	(void)s, (void)n, (void)l, (void)c;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_srq_query(DAT_SRQ_HANDLE s, DAT_SRQ_PARAM_MASK m, DAT_SRQ_PARAM *p)
{
	(void)s, (void)m, (void)p;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_srq_count(DAT_SRQ_HANDLE s, DAT_COUNT n)
{
	(void)s, (void)n;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_csp_create(DAT_IA_HANDLE ia, DAT_COMM *c, DAT_IA_ADDRESS_PTR a,
					DAT_EVD_HANDLE e, DAT_CSP_HANDLE *h)
{
	(void)ia, (void)c, (void)a, (void)e, (void)h;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_csp_query(DAT_CSP_HANDLE h, DAT_CSP_PARAM_MASK m, DAT_CSP_PARAM *p)
{
	(void)h, (void)m, (void)p;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_csp_free(DAT_CSP_HANDLE h)
{
	(void)h;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_read_to_rmr(DAT_EP_HANDLE ep, const DAT_RMR_TRIPLET *l,
					 DAT_DTO_COOKIE c, const DAT_RMR_TRIPLET *r,
					 DAT_COMPLETION_FLAGS f)
{
	(void)ep, (void)l, (void)c, (void)r, (void)f;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_ha_related(DAT_IA_HANDLE ia, const DAT_NAME_PTR n, DAT_BOOLEAN *b)
{
	(void)ia, (void)n, (void)b;
	return UD_NOT_IMPLEMENTED;
}

static DAT_RETURN DAT_API no_extended_op(DAT_HANDLE h, DAT_EXTENDED_OP op, va_list ap)
{
	(void)h, (void)op, (void)ap;
	return UD_NOT_IMPLEMENTED; /* no IB or iWARP extension (ia_query says so) */
}

/* ---- every handle ---- */

bool ud_valid(const void *h, uint32_t magic)
{
	return h && ((const struct ud_obj *)h)->magic == magic;
}

/* one of ours, alive: a magic of ours (any type) */
static bool any_valid(const struct ud_obj *o)
{
	return o && o->magic >= UD_MAGIC_IA && o->magic <= UD_MAGIC_CR;
}

static DAT_RETURN DAT_API set_consumer_context(DAT_HANDLE h, DAT_CONTEXT c)
{
	struct ud_obj *o = h;
	if (!any_valid(o))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_NO_SUBTYPE);
	o->consumer_ctx = c;
	return DAT_SUCCESS;
}

static DAT_RETURN DAT_API get_consumer_context(DAT_HANDLE h, DAT_CONTEXT *c)
{
	struct ud_obj *o = h;
	if (!any_valid(o))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_NO_SUBTYPE);
	if (!c)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	*c = o->consumer_ctx;
	return DAT_SUCCESS;
}

static DAT_RETURN DAT_API get_handle_type(DAT_HANDLE h, DAT_HANDLE_TYPE *t)
{
	struct ud_obj *o = h;
	if (!any_valid(o))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_NO_SUBTYPE);
	if (!t)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	*t = o->type;
	return DAT_SUCCESS;
}

void ud_obj_init(struct ud_ia *ia, struct ud_obj *o, uint32_t magic, DAT_HANDLE_TYPE type)
{
	o->provider = &ia->prov->table;
	o->magic = magic;
	o->type = type;
	o->ia = ia;
	util_list_init(&o->link);
	if (ia && (void *)o == (void *)ia)
		util_list_init(&ia->objs);
	else if (ia)
		util_list_add_head(&ia->objs, &o->link);
}

void ud_obj_unlink(struct ud_obj *o)
{
	util_list_del(&o->link);
	o->magic = UD_MAGIC_DEAD;
}

DAT_RETURN ud_errno(int err)
{
	switch (err) {
	case 0:
		return DAT_SUCCESS;
	case ENOMEM:
	case ENOSPC:
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	case EADDRINUSE:
		return UD_ERR(DAT_CONN_QUAL_IN_USE, DAT_NO_SUBTYPE);
	case EBUSY:
		return UD_ERR(DAT_INVALID_STATE, DAT_NO_SUBTYPE);
	case EACCES:
	case EPERM:
		return UD_ERR(DAT_PRIVILEGES_VIOLATION, DAT_NO_SUBTYPE);
	case ETIMEDOUT:
		return UD_ERR(DAT_TIMEOUT_EXPIRED, DAT_NO_SUBTYPE);
	case EOPNOTSUPP:
		return UD_ERR(DAT_MODEL_NOT_SUPPORTED, DAT_NO_SUBTYPE);
	case EINVAL:
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_NO_SUBTYPE);
	default:
		return UD_ERR(DAT_INTERNAL_ERROR, DAT_NO_SUBTYPE);
	}
}

void ud_debug(const char *fmt, ...)
{
	static int on = -1;
	if (on < 0)
		on = getenv("UWARP_DAT_DEBUG") != NULL;
	if (!on)
		return;
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "uwarp DAT provider: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

/* The OpenFabrics DAPL provider's map from a connection qualifier to a
 * TCP port: qualifiers that fit are the port, larger ones fold into the
 * ports from 65535 - 32001 up. A uwarp IA must find its peers where that
 * provider puts them. */
unsigned short ud_qual_port(DAT_CONN_QUAL q)
{
	if (q > 0xffff)
		return (unsigned short)(q % 32001 + (65535 - 32001));
	return (unsigned short)q;
}

/* ---- the table ---- */

static const DAT_PROVIDER template = {
	.device_name = UD_NAME,
	.extension = NULL,
	.ia_open_func = ud_ia_open,
	.ia_query_func = ud_ia_query,
	.ia_close_func = ud_ia_close,
	.set_consumer_context_func = set_consumer_context,
	.get_consumer_context_func = get_consumer_context,
	.get_handle_type_func = get_handle_type,
	.cno_create_func = ud_cno_create,
	.cno_modify_agent_func = ud_cno_modify_agent,
	.cno_query_func = ud_cno_query,
	.cno_free_func = ud_cno_free,
	.cno_wait_func = ud_cno_wait,
	.cr_query_func = ud_cr_query,
	.cr_accept_func = ud_cr_accept,
	.cr_reject_func = ud_cr_reject,
	.cr_handoff_func = no_cr_handoff,
	.evd_create_func = ud_evd_create,
	.evd_query_func = ud_evd_query,
	.evd_modify_cno_func = ud_evd_modify_cno,
	.evd_enable_func = ud_evd_enable,
	.evd_disable_func = ud_evd_disable,
	.evd_wait_func = ud_evd_wait,
	.evd_resize_func = ud_evd_resize,
	.evd_post_se_func = ud_evd_post_se,
	.evd_dequeue_func = ud_evd_dequeue,
	.evd_free_func = ud_evd_free,
	.ep_create_func = ud_ep_create,
	.ep_query_func = ud_ep_query,
	.ep_modify_func = ud_ep_modify,
	.ep_connect_func = ud_ep_connect,
	.ep_dup_connect_func = no_dup_connect,
	.ep_disconnect_func = ud_ep_disconnect,
	.ep_post_send_func = ud_ep_post_send,
	.ep_post_recv_func = ud_ep_post_recv,
	.ep_post_rdma_read_func = ud_ep_post_rdma_read,
	.ep_post_rdma_write_func = ud_ep_post_rdma_write,
	.ep_get_status_func = ud_ep_get_status,
	.ep_free_func = ud_ep_free,
	.lmr_create_func = ud_lmr_create,
	.lmr_query_func = ud_lmr_query,
	.lmr_free_func = ud_lmr_free,
	.rmr_create_func = ud_rmr_create,
	.rmr_query_func = ud_rmr_query,
	.rmr_bind_func = ud_rmr_bind,
	.rmr_free_func = ud_rmr_free,
	.psp_create_func = ud_psp_create,
	.psp_query_func = ud_psp_query,
	.psp_free_func = ud_psp_free,
	.rsp_create_func = ud_rsp_create,
	.rsp_query_func = ud_rsp_query,
	.rsp_free_func = ud_rsp_free,
	.pz_create_func = ud_pz_create,
	.pz_query_func = ud_pz_query,
	.pz_free_func = ud_pz_free,
	.psp_create_any_func = ud_psp_create_any,
	.ep_reset_func = ud_ep_reset,
	.evd_set_unwaitable_func = ud_evd_set_unwaitable,
	.evd_clear_unwaitable_func = ud_evd_clear_unwaitable,
	.lmr_sync_rdma_read_func = ud_lmr_sync,
	.lmr_sync_rdma_write_func = ud_lmr_sync,
	.ep_create_with_srq_func = no_create_with_srq,
	.ep_recv_query_func = no_recv_query,
	.ep_set_watermark_func = no_set_watermark,
	.srq_create_func = no_srq_create,
	.srq_free_func = no_srq_free,
	.srq_post_recv_func = no_srq_post_recv,
	.srq_query_func = no_srq_query,
	.srq_resize_func = no_srq_count,
	.srq_set_lw_func = no_srq_count,
	.csp_create_func = no_csp_create,
	.csp_query_func = no_csp_query,
	.csp_free_func = no_csp_free,
	.ep_common_connect_func = no_common_connect,
	.rmr_create_for_ep_func = ud_rmr_create_for_ep,
	.ep_post_send_with_invalidate_func = ud_ep_post_send_inv,
	.ep_post_rdma_read_to_rmr_func = no_read_to_rmr,
	.cno_fd_create_func = ud_cno_fd_create,
	.cno_trigger_func = ud_cno_trigger,
	.ia_ha_related_func = no_ha_related,
	.handle_extendedop_func = no_extended_op,
};

/*
 * The registry calls this once per dat.conf entry naming this library,
 * with that entry's IA name, its thread safety and its ia_params ("lo 0",
 * "127.0.0.1 0": an interface or an address, then a port field that is
 * not used). Each IA name gets its own table: the registry finds an IA's
 * entry again, when it is closed, by the table's device name and the
 * thread safety the provider reports, which must be those it registered.
 */
static pthread_mutex_t provs_mu = PTHREAD_MUTEX_INITIALIZER;
static struct util_list provs = UTIL_LIST_INIT(provs);

struct ud_prov *ud_prov_find(const char *ia_name)
{
	pthread_mutex_lock(&provs_mu);
	struct ud_prov *p, *found = NULL;
	util_list_for_each(p, &provs, link)
		if (!strcmp(p->name, ia_name)) {
			found = p;
			break;
		}
	pthread_mutex_unlock(&provs_mu);
	return found;
}

UD_EXPORT void DAT_API dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data)
{
	struct ud_prov *p = ud_prov_find(info->ia_name);
	if (!p) {
		p = calloc(1, sizeof(*p));
		if (!p)
			return;
		snprintf(p->name, sizeof(p->name), "%s", info->ia_name);
		p->table = template;
		p->table.device_name = p->name;
		pthread_mutex_lock(&provs_mu);
		util_list_add_head(&provs, &p->link);
		pthread_mutex_unlock(&provs_mu);
	}
	p->info = *info;
	snprintf(p->params, sizeof(p->params), "%s", instance_data ? instance_data : "");
	dat_registry_add_provider(&p->table, info);
}

UD_EXPORT void DAT_API dat_provider_fini(const DAT_PROVIDER_INFO *info)
{
	struct ud_prov *p = ud_prov_find(info->ia_name);
	if (p)
		dat_registry_remove_provider(&p->table, info);
	/* (the table stays: handles still name it until the library goes) */
}

/* The registry dlclose()s a provider when its last IA closes, and opens it
 * again for the next: the tables go with the library, not before. */
__attribute__((destructor)) static void provs_free(void)
{
	pthread_mutex_lock(&provs_mu);
	struct ud_prov *p;
	while ((p = util_list_first(&provs, struct ud_prov, link))) {
		util_list_del(&p->link);
		free(p);
	}
	pthread_mutex_unlock(&provs_mu);
}
