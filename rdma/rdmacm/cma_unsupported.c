/*
 * cma_unsupported.c: the connection manager calls iWARP has no use for,
 * or uwarp has not built. Each fails with -1 and errno EOPNOTSUPP, and
 * with UWARP_VERBS_DEBUG=1 names itself. README lists them.
 */
#include <errno.h>

#include "cma_internal.h"

static int unsup(const char *call, const char *why)
{
	return ucm_err(uwv_debug(EOPNOTSUPP, call, why));
}

int rdma_join_multicast(struct rdma_cm_id *id, struct sockaddr *addr, void *context)
{
	return unsup("rdma_join_multicast", "iWARP has no multicast");
}

int rdma_join_multicast_ex(struct rdma_cm_id *id, struct rdma_cm_join_mc_attr_ex *mc_join_attr,
			   void *context)
{
	return unsup("rdma_join_multicast_ex", "iWARP has no multicast");
}

int rdma_leave_multicast(struct rdma_cm_id *id, struct sockaddr *addr)
{
	return unsup("rdma_leave_multicast", "iWARP has no multicast");
}

/* rdma-core uses it to tell the kernel of an InfiniBand event (COMM_EST)
 * the kernel could not see; uwarp's connection sees its own. */
int rdma_notify(struct rdma_cm_id *id, enum ibv_event_type event)
{
	return unsup("rdma_notify", "an InfiniBand call: uwarp's connection sees its own events");
}

int rdma_set_local_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return unsup("rdma_set_local_ece", "enhanced connection establishment is a RoCE feature");
}

int rdma_get_remote_ece(struct rdma_cm_id *id, struct ibv_ece *ece)
{
	return unsup("rdma_get_remote_ece", "enhanced connection establishment is a RoCE feature");
}

/* rdma_reject with the ECE reason set by rdma_set_local_ece, which
 * cannot have been set: a plain reject */
int rdma_reject_ece(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	return rdma_reject(id, private_data, private_data_len);
}
