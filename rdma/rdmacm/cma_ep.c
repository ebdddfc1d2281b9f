/*
 * cma_ep.c: rdma-core's synchronous endpoint calls (rdma_create_ep,
 * rdma_get_request, rdma_destroy_ep), made of the asynchronous ones on a
 * channel of the id's own.
 */
#include <errno.h>
#include <stdlib.h>

#include "cma_internal.h"

int rdma_create_ep(struct rdma_cm_id **id, struct rdma_addrinfo *res, struct ibv_pd *pd,
		   struct ibv_qp_init_attr *qp_init_attr)
{
	if (!id || !res)
		return ucm_err(EINVAL);
	struct rdma_cm_id *n;
	if (rdma_create_id(NULL, &n, NULL, res->ai_port_space ? res->ai_port_space : RDMA_PS_TCP))
		return -1;
	struct ucm_id *u = ucm_of(n);
	n->pd = pd;
	int rc;
	if (res->ai_flags & RAI_PASSIVE) {
		rc = rdma_bind_addr(n, res->ai_src_addr);
		if (!rc && qp_init_attr) {
			u->ep_qp = true;
			u->ep_attr = *qp_init_attr;
		}
	} else {
		rc = rdma_resolve_addr(n, res->ai_src_addr, res->ai_dst_addr, 2000);
		if (!rc)
			rc = rdma_resolve_route(n, 2000);
		if (!rc && qp_init_attr)
			rc = rdma_create_qp(n, pd, qp_init_attr);
	}
	if (rc) {
		int e = errno;
		rdma_destroy_ep(n);
		return ucm_err(e);
	}
	*id = n;
	return 0;
}

void rdma_destroy_ep(struct rdma_cm_id *id)
{
	if (!id)
		return;
	rdma_destroy_qp(id);
	rdma_destroy_srq(id);
	rdma_destroy_id(id);
}

int rdma_get_request(struct rdma_cm_id *listen, struct rdma_cm_id **id)
{
	if (!listen || !id)
		return ucm_err(EINVAL);
	struct ucm_id *l = ucm_of(listen);
	if (!l->sync)
		return ucm_err(EINVAL); /* rdma-core: for synchronous listeners only */
	if (ucm_complete(l, RDMA_CM_EVENT_CONNECT_REQUEST))
		return -1;
	struct rdma_cm_event *ev = listen->event;
	listen->event = NULL;
	struct rdma_cm_id *n = ev->id;
	/* the new id waits on a channel of its own, as its listener does */
	if (rdma_migrate_id(n, NULL))
		goto fail;
	n->pd = listen->pd;
	n->event = ev;
	if (l->ep_qp) {
		struct ibv_qp_init_attr a = l->ep_attr;
		if (rdma_create_qp(n, listen->pd, &a))
			goto fail;
	}
	*id = n;
	return 0;
fail:;
	int e = errno;
	rdma_reject(n, NULL, 0);
	n->event = NULL;
	rdma_ack_cm_event(ev);
	rdma_destroy_id(n);
	return ucm_err(e);
}
