/*
 * ibv_mem.c: protection domains and memory regions.
 *
 * Nothing is pinned: the engine reads and writes the registered memory
 * with ordinary loads and stores from this process, so fork needs no
 * preparation and on-demand paging is what every registration already
 * is.
 */
#include <errno.h>
#include <stdlib.h>

#include "ibv_internal.h"

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c)
{
	if (!c) {
		errno = EINVAL;
		return NULL;
	}
	struct uwv_pd *p = calloc(1, sizeof(*p));
	if (!p) {
		errno = ENOMEM;
		return NULL;
	}
	p->uw = uw_alloc_pd(uwv_ctx(c)->uw);
	if (!p->uw) {
		int e = errno;
		free(p);
		errno = e;
		return NULL;
	}
	p->ibv.context = c;
	p->ibv.handle = 0;
	return &p->ibv;
}

int ibv_dealloc_pd(struct ibv_pd *pd)
{
	if (!pd)
		return EINVAL;
	struct uwv_pd *p = uwv_from(pd, struct uwv_pd);
	int rc = uw_dealloc_pd(p->uw);
	if (rc == 0)
		free(p);
	return rc;
}

/* Flags at IBV_ACCESS_OPTIONAL_FIRST and above are hints a device may
 * ignore (rdma-core's rule); the ones below it must be honoured. */
static int access_to_uw(unsigned access, const char *call)
{
	unsigned known = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND |
			 IBV_ACCESS_HUGETLB | IBV_ACCESS_ZERO_BASED;
	unsigned mandatory = access & (IBV_ACCESS_OPTIONAL_FIRST - 1);
	if (mandatory & ~known) {
		errno = uwv_debug(EOPNOTSUPP, call,
				  "an access flag uwarp does not have (flush, atomic write, ...)");
		return -1;
	}
	int a = 0;
	if (access & IBV_ACCESS_LOCAL_WRITE)
		a |= UW_ACCESS_LOCAL_WRITE;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		a |= UW_ACCESS_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		a |= UW_ACCESS_REMOTE_READ;
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		a |= UW_ACCESS_REMOTE_ATOMIC;
	if (access & IBV_ACCESS_MW_BIND)
		a |= UW_ACCESS_MW_BIND;
	return a;
}

/* A region peers and the region's own SGEs address from iova (0 with
 * IBV_ACCESS_ZERO_BASED: rdma-core's ibv_reg_mr(3) makes the two the same). */
static struct ibv_mr *reg(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			  unsigned access, const char *call)
{
	if (!pd) {
		errno = EINVAL;
		return NULL;
	}
	int a = access_to_uw(access, call);
	if (a < 0)
		return NULL;
	struct uwv_mr *m = calloc(1, sizeof(*m));
	if (!m) {
		errno = ENOMEM;
		return NULL;
	}
	if (access & IBV_ACCESS_ZERO_BASED)
		iova = 0;
	m->uw = uw_reg_mr_iova(uwv_from(pd, struct uwv_pd)->uw, addr, length, iova, a);
	if (!m->uw) {
		int e = errno;
		free(m);
		errno = e;
		return NULL;
	}
	m->access = (int)access;
	m->ibv.context = pd->context;
	m->ibv.pd = pd;
	m->ibv.addr = addr;
	m->ibv.length = length;
	m->ibv.lkey = m->uw->lkey;
	m->ibv.rkey = m->uw->rkey;
	return &m->ibv;
}

#undef ibv_reg_mr
#undef ibv_reg_mr_iova
struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return reg(pd, addr, length, (uintptr_t)addr, (unsigned)access, "ibv_reg_mr");
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
				unsigned int access)
{
	return reg(pd, addr, length, iova, access, "ibv_reg_mr_iova2");
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

int ibv_dereg_mr(struct ibv_mr *mr)
{
	if (!mr)
		return EINVAL;
	struct uwv_mr *m = uwv_from(mr, struct uwv_mr);
	int rc = uw_dereg_mr(m->uw);
	if (rc == 0)
		free(m);
	return rc;
}

int ibv_fork_init(void)
{
	return 0; /* nothing is pinned, so a child's copy-on-write cannot hurt */
}

enum ibv_fork_status ibv_is_fork_initialized(void) { return IBV_FORK_UNNEEDED; }

int ibv_dontfork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}

int ibv_dofork_range(void *base, size_t size)
{
	(void)base;
	(void)size;
	return 0;
}
