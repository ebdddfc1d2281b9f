/*
 * cma_id.c: connection identifiers, from creation through address and
 * route resolution, listening, connecting, accepting, to disconnecting.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cma_internal.h"

static socklen_t addr_len(const struct sockaddr *a)
{
	return a->sa_family == AF_INET    ? sizeof(struct sockaddr_in)
	       : a->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					  : 0;
}

int rdma_create_id(struct rdma_event_channel *channel, struct rdma_cm_id **id, void *context,
		   enum rdma_port_space ps)
{
	if (!id)
		return ucm_err(EINVAL);
	if (ps != RDMA_PS_TCP)
		return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_create_id",
					 "iWARP connects RC QPs over TCP only (RDMA_PS_TCP)"));
	struct ucm_id *u = calloc(1, sizeof(*u));
	if (!u)
		return ucm_err(ENOMEM);
	if (!channel) {
		struct ucm_channel *own = ucm_channel_new();
		if (!own) {
			free(u);
			return -1;
		}
		channel = &own->ch;
		u->sync = true;
	}
	u->uw = uw_cm_create_id(ucm_chan(channel)->uw, u);
	if (!u->uw) {
		int e = errno;
		if (u->sync)
			ucm_channel_free(ucm_chan(channel));
		free(u);
		return ucm_err(e);
	}
	u->bound_fd = -1;
	u->tos = -1;
	u->afonly = -1;
	u->id.channel = channel;
	u->id.context = context;
	u->id.ps = ps;
	u->id.qp_type = IBV_QPT_RC;
	*id = &u->id;
	return 0;
}

int rdma_destroy_id(struct rdma_cm_id *id)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (id->event)
		rdma_ack_cm_event(id->event);
	int rc = uw_cm_destroy_id(u->uw);
	if (rc)
		return ucm_err(rc);
	if (u->listening)
		ucm_watch_listener(ucm_chan(id->channel), u, false);
	if (u->bound_fd >= 0)
		close(u->bound_fd);
	if (u->sync)
		ucm_channel_free(ucm_chan(id->channel));
	free(u);
	return 0;
}

/* Not a wildcard and not loopback (nor IPv4 loopback mapped into IPv6). */
static bool is_device_addr(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET) {
		uint32_t ip = ntohl(((const struct sockaddr_in *)(const void *)a)->sin_addr.s_addr);
		return ip != INADDR_ANY && (ip >> 24) != 127;
	}
	const struct in6_addr *ip6 = &((const struct sockaddr_in6 *)(const void *)a)->sin6_addr;
	if (IN6_IS_ADDR_V4MAPPED(ip6))
		return ip6->s6_addr[12] != 127 && !(ip6->s6_addr32[3] == 0);
	return !IN6_IS_ADDR_UNSPECIFIED(ip6) && !IN6_IS_ADDR_LOOPBACK(ip6);
}

/* A bind is real, as the kernel's is for rdma-core: a socket bound to the
 * address says whether it is this host's and the port free, and picks a
 * port for port 0, which rdma_get_src_port tells at once. The socket
 * listens from here on: programs (qperf's server) send the port to their
 * peer between rdma_bind_addr and rdma_listen, and uwarp resolves nothing,
 * so the peer's connect may come first; it waits in the socket's queue
 * instead of being refused. rdma_listen makes the id take its requests. */
/* RDMA_OPTION_ID_TOS on a socket of the id's own (the listener's: what it
 * accepts inherits it) */
static void tos_apply(int fd, int tos)
{
	if (fd < 0 || tos < 0)
		return;
	setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &tos, sizeof(tos)); /* (IPv4: fails) */
}

int rdma_bind_addr(struct rdma_cm_id *id, struct sockaddr *addr)
{
	if (!id || !addr)
		return ucm_err(EINVAL);
	socklen_t len = addr_len(addr);
	if (!len)
		return ucm_err(EAFNOSUPPORT);
	struct ucm_id *u = ucm_of(id);
	if (u->bound_fd >= 0)
		return ucm_err(EINVAL); /* bound already */
	int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -1;
	int one = 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	tos_apply(fd, u->tos);
	/* an IPv6 id with AFONLY takes no IPv4 (mapped) clients; without it
	 * the system's default (net.ipv6.bindv6only), as the kernel's */
	if (addr->sa_family == AF_INET6 && u->afonly >= 0)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &u->afonly, sizeof(u->afonly));
	struct sockaddr_storage got;
	socklen_t gl = sizeof(got);
	if (bind(fd, addr, len) || getsockname(fd, (struct sockaddr *)&got, &gl) ||
	    listen(fd, SOMAXCONN)) {
		int e = errno;
		close(fd);
		return ucm_err(e);
	}
	u->bound_fd = fd;
	memset(&id->route.addr.src_storage, 0, sizeof(id->route.addr.src_storage));
	memcpy(&id->route.addr.src_storage, &got, gl);
	/* rdma_bind_addr(3): the id references a device when the address is
	 * one of a device's. uwarp0's are the host's interface addresses
	 * other than loopback (its GIDs); a wildcard or loopback bind still
	 * listens and accepts, with no device until a request comes (as a
	 * wildcard bind has none with the kernel's rdma_cm). libfabric's
	 * verbs provider depends on this: an
	 * endpoint it makes for "localhost" that finds a device takes
	 * 127.0.0.1 as its address, which peers on other hosts cannot reach;
	 * finding none, it takes an interface's address instead. */
	id->verbs = is_device_addr((struct sockaddr *)&got) ? ucm_verbs() : NULL;
	id->port_num = id->verbs ? 1 : 0;
	u->addr_done = true;
	return 0;
}

/* The source address the host's routing picks for dst: a UDP socket's
 * connect() asks the kernel without sending anything. */
static int route_source(const struct sockaddr *dst, struct sockaddr_storage *src)
{
	int fd = socket(dst->sa_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int rc = 0;
	struct sockaddr_storage d;
	memcpy(&d, dst, addr_len(dst));
	/* a port is needed for connect(); any does */
	if (d.ss_family == AF_INET && !((struct sockaddr_in *)&d)->sin_port)
		((struct sockaddr_in *)&d)->sin_port = htons(9);
	if (d.ss_family == AF_INET6 && !((struct sockaddr_in6 *)&d)->sin6_port)
		((struct sockaddr_in6 *)&d)->sin6_port = htons(9);
	socklen_t sl = sizeof(*src);
	if (connect(fd, (struct sockaddr *)&d, addr_len(dst)) ||
	    getsockname(fd, (struct sockaddr *)src, &sl))
		rc = errno;
	close(fd);
	if (!rc) {
		if (src->ss_family == AF_INET)
			((struct sockaddr_in *)src)->sin_port = 0;
		else
			((struct sockaddr_in6 *)src)->sin6_port = 0;
	}
	return rc;
}

int rdma_resolve_addr(struct rdma_cm_id *id, struct sockaddr *src_addr, struct sockaddr *dst_addr,
		      int timeout_ms)
{
	if (!id || !dst_addr || !addr_len(dst_addr))
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (src_addr && rdma_bind_addr(id, src_addr))
		return -1;
	struct rdma_addr *a = &id->route.addr;
	memset(&a->dst_storage, 0, sizeof(a->dst_storage));
	memcpy(&a->dst_storage, dst_addr, addr_len(dst_addr));
	struct sockaddr_storage src;
	int rc = route_source(dst_addr, &src);
	if (!rc && !src_addr)
		memcpy(&a->src_storage, &src, sizeof(src));
	id->verbs = ucm_verbs();
	id->port_num = 1;
	u->addr_done = !rc;
	if (ucm_queue(u, rc ? RDMA_CM_EVENT_ADDR_ERROR : RDMA_CM_EVENT_ADDR_RESOLVED, -rc))
		return -1;
	return ucm_complete(u, RDMA_CM_EVENT_ADDR_RESOLVED);
}

int rdma_resolve_route(struct rdma_cm_id *id, int timeout_ms)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (!u->addr_done)
		return ucm_err(EINVAL);
	u->route_done = true;
	if (ucm_queue(u, RDMA_CM_EVENT_ROUTE_RESOLVED, 0))
		return -1;
	return ucm_complete(u, RDMA_CM_EVENT_ROUTE_RESOLVED);
}

int rdma_listen(struct rdma_cm_id *id, int backlog)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (!u->addr_done || u->bound_fd < 0)
		return ucm_err(EINVAL); /* rdma-core: bind first */
	if (u->listening)
		return ucm_err(EBUSY);
	/* requests come from the bound socket: rdma_get_cm_event accepts
	 * and hands each connection to the uwarp id for its MPA exchange */
	int rc = uw_cm_listen_handoff(u->uw);
	if (rc)
		return ucm_err(rc);
	if (ucm_watch_listener(ucm_chan(id->channel), u, true))
		return -1;
	u->listening = true;
	return 0;
}

/* rdma-core's API has no word for MPA's CRC: UWARP_CRC=off stops asking
 * for it (the peer may still ask, RFC 5044 7.1), for programs measured
 * without it or captured where a port forward re-cuts the stream. Read
 * once; a value that is neither on nor off is named and the default (ask)
 * holds. */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static enum uw_crc_mode crc_mode = UW_CRC_DEFAULT;

static void crc_read(void)
{
	const char *v = getenv("UWARP_CRC");
	if (v && strcmp(v, "off") == 0)
		crc_mode = UW_CRC_OFF;
	else if (v && strcmp(v, "on") == 0)
		crc_mode = UW_CRC_ON;
	else if (v)
		fprintf(stderr, "uwarp-rdmacm: UWARP_CRC=%s: not on or off; CRC is asked for\n", v);
}

static enum uw_crc_mode env_crc(void)
{
	pthread_once(&crc_once, crc_read);
	return crc_mode;
}

/* rdma-core's connection parameters as uwarp's: 0 Reads either way means
 * uwarp's default (16), as it does in uw_conn_param. */
static void conn_param_to_uw(const struct rdma_conn_param *p, struct uw_conn_param *u)
{
	memset(u, 0, sizeof(*u));
	u->crc = env_crc();
	if (!p)
		return;
	u->private_data = p->private_data;
	u->private_data_len = p->private_data ? p->private_data_len : 0;
	u->ird = p->responder_resources;
	u->ord = p->initiator_depth;
}

/* The QP a connection drives: the id's own (rdma_create_qp), or one the
 * program made itself with ibv_create_qp and names in conn_param.qp_num,
 * found by its number as the kernel's iWARP connection manager finds it. */
static int attach_qp(struct rdma_cm_id *id, const struct rdma_conn_param *p, const char *call)
{
	struct ucm_id *u = ucm_of(id);
	if (id->qp)
		return 0;
	if (!p || !p->qp_num)
		return uwv_debug(EINVAL, call,
				 "no QP: neither rdma_create_qp nor conn_param.qp_num");
	struct ibv_qp *qp = uwv_qp_by_num(p->qp_num);
	/* (any open of uwarp0 will do: every open shares one uwarp context) */
	if (!qp)
		return uwv_debug(EINVAL, call, "conn_param.qp_num names no QP");
	if (u->ext_qp && u->ext_qp_num == p->qp_num)
		return 0;
	int rc = uw_cm_attach_qp(u->uw, uwv_from(qp, struct uwv_qp)->uw);
	if (rc)
		return rc;
	u->ext_qp = true;
	u->ext_qp_num = p->qp_num;
	return 0;
}

int rdma_connect(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (!u->route_done)
		return ucm_err(EINVAL);
	int qrc = attach_qp(id, conn_param, "rdma_connect");
	if (qrc)
		return ucm_err(qrc);
	if (u->bound_fd >= 0) { /* a source address bound: not a listener */
		close(u->bound_fd);
		u->bound_fd = -1;
	}
	struct uw_conn_param p;
	conn_param_to_uw(conn_param, &p);
	int rc = uw_cm_connect(u->uw, &id->route.addr.dst_addr, &p);
	if (rc)
		return ucm_err(rc);
	return ucm_complete(u, RDMA_CM_EVENT_ESTABLISHED);
}

int rdma_accept(struct rdma_cm_id *id, struct rdma_conn_param *conn_param)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	int qrc = attach_qp(id, conn_param, "rdma_accept");
	if (qrc)
		return ucm_err(qrc);
	struct uw_conn_param p;
	conn_param_to_uw(conn_param, &p);
	int rc = uw_cm_accept(u->uw, &p);
	if (rc)
		return ucm_err(rc);
	return ucm_complete(u, RDMA_CM_EVENT_ESTABLISHED);
}

int rdma_reject(struct rdma_cm_id *id, const void *private_data, uint8_t private_data_len)
{
	if (!id)
		return ucm_err(EINVAL);
	int rc = uw_cm_reject(ucm_of(id)->uw, private_data, private_data ? private_data_len : 0);
	return rc ? ucm_err(rc) : 0;
}

/* Either side may end a connection, and both usually call this: after
 * the peer's end (or a failure) it succeeds, as the kernel's iWARP
 * connection manager does; on an id never connected it is EINVAL. */
int rdma_disconnect(struct rdma_cm_id *id)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	int rc = uw_cm_disconnect(u->uw);
	if (rc == ENOTCONN)
		rc = u->established ? 0 : EINVAL;
	return rc ? ucm_err(rc) : 0;
}

int rdma_migrate_id(struct rdma_cm_id *id, struct rdma_event_channel *channel)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	struct ucm_channel *own = NULL;
	if (!channel) {
		own = ucm_channel_new();
		if (!own)
			return -1;
		channel = &own->ch;
	}
	int rc = uw_cm_migrate_id(u->uw, ucm_chan(channel)->uw);
	if (!rc && u->listening) {
		ucm_watch_listener(ucm_chan(id->channel), u, false);
		if (ucm_watch_listener(ucm_chan(channel), u, true))
			rc = errno;
	}
	if (rc) {
		ucm_channel_free(own);
		return ucm_err(rc);
	}
	if (u->sync)
		ucm_channel_free(ucm_chan(id->channel));
	u->sync = own != NULL;
	id->channel = channel;
	return 0;
}

/* rdma-core's options: a listener reuses its address already (uwarp's
 * listeners set SO_REUSEADDR); the type of service is the TCP
 * connection's, as the kernel's iWARP connection manager sets it on its
 * socket (one byte, as rdma-core takes it); the others change nothing
 * uwarp has, so they are refused rather than ignored. */
int rdma_set_option(struct rdma_cm_id *id, int level, int optname, void *optval, size_t optlen)
{
	if (!id || !optval)
		return ucm_err(EINVAL);
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_REUSEADDR)
		return 0;
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_TOS) {
		if (optlen != sizeof(uint8_t))
			return ucm_err(EINVAL);
		struct ucm_id *u = ucm_of(id);
		int rc = uw_cm_set_tos(u->uw, *(const uint8_t *)optval);
		if (rc)
			return ucm_err(rc);
		u->tos = *(const uint8_t *)optval;
		tos_apply(u->bound_fd, u->tos); /* a listener accepts from it (cma_channel.c) */
		return 0;
	}
	if (level == RDMA_OPTION_ID && optname == RDMA_OPTION_ID_AFONLY) {
		if (optlen != sizeof(int))
			return ucm_err(EINVAL);
		struct ucm_id *u = ucm_of(id);
		int v = *(const int *)optval != 0;
		/* before the bind, as the kernel takes it (a bound socket's
		 * IPV6_V6ONLY cannot change) */
		if (u->bound_fd >= 0 || u->listening || u->addr_done)
			return ucm_err(EINVAL);
		u->afonly = v;
		return 0;
	}
	return ucm_err(uwv_debug(EOPNOTSUPP, "rdma_set_option",
				 "only RDMA_OPTION_ID_REUSEADDR, _TOS and _AFONLY (InfiniBand's "
				 "timeouts and path records have no meaning over TCP)"));
}

/* What rdma-core tells a program managing its own QP's states: the state
 * the connection manager has put the QP in (uwarp moves it itself). */
int rdma_init_qp_attr(struct rdma_cm_id *id, struct ibv_qp_attr *qp_attr, int *qp_attr_mask)
{
	if (!id || !qp_attr || !qp_attr_mask)
		return ucm_err(EINVAL);
	memset(qp_attr, 0, sizeof(*qp_attr));
	struct ucm_id *u = ucm_of(id);
	struct ibv_qp *qp = id->qp ? id->qp : u->ext_qp ? uwv_qp_by_num(u->ext_qp_num) : NULL;
	qp_attr->qp_state = qp ? qp->state : IBV_QPS_INIT;
	if (qp) {
		struct ibv_qp_init_attr ia;
		ibv_query_qp(qp, qp_attr, IBV_QP_STATE, &ia);
	}
	qp_attr->port_num = 1;
	qp_attr->qp_access_flags =
		IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	*qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_PKEY_INDEX;
	return 0;
}

/* rdma-core's last step for a program's own QP on the active side, after
 * it has moved the QP to RTS: acknowledge the connection's response. An
 * iWARP connection is established when ESTABLISHED comes (MPA has no third
 * message), so nothing is left to send; it fails where rdma-core's does,
 * on an id with a QP of its own, and on one not connected. */
int rdma_establish(struct rdma_cm_id *id)
{
	if (!id)
		return ucm_err(EINVAL);
	struct ucm_id *u = ucm_of(id);
	if (id->qp || !u->ext_qp || !u->established)
		return ucm_err(
			uwv_debug(EINVAL, "rdma_establish",
				  "only for a QP named by conn_param.qp_num, once connected"));
	return 0;
}

static __be16 port_of(const struct sockaddr *a)
{
	if (a->sa_family == AF_INET6)
		return ((const struct sockaddr_in6 *)(const void *)a)->sin6_port;
	if (a->sa_family == AF_INET)
		return ((const struct sockaddr_in *)(const void *)a)->sin_port;
	return 0;
}

__be16 rdma_get_src_port(struct rdma_cm_id *id) { return port_of(&id->route.addr.src_addr); }

__be16 rdma_get_dst_port(struct rdma_cm_id *id) { return port_of(&id->route.addr.dst_addr); }
