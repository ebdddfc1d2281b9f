/*
 * efa_stub.c: libefa.so.1 for uwarp-run, for the same reason as
 * mlx5_stub.c: the EFA calls Debian's perftest names, each saying there is
 * no such device.
 */
#include <errno.h>
#include <infiniband/efadv.h>

struct ibv_qp *efadv_create_qp_ex(struct ibv_context *ibvctx, struct ibv_qp_init_attr_ex *attr_ex,
				  struct efadv_qp_init_attr *efa_attr, uint32_t inlen)
{
	errno = EOPNOTSUPP;
	return NULL;
}

int efadv_query_device(struct ibv_context *ibvctx, struct efadv_device_attr *attr, uint32_t inlen)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}
