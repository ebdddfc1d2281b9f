/*
 * ibv_async.c: asynchronous events. Each open of the device has a uwarp
 * event channel whose descriptor is context->async_fd; the QPs, CQs and
 * SRQs made through it report there, and ibv_get_async_event turns
 * uwarp's events into rdma-core's, naming the program's own objects.
 */
#include <errno.h>

#include "ibv_internal.h"

void uwv_async_report(struct ibv_context *c, struct uw_qp *qp, struct uw_cq *cq, struct uw_srq *srq)
{
	uw_async_report(uwv_ctx(c)->async, qp, cq, srq);
}

static enum ibv_event_type type_to_ibv(enum uw_async_event_type t)
{
	switch (t) {
	case UW_EVENT_QP_FATAL:
		return IBV_EVENT_QP_FATAL;
	case UW_EVENT_QP_REQ_ERR:
		return IBV_EVENT_QP_REQ_ERR;
	case UW_EVENT_QP_ACCESS_ERR:
		return IBV_EVENT_QP_ACCESS_ERR;
	case UW_EVENT_QP_LAST_WQE_REACHED:
		return IBV_EVENT_QP_LAST_WQE_REACHED;
	case UW_EVENT_CQ_ERR:
		return IBV_EVENT_CQ_ERR;
	case UW_EVENT_SRQ_LIMIT_REACHED:
		return IBV_EVENT_SRQ_LIMIT_REACHED;
	}
	return IBV_EVENT_DEVICE_FATAL;
}

int ibv_get_async_event(struct ibv_context *c, struct ibv_async_event *event)
{
	if (!c || !event) {
		errno = EINVAL;
		return -1;
	}
	struct uw_async_channel *ch = uwv_ctx(c)->async;
	struct uw_async_event ev;
	int rc;
	while ((rc = uw_get_async_event(ch, &ev, 0)) == ETIMEDOUT &&
	       (rc = uwv_wait_readable(c->async_fd)) == 0)
		;
	if (rc) {
		errno = rc;
		return -1;
	}
	event->event_type = type_to_ibv(ev.type);
	if (ev.type == UW_EVENT_CQ_ERR)
		event->element.cq = &((struct uwv_cq *)ev.cq->cq_context)->ibv;
	else if (ev.type == UW_EVENT_SRQ_LIMIT_REACHED)
		event->element.srq = &((struct uwv_srq *)ev.srq->srq_context)->ibv;
	else
		event->element.qp = &((struct uwv_qp *)ev.qp->qp_context)->ibv;
	return 0;
}

/* Nothing to count: destroying an object takes its events that were not
 * read with it, so no destroy waits for an acknowledgement. */
void ibv_ack_async_event(struct ibv_async_event *event) { (void)event; }
