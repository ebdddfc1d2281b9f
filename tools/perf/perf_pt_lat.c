/*
 * perf_pt_lat.c: perftest's latency loops, one message at a time.
 *
 *   write_lat  a ping-pong of RDMA Writes, the server's first: each side
 *              writes its count into the last byte of its message and
 *              watches the last byte of its own remote area for the peer's
 *   read_lat   the client Reads, one at a time; the server only serves
 *   send_lat   a ping-pong of Sends, the client's first; each side keeps
 *              receives posted (iters in all)
 *
 * t[i] is when message i was posted; perftest's latency is the time
 * between successive posts.
 */
#include <errno.h>
#include <sched.h>
#include <stdio.h>

#include "perf.h"
#include "perf_pt.h"

static int stalled(const char *what, uint64_t done, uint64_t iters)
{
	fprintf(stderr, "uwarp-perf: %s: nothing for %d s (%llu of %llu)\n", what,
		PT_STALL_MS / 1000, (unsigned long long)done, (unsigned long long)iters);
	return -ETIMEDOUT;
}

static int take_failed(struct pt_run *r, const struct uw_wc *wc, int rc)
{
	if (rc == -EIO) {
		fprintf(stderr, "uwarp-perf: %s completed with %s\n",
			wc->wr_id & PT_RECV_TAG ? "a receive" : "an operation",
			uw_wc_status_str(wc->status));
		pt_link_explain(&r->test);
	}
	return rc;
}

/* Wait for the completion of our one outstanding operation. */
static int wait_sent(struct pt_run *r, uint64_t i)
{
	struct uw_wc wc;
	int rc = pt_link_wc(&r->test, &wc, PT_STALL_MS);
	if (rc == -ETIMEDOUT)
		return stalled("waiting for a completion", i, r->o->iters);
	return rc ? take_failed(r, &wc, rc) : 0;
}

/* Spin on the byte the peer's Write lands last, moving data meanwhile
 * (manual progress: nothing moves unless we call in; a zero timeout makes
 * uw_cq_wait one pass of the engine that never blocks). Yield now and then:
 * where both ends share the cores, a pure spinner holds a core that the
 * kernel's TCP needs, and the tail grows to milliseconds. */
static int wait_byte(struct pt_run *r, const uint8_t *p, uint8_t want, uint64_t i)
{
	double give_up = util_now_s() + PT_STALL_MS / 1000.0;
	for (unsigned spins = 1; __atomic_load_n(p, __ATOMIC_ACQUIRE) != want; spins++) {
		uw_cq_wait(r->test.cq, 1, 0);
		if (spins % 16 == 0)
			sched_yield();
		if (spins % 1024)
			continue;
		if (uw_qp_get_state(r->test.qp) == UW_QPS_ERR) {
			fprintf(stderr,
				"uwarp-perf: the connection failed while waiting for the "
				"peer's Write %llu\n",
				(unsigned long long)i);
			return -ECONNRESET;
		}
		if (util_now_s() > give_up)
			return stalled("waiting for the peer's Write", i, r->o->iters);
	}
	return 0;
}

int pt_write_lat(struct pt_run *r, double *t)
{
	uint64_t iters = r->o->iters, size = r->o->size, sent = 0, seen = 0;
	const uint8_t *watch = r->buf + r->area + size - 1;
	uint8_t *mark = r->buf + size - 1;
	int rc = 0;
	while (!rc && (sent < iters || seen < iters)) {
		if (seen < iters && (sent > 0 || r->client)) {
			seen++;
			rc = wait_byte(r, watch, (uint8_t)seen, seen);
		}
		if (!rc && sent < iters) {
			t[sent] = util_now_s();
			*mark = (uint8_t)(sent + 1);
			rc = pt_post_op(r, sent, 0);
			if (!rc)
				rc = wait_sent(r, sent);
			sent++;
		}
	}
	return rc;
}

int pt_read_lat(struct pt_run *r, double *t)
{
	int rc = 0;
	for (uint64_t i = 0; i < r->o->iters && !rc; i++) {
		t[i] = util_now_s();
		rc = pt_post_op(r, i, 0);
		if (!rc)
			rc = wait_sent(r, i);
	}
	return rc;
}

/* Take completions until one of the kind wanted is there. */
static int take(struct pt_run *r, uint64_t *sends, uint64_t *recvs, bool want_recv, uint64_t i)
{
	while (want_recv ? !*recvs : !*sends) {
		struct uw_wc wc;
		int rc = pt_link_wc(&r->test, &wc, PT_STALL_MS);
		if (rc == -ETIMEDOUT)
			return stalled(want_recv ? "waiting for the peer's Send"
						 : "waiting for a completion",
				       i, r->o->iters);
		if (rc)
			return take_failed(r, &wc, rc);
		if (wc.wr_id & PT_RECV_TAG)
			++*recvs;
		else
			++*sends;
	}
	if (want_recv)
		--*recvs;
	else
		--*sends;
	return 0;
}

int pt_send_lat(struct pt_run *r, double *t)
{
	uint64_t iters = r->o->iters, sent = 0, received = 0, sends = 0, recvs = 0;
	int rc = 0;
	while (!rc && (sent < iters || received < iters)) {
		if (received < iters && (sent > 0 || !r->client)) {
			rc = take(r, &sends, &recvs, true, received);
			received++;
			if (!rc && r->recv_posted < iters)
				rc = pt_post_recvs(r, 1);
		}
		if (!rc && sent < iters) {
			t[sent] = util_now_s();
			rc = pt_post_op(r, sent, 0);
			if (!rc)
				rc = take(r, &sends, &recvs, false, sent);
			sent++;
		}
	}
	return rc;
}
