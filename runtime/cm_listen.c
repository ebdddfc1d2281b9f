/*
 * cm_listen.c: the passive side: listening (on a socket of uwarp's, or on
 * sockets the program accepts and hands over), the MPA Request arriving,
 * and the application's accept or reject (RFC 5044 section 7.1, RFC 6581).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmap/rdmap_offer.h"
#include "uw_internal.h"

/* An accepted TCP connection: read its MPA Request (ctx locked). */
int uw__cm_take_accepted(struct uw_cm_id_impl *id, int fd)
{
	struct uw_context *ctx = id->pub.context;
	struct uw_conn *c = uw__conn_new(ctx, fd, false);
	if (!c)
		return ENOMEM;
	mpa_policy_default(&c->pol);
	c->listener = id;
	id->refs++;
	uw__conn_poll(c, UV_READABLE);
	uw__conn_timer(c, ctx->request_timeout_ms);
	return 0;
}

static void listen_cb(uv_poll_t *h, int status, int events)
{
	struct uw_cm_id_impl *id = h->data;
	for (int i = 0; i < 64 && id->listening && status >= 0; i++) {
		int fd = util_sys_accept4(id->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (uw__cm_take_accepted(id, fd))
			util_sys_close(fd);
	}
}

int uw_cm_listen_handoff(struct uw_cm_id *i)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc = id->listening || id->conn || id->destroyed ? EBUSY : 0;
	if (!rc) {
		id->listen_fd = -1;
		id->listening = true;
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_request_fd(struct uw_cm_id *i, int fd)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	return id ? uw__cm_hand_over(id, fd, NULL) : EINVAL;
}

int uw_cm_listen(struct uw_cm_id *i, const struct sockaddr *addr, int backlog)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || !addr || (addr->sa_family != AF_INET && addr->sa_family != AF_INET6))
		return EINVAL;
	socklen_t len = addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
						   : sizeof(struct sockaddr_in6);
	int fd = util_sys_socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	int one = 1;
	util_sys_setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	uw__cm_apply_tos(id, fd); /* what it accepts inherits it */
	/* the system's largest queue whatever @backlog says (verbs.h): the
	 * kernel cuts INT_MAX down to net.core.somaxconn */
	(void)backlog;
	if (util_sys_bind(fd, addr, len) || util_sys_listen(fd, INT_MAX)) {
		int e = errno;
		util_sys_close(fd);
		return e;
	}
	socklen_t sl = sizeof(i->local_addr);
	util_sys_getsockname(fd, (struct sockaddr *)&i->local_addr, &sl);
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	int rc =
		id->listening || id->conn ? EBUSY : -uv_poll_init(&ctx->loop, &id->listen_poll, fd);
	if (!rc) {
		id->listen_fd = fd;
		id->listening = true;
		id->listen_poll.data = id;
		uv_poll_start(&id->listen_poll, UV_READABLE, listen_cb);
		uw__kick(ctx);
	}
	pthread_mutex_unlock(&ctx->lock);
	if (rc)
		util_sys_close(fd);
	return rc;
}

void uw__cm_request_arrived(struct uw_conn *c)
{
	struct uw_cm_id_impl *l = c->listener;
	if (!l || !l->listening) {
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
		return;
	}
	struct uw_cm_id_impl *id = uw__cm_id_new(l->ch, l->pub.context_ptr);
	if (!id) {
		uw__conn_close(c, ENOMEM, UW_EV_NONE);
		return;
	}
	rdmap_offer_strip(c->req.pdata, c->req.pdata_len, &c->peer_ext);
	socklen_t sl = sizeof(id->pub.peer_addr);
	util_sys_getpeername(c->fd, (struct sockaddr *)&id->pub.peer_addr, &sl);
	sl = sizeof(id->pub.local_addr);
	util_sys_getsockname(c->fd, (struct sockaddr *)&id->pub.local_addr, &sl);
	id->conn = c;
	c->id = id;
	/* The Request is the application's now: no more reading (and no
	 * timer) until it accepts or rejects. */
	if (uw__conn_step(c, UW_LIFE_IN_REQUEST, NULL).stop_reading)
		uw__conn_poll(c, 0);
}

int uw_cm_accept(struct uw_cm_id *i, const struct uw_conn_param *param)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id)
		return EINVAL;
	if (!(param = uw__cm_param_or_default(param)))
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_conn *c = id->conn;
	struct uw_qp_impl *qp = (struct uw_qp_impl *)i->qp;
	int rc = 0;
	if (!c || c->life.st != UW_LIFE_REQ_HELD || !qp || qp->pub.state != UW_QPS_INIT) {
		rc = EINVAL;
		goto out;
	}
	/* an initiator that gave up while the application thought it over
	 * has closed its end: say so now rather than report ESTABLISHED */
	char b;
	ssize_t k = util_sys_recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
	if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		uw__conn_close(c, ECONNRESET, UW_EV_NONE);
		rc = ECONNRESET;
		goto out;
	}
	struct mpa_frame rep;
	struct mpa_verdict v;
	uint8_t pd[MPA_PD_MAX_RFC];
	c->param = *param;
	uw__cm_policy_from(param, true, &c->pol);
	size_t len = uw__cm_pdata_with_offer(param, c->peer_ext, pd);
	if (mpa_respond(&c->pol, &c->req, pd, (uint16_t)len, &rep, &c->mp, &v)) {
		if (v.send_reject)
			uw__cm_send_frame(c, &rep);
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
		rc = ECONNREFUSED;
		goto out;
	}
	c->qp = qp;
	rc = uw__cm_send_frame(c, &rep);
	if (!rc)
		rc = -uw__conn_start(c);
	if (rc) {
		uw__conn_close(c, rc, UW_EV_NONE);
		goto out;
	}
	/* A siw initiator takes FPDUs behind the Reply for "extra data" and
	 * drops us, so hold until the peer's first FPDU or a short fallback
	 * (docs/wire-notes.md, "The responder's hold"). In P2P mode its RTR
	 * is that FPDU. */
	qp->pub.state = UW_QPS_RTR; /* receiving; sends queue until the hold ends */
	struct uw_life_facts f = { .p2p = c->mp.p2p,
				   .request_timeout_ms = ctx->request_timeout_ms };
	uw__conn_step(c, UW_LIFE_IN_ACCEPT, &f);
	if (c->rxlen)
		uw__conn_rx(c);
out:
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_cm_reject(struct uw_cm_id *i, const void *private_data, uint16_t len)
{
	struct uw_cm_id_impl *id = (struct uw_cm_id_impl *)i;
	if (!id || len > MPA_PD_MAX_RFC - MPA_V2_BLOCK_LEN || (len && !private_data))
		return EINVAL;
	struct uw_context *ctx = i->context;
	pthread_mutex_lock(&ctx->lock);
	struct uw_conn *c = id->conn;
	int rc = EINVAL;
	if (c && c->life.st == UW_LIFE_REQ_HELD) {
		struct mpa_frame rej;
		mpa_policy_default(&c->pol);
		mpa_reject_reply(&c->pol, &c->req, private_data, len, &rej);
		rc = uw__cm_send_frame(c, &rej);
		uw__conn_close(c, ECONNREFUSED, UW_EV_NONE);
	}
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}
