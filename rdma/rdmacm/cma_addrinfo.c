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

/* Addresses the caller gave in its hints fill what name resolution left
 * empty: with neither node nor service (libfabric's verbs provider passes
 * its endpoints' addresses this way) they are the whole answer. */
static int take_hint_addrs(struct rdma_addrinfo *r, const struct rdma_addrinfo *hints)
{
	if (!hints)
		return 1;
	if (!r->ai_src_addr && hints->ai_src_addr && hints->ai_src_len) {
		r->ai_src_addr = copy_addr(hints->ai_src_addr, hints->ai_src_len);
		if (!r->ai_src_addr)
			return 0;
		r->ai_src_len = hints->ai_src_len;
	}
	if (!r->ai_dst_addr && hints->ai_dst_addr && hints->ai_dst_len) {
		r->ai_dst_addr = copy_addr(hints->ai_dst_addr, hints->ai_dst_len);
		if (!r->ai_dst_addr)
			return 0;
		r->ai_dst_len = hints->ai_dst_len;
	}
	return 1;
}

static int family_ok(const struct sockaddr *a)
{
	return !a || a->sa_family == AF_INET || a->sa_family == AF_INET6;
}

/* Neither node nor service: the hints' own addresses, which must be IP. */
static int from_hints(const struct rdma_addrinfo *hints, struct rdma_addrinfo *r)
{
	if (!hints || (!hints->ai_src_len && !hints->ai_dst_len))
		return EINVAL;
	const struct sockaddr *src = hints->ai_src_len ? hints->ai_src_addr : NULL;
	const struct sockaddr *dst = hints->ai_dst_len ? hints->ai_dst_addr : NULL;
	if ((hints->ai_src_len && !src) || (hints->ai_dst_len && !dst))
		return EINVAL;
	if (!family_ok(src) || !family_ok(dst))
		return uwv_debug(EAFNOSUPPORT, "rdma_getaddrinfo", "only IPv4 and IPv6 addresses");
	r->ai_family = (dst ? dst : src)->sa_family;
	return take_hint_addrs(r, hints) ? 0 : ENOMEM;
}

/* node and/or service: getaddrinfo's first answer, the source of a passive
 * result and the destination of an active one. */
static int from_name(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo *r)
{
	int flags = r->ai_flags;
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
		return eai_errno(eai);
	r->ai_family = ai->ai_family;
	struct sockaddr *a = copy_addr(ai->ai_addr, ai->ai_addrlen);
	int ok = a != NULL;
	if (flags & RAI_PASSIVE) {
		r->ai_src_addr = a;
		r->ai_src_len = ai->ai_addrlen;
	} else {
		r->ai_dst_addr = a;
		r->ai_dst_len = ai->ai_addrlen;
	}
	if (ok && ai->ai_canonname) {
		char **name = flags & RAI_PASSIVE ? &r->ai_src_canonname : &r->ai_dst_canonname;
		*name = strdup(ai->ai_canonname);
	}
	freeaddrinfo(ai);
	return ok && take_hint_addrs(r, hints) ? 0 : ENOMEM;
}

int rdma_getaddrinfo(const char *node, const char *service, const struct rdma_addrinfo *hints,
		     struct rdma_addrinfo **res)
{
	if (!res || (!node && !service && !hints))
		return ucm_err(EINVAL);
	if (hints && hints->ai_port_space && hints->ai_port_space != RDMA_PS_TCP)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_getaddrinfo", "only RDMA_PS_TCP"));
	if (hints && hints->ai_qp_type && hints->ai_qp_type != IBV_QPT_RC)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_getaddrinfo", "only RC QPs"));
	struct rdma_addrinfo *r = calloc(1, sizeof(*r));
	if (!r)
		return ucm_err(ENOMEM);
	r->ai_flags = hints ? hints->ai_flags : 0;
	r->ai_qp_type = IBV_QPT_RC;
	r->ai_port_space = RDMA_PS_TCP;
	int err = node || service ? from_name(node, service, hints, r) : from_hints(hints, r);
	if (err) {
		rdma_freeaddrinfo(r);
		return ucm_err(err);
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
