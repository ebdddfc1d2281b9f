/*
 * perf_pt_link.c: one rdma_cm-style connection for uwarp-perf --perftest:
 * its channel, CQ, id and QP; connect (retrying while nobody listens yet),
 * accept from a shared listener, take completions, close.
 *
 * Why retry: a perftest server answers the exchange that precedes the test
 * connection and only then listens for it, so our connect may find the
 * port closed for a moment. A refusal can also look like a reset: a port
 * forwarder (QEMU's hostfwd) accepts, then closes when the far end refuses.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "perf.h"
#include "perf_pt.h"
#include "tools/lib/tool_conn.h"

/* how long an MPA exchange may take once TCP is up (siw's Reply timeout is 10 s) */
#define PT_CONNECT_MS 15000
#define PT_DISCONNECT_MS 5000
#define PT_RETRY_GAP_NS 100000000L

int pt_link_open(struct pt_link *l, struct uw_context *ctx, int cqe, const struct uw_qp_cap *cap)
{
	memset(l, 0, sizeof(*l));
	l->cap = *cap;
	l->ch = uw_cm_create_channel(ctx);
	l->cq = l->ch ? uw_create_cq(ctx, cqe, NULL, NULL) : NULL;
	return l->cq ? 0 : -errno;
}

static int make_qp(struct pt_link *l, struct uw_pd *pd, struct uw_cm_id *id)
{
	struct uw_qp_init_attr qa = { .send_cq = l->cq, .recv_cq = l->cq, .cap = l->cap };
	l->id = id;
	l->qp = uw_cm_create_qp(id, pd, &qa);
	return l->qp ? 0 : -errno;
}

/* Forget a connection that failed: the id first (it flushes the QP), then
 * the QP, then whatever the flush left in the CQ. */
static void drop(struct pt_link *l)
{
	struct uw_wc wc[16];
	if (l->id)
		uw_cm_destroy_id(l->id);
	if (l->qp)
		uw_destroy_qp(l->qp);
	l->id = NULL;
	l->qp = NULL;
	while (uw_poll_cq(l->cq, 16, wc) > 0)
		;
}

/* Wait for the event that ends a connect or an accept: 0 when established,
 * else -errno (-ECONNREFUSED for a refusal or a Reject). */
static int wait_established(struct pt_link *l, int timeout_ms)
{
	for (;;) {
		struct uw_cm_event *e;
		int rc = uw_cm_get_event_timeout(l->ch, &e, timeout_ms);
		if (rc)
			return -rc;
		enum uw_cm_event_type t = e->event;
		int status = e->status;
		if (t == UW_CM_EVENT_ESTABLISHED)
			l->peer_uwarp = e->rfc7306;
		uw_cm_ack_event(e);
		switch (t) {
		case UW_CM_EVENT_ESTABLISHED:
			return 0;
		case UW_CM_EVENT_REJECTED:
			return -ECONNREFUSED;
		case UW_CM_EVENT_CONNECT_ERROR:
			return -(status ? status : EPROTO);
		case UW_CM_EVENT_DISCONNECTED:
			return -ECONNRESET;
		case UW_CM_EVENT_CONNECT_REQUEST:
			break;
		}
	}
}

int pt_link_connect(struct pt_link *l, struct uw_pd *pd, const struct sockaddr *addr,
		    const struct uw_conn_param *p, pt_ready_fn ready, void *arg, int retry_ms)
{
	double give_up = util_now_s() + retry_ms / 1000.0;
	for (;;) {
		struct uw_cm_id *id = uw_cm_create_id(l->ch, NULL);
		if (!id)
			return -errno;
		int rc = make_qp(l, pd, id);
		if (!rc && ready)
			rc = ready(arg);
		if (!rc)
			rc = -uw_cm_connect(id, addr, p);
		if (!rc)
			rc = wait_established(l, PT_CONNECT_MS);
		if (!rc)
			return 0;
		drop(l);
		/* Not listening yet. Through a port forward (QEMU's, any TCP
		 * proxy) that is a connection taken and then closed: the MPA
		 * Request's write meets EPIPE, or its reply ECONNRESET. */
		if ((rc != -ECONNREFUSED && rc != -ECONNRESET && rc != -EPIPE) ||
		    util_now_s() >= give_up)
			return rc;
		nanosleep(&(struct timespec){ 0, PT_RETRY_GAP_NS }, NULL);
	}
}

int pt_link_accept(struct pt_link *l, struct uw_pd *pd, struct uw_cm_channel *listen_ch,
		   const struct uw_conn_param *p, pt_ready_fn ready, void *arg, int timeout_ms)
{
	struct uw_cm_event *e;
	int rc;
	for (;;) {
		rc = uw_cm_get_event_timeout(listen_ch, &e, timeout_ms);
		if (rc)
			return -rc;
		if (e->event == UW_CM_EVENT_CONNECT_REQUEST)
			break;
		uw_cm_ack_event(e); /* a request that failed before we took it */
	}
	struct uw_cm_id *id = e->id;
	rc = -uw_cm_migrate_id(id, l->ch);
	uw_cm_ack_event(e);
	if (rc) {
		uw_cm_reject(id, NULL, 0);
		uw_cm_destroy_id(id);
		return rc;
	}
	rc = make_qp(l, pd, id);
	if (!rc && ready)
		rc = ready(arg); /* the peer may send the moment we accept */
	if (!rc)
		rc = -uw_cm_accept(id, p);
	if (!rc)
		rc = wait_established(l, PT_CONNECT_MS);
	if (rc)
		drop(l);
	return rc;
}

int pt_link_wc(struct pt_link *l, struct uw_wc *wc, int timeout_ms)
{
	int n = uw_poll_cq(l->cq, 1, wc);
	if (n == 0) {
		n = uw_cq_wait(l->cq, 1, timeout_ms);
		if (n < 0)
			return n;
		n = uw_poll_cq(l->cq, 1, wc);
	}
	if (n < 0)
		return n;
	if (n == 0)
		return -ETIMEDOUT;
	return wc->status == UW_WC_SUCCESS ? 0 : -EIO;
}

/* Wait up to ms for this link's DISCONNECTED: 0 or -ETIMEDOUT. A
 * Terminate that ended it is worth a line: it says what went wrong. */
static int wait_disconnected(struct pt_link *l, int ms)
{
	double give_up = util_now_s() + ms / 1000.0;
	while (!l->down && util_now_s() < give_up) {
		struct uw_cm_event *e;
		int left = (int)((give_up - util_now_s()) * 1000);
		if (uw_cm_get_event_timeout(l->ch, &e, left > 0 ? left : 0))
			continue;
		if (e->event == UW_CM_EVENT_DISCONNECTED) {
			l->down = true;
			tool_report_terminate(stderr, "uwarp-perf", e);
		}
		uw_cm_ack_event(e);
	}
	return l->down ? 0 : -ETIMEDOUT;
}

void pt_link_explain(struct pt_link *l) { wait_disconnected(l, 500); }

int pt_link_close(struct pt_link *l, int grace_ms)
{
	int rc = 0;
	if (l->id) {
		/* The side that finishes last should close: a disconnect that
		 * overtakes the peer's last completion would flush it there. */
		if (!l->down && (grace_ms <= 0 || wait_disconnected(l, grace_ms))) {
			uw_cm_disconnect(l->id);
			rc = wait_disconnected(l, PT_DISCONNECT_MS);
		}
		drop(l);
	}
	if (l->cq)
		uw_destroy_cq(l->cq);
	if (l->ch)
		uw_cm_destroy_channel(l->ch);
	memset(l, 0, sizeof(*l));
	return rc;
}
