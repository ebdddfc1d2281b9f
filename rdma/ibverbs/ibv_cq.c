/*
 * ibv_cq.c: completion channels and completion queues, and the two CQ
 * calls rdma-core's inline functions make through context->ops
 * (poll_cq, req_notify_cq).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>

#include "ibv_internal.h"

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *c)
{
	if (!c) {
		errno = EINVAL;
		return NULL;
	}
	struct uwv_channel *ch = calloc(1, sizeof(*ch));
	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->uw = uw_create_comp_channel(uwv_ctx(c)->uw);
	if (!ch->uw) {
		int e = errno;
		free(ch);
		errno = e;
		return NULL;
	}
	/* we wait in poll() ourselves (ibv_get_cq_event) */
	uw_comp_channel_nonblock(ch->uw, 1);
	ch->ibv.context = c;
	ch->ibv.fd = ch->uw->fd;
	return &ch->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	if (!channel)
		return EINVAL;
	struct uwv_channel *ch = uwv_from(channel, struct uwv_channel);
	if (channel->refcnt)
		return EBUSY; /* CQs still report to it (rdma-core's rule) */
	int rc = uw_destroy_comp_channel(ch->uw);
	if (rc == 0)
		free(ch);
	return rc;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
			     struct ibv_comp_channel *channel, int comp_vector)
{
	if (!c || comp_vector < 0 || comp_vector >= c->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	struct uwv_cq *q = calloc(1, sizeof(*q));
	if (!q) {
		errno = ENOMEM;
		return NULL;
	}
	struct uw_comp_channel *uch = channel ? uwv_from(channel, struct uwv_channel)->uw : NULL;
	/* uwarp's cq_context is ours: an event leads back to this wrapper */
	q->uw = uw_create_cq(uwv_ctx(c)->uw, cqe, q, uch);
	if (!q->uw) {
		int e = errno;
		free(q);
		errno = e;
		return NULL;
	}
	q->ibv.context = c;
	q->ibv.channel = channel;
	q->ibv.cq_context = cq_context;
	q->ibv.cqe = q->uw->cqe;
	uwv_async_report(c, NULL, q->uw, NULL);
	pthread_mutex_init(&q->ibv.mutex, NULL);
	pthread_cond_init(&q->ibv.cond, NULL);
	if (channel) {
		pthread_mutex_lock(&c->mutex);
		channel->refcnt++;
		pthread_mutex_unlock(&c->mutex);
	}
	return &q->ibv;
}

int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	if (!cq)
		return EINVAL;
	struct uwv_cq *q = uwv_from(cq, struct uwv_cq);
	int rc = uw_resize_cq(q->uw, cqe);
	if (rc == 0)
		cq->cqe = q->uw->cqe;
	return rc;
}

int ibv_destroy_cq(struct ibv_cq *cq)
{
	if (!cq)
		return EINVAL;
	struct uwv_cq *q = uwv_from(cq, struct uwv_cq);
	int rc = uw_destroy_cq(q->uw);
	if (rc)
		return rc;
	if (cq->channel) {
		pthread_mutex_lock(&cq->context->mutex);
		cq->channel->refcnt--;
		pthread_mutex_unlock(&cq->context->mutex);
	}
	pthread_cond_destroy(&cq->cond);
	pthread_mutex_destroy(&cq->mutex);
	free(q);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq, void **cq_context)
{
	if (!channel || !cq) {
		errno = EINVAL;
		return -1;
	}
	struct uwv_channel *ch = uwv_from(channel, struct uwv_channel);
	struct uw_cq *ucq;
	void *uctx;
	int rc;
	while ((rc = uw_get_cq_event(ch->uw, &ucq, &uctx)) == EAGAIN &&
	       (rc = uwv_wait_readable(channel->fd)) == 0)
		;
	if (rc) {
		errno = rc;
		return -1;
	}
	struct uwv_cq *q = uctx;
	*cq = &q->ibv;
	if (cq_context)
		*cq_context = q->ibv.cq_context;
	return 0;
}

/* Waiting is a poll() on the descriptor, as rdma-core's is a read(): a
 * signal ends it with EINTR (qperf ends its timed tests so), and
 * O_NONBLOCK set on the descriptor by the program makes it EAGAIN. */
int uwv_wait_readable(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0 && (fl & O_NONBLOCK))
		return EAGAIN;
	struct pollfd p = { .fd = fd, .events = POLLIN };
	return poll(&p, 1, -1) < 0 ? errno : 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (!cq)
		return;
	uw_ack_cq_events(uwv_from(cq, struct uwv_cq)->uw, nevents);
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

int uwv_req_notify_cq(struct ibv_cq *cq, int solicited_only)
{
	return uw_req_notify_cq(uwv_from(cq, struct uwv_cq)->uw, solicited_only);
}

static enum ibv_wc_status status_to_ibv(enum uw_wc_status s)
{
	switch (s) {
	case UW_WC_SUCCESS:
		return IBV_WC_SUCCESS;
	case UW_WC_LOC_LEN_ERR:
		return IBV_WC_LOC_LEN_ERR;
	case UW_WC_LOC_PROT_ERR:
		return IBV_WC_LOC_PROT_ERR;
	case UW_WC_WR_FLUSH_ERR:
		return IBV_WC_WR_FLUSH_ERR;
	case UW_WC_REM_ACCESS_ERR:
		return IBV_WC_REM_ACCESS_ERR;
	case UW_WC_REM_OP_ERR:
		return IBV_WC_REM_OP_ERR;
	case UW_WC_FATAL_ERR:
		return IBV_WC_FATAL_ERR;
	case UW_WC_MW_BIND_ERR:
		return IBV_WC_MW_BIND_ERR;
	}
	return IBV_WC_GENERAL_ERR;
}

static enum ibv_wc_opcode opcode_to_ibv(enum uw_wc_opcode o)
{
	switch (o) {
	case UW_WC_SEND:
		return IBV_WC_SEND;
	case UW_WC_RDMA_WRITE:
		return IBV_WC_RDMA_WRITE;
	case UW_WC_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case UW_WC_FETCH_ADD:
		return IBV_WC_FETCH_ADD;
	case UW_WC_SWAP: /* not postable through ibverbs: no such opcode there */
	case UW_WC_CMP_SWAP:
		return IBV_WC_COMP_SWAP;
	case UW_WC_LOCAL_INV:
		return IBV_WC_LOCAL_INV;
	case UW_WC_RECV:
		return IBV_WC_RECV;
	case UW_WC_RECV_IMM:
		return IBV_WC_RECV_RDMA_WITH_IMM;
	case UW_WC_BIND_MW:
		return IBV_WC_BIND_MW;
	}
	return IBV_WC_SEND;
}

static void wc_to_ibv(const struct uw_wc *u, struct ibv_wc *w)
{
	w->wr_id = u->wr_id;
	w->status = status_to_ibv(u->status);
	w->opcode = opcode_to_ibv(u->opcode);
	/* the Terminate that ended it, if one did: layer, type, code */
	w->vendor_err =
		(uint32_t)u->term_layer << 16 | (uint32_t)u->term_etype << 8 | u->term_ecode;
	w->byte_len = u->byte_len;
	w->wc_flags = 0;
	w->imm_data = 0;
	if (u->wc_flags & UW_WC_WITH_IMM) {
		/* ibverbs' immediate is 32 bits in network order: the low
		 * half of RFC 7306's 64-bit Immediate Data */
		w->imm_data = htobe32((uint32_t)u->imm_data);
		w->wc_flags |= IBV_WC_WITH_IMM;
	} else if (u->wc_flags & UW_WC_WITH_INV) {
		w->invalidated_rkey = u->invalidated_rkey;
		w->wc_flags |= IBV_WC_WITH_INV;
	}
	w->qp_num = u->qp_num;
	w->src_qp = 0;
	w->pkey_index = 0;
	w->slid = 0;
	w->sl = 0;
	w->dlid_path_bits = 0;
}

int uwv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	if (n <= 0)
		return n < 0 ? -EINVAL : 0;
	struct uwv_cq *q = uwv_from(cq, struct uwv_cq);
	struct uw_wc u[32];
	int done = 0;
	while (done < n) {
		int want = n - done < 32 ? n - done : 32;
		int got = uw_poll_cq(q->uw, want, u);
		if (got < 0)
			return done ? done : got;
		/* A QP destroyed takes its completions still in the CQ with it,
		 * as rdma-core's mlx4 and mlx5 providers clean the CQ in
		 * ibv_destroy_qp; uwarp's own API keeps them (wc.qp NULL).
		 * libfabric's verbs provider depends on this: it reports what
		 * it had posted on a closed endpoint as flushed itself, and a
		 * receive that completed after that would be handed to a
		 * connection it has freed. */
		int kept = 0;
		for (int i = 0; i < got; i++)
			if (u[i].qp)
				wc_to_ibv(&u[i], &wc[done + kept++]);
		done += kept;
		if (got < want)
			break;
	}
	return done;
}
