/*
 * ibv_unsupported.c: the libibverbs calls uwarp has no use for, or has not
 * built yet. Each exists so a program that names it loads; each fails the
 * way rdma-core fails a call its device lacks (EOPNOTSUPP, as errno and as
 * the returned code where the call returns one), and with
 * UWARP_VERBS_DEBUG=1 names itself on stderr. README lists them.
 */
#include <errno.h>

#include "ibv_internal.h"

#define UNSUP "not implemented by uwarp"

static void *null_with(const char *call, const char *why)
{
	errno = uwv_debug(EOPNOTSUPP, call, why);
	return NULL;
}

static int fail_with(const char *call, const char *why)
{
	errno = uwv_debug(EOPNOTSUPP, call, why);
	return EOPNOTSUPP;
}

/* Address handles serve unreliable datagram QPs, which iWARP has not. */
struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	return null_with("ibv_create_ah", "iWARP has no address handles (no UD QPs)");
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc, struct ibv_grh *grh,
				     uint8_t port_num)
{
	return null_with("ibv_create_ah_from_wc", "iWARP has no address handles (no UD QPs)");
}

int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num, struct ibv_wc *wc,
			struct ibv_grh *grh, struct ibv_ah_attr *ah_attr)
{
	return fail_with("ibv_init_ah_from_wc", "iWARP has no address handles (no UD QPs)");
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	return fail_with("ibv_destroy_ah", "iWARP has no address handles (no UD QPs)");
}

int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fail_with("ibv_attach_mcast", "iWARP has no multicast");
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return fail_with("ibv_detach_mcast", "iWARP has no multicast");
}

int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid);
int ibv_resolve_eth_l2_from_gid(struct ibv_context *context, struct ibv_ah_attr *attr,
				uint8_t eth_mac[6], uint16_t *vid)
{
	return fail_with("ibv_resolve_eth_l2_from_gid", "a RoCE call: iWARP resolves by IP");
}

/* Sharing objects between processes needs a kernel that holds them. */
struct ibv_context *ibv_import_device(int cmd_fd)
{
	return null_with("ibv_import_device", "no kernel objects to share between processes");
}

struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return null_with("ibv_import_pd", "no kernel objects to share between processes");
}

struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return null_with("ibv_import_mr", "no kernel objects to share between processes");
}

struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return null_with("ibv_import_dm", "no device memory");
}

/* Nothing can have been imported, so there is nothing to let go. */
void ibv_unimport_pd(struct ibv_pd *pd)
{
	uwv_debug(EINVAL, "ibv_unimport_pd", "nothing was imported");
}

void ibv_unimport_mr(struct ibv_mr *mr)
{
	uwv_debug(EINVAL, "ibv_unimport_mr", "nothing was imported");
}

void ibv_unimport_dm(struct ibv_dm *dm)
{
	uwv_debug(EINVAL, "ibv_unimport_dm", "nothing was imported");
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
				 int fd, int access)
{
	return null_with("ibv_reg_dmabuf_mr", "dma-buf memory is a device's, not this process's");
}

int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr, size_t length,
		 int access)
{
	errno = uwv_debug(EOPNOTSUPP, "ibv_rereg_mr", UNSUP ": deregister and register again");
	return IBV_REREG_MR_ERR_CMD;
}

int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_with("ibv_query_ece", "enhanced connection establishment is a RoCE feature");
}

int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return fail_with("ibv_set_ece", "enhanced connection establishment is a RoCE feature");
}

/* uwarp places a message's bytes in stream order, but promises no more
 * than rdma-core lets a device say by default: 0, "not guaranteed". */
int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op, uint32_t flags)
{
	return 0;
}

/* Providers register with rdma-core's loader; this library is the device. */
struct verbs_device_ops;
void ibv_register_driver(const char *name, void *init_func);
void ibv_register_driver(const char *name, void *init_func)
{
	uwv_debug(EOPNOTSUPP, "ibv_register_driver", "uwarp loads no providers");
}
