/*
 * perf_pt_bw.c: perftest's bandwidth loops. The client keeps up to
 * tx_depth operations in flight, each signalled (every WR completes, and
 * each completion time feeds the peak). Write and Read cycle through the
 * peer's page as perftest does.
 *
 * Send has flow control, because iWARP has no receiver-not-ready retry: a
 * Send that finds no receive kills the connection. perftest's iWARP scheme
 * (ib_send_bw): the receiver RDMA-Writes its count of messages received,
 * a little-endian u32, into the sender's credit word whenever
 * (count % rx_depth) % (rx_depth / 3) == 0; the sender never lets
 * sent + 1 - credit reach rx_depth. The receiver keeps rx_depth receives
 * posted (and posts iters in all).
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "perf.h"
#include "perf_pt.h"

int pt_post_op(struct pt_run *r, uint64_t wr_id, uint64_t off)
{
	struct uw_sge s = { (uintptr_t)(r->buf + off), (uint32_t)r->o->size, r->mr->lkey };
	struct uw_send_wr wr = { .wr_id = wr_id,
				 .sg_list = &s,
				 .num_sge = 1,
				 .send_flags = UW_SEND_SIGNALED,
				 .rdma = { r->theirs.vaddr + off, r->theirs.rkey } };
	switch (r->o->test->verb) {
	case PT_WRITE:
		wr.opcode = UW_WR_RDMA_WRITE;
		break;
	case PT_READ:
		wr.opcode = UW_WR_RDMA_READ;
		break;
	case PT_SEND:
		wr.opcode = UW_WR_SEND;
		break;
	}
	return -uw_post_send(r->test.qp, &wr, NULL);
}

int pt_post_recvs(struct pt_run *r, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++) {
		uint64_t i = r->recv_posted, off = r->area + pt_cycle_offset(r, i);
		struct uw_sge s = { (uintptr_t)(r->buf + off), (uint32_t)r->o->size, r->mr->lkey };
		struct uw_recv_wr wr = { .wr_id = PT_RECV_TAG | i, .sg_list = &s, .num_sge = 1 };
		int rc = uw_post_recv(r->test.qp, &wr, NULL);
		if (rc)
			return -rc;
		r->recv_posted++;
	}
	return 0;
}

static int wc_failed(struct pt_run *r, const struct uw_wc *wc)
{
	fprintf(stderr, "uwarp-perf: %s %llu completed with %s\n",
		wc->wr_id & PT_RECV_TAG     ? "receive"
		: wc->wr_id & PT_CREDIT_TAG ? "credit write"
					    : "operation",
		(unsigned long long)(wc->wr_id & ~(PT_RECV_TAG | PT_CREDIT_TAG)),
		uw_wc_status_str(wc->status));
	pt_link_explain(&r->test);
	return -EIO;
}

static uint32_t credit_in(const struct pt_run *r)
{
	return le32toh(__atomic_load_n(&r->credit[1], __ATOMIC_ACQUIRE));
}

/* perftest's window: unsigned arithmetic, as the count wraps at 2^32 */
static bool may_send(const struct pt_run *r, uint64_t sent)
{
	return (uint32_t)(sent + 1 - credit_in(r)) < r->rx_depth;
}

int pt_bw_client(struct pt_run *r, struct pt_bw_report *rep)
{
	uint64_t iters = r->o->iters, sent = 0, done = 0;
	bool send = r->o->test->verb == PT_SEND;
	double *posted = calloc(iters, sizeof(double)), *completed = calloc(iters, sizeof(double));
	int rc = posted && completed ? 0 : -ENOMEM;
	double stall = util_now_s() + PT_STALL_MS / 1000.0;
	uint32_t last_credit = 0;
	while (!rc && done < iters) {
		while (sent < iters && sent - done < r->tx_depth && (!send || may_send(r, sent))) {
			posted[sent] = util_now_s();
			if ((rc = pt_post_op(r, sent, pt_cycle_offset(r, sent))))
				break;
			sent++;
		}
		struct uw_wc wc[16];
		int n = rc ? 0 : uw_poll_cq(r->test.cq, 16, wc);
		double now = util_now_s();
		for (int k = 0; k < n && !rc; k++) {
			if (wc[k].status != UW_WC_SUCCESS || wc[k].wr_id >= iters)
				rc = wc_failed(r, &wc[k]);
			else
				completed[wc[k].wr_id] = now;
			done++;
		}
		if (n > 0 || (send && credit_in(r) != last_credit)) {
			stall = now + PT_STALL_MS / 1000.0;
			last_credit = send ? credit_in(r) : 0;
		} else if (!rc && now > stall) {
			bool starved = send && !may_send(r, sent);
			fprintf(stderr,
				"uwarp-perf: nothing completed for %d s (%llu posted, "
				"%llu done%s)\n",
				PT_STALL_MS / 1000, (unsigned long long)sent,
				(unsigned long long)done,
				starved ? ", waiting for the receiver's credit" : "");
			rc = -ETIMEDOUT;
		} else if (!rc && n == 0) {
			/* credits come as RDMA Writes, which complete nothing here:
			 * never sleep long while waiting for one */
			uw_cq_wait(r->test.cq, 1, 1);
		}
	}
	if (!rc)
		pt_bw_stats(r->o->size, iters, posted, completed, rep);
	free(posted);
	free(completed);
	return rc;
}

/* Tell the sender how many messages have arrived. Inline, so the count is
 * the one of this moment even if the Write leaves later. */
static int post_credit(struct pt_run *r, uint64_t received)
{
	r->credit[0] = htole32((uint32_t)received);
	struct uw_sge s = { (uintptr_t)&r->credit[0], sizeof(uint32_t), r->credit_mr->lkey };
	struct uw_send_wr wr = { .wr_id = PT_CREDIT_TAG | received,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = UW_WR_RDMA_WRITE,
				 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE,
				 .rdma = { r->theirs.vaddr, r->theirs.rkey } };
	return -uw_post_send(r->test.qp, &wr, NULL);
}

int pt_send_bw_server(struct pt_run *r, struct pt_bw_report *rep)
{
	uint64_t iters = r->o->iters, received = 0;
	uint32_t every = r->rx_depth / 3 ? r->rx_depth / 3 : 1, writes = 0;
	bool credit_due = false;
	double first = 0, last = 0, stall = util_now_s() + PT_STALL_MS / 1000.0;
	int rc = 0;
	while (!rc && (received < iters || writes || credit_due)) {
		struct uw_wc wc[16];
		int n = uw_poll_cq(r->test.cq, 16, wc);
		double now = util_now_s();
		for (int k = 0; k < n && !rc; k++) {
			if (wc[k].status != UW_WC_SUCCESS) {
				rc = wc_failed(r, &wc[k]);
			} else if (wc[k].wr_id & PT_RECV_TAG) {
				first = received++ ? first : now;
				last = now;
				if (r->recv_posted < iters)
					rc = pt_post_recvs(r, 1);
				credit_due |= (received % r->rx_depth) % every == 0;
			} else {
				writes--;
			}
		}
		/* a later count covers an earlier one: with the send queue
		 * full, the next free slot carries the newest */
		if (!rc && credit_due && writes < r->test.cap.max_send_wr) {
			rc = post_credit(r, received);
			writes++;
			credit_due = false;
		}
		if (n > 0) {
			stall = now + PT_STALL_MS / 1000.0;
		} else if (!rc && now > stall) {
			fprintf(stderr,
				"uwarp-perf: nothing arrived for %d s "
				"(%llu of %llu messages)\n",
				PT_STALL_MS / 1000, (unsigned long long)received,
				(unsigned long long)iters);
			rc = -ETIMEDOUT;
		} else if (!rc) {
			uw_cq_wait(r->test.cq, 1, 10);
		}
	}
	double t = last - first;
	*rep = (struct pt_bw_report){ .size = r->o->size, .iters = received };
	rep->bw_avg = t > 0 ? (double)r->o->size * (double)received / t / 1048576.0 : 0;
	rep->msg_rate = t > 0 ? (double)received / t / 1e6 : 0;
	return rc;
}
