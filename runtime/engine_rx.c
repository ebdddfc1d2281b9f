/*
 * engine_rx.c: the receive side of a running connection. Small FPDUs are
 * read in bulk into a per-connection buffer and parsed there; a payload
 * large enough to matter is read by the kernel straight into its place
 * (readv into the destination and, behind it, the buffer for whatever
 * follows), and its CRC is computed over the bytes where they landed.
 * With markers everything goes through the (larger) buffer.
 *
 * A Send (or Immediate Data) that finds no receive posted waits for one,
 * for ctx->recv_wait_ms (UWARP_RECV_WAIT_MS), before it earns the
 * Terminate RFC 5041 section 7.2 names ("no buffer available"): the
 * connection takes no more input meanwhile, so the peer's sends back up
 * in TCP as they would behind a slow reader, and the program's next
 * uw_post_recv lets it go on. iWARP has no receiver-not-ready flow control
 * (InfiniBand retries such a Send); without the wait, programs written
 * for InfiniBand that let their sender run ahead of the receives (qperf's
 * rc_bw) lose the connection whenever the receiving program falls behind
 * for a moment. A receive that never comes still costs the Terminate.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uw_internal.h"

/* Below this a copy out of the buffer is cheaper than a separate read. */
#define UW_DIRECT_MIN 4096
/* Behind a payload read in place, room for its CRC and the next FPDU's
 * header: more would pull the next payload into the buffer, to be copied
 * out again, where the next read could place it directly. */
#define UW_DIRECT_TAIL 256
/* Reads per wake-up: a busy connection may not starve the others. */
#define UW_RX_ROUNDS 16

/* The place's iovecs for payload bytes [off, off + len). */
static int place_slice(const struct rdmap_place *pl, uint32_t off, size_t len, struct iovec *out,
		       int max)
{
	int n = 0;
	for (int i = 0; i < pl->niov && len && n < max; i++) {
		size_t l = pl->iov[i].iov_len;
		if (off >= l) {
			off -= (uint32_t)l;
			continue;
		}
		size_t k = l - off < len ? l - off : len;
		out[n].iov_base = (uint8_t *)pl->iov[i].iov_base + off;
		out[n].iov_len = k;
		n++;
		len -= k;
		off = 0;
	}
	return n;
}

/* A Terminate that names a Read or Atomic Request of ours (its DDP header
 * carries the request's RDMAP opcode) fails the oldest one still waiting
 * for its Response, with the peer's reason; the rest is flushed after.
 * Sends and Writes completed when TCP took them: their error reaches the
 * application as the DISCONNECTED event's Terminate codes. */
static void blame_request(struct uw_conn *c, const struct rdmap_term *t)
{
	struct uw_qp_impl *qp = c->qp;
	if (!qp || t->ddp_hdr_len < 2)
		return;
	uint8_t op = t->ddp_hdr[1] & 0x0f;
	if (op != RDMAP_RDMA_READ_REQ && op != RDMAP_ATOMIC_REQ)
		return;
	const struct rdmap_term_reading *r = rdmap_term_reading(t);
	bool protection =
		(r->layer == UW_TERM_LAYER_RDMAP && r->etype == UW_RDMAP_REMOTE_PROTECTION) ||
		(r->layer == UW_TERM_LAYER_DDP && r->etype == UW_DDP_TAGGED);
	for (uint32_t i = qp->sq_head; i != qp->sq_next; i++) {
		struct uw_swqe *w = uw__sq_at(qp, i);
		bool req =
			w->wr.opcode == UW_WR_RDMA_READ || w->wr.opcode == UW_WR_ATOMIC_FETCH_ADD ||
			w->wr.opcode == UW_WR_ATOMIC_SWAP || w->wr.opcode == UW_WR_ATOMIC_CMP_SWAP;
		if (!req || w->done)
			continue;
		w->status = protection ? UW_WC_REM_ACCESS_ERR : UW_WC_REM_OP_ERR;
		w->term_layer = r->layer;
		w->term_etype = r->etype;
		w->term_ecode = r->ecode;
		w->done = true;
		qp->reads_out--;
		uw__qp_complete_sends(qp);
		return;
	}
}

static void deliver(struct uw_conn *c, const struct rdmap_event *ev)
{
	struct uw_qp_impl *qp = c->qp;
	struct uw_wc wc;

	memset(&wc, 0, sizeof(wc));
	switch (ev->kind) {
	case RDMAP_EV_RECV:
		wc.opcode = UW_WC_RECV;
		wc.byte_len = (uint32_t)ev->len;
		if (ev->solicited)
			wc.wc_flags |= UW_WC_SOLICITED;
		if (ev->invalidated) {
			wc.wc_flags |= UW_WC_WITH_INV;
			wc.invalidated_rkey = ev->inval_stag;
		}
		uw__qp_recv_done(qp, &wc);
		break;
	case RDMAP_EV_IMMEDIATE:
		wc.opcode = UW_WC_RECV_IMM;
		wc.imm_data = ev->value;
		wc.wc_flags = UW_WC_WITH_IMM | (ev->solicited ? UW_WC_SOLICITED : 0);
		uw__qp_recv_done(qp, &wc);
		break;
	case RDMAP_EV_READ_REQ:
	case RDMAP_EV_ATOMIC_REQ:
		c->want_tx = true; /* a Response is owed */
		break;
	case RDMAP_EV_READ_DONE:
	case RDMAP_EV_ATOMIC_DONE:
		if (ev->cookie) { /* 0 is our own Read RTR */
			struct uw_swqe *w = (struct uw_swqe *)(uintptr_t)ev->cookie;
			w->done = true;
			qp->reads_out--;
			uw__qp_complete_sends(qp);
		}
		c->want_tx = true; /* an ORD slot is free */
		break;
	case RDMAP_EV_TERMINATE:
		c->peer_term = ev->term;
		c->peer_terminated = true;
		blame_request(c, &ev->term);
		uw__conn_close(c, ECONNRESET, UW_CM_EVENT_DISCONNECTED);
		break;
	case RDMAP_EV_WRITE:
	case RDMAP_EV_NONE:
		break;
	}
}

static void rx_wait_cb(uv_timer_t *t);

/* The segment's header, judged (rdmap_rx_begin), and the verdict carried
 * out. false: the input stops here (a receive is awaited, or the stream
 * failed). */
static bool begin(struct uw_conn *c)
{
	int rc = rdmap_rx_begin(&c->rd, c->rx.hdr, c->rx.hdr_len, c->rx.payload_len, &c->pl);
	if (rc == -EAGAIN) {
		if (!c->rx_wait_timer_on) {
			uv_timer_init(&c->ctx->loop, &c->rx_wait_timer);
			c->rx_wait_timer.data = c;
			c->handles++;
			c->rx_wait_timer_on = true;
		}
		uw__conn_set_rx_wait(c, true);
		uv_timer_start(&c->rx_wait_timer, rx_wait_cb, c->ctx->recv_wait_ms, 0);
		uw__conn_poll(c, c->poll_want);
		uw__kick(c->ctx); /* (a thread asleep in the loop must see the timer) */
		return false;
	}
	if (rc) {
		if (!c->rx.cfg.crc) {
			uw__conn_fail(c, &c->rd.err);
			return false;
		}
		c->rx_discard = true;
		c->rx_hdr_err = c->rd.err;
	}
	return true;
}

/* The wait for a receive is over: one was posted, or the time ran out
 * (expired), when the header earns its Terminate. Either way the input
 * goes on, from the bytes held. */
static void rx_wait_end(struct uw_conn *c, bool expired)
{
	if (!c->rx_wait || !uw_life_full(&c->life))
		return;
	c->rd.recv_wait_over = expired;
	uw__conn_set_rx_wait(c, false);
	if (!begin(c))
		return; /* still none (another QP on the SRQ took it), or it failed */
	uv_timer_stop(&c->rx_wait_timer);
	uw__conn_poll(c, c->poll_want);
	uw__conn_rx(c);
	uw__kick(c->ctx);
}

static void rx_wait_cb(uv_timer_t *t) { rx_wait_end(t->data, true); }

void uw__conn_recv_posted(struct uw_conn *c) { rx_wait_end(c, false); }

/* Parse what sits in the buffer. */
static void parse(struct uw_conn *c)
{
	while (c->rxoff < c->rxlen && !c->rx_wait && uw_life_full(&c->life)) {
		struct fpdu_rx_out out;
		size_t used;
		enum fpdu_rx_event e =
			fpdu_rx_step(&c->rx, c->rxbuf + c->rxoff, c->rxlen - c->rxoff, &used, &out);
		c->rxoff += used;
		switch (e) {
		case FPDU_RX_MORE:
			break;
		case FPDU_RX_HDR:
			if (!begin(c))
				return;
			break;
		case FPDU_RX_DATA: {
			uint32_t off = out.off;
			for (int k = 0; k < out.n && !c->rx_discard; k++) {
				rdmap_place_copy(&c->pl, off, out.piece[k].data, out.piece[k].len);
				off += out.piece[k].len;
			}
			break;
		}
		case FPDU_RX_END: {
			if (c->rx_discard) { /* the CRC was good: the header's error stands */
				uw__conn_fail(c, &c->rx_hdr_err);
				return;
			}
			struct rdmap_event ev;
			c->rx_fpdus++;
			int rc = rdmap_rx_end(&c->rd, &ev);
			if (rc < 0) {
				uw__conn_fail(c, &c->rd.err);
				return;
			}
			/* the first one may end a hold or establish a P2P
			 * responder's connection (its RTR) */
			if (!c->life.got_fpdu)
				uw__conn_step(c, UW_LIFE_IN_FPDU, NULL);
			if (rc > 0)
				deliver(c, &ev);
			break;
		}
		case FPDU_RX_ERROR:
			if (c->rx_discard)
				rdmap_conn_retract(&c->rd);
			uw__conn_fail(c, &c->rx.err);
			return;
		}
	}
}

bool uw__conn_rx_hold(struct uw_conn *c)
{
	size_t left = c->rxlen - c->rxoff;
	if (!left) {
		if (c->rx_own)
			free(c->rxbuf);
		c->rxbuf = NULL;
		c->rx_own = false;
		c->rxoff = c->rxlen = 0;
		return true;
	}
	if (c->rx_own && !c->rxoff)
		return true; /* (already its own) */
	uint8_t *b = malloc(left);
	if (!b)
		return false;
	memcpy(b, c->rxbuf + c->rxoff, left);
	if (c->rx_own)
		free(c->rxbuf);
	c->rxbuf = b;
	c->rx_own = true;
	c->rxoff = 0;
	c->rxlen = left;
	return true;
}

void uw__conn_rx(struct uw_conn *c)
{
	for (int round = 0; round < UW_RX_ROUNDS && uw_life_full(&c->life); round++) {
		parse(c);
		if (!uw_life_full(&c->life) || c->rx_wait)
			break;
		/* all parsed (a held buffer let go): the next read goes into
		 * the shared one */
		uw__conn_rx_hold(c);
		c->rxbuf = c->ctx->rxbuf;
		size_t span = fpdu_rx_direct_span(&c->rx);
		/* The payload's last byte never comes in place: the kernel's
		 * copy (a fast string move) may store the end of a block before
		 * its middle, and programs poll a Write's last byte to learn that
		 * the rest has landed (dtest -W, perftest's write_lat). It comes
		 * into the buffer with what follows and goes last, as
		 * rdmap_place_copy stores it (rdmap_rx.c). */
		if (span && c->rx.payload_off + span == c->rx.payload_len)
			span--;
		ssize_t n;
		/* the rest of a large payload goes in place too, however short:
		 * a buffered read would pull the next payload in behind it */
		if (!c->rx.cfg.markers && !c->rx_discard &&
		    (span >= UW_DIRECT_MIN || (span && c->rx.payload_len >= UW_DIRECT_MIN))) {
			struct iovec iov[RDMAP_PLACE_MAX_IOV + 1];
			int k = place_slice(&c->pl, c->rx.payload_off, span, iov,
					    RDMAP_PLACE_MAX_IOV);
			iov[k] = (struct iovec){ c->rxbuf, UW_DIRECT_TAIL };
			n = util_sys_readv(c->fd, iov, k + 1);
			if (n > 0) {
				/* fold the bytes that landed in place into the CRC */
				size_t left = (size_t)n;
				for (int i = 0; i < k && left; i++) {
					size_t m = iov[i].iov_len < left ? iov[i].iov_len : left;
					fpdu_rx_direct_done(&c->rx, iov[i].iov_base, m);
					left -= m;
				}
				c->rxlen = left;
			}
		} else {
			/* after a large payload expect another: read little more
			 * than its header, so the payload itself goes in place */
			size_t want = !c->rx.cfg.markers && !c->rx_discard &&
						      c->rx.payload_len >= UW_DIRECT_MIN
					      ? UW_DIRECT_TAIL
					      : c->rxcap;
			n = util_sys_read(c->fd, c->rxbuf, want);
			if (n > 0)
				c->rxlen = (size_t)n;
			/* A short read drained the socket: parse and go, rather than
			 * pay for a read that can only say EAGAIN (it would delay
			 * the completion by a system call). */
			if (n > 0 && (size_t)n < want)
				break;
		}
		if (n == 0) {
			uw__conn_close(c, 0, UW_CM_EVENT_DISCONNECTED);
			break;
		}
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				uw__conn_close(c, errno, UW_CM_EVENT_DISCONNECTED);
			break;
		}
	}
	if (uw_life_full(&c->life))
		parse(c);
	/* bytes a connection not in full operation could not take yet stay
	 * its own; the shared buffer is the next reader's */
	if (!uw__conn_rx_hold(c)) {
		uw__conn_close(c, ENOMEM, UW_CM_EVENT_DISCONNECTED);
		return;
	}
	if (uw_life_full(&c->life) && c->want_tx) {
		c->want_tx = false;
		uw__conn_tx(c);
	}
}
