/*
 * stub.h: what every call of the provider stand-ins answers: there is no
 * such device (EOPNOTSUPP, as errno and as the returned code).
 */
#ifndef UWARP_RDMA_PROVIDER_STUB_H
#define UWARP_RDMA_PROVIDER_STUB_H

#include <errno.h>
#include <stddef.h>

static inline void *no_device_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

static inline int no_device(void)
{
	errno = EOPNOTSUPP;
	return EOPNOTSUPP;
}

#endif
