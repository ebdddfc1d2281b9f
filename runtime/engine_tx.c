/*
 * engine_tx.c: the send side of a running connection. Messages are cut
 * into FPDUs on one gather list (payload referenced in place, never
 * copied), which leaves in as few writev calls as the socket allows. A
 * message's completion waits until its last byte has been handed to TCP;
 * Reads and atomics complete when their Response arrives.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "uw_internal.h"

/* Batches and bytes per wake-up: a busy connection may not starve the
 * others, nor its own receive side. A responder that wrote all the Read
 * Responses it owed (16 MiB) before it read the requests that had come
 * meanwhile let the pipe run dry: 1 MiB Reads at 11.5 Gb/s, 26.8 with a
 * 1 MiB budget (medians of 5 here). */
#define UW_TX_ROUNDS 64
#define UW_TX_BUDGET (1u << 20)
/* Bytes per gather list. The CRC reads the payload just before the kernel
 * copies it; a list that fits the cache lets the copy find it there
 * instead of in memory. (Computing a large FPDU's CRC after writev, over
 * what the kernel's copy just read, was cheaper per byte but had to end
 * the list there: one writev per FPDU instead of one per list cost more,
 * 0.7-0.78 of raw TCP for 1 MiB Writes against 0.88-0.92 this way.) */
#define UW_TX_BATCH_BYTES (256u << 10)
/* Room for the Read Response payload of one gather list (stage_response):
 * the list stops adding at UW_TX_BATCH_BYTES, and its last FPDU may pass
 * that by at most one ULPDU. */
#define UW_TX_STAGE_BYTES (UW_TX_BATCH_BYTES + (64u << 10))
/* With markers the list's FPDUs are built whole in a buffer of their own
 * (fpdu_batch.flat: one CRC pass and one iovec per FPDU instead of two of
 * each per 512 bytes; docs/performance.md, "Markers"): a list's bytes,
 * plus its last FPDU with its markers. */
#define UW_TX_FLAT_BYTES (UW_TX_BATCH_BYTES + (72u << 10))

/* Reads and atomics complete when their Response arrives. */
static bool is_request(enum uw_wr_opcode op)
{
	return op == UW_WR_RDMA_READ || op == UW_WR_ATOMIC_FETCH_ADD || op == UW_WR_ATOMIC_SWAP ||
	       op == UW_WR_ATOMIC_CMP_SWAP;
}

static uint8_t send_opcode(const struct uw_swqe *w)
{
	bool se = w->wr.send_flags & UW_SEND_SOLICITED;
	if (w->wr.opcode == UW_WR_SEND_WITH_INV)
		return se ? RDMAP_SEND_SE_INVAL : RDMAP_SEND_INVAL;
	return se ? RDMAP_SEND_SE : RDMAP_SEND;
}

/* Start the RDMAP message for a send queue entry (the Immediate part of a
 * Write with Immediate when second). Returns rdmap_tx_start's result. */
static int start_wqe(struct uw_conn *c, struct uw_swqe *w, bool second)
{
	struct rdmap_msg m;
	memset(&m, 0, sizeof(m));
	m.sge = w->iov;
	m.nsge = w->niov;
	m.cookie = (uint64_t)(uintptr_t)w;
	switch (w->wr.opcode) {
	case UW_WR_SEND:
	case UW_WR_SEND_WITH_INV:
		m.opcode = send_opcode(w);
		m.inval_stag = w->wr.invalidate_rkey;
		break;
	case UW_WR_RDMA_WRITE_WITH_IMM:
		if (second) {
			m.opcode = (w->wr.send_flags & UW_SEND_SOLICITED) ? RDMAP_IMMEDIATE_SE
									  : RDMAP_IMMEDIATE;
			m.value = w->wr.imm_data;
			break;
		}
		/* fall through */
	case UW_WR_RDMA_WRITE:
		m.opcode = RDMAP_RDMA_WRITE;
		m.stag = w->wr.rdma.rkey;
		m.to = w->wr.rdma.remote_addr;
		break;
	case UW_WR_IMM:
		m.opcode = (w->wr.send_flags & UW_SEND_SOLICITED) ? RDMAP_IMMEDIATE_SE
								  : RDMAP_IMMEDIATE;
		m.value = w->wr.imm_data;
		break;
	case UW_WR_RDMA_READ:
		m.opcode = RDMAP_RDMA_READ_REQ;
		m.sink_stag = w->lkey0;
		m.sink_to = w->niov ? (uint64_t)(uintptr_t)w->iov[0].iov_base : 0;
		m.len = w->niov ? (uint32_t)w->iov[0].iov_len : 0;
		m.stag = w->wr.rdma.rkey;
		m.to = w->wr.rdma.remote_addr;
		break;
	case UW_WR_ATOMIC_FETCH_ADD:
	case UW_WR_ATOMIC_SWAP:
	case UW_WR_ATOMIC_CMP_SWAP:
		m.opcode = RDMAP_ATOMIC_REQ;
		m.stag = w->wr.atomic.rkey;
		m.to = w->wr.atomic.remote_addr;
		m.result = w->iov[0].iov_base;
		if (w->wr.opcode == UW_WR_ATOMIC_FETCH_ADD) {
			m.atomic_op = RDMAP_ATOMIC_FETCH_ADD;
			m.data = w->wr.atomic.compare_add;
		} else {
			m.atomic_op = w->wr.opcode == UW_WR_ATOMIC_SWAP ? RDMAP_ATOMIC_SWAP
									: RDMAP_ATOMIC_CMP_SWAP;
			m.data = w->wr.atomic.swap;
			m.data_mask = ~0ull;
			m.cmp = w->wr.atomic.compare_add;
			m.cmp_mask = ~0ull;
		}
		break;
	case UW_WR_LOCAL_INV:
	case UW_WR_BIND_MW:
		return -EINVAL; /* handled without the wire */
	}
	return rdmap_tx_start(&c->rd, &m, &c->txm);
}

/* The RTR a P2P initiator sends first (RFC 6581): a zero-length Write or
 * Read names STag 1, as siw's do, because some hardware refuses STag 0. */
static int start_rtr(struct uw_conn *c)
{
	struct rdmap_msg m;
	memset(&m, 0, sizeof(m));
	if (c->mp.rtr == MPA_RTR_READ) {
		m.opcode = RDMAP_RDMA_READ_REQ;
		m.sink_stag = 1;
		m.stag = 1;
	} else if (c->mp.rtr == MPA_RTR_SEND) {
		m.opcode = RDMAP_SEND;
	} else {
		m.opcode = RDMAP_RDMA_WRITE;
		m.stag = 1;
	}
	return rdmap_tx_start(&c->rd, &m, &c->txm);
}

/* A zero-length RDMA Write to STag 1: no data, no completion, only bytes
 * that make a stalled peer read (engine_conn.c). */
static int start_nudge(struct uw_conn *c)
{
	struct rdmap_msg m;
	memset(&m, 0, sizeof(m));
	m.opcode = RDMAP_RDMA_WRITE;
	m.stag = 1;
	return rdmap_tx_start(&c->rd, &m, &c->txm);
}

/* A request carried out here, in the send queue's order, without the
 * wire: its completion status. */
static enum uw_wc_status local_op(struct uw_conn *c, const struct uw_swqe *w)
{
	struct uw_qp_impl *qp = c->qp;
	if (w->wr.opcode == UW_WR_BIND_MW)
		return uw__bind_wr_run(&qp->pub, w);
	struct uw_pd_impl *pd = (struct uw_pd_impl *)qp->pub.pd;
	return uw__stag_invalidate(c->ctx, w->wr.invalidate_rkey, pd->id, qp->pub.qp_num)
		       ? UW_WC_LOC_PROT_ERR
		       : UW_WC_SUCCESS;
}

/* Pick the next message: the RTR, then Responses owed to the peer (they
 * unblock it), then our send queue in order. Returns false when there is
 * nothing to start now. */
static bool next_message(struct uw_conn *c)
{
	struct uw_qp_impl *qp = c->qp;

	if (c->life.rtr_due) {
		if (start_rtr(c))
			return false;
		uw_life_rtr_started(&c->life);
		c->txm_kind = UW_TXM_RTR;
		return true;
	}
	if (c->life.nudge_due) {
		if (start_nudge(c))
			return false;
		uw_life_nudge_started(&c->life);
		c->txm_kind = UW_TXM_NUDGE;
		return true;
	}
	if (rdmap_irq_head(&c->rd)) {
		if (rdmap_tx_response(&c->rd, &c->txm))
			return false;
		c->txm_kind = UW_TXM_RESPONSE;
		return true;
	}
	while (qp->sq_next != qp->sq_tail && qp->pub.state == UW_QPS_RTS) {
		struct uw_swqe *w = uw__sq_at(qp, qp->sq_next);
		if ((w->wr.send_flags & UW_SEND_FENCE) && qp->reads_out)
			return false;
		if (w->wr.opcode == UW_WR_LOCAL_INV || w->wr.opcode == UW_WR_BIND_MW) {
			w->status = local_op(c, w);
			w->done = true;
			qp->sq_next++;
			uw__qp_complete_sends(qp);
			continue;
		}
		int rc = start_wqe(c, w, false);
		if (rc == -ENOMEM) {
			/* no room for its request queue: this WR fails, alone */
			w->status = UW_WC_FATAL_ERR;
			w->done = true;
			qp->sq_next++;
			uw__qp_complete_sends(qp);
			continue;
		}
		if (rc)
			return false; /* ORD reached: the queue waits, in order */
		qp->sq_next++;
		if (is_request(w->wr.opcode))
			qp->reads_out++;
		c->txm_kind = UW_TXM_WQE;
		c->txm_wqe = w;
		c->txm_second = false;
		return true;
	}
	return false;
}

/* The message in txm is fully on the gather list. */
static void message_queued(struct uw_conn *c)
{
	c->txm_active = false;
	if (c->txm_kind == UW_TXM_RESPONSE) {
		rdmap_irq_pop(&c->rd);
		return;
	}
	if (c->txm_kind != UW_TXM_WQE)
		return;
	struct uw_swqe *w = c->txm_wqe;
	if (w->wr.opcode == UW_WR_RDMA_WRITE_WITH_IMM && !c->txm_second) {
		/* the Immediate Data follows the Write at once */
		if (start_wqe(c, w, true) == 0) {
			c->txm_second = true;
			c->txm_active = true;
		}
		return;
	}
	if (!is_request(w->wr.opcode))
		c->txset->done[c->nbatch_done++] = w;
}

/* A Read Response's payload, copied into the stage, when the CRC is on.
 *
 * A Response reads memory the responder's application may write at any
 * time (the verbs contract stops it from touching only its own posted
 * buffers), and this engine may place the peer's Writes into it while a
 * gather list waits for room. The CRC is taken when the list is made and
 * the kernel copies the bytes when the list leaves: bytes that changed in
 * between reached the reader as an MPA CRC error, and the connection was
 * gone (a NIC takes the CRC over the bytes it sends, so the reader gets
 * some mix of old and new data and nothing worse). So the payload is
 * copied first and the CRC taken over the copy; without the CRC there is
 * nothing to disagree, and the payload goes in place. Sends and Writes
 * go in place too: their buffers are the application's until they
 * complete. Returns false when the stage has no room for @len more (the
 * segment waits for the next list). */
static bool stage_response(struct uw_conn *c, struct iovec *iov, int *niov, size_t len)
{
	struct uw_txset *t = c->txset;
	if (!t->stage) {
		t->stage = malloc(UW_TX_STAGE_BYTES);
		if (!t->stage)
			return true; /* in place, as before: a changing source may
				      * then fail the CRC, but the Response goes */
	}
	if (c->stage_used + len > UW_TX_STAGE_BYTES)
		return false;
	uint8_t *to = t->stage + c->stage_used;
	for (int i = 0, off = 0; i < *niov; off += (int)iov[i].iov_len, i++)
		memcpy(to + off, iov[i].iov_base, iov[i].iov_len);
	iov[0] = (struct iovec){ to, len };
	*niov = len ? 1 : 0;
	c->stage_used += len;
	return true;
}

/* A gather list for @c: the pool's, or a new one; false when out of
 * memory (the connection cannot send) */
static bool txset_get(struct uw_conn *c)
{
	if (c->txset)
		return true;
	struct uw_context *ctx = c->ctx;
	struct uw_txset *t = NULL;
	if (c->batch_niov == UW_CONN_BATCH_IOV && ctx->txsets) {
		t = ctx->txsets;
		ctx->txsets = t->next;
		ctx->ntxsets--;
	} else {
		t = malloc(sizeof(*t) + (size_t)c->batch_niov * sizeof(struct iovec));
		if (!t)
			return false;
		t->niov = c->batch_niov;
		t->iov = (struct iovec *)(t + 1);
		t->stage = NULL;
		t->flat = c->tx.markers ? malloc(UW_TX_FLAT_BYTES) : NULL;
	}
	c->txset = t;
	if (t->flat) {
		fpdu_batch_init(&c->batch, t->iov, t->niov, t->flat, UW_TX_FLAT_BYTES);
		c->batch.flat = true;
	} else {
		fpdu_batch_init(&c->batch, t->iov, t->niov, t->scratch, UW_CONN_BATCH_SCRATCH);
	}
	return true;
}

static void txset_free(struct uw_txset *t)
{
	free(t->flat);
	free(t->stage);
	free(t);
}

void uw__conn_txset_put(struct uw_conn *c)
{
	struct uw_txset *t = c->txset;
	if (!t)
		return;
	c->txset = NULL;
	fpdu_batch_init(&c->batch, NULL, 0, NULL, 0); /* nothing may point into it now */
	struct uw_context *ctx = c->ctx;
	if (t->niov != UW_CONN_BATCH_IOV || ctx->ntxsets >= UW_TXSETS_KEPT) {
		txset_free(t);
		return;
	}
	t->next = ctx->txsets;
	ctx->txsets = t;
	ctx->ntxsets++;
}

/* The list is empty and finishes nothing: an idle connection gives it
 * back. (A connection with markers keeps its own, a larger one: its
 * lists are many pieces, and it would make and free one per list.) */
static void txset_idle(struct uw_conn *c)
{
	if (c->txset && !c->batch.niov && !c->nbatch_done && c->batch_niov == UW_CONN_BATCH_IOV)
		uw__conn_txset_put(c);
}

void uw__txsets_free(struct uw_context *ctx)
{
	while (ctx->txsets) {
		struct uw_txset *t = ctx->txsets;
		ctx->txsets = t->next;
		txset_free(t);
	}
	ctx->ntxsets = 0;
}

/* Fill the gather list; returns when it is full or nothing is left. */
static void fill(struct uw_conn *c)
{
	struct iovec iov[RDMAP_PLACE_MAX_IOV];
	size_t hl;
	int niov;

	while (c->nhdrs < UW_CONN_HDRS && c->nbatch_done < UW_CONN_HDRS &&
	       c->batch.bytes < UW_TX_BATCH_BYTES) {
		if (!c->txm_active) {
			if (!next_message(c))
				return;
			c->txm_active = true;
		}
		for (;;) {
			if (c->nhdrs == UW_CONN_HDRS || c->batch.bytes >= UW_TX_BATCH_BYTES)
				return;
			struct rdmap_tx_msg save = c->txm;
			uint8_t *hdr = c->txset->hdrs[c->nhdrs];
			int rc = rdmap_tx_next(&c->txm, hdr, &hl, iov, RDMAP_PLACE_MAX_IOV, &niov);
			if (rc == 0)
				break;
			size_t plen = 0;
			for (int i = 0; rc > 0 && i < niov; i++)
				plen += iov[i].iov_len;
			if (rc < 0 ||
			    (c->tx.crc && c->txm_kind == UW_TXM_RESPONSE && !c->batch.flat &&
			     !stage_response(c, iov, &niov, plen)) ||
			    fpdu_tx_append(&c->tx, &c->batch, hdr, hl, iov, niov)) {
				c->txm = save; /* the list is full: this segment goes next time */
				return;
			}
			c->nhdrs++;
		}
		message_queued(c);
	}
}

/* The gather list has left: what it finished completes. */
static void batch_written(struct uw_conn *c)
{
	for (uint32_t i = 0; i < c->nbatch_done; i++)
		c->txset->done[i]->done = true;
	c->nbatch_done = 0;
	c->nhdrs = 0;
	c->wr_iov = 0;
	c->wr_pos = 0;
	c->stage_used = 0;
	fpdu_batch_reset(&c->batch);
	uw__qp_complete_sends(c->qp);
}

/* One writev of what is left of the gather list; a piece cut in the
 * middle stays, shortened. Returns the bytes written, or -1 and errno. */
static ssize_t write_list(struct uw_conn *c)
{
	ssize_t n = uw__sock_writev(c->fd, c->batch.iov + c->wr_iov, c->batch.niov - c->wr_iov);
	if (n < 0)
		return n;
	c->wr_pos += (size_t)n;
	c->wr_iov += iov_advance(c->batch.iov + c->wr_iov, c->batch.niov - c->wr_iov, (size_t)n);
	return n;
}

void uw__conn_hold(struct uw_conn *c)
{
	if (util_list_empty(&c->held_link))
		util_list_add_tail(&c->ctx->held, &c->held_link);
}

void uw__flush_held(struct uw_context *ctx)
{
	while (!util_list_empty(&ctx->held))
		uw__conn_tx(util_container_of(ctx->held.next, struct uw_conn, held_link));
}

void uw__conn_tx(struct uw_conn *c)
{
	util_list_del(&c->held_link); /* whatever UW_SEND_MORE held goes now */
	if (!uw_life_tx_open(&c->life))
		return;
	size_t sent = 0;
	for (int round = 0;
	     round < UW_TX_ROUNDS && sent < UW_TX_BUDGET && uw_life_tx_open(&c->life); round++) {
		if (c->wr_iov == c->batch.niov) {
			if (c->batch.niov) {
				batch_written(c);
				/* a completion that overflowed the CQ ended the
				 * connection: nothing more may go on its socket */
				if (!uw_life_tx_open(&c->life))
					return;
			}
			if (!txset_get(c)) {
				uw__conn_close(c, ENOMEM, UW_CM_EVENT_DISCONNECTED);
				return;
			}
			fill(c);
			if (!c->batch.niov) {
				/* A message whose last FPDU closed the list before
				 * (its byte budget reached there) is seen done only
				 * by this fill: its bytes have all left, and no list
				 * of its own will complete it. Without this its
				 * completion waited for the next post, for ever when
				 * the application waited for it first. */
				if (c->nbatch_done)
					batch_written(c);
				txset_idle(c);
				if (uw_life_tx_open(&c->life))
					uw__conn_poll(c, UV_READABLE);
				return;
			}
		}
		ssize_t n = write_list(c);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				uw__conn_poll(c, UV_READABLE | UV_WRITABLE);
				return;
			}
			uw__conn_close(c, errno, UW_CM_EVENT_DISCONNECTED);
			return;
		}
		sent += (size_t)n;
		if (c->wr_iov < c->batch.niov) {
			uw__conn_poll(c, UV_READABLE | UV_WRITABLE);
			return;
		}
	}
	if (uw_life_tx_open(&c->life) && c->wr_iov == c->batch.niov && c->batch.niov)
		batch_written(c);
	txset_idle(c);
	/* more may remain: come back when the loop runs again */
	if (uw_life_tx_open(&c->life))
		uw__conn_poll(c, UV_READABLE | UV_WRITABLE);
}

/* Wait for the socket to take more; false if the connection ended. */
static bool term_wait(struct uw_conn *c, ssize_t n)
{
	if (n < 0 && errno != EAGAIN && errno != EINTR) {
		uw__conn_close(c, EPROTO, UW_CM_EVENT_DISCONNECTED);
		return false;
	}
	if (n < 0 && errno == EAGAIN) {
		uw__conn_poll(c, (c->peer_eof ? 0 : UV_READABLE) | UV_WRITABLE);
		return false;
	}
	return true;
}

void uw__conn_term_tx(struct uw_conn *c)
{
	while (c->life.st == UW_LIFE_TERMINATING && c->wr_iov < c->batch.niov)
		if (!term_wait(c, write_list(c)))
			return;
	if (c->batch.niov)
		batch_written(c); /* completes what it finished: it all reached TCP */
	while (c->life.st == UW_LIFE_TERMINATING && c->out_off < c->out_len) {
		ssize_t n = uw__sock_write(c->fd, c->out + c->out_off, c->out_len - c->out_off);
		if (!term_wait(c, n))
			return;
		if (n > 0)
			c->out_off += (size_t)n;
	}
	if (c->life.st != UW_LIFE_TERMINATING)
		return;
	/* The peer reads the Terminate, then the end of the stream; what it
	 * sent meanwhile goes unread, so that the close does not reset. */
	util_sys_shutdown(c->fd, SHUT_WR);
	uw__conn_discard_input(c);
	uw__conn_close(c, EPROTO, UW_CM_EVENT_DISCONNECTED);
}
