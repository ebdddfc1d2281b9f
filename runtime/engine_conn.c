/*
 * engine_conn.c: one TCP connection under the engine: its socket and
 * timer on the libuv loop, the MPA frame exchange, and teardown.
 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "uw_internal.h"

static void handle_closed(uv_handle_t *h)
{
	struct uw_conn *c = h->data;
	if (--c->handles)
		return;
	if (c->rd_init)
		rdmap_conn_fini(&c->rd);
	if (c->rx_own)
		free(c->rxbuf);
	uw__conn_txset_put(c);
	util_list_del(&c->held_link);
	util_list_del(&c->link);
	uw__notify(c->ctx);
	free(c);
}

static void read_frame(struct uw_conn *c);

/* A terminating or lingering connection reads only to throw away: what
 * the peer sent after the error means nothing now. */
void uw__conn_discard_input(struct uw_conn *c)
{
	for (int round = 0; round < 16; round++) {
		ssize_t n = util_sys_read(c->fd, c->ctx->rxbuf, UW_CONN_RXBUF_MARKERS);
		if (n > 0)
			continue;
		if (n == 0 && c->life.st == UW_LIFE_LINGER) {
			uw__conn_close(c, 0, UW_EV_NONE); /* the peer has read the Terminate */
		} else if (n == 0) {
			c->peer_eof = true; /* nothing more to watch for */
			uw__conn_poll(c, c->poll_events & ~UV_READABLE);
		} else if (errno == EINTR)
			continue;
		else if (errno != EAGAIN)
			uw__conn_close(c, EPROTO, UW_CM_EVENT_DISCONNECTED);
		return;
	}
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
	struct uw_conn *c = h->data;

	if (c->life.st == UW_LIFE_CLOSED)
		return;
	if (status < 0) {
		/* libuv reports any POLLERR as EBADF: ask the socket what it was */
		int err = 0;
		socklen_t l = sizeof(err);
		if (util_sys_getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &l) || !err)
			err = -status;
		uw__conn_close(c, err, UW_EV_AUTO);
		return;
	}
	if (events & UV_WRITABLE) {
		if (c->life.st == UW_LIFE_CONNECTING)
			uw__cm_connected(c);
		else if (c->life.st == UW_LIFE_TERMINATING)
			uw__conn_term_tx(c);
		else if (c->out_off < c->out_len) {
			ssize_t n =
				uw__sock_write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
			if (n > 0)
				c->out_off += (size_t)n;
			else if (n < 0 && errno != EAGAIN && errno != EINTR)
				uw__conn_close(c, errno, UW_EV_AUTO);
			if (c->life.st != UW_LIFE_CLOSED && c->out_off == c->out_len)
				uw__conn_poll(c, UV_READABLE);
		} else if (uw_life_full(&c->life)) {
			uw__conn_tx(c);
		}
	}
	if (c->life.st == UW_LIFE_CLOSED || !(events & (UV_READABLE | UV_DISCONNECT)))
		return;
	if (uw_life_full(&c->life))
		uw__conn_rx(c);
	else if (c->life.st == UW_LIFE_TERMINATING || c->life.st == UW_LIFE_LINGER)
		uw__conn_discard_input(c);
	else if (c->life.st == UW_LIFE_REQ_SENT || c->life.st == UW_LIFE_WAIT_REQ)
		read_frame(c);
}

/* Has everything we sent left and been acknowledged, with FPDUs among
 * it? Then a peer that says nothing may be sitting on them: siw, as a
 * responder, hands the socket to its QP only after its Reply, and FPDUs
 * that arrive in between wait in the socket until more data comes
 * (docs/wire-notes.md). The nudge, a zero-length RDMA Write (STag 1, as
 * siw's own RTR; zero-length Writes are not checked), makes it read them. */
static bool all_acked(struct uw_conn *c)
{
	int unsent = 0;
	return c->tx.fpdus && c->wr_iov == c->batch.niov &&
	       !util_sys_ioctl(c->fd, SIOCOUTQ, &unsent) && unsent == 0;
}

static void timer_cb(uv_timer_t *t)
{
	struct uw_conn *c = t->data;
	struct uw_life_facts f = { .event = UW_LIFE_EV_AUTO };
	if (c->life.st == UW_LIFE_RUNNING && c->life.nudge_ticks)
		f.quiet = all_acked(c);
	struct uw_life_acts a = uw__conn_step(c, UW_LIFE_IN_TIMER, &f);
	if (a.tx)
		uw__conn_tx(c);
}

struct uw_conn *uw__conn_new(struct uw_context *ctx, int fd, bool initiator)
{
	struct uw_conn *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->rxcap = UW_CONN_RXBUF;
	if (uv_poll_init(&ctx->loop, &c->poll, fd)) {
		free(c);
		return NULL;
	}
	uv_timer_init(&ctx->loop, &c->timer);
	c->poll.data = c;
	c->timer.data = c;
	c->handles = 2;
	util_list_init(&c->held_link);
	c->ctx = ctx;
	c->fd = fd;
	uw_life_init(&c->life, initiator);
	util_list_add_tail(&ctx->conns, &c->link);
	/* Small writes must leave now: an MPA frame, a Send, a Terminate
	 * (siw does the same on both ends). */
	int one = 1;
	util_sys_setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return c;
}

void uw__conn_poll(struct uw_conn *c, int events)
{
	c->poll_want = events;
	if (c->rx_wait)
		events &= ~UV_READABLE; /* (the input is paused) */
	if (c->life.st == UW_LIFE_CLOSED || events == c->poll_events)
		return;
	c->poll_events = events;
	if (events)
		uv_poll_start(&c->poll, events, poll_cb);
	else
		uv_poll_stop(&c->poll);
	uw__kick(c->ctx);
}

void uw__conn_timer(struct uw_conn *c, unsigned ms)
{
	if (ms)
		uv_timer_start(&c->timer, timer_cb, ms, 0);
	else
		uv_timer_stop(&c->timer);
	uw__kick(c->ctx);
}

/* Read what there is of the peer's MPA frame; anything behind it is the
 * start of full operation and is kept for the receive path. */
static void read_frame(struct uw_conn *c)
{
	struct mpa_frame f;
	ssize_t n = util_sys_read(c->fd, c->frame + c->frame_len, sizeof(c->frame) - c->frame_len);

	if (n == 0) {
		uw__conn_close(c, ECONNRESET, UW_EV_AUTO);
		return;
	}
	if (n < 0) {
		if (errno != EAGAIN && errno != EINTR)
			uw__conn_close(c, errno, UW_EV_AUTO);
		return;
	}
	c->frame_len += (size_t)n;
	ssize_t len = mpa_frame_decode(c->frame, c->frame_len, c->pol.pd_max, &f);
	if (len == -EAGAIN)
		return;
	if (len < 0) {
		uw__conn_close(c, EPROTO, UW_EV_AUTO);
		return;
	}
	/* what came behind the frame waits in a buffer of its own (the
	 * shared one is only lent for a read) */
	c->rxbuf = c->frame + len;
	c->rxlen = c->frame_len - (size_t)len;
	c->rxoff = 0;
	if (!uw__conn_rx_hold(c)) {
		uw__conn_close(c, ENOMEM, UW_EV_AUTO);
		return;
	}
	c->frame_len = (size_t)len;
	uw__conn_timer(c, 0);
	if (c->life.st == UW_LIFE_WAIT_REQ) {
		c->req = f;
		uw__cm_request_arrived(c);
	} else {
		uw__cm_reply_arrived(c);
	}
}

/* the idle watch: two ticks (half the limit each) with no whole FPDU
 * from the peer end the connection */
static void idle_cb(uv_timer_t *t)
{
	struct uw_conn *c = t->data;
	if (!uw_life_full(&c->life))
		return;
	if (c->rx_fpdus != c->idle_seen) {
		c->idle_seen = c->rx_fpdus;
		c->idle_ticks = 0;
		return;
	}
	if (++c->idle_ticks >= 2)
		uw__conn_close(c, ETIMEDOUT, UW_CM_EVENT_DISCONNECTED);
}

/* The running connection's limits that the application asked for, from
 * its start or when it changes them (ctx locked; @ka_was: the keepalive
 * in force until now). The idle watch counts from now. */
static void running_limits(struct uw_conn *c, unsigned ka_was)
{
	if (c->param.keepalive_s) {
		int on = 1, idle = (int)c->param.keepalive_s, cnt = 3;
		int intvl = idle / 3 > 0 ? idle / 3 : 1;
		util_sys_setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
		util_sys_setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
		util_sys_setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
		util_sys_setsockopt(c->fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	} else if (ka_was) {
		int off = 0;
		util_sys_setsockopt(c->fd, SOL_SOCKET, SO_KEEPALIVE, &off, sizeof(off));
	}
	if (c->param.idle_timeout_ms) {
		uint64_t half = c->param.idle_timeout_ms / 2 ? c->param.idle_timeout_ms / 2 : 1;
		if (!c->idle_on) {
			uv_timer_init(&c->ctx->loop, &c->idle);
			c->idle.data = c;
			c->handles++;
			c->idle_on = true;
		}
		c->idle_seen = c->rx_fpdus;
		c->idle_ticks = 0;
		uv_timer_start(&c->idle, idle_cb, half, half);
		uw__kick(c->ctx);
	} else if (c->idle_on) {
		uv_timer_stop(&c->idle); /* closed with the connection */
	}
}

void uw__conn_set_limits(struct uw_conn *c, unsigned idle_timeout_ms, unsigned keepalive_s)
{
	unsigned ka_was = c->param.keepalive_s;
	c->param.idle_timeout_ms = idle_timeout_ms;
	c->param.keepalive_s = keepalive_s;
	if (c->rd_init) /* else uw__conn_start applies them */
		running_limits(c, ka_was);
}

int uw__conn_start(struct uw_conn *c)
{
	struct uw_qp_impl *qp = c->qp;
	struct uw_context *ctx = c->ctx;
	const struct mpa_params *p = &c->mp;
	uint32_t mulpdu;

	if (c->param.large_fpdu || (qp->rfc7306 = c->peer_ext && !c->param.no_extensions)) {
		mulpdu = fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, p->markers_tx);
	} else {
		int mss = 0;
		socklen_t l = sizeof(mss);
		if (util_sys_getsockopt(c->fd, IPPROTO_TCP, TCP_MAXSEG, &mss, &l) || mss <= 64)
			mss = 1460;
		mulpdu = fpdu_ulpdu_max(FPDU_SIZE_RFC, (uint32_t)mss, p->markers_tx);
	}
	struct rdmap_conn_cfg cfg = {
		.pd = ((struct uw_pd_impl *)qp->pub.pd)->id,
		.qp = qp->pub.qp_num,
		.ird = p->ird,
		.ord = p->ord,
		.rfc7306 = qp->rfc7306,
		.mulpdu = mulpdu,
		.mem = { uw__stag_lookup, uw__stag_invalidate, ctx },
		.recv_claim = uw__qp_recv_claim,
		.recv_ctx = qp,
		.recv_wait = ctx->recv_wait_ms > 0,
	};
	/* Markers cut a 64 KiB FPDU into some 130 pieces: such a connection
	 * gets a list long enough for several FPDUs per writev. */
	c->batch_niov = p->markers_tx ? FPDU_BATCH_IOV : UW_CONN_BATCH_IOV;
	if (rdmap_conn_init(&c->rd, &cfg))
		return -ENOMEM;
	if (p->markers_rx)
		c->rxcap = UW_CONN_RXBUF_MARKERS;
	c->rd_init = true;
	struct fpdu_rx_cfg rc = { .crc = p->crc,
				  .markers = p->markers_rx,
				  .hdr_len = rdmap_hdr_len,
				  .arg = &c->rd,
				  .pieces = true };
	fpdu_rx_init(&c->rx, &rc);
	fpdu_tx_init(&c->tx, p->crc, p->markers_tx);
	qp->conn = c;
	qp->pub.state = UW_QPS_RTS;
	running_limits(c, 0);
	uw__conn_poll(c, UV_READABLE);
	return 0;
}

void uw__conn_fail(struct uw_conn *c, const struct rddp_error *e)
{
	if (!uw_life_full(&c->life))
		return;
	rdmap_conn_fail(&c->rd, e);
	if (c->qp)
		uw__qp_async_fail(c->qp, e);
	struct uw_life_facts f = { .reply_out = c->out_off == c->out_len };
	if (!uw__conn_step(c, UW_LIFE_IN_ERROR, &f).fail)
		return; /* our Reply is not out: no Terminate can be read */
	/* The Terminate is framed now (the MPA frame buffer is free in full
	 * operation) and leaves behind the gather list already made: an FPDU
	 * cut in the middle would hide it from the peer, and the list's FPDUs
	 * are already counted in the marker positions the Terminate's framing
	 * follows (RFC 5044 section 5). */
	uint8_t t[MPA_ULPDU_LEN_SIZE + RDMAP_TERM_MAX_ULPDU];
	struct iovec iov[16];
	uint8_t scratch[64];
	struct fpdu_batch b;
	fpdu_batch_init(&b, iov, 16, scratch, sizeof(scratch));
	size_t n = rdmap_tx_terminate(&c->rd, t);
	c->out_len = c->out_off = 0;
	if (fpdu_tx_append(&c->tx, &b, t, n, NULL, 0) == 0 && b.bytes <= sizeof(c->out)) {
		for (int i = 0; i < b.niov; i++) {
			memcpy(c->out + c->out_len, b.iov[i].iov_base, b.iov[i].iov_len);
			c->out_len += b.iov[i].iov_len;
		}
	}
	uw__conn_term_tx(c);
}

/* The application's side of the end: the id learns of it. */
static void report_end(struct uw_conn *c, int status, int event)
{
	if (!c->id)
		return;
	struct uw_cm_id_impl *id = c->id;
	id->conn = NULL;
	c->id = NULL;
	if (event >= 0)
		uw__cm_event(id, (enum uw_cm_event_type)event, status, NULL, c);
}

/* The end the state machine decided (@was: the state it left). */
static void finish(struct uw_conn *c, enum uw_life_state was, const struct uw_life_acts *a)
{
	if (was != UW_LIFE_LINGER) {
		c->close_status = a->status;
		if (c->listener) {
			uw__cm_id_put(c->listener);
			c->listener = NULL;
		}
		if (c->qp) {
			c->qp->conn = NULL;
			c->qp->end_errno = a->status;
			/* a running connection's failure, not the application's
			 * own end (ECONNABORTED); one that never came up is the
			 * connection manager's CONNECT_ERROR alone */
			if (a->status && a->status != ECONNABORTED &&
			    (c->qp->pub.state == UW_QPS_RTS || c->qp->pub.state == UW_QPS_SQD))
				uw__qp_async_fail(c->qp, NULL);
			if (c->qp->pub.state != UW_QPS_ERR)
				uw__qp_flush(c->qp);
		}
	}
	if (a->linger) {
		/* The application learns of the end now; the socket lingers,
		 * throwing input away, until the peer closes its side or
		 * UW_LIFE_TERM_LINGER_MS pass. */
		report_end(c, a->status, a->event);
		c->qp = NULL; /* the application may destroy it now */
		uw__conn_timer(c, a->timer_ms);
		uw__conn_poll(c, UV_READABLE);
		uw__notify(c->ctx);
		return;
	}
	uv_poll_stop(&c->poll);
	uv_timer_stop(&c->timer);
	/* libuv takes the descriptor out of its epoll set in uv_close: the
	 * number must still be ours then, not reused by another thread's
	 * socket or eventfd (ThreadSanitizer saw exactly that) */
	uv_close((uv_handle_t *)&c->poll, handle_closed);
	uv_close((uv_handle_t *)&c->timer, handle_closed);
	if (c->idle_on)
		uv_close((uv_handle_t *)&c->idle, handle_closed);
	if (c->rx_wait_timer_on)
		uv_close((uv_handle_t *)&c->rx_wait_timer, handle_closed);
	util_sys_close(c->fd);
	report_end(c, a->status, a->event);
	uw__notify(c->ctx);
	uw__kick(c->ctx);
}

struct uw_life_acts uw__conn_step(struct uw_conn *c, enum uw_life_input in,
				  const struct uw_life_facts *f)
{
	enum uw_life_state was = c->life.st;
	struct uw_life_acts a;
	uw_life_step(&c->life, in, f, &a);
	if (!uw_life_full(&c->life))
		uw__conn_set_rx_wait(c, false); /* its input is only thrown away now */
	if (a.close) {
		finish(c, was, &a);
		return a;
	}
	if (a.timer)
		uw__conn_timer(c, a.timer_ms);
	if (a.release_tx) {
		if (c->qp && c->qp->pub.state == UW_QPS_RTR)
			c->qp->pub.state = UW_QPS_RTS;
		c->want_tx = true; /* the receive side runs the send side next */
	}
	if (a.event != UW_LIFE_EV_NONE && c->id)
		uw__cm_event(c->id, (enum uw_cm_event_type)a.event, 0,
			     a.event == UW_CM_EVENT_CONNECT_REQUEST ? c->listener : NULL, c);
	return a;
}

void uw__conn_close(struct uw_conn *c, int status, int event)
{
	/* A Terminate that has left may linger (conn_life.c says why) */
	struct uw_life_facts f = { .status = status,
				   .event = event,
				   .may_linger = c->out_len && c->out_off == c->out_len &&
						 !c->peer_eof && !c->ctx->stopping };
	uw__conn_step(c, UW_LIFE_IN_END, &f);
}
