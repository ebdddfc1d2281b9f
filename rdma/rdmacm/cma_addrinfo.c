/*
 * cma_addrinfo.c: rdma_getaddrinfo, on getaddrinfo. An RDMA address is an
 * IP address and port here: the results are RC over TCP (RDMA_PS_TCP),
 * a passive one's address the source, an active one's the destination.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>

#include "cma_internal.h"

static int eai_errno(int eai)
{
	switch (eai) {
	case EAI_NONAME:
	case EAI_NODATA:
		return ENOENT; /* as rdma-core: no such host or service */
	case EAI_AGAIN:
		return EAGAIN;
	case EAI_BADFLAGS:
	case EAI_SERVICE:
		return EINVAL;
	case EAI_FAMILY:
	case EAI_ADDRFAMILY:
		return EAFNOSUPPORT;
	case EAI_MEMORY:
		return ENOMEM;
	case EAI_SYSTEM:
		return errno;
	default:
		return EIO;
	}
}

static struct sockaddr *copy_addr(const struct sockaddr *a, socklen_t len)
{
	struct sockaddr *c = malloc(len);
	if (c)
		memcpy(c, a, len);
	return c;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	if (!res || (!node && !service))
		return ucm_err(EINVAL);
	int flags = hints ? hints->ai_flags : 0;
	if (hints && hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_getaddrinfo", "only RDMA_PS_TCP"));
	if (hints && hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_getaddrinfo", "only RC QPs"));
	struct addrinfo h = { .ai_socktype = SOCK_STREAM, .ai_protocol = IPPROTO_TCP };
	if (flags & RAI_PASSIVE)
		h.ai_flags |= AI_PASSIVE;
	if (flags & RAI_NUMERICHOST)
		h.ai_flags |= AI_NUMERICHOST;
	if (hints && hints->ai_family)
		h.ai_family = hints->ai_family;
	struct addrinfo *ai = NULL;
	int eai = getaddrinfo(node, service, &h, &ai);
	if (eai)
		return ucm_err(eai_errno(eai));
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	if (!r) {
		freeaddrinfo(ai);
		return ucm_err(ENOMEM);
	}
	r->ai_flags = flags;
	r->ai_family = ai->ai_family;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	int ok = 1;
	if (flags & RAI_PASSIVE) {
		r->ai_src_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_src_len = ai->ai_addrlen;
		ok = r->ai_src_addr != NULL;
	} else {
		r->ai_dst_addr = copy_addr(ai->ai_addr, ai->ai_addrlen);
		r->ai_dst_len = ai->ai_addrlen;
		ok = r->ai_dst_addr != NULL;
		if (ok && hints && hints->ai_src_addr && hints->ai_src_len) {
			r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
			r->ai_src_len = hints->ai_src_len;
			ok = r->ai_src_addr != NULL;
		}
	}
	if (ok && ai->ai_canonname) {
		char **name = flags & RAI_PASSIVE ? &r->ai_src_canonname : &r->ai_dst_canonname;
		*name = strdup(ai->ai_canonname);
	}
	freeaddrinfo(ai);
	if (!ok) {
		rdma_freeaddrinfo(r);
		return ucm_err(ENOMEM);
	}
	*res = r;
	return 0;
}

void rdma_freeaddrinfo(struct rdma_addrinfo *res)
{
	while (res) {
		struct rdma_addrinfo *next = res->ai_next;
		free(res->ai_src_addr);
		free(res->ai_dst_addr);
		free(res->ai_src_canonname);
		free(res->ai_dst_canonname);
		free(res->ai_route);
		free(res->ai_connect);
		free(res);
		res = next;
	}
}
