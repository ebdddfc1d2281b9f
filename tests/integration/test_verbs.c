/*
 * test_verbs.c: the verbs semantics between two contexts over loopback
 * (each with its engine thread): memory windows and their revocation,
 * access errors and the Terminate codes each side sees, shared receive
 * queues, atomics, Write with Immediate, solicited events, unsignalled
 * sends, completion channels in epoll and in a libuv loop, threshold
 * waits, QP state transitions, peer-to-peer mode with each RTR type, and
 * Read Requests held to the negotiated ORD.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <cmocka.h>
#include <uv.h>
#include <uwarp/verbs.h>
#include <uwarp/wire.h>

#include "ss_tos.h"

#define BUF 65536

struct end {
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq;
	struct uw_comp_channel *cc;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;  /* the client's, or the server's accepted one */
	struct uw_cm_id *lid; /* the server's listener */
	struct uw_qp *qp;
	struct uw_mr *mr;
	uint8_t *buf;
};

struct pair {
	struct end s, c;
	struct uw_srq *srq;     /* the server's QP takes receives from it, if set */
	struct uw_cm_event req; /* the CONNECT_REQUEST as the server saw it */
	char req_pdata[64];
};

static void end_open(struct end *e, int mr_access, bool channel)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	memset(e, 0, sizeof(*e));
	e->ctx = uw_open(&ca);
	assert_non_null(e->ctx);
	e->pd = uw_alloc_pd(e->ctx);
	if (channel)
		e->cc = uw_create_comp_channel(e->ctx);
	e->cq = uw_create_cq(e->ctx, 256, NULL, e->cc);
	e->ch = uw_cm_create_channel(e->ctx);
	e->buf = aligned_alloc(4096, BUF);
	memset(e->buf, 0, BUF);
	e->mr = uw_reg_mr(e->pd, e->buf, BUF, mr_access);
	assert_non_null(e->mr);
}

static struct uw_cm_event *expect_event(struct uw_cm_channel *ch, enum uw_cm_event_type t)
{
	struct uw_cm_event *e = NULL;
	assert_int_equal(uw_cm_get_event_timeout(ch, &e, 5000), 0);
	if (e->event != t)
		fail_msg("event %s, wanted %s (status %d)", uw_cm_event_str(e->event),
			 uw_cm_event_str(t), e->status);
	return e;
}

/* The server listens, the client connects with @cp, the server accepts
 * with @sp after posting @nrecv receives of 1 KiB (into its buffer). */
static void pair_connect(struct pair *p, const struct uw_conn_param *cp,
			 const struct uw_conn_param *sp, int nrecv, int sq_sig_all)
{
	struct end *s = &p->s, *c = &p->c;
	s->lid = uw_cm_create_id(s->ch, NULL);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uw_cm_listen(s->lid, (struct sockaddr *)&a, 8), 0);
	a.sin_port = ((struct sockaddr_in *)&s->lid->local_addr)->sin_port;
	c->id = uw_cm_create_id(c->ch, NULL);
	struct uw_qp_init_attr ca = { .send_cq = c->cq,
				      .recv_cq = c->cq,
				      .cap = { 64, 64, 4, 4, 64 },
				      .sq_sig_all = sq_sig_all };
	c->qp = uw_cm_create_qp(c->id, c->pd, &ca);
	assert_non_null(c->qp);
	assert_int_equal(uw_cm_connect(c->id, (struct sockaddr *)&a, cp), 0);
	struct uw_cm_event *e = expect_event(s->ch, UW_CM_EVENT_CONNECT_REQUEST);
	s->id = e->id;
	p->req = *e;
	if (e->private_data_len <= sizeof(p->req_pdata))
		memcpy(p->req_pdata, e->private_data, e->private_data_len);
	p->req.private_data = p->req_pdata;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr sa = {
		.send_cq = s->cq, .recv_cq = s->cq, .srq = p->srq, .cap = { 64, 64, 4, 4, 64 }
	};
	s->qp = uw_cm_create_qp(s->id, s->pd, &sa);
	assert_non_null(s->qp);
	for (int i = 0; i < nrecv; i++) {
		struct uw_sge g = { (uintptr_t)(s->buf + i * 1024), 1024, s->mr->lkey };
		struct uw_recv_wr r = { .wr_id = 100 + (uint64_t)i, .sg_list = &g, .num_sge = 1 };
		assert_int_equal(uw_post_recv(s->qp, &r, NULL), 0);
	}
	assert_int_equal(uw_cm_accept(s->id, sp), 0);
	uw_cm_ack_event(expect_event(c->ch, UW_CM_EVENT_ESTABLISHED));
	uw_cm_ack_event(expect_event(s->ch, UW_CM_EVENT_ESTABLISHED));
}

static void pair_open(struct pair *p, int server_access)
{
	memset(p, 0, sizeof(*p));
	end_open(&p->s, server_access, true);
	end_open(&p->c, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ,
		 false);
}

static void end_close(struct end *e)
{
	struct uw_wc wc[64];
	if (e->id)
		uw_cm_destroy_id(e->id);
	if (e->lid)
		assert_int_equal(uw_cm_destroy_id(e->lid), 0);
	if (e->qp)
		assert_int_equal(uw_destroy_qp(e->qp), 0);
	while (uw_poll_cq(e->cq, 64, wc) > 0)
		;
	struct uw_cm_event *ev;
	while (!uw_cm_get_event_timeout(e->ch, &ev, 0))
		uw_cm_ack_event(ev);
	assert_int_equal(uw_dereg_mr(e->mr), 0);
	assert_int_equal(uw_destroy_cq(e->cq), 0);
	if (e->cc) {
		struct uw_cq *cq;
		uw_comp_channel_nonblock(e->cc, 1);
		while (!uw_get_cq_event(e->cc, &cq, NULL))
			uw_ack_cq_events(cq, 1);
		assert_int_equal(uw_destroy_comp_channel(e->cc), 0);
	}
	assert_int_equal(uw_cm_destroy_channel(e->ch), 0);
	assert_int_equal(uw_dealloc_pd(e->pd), 0);
	assert_int_equal(uw_close(e->ctx), 0);
	free(e->buf);
}

static void pair_close(struct pair *p)
{
	end_close(&p->c);
	if (p->srq) {
		uw_destroy_qp(p->s.qp);
		p->s.qp = NULL;
		assert_int_equal(uw_destroy_srq(p->srq), 0);
	}
	end_close(&p->s);
}

/* One completion from @cq within 5 s. */
static struct uw_wc wait_wc(struct uw_cq *cq)
{
	struct uw_wc wc;
	assert_true(uw_cq_wait(cq, 1, 5000) >= 1);
	assert_int_equal(uw_poll_cq(cq, 1, &wc), 1);
	return wc;
}

static int post(struct uw_qp *qp, enum uw_wr_opcode op, uint64_t wr_id, void *addr, uint32_t len,
		uint32_t lkey, uint64_t raddr, uint32_t rkey, int flags)
{
	struct uw_sge g = { (uintptr_t)addr, len, lkey };
	struct uw_send_wr wr = { .wr_id = wr_id,
				 .sg_list = &g,
				 .num_sge = len ? 1 : 0,
				 .opcode = op,
				 .send_flags = flags,
				 .rdma = { raddr, rkey } };
	if (op == UW_WR_SEND_WITH_INV)
		wr.invalidate_rkey = rkey;
	return uw_post_send(qp, &wr, NULL);
}

/* The client's connection ends by the server's Terminate: its codes. */
static void expect_terminated(struct pair *p, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	struct uw_cm_event *e = expect_event(p->c.ch, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->terminated, 1);
	assert_int_equal(e->term_remote, 1);
	assert_int_equal(e->term_layer, layer);
	assert_int_equal(e->term_etype, etype);
	assert_int_equal(e->term_ecode, ecode);
	uw_cm_ack_event(e);
}

/* A window over [4096, 8192) of a region peers cannot reach directly. */
static struct uw_mw *window(struct pair *p, int access)
{
	struct uw_mw *mw = uw_alloc_mw(p->s.pd);
	assert_non_null(mw);
	assert_int_equal(uw_bind_mw(mw, p->s.qp, p->s.mr, p->s.buf + 4096, 4096, access), 0);
	assert_int_not_equal(mw->rkey, p->s.mr->rkey);
	return mw;
}

static void memory_windows_grant_a_sub_range_and_die_when_invalidated(void **state)
{
	struct pair p;
	const int region = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_MW_BIND;
	uint64_t base;

	/* inside the window: Write and Read work; Send with Invalidate
	 * revokes it and says so at the receiver; a Write then fails */
	pair_open(&p, region);
	base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 2, 0);
	struct uw_mw *mw = window(&p, UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ);
	memcpy(p.c.buf, "through the window", 19);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 19, p.c.mr->lkey,
			      base + 4096 + 100, mw->rkey, UW_SEND_SIGNALED),
			 0);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_READ, 2, p.c.buf + 1000, 19, p.c.mr->lkey,
			      base + 4096 + 100, mw->rkey, UW_SEND_SIGNALED),
			 0);
	assert_int_equal(wait_wc(p.c.cq).status, UW_WC_SUCCESS);
	struct uw_wc wc = wait_wc(p.c.cq);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.opcode, UW_WC_RDMA_READ);
	assert_memory_equal(p.c.buf + 1000, "through the window", 19);
	assert_memory_equal(p.s.buf + 4096 + 100, "through the window", 19);
	assert_int_equal(post(p.c.qp, UW_WR_SEND_WITH_INV, 3, p.c.buf, 4, p.c.mr->lkey, 0, mw->rkey,
			      UW_SEND_SIGNALED),
			 0);
	assert_int_equal(wait_wc(p.c.cq).status, UW_WC_SUCCESS);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_true(wc.wc_flags & UW_WC_WITH_INV);
	assert_int_equal(wc.invalidated_rkey, mw->rkey);
	/* a Read of the dead window fails with the responder's reason */
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_READ, 4, p.c.buf, 8, p.c.mr->lkey, base + 4096,
			      mw->rkey, UW_SEND_SIGNALED),
			 0);
	wc = wait_wc(p.c.cq);
	assert_int_equal(wc.wr_id, 4);
	assert_int_equal(wc.status, UW_WC_REM_ACCESS_ERR);
	assert_int_equal(wc.term_layer, UW_TERM_LAYER_RDMAP);
	assert_int_equal(wc.term_etype, UW_RDMAP_REMOTE_PROTECTION);
	assert_int_equal(wc.term_ecode, UW_RDMAP_INVALID_STAG);
	expect_terminated(&p, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
			  UW_RDMAP_INVALID_STAG);
	assert_int_equal(uw_dealloc_mw(mw), 0);
	pair_close(&p);

	/* past the window's end: base or bounds violation */
	pair_open(&p, region);
	base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 0, 0);
	mw = window(&p, UW_ACCESS_REMOTE_WRITE);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 100, p.c.mr->lkey,
			      base + 8192 - 50, mw->rkey, 0),
			 0);
	expect_terminated(&p, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS);
	for (int i = 8192 - 50; i < 8192 + 50; i++)
		assert_int_equal(p.s.buf[i], 0); /* nothing landed */
	assert_int_equal(uw_dealloc_mw(mw), 0);
	pair_close(&p);

	/* the window's own rights: read-only refuses a Write */
	pair_open(&p, region);
	base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 0, 0);
	mw = window(&p, UW_ACCESS_REMOTE_READ);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 8, p.c.mr->lkey, base + 4096,
			      mw->rkey, 0),
			 0);
	expect_terminated(&p, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
			  UW_RDMAP_ACCESS_RIGHTS);
	assert_int_equal(uw_dealloc_mw(mw), 0);
	pair_close(&p);

	/* local invalidation, and the region's own STag (no remote rights) */
	pair_open(&p, region);
	base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 0, 0);
	mw = window(&p, UW_ACCESS_REMOTE_WRITE);
	struct uw_send_wr inv = { .wr_id = 9,
				  .opcode = UW_WR_LOCAL_INV,
				  .invalidate_rkey = mw->rkey,
				  .send_flags = UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(p.s.qp, &inv, NULL), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.opcode, UW_WC_LOCAL_INV);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 8, p.c.mr->lkey, base + 4096,
			      mw->rkey, 0),
			 0);
	expect_terminated(&p, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG);
	assert_int_equal(uw_dealloc_mw(mw), 0);
	pair_close(&p);

	/* the region's own key has no remote rights: a peer that names it
	 * is told what an STag that names nothing earns (docs/wire-notes.md,
	 * "STags and isolation") */
	pair_open(&p, region);
	base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 0, 0);
	assert_int_equal(
		post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 8, p.c.mr->lkey, base, p.s.mr->rkey, 0),
		0);
	expect_terminated(&p, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG);
	pair_close(&p);
}

/* A Write or Read from the client through rkey at tagged offset to. */
static void write_then_read(struct pair *p, uint32_t rkey, uint64_t to, const char *what)
{
	size_t n = strlen(what) + 1;
	memcpy(p->c.buf, what, n);
	assert_int_equal(post(p->c.qp, UW_WR_RDMA_WRITE, 1, p->c.buf, (uint32_t)n, p->c.mr->lkey,
			      to, rkey, 0),
			 0);
	memset(p->c.buf + 2048, 0, n);
	assert_int_equal(post(p->c.qp, UW_WR_RDMA_READ, 2, p->c.buf + 2048, (uint32_t)n,
			      p->c.mr->lkey, to, rkey, UW_SEND_SIGNALED),
			 0);
	struct uw_wc wc = wait_wc(p->c.cq);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 2);
	assert_string_equal((char *)p->c.buf + 2048, what);
}

/* ibv_reg_mr_iova2's meaning: peers and the region's own SGEs address it
 * from its iova, whatever its address; a window over it keeps those
 * addresses; an offset below the iova is out of bounds. */
static void a_region_is_addressed_from_its_iova(void **state)
{
	const uint64_t iova = 0x7e57000000000000ull;
	const int rw = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ |
		       UW_ACCESS_MW_BIND;
	struct pair p;

	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	/* [iova, iova + length) may not wrap */
	errno = 0;
	assert_null(uw_reg_mr_iova(p.s.pd, p.s.buf, BUF, UINT64_MAX - 100, rw));
	assert_int_equal(errno, EINVAL);
	struct uw_mr *mr = uw_reg_mr_iova(p.s.pd, p.s.buf, BUF, iova, rw);
	assert_non_null(mr);
	assert_int_equal(mr->iova, iova);
	assert_int_equal(p.s.mr->iova, (uintptr_t)p.s.buf); /* uw_reg_mr: its address */
	struct uw_mr *zero = uw_reg_mr_iova(p.s.pd, p.s.buf, BUF, 0, rw);
	assert_non_null(zero);
	pair_connect(&p, NULL, NULL, 0, 0);

	write_then_read(&p, mr->rkey, iova + 100, "at iova + 100");
	assert_string_equal((char *)p.s.buf + 100, "at iova + 100");
	write_then_read(&p, zero->rkey, 300, "zero-based 300");
	assert_string_equal((char *)p.s.buf + 300, "zero-based 300");

	/* the region's own Send: its SGE in iova terms */
	memcpy(p.s.buf + 5000, "sent from iova + 5000", 22);
	struct uw_sge rg = { (uintptr_t)(p.c.buf + 8192), 64, p.c.mr->lkey };
	struct uw_recv_wr r = { .wr_id = 7, .sg_list = &rg, .num_sge = 1 };
	assert_int_equal(uw_post_recv(p.c.qp, &r, NULL), 0);
	struct uw_sge sg = { iova + 5000, 22, mr->lkey };
	struct uw_send_wr sw = { .wr_id = 8,
				 .sg_list = &sg,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(p.s.qp, &sw, NULL), 0);
	assert_int_equal(wait_wc(p.s.cq).status, UW_WC_SUCCESS);
	struct uw_wc wc = wait_wc(p.c.cq);
	assert_int_equal(wc.wr_id, 7);
	assert_int_equal(wc.byte_len, 22);
	assert_string_equal((char *)p.c.buf + 8192, "sent from iova + 5000");
	/* its address is not an address of the region's: EINVAL at post */
	sg.addr = (uintptr_t)p.s.buf + 5000;
	assert_int_equal(uw_post_send(p.s.qp, &sw, NULL), EINVAL);

	/* a window over [4096, 8192): its offsets are the region's */
	struct uw_mw *mw = uw_alloc_mw(p.s.pd);
	assert_non_null(mw);
	assert_int_equal(uw_bind_mw(mw, p.s.qp, mr, p.s.buf + 4096, 4096,
				    UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ),
			 0);
	write_then_read(&p, mw->rkey, iova + 4096 + 10, "window at iova + 4106");
	assert_string_equal((char *)p.s.buf + 4106, "window at iova + 4106");
	assert_int_equal(uw_dealloc_mw(mw), 0);

	/* the buffer's own address is nothing to this region */
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 9, p.c.buf, 8, p.c.mr->lkey,
			      (uintptr_t)p.s.buf, mr->rkey, 0),
			 0);
	expect_terminated(&p, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS);
	assert_int_equal(uw_dereg_mr(mr), 0);
	assert_int_equal(uw_dereg_mr(zero), 0);
	pair_close(&p);
}

/* A bind in the send queue (UW_WR_BIND_MW, ibv_post_send's IBV_WR_BIND_MW):
 * the rkey is known when the post returns, the bind completes in order,
 * a caller's key is taken, a wrong index or range refused at post, and a
 * window deallocated before the bind's turn makes it fail alone. */
static void a_bind_in_the_send_queue_completes_in_order(void **state)
{
	const int region = UW_ACCESS_LOCAL_WRITE | UW_ACCESS_MW_BIND;
	struct pair p;

	pair_open(&p, region);
	uint64_t base = (uintptr_t)p.s.buf;
	pair_connect(&p, NULL, NULL, 0, 0);
	struct uw_mw *mw = uw_alloc_mw(p.s.pd);
	assert_non_null(mw);
	struct uw_send_wr b = { .wr_id = 21,
				.opcode = UW_WR_BIND_MW,
				.send_flags = UW_SEND_SIGNALED,
				.bind = { mw, p.s.mr, base + 4096, 4096,
					  UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ, 0, 0 } };
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), 0);
	uint32_t first = mw->rkey;
	assert_int_not_equal(first, 0);
	struct uw_wc wc = wait_wc(p.s.cq);
	assert_int_equal(wc.wr_id, 21);
	assert_int_equal(wc.opcode, UW_WC_BIND_MW);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	write_then_read(&p, first, base + 4096 + 8, "bound in order");
	assert_string_equal((char *)p.s.buf + 4096 + 8, "bound in order");

	/* the caller's key (ibv_inc_rkey's way); the old rkey dies */
	b.bind.rkey = (first & ~0xffu) | (uint8_t)(first + 1);
	b.wr_id = 22;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), 0);
	assert_int_equal(mw->rkey, b.bind.rkey);
	assert_int_equal(wait_wc(p.s.cq).status, UW_WC_SUCCESS);
	write_then_read(&p, b.bind.rkey, base + 4096, "the caller's key");

	/* refused at post: another window's index, a range past the
	 * region, rights the region cannot give */
	b.bind.rkey = first + 0x100;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), EINVAL);
	b.bind.rkey = 0;
	b.bind.addr = base + BUF - 100;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), EINVAL);
	b.bind.addr = base;
	b.bind.access = UW_ACCESS_LOCAL_WRITE;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), EINVAL);
	b.bind.access = UW_ACCESS_REMOTE_WRITE;
	b.sg_list = NULL;
	b.num_sge = 1;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), EINVAL);
	b.num_sge = 0;

	/* posted while the send queue is paused, its window gone before its
	 * turn: it alone fails, the Send behind it goes */
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_SQD), 0);
	struct uw_mw *gone = uw_alloc_mw(p.s.pd);
	b.bind.mw = gone;
	b.wr_id = 23;
	assert_int_equal(uw_post_send(p.s.qp, &b, NULL), 0);
	assert_int_equal(uw_dealloc_mw(gone), 0);
	struct uw_sge rg = { (uintptr_t)p.c.buf, 64, p.c.mr->lkey };
	struct uw_recv_wr r = { .wr_id = 7, .sg_list = &rg, .num_sge = 1 };
	assert_int_equal(uw_post_recv(p.c.qp, &r, NULL), 0);
	assert_int_equal(
		post(p.s.qp, UW_WR_SEND, 24, p.s.buf, 8, p.s.mr->lkey, 0, 0, UW_SEND_SIGNALED), 0);
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_RTS), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.wr_id, 23);
	assert_int_equal(wc.opcode, UW_WC_BIND_MW);
	assert_int_equal(wc.status, UW_WC_MW_BIND_ERR);
	assert_string_equal(uw_wc_status_str(wc.status), "memory window bind error");
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.wr_id, 24);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wait_wc(p.c.cq).wr_id, 7);

	/* no region: an unbind, in order; the window names nothing after */
	uint32_t live = mw->rkey;
	struct uw_send_wr u = { .wr_id = 25,
				.opcode = UW_WR_BIND_MW,
				.send_flags = UW_SEND_SIGNALED,
				.bind = { .mw = mw } };
	assert_int_equal(uw_post_send(p.s.qp, &u, NULL), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.wr_id, 25);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(
		post(p.c.qp, UW_WR_RDMA_WRITE, 26, p.c.buf, 8, p.c.mr->lkey, base + 4096, live, 0),
		0);
	expect_terminated(&p, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG);
	assert_int_equal(uw_dealloc_mw(mw), 0);
	pair_close(&p);
}

/* The next asynchronous event on ch, within 5 s, is type for obj; its
 * descriptor was readable first. */
static void expect_async(struct uw_async_channel *ch, enum uw_async_event_type type,
			 const void *obj)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	struct uw_async_event ev;
	assert_int_equal(uw_get_async_event(ch, &ev, 0), 0);
	if (ev.type != type)
		fail_msg("async event %s, wanted %s", uw_async_event_str(ev.type),
			 uw_async_event_str(type));
	const void *got = type == UW_EVENT_CQ_ERR              ? (const void *)ev.cq
			  : type == UW_EVENT_SRQ_LIMIT_REACHED ? (const void *)ev.srq
							       : (const void *)ev.qp;
	assert_ptr_equal(got, obj);
}

static void expect_no_async(struct uw_async_channel *ch)
{
	struct uw_async_event ev;
	assert_int_equal(uw_get_async_event(ch, &ev, 0), ETIMEDOUT);
}

/* Asynchronous events (ibv_get_async_event's): what each end of a failed
 * connection learns, nothing for an end the application made, a CQ's
 * overflow, an SRQ's limit and its QP's last WQE, and events that go
 * with their object. */
static void async_events_say_what_failed(void **state)
{
	struct pair p;
	struct uw_async_channel *sa, *ca;

	/* a Write through a key that names nothing: the server refused an
	 * access (its Terminate), the client's connection failed */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	sa = uw_create_async_channel(p.s.ctx);
	ca = uw_create_async_channel(p.c.ctx);
	assert_non_null(sa);
	assert_non_null(ca);
	pair_connect(&p, NULL, NULL, 0, 0);
	assert_int_equal(uw_async_report(sa, p.s.qp, p.s.cq, NULL), 0);
	assert_int_equal(uw_async_report(ca, p.c.qp, NULL, NULL), 0);
	assert_int_equal(uw_async_report(ca, p.s.qp, NULL, NULL), EINVAL); /* another context */
	assert_int_equal(uw_destroy_async_channel(sa), EBUSY);
	expect_no_async(sa);
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_WRITE, 1, p.c.buf, 8, p.c.mr->lkey,
			      (uintptr_t)p.s.buf, p.s.mr->rkey ^ 0x100, 0),
			 0);
	expect_async(sa, UW_EVENT_QP_ACCESS_ERR, p.s.qp);
	expect_async(ca, UW_EVENT_QP_FATAL, p.c.qp);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED));
	expect_no_async(sa); /* once per failure */
	/* a destroyed QP lets its channel go (a context closes only once its
	 * channels are gone, so the server's QP is let go by hand) */
	assert_int_equal(uw_destroy_qp(p.c.qp), 0);
	p.c.qp = NULL;
	assert_int_equal(uw_destroy_async_channel(ca), 0);
	assert_int_equal(uw_async_report(NULL, p.s.qp, p.s.cq, NULL), 0);
	assert_int_equal(uw_destroy_async_channel(sa), 0);
	pair_close(&p);

	/* an end the application makes raises nothing */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	sa = uw_create_async_channel(p.s.ctx);
	ca = uw_create_async_channel(p.c.ctx);
	pair_connect(&p, NULL, NULL, 0, 0);
	uw_async_report(sa, p.s.qp, NULL, NULL);
	uw_async_report(ca, p.c.qp, NULL, NULL);
	assert_int_equal(uw_cm_disconnect(p.c.id), 0);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED));
	uw_cm_ack_event(expect_event(p.s.ch, UW_CM_EVENT_DISCONNECTED));
	expect_no_async(sa);
	expect_no_async(ca);
	uw_async_report(NULL, p.s.qp, NULL, NULL);
	uw_async_report(NULL, p.c.qp, NULL, NULL);
	assert_int_equal(uw_destroy_async_channel(sa), 0);
	assert_int_equal(uw_destroy_async_channel(ca), 0);
	pair_close(&p);

	/* a connection that never came up (rejected) is the connection
	 * manager's event alone */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	ca = uw_create_async_channel(p.c.ctx);
	p.s.lid = uw_cm_create_id(p.s.ch, NULL);
	struct sockaddr_in la = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(uw_cm_listen(p.s.lid, (struct sockaddr *)&la, 8), 0);
	la.sin_port = ((struct sockaddr_in *)&p.s.lid->local_addr)->sin_port;
	p.c.id = uw_cm_create_id(p.c.ch, NULL);
	struct uw_qp_init_attr qa = { .send_cq = p.c.cq,
				      .recv_cq = p.c.cq,
				      .cap = { 4, 4, 1, 1, 0 } };
	p.c.qp = uw_cm_create_qp(p.c.id, p.c.pd, &qa);
	uw_async_report(ca, p.c.qp, NULL, NULL);
	assert_int_equal(uw_cm_connect(p.c.id, (struct sockaddr *)&la, NULL), 0);
	struct uw_cm_event *req = expect_event(p.s.ch, UW_CM_EVENT_CONNECT_REQUEST);
	p.s.id = req->id;
	assert_int_equal(uw_cm_reject(req->id, NULL, 0), 0);
	uw_cm_ack_event(req);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_REJECTED));
	expect_no_async(ca);
	uw_async_report(NULL, p.c.qp, NULL, NULL);
	assert_int_equal(uw_destroy_async_channel(ca), 0);
	pair_close(&p);

	/* a Send with no receive, no wait: the server refused a request */
	setenv("UWARP_RECV_WAIT_MS", "0", 1);
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	unsetenv("UWARP_RECV_WAIT_MS");
	sa = uw_create_async_channel(p.s.ctx);
	pair_connect(&p, NULL, NULL, 0, 0);
	uw_async_report(sa, p.s.qp, NULL, NULL);
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	expect_async(sa, UW_EVENT_QP_REQ_ERR, p.s.qp);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED));
	uw_async_report(NULL, p.s.qp, NULL, NULL);
	assert_int_equal(uw_destroy_async_channel(sa), 0);
	pair_close(&p);

	/* an overflowing CQ: its own event, and its QP's */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	assert_int_equal(uw_destroy_cq(p.c.cq), 0);
	p.c.cq = uw_create_cq(p.c.ctx, 2, NULL, NULL);
	ca = uw_create_async_channel(p.c.ctx);
	pair_connect(&p, NULL, NULL, 0, 0);
	uw_async_report(ca, p.c.qp, p.c.cq, NULL);
	for (int i = 0; i < 4; i++)
		post(p.c.qp, UW_WR_RDMA_WRITE, (uint64_t)i, p.c.buf, 64, p.c.mr->lkey,
		     (uintptr_t)p.s.buf, p.s.mr->rkey, UW_SEND_SIGNALED);
	expect_async(ca, UW_EVENT_CQ_ERR, p.c.cq);
	expect_async(ca, UW_EVENT_QP_FATAL, p.c.qp);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED));
	uw_async_report(NULL, p.c.qp, p.c.cq, NULL);
	assert_int_equal(uw_destroy_async_channel(ca), 0);
	pair_close(&p);

	/* an SRQ's limit fires once, below it; its QP's end is the last
	 * WQE it takes; a destroyed QP's waiting event goes with it */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	struct uw_srq_init_attr ra = { .max_wr = 8, .max_sge = 1 };
	p.srq = uw_create_srq(p.s.pd, &ra);
	for (int i = 0; i < 8; i++) {
		struct uw_sge g = { (uintptr_t)(p.s.buf + i * 1024), 1024, p.s.mr->lkey };
		struct uw_recv_wr r = { .wr_id = (uint64_t)i, .sg_list = &g, .num_sge = 1 };
		assert_int_equal(uw_post_srq_recv(p.srq, &r, NULL), 0);
	}
	assert_int_equal(uw_modify_srq_limit(p.srq, 9), EINVAL);
	assert_int_equal(uw_modify_srq_limit(p.srq, 6), 0);
	assert_int_equal(uw_srq_limit(p.srq), 6);
	sa = uw_create_async_channel(p.s.ctx);
	pair_connect(&p, NULL, NULL, 0, 0);
	uw_async_report(sa, p.s.qp, NULL, p.srq);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
		assert_int_equal(wait_wc(p.s.cq).status, UW_WC_SUCCESS);
	}
	expect_no_async(sa); /* six left: not below the limit */
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	assert_int_equal(wait_wc(p.s.cq).status, UW_WC_SUCCESS);
	expect_async(sa, UW_EVENT_SRQ_LIMIT_REACHED, p.srq);
	assert_int_equal(uw_srq_limit(p.srq), 0); /* disarmed */
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	assert_int_equal(wait_wc(p.s.cq).status, UW_WC_SUCCESS);
	expect_no_async(sa);
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_ERR), 0);
	expect_async(sa, UW_EVENT_QP_LAST_WQE_REACHED, p.s.qp);
	/* raised again and left waiting: destroying the QP takes it along */
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_RESET), 0);
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_ERR), 0);
	struct pollfd pfd = { .fd = sa->fd, .events = POLLIN };
	assert_int_equal(poll(&pfd, 1, 5000), 1);
	assert_int_equal(uw_destroy_async_channel(sa), EBUSY);
	assert_int_equal(uw_destroy_qp(p.s.qp), 0);
	p.s.qp = NULL;
	assert_int_equal(poll(&pfd, 1, 0), 0);
	expect_no_async(sa);
	uw_async_report(NULL, NULL, NULL, p.srq);
	assert_int_equal(uw_destroy_async_channel(sa), 0);
	pair_close(&p);
}

/* RDMA Reads of memory that changes while they are answered: the
 * responder's application (or the peer's own Writes) may write its
 * registered memory at any time, as on hardware (a key-value store that
 * updates values its clients read with RDMA Read). The data read may be
 * a mix of old and new; the connection must not fail. With the CRC on,
 * a Response whose CRC was taken over the bytes before they changed, and
 * sent after, reached the reader as an MPA CRC error (a Terminate, LLP
 * 0x02), and the connection was gone. */
static volatile int scribbling;

static void *scribble(void *arg)
{
	uint8_t *buf = arg, v = 0;
	while (__atomic_load_n(&scribbling, __ATOMIC_ACQUIRE))
		memset(buf, v++, BUF);
	return NULL;
}

static void reads_of_memory_that_changes_meanwhile_complete(void **state)
{
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
	skip(); /* the race with the engine's reads is the point */
#endif
#endif
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_READ);
	struct uw_conn_param cp = { .crc = UW_CRC_ON, .ird = 16, .ord = 16 };
	pair_connect(&p, &cp, &cp, 0, 1);
	pthread_t t;
	__atomic_store_n(&scribbling, 1, __ATOMIC_RELEASE);
	assert_int_equal(pthread_create(&t, NULL, scribble, p.s.buf), 0);
	int posted = 0, done = 0, errors = 0;
	while (done < 400) {
		while (posted < 400 && posted - done < 8)
			assert_int_equal(post(p.c.qp, UW_WR_RDMA_READ, (uint64_t)posted++, p.c.buf,
					      BUF, p.c.mr->lkey, (uintptr_t)p.s.buf, p.s.mr->rkey,
					      UW_SEND_SIGNALED),
					 0);
		struct uw_wc wc = wait_wc(p.c.cq);
		errors += wc.status != UW_WC_SUCCESS;
		done++;
		if (errors)
			break;
	}
	__atomic_store_n(&scribbling, 0, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	struct uw_cm_event *e = NULL;
	if (!uw_cm_get_event_timeout(p.c.ch, &e, 0)) {
		fail_msg("after %d Reads: %s, Terminate %u/%u/0x%02x", done,
			 uw_cm_event_str(e->event), e->term_layer, e->term_etype, e->term_ecode);
	}
	assert_int_equal(errors, 0);
	pair_close(&p);
}

static void atomics_return_the_old_value_and_update_memory(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_ATOMIC);
	uint64_t *v = (uint64_t *)(void *)p.s.buf;
	v[0] = 10, v[1] = 20, v[2] = 30;
	pair_connect(&p, NULL, NULL, 0, 0);
	uint64_t *res = (uint64_t *)(void *)p.c.buf;
	struct {
		enum uw_wr_opcode op;
		int slot;
		uint64_t add_cmp, swap, old, after;
	} steps[] = {
		{ UW_WR_ATOMIC_FETCH_ADD, 0, 5, 0, 10, 15 },
		{ UW_WR_ATOMIC_SWAP, 1, 0, 99, 20, 99 },
		{ UW_WR_ATOMIC_CMP_SWAP, 2, 30, 7, 30, 7 }, /* equal: swapped */
		{ UW_WR_ATOMIC_CMP_SWAP, 2, 30, 8, 7, 7 },  /* not equal: kept */
	};
	for (int i = 0; i < 4; i++) {
		struct uw_sge g = { (uintptr_t)&res[i], 8, p.c.mr->lkey };
		struct uw_send_wr wr = { .wr_id = (uint64_t)i,
					 .sg_list = &g,
					 .num_sge = 1,
					 .opcode = steps[i].op,
					 .send_flags = UW_SEND_SIGNALED,
					 .atomic = { (uintptr_t)&v[steps[i].slot], p.s.mr->rkey,
						     steps[i].add_cmp, steps[i].swap } };
		assert_int_equal(uw_post_send(p.c.qp, &wr, NULL), 0);
		struct uw_wc wc = wait_wc(p.c.cq);
		assert_int_equal(wc.status, UW_WC_SUCCESS);
		assert_int_equal(res[i], steps[i].old);
		assert_int_equal(v[steps[i].slot], steps[i].after);
	}
	pair_close(&p);
}

static void write_with_immediate_and_solicited_events(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	pair_connect(&p, NULL, NULL, 4, 0);
	memcpy(p.c.buf, "written, then announced", 24);
	struct uw_sge g = { (uintptr_t)p.c.buf, 24, p.c.mr->lkey };
	struct uw_send_wr wr = { .wr_id = 1,
				 .sg_list = &g,
				 .num_sge = 1,
				 .opcode = UW_WR_RDMA_WRITE_WITH_IMM,
				 .imm_data = 0x1122334455667788ull,
				 .rdma = { (uintptr_t)p.s.buf + 32768, p.s.mr->rkey } };
	assert_int_equal(uw_post_send(p.c.qp, &wr, NULL), 0);
	struct uw_wc wc = wait_wc(p.s.cq);
	assert_int_equal(wc.opcode, UW_WC_RECV_IMM);
	assert_int_equal(wc.imm_data, 0x1122334455667788ull);
	assert_true(wc.wc_flags & UW_WC_WITH_IMM);
	assert_false(wc.wc_flags & UW_WC_SOLICITED);
	assert_memory_equal(p.s.buf + 32768, "written, then announced", 24);
	/* Send with SE and Immediate with SE are solicited */
	assert_int_equal(
		post(p.c.qp, UW_WR_SEND, 2, p.c.buf, 5, p.c.mr->lkey, 0, 0, UW_SEND_SOLICITED), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.opcode, UW_WC_RECV);
	assert_true(wc.wc_flags & UW_WC_SOLICITED);
	struct uw_send_wr imm = {
		.wr_id = 3, .opcode = UW_WR_IMM, .imm_data = 7, .send_flags = UW_SEND_SOLICITED
	};
	assert_int_equal(uw_post_send(p.c.qp, &imm, NULL), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.opcode, UW_WC_RECV_IMM);
	assert_int_equal(wc.imm_data, 7);
	assert_true(wc.wc_flags & UW_WC_SOLICITED);
	pair_close(&p);
}

/* A message whose last FPDU (or, for a Write with Immediate Data, the
 * Immediate's FPDU) closes the engine's gather list, which stops adding at
 * 256 KiB, was counted done only by the next fill of the list; with
 * nothing else to send there was no list to complete it, and its
 * completion waited for the next post: for ever when the application
 * waited for it first (an ES-API sender with one send outstanding hung
 * so). Every length around 256 KiB, posted alone, completes. */
static void a_message_that_closes_a_gather_list_completes_alone(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	pair_connect(&p, NULL, NULL, 0, 0);
	size_t big = 512u << 10;
	uint8_t *sb = aligned_alloc(4096, big), *cb = aligned_alloc(4096, big);
	memset(cb, 0x5a, big);
	struct uw_mr *smr =
		uw_reg_mr(p.s.pd, sb, big, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	struct uw_mr *cmr = uw_reg_mr(p.c.pd, cb, big, UW_ACCESS_LOCAL_WRITE);
	assert_non_null(smr);
	assert_non_null(cmr);
	for (int imm = 0; imm < 2; imm++) {
		for (uint32_t len = (256u << 10) - 1024; len <= (256u << 10) + 512; len += 4) {
			if (imm) {
				struct uw_recv_wr r = { .wr_id = len };
				assert_int_equal(uw_post_recv(p.s.qp, &r, NULL), 0);
			}
			struct uw_sge g = { (uintptr_t)cb, len, cmr->lkey };
			struct uw_send_wr wr = { .wr_id = len,
						 .sg_list = &g,
						 .num_sge = 1,
						 .opcode = imm ? UW_WR_RDMA_WRITE_WITH_IMM
							       : UW_WR_RDMA_WRITE,
						 .send_flags = UW_SEND_SIGNALED,
						 .imm_data = len,
						 .rdma = { (uintptr_t)sb, smr->rkey } };
			assert_int_equal(uw_post_send(p.c.qp, &wr, NULL), 0);
			struct uw_wc wc = wait_wc(p.c.cq);
			assert_int_equal(wc.status, UW_WC_SUCCESS);
			assert_int_equal(wc.wr_id, len);
			if (imm) {
				wc = wait_wc(p.s.cq);
				assert_int_equal(wc.opcode, UW_WC_RECV_IMM);
				assert_int_equal(wc.imm_data, len);
			}
		}
	}
	assert_int_equal(sb[(256u << 10) - 1], 0x5a);
	assert_int_equal(uw_dereg_mr(smr), 0);
	assert_int_equal(uw_dereg_mr(cmr), 0);
	free(sb);
	free(cb);
	pair_close(&p);
}

/* Completions that overflow the send CQ end the connection (an RNIC's QP
 * fails so rather than lose one). The engine learns it while completing a
 * gather list that has left, in the middle of its send loop, and stops
 * there (runtime/engine_tx.c). The completions that fit are kept in order,
 * the QP's end says ENOSPC, and the peer sees the connection end. */
static void a_send_cq_overflow_ends_the_connection_cleanly(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	assert_int_equal(uw_destroy_cq(p.c.cq), 0);
	p.c.cq = uw_create_cq(p.c.ctx, 2, NULL, NULL);
	assert_non_null(p.c.cq);
	pair_connect(&p, NULL, NULL, 0, 0);
	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 32; i++) {
			int rc = post(p.c.qp, UW_WR_RDMA_WRITE, (uint64_t)i, p.c.buf, BUF,
				      p.c.mr->lkey, (uintptr_t)p.s.buf, p.s.mr->rkey,
				      UW_SEND_SIGNALED);
			if (rc) /* the QP failed while we posted */
				assert_int_equal(rc, EINVAL);
		}
	struct uw_cm_event *e = expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->status, ENOSPC);
	uw_cm_ack_event(e);
	uw_cm_ack_event(expect_event(p.s.ch, UW_CM_EVENT_DISCONNECTED));
	/* the first two completions made it, as written */
	struct uw_wc wc[4];
	assert_int_equal(uw_poll_cq(p.c.cq, 4, wc), 2);
	assert_int_equal(wc[0].status, UW_WC_SUCCESS);
	assert_int_equal(wc[1].wr_id, 1);
	pair_close(&p);
}

/* Writes with Immediate Data kept four deep, 1 MiB each: the Immediate's
 * FPDU follows the Write's last FPDU, and once (when that FPDU's CRC was
 * computed after it was written) shared a gather list with the start of
 * the next message, which cleared the 8 bytes before they were written (a
 * bad CRC at the peer). */
static void write_with_immediate_train_keeps_every_value(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	pair_connect(&p, NULL, NULL, 8, 0);
	size_t sz = 1 << 20;
	uint8_t *src = aligned_alloc(4096, 4 * sz), *dst = aligned_alloc(4096, 4 * sz);
	for (size_t i = 0; i < 4 * sz; i++)
		src[i] = (uint8_t)(i * 13 + (i >> 16));
	struct uw_mr *smr = uw_reg_mr(p.c.pd, src, 4 * sz, UW_ACCESS_LOCAL_WRITE);
	struct uw_mr *dmr =
		uw_reg_mr(p.s.pd, dst, 4 * sz, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	int posted = 0, done = 0, arrived = 0;
	while (arrived < 32) {
		/* four deep, and never more than the server has receives for */
		while (posted < 32 && posted - done < 4 && posted - arrived < 8) {
			int k = posted % 4;
			struct uw_sge g = { (uintptr_t)src + k * sz, (uint32_t)sz, smr->lkey };
			struct uw_send_wr wr = { .wr_id = (uint64_t)posted,
						 .sg_list = &g,
						 .num_sge = 1,
						 .opcode = UW_WR_RDMA_WRITE_WITH_IMM,
						 .send_flags = UW_SEND_SIGNALED,
						 .imm_data =
							 0xA5A5000000000000ull | (uint64_t)posted,
						 .rdma = { (uintptr_t)dst + k * sz, dmr->rkey } };
			assert_int_equal(uw_post_send(p.c.qp, &wr, NULL), 0);
			posted++;
		}
		struct uw_wc wc;
		if (uw_poll_cq(p.c.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, UW_WC_SUCCESS);
			done++;
		}
		if (uw_poll_cq(p.s.cq, 1, &wc) == 1) {
			assert_int_equal(wc.status, UW_WC_SUCCESS);
			assert_int_equal(wc.opcode, UW_WC_RECV_IMM);
			assert_int_equal(wc.imm_data, 0xA5A5000000000000ull | (uint64_t)arrived);
			struct uw_sge g = { (uintptr_t)p.s.buf, 64, p.s.mr->lkey };
			struct uw_recv_wr r = { .wr_id = 999, .sg_list = &g, .num_sge = 1 };
			assert_int_equal(uw_post_recv(p.s.qp, &r, NULL), 0);
			arrived++;
		}
	}
	while (done < 32)
		if (uw_poll_cq(p.c.cq, 1, &(struct uw_wc){ 0 }) == 1)
			done++;
	assert_memory_equal(src, dst, 4 * sz);
	uw_dereg_mr(smr);
	uw_dereg_mr(dmr);
	free(src);
	free(dst);
	pair_close(&p);
}

static void unsignalled_sends_complete_only_when_they_fail(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	pair_connect(&p, NULL, NULL, 8, 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(
			post(p.c.qp, UW_WR_SEND, (uint64_t)i, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0),
			0);
	assert_int_equal(
		post(p.c.qp, UW_WR_SEND, 5, p.c.buf, 8, p.c.mr->lkey, 0, 0, UW_SEND_SIGNALED), 0);
	assert_true(uw_cq_wait(p.s.cq, 6, 5000) >= 6); /* all six arrived */
	struct uw_wc wc[8];
	assert_int_equal(uw_poll_cq(p.c.cq, 8, wc), 1);
	assert_int_equal(wc[0].wr_id, 5);
	/* a failing unsignalled Read (dead STag) still completes */
	assert_int_equal(post(p.c.qp, UW_WR_RDMA_READ, 6, p.c.buf, 8, p.c.mr->lkey,
			      (uintptr_t)p.s.buf, p.s.mr->rkey ^ 0x5a, 0),
			 0);
	struct uw_wc e = wait_wc(p.c.cq);
	assert_int_equal(e.wr_id, 6);
	assert_int_equal(e.status, UW_WC_REM_ACCESS_ERR);
	pair_close(&p);

	/* sq_sig_all: every send completes */
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	pair_connect(&p, NULL, NULL, 8, 1);
	for (int i = 0; i < 3; i++)
		assert_int_equal(
			post(p.c.qp, UW_WR_SEND, (uint64_t)i, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0),
			0);
	assert_true(uw_cq_wait(p.c.cq, 3, 5000) >= 3);
	pair_close(&p);
}

/* uw_resize_cq keeps the completions queued, in order, also when they
 * wrap around the old ring's end, and refuses to drop any */
static void a_resized_cq_keeps_its_completions_in_order(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	pair_connect(&p, NULL, NULL, 8, 1);
	for (int i = 0; i < 6; i++)
		assert_int_equal(
			post(p.c.qp, UW_WR_SEND, (uint64_t)i, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0),
			0);
	assert_true(uw_cq_wait(p.s.cq, 6, 5000) >= 6);
	struct uw_wc wc[16];
	assert_int_equal(uw_poll_cq(p.s.cq, 2, wc), 2);    /* 100, 101 */
	assert_int_equal(uw_resize_cq(p.s.cq, 3), EINVAL); /* four are queued */
	assert_int_equal(uw_resize_cq(p.s.cq, (1 << 24) + 1), EINVAL);
	assert_int_equal(uw_resize_cq(p.s.cq, 4), 0); /* full now: 102..105 */
	assert_int_equal(p.s.cq->cqe, 4);
	assert_int_equal(uw_poll_cq(p.s.cq, 1, wc), 1);
	assert_int_equal(wc[0].wr_id, 102);
	/* the next one goes to the ring's first slot, behind the others */
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 6, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	assert_true(uw_cq_wait(p.s.cq, 4, 5000) >= 4);
	assert_int_equal(uw_resize_cq(p.s.cq, 64), 0);
	assert_int_equal(uw_poll_cq(p.s.cq, 16, wc), 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].wr_id, 103 + (uint64_t)i);
		assert_int_equal(wc[i].status, UW_WC_SUCCESS);
	}
	pair_close(&p);
}

/* keepalive_s above what the kernel's TCP_KEEPIDLE takes is refused with
 * EINVAL (the kernel would refuse it without a word), the most is not */
/* uw_cm_set_tos on connections already up, at both ends: the kernel's
 * sockets carry it (the SYN's is the rdma_cm test's, test_rdma_cm.c) */
static void the_type_of_service_reaches_the_sockets(void **state)
{
	(void)state;
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	pair_connect(&p, NULL, NULL, 1, 0);
	uint16_t cport = ntohs(((struct sockaddr_in *)&p.c.id->local_addr)->sin_port);
	uint16_t sport = ntohs(((struct sockaddr_in *)&p.s.id->local_addr)->sin_port);
	assert_false(ss_tos("sport", cport, "tos:0x50"));
	assert_int_equal(uw_cm_set_tos(p.c.id, 0x50), 0);
	assert_int_equal(uw_cm_set_tos(p.s.id, 0x30), 0);
	assert_true(ss_tos("sport", cport, "tos:0x50"));
	assert_true(ss_tos("sport", sport, "tos:0x30"));
	assert_int_equal(uw_cm_set_tos(NULL, 0x30), EINVAL);
	pair_close(&p);
}

static void keepalive_beyond_the_kernels_limit_is_einval(void **state)
{
	(void)state;
	struct end c;
	end_open(&c, UW_ACCESS_LOCAL_WRITE, false);
	c.id = uw_cm_create_id(c.ch, NULL);
	struct uw_qp_init_attr qa = { .send_cq = c.cq, .recv_cq = c.cq, .cap = { 4, 4, 1, 1, 0 } };
	c.qp = uw_cm_create_qp(c.id, c.pd, &qa);
	assert_non_null(c.qp);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(9) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	struct uw_conn_param p = { .keepalive_s = UW_KEEPALIVE_MAX_S + 1 };
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, &p), EINVAL);
	p.keepalive_s = UW_KEEPALIVE_MAX_S;
	assert_int_equal(uw_cm_connect(c.id, (struct sockaddr *)&a, &p), 0);
	end_close(&c);
}

static void shared_receive_queue_feeds_two_connections(void **state)
{
	struct end s2c; /* a second client */
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	struct uw_srq_init_attr sa = { .max_wr = 16, .max_sge = 1 };
	p.srq = uw_create_srq(p.s.pd, &sa);
	assert_non_null(p.srq);
	for (int i = 0; i < 8; i++) {
		struct uw_sge g = { (uintptr_t)(p.s.buf + i * 1024), 1024, p.s.mr->lkey };
		struct uw_recv_wr r = { .wr_id = 500 + (uint64_t)i, .sg_list = &g, .num_sge = 1 };
		assert_int_equal(uw_post_srq_recv(p.srq, &r, NULL), 0);
	}
	pair_connect(&p, NULL, NULL, 0, 0);
	/* posting to a QP that uses an SRQ is refused */
	struct uw_sge g = { (uintptr_t)p.s.buf, 8, p.s.mr->lkey };
	struct uw_recv_wr r = { .sg_list = &g, .num_sge = 1 };
	assert_int_equal(uw_post_recv(p.s.qp, &r, NULL), EINVAL);

	/* a second connection to the same listener shares the SRQ */
	end_open(&s2c, UW_ACCESS_LOCAL_WRITE, false);
	s2c.id = uw_cm_create_id(s2c.ch, NULL);
	struct uw_qp_init_attr ca = { .send_cq = s2c.cq,
				      .recv_cq = s2c.cq,
				      .cap = { 8, 8, 1, 1, 64 } };
	s2c.qp = uw_cm_create_qp(s2c.id, s2c.pd, &ca);
	struct sockaddr_in a = *(struct sockaddr_in *)&p.s.lid->local_addr;
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uw_cm_connect(s2c.id, (struct sockaddr *)&a, NULL), 0);
	struct uw_cm_event *e = expect_event(p.s.ch, UW_CM_EVENT_CONNECT_REQUEST);
	struct uw_cm_id *sid2 = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr qa = {
		.send_cq = p.s.cq, .recv_cq = p.s.cq, .srq = p.srq, .cap = { 8, 8, 1, 1, 0 }
	};
	struct uw_qp *sqp2 = uw_cm_create_qp(sid2, p.s.pd, &qa);
	assert_non_null(sqp2);
	assert_int_equal(uw_cm_accept(sid2, NULL), 0);
	uw_cm_ack_event(expect_event(s2c.ch, UW_CM_EVENT_ESTABLISHED));
	uw_cm_ack_event(expect_event(p.s.ch, UW_CM_EVENT_ESTABLISHED));

	memcpy(p.c.buf, "from one", 9);
	memcpy(s2c.buf, "from two", 9);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 9, p.c.mr->lkey, 0, 0, 0), 0);
		assert_int_equal(post(s2c.qp, UW_WR_SEND, 1, s2c.buf, 9, s2c.mr->lkey, 0, 0, 0), 0);
	}
	int from[2] = { 0, 0 };
	for (int i = 0; i < 4; i++) {
		struct uw_wc wc = wait_wc(p.s.cq);
		assert_int_equal(wc.status, UW_WC_SUCCESS);
		assert_true(wc.wr_id >= 500 && wc.wr_id < 508);
		const char *m = (const char *)p.s.buf + (wc.wr_id - 500) * 1024;
		if (wc.qp == p.s.qp) {
			assert_string_equal(m, "from one");
			from[0]++;
		} else {
			assert_ptr_equal(wc.qp, sqp2);
			assert_string_equal(m, "from two");
			from[1]++;
		}
	}
	assert_int_equal(from[0], 2);
	assert_int_equal(from[1], 2);
	assert_int_equal(uw_destroy_srq(p.srq), EBUSY);
	uw_cm_destroy_id(sid2);
	assert_int_equal(uw_destroy_qp(sqp2), 0);
	end_close(&s2c);
	pair_close(&p);
}

static void on_channel(uv_poll_t *h, int status, int events)
{
	struct uw_cq *cq;
	void *ctx;
	if (uw_get_cq_event(h->data, &cq, &ctx) == 0) {
		uw_ack_cq_events(cq, 1);
		*(int *)uv_handle_get_data((uv_handle_t *)h->loop) += 1;
		uv_poll_stop(h);
	}
}

static void on_timeout(uv_timer_t *t) { uv_stop(t->loop); }

static void completion_channels_work_in_epoll_and_libuv(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	pair_connect(&p, NULL, NULL, 8, 0);
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = EPOLLIN }, out;
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, p.s.cc->fd, &ev), 0);

	/* armed for solicited only: an ordinary Send raises nothing */
	assert_int_equal(uw_req_notify_cq(p.s.cq, 1), 0);
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	assert_true(uw_cq_wait(p.s.cq, 1, 5000) >= 1);     /* it arrived... */
	assert_int_equal(epoll_wait(ep, &out, 1, 200), 0); /* ...and said nothing */
	struct uw_wc wc;
	assert_int_equal(uw_poll_cq(p.s.cq, 1, &wc), 1);
	/* a solicited one does */
	assert_int_equal(
		post(p.c.qp, UW_WR_SEND, 2, p.c.buf, 8, p.c.mr->lkey, 0, 0, UW_SEND_SOLICITED), 0);
	assert_int_equal(epoll_wait(ep, &out, 1, 5000), 1);
	struct uw_cq *cq;
	void *cqctx;
	assert_int_equal(uw_get_cq_event(p.s.cc, &cq, &cqctx), 0);
	assert_ptr_equal(cq, p.s.cq);
	uw_ack_cq_events(cq, 1);
	assert_int_equal(uw_poll_cq(p.s.cq, 1, &wc), 1);
	assert_true(wc.wc_flags & UW_WC_SOLICITED);
	close(ep);

	/* the same fd in a libuv loop */
	uv_loop_t loop;
	uv_poll_t h;
	uv_timer_t t;
	int fired = 0;
	assert_int_equal(uv_loop_init(&loop), 0);
	uv_handle_set_data((uv_handle_t *)&loop, &fired);
	assert_int_equal(uv_poll_init(&loop, &h, p.s.cc->fd), 0);
	h.data = p.s.cc;
	uv_poll_start(&h, UV_READABLE, on_channel);
	uv_timer_init(&loop, &t);
	uv_timer_start(&t, on_timeout, 5000, 0);
	assert_int_equal(uw_req_notify_cq(p.s.cq, 0), 0);
	assert_int_equal(post(p.c.qp, UW_WR_SEND, 3, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	while (!fired && uv_run(&loop, UV_RUN_ONCE))
		;
	assert_int_equal(fired, 1);
	uv_close((uv_handle_t *)&h, NULL);
	uv_close((uv_handle_t *)&t, NULL);
	uv_run(&loop, UV_RUN_DEFAULT);
	assert_int_equal(uv_loop_close(&loop), 0);

	/* the threshold wait: three completions, or a timeout with fewer */
	for (int i = 0; i < 3; i++)
		assert_int_equal(post(p.c.qp, UW_WR_SEND, 4, p.c.buf, 8, p.c.mr->lkey, 0, 0, 0), 0);
	assert_true(uw_cq_wait(p.s.cq, 4, 5000) >= 4); /* the libuv one and three */
	assert_int_equal(uw_cq_wait(p.s.cq, 10, 50), -ETIMEDOUT);
	pair_close(&p);
}

static void qp_states_reset_init_sqd_and_error(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	/* INIT -> RESET flushes what was posted; RESET takes nothing */
	struct uw_qp_init_attr qa = { .send_cq = p.c.cq,
				      .recv_cq = p.c.cq,
				      .cap = { 4, 4, 1, 1, 0 } };
	struct uw_qp *qp = uw_create_qp(p.c.pd, &qa);
	assert_int_equal(uw_qp_get_state(qp), UW_QPS_INIT);
	struct uw_sge g = { (uintptr_t)p.c.buf, 64, p.c.mr->lkey };
	struct uw_recv_wr r = { .wr_id = 77, .sg_list = &g, .num_sge = 1 };
	assert_int_equal(uw_post_recv(qp, &r, NULL), 0);
	struct uw_send_wr s = { .opcode = UW_WR_SEND };
	assert_int_equal(uw_post_send(qp, &s, NULL), EINVAL); /* INIT: not yet */
	assert_int_equal(uw_modify_qp(qp, UW_QPS_SQD), EINVAL);
	assert_int_equal(uw_modify_qp(qp, UW_QPS_RTR), EINVAL);
	assert_int_equal(uw_modify_qp(qp, UW_QPS_RESET), 0);
	struct uw_wc wc = wait_wc(p.c.cq);
	assert_int_equal(wc.wr_id, 77);
	assert_int_equal(wc.status, UW_WC_WR_FLUSH_ERR);
	assert_int_equal(uw_post_recv(qp, &r, NULL), EINVAL);
	assert_int_equal(uw_modify_qp(qp, UW_QPS_INIT), 0);
	assert_int_equal(uw_post_recv(qp, &r, NULL), 0);
	/* destroyed: its flushed receive stays queued, naming no freed QP */
	uint32_t qpn = qp->qp_num;
	assert_int_equal(uw_destroy_qp(qp), 0);
	wc = wait_wc(p.c.cq);
	assert_int_equal(wc.status, UW_WC_WR_FLUSH_ERR);
	assert_int_equal(wc.wr_id, 77);
	assert_null(wc.qp);
	assert_int_equal(wc.qp_num, qpn);
	/* a QP with no receive queue (qperf's senders): made; a receive
	 * finds the queue full */
	struct uw_qp_init_attr nq = { .send_cq = p.c.cq,
				      .recv_cq = p.c.cq,
				      .cap = { 4, 0, 1, 1, 0 } };
	struct uw_qp *sender = uw_create_qp(p.c.pd, &nq);
	assert_non_null(sender);
	assert_int_equal(uw_post_recv(sender, &r, NULL), ENOMEM);
	assert_int_equal(uw_destroy_qp(sender), 0);

	/* SQD pauses the send queue; RTS lets it go, in order */
	pair_connect(&p, NULL, NULL, 8, 0);
	assert_int_equal(uw_qp_get_state(p.c.qp), UW_QPS_RTS);
	assert_int_equal(uw_modify_qp(p.c.qp, UW_QPS_SQD), 0);
	for (int i = 0; i < 3; i++) {
		p.c.buf[i] = (uint8_t)('a' + i);
		assert_int_equal(post(p.c.qp, UW_WR_SEND, (uint64_t)i, p.c.buf + i, 1, p.c.mr->lkey,
				      0, 0, UW_SEND_SIGNALED),
				 0);
	}
	assert_int_equal(uw_cq_wait(p.c.cq, 1, 200), -ETIMEDOUT);
	assert_int_equal(uw_cq_wait(p.s.cq, 1, 10), -ETIMEDOUT);
	assert_int_equal(uw_modify_qp(p.c.qp, UW_QPS_INIT), EINVAL);
	assert_int_equal(uw_modify_qp(p.c.qp, UW_QPS_RTS), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wait_wc(p.c.cq).wr_id, (uint64_t)i);
		wc = wait_wc(p.s.cq);
		assert_int_equal(p.s.buf[(wc.wr_id - 100) * 1024], 'a' + i);
	}
	/* ERR: the connection closes, every posted receive flushes */
	assert_int_equal(uw_modify_qp(p.s.qp, UW_QPS_ERR), 0);
	for (int i = 0; i < 5; i++)
		assert_int_equal(wait_wc(p.s.cq).status, UW_WC_WR_FLUSH_ERR);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_DISCONNECTED));
	assert_int_equal(uw_qp_get_state(p.c.qp), UW_QPS_ERR);
	assert_int_equal(post(p.s.qp, UW_WR_SEND, 9, p.s.buf, 1, p.s.mr->lkey, 0, 0, 0), 0);
	wc = wait_wc(p.s.cq);
	assert_int_equal(wc.wr_id, 9);
	assert_int_equal(wc.status, UW_WC_WR_FLUSH_ERR);
	pair_close(&p);
}

static void peer_to_peer_with_each_rtr_type(void **state)
{
	static const int types[] = { UW_RTR_WRITE, UW_RTR_READ, UW_RTR_SEND };
	for (int k = 0; k < 3; k++) {
		struct pair p;
		pair_open(&p, UW_ACCESS_LOCAL_WRITE);
		struct uw_conn_param cp = { .p2p = 1, .rtr_types = types[k] };
		pair_connect(&p, &cp, NULL, 2, 0);
		if (types[k] == UW_RTR_SEND) {
			/* a zero-length Send RTR takes a receive (RFC 6581) */
			struct uw_wc wc = wait_wc(p.s.cq);
			assert_int_equal(wc.status, UW_WC_SUCCESS);
			assert_int_equal(wc.byte_len, 0);
		}
		memcpy(p.c.buf, "after the RTR", 14);
		assert_int_equal(post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 14, p.c.mr->lkey, 0, 0, 0),
				 0);
		struct uw_wc wc = wait_wc(p.s.cq);
		assert_int_equal(wc.status, UW_WC_SUCCESS);
		assert_int_equal(wc.byte_len, 14);
		assert_string_equal((char *)p.s.buf + (wc.wr_id - 100) * 1024, "after the RTR");
		assert_int_equal(uw_qp_get_state(p.s.qp), UW_QPS_RTS);
		pair_close(&p);
	}
}

/* ORD 2: ten Reads posted at once go two at a time and complete in order. */
static void reads_beyond_ord_wait_their_turn(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_READ);
	for (int i = 0; i < BUF; i++)
		p.s.buf[i] = (uint8_t)(i * 7);
	struct uw_conn_param cp = { .ord = 2,
				    .ird = 3,
				    .markers = 1,
				    .private_data = "rd",
				    .private_data_len = 3 },
			     sp = { .ird = 2, .ord = 2 };
	pair_connect(&p, &cp, &sp, 0, 0);
	/* the request carried the initiator's parameters */
	assert_int_equal(p.req.ord, 2);
	assert_int_equal(p.req.ird, 3);
	assert_int_equal(p.req.mpa_rev, 2);
	assert_true(p.req.crc);
	assert_true(p.req.markers_tx); /* it asked us for markers */
	assert_int_equal(p.req.private_data_len, 3);
	assert_string_equal(p.req_pdata, "rd");
	for (int i = 0; i < 10; i++)
		assert_int_equal(post(p.c.qp, UW_WR_RDMA_READ, (uint64_t)i, p.c.buf + i * 4096,
				      4096, p.c.mr->lkey, (uintptr_t)p.s.buf + (uint64_t)i * 4096,
				      p.s.mr->rkey, UW_SEND_SIGNALED),
				 0);
	for (int i = 0; i < 10; i++) {
		struct uw_wc wc = wait_wc(p.c.cq);
		assert_int_equal(wc.status, UW_WC_SUCCESS);
		assert_int_equal(wc.wr_id, (uint64_t)i);
	}
	assert_memory_equal(p.c.buf, p.s.buf, 10 * 4096);
	pair_close(&p);
}

/* ---- ordinary TCP sockets handed to the CM ---- */

/* A plain TCP pair over loopback: *c connected to *a (accepted). */
static void tcp_pair(int *c, int *a)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &sl), 0);
	*c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*a = accept(l, NULL, NULL);
	assert_true(*a >= 0);
	close(l);
}

/* A connection made with connect(2) and accept(2) becomes an iWARP one:
 * the client hands its socket to uw_cm_connect_fd, the server peeks at
 * the first bytes (the MPA Request's key, as a program that also serves
 * plain TCP would), hands its socket to a handoff listener, and accepts
 * the CONNECT_REQUEST; a Send then crosses. */
static void an_ordinary_tcp_connection_becomes_iwarp(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	int cfd, afd;
	tcp_pair(&cfd, &afd);
	struct sockaddr_in ca;
	socklen_t cl = sizeof(ca);
	assert_int_equal(getsockname(cfd, (struct sockaddr *)&ca, &cl), 0);
	p.s.lid = uw_cm_create_id(p.s.ch, NULL);
	assert_int_equal(uw_cm_listen_handoff(p.s.lid), 0);
	assert_int_equal(uw_cm_listen_handoff(p.s.lid), EBUSY);
	p.c.id = uw_cm_create_id(p.c.ch, NULL);
	struct uw_qp_init_attr qa = { .send_cq = p.c.cq,
				      .recv_cq = p.c.cq,
				      .cap = { 64, 64, 4, 4, 64 } };
	p.c.qp = uw_cm_create_qp(p.c.id, p.c.pd, &qa);
	assert_int_equal(uw_cm_connect_fd(p.c.id, cfd, NULL), 0);
	char key[16];
	assert_int_equal(recv(afd, key, sizeof(key), MSG_PEEK | MSG_WAITALL), (ssize_t)sizeof(key));
	assert_memory_equal(key, "MPA ID Req Frame", 16);
	assert_int_equal(uw_cm_request_fd(p.s.lid, afd), 0);
	struct uw_cm_event *e = expect_event(p.s.ch, UW_CM_EVENT_CONNECT_REQUEST);
	p.s.id = e->id;
	assert_int_equal(((struct sockaddr_in *)&e->id->peer_addr)->sin_port, ca.sin_port);
	uw_cm_ack_event(e);
	struct uw_qp_init_attr sa = { .send_cq = p.s.cq,
				      .recv_cq = p.s.cq,
				      .cap = { 64, 64, 4, 4, 64 } };
	p.s.qp = uw_cm_create_qp(p.s.id, p.s.pd, &sa);
	struct uw_sge g = { (uintptr_t)p.s.buf, 1024, p.s.mr->lkey };
	struct uw_recv_wr r = { .wr_id = 7, .sg_list = &g, .num_sge = 1 };
	assert_int_equal(uw_post_recv(p.s.qp, &r, NULL), 0);
	assert_int_equal(uw_cm_accept(p.s.id, NULL), 0);
	uw_cm_ack_event(expect_event(p.c.ch, UW_CM_EVENT_ESTABLISHED));
	uw_cm_ack_event(expect_event(p.s.ch, UW_CM_EVENT_ESTABLISHED));
	assert_int_equal(((struct sockaddr_in *)&p.c.id->local_addr)->sin_port, ca.sin_port);
	memcpy(p.c.buf, "handed over", 11);
	assert_int_equal(
		post(p.c.qp, UW_WR_SEND, 1, p.c.buf, 11, p.c.mr->lkey, 0, 0, UW_SEND_SIGNALED), 0);
	assert_int_equal(wait_wc(p.c.cq).status, UW_WC_SUCCESS);
	struct uw_wc wc = wait_wc(p.s.cq);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 11);
	assert_memory_equal(p.s.buf, "handed over", 11);
	pair_close(&p);
}

/* What may be handed over, and a handed socket whose peer speaks
 * something else: it is closed, and the listener hears nothing. */
static void handed_sockets_are_checked(void **state)
{
	struct pair p;
	pair_open(&p, UW_ACCESS_LOCAL_WRITE);
	p.s.lid = uw_cm_create_id(p.s.ch, NULL);
	int cfd, afd;
	tcp_pair(&cfd, &afd);
	assert_int_equal(uw_cm_request_fd(p.s.lid, afd), EINVAL); /* not a listener */
	assert_false(fcntl(afd, F_GETFL) & O_NONBLOCK);           /* left as it was */
	assert_int_equal(uw_cm_listen_handoff(p.s.lid), 0);
	assert_int_equal(uw_cm_request_fd(p.s.lid, -1), EINVAL);
	int udp = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(uw_cm_request_fd(p.s.lid, udp), EINVAL);
	p.c.id = uw_cm_create_id(p.c.ch, NULL);
	assert_int_equal(uw_cm_connect_fd(p.c.id, cfd, NULL), EINVAL); /* no QP */
	assert_false(fcntl(cfd, F_GETFL) & O_NONBLOCK);                /* and left as it was */
	struct uw_qp_init_attr qa = { .send_cq = p.c.cq,
				      .recv_cq = p.c.cq,
				      .cap = { 64, 64, 4, 4, 64 } };
	p.c.qp = uw_cm_create_qp(p.c.id, p.c.pd, &qa);
	assert_int_equal(uw_cm_connect_fd(p.c.id, udp, NULL), EINVAL);
	close(udp);
	/* the caller kept cfd: it speaks HTTP to the handed socket */
	assert_int_equal(uw_cm_request_fd(p.s.lid, afd), 0);
	static const char http[] = "GET / HTTP/1.0\r\nHost: x\r\n\r\n";
	assert_int_equal(write(cfd, http, sizeof(http) - 1), (ssize_t)sizeof(http) - 1);
	struct timeval tv = { 5, 0 };
	setsockopt(cfd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	char b[64];
	ssize_t n;
	while ((n = read(cfd, b, sizeof(b))) > 0) {
		/* whatever uwarp says before it closes */
	}
	assert_true(n == 0 || (n < 0 && errno == ECONNRESET)); /* closed, not timed out */
	struct uw_cm_event *e;
	assert_int_not_equal(uw_cm_get_event_timeout(p.s.ch, &e, 200), 0);
	close(cfd);
	pair_close(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memory_windows_grant_a_sub_range_and_die_when_invalidated),
		cmocka_unit_test(a_region_is_addressed_from_its_iova),
		cmocka_unit_test(a_bind_in_the_send_queue_completes_in_order),
		cmocka_unit_test(async_events_say_what_failed),
		cmocka_unit_test(reads_of_memory_that_changes_meanwhile_complete),
		cmocka_unit_test(atomics_return_the_old_value_and_update_memory),
		cmocka_unit_test(write_with_immediate_and_solicited_events),
		cmocka_unit_test(write_with_immediate_train_keeps_every_value),
		cmocka_unit_test(a_message_that_closes_a_gather_list_completes_alone),
		cmocka_unit_test(a_send_cq_overflow_ends_the_connection_cleanly),
		cmocka_unit_test(unsignalled_sends_complete_only_when_they_fail),
		cmocka_unit_test(shared_receive_queue_feeds_two_connections),
		cmocka_unit_test(a_resized_cq_keeps_its_completions_in_order),
		cmocka_unit_test(keepalive_beyond_the_kernels_limit_is_einval),
		cmocka_unit_test(the_type_of_service_reaches_the_sockets),
		cmocka_unit_test(completion_channels_work_in_epoll_and_libuv),
		cmocka_unit_test(qp_states_reset_init_sqd_and_error),
		cmocka_unit_test(peer_to_peer_with_each_rtr_type),
		cmocka_unit_test(an_ordinary_tcp_connection_becomes_iwarp),
		cmocka_unit_test(handed_sockets_are_checked),
		cmocka_unit_test(reads_beyond_ord_wait_their_turn),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
