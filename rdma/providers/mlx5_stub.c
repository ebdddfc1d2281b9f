/*
 * mlx5_stub.c: libmlx5.so.1 for uwarp-run. Debian's perftest (and libfabric) link
 * rdma-core's mlx5 and EFA provider libraries directly, and those need
 * rdma-core's private interfaces, which uwarp's libibverbs does not have;
 * so uwarp-run's directory holds these instead: the calls such programs
 * name, at rdma-core's symbol versions, each saying there is no such
 * device (uwarp0 is neither). A program asks them only when it believes
 * the device is one of theirs.
 */
#include <infiniband/mlx5dv.h>

#include "stub.h"

bool mlx5dv_is_supported(struct ibv_device *device) { return false; }

int mlx5dv_query_device(struct ibv_context *ctx_in, struct mlx5dv_context *attrs_out)
{
	return no_device();
}

struct ibv_context *mlx5dv_open_device(struct ibv_device *device, struct mlx5dv_context_attr *attr)
{
	return no_device_ptr();
}

struct ibv_qp *mlx5dv_create_qp(struct ibv_context *context, struct ibv_qp_init_attr_ex *qp_attr,
				struct mlx5dv_qp_init_attr *mlx5_qp_attr)
{
	return no_device_ptr();
}

struct mlx5dv_qp_ex *mlx5dv_qp_ex_from_ibv_qp_ex(struct ibv_qp_ex *qp) { return no_device_ptr(); }

struct mlx5dv_mkey *mlx5dv_create_mkey(struct mlx5dv_mkey_init_attr *mkey_init_attr)
{
	return no_device_ptr();
}

int mlx5dv_destroy_mkey(struct mlx5dv_mkey *mkey) { return no_device(); }

int mlx5dv_crypto_login(struct ibv_context *context, struct mlx5dv_crypto_login_attr *login_attr)
{
	return no_device();
}

struct mlx5dv_dek *mlx5dv_dek_create(struct ibv_context *context,
				     struct mlx5dv_dek_init_attr *init_attr)
{
	return no_device_ptr();
}

int mlx5dv_dek_destroy(struct mlx5dv_dek *dek) { return no_device(); }

int mlx5dv_devx_general_cmd(struct ibv_context *context, const void *in, size_t inlen, void *out,
			    size_t outlen)
{
	return no_device();
}
