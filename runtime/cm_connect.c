/*
 * cm_connect.c: the active side: connecting (on a socket of uwarp's or one
 * the program connected), the MPA Request once TCP is up, the Reply's
 * verdict, and disconnecting.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmap/rdmap_offer.h"
#include "uw_internal.h"

bool uw__cm_can_connect(const struct uw_cm_id_impl *id)
{
	const struct uw_qp_impl *qp = (const struct uw_qp_impl *)id->pub.qp;
	return qp && qp->pub.state == UW_QPS_INIT && !id->conn && !id->listening && !id->destroyed;
}

/* A connection on @fd (connected or connecting) that sends the MPA
 * Request once it is writable (ctx locked); it owns @fd on 0. */
int uw__cm_start_connect(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param)
{
	struct uw_context *ctx = id->pub.context;
	struct uw_conn *c = uw__conn_new(ctx, fd, true);
	if (!c)
		return ENOMEM;
	c->param = *param;
	if (param->private_data_len)
		memcpy(c->param_pdata, param->private_data, param->private_data_len);
	c->param.private_data = c->param_pdata;
	c->id = id;
	c->qp = (struct uw_qp_impl *)id->pub.qp;
	id->conn = c;
	uw__cm_policy_from(&c->param, false, &c->pol);
	uw__conn_poll(c, UV_WRITABLE);
	uw__conn_timer(c, param->mpa_timeout_ms ? param->mpa_timeout_ms : ctx->reply_timeout_ms);
	return 0;
}

int uw_cm_connect(struct uw_cm_id *i, const struct sockaddr *addr,
		  const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EINVAL;
	if (!(param = uw__cm_param_or_default(param)))
		return EINVAL;
	socklen_t len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = 0, fd = -1;
	if (!uw__cm_can_connect(id)) {
		rc = EINVAL;
		goto out;
	}
	fd = util_sys_socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0)
		uw__cm_apply_tos(id, fd); /* (before the SYN, which carries it) */
	if (fd < 0 || (util_sys_connect(fd, addr, len) && errno != EINPROGRESS)) {
		rc = errno;
		goto out;
	}
	if (!(rc = uw__cm_start_connect(id, fd, param))) {
		fd = -1;
		memcpy(&i->peer_addr, addr, len);
	}
out:
	if (fd >= 0)
		util_sys_close(fd);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_connect_fd(struct uw_cm_id *i, int fd, const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	if (!(param = uw__cm_param_or_default(param)))
		return EINVAL;
	return uw__cm_hand_over(id, fd, param);
}

void uw__cm_connected(struct uw_conn *c)
{
	int err = 0;
	socklen_t l = sizeof(err);
	if (util_sys_getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) || err) {
		uw__conn_close(c, err ? err : errno, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	if (c->id) {
		socklen_t sl = sizeof(c->id->pub.local_addr);
		util_sys_getsockname(c->fd, (struct sockaddr *)&c->id->pub.local_addr, &sl);
		sl = sizeof(c->id->pub.peer_addr);
		util_sys_getpeername(c->fd, (struct sockaddr *)&c->id->pub.peer_addr, &sl);
	}
	if (!uw__conn_step(c, UW_LIFE_IN_TCP_UP, NULL).send_request)
		return;
	uint8_t pd[MPA_PD_MAX_RFC];
	size_t len = uw__cm_pdata_with_offer(&c->param, true, pd);
	mpa_request(&c->pol, pd, (uint16_t)len, &c->req);
	uw__conn_poll(c, UV_READABLE);
	int rc = uw__cm_send_frame(c, &c->req);
	c->req.pdata = NULL; /* pd is gone; only the frame's fields matter now */
	c->req.pdata_len = 0;
	if (rc)
		uw__conn_close(c, rc, UW_CM_EVENT_CONNECT_ERROR);
}

void uw__cm_reply_arrived(struct uw_conn *c)
{
	struct mpa_frame rep;
	struct mpa_verdict v;
	if (mpa_frame_decode(c->frame, c->frame_len, c->pol.pd_max, &rep) <= 0) {
		uw__conn_close(c, EPROTO, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	if (mpa_conclude(&c->pol, &c->req, &rep, &c->mp, &v)) {
		if (v.reason == MPA_REFUSE_PEER_REJECTED) {
			uw__conn_close(c, ECONNREFUSED, UW_CM_EVENT_REJECTED);
			return;
		}
		if (v.llp_ecode)
			uw__cm_setup_terminate(c, v.llp_ecode, c->req.crc || rep.crc);
		uw__conn_close(c, ECONNREFUSED, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	rdmap_offer_strip(rep.pdata, rep.pdata_len, &c->peer_ext);
	int rc = uw__conn_start(c);
	if (rc) {
		uw__conn_close(c, -rc, UW_CM_EVENT_CONNECT_ERROR);
		return;
	}
	/* ESTABLISHED; a P2P initiator's RTR goes first; toward a peer that
	 * is not uwarp, the watch for siw's race (conn_life.h) */
	struct uw_life_facts f = { .p2p = c->mp.p2p, .peer_uwarp = c->peer_ext };
	uw__conn_step(c, UW_LIFE_IN_REPLY, &f);
	/* a responder that spoke first (siw does) may already be in rxbuf */
	if (c->rxlen)
		uw__conn_rx(c);
	uw__conn_tx(c);
}

int uw_cm_set_limits(struct uw_cm_id *i, unsigned idle_timeout_ms, unsigned keepalive_s)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || keepalive_s > UW_KEEPALIVE_MAX_S)
		return EINVAL;
	pthread_mutex_lock(&i->context->lock);
	int rc = ENOTCONN;
	if (id->conn) {
		uw__conn_set_limits(id->conn, idle_timeout_ms, keepalive_s);
		rc = 0;
	}
	pthread_mutex_unlock(&i->context->lock);
	return rc;
}

void uw__cm_apply_tos(const struct uw_cm_id_impl *id, int fd)
{
	if (id->tos < 0 || fd < 0)
		return;
	int v = id->tos, dom = 0;
	socklen_t l = sizeof(dom);
	util_sys_getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &dom, &l);
	/* an IPv6 socket may carry IPv4 (a mapped address): both fields */
	if (dom == AF_INET6)
		util_sys_setsockopt(fd, IPPROTO_IPV6, IPV6_TCLASS, &v, sizeof(v));
	util_sys_setsockopt(fd, IPPROTO_IP, IP_TOS, &v, sizeof(v));
}

int uw_cm_set_tos(struct uw_cm_id *i, uint8_t tos)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	pthread_mutex_lock(&i->context->lock);
	id->tos = tos;
	if (id->listening)
		uw__cm_apply_tos(id, id->listen_fd);
	if (id->conn)
		uw__cm_apply_tos(id, id->conn->fd);
	pthread_mutex_unlock(&i->context->lock);
	return 0;
}

int uw_cm_disconnect(struct uw_cm_id *i)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	pthread_mutex_lock(&i->context->lock);
	int rc = ENOTCONN;
	if (id->conn) {
		uw__conn_close(id->conn, 0, UW_CM_EVENT_DISCONNECTED);
		rc = 0;
	}
	pthread_mutex_unlock(&i->context->lock);
	return rc;
}
