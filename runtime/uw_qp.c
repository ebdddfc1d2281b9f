/*
 * uw_qp.c: queue pairs and shared receive queues: checking and queueing
 * work requests, completing them in order, flushing them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uw_internal.h"
#include "util/clock.h"
#include "util/pages.h"

static bool is_ext(enum uw_wr_opcode op)
{
	return op == UW_WR_RDMA_WRITE_WITH_IMM || op == UW_WR_IMM || op == UW_WR_ATOMIC_FETCH_ADD ||
	       op == UW_WR_ATOMIC_SWAP || op == UW_WR_ATOMIC_CMP_SWAP;
}

static bool is_atomic(enum uw_wr_opcode op)
{
	return op == UW_WR_ATOMIC_FETCH_ADD || op == UW_WR_ATOMIC_SWAP ||
	       op == UW_WR_ATOMIC_CMP_SWAP;
}

static enum uw_wc_opcode wc_opcode(enum uw_wr_opcode op)
{
	switch (op) {
	case UW_WR_SEND:
	case UW_WR_SEND_WITH_INV:
	case UW_WR_IMM:
		return UW_WC_SEND;
	case UW_WR_RDMA_WRITE:
	case UW_WR_RDMA_WRITE_WITH_IMM:
		return UW_WC_RDMA_WRITE;
	case UW_WR_RDMA_READ:
		return UW_WC_RDMA_READ;
	case UW_WR_ATOMIC_FETCH_ADD:
		return UW_WC_FETCH_ADD;
	case UW_WR_ATOMIC_SWAP:
		return UW_WC_SWAP;
	case UW_WR_ATOMIC_CMP_SWAP:
		return UW_WC_CMP_SWAP;
	case UW_WR_LOCAL_INV:
		return UW_WC_LOCAL_INV;
	case UW_WR_BIND_MW:
		return UW_WC_BIND_MW;
	}
	return UW_WC_SEND;
}

void uw__qp_cq_push(struct uw_qp_impl *qp, struct uw_cq *cq, const struct uw_wc *wc)
{
	if (uw__cq_push((struct uw_cq_impl *)cq, wc) && qp->pub.state != UW_QPS_ERR) {
		/* A lost completion would break "every WR completes": the QP
		 * fails instead, as an RNIC's does on CQ overflow. */
		if (qp->conn)
			uw__conn_close(qp->conn, ENOSPC, UW_CM_EVENT_DISCONNECTED);
		else
			uw__qp_flush(qp);
	}
}

void uw__qp_complete_sends(struct uw_qp_impl *qp)
{
	while (qp->sq_head != qp->sq_next) {
		struct uw_swqe *w = uw__sq_at(qp, qp->sq_head);
		if (!w->done)
			break;
		qp->sq_head++;
		if (w->signaled || w->status != UW_WC_SUCCESS) {
			struct uw_wc wc = { .wr_id = w->wr.wr_id,
					    .status = w->status,
					    .opcode = wc_opcode(w->wr.opcode),
					    .qp = &qp->pub,
					    .term_layer = w->term_layer,
					    .term_etype = w->term_etype,
					    .term_ecode = w->term_ecode };
			uw__qp_cq_push(qp, qp->pub.send_cq, &wc);
		}
	}
	/* An empty queue starts again at slot 0, so a request/reply
	 * connection keeps to its first few slots and their pages (no
	 * request is in flight: nothing points into the queue) */
	if (qp->sq_head == qp->sq_tail)
		qp->sq_head = qp->sq_next = qp->sq_tail = 0;
}

static void flush_recv(struct uw_qp_impl *qp, uint64_t wr_id)
{
	struct uw_wc wc = {
		.wr_id = wr_id, .status = UW_WC_WR_FLUSH_ERR, .opcode = UW_WC_RECV, .qp = &qp->pub
	};
	uw__cq_push((struct uw_cq_impl *)qp->pub.recv_cq, &wc);
}

void uw__qp_async_fail(struct uw_qp_impl *qp, const struct rddp_error *sent)
{
	if (qp->async_failed)
		return;
	qp->async_failed = true;
	enum uw_async_event_type t = UW_EVENT_QP_FATAL;
	/* what this end refused: the peer's access, or its request */
	if (sent &&
	    ((sent->layer == UW_TERM_LAYER_RDMAP && sent->etype == UW_RDMAP_REMOTE_PROTECTION) ||
	     (sent->layer == UW_TERM_LAYER_DDP && sent->etype == UW_DDP_TAGGED)))
		t = UW_EVENT_QP_ACCESS_ERR;
	else if (sent && sent->layer != UW_TERM_LAYER_LLP)
		t = UW_EVENT_QP_REQ_ERR;
	uw__async_raise(qp->async, &qp->async_err, t);
}

void uw__qp_flush(struct uw_qp_impl *qp)
{
	/* a QP of an SRQ takes none of its receives from now on */
	if (qp->pub.srq && qp->pub.state != UW_QPS_ERR)
		uw__async_raise(qp->async, &qp->async_last, UW_EVENT_QP_LAST_WQE_REACHED);
	qp->pub.state = UW_QPS_ERR;
	/* Sends: done ones keep their success, everything else is flushed,
	 * all in posting order. Completions that no longer fit are lost only
	 * to a CQ that already overflowed. */
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct uw_swqe *w = uw__sq_at(qp, i);
		if (!w->done) {
			w->done = true;
			w->status = UW_WC_WR_FLUSH_ERR;
		}
	}
	qp->sq_next = qp->sq_tail;
	while (qp->sq_head != qp->sq_tail) {
		struct uw_swqe *w = uw__sq_at(qp, qp->sq_head++);
		if (w->signaled || w->status != UW_WC_SUCCESS) {
			struct uw_wc wc = { .wr_id = w->wr.wr_id,
					    .status = w->status,
					    .opcode = wc_opcode(w->wr.opcode),
					    .qp = &qp->pub,
					    .term_layer = w->term_layer,
					    .term_etype = w->term_etype,
					    .term_ecode = w->term_ecode };
			uw__cq_push((struct uw_cq_impl *)qp->pub.send_cq, &wc);
		}
	}
	if (qp->srq_claim_held) {
		flush_recv(qp, qp->srq_claimed.wr_id);
		qp->srq_claim_held = false;
	}
	for (; qp->rq_head != qp->rq_tail; qp->rq_head++)
		flush_recv(qp, qp->rq[qp->rq_head % qp->rq_cap].wr_id);
	qp->rq_claimed = 0;
	qp->reads_out = 0;
}

const struct rdmap_recv *uw__qp_recv_claim(void *arg)
{
	struct uw_qp_impl *qp = arg;
	if (qp->pub.srq) {
		struct uw_srq_impl *srq = (struct uw_srq_impl *)qp->pub.srq;
		if (!srq->count || qp->srq_claim_held)
			return NULL;
		struct uw_rwqe *r = &srq->ring[srq->head];
		qp->srq_claimed = *r;
		memcpy(qp->srq_claimed_iov, r->iov, (size_t)r->niov * sizeof(struct iovec));
		qp->srq_claimed.iov = qp->srq_claimed_iov;
		qp->srq_claimed.recv.sge = qp->srq_claimed_iov;
		qp->srq_claim_held = true;
		srq->head = (srq->head + 1) % srq->cap;
		srq->count--;
		if (srq->limit && srq->count < srq->limit) {
			srq->limit = 0; /* fires once; the application arms it again */
			uw__async_raise(srq->async, &srq->async_limit, UW_EVENT_SRQ_LIMIT_REACHED);
		}
		return &qp->srq_claimed.recv;
	}
	if (qp->rq_head + qp->rq_claimed == qp->rq_tail)
		return NULL;
	struct uw_rwqe *r = &qp->rq[(qp->rq_head + qp->rq_claimed) % qp->rq_cap];
	qp->rq_claimed++;
	return &r->recv;
}

void uw__qp_recv_done(struct uw_qp_impl *qp, const struct uw_wc *wc_in)
{
	struct uw_wc wc = *wc_in;
	wc.qp = &qp->pub;
	if (qp->pub.srq) {
		wc.wr_id = qp->srq_claimed.wr_id;
		qp->srq_claim_held = false;
	} else {
		wc.wr_id = qp->rq[qp->rq_head % qp->rq_cap].wr_id;
		qp->rq_head++;
		qp->rq_claimed--;
	}
	uw__qp_cq_push(qp, qp->pub.recv_cq, &wc);
}

/* No receive queue (max_recv_wr 0) is allowed, as rdma-core allows it:
 * a QP that only sends, writes or reads; a Send to it finds no buffer. */
static int check_cap(const struct uw_qp_cap *c)
{
	if (!c->max_send_wr || c->max_send_sge > UW_MAX_SGE || c->max_recv_sge > UW_MAX_SGE ||
	    c->max_inline_data > UW_MAX_INLINE || c->max_send_wr > (1u << 20) ||
	    c->max_recv_wr > (1u << 20))
		return EINVAL;
	return 0;
}

/* a send slot's gather list and inline room, as the QP was made */
static uint32_t sq_sge(const struct uw_qp_impl *qp)
{
	return qp->attr.cap.max_send_sge ? qp->attr.cap.max_send_sge : 1;
}

static size_t sq_bytes(const struct uw_qp_impl *qp) { return qp->sq_cap * sizeof(*qp->sq); }

static size_t sq_iov_bytes(const struct uw_qp_impl *qp)
{
	return (size_t)qp->sq_cap * sq_sge(qp) * sizeof(struct iovec);
}

static size_t sq_inline_bytes(const struct uw_qp_impl *qp)
{
	return (size_t)qp->sq_cap * qp->attr.cap.max_inline_data;
}

/* the queues and the QP itself, however far uw_create_qp got */
static void free_queues(struct uw_qp_impl *qp)
{
	util_zfree(qp->sq, sq_bytes(qp));
	util_zfree(qp->sq_iov, sq_iov_bytes(qp));
	util_zfree(qp->sq_inline, sq_inline_bytes(qp));
	free(qp->rq);
	free(qp->rq_iov);
	free(qp);
}

struct uw_qp *uw_create_qp(struct uw_pd *p, struct uw_qp_init_attr *attr)
{
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	if (!pd || !attr || !attr->send_cq || !attr->recv_cq || check_cap(&attr->cap) ||
	    (attr->srq && attr->srq->pd != p) || attr->send_cq->context != p->context ||
	    attr->recv_cq->context != p->context) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_qp_impl *qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_qp_cap *c = &attr->cap;
	uint32_t rsge = c->max_recv_sge ? c->max_recv_sge : 1;
	qp->sq_cap = c->max_send_wr;
	qp->rq_cap = attr->srq ? 0 : c->max_recv_wr;
	qp->attr = *attr; /* (its caps size the send queue's arrays) */
	/* The send queue's slots, gather lists and inline room are touched
	 * only as requests use them (each slot's pointers are set when it
	 * is posted): a queue of 512, the ES-API's, is some 100 KiB, and a
	 * request/reply connection uses its first few slots (the queue
	 * starts again at slot 0 whenever it empties). */
	qp->sq = util_zalloc(sq_bytes(qp));
	qp->sq_iov = util_zalloc(sq_iov_bytes(qp));
	qp->sq_inline = c->max_inline_data ? util_zalloc(sq_inline_bytes(qp)) : NULL;
	if (qp->rq_cap) {
		qp->rq = calloc(qp->rq_cap, sizeof(*qp->rq));
		qp->rq_iov = calloc((size_t)qp->rq_cap * rsge, sizeof(struct iovec));
	}
	if (!qp->sq || !qp->sq_iov || (c->max_inline_data && !qp->sq_inline) ||
	    (qp->rq_cap && (!qp->rq || !qp->rq_iov))) {
		free_queues(qp);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < qp->rq_cap; i++)
		qp->rq[i].iov = qp->rq_iov + (size_t)i * rsge;
	struct uw_context *ctx = p->context;
	pthread_mutex_lock(&ctx->lock);
	qp->pub = (struct uw_qp){ ctx,           p,         attr->qp_context, attr->send_cq,
				  attr->recv_cq, attr->srq, ctx->next_qpn++,  UW_QPS_INIT };
	qp->async_err.ev.qp = &qp->pub;
	qp->async_last.ev.qp = &qp->pub;
	pd->refs++;
	((struct uw_cq_impl *)attr->send_cq)->users++;
	((struct uw_cq_impl *)attr->recv_cq)->users++;
	if (attr->srq)
		((struct uw_srq_impl *)attr->srq)->users++;
	pthread_mutex_unlock(&ctx->lock);
	return &qp->pub;
}

int uw_destroy_qp(struct uw_qp *q)
{
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	if (!qp)
		return EINVAL;
	struct uw_context *ctx = q->context;
	pthread_mutex_lock(&ctx->lock);
	if (qp->conn)
		uw__conn_close(qp->conn, ECONNABORTED, UW_CM_EVENT_DISCONNECTED);
	if (q->state != UW_QPS_ERR && q->state != UW_QPS_RESET)
		uw__qp_flush(qp);
	if (qp->id)
		qp->id->pub.qp = NULL;
	struct uw__async_node *nodes[] = { &qp->async_err, &qp->async_last };
	uw__async_move(&qp->async, NULL, nodes, 2);
	uw__cq_forget_qp((struct uw_cq_impl *)q->send_cq, q);
	uw__cq_forget_qp((struct uw_cq_impl *)q->recv_cq, q);
	((struct uw_pd_impl *)q->pd)->refs--;
	((struct uw_cq_impl *)q->send_cq)->users--;
	((struct uw_cq_impl *)q->recv_cq)->users--;
	if (q->srq)
		((struct uw_srq_impl *)q->srq)->users--;
	pthread_mutex_unlock(&ctx->lock);
	free_queues(qp);
	return 0;
}

int uw_modify_qp(struct uw_qp *q, enum uw_qp_state state)
{
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	if (!qp)
		return EINVAL;
	pthread_mutex_lock(&q->context->lock);
	enum uw_qp_state from = q->state;
	int rc = 0;
	if (state == from) {
		/* nothing to do */
	} else if (state == UW_QPS_ERR) {
		if (qp->conn)
			uw__conn_close(qp->conn, ECONNABORTED, UW_CM_EVENT_DISCONNECTED);
		uw__qp_flush(qp);
	} else if (state == UW_QPS_RESET && !qp->conn &&
		   (from == UW_QPS_INIT || from == UW_QPS_ERR)) {
		/* nothing posted may vanish: what INIT holds completes first */
		if (from == UW_QPS_INIT)
			uw__qp_flush(qp);
		qp->async_failed = false; /* a new connection may fail anew */
		qp->sq_head = qp->sq_next = qp->sq_tail = 0;
		qp->rq_head = qp->rq_tail = qp->rq_claimed = 0;
		q->state = UW_QPS_RESET;
	} else if (state == UW_QPS_INIT && from == UW_QPS_RESET) {
		q->state = UW_QPS_INIT;
	} else if (state == UW_QPS_SQD && from == UW_QPS_RTS && qp->conn) {
		q->state = UW_QPS_SQD; /* the message on the wire finishes; no new one starts */
	} else if (state == UW_QPS_RTS && from == UW_QPS_SQD && qp->conn) {
		q->state = UW_QPS_RTS;
		uw__conn_tx(qp->conn);
	} else {
		rc = EINVAL; /* RTR and RTS from INIT are the connection manager's */
	}
	pthread_mutex_unlock(&q->context->lock);
	return rc;
}

int uw_qp_end_errno(struct uw_qp *q)
{
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	if (!qp)
		return EINVAL;
	pthread_mutex_lock(&q->context->lock);
	int e = qp->end_errno;
	pthread_mutex_unlock(&q->context->lock);
	return e;
}

enum uw_qp_state uw_qp_get_state(struct uw_qp *q)
{
	pthread_mutex_lock(&q->context->lock);
	enum uw_qp_state st = q->state;
	pthread_mutex_unlock(&q->context->lock);
	return st;
}

/* Check one send request and copy it into a send queue slot. */
static int queue_send(struct uw_qp_impl *qp, const struct uw_send_wr *wr)
{
	struct uw_context *ctx = qp->pub.context;
	uint32_t pd = ((struct uw_pd_impl *)qp->pub.pd)->id;
	uint32_t max_sge = qp->attr.cap.max_send_sge;

	if (wr->opcode > UW_WR_BIND_MW || wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge ||
	    (wr->num_sge && !wr->sg_list))
		return EINVAL;
	if (is_ext(wr->opcode) && !qp->rfc7306 && qp->pub.state != UW_QPS_ERR)
		return EOPNOTSUPP;
	if (qp->sq_tail - qp->sq_head == qp->sq_cap)
		return ENOMEM;
	struct uw_swqe *w = uw__sq_at(qp, qp->sq_tail);
	size_t slot = qp->sq_tail % qp->sq_cap;
	w->iov = qp->sq_iov + slot * sq_sge(qp);
	w->inline_buf = qp->sq_inline ? qp->sq_inline + slot * qp->attr.cap.max_inline_data : NULL;
	uint32_t need = 0;
	if (wr->opcode == UW_WR_RDMA_READ || is_atomic(wr->opcode))
		need = DDP_LOCAL_WRITE;
	/* A Read lands in one place (siw has the same limit); an atomic's
	 * original value lands in one 8-byte SGE. */
	if ((wr->opcode == UW_WR_RDMA_READ && wr->num_sge > 1) ||
	    (is_atomic(wr->opcode) && (wr->num_sge != 1 || wr->sg_list[0].length < 8)) ||
	    ((wr->opcode == UW_WR_LOCAL_INV || wr->opcode == UW_WR_BIND_MW) && wr->num_sge))
		return EINVAL;
	bool inl = (wr->send_flags & UW_SEND_INLINE) &&
		   (wr->opcode == UW_WR_SEND || wr->opcode == UW_WR_SEND_WITH_INV ||
		    wr->opcode == UW_WR_RDMA_WRITE || wr->opcode == UW_WR_RDMA_WRITE_WITH_IMM);
	size_t total = 0;
	for (int i = 0; i < wr->num_sge; i++)
		total += wr->sg_list[i].length;
	if (inl) {
		if (total > qp->attr.cap.max_inline_data)
			return EINVAL;
		size_t off = 0;
		for (int i = 0; i < wr->num_sge; i++) {
			if (!wr->sg_list[i].length)
				continue;
			memcpy(w->inline_buf + off, (void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			off += wr->sg_list[i].length;
		}
		w->iov[0] = (struct iovec){ w->inline_buf, total };
		w->niov = total ? 1 : 0;
	} else {
		for (int i = 0; i < wr->num_sge; i++) {
			int rc = uw__sge_check(ctx, pd, &wr->sg_list[i], need, &w->iov[i]);
			if (rc)
				return rc;
		}
		w->niov = wr->num_sge;
	}
	if (wr->opcode == UW_WR_RDMA_READ && total > UINT32_MAX)
		return EINVAL;
	if (is_atomic(wr->opcode) && (wr->atomic.remote_addr & 7))
		return EINVAL;
	uint32_t bind_rkey = 0;
	if (wr->opcode == UW_WR_BIND_MW) {
		int rc = uw__bind_wr_check(&qp->pub, wr, &bind_rkey);
		if (rc)
			return rc;
	}
	w->lkey0 = wr->num_sge ? wr->sg_list[0].lkey : 0;
	w->wr = *wr;
	w->wr.next = NULL;
	w->wr.sg_list = NULL;
	if (wr->opcode == UW_WR_BIND_MW) {
		/* the objects may go before its turn: it finds them again by
		 * their keys then (uw__bind_wr_run) */
		w->lkey0 = wr->bind.mr ? wr->bind.mr->lkey : 0; /* 0: an unbind */
		w->wr.bind.rkey = bind_rkey;
		w->wr.bind.mw = NULL;
		w->wr.bind.mr = NULL;
	}
	w->signaled = qp->attr.sq_sig_all || (wr->send_flags & UW_SEND_SIGNALED);
	w->done = false;
	w->status = UW_WC_SUCCESS;
	qp->sq_tail++;
	return 0;
}

/* May UW_SEND_MORE hold a request? With manual progress the program
 * posts again, waits or flushes (verbs.h); with automatic progress a
 * program may post and compute, so only while the engine thread looks
 * again within a lease (it stands back for a program that progresses
 * itself, or runs now) and sends what is held when it does. */
static bool may_hold(struct uw_context *ctx)
{
	return ctx->progress != UW_PROGRESS_AUTO ||
	       ctx->engine_looks_by <= util_now_ns() + UTIL_LEASE_NS;
}

int uw_post_send(struct uw_qp *q, struct uw_send_wr *wr, struct uw_send_wr **bad_wr)
{
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	int rc = 0;
	if (!qp || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	struct uw_context *ctx = q->context;
	pthread_mutex_lock(&ctx->lock);
	/* RTR and SQD queue what is posted until RTS */
	if (q->state != UW_QPS_RTS && q->state != UW_QPS_RTR && q->state != UW_QPS_SQD &&
	    q->state != UW_QPS_ERR)
		rc = EINVAL;
	bool more = false;
	for (; wr && !rc; wr = wr->next) {
		if ((rc = queue_send(qp, wr)) != 0)
			break;
		more = wr->send_flags & UW_SEND_MORE;
	}
	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	if (q->state == UW_QPS_ERR)
		uw__qp_flush(qp);
	else if (qp->conn && more && !rc && may_hold(ctx))
		uw__conn_hold(qp->conn);
	else if (qp->conn)
		uw__conn_tx(qp->conn);
	uw__lease_keep(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

int uw_flush_sends(struct uw_context *ctx)
{
	if (!ctx)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	uw__flush_held(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

static int fill_rwqe(struct uw_context *ctx, uint32_t pd, uint32_t max_sge, struct uw_rwqe *r,
		     const struct uw_recv_wr *wr)
{
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge || (wr->num_sge && !wr->sg_list))
		return EINVAL;
	uint64_t len = 0;
	for (int i = 0; i < wr->num_sge; i++) {
		int rc = uw__sge_check(ctx, pd, &wr->sg_list[i], DDP_LOCAL_WRITE, &r->iov[i]);
		if (rc)
			return rc;
		len += wr->sg_list[i].length;
	}
	r->wr_id = wr->wr_id;
	r->niov = wr->num_sge;
	r->recv = (struct rdmap_recv){ r->iov, r->niov, len, (uint64_t)(uintptr_t)r };
	return 0;
}

int uw_post_recv(struct uw_qp *q, struct uw_recv_wr *wr, struct uw_recv_wr **bad_wr)
{
	struct uw_qp_impl *qp = (struct uw_qp_impl *)q;
	int rc = 0;
	if (!qp || !wr || q->srq) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	struct uw_context *ctx = q->context;
	uint32_t pd = ((struct uw_pd_impl *)q->pd)->id;
	pthread_mutex_lock(&ctx->lock);
	if (q->state == UW_QPS_RESET)
		rc = EINVAL;
	for (; wr && !rc; wr = wr->next) {
		if (qp->rq_tail - qp->rq_head == qp->rq_cap) {
			rc = ENOMEM;
			break;
		}
		rc = fill_rwqe(ctx, pd, qp->attr.cap.max_recv_sge ? qp->attr.cap.max_recv_sge : 1,
			       &qp->rq[qp->rq_tail % qp->rq_cap], wr);
		if (rc)
			break;
		qp->rq_tail++;
	}
	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	if (q->state == UW_QPS_ERR)
		uw__qp_flush(qp);
	else if (qp->conn && qp->conn->rx_wait)
		uw__conn_recv_posted(qp->conn); /* a Send waited for it */
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}

struct uw_srq *uw_create_srq(struct uw_pd *p, struct uw_srq_init_attr *attr)
{
	struct uw_pd_impl *pd = (struct uw_pd_impl *)p;
	if (!pd || !attr || !attr->max_wr || attr->max_wr > (1u << 20) ||
	    attr->max_sge > UW_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	struct uw_srq_impl *srq = calloc(1, sizeof(*srq));
	uint32_t sge = attr->max_sge ? attr->max_sge : 1;
	if (srq) {
		srq->ring = calloc(attr->max_wr, sizeof(*srq->ring));
		srq->iov_pool = calloc((size_t)attr->max_wr * sge, sizeof(struct iovec));
	}
	if (!srq || !srq->ring || !srq->iov_pool) {
		if (srq) {
			free(srq->ring);
			free(srq->iov_pool);
		}
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	for (uint32_t i = 0; i < attr->max_wr; i++)
		srq->ring[i].iov = srq->iov_pool + (size_t)i * sge;
	srq->cap = attr->max_wr;
	srq->max_sge = sge;
	srq->pub = (struct uw_srq){ p->context, p, attr->srq_context };
	srq->async_limit.ev.srq = &srq->pub;
	pthread_mutex_lock(&p->context->lock);
	pd->refs++;
	pthread_mutex_unlock(&p->context->lock);
	return &srq->pub;
}

int uw_destroy_srq(struct uw_srq *s)
{
	struct uw_srq_impl *srq = (struct uw_srq_impl *)s;
	if (!srq)
		return EINVAL;
	pthread_mutex_lock(&s->context->lock);
	if (srq->users) {
		pthread_mutex_unlock(&s->context->lock);
		return EBUSY;
	}
	((struct uw_pd_impl *)s->pd)->refs--;
	struct uw__async_node *nodes[] = { &srq->async_limit };
	uw__async_move(&srq->async, NULL, nodes, 1);
	pthread_mutex_unlock(&s->context->lock);
	free(srq->ring);
	free(srq->iov_pool);
	free(srq);
	return 0;
}

int uw_modify_srq_limit(struct uw_srq *s, uint32_t limit)
{
	struct uw_srq_impl *srq = (struct uw_srq_impl *)s;
	if (!srq || limit > srq->cap)
		return EINVAL;
	pthread_mutex_lock(&s->context->lock);
	srq->limit = limit;
	pthread_mutex_unlock(&s->context->lock);
	return 0;
}

uint32_t uw_srq_limit(struct uw_srq *s)
{
	struct uw_srq_impl *srq = (struct uw_srq_impl *)s;
	if (!srq)
		return 0;
	pthread_mutex_lock(&s->context->lock);
	uint32_t l = srq->limit;
	pthread_mutex_unlock(&s->context->lock);
	return l;
}

int uw_post_srq_recv(struct uw_srq *s, struct uw_recv_wr *wr, struct uw_recv_wr **bad_wr)
{
	struct uw_srq_impl *srq = (struct uw_srq_impl *)s;
	int rc = 0;
	if (!srq || !wr) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	uint32_t pd = ((struct uw_pd_impl *)s->pd)->id;
	pthread_mutex_lock(&s->context->lock);
	for (; wr; wr = wr->next) {
		if (srq->count == srq->cap) {
			rc = ENOMEM;
			break;
		}
		rc = fill_rwqe(s->context, pd, srq->max_sge,
			       &srq->ring[(srq->head + srq->count) % srq->cap], wr);
		if (rc)
			break;
		srq->count++;
	}
	if (bad_wr)
		*bad_wr = rc ? wr : NULL;
	/* Sends on the SRQ's QPs that waited for a receive go on, in the
	 * connections' order, while there are receives */
	struct uw_conn *c, *n;
	util_list_for_each_safe(c, n, &s->context->conns, link) {
		if (!srq->count || !s->context->rx_waiting)
			break;
		if (c->rx_wait && c->qp && c->qp->pub.srq == s)
			uw__conn_recv_posted(c);
	}
	pthread_mutex_unlock(&s->context->lock);
	return rc;
}
