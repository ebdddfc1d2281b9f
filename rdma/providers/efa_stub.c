/*
 * efa_stub.c: libefa.so.1 for uwarp-run, for the same reason as
 * mlx5_stub.c: every call of rdma-core's libefa (which Debian's perftest
 * and libfabric link), each saying there is no such device.
 */
#include <infiniband/efadv.h>

#include "stub.h"

struct ibv_qp *efadv_create_driver_qp(struct ibv_pd *ibvpd, struct ibv_qp_init_attr *attr,
				      uint32_t driver_qp_type)
{
	return no_device_ptr();
}

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	return no_device_ptr();
}

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
{
	return no_device();
}

int efadv_query_ah(struct ibv_ah *ibvah, struct efadv_ah_attr *attr, uint32_t inlen)
{
	return no_device();
}

struct ibv_cq_ex *efadv_create_cq(struct ibv_context *ibvctx, struct ibv_cq_init_attr_ex *attr_ex,
				  struct efadv_cq_init_attr *efa_attr, uint32_t inlen)
{
	return no_device_ptr();
}

struct efadv_cq *efadv_cq_from_ibv_cq_ex(struct ibv_cq_ex *ibvcqx) { return no_device_ptr(); }
