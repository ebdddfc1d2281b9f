/*
 * perf_client.c: the uwarp-perf client: bandwidth (depth operations in
 * flight per QP) and latency (one at a time) for every operation, data
 * verified, side by side with a plain TCP socket doing the same.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "perf.h"
#include "tools/lib/tool_conn.h"
#include "tools/lib/tool_stats.h"
#include "tools/lib/tool_interval.h"

struct qstate {
	struct uw_cm_id *id;
	struct uw_qp *qp;
	struct uw_cq *cq;
	struct uw_mr *mr;
	uint8_t *buf; /* [source slots | sink/echo slots | atomic results] */
	uint64_t half;
	uint32_t slots;
	uint64_t raddr, rlen;
	uint32_t rkey, rslots;
	uint64_t posted, completed, outstanding;
	int64_t credits;
	uint64_t errors, reported, report_errors;
	bool got_report;
	uint64_t atomic_base;
	double *lat;
	uint64_t nlat, cap_lat;
	int crc, markers_tx, markers_rx; /* as negotiated */
};

static const struct perf_opts *o;
static struct uw_cq *shared_cq; /* every QP completes here; wr_id's top bits say which */
static struct uw_context *ctx;
static struct uw_pd *pd;
static struct uw_cm_channel *ch;

static int fail(const char *what, int err)
{
	fprintf(stderr, "client: %s: %s\n", what, err ? strerror(err) : "failed");
	return 1;
}

/* A failed completion, in words. A flushed one says what ended its
 * connection (a server stopped or interrupted mid-run used to leave only
 * "flushed: failed"); one the peer refused gives the Terminate's codes. */
static int wc_fail(const struct uw_wc *wc)
{
	if (wc->status == UW_WC_WR_FLUSH_ERR) {
		int why = wc->qp ? uw_qp_end_errno(wc->qp) : 0;
		fprintf(stderr, "client: the connection ended before the run did: %s\n",
			why == 0        ? "the server closed it (stopped or interrupted?)"
			: why == EPROTO ? "a protocol error, the connection was terminated"
					: strerror(why));
		return 1;
	}
	if (wc->term_layer || wc->term_etype || wc->term_ecode)
		fprintf(stderr, "client: %s (the peer's Terminate: layer %u, type %u, code %#x)\n",
			uw_wc_status_str(wc->status), wc->term_layer, wc->term_etype,
			wc->term_ecode);
	else
		fprintf(stderr, "client: %s\n", uw_wc_status_str(wc->status));
	return 1;
}

static uint8_t *src_slot(struct qstate *q, uint64_t i) { return q->buf + (i % q->slots) * o->size; }

static uint8_t *sink_slot(struct qstate *q, uint64_t i)
{
	return q->buf + q->half + (i % q->slots) * o->size;
}

static uint64_t *result_slot(struct qstate *q, uint64_t i)
{
	return (uint64_t *)(void *)(q->buf + 2 * q->half + (i % q->slots) * 8);
}

/* Split a buffer into o->sge scatter/gather entries. */
static int sges(struct qstate *q, uint8_t *p, uint64_t len, struct uw_sge *s, int max)
{
	int n = len ? (max < 1 ? 1 : max) : 0;
	uint64_t piece = n ? len / (uint64_t)n : 0, off = 0;
	for (int i = 0; i < n; i++) {
		uint64_t l = i == n - 1 ? len - off : piece;
		s[i] = (struct uw_sge){ (uintptr_t)(p + off), (uint32_t)l, q->mr->lkey };
		off += l;
	}
	return n;
}

static int post_ack_recv(struct qstate *q, uint64_t id)
{
	/* acks are empty, the final report is 16 bytes: one size fits both */
	struct uw_sge s = { (uintptr_t)result_slot(q, q->slots), 64, q->mr->lkey };
	struct uw_recv_wr wr = { .wr_id = id, .sg_list = &s, .num_sge = 1 };
	return uw_post_recv(q->qp, &wr, NULL);
}

static int post_op(struct qstate *q, uint64_t i, uint8_t mark)
{
	struct uw_sge s[UW_MAX_SGE];
	struct uw_send_wr wr = { .wr_id = i, .sg_list = s, .send_flags = UW_SEND_SIGNALED };
	uint64_t rslot = (i % q->rslots) * o->size;
	switch (o->op) {
	case OP_SEND:
		wr.opcode = UW_WR_SEND;
		wr.num_sge = sges(q, src_slot(q, i), o->size, s, o->sge);
		break;
	case OP_WRITE:
		wr.opcode = UW_WR_RDMA_WRITE;
		if (o->mode == MODE_LAT) {
			src_slot(q, 0)[o->size - 1] = mark;
			rslot = 0;
		}
		wr.num_sge = sges(q, src_slot(q, i), o->size, s, o->sge);
		wr.rdma.remote_addr = q->raddr + rslot;
		wr.rdma.rkey = q->rkey;
		break;
	case OP_READ:
		wr.opcode = UW_WR_RDMA_READ;
		wr.num_sge = sges(q, sink_slot(q, i), o->size, s, 1);
		wr.rdma.remote_addr = q->raddr + rslot;
		wr.rdma.rkey = q->rkey;
		break;
	case OP_IMM:
		wr.opcode = UW_WR_IMM;
		wr.imm_data = i;
		break;
	case OP_ATOMIC:
		wr.opcode = UW_WR_ATOMIC_FETCH_ADD;
		wr.num_sge = 1;
		s[0] = (struct uw_sge){ (uintptr_t)result_slot(q, i), 8, q->mr->lkey };
		wr.atomic.remote_addr = q->raddr;
		wr.atomic.rkey = q->rkey;
		wr.atomic.compare_add = 1;
		break;
	default:
		return EINVAL;
	}
	return uw_post_send(q->qp, &wr, NULL);
}

static bool is_ack(const struct uw_wc *wc)
{
	return wc->opcode == UW_WC_RECV || wc->opcode == UW_WC_RECV_IMM;
}

/* A completed operation: verify what can be verified now. */
static void completed(struct qstate *q, const struct uw_wc *wc)
{
	uint64_t i = wc->wr_id;
	if (!o->verify)
		return;
	if (o->op == OP_READ && perf_check(sink_slot(q, i), o->size, i % q->rslots) != o->size)
		q->errors++;
	if (o->op == OP_ATOMIC) {
		uint64_t v = *result_slot(q, i);
		if (i == 0)
			q->atomic_base = v;
		else if (v != q->atomic_base + i)
			q->errors++;
	}
}

static int connect_one(struct qstate *q, const struct sockaddr *addr)
{
	struct uw_conn_param p = {
		.ird = 128, .ord = 128, .crc = o->crc, .markers = o->markers, .mpa_rev = o->rev
	};
	struct perf_hello h;
	q->slots = (uint32_t)(o->size ? PERF_MAX_BUF / 4 / o->size : 1);
	if (q->slots > (uint32_t)o->depth)
		q->slots = (uint32_t)o->depth;
	if (q->slots == 0)
		q->slots = 1;
	q->half = o->size * q->slots;
	if (perf_pattern_init(o->size))
		return fail("pattern", ENOMEM);
	uint64_t len = 2 * q->half + 8 * (q->slots + 8);
	q->buf = aligned_alloc(4096, (len + 4095) & ~4095ull);
	q->cq = shared_cq;
	q->id = uw_cm_create_id(ch, q);
	if (!q->buf || !q->cq || !q->id)
		return fail("allocation", errno);
	memset(q->buf, 0, len);
	/* write sources carry a pattern the server's buffer does not start
	 * with, so a read-back proves the writes landed */
	for (uint32_t j = 0; j < q->slots; j++)
		perf_fill(src_slot(q, j), o->size, j + (o->op == OP_WRITE ? 1000 : 0));
	q->mr = uw_reg_mr(pd, q->buf, len, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	struct uw_qp_init_attr qa = { .qp_context = q,
				      .send_cq = q->cq,
				      .recv_cq = q->cq,
				      .cap = { (uint32_t)o->depth + 8, (uint32_t)o->depth + 8,
					       (uint32_t)o->sge, 1, 64 } };
	if (!q->mr || !(q->qp = uw_cm_create_qp(q->id, pd, &qa)))
		return fail("queue pair", errno);
	h = (struct perf_hello){ htonl(PERF_MAGIC),
				 PERF_VERSION,
				 (uint8_t)o->op,
				 (uint8_t)o->mode,
				 o->verify,
				 htobe64(o->size),
				 htonl(q->slots),
				 htonl((uint32_t)o->depth),
				 htobe64((uintptr_t)(q->buf + q->half)),
				 htonl(q->mr->rkey),
				 htonl((o->markers ? PERF_HELLO_MARKERS : 0) |
				       (o->wait_adaptive ? PERF_HELLO_WAIT_ADAPTIVE : 0)) };
	p.private_data = &h;
	p.private_data_len = sizeof(h);
	/* receives for the server's credit acks and its final report; with
	 * latency the echoes take the receives instead */
	for (int i = 0; o->mode == MODE_BW && (o->op == OP_SEND || o->op == OP_IMM) && i < 4; i++)
		if (post_ack_recv(q, UINT64_MAX))
			return fail("post receive", 0);
	int rc = uw_cm_connect(q->id, addr, &p);
	if (rc)
		return fail("connect", rc);
	for (;;) {
		struct uw_cm_event *e;
		rc = uw_cm_get_event_timeout(ch, &e, 15000);
		if (rc)
			return fail("waiting for the server", rc);
		enum uw_cm_event_type t = e->event;
		int status = e->status;
		if (t == UW_CM_EVENT_ESTABLISHED &&
		    e->private_data_len >= sizeof(struct perf_welcome)) {
			struct perf_welcome w;
			memcpy(&w, e->private_data, sizeof(w));
			q->raddr = be64toh(w.addr);
			q->rlen = be64toh(w.len);
			q->rkey = ntohl(w.rkey);
			q->rslots = ntohl(w.slots);
		}
		if (t == UW_CM_EVENT_ESTABLISHED) {
			q->crc = e->crc;
			q->markers_tx = e->markers_tx;
			q->markers_rx = e->markers_rx;
			/* MPA runs with CRC when either end asks (RFC 5044
			 * 7.1, the C flag): a client's --crc off alone
			 * measures with CRC; say so once, not silently */
			static bool said;
			if (o->crc == UW_CRC_OFF && e->crc && !said) {
				said = true;
				fprintf(stderr,
					"client: the server asked for CRC, so the connection "
					"uses it (run the server with --crc off too)\n");
			}
		}
		if (t == UW_CM_EVENT_REJECTED && e->private_data_len) {
			/* a uwarp-perf server says why in its Reject */
			char why[256];
			size_t n = e->private_data_len < sizeof(why) - 1 ? e->private_data_len
									 : sizeof(why) - 1;
			memcpy(why, e->private_data, n);
			why[n] = 0;
			for (size_t i = 0; i < n; i++)
				if (why[i] < 0x20 || why[i] > 0x7e)
					why[i] = '?';
			fprintf(stderr, "client: the server refused the connection: %s\n", why);
			uw_cm_ack_event(e);
			return 1;
		}
		uw_cm_ack_event(e);
		if (t == UW_CM_EVENT_ESTABLISHED)
			break;
		if (t == UW_CM_EVENT_CONNECT_ERROR || t == UW_CM_EVENT_REJECTED) {
			char peer[300];
			snprintf(peer, sizeof(peer), "%s port %d", o->host, o->port);
			tool_connect_failed("client", peer,
					    t == UW_CM_EVENT_REJECTED ? ECONNREFUSED : status);
		} else {
			fprintf(stderr, "client: %s (%s)\n", uw_cm_event_str(t), strerror(status));
		}
		return 1;
	}
	if (!q->rslots || q->rlen < o->size * q->rslots)
		return fail("the server's buffer is not what we asked for", 0);
	q->credits = 2 * o->depth;
	return 0;
}

static struct qstate *owner(const struct uw_wc *wc) { return wc->qp->qp_context; }

/* What the server sent on q: an empty Send is a credit ack (its receive
 * goes back); a 16-byte one is the final report, after our FIN. Returns
 * true for the report. */
static bool on_ack(struct qstate *q, const struct uw_wc *wc, bool repost)
{
	if (wc->byte_len == 16 && !q->got_report) {
		uint64_t rep[2];
		memcpy(rep, result_slot(q, q->slots), 16);
		q->reported = be64toh(rep[0]);
		q->report_errors = be64toh(rep[1]);
		q->got_report = true;
		return true;
	}
	if (wc->byte_len == 0) {
		q->credits += o->depth;
		if (repost)
			post_ack_recv(q, UINT64_MAX);
	}
	return false;
}

/* Acks, while FINs go out; returns the reports taken on the way (an
 * earlier QP's report comes while a later QP waits for its credit: it
 * must be kept, not dropped as an ack). */
static int take_acks(int wait_ms, int *reports)
{
	struct uw_wc wc[16];
	int n = uw_poll_cq(shared_cq, 16, wc);
	if (!n && wait_ms)
		uw_cq_wait(shared_cq, 1, wait_ms);
	for (int i = 0; i < n; i++) {
		struct qstate *q = owner(&wc[i]);
		if (wc[i].status != UW_WC_SUCCESS)
			return wc_fail(&wc[i]);
		if (is_ack(&wc[i]))
			*reports += on_ack(q, &wc[i], true);
	}
	return 0;
}

/* FIN on every QP: an empty solicited Send asks the server for its count. */
static int wait_reports(struct qstate *qs, int nq)
{
	int reports = 0;
	for (int k = 0; k < nq; k++) {
		struct qstate *q = &qs[k];
		/* the FIN needs a posted receive at the server like any Send:
		 * wait for a credit */
		double deadline = util_now_s() + 10;
		while (o->mode == MODE_BW && q->credits <= 0 && util_now_s() < deadline)
			if (take_acks(10, &reports))
				return 1;
		struct uw_send_wr fin = { .wr_id = UINT64_MAX - 1,
					  .opcode = UW_WR_SEND,
					  .send_flags = UW_SEND_SOLICITED | UW_SEND_SIGNALED };
		if (o->mode == MODE_LAT && post_ack_recv(q, UINT64_MAX))
			return fail("post receive", 0);
		if (uw_post_send(q->qp, &fin, NULL))
			return fail("FIN", 0);
	}
	/* give up only when reports stop coming: a thousand QPs under a
	 * sanitizer on a busy machine take their time */
	double deadline = util_now_s() + 30;
	int left = nq - reports;
	while (left && util_now_s() < deadline) {
		struct uw_wc wc[8];
		int n = uw_poll_cq(shared_cq, 8, wc);
		for (int i = 0; i < n; i++) {
			struct qstate *q = owner(&wc[i]);
			if (wc[i].status != UW_WC_SUCCESS)
				return wc_fail(&wc[i]);
			if (is_ack(&wc[i]) && on_ack(q, &wc[i], false)) {
				left--;
				deadline = util_now_s() + 30;
			}
		}
	}
	if (!left)
		return 0;
	/* say which, so that a run that fails once can be read afterwards */
	fprintf(stderr, "client: %d of %d QPs had no report from the server in 30 s:", left, nq);
	for (int k = 0, shown = 0; k < nq && shown < 4; k++)
		if (!qs[k].got_report) {
			fprintf(stderr, " [QP %d: %llu posted, %llu completed, %lld credits]", k,
				(unsigned long long)qs[k].posted,
				(unsigned long long)qs[k].completed, (long long)qs[k].credits);
			shown++;
		}
	fprintf(stderr, "\n");
	return fail("no report from the server", 0);
}

/* Bytes an operation moves: Immediate Data and atomics 8, whatever --size */
static double op_bytes(void)
{
	return o->op == OP_IMM || o->op == OP_ATOMIC ? 8.0 : (double)o->size;
}

static int run_bw(struct qstate *qs, int nq, double *elapsed)
{
	double t0 = util_now_s(), stop = o->seconds > 0 ? t0 + o->seconds : 0;
	bool more = true, flow = o->op == OP_SEND || o->op == OP_IMM;
	uint64_t busy_qps = (uint64_t)nq, done = 0;
	struct tool_interval iv;
	tool_interval_start(&iv, o->interval, t0, stdout);
	while (busy_qps) {
		double now = util_now_s();
		tool_interval_tick(&iv, now, done, (uint64_t)((double)done * op_bytes()), -1);
		if (stop && more && now >= stop)
			more = false;
		busy_qps = 0;
		for (int k = 0; k < nq; k++) {
			struct qstate *q = &qs[k];
			while (q->outstanding < (uint64_t)o->depth &&
			       (stop ? more : q->posted < o->iters) && (!flow || q->credits > 0)) {
				int rc = post_op(q, q->posted, 0);
				if (rc)
					return fail("post", rc);
				q->posted++;
				q->outstanding++;
				if (flow)
					q->credits--;
			}
			busy_qps += q->outstanding > 0 || (stop ? more : q->posted < o->iters);
		}
		struct uw_wc wc[64];
		int n = uw_poll_cq(shared_cq, 64, wc);
		if (n == 0 && busy_qps) {
			/* Sleep in the kernel rather than spin: on a small host the
			 * TCP stack needs the CPU this loop would burn. */
			uw_cq_wait(shared_cq, 1, 10);
			continue;
		}
		for (int i = 0; i < n; i++) {
			struct qstate *q = owner(&wc[i]);
			if (wc[i].status != UW_WC_SUCCESS)
				return wc_fail(&wc[i]);
			if (is_ack(&wc[i])) {
				q->credits += o->depth;
				post_ack_recv(q, UINT64_MAX);
				continue;
			}
			q->outstanding--;
			q->completed++;
			done++;
			completed(q, &wc[i]);
		}
	}
	tool_interval_finish(&iv, util_now_s(), done, (uint64_t)((double)done * op_bytes()), -1);
	*elapsed = util_now_s() - t0;
	return 0;
}

static int run_lat(struct qstate *q, double *elapsed)
{
	double t0 = util_now_s(), stop = o->seconds > 0 ? t0 + o->seconds : 0;
	q->cap_lat = o->iters ? o->iters : 1 << 20;
	q->lat = malloc(q->cap_lat * sizeof(double));
	struct tool_interval iv;
	double lat_sum = 0;
	tool_interval_start(&iv, o->interval, t0, stdout);
	for (uint64_t i = 0; stop ? util_now_s() < stop : i < o->iters; i++) {
		uint8_t mark = (uint8_t)(i % 255 + 1);
		bool echo = o->op == OP_SEND || o->op == OP_IMM;
		if (echo) {
			struct uw_sge s = { (uintptr_t)sink_slot(q, 0), (uint32_t)o->size,
					    q->mr->lkey };
			struct uw_recv_wr wr = { .wr_id = i,
						 .sg_list = &s,
						 .num_sge = o->size ? 1 : 0 };
			if (uw_post_recv(q->qp, &wr, NULL))
				return fail("post receive", 0);
		}
		double a = util_now_s();
		int rc = post_op(q, i, mark);
		if (rc)
			return fail("post", rc);
		bool sent = false, answered = !echo && o->op != OP_WRITE;
		struct perf_wait w = { .busy = !o->wait_adaptive };
		while (!sent || !answered) {
			struct uw_wc wc[4];
			int n = uw_poll_cq(q->cq, 4, wc);
			for (int k = 0; k < n; k++) {
				if (wc[k].status != UW_WC_SUCCESS)
					return wc_fail(&wc[k]);
				if (!is_ack(&wc[k])) {
					sent = true;
					completed(q, &wc[k]);
					continue;
				}
				if (wc[k].wr_id == UINT64_MAX) { /* a spare ack receive */
					post_ack_recv(q, UINT64_MAX);
					continue;
				}
				answered = true;
				if (o->verify && o->op == OP_SEND &&
				    perf_check(sink_slot(q, 0), o->size, i % q->slots) != o->size)
					q->errors++;
				if (o->verify && o->op == OP_IMM && wc[k].imm_data != i)
					q->errors++;
			}
			if (o->op == OP_WRITE && !answered &&
			    __atomic_load_n(&sink_slot(q, 0)[o->size - 1], __ATOMIC_ACQUIRE) ==
				    mark)
				answered = true;
			if (n || (sent && answered) || perf_wait_spin(&w))
				continue;
			/* The CPU is busy: sleep until something comes
			 * (perf_wait.c). A completion the runtime's wait brings;
			 * the server's Write into our buffer makes none. */
			if (o->op != OP_WRITE || !sent)
				uw_cq_wait(q->cq, 1, 100);
			else
				perf_wait_net(ctx, o->progress);
		}
		perf_wait_end(&w);
		double now = util_now_s(), us = (now - a) * 1e6;
		if (q->nlat < q->cap_lat)
			q->lat[q->nlat++] = us;
		q->posted++;
		q->completed++;
		lat_sum += us;
		tool_interval_tick(&iv, now, q->completed,
				   (uint64_t)((double)q->completed * op_bytes()), lat_sum);
	}
	tool_interval_finish(&iv, util_now_s(), q->completed,
			     (uint64_t)((double)q->completed * op_bytes()), lat_sum);
	*elapsed = util_now_s() - t0;
	return 0;
}

/* Read the written slots back: they must hold what we wrote. */
static int verify_writes(struct qstate *q)
{
	uint64_t n = q->posted < q->rslots ? q->posted : q->rslots;
	for (uint64_t j = 0; j < n; j++) {
		struct uw_sge s = { (uintptr_t)sink_slot(q, 0), (uint32_t)o->size, q->mr->lkey };
		struct uw_send_wr wr = { .wr_id = j,
					 .sg_list = &s,
					 .num_sge = o->size ? 1 : 0,
					 .opcode = UW_WR_RDMA_READ,
					 .send_flags = UW_SEND_SIGNALED,
					 .rdma = { q->raddr + j * o->size, q->rkey } };
		if (uw_post_send(q->qp, &wr, NULL))
			return fail("read back", 0);
		struct uw_wc wc;
		int got = 0;
		while (!got) {
			int k = uw_poll_cq(q->cq, 1, &wc);
			if (k == 1 && is_ack(&wc))
				continue;
			got = k;
		}
		if (wc.status != UW_WC_SUCCESS)
			return wc_fail(&wc);
		uint64_t expect = o->mode == MODE_LAT ? 1000 : j + 1000;
		uint64_t bad = perf_check(sink_slot(q, 0), o->size - (o->mode == MODE_LAT), expect);
		if (bad != o->size - (o->mode == MODE_LAT))
			q->errors++;
	}
	return 0;
}

/* Resident memory in KiB (from /proc/self/statm). */
static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (f) {
		if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
			rss = 0;
		fclose(f);
	}
	return rss * 4;
}

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

int perf_client(const struct perf_opts *opt)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	struct uw_context_attr ca = { .progress = opt->progress };
	char port[16];
	int rc = 0;

	o = opt;
	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->host, port, &hints, &ai))
		return fail("resolve the server", 0);
	ctx = uw_open(&ca);
	pd = ctx ? uw_alloc_pd(ctx) : NULL;
	ch = pd ? uw_cm_create_channel(ctx) : NULL;
	shared_cq = ch ? uw_create_cq(ctx, o->qps * (4 * o->depth + 64), NULL, NULL) : NULL;
	if (!shared_cq)
		return fail("context", errno);
	struct qstate *qs = calloc((size_t)o->qps, sizeof(*qs));
	long rss0 = rss_kib(), bufs = 0;
	for (int k = 0; k < o->qps && !rc; k++) {
		rc = connect_one(&qs[k], ai->ai_addr);
		bufs += (long)((2 * qs[k].half + 8 * (qs[k].slots + 8) + 4095) / 4096 * 4);
	}
	freeaddrinfo(ai);
	if (rc)
		return rc;
	/* what a connected QP costs, beyond the test's own data buffers */
	double rss_per_qp = (double)(rss_kib() - rss0 - bufs) / o->qps;

	double elapsed = 0, cpu0 = cpu_seconds();
	rc = o->mode == MODE_LAT ? run_lat(&qs[0], &elapsed) : run_bw(qs, o->qps, &elapsed);
	double cpu = cpu_seconds() - cpu0;
	uint64_t ops = 0, errors = 0;
	if (!rc && (o->op == OP_SEND || o->op == OP_IMM))
		rc = wait_reports(qs, o->qps);
	for (int k = 0; k < o->qps && !rc; k++) {
		struct qstate *q = &qs[k];
		if (o->verify && o->op == OP_WRITE)
			rc = verify_writes(q);
		if (o->verify && (o->op == OP_SEND || o->op == OP_IMM) &&
		    (q->reported != q->posted || q->report_errors))
			q->errors += q->report_errors + (q->reported != q->posted);
		ops += q->completed;
		errors += q->errors;
	}
	struct perf_result tcp = { 0 };
	if (!rc && o->tcp && perf_tcp_client(o, &tcp))
		rc = fail("TCP baseline", 0);
	if (rc)
		return rc;

	double bytes = (double)ops * op_bytes();
	double gbps = elapsed > 0 ? bytes * 8 / elapsed / 1e9 : 0;
	double p50 = 0, p99 = 0;
	if (o->mode == MODE_LAT) {
		p50 = tool_percentile(qs[0].lat, qs[0].nlat, 0.50);
		p99 = tool_percentile(qs[0].lat, qs[0].nlat, 0.99);
	}
	bool lat = o->mode == MODE_LAT;
	double ratio = o->tcp ? (lat ? (p50 > 0 ? tcp.lat_p50_us / p50 : 0)
				     : (tcp.gbps > 0 ? gbps / tcp.gbps : 0))
			      : 0;
	if (o->json) {
		printf("{\"op\":\"%s\",\"mode\":\"%s\",\"size\":%llu,\"iters\":%llu,\"qps\":%d,"
		       "\"depth\":%d,\"crc\":%s,\"markers_tx\":%s,\"markers_rx\":%s,"
		       "\"progress\":\"%s\","
		       "\"gbps\":%.3f,\"lat_us_p50\":%.2f,\"lat_us_p99\":%.2f,\"cpu_s\":%.3f,"
		       "\"verified\":%s,\"errors\":%llu,\"rss_kib_per_qp\":%.1f",
		       perf_op_name(o->op), lat ? "lat" : "bw", (unsigned long long)o->size,
		       (unsigned long long)ops, o->qps, o->depth, qs[0].crc ? "true" : "false",
		       qs[0].markers_tx ? "true" : "false", qs[0].markers_rx ? "true" : "false",
		       o->progress == UW_PROGRESS_AUTO ? "auto" : "manual", gbps, p50, p99, cpu,
		       o->verify ? "true" : "false", (unsigned long long)errors, rss_per_qp);
		if (o->tcp)
			printf(",\"tcp_gbps\":%.3f,\"tcp_lat_us_p50\":%.2f,\"tcp_lat_us_p99\":%.2f,"
			       "\"ratio\":%.3f",
			       tcp.gbps, tcp.lat_p50_us, tcp.lat_p99_us, ratio);
		printf("}\n");
	} else {
		printf("%-7s %-4s %10s %9s %10s %10s %10s", "op", "mode", "size", "iters", "Gb/s",
		       "p50 us", "p99 us");
		if (o->tcp)
			printf(" %10s %10s %7s", "TCP Gb/s", "TCP p50", "ratio");
		printf("\n%-7s %-4s %10llu %9llu %10.3f", perf_op_name(o->op), lat ? "lat" : "bw",
		       (unsigned long long)o->size, (unsigned long long)ops, gbps);
		/* a bandwidth run times no single operation: no latency */
		if (lat)
			printf(" %10.2f %10.2f", p50, p99);
		else
			printf(" %10s %10s", "-", "-");
		if (o->tcp && lat)
			printf(" %10.3f %10.2f %7.3f", tcp.gbps, tcp.lat_p50_us, ratio);
		else if (o->tcp)
			printf(" %10.3f %10s %7.3f", tcp.gbps, "-", ratio);
		printf("\n%s\n", errors ? "VERIFICATION FAILED" : o->verify ? "data verified" : "");
	}
	fflush(stdout);
	for (int k = 0; k < o->qps; k++) {
		struct qstate *q = &qs[k];
		uw_cm_disconnect(q->id);
	}
	/* each QP reports its DISCONNECTED once the close is done */
	int left = o->qps;
	double give_up = util_now_s() + 5;
	while (left > 0 && util_now_s() < give_up) {
		struct uw_cm_event *e;
		if (uw_cm_get_event_timeout(ch, &e, 100))
			continue;
		left -= e->event == UW_CM_EVENT_DISCONNECTED;
		uw_cm_ack_event(e);
	}
	for (int k = 0; k < o->qps; k++) {
		struct qstate *q = &qs[k];
		uw_destroy_qp(q->qp);
		uw_cm_destroy_id(q->id);
		uw_dereg_mr(q->mr);
		free(q->buf);
		free(q->lat);
	}
	free(qs);
	uw_destroy_cq(shared_cq);
	uw_cm_destroy_channel(ch);
	uw_dealloc_pd(pd);
	uw_close(ctx);
	return errors ? 3 : 0;
}
