/*
 * udapl_ia.c: opening, querying and closing an IA, and protection zones.
 * An IA is a uwarp context with an engine thread (a peer's RDMA Read of
 * our memory is served while the consumer computes, as on an RNIC), one
 * CM channel and the thread that turns its events into DAT events.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "udapl_internal.h"

/* The IA address: the first word of ia_params names an interface (its
 * IPv4 address, else its IPv6 one) or is an address itself; none means
 * the loopback interface. */
static int ia_address(const struct ud_prov *p, struct sockaddr_storage *ss)
{
	char word[64] = "lo";
	sscanf(p->params, "%63s", word);
	memset(ss, 0, sizeof(*ss));
	struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, word, &v4->sin_addr) == 1) {
		v4->sin_family = AF_INET;
		return 0;
	}
	if (inet_pton(AF_INET6, word, &v6->sin6_addr) == 1) {
		v6->sin6_family = AF_INET6;
		return 0;
	}
	struct ifaddrs *ifs, *f;
	if (getifaddrs(&ifs))
		return -1;
	int found = 0;
	for (int want = AF_INET; !found && want; want = want == AF_INET ? AF_INET6 : 0)
		for (f = ifs; f && !found; f = f->ifa_next)
			if (f->ifa_addr && f->ifa_addr->sa_family == want &&
			    !strcmp(f->ifa_name, word)) {
				memcpy(ss, f->ifa_addr,
				       want == AF_INET ? sizeof(*v4) : sizeof(*v6));
				found = 1;
			}
	freeifaddrs(ifs);
	return found ? 0 : -1;
}

DAT_RETURN DAT_API ud_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async,
			      DAT_IA_HANDLE *out)
{
	if (!name)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG1);
	if (!async)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	struct ud_prov *prov = ud_prov_find(name);
	if (!prov)
		return UD_ERR(DAT_PROVIDER_NOT_FOUND, DAT_NAME_NOT_REGISTERED);
	struct ud_ia *ia = calloc(1, sizeof(*ia));
	if (!ia)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	ia->prov = prov;
	snprintf(ia->name, sizeof(ia->name), "%s", name);
	if (ia_address(prov, &ia->addr)) {
		fprintf(stderr,
			"uwarp DAT provider: IA %s: no such interface or address in "
			"its dat.conf ia_params\n",
			name);
		free(ia);
		return UD_ERR(DAT_INVALID_ADDRESS, DAT_INVALID_ADDRESS_UNREACHABLE);
	}
	pthread_mutex_init(&ia->mu, NULL);
	ud_obj_init(ia, &ia->h, UD_MAGIC_IA, DAT_HANDLE_TYPE_IA);
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	ia->ctx = uw_open(&ca);
	ia->cm = ia->ctx ? uw_cm_create_channel(ia->ctx) : NULL;
	if (!ia->cm)
		goto fail;
	DAT_RETURN rc = DAT_SUCCESS;
	if (*async == DAT_HANDLE_NULL) {
		DAT_EVD_HANDLE e;
		rc = ud_evd_create(ia, qlen > 0 ? qlen : 8, DAT_HANDLE_NULL, DAT_EVD_ASYNC_FLAG,
				   &e);
		if (rc != DAT_SUCCESS)
			goto fail_rc;
		ia->async_evd = e;
		ia->own_async = true;
		*async = e;
	} else if (ud_valid(*async, UD_MAGIC_EVD)) {
		ia->async_evd = *async; /* another instance's, shared */
	}
	if (pthread_create(&ia->cm_thread, NULL, ud_cm_thread, ia)) {
		rc = UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE);
		goto fail_rc;
	}
	*out = ia;
	return DAT_SUCCESS;
fail:
	rc = UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE);
fail_rc:
	if (ia->own_async)
		ud_evd_destroy(ia->async_evd);
	if (ia->cm)
		uw_cm_destroy_channel(ia->cm);
	if (ia->ctx)
		uw_close(ia->ctx);
	pthread_mutex_destroy(&ia->mu);
	free(ia);
	return rc;
}

static void fill_ia_attr(struct ud_ia *ia, DAT_IA_ATTR *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->adapter_name, sizeof(a->adapter_name), "%s", ia->name);
	snprintf(a->vendor_name, sizeof(a->vendor_name), "uwarp (iWARP over TCP)");
	a->hardware_version_major = 1;
	a->firmware_version_major = 1;
	a->ia_address_ptr = (DAT_IA_ADDRESS_PTR)&ia->addr;
	a->max_eps = 4096;
	a->max_dto_per_ep = UD_MAX_DTOS;
	a->max_rdma_read_per_ep_in = UD_MAX_RDMA_READ;
	a->max_rdma_read_per_ep_out = UD_MAX_RDMA_READ;
	a->max_evds = 4096;
	a->max_evd_qlen = UD_MAX_EVD_QLEN;
	a->max_iov_segments_per_dto = UD_MAX_IOV;
	a->max_lmrs = 1 << 20;
	a->max_lmr_block_size = 0xffffffffu;
	a->max_lmr_virtual_address = ~(DAT_VADDR)0;
	a->max_pzs = 4096;
	a->max_message_size = UD_MAX_MESSAGE;
	a->max_rdma_size = UD_MAX_MESSAGE;
	a->max_rmrs = 1 << 20;
	a->max_rmr_target_address = ~(DAT_VADDR)0;
	a->max_iov_segments_per_rdma_read = UD_MAX_IOV; /* (one Read per segment) */
	a->max_iov_segments_per_rdma_write = UD_MAX_IOV;
	a->max_rdma_read_in = UD_MAX_RDMA_READ;
	a->max_rdma_read_out = UD_MAX_RDMA_READ;
	a->max_rdma_read_per_ep_in_guaranteed = DAT_TRUE;
	a->max_rdma_read_per_ep_out_guaranteed = DAT_TRUE;
	a->zb_supported = DAT_FALSE;
	a->extension_supported = DAT_EXTENSION_NONE;
}

static const DAT_BOOLEAN merging[6][6] = {
	/* every event stream may feed one EVD with any other */
	{ 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1 },
	{ 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1 }, { 1, 1, 1, 1, 1, 1 },
};

/* DAPL's name for "RDMA Read works here": consumers (dtest) look for it
 * before they use Reads */
static DAT_NAMED_ATTR provider_specific[] = { { "DAT_IB_RDMA_READ", "TRUE" } };

static void fill_provider_attr(const struct ud_prov *prov, DAT_PROVIDER_ATTR *p)
{
	DAT_PROVIDER_ATTR a = {
		.provider_version_major = 1,
		.provider_version_minor = 0,
		.dapl_version_major = DAT_VERSION_MAJOR,
		.dapl_version_minor = DAT_VERSION_MINOR,
		.lmr_mem_types_supported = DAT_MEM_TYPE_VIRTUAL | DAT_MEM_TYPE_LMR,
		.iov_ownership_on_return = DAT_IOV_CONSUMER,
		.dat_qos_supported = DAT_QOS_BEST_EFFORT,
		.completion_flags_supported =
			DAT_COMPLETION_DEFAULT_FLAG | DAT_COMPLETION_SUPPRESS_FLAG |
			DAT_COMPLETION_SOLICITED_WAIT_FLAG | DAT_COMPLETION_UNSIGNALLED_FLAG |
			DAT_COMPLETION_BARRIER_FENCE_FLAG | DAT_COMPLETION_EVD_THRESHOLD_FLAG,
		/* the registry's key for this IA (it finds the entry again by
		 * it at dat_ia_close): what dat.conf said. The calls are
		 * thread safe either way. */
		.is_thread_safe = prov->info.is_thread_safe,
		.max_private_data_size = UD_MAX_PDATA,
		.supports_multipath = DAT_FALSE,
		.ep_creator = DAT_PSP_CREATES_EP_IFASKED,
		.pz_support = DAT_PZ_UNIQUE,
		.optimal_buffer_alignment = 64,
		.srq_supported = DAT_FALSE,
		.lmr_sync_req = DAT_FALSE,
		.dto_async_return_guaranteed = DAT_FALSE,
		.rdma_write_for_rdma_read_req = DAT_FALSE,
		.rdma_read_lmr_rmr_context_exposure = DAT_FALSE,
		.rmr_scope_supported = DAT_RMR_SCOPE_ANY,
		.is_signal_safe = DAT_FALSE,
		.ha_supported = DAT_FALSE,
		.num_provider_specific_attr = 1,
		.provider_specific_attr = provider_specific,
	};
	snprintf(a.provider_name, sizeof(a.provider_name), "%s", UD_NAME);
	/* (the const member is a matrix the consumer reads) */
	memcpy(p, &a, sizeof(a));
	memcpy((void *)p->evd_stream_merging_supported, merging, sizeof(merging));
}

DAT_RETURN DAT_API ud_ia_query(DAT_IA_HANDLE h, DAT_EVD_HANDLE *async, DAT_IA_ATTR_MASK am,
			       DAT_IA_ATTR *ia_attr, DAT_PROVIDER_ATTR_MASK pm,
			       DAT_PROVIDER_ATTR *pattr)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (am && !ia_attr)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG4);
	if (pm && !pattr)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG6);
	if (async)
		*async = ia->async_evd ? (DAT_EVD_HANDLE)ia->async_evd : DAT_EVD_OUT_OF_SCOPE;
	if (am && ia_attr)
		fill_ia_attr(ia, ia_attr);
	if (pm && pattr)
		fill_provider_attr(ia->prov, pattr);
	return DAT_SUCCESS;
}

/* Tear every object down (abrupt close, or a graceful one with none). */
static void destroy_all(struct ud_ia *ia)
{
	pthread_mutex_lock(&ia->mu);
	/* connections first: their QPs flush into EVDs that still exist */
	for (int pass = 0; pass < 4; pass++) {
		struct ud_obj *o, *next;
		util_list_for_each_safe(o, next, &ia->objs, link) {
			bool now = (pass == 0 &&
				    (o->magic == UD_MAGIC_CR || o->magic == UD_MAGIC_PSP ||
				     o->magic == UD_MAGIC_RSP)) ||
				   (pass == 1 && o->magic == UD_MAGIC_EP) ||
				   (pass == 2 &&
				    (o->magic == UD_MAGIC_RMR || o->magic == UD_MAGIC_LMR)) ||
				   (pass == 3 &&
				    (o->magic == UD_MAGIC_EVD || o->magic == UD_MAGIC_CNO ||
				     o->magic == UD_MAGIC_PZ));
			if (!now)
				continue;
			switch (o->magic) {
			case UD_MAGIC_CR:
				ud_cr_destroy((struct ud_cr *)o);
				break;
			case UD_MAGIC_PSP:
			case UD_MAGIC_RSP:
				ud_sp_destroy((struct ud_sp *)o);
				break;
			case UD_MAGIC_EP:
				ud_ep_destroy((struct ud_ep *)o);
				break;
			case UD_MAGIC_RMR: {
				struct ud_rmr *r = (struct ud_rmr *)o;
				ud_obj_unlink(o);
				uw_dealloc_mw(r->mw);
				free(r);
				break;
			}
			default:
				break;
			}
		}
	}
	/* (LMRs after every RMR: a bound window holds its region) */
	struct ud_obj *o, *next;
	util_list_for_each_safe(o, next, &ia->objs, link) {
		if (o->magic == UD_MAGIC_LMR) {
			struct ud_lmr *l = (struct ud_lmr *)o;
			ud_obj_unlink(o);
			uw_dereg_mr(l->mr);
			free(l);
		}
	}
	util_list_for_each_safe(o, next, &ia->objs, link) {
		if (o->magic == UD_MAGIC_EVD) {
			ud_evd_destroy((struct ud_evd *)o);
		} else if (o->magic == UD_MAGIC_CNO) {
			struct ud_cno *c = (struct ud_cno *)o;
			ud_obj_unlink(o);
			close(c->epfd);
			close(c->kick);
			free(c);
		}
	}
	util_list_for_each_safe(o, next, &ia->objs, link) {
		if (o->magic == UD_MAGIC_PZ) {
			struct ud_pz *z = (struct ud_pz *)o;
			ud_obj_unlink(o);
			uw_dealloc_pd(z->pd);
			free(z);
		}
	}
	pthread_mutex_unlock(&ia->mu);
}

DAT_RETURN DAT_API ud_ia_close(DAT_IA_HANDLE h, DAT_CLOSE_FLAGS flags)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (flags != DAT_CLOSE_ABRUPT_FLAG && flags != DAT_CLOSE_GRACEFUL_FLAG)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	pthread_mutex_lock(&ia->mu);
	bool busy = false;
	struct ud_obj *o;
	util_list_for_each(o, &ia->objs, link)
		if (!(ia->own_async && o == &ia->async_evd->h))
			busy = true;
	pthread_mutex_unlock(&ia->mu);
	if (busy && flags == DAT_CLOSE_GRACEFUL_FLAG)
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_IA_IN_USE);
	__atomic_store_n(&ia->stopping, true, __ATOMIC_RELEASE);
	pthread_join(ia->cm_thread, NULL);
	destroy_all(ia);
	uw_cm_destroy_channel(ia->cm);
	uw_close(ia->ctx);
	ia->h.magic = UD_MAGIC_DEAD;
	pthread_mutex_destroy(&ia->mu);
	free(ia);
	return DAT_SUCCESS;
}

/* ---- protection zones ---- */

DAT_RETURN DAT_API ud_pz_create(DAT_IA_HANDLE h, DAT_PZ_HANDLE *out)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	struct ud_pz *z = calloc(1, sizeof(*z));
	if (!z)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	z->pd = uw_alloc_pd(ia->ctx);
	if (!z->pd) {
		free(z);
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_PROTECTION_DOMAIN);
	}
	pthread_mutex_lock(&ia->mu);
	ud_obj_init(ia, &z->h, UD_MAGIC_PZ, DAT_HANDLE_TYPE_PZ);
	pthread_mutex_unlock(&ia->mu);
	*out = z;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_pz_query(DAT_PZ_HANDLE h, DAT_PZ_PARAM_MASK m, DAT_PZ_PARAM *p)
{
	struct ud_pz *z = h;
	if (!ud_valid(z, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	if (m & DAT_PZ_FIELD_IA_HANDLE)
		p->ia_handle = z->h.ia;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_pz_free(DAT_PZ_HANDLE h)
{
	struct ud_pz *z = h;
	if (!ud_valid(z, UD_MAGIC_PZ))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_PZ);
	struct ud_ia *ia = z->h.ia;
	pthread_mutex_lock(&ia->mu);
	if (z->users) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_PZ_IN_USE);
	}
	ud_obj_unlink(&z->h);
	pthread_mutex_unlock(&ia->mu);
	uw_dealloc_pd(z->pd);
	free(z);
	return DAT_SUCCESS;
}
