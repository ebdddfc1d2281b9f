/*
 * test_ibv_objects: a program written to rdma-core's <infiniband/verbs.h>
 * and linked against Debian's libibverbs, run by ctest under uwarp-run:
 * what it finds is uwarp's library, and each call keeps rdma-core's
 * promise (the device and its attributes, PDs and MRs, CQs with
 * completion channels a poll() sees, RC QPs through their states, every
 * posted request completed once, rdma-core's inline calls reaching the
 * device through its ops tables, and what uwarp has not failing with
 * EOPNOTSUPP, never a crash or a silent success).
 *
 * Data between two connected QPs needs the connection manager
 * (librdmacm); here a QP is flushed, which completes what was posted.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

struct env {
	struct ibv_device **list;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
};

static int setup(void **state)
{
	static struct env e;
	int n = 0;
	e.list = ibv_get_device_list(&n);
	if (!e.list || n < 1)
		return -1;
	e.ctx = ibv_open_device(e.list[0]);
	if (!e.ctx)
		return -1;
	e.pd = ibv_alloc_pd(e.ctx);
	*state = &e;
	return e.pd ? 0 : -1;
}

static int teardown(void **state)
{
	struct env *e = *state;
	ibv_dealloc_pd(e->pd);
	ibv_close_device(e->ctx);
	ibv_free_device_list(e->list);
	return 0;
}

/* uwarp-run puts uwarp's library first: one device, an iWARP RNIC. */
static void the_device_is_uwarp0_an_iwarp_rnic(void **state)
{
	int n = 0;
	struct ibv_device **l = ibv_get_device_list(&n);
	assert_non_null(l);
	assert_int_equal(n, 1);
	assert_null(l[1]);
	assert_string_equal(ibv_get_device_name(l[0]), "uwarp0");
	assert_int_equal(l[0]->node_type, IBV_NODE_RNIC);
	assert_int_equal(l[0]->transport_type, IBV_TRANSPORT_IWARP);
	assert_int_not_equal(ibv_get_device_guid(l[0]), 0);
	assert_string_equal(ibv_node_type_str(l[0]->node_type), "iWARP NIC");
	ibv_free_device_list(l);
}

static void device_and_port_attributes(void **state)
{
	struct env *e = *state;
	struct ibv_device_attr a;
	assert_int_equal(ibv_query_device(e->ctx, &a), 0);
	assert_int_equal(a.phys_port_cnt, 1);
	assert_int_equal(a.max_sge, 16);
	assert_true(a.max_qp_wr >= 1024);
	assert_int_equal(a.node_guid, ibv_get_device_guid(e->ctx->device));
	/* the extended query goes through the verbs_context's op */
	struct ibv_device_attr_ex x;
	assert_int_equal(ibv_query_device_ex(e->ctx, NULL, &x), 0);
	assert_int_equal(x.orig_attr.max_sge, 16);
	assert_int_equal(x.phys_port_cnt_ex, 1);
	/* ibv_query_port is rdma-core's inline: the verbs_context's op */
	struct ibv_port_attr p;
	memset(&p, 0xa5, sizeof(p));
	assert_int_equal(ibv_query_port(e->ctx, 1, &p), 0);
	assert_int_equal(p.state, IBV_PORT_ACTIVE);
	assert_int_equal(p.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(p.flags, 0);
	assert_true(p.gid_tbl_len >= 2);
	assert_int_not_equal(ibv_query_port(e->ctx, 2, &p), 0);
	/* the GID table holds the host's addresses: 127.0.0.1 is one */
	int found = 0;
	for (int i = 0; i < p.gid_tbl_len; i++) {
		union ibv_gid g;
		assert_int_equal(ibv_query_gid(e->ctx, 1, i, &g), 0);
		static const uint8_t lo[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
		found |= memcmp(g.raw, lo, 16) == 0;
	}
	assert_true(found);
	union ibv_gid g;
	assert_int_equal(ibv_query_gid(e->ctx, 1, p.gid_tbl_len, &g), -1);
	struct ibv_gid_entry ge;
	assert_int_equal(ibv_query_gid_ex(e->ctx, 1, 0, &ge, 0), 0);
	assert_int_equal(ibv_query_gid_ex(e->ctx, 1, (uint32_t)p.gid_tbl_len, &ge, 0), ENODATA);
	__be16 pkey;
	assert_int_equal(ibv_query_pkey(e->ctx, 1, 0, &pkey), 0);
	assert_int_equal(pkey, 0xffff);
}

static void memory_regions_and_their_access_flags(void **state)
{
	struct env *e = *state;
	static char buf[4096];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
					       IBV_ACCESS_REMOTE_READ);
	assert_non_null(mr);
	assert_ptr_equal(mr->addr, buf);
	assert_int_equal(mr->length, sizeof(buf));
	assert_ptr_equal(mr->pd, e->pd);
	assert_int_not_equal(mr->rkey, 0);
	/* remote write without local write is refused, as rdma-core's devices do */
	errno = 0;
	assert_null(ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_REMOTE_WRITE));
	assert_int_equal(errno, EINVAL);
	/* a mandatory flag uwarp has not (below IBV_ACCESS_OPTIONAL_FIRST: a
	 * later rdma-core's flush rights): refused, not ignored */
	errno = 0;
	assert_null(ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | (1 << 8)));
	assert_int_equal(errno, EOPNOTSUPP);
	/* zero-based and iova regions (the data: test_rdma_cm) */
	struct ibv_mr *z =
		ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ZERO_BASED);
	assert_non_null(z);
	assert_ptr_equal(z->addr, buf);
	assert_int_equal(ibv_dereg_mr(z), 0);
	z = ibv_reg_mr_iova2(e->pd, buf, sizeof(buf), 0x1000, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(z);
	assert_int_equal(ibv_dereg_mr(z), 0);
	errno = 0; /* [iova, iova + length) may not wrap */
	assert_null(
		ibv_reg_mr_iova2(e->pd, buf, sizeof(buf), UINT64_MAX - 10, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EINVAL);
	/* an optional one (relaxed ordering) is a hint: taken through
	 * ibv_reg_mr_iova2, as rdma-core's inline ibv_reg_mr routes it */
	struct ibv_mr *ro = ibv_reg_mr(e->pd, buf, sizeof(buf),
				       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_RELAXED_ORDERING);
	assert_non_null(ro);
	assert_int_equal(ibv_dereg_mr(ro), 0);
	/* a PD with a region is busy */
	struct ibv_pd *pd2 = ibv_alloc_pd(e->ctx);
	struct ibv_mr *mr2 = ibv_reg_mr(pd2, buf, 64, IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr2);
	assert_int_equal(ibv_dealloc_pd(pd2), EBUSY);
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

/* Memory windows through rdma-core's inline calls (the data through
 * them: test_rdma_cm): both types, an STag each from the start (a type 2
 * window's next rkey is ibv_inc_rkey of it), the device saying it has
 * them, a window keeping its PD busy, ibv_bind_mw's own checks, and what
 * a bind may not ask. */
static void memory_windows_both_types(void **state)
{
	struct env *e = *state;
	struct ibv_device_attr da;
	assert_int_equal(ibv_query_device(e->ctx, &da), 0);
	assert_true(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	assert_true(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	assert_true(da.max_mw > 0);
	struct ibv_pd *pd = ibv_alloc_pd(e->ctx);
	struct ibv_mw *w1 = ibv_alloc_mw(pd, IBV_MW_TYPE_1);
	struct ibv_mw *w2 = ibv_alloc_mw(pd, IBV_MW_TYPE_2);
	assert_non_null(w1);
	assert_non_null(w2);
	assert_int_equal(w1->type, IBV_MW_TYPE_1);
	assert_int_equal(w2->type, IBV_MW_TYPE_2);
	assert_ptr_equal(w2->pd, pd);
	assert_int_not_equal(w2->rkey >> 8, 0);
	assert_int_not_equal(w1->rkey >> 8, w2->rkey >> 8);
	errno = 0;
	assert_null(ibv_alloc_mw(pd, (enum ibv_mw_type)7));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(ibv_dealloc_pd(pd), EBUSY);

	/* rdma-core's own checks in ibv_bind_mw, before uwarp's op: a type
	 * 2 window, an address without a region, another PD's region */
	static char buf[4096];
	struct ibv_mr *other =
		ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	struct ibv_mw_bind b = { .wr_id = 1, .bind_info = { .addr = 8, .length = 8 } };
	assert_int_equal(ibv_bind_mw(NULL, w2, &b), EINVAL);
	assert_int_equal(ibv_bind_mw(NULL, w1, &b), EINVAL);
	b.bind_info.mr = other;
	assert_int_equal(ibv_bind_mw(NULL, w1, &b), EPERM);
	assert_int_equal(ibv_dereg_mr(other), 0);

	assert_int_equal(ibv_dealloc_mw(w1), 0);
	assert_int_equal(ibv_dealloc_mw(w2), 0);
	assert_int_equal(ibv_dealloc_pd(pd), 0);
}

static void on_alarm(int sig) { (void)sig; }

/* SIGALRM in 50 ms, its handler installed without SA_RESTART (so a
 * blocking call it interrupts ends with EINTR); *old to restore */
static void alarm_soon(struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_alarm };
	sigaction(SIGALRM, &sa, old);
	struct itimerval it = { .it_value = { .tv_usec = 50000 } };
	setitimer(ITIMER_REAL, &it, NULL);
}

/* Posted receives complete once each, flushed, when the QP goes to ERR;
 * the armed CQ makes the channel's descriptor readable and
 * ibv_get_cq_event names the CQ and its context. */
static void a_flushed_qp_completes_each_receive_once_through_the_channel(void **state)
{
	struct env *e = *state;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	assert_non_null(ch);
	int tag;
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 16, &tag, ch, 0);
	assert_non_null(cq);
	assert_true(cq->cqe >= 16);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	struct ibv_qp_init_attr ia = {
		.qp_context = &tag,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2, .max_recv_sge = 2 },
		.qp_type = IBV_QPT_RC,
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(qp);
	assert_int_not_equal(qp->qp_num, 0);
	assert_ptr_equal(qp->qp_context, &tag);
	/* rdma-core's RESET -> INIT is harmless on a QP already in INIT */
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_INIT,
				  .qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
				  .port_num = 1 };
	assert_int_equal(
		ibv_modify_qp(qp, &at,
			      IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PORT | IBV_QP_PKEY_INDEX),
		0);
	/* RTR is the connection manager's: refused while unconnected */
	at.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE), EINVAL);
	struct ibv_qp_attr q;
	struct ibv_qp_init_attr qi;
	assert_int_equal(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_CAP, &qi), 0);
	assert_int_equal(q.qp_state, IBV_QPS_INIT);
	assert_int_equal(q.qp_access_flags, IBV_ACCESS_REMOTE_WRITE);
	assert_int_equal(qi.cap.max_recv_wr, 8);
	assert_int_equal(qi.qp_type, IBV_QPT_RC);

	static char buf[256];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge[3];
	struct ibv_recv_wr r[3], *bad = NULL;
	for (int i = 0; i < 3; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)buf + 64 * (unsigned)i, 64, mr->lkey };
		r[i] = (struct ibv_recv_wr){ .wr_id = 100 + (unsigned)i,
					     .next = i < 2 ? &r[i + 1] : NULL,
					     .sg_list = &sge[i],
					     .num_sge = 1 };
	}
	/* ibv_post_recv is rdma-core's inline: context->ops.post_recv */
	assert_int_equal(ibv_post_recv(qp, r, &bad), 0);
	/* a send uwarp has not: refused, bad_wr names it, nothing posted */
	struct ibv_send_wr s = { .wr_id = 7,
				 .sg_list = sge,
				 .num_sge = 1,
				 .opcode = IBV_WR_SEND_WITH_IMM,
				 .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *sbad = NULL;
	assert_int_equal(ibv_post_send(qp, &s, &sbad), EINVAL);
	assert_ptr_equal(sbad, &s);

	struct ibv_wc wc[8];
	assert_int_equal(ibv_poll_cq(cq, 8, wc), 0);
	assert_int_equal(ibv_req_notify_cq(cq, 0), 0);
	at.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE), 0);
	assert_int_equal(qp->state, IBV_QPS_ERR);

	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 10000), 1);
	struct ibv_cq *ev_cq = NULL;
	void *ev_ctx = NULL;
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, cq);
	assert_ptr_equal(ev_ctx, &tag);
	ibv_ack_cq_events(cq, 1);
	assert_int_equal(cq->comp_events_completed, 1);

	int got = 0;
	for (int tries = 0; got < 3 && tries < 1000; tries++) {
		int n = ibv_poll_cq(cq, 8, wc + got);
		assert_true(n >= 0);
		got += n;
	}
	assert_int_equal(got, 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].wr_id, 100 + (unsigned)i);
		assert_int_equal(wc[i].status, IBV_WC_WR_FLUSH_ERR);
		assert_int_equal(wc[i].opcode, IBV_WC_RECV);
		assert_int_equal(wc[i].qp_num, qp->qp_num);
	}
	assert_int_equal(ibv_poll_cq(cq, 8, wc), 0);
	assert_string_equal(ibv_wc_status_str(wc[0].status), "Work Request Flushed Error");

	/* a signal ends a blocking wait with EINTR, as rdma-core's read()
	 * does (qperf ends its timed tests with SIGALRM) */
	struct sigaction old;
	alarm_soon(&old);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	assert_int_equal(errno, EINTR);
	sigaction(SIGALRM, &old, NULL);

	/* a non-blocking channel (O_NONBLOCK on its descriptor) says EAGAIN */
	int fl = fcntl(ch->fd, F_GETFL);
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), -1);
	assert_int_equal(errno, EAGAIN);

	/* completions a QP leaves in its CQ go with it when it is destroyed,
	 * as rdma-core's providers clean the CQ (libfabric's verbs provider
	 * reports them itself, and would be handed them twice) */
	assert_int_equal(fcntl(ch->fd, F_SETFL, fl), 0);
	struct ibv_recv_wr late = { .wr_id = 200, .sg_list = sge, .num_sge = 1 };
	assert_int_equal(ibv_post_recv(qp, &late, &bad), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_poll_cq(cq, 8, wc), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

static void a_shared_receive_queue_takes_receives(void **state)
{
	struct env *e = *state;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(e->pd, &sa);
	assert_non_null(srq);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	assert_int_equal(ibv_post_srq_recv(srq, &r, &bad), 0);
	struct ibv_srq_attr at;
	assert_int_equal(ibv_query_srq(srq, &at), 0);
	assert_int_equal(at.max_wr, 4);
	/* the limit is armed and reads back (its event: test_verbs) */
	at.srq_limit = 5;
	assert_int_equal(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), EINVAL); /* above max_wr */
	at.srq_limit = 1;
	assert_int_equal(ibv_modify_srq(srq, &at, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ibv_query_srq(srq, &at), 0);
	assert_int_equal(at.srq_limit, 1);
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = cq,
				       .recv_cq = cq,
				       .srq = srq,
				       .cap = { .max_send_wr = 2 },
				       .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(qp);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	/* a QP of an SRQ that goes to ERR: the last WQE it takes, on the
	 * context's asynchronous descriptor */
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	struct pollfd pfd = { .fd = e->ctx->async_fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	struct ibv_async_event ev;
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_LAST_WQE_REACHED);
	assert_ptr_equal(ev.element.qp, qp);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* The asynchronous event descriptor: a CQ too small for the flushed
 * receives of its QP overflows (IBV_EVENT_CQ_ERR, the CQ named); the
 * descriptor is readable exactly while an event waits; O_NONBLOCK on it
 * makes ibv_get_async_event EAGAIN; a signal ends a blocking wait. */
static void async_events_come_through_the_descriptor(void **state)
{
	struct env *e = *state;
	struct pollfd pfd = { .fd = e->ctx->async_fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 0), 0);
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 2, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 4, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(qp);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	for (int i = 0; i < 4; i++)
		assert_int_equal(ibv_post_recv(qp, &r, &bad), 0);
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_ERR };
	assert_int_equal(ibv_modify_qp(qp, &qa, IBV_QP_STATE), 0);
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	struct ibv_async_event ev;
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_CQ_ERR);
	assert_ptr_equal(ev.element.cq, cq);
	ibv_ack_async_event(&ev);
	assert_int_equal(poll(&pfd, 1, 0), 0);

	int fl = fcntl(e->ctx->async_fd, F_GETFL);
	assert_int_equal(fcntl(e->ctx->async_fd, F_SETFL, fl | O_NONBLOCK), 0);
	errno = 0;
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(e->ctx->async_fd, F_SETFL, fl), 0);
	struct sigaction old;
	alarm_soon(&old);
	errno = 0;
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), -1);
	assert_int_equal(errno, EINTR);
	sigaction(SIGALRM, &old, NULL);

	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
}

/* What uwarp has not fails with rdma-core's errno, never silently. */
static void what_iwarp_has_not_fails_cleanly(void **state)
{
	struct env *e = *state;
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	struct ibv_qp_init_attr ud = { .send_cq = cq,
				       .recv_cq = cq,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1 },
				       .qp_type = IBV_QPT_UD };
	errno = 0;
	assert_null(ibv_create_qp(e->pd, &ud));
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_ah_attr ah = { .port_num = 1 };
	errno = 0;
	assert_null(ibv_create_ah(e->pd, &ah));
	assert_int_equal(errno, EOPNOTSUPP);
	union ibv_gid g = { 0 };
	assert_int_equal(ibv_attach_mcast(NULL, &g, 0), EOPNOTSUPP);
	/* rdma-core's inline calls find no op and say so */
	struct ibv_cq_init_attr_ex cx = { .cqe = 4 };
	errno = 0;
	assert_null(ibv_create_cq_ex(e->ctx, &cx));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_device(3));
	assert_int_equal(errno, EOPNOTSUPP);
	/* every other call README names as not implemented: EOPNOTSUPP (or
	 * rdma-core's own answer for an op a device leaves empty) */
	assert_int_equal(ibv_destroy_ah(NULL), EOPNOTSUPP);
	assert_int_equal(ibv_detach_mcast(NULL, &g, 0), EOPNOTSUPP);
	struct ibv_wc wc = { 0 };
	errno = 0;
	assert_null(ibv_create_ah_from_wc(e->pd, &wc, NULL, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_init_ah_from_wc(e->ctx, 1, &wc, NULL, &ah), EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_pd(e->ctx, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_mr(e->pd, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_null(ibv_import_dm(e->ctx, 1));
	assert_int_equal(errno, EOPNOTSUPP);
	ibv_unimport_pd(NULL); /* nothing was imported: nothing to do */
	ibv_unimport_mr(NULL);
	errno = 0;
	assert_null(ibv_reg_dmabuf_mr(e->pd, 0, 4096, 0, -1, IBV_ACCESS_LOCAL_WRITE));
	assert_int_equal(errno, EOPNOTSUPP);
	static char buf[64];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	errno = 0;
	assert_int_equal(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ),
			 IBV_REREG_MR_ERR_CMD);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(ibv_dereg_mr(mr), 0); /* unchanged, still ours */
	struct ibv_qp_init_attr rc = { .send_cq = cq,
				       .recv_cq = cq,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1 },
				       .qp_type = IBV_QPT_RC };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &rc);
	assert_non_null(qp);
	errno = 0;
	assert_null(ibv_qp_to_qp_ex(qp));
	assert_int_equal(errno, EOPNOTSUPP);
	struct ibv_ece ece = { 0 };
	assert_int_equal(ibv_query_ece(qp, &ece), EOPNOTSUPP);
	assert_int_equal(ibv_set_ece(qp, &ece), EOPNOTSUPP);
	struct ibv_flow_attr flow = { .size = sizeof(flow), .port = 1 };
	errno = 0;
	assert_null(ibv_create_flow(qp, &flow));
	assert_true(errno == EOPNOTSUPP || errno == ENOSYS);
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct ibv_srq *srq = ibv_create_srq(e->pd, &sa);
	assert_non_null(srq);
	struct ibv_srq_attr grow = { .max_wr = 8 };
	assert_int_equal(ibv_modify_srq(srq, &grow, IBV_SRQ_MAX_WR), EOPNOTSUPP);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	/* (implemented: a CQ grows) */
	assert_int_equal(ibv_resize_cq(cq, 64), 0);
	assert_true(cq->cqe >= 64);
	assert_int_equal(ibv_destroy_cq(cq), 0);
	/* bad arguments get an errno, not a crash */
	assert_null(ibv_open_device(NULL));
	assert_null(ibv_create_cq(e->ctx, 0, NULL, NULL, 0));
	assert_null(ibv_create_cq(e->ctx, 4, NULL, NULL, 5));
}

/* Counts the yields of the whole process: the executable exports it
 * (tests/CMakeLists.txt), so it stands in for libc's in uwarp's library. */
static int yields;

__attribute__((visibility("default"))) int sched_yield(void)
{
	__atomic_add_fetch(&yields, 1, __ATOMIC_RELAXED);
	return 0;
}

/* An empty poll gives up the CPU (it has already moved what the network
 * had; a spinning program held the core its peer or uwarp's engine thread
 * needed: runtime/uw_cq.c); a poll that finds completions does not */
static void an_empty_poll_yields_the_cpu(void **state)
{
	struct env *e = *state;
	struct ibv_cq *cq = ibv_create_cq(e->ctx, 4, NULL, NULL, 0);
	assert_non_null(cq);
	struct ibv_wc wc;
	int before = __atomic_load_n(&yields, __ATOMIC_RELAXED);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	assert_int_equal(ibv_poll_cq(cq, 1, &wc), 0);
	assert_true(__atomic_load_n(&yields, __ATOMIC_RELAXED) - before >= 2);
	/* a receive flushed by the move to ERR: found, no yield for it */
	struct ibv_qp_init_attr ia = {
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { .max_send_wr = 1, .max_recv_wr = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);
	assert_non_null(qp);
	static char buf[16];
	struct ibv_mr *mr = ibv_reg_mr(e->pd, buf, sizeof(buf), IBV_ACCESS_LOCAL_WRITE);
	struct ibv_sge sge = { (uintptr_t)buf, sizeof(buf), mr->lkey };
	struct ibv_recv_wr r = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 }, *bad;
	assert_int_equal(ibv_post_recv(qp, &r, &bad), 0);
	struct ibv_qp_attr at = { .qp_state = IBV_QPS_ERR };
	assert_int_equal(ibv_modify_qp(qp, &at, IBV_QP_STATE), 0);
	int n = 0;
	for (int tries = 0; !n && tries < 100000; tries++) {
		before = __atomic_load_n(&yields, __ATOMIC_RELAXED);
		n = ibv_poll_cq(cq, 1, &wc);
	}
	assert_int_equal(n, 1);
	assert_int_equal(__atomic_load_n(&yields, __ATOMIC_RELAXED), before);
	assert_int_equal(ibv_destroy_qp(qp), 0);
	assert_int_equal(ibv_dereg_mr(mr), 0);
	assert_int_equal(ibv_destroy_cq(cq), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(the_device_is_uwarp0_an_iwarp_rnic),
		cmocka_unit_test(device_and_port_attributes),
		cmocka_unit_test(memory_regions_and_their_access_flags),
		cmocka_unit_test(memory_windows_both_types),
		cmocka_unit_test(a_flushed_qp_completes_each_receive_once_through_the_channel),
		cmocka_unit_test(a_shared_receive_queue_takes_receives),
		cmocka_unit_test(async_events_come_through_the_descriptor),
		cmocka_unit_test(what_iwarp_has_not_fails_cleanly),
		cmocka_unit_test(an_empty_poll_yields_the_cpu),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
