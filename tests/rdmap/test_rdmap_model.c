/*
 * test_rdmap_model.c: the model test. Random valid sequences of every
 * message (Write, Send and its SE/Invalidate forms, Read, the atomics,
 * Immediate Data; sizes 0..1 MiB; random MULPDU, CRC and markers), sent by
 * one endpoint and received by another in random pieces, must place exactly
 * the bytes the sender meant at exactly the addresses meant, and complete
 * in order. A shadow copy of every buffer is the oracle.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <errno.h>

#include "mpa/be.h"

#include "rdmap/rdmap_atomic.h"
#include "tools/lib/rdmap_sim.h"

#define MEM (2u << 20)
#define RECV_ARENA (4u << 20)
#define OPS 120

static uint32_t rs;
static uint32_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 17;
	rs ^= rs << 5;
	return rs;
}

static uint32_t rnd_size(void)
{
	uint32_t k = rnd() % 10;
	if (k < 5)
		return rnd() % 4097;
	if (k < 9)
		return rnd() % 65537;
	return rnd() % ((1u << 20) + 1);
}

struct model {
	struct sim_end a, b;
	uint8_t *src;             /* A's source data */
	uint8_t *bmem, *bexp;     /* B's region and its oracle */
	uint8_t *amem, *aexp;     /* A's Read sink */
	uint8_t *recv, *recv_exp; /* B's receive arena */
	size_t recv_used;
	uint32_t bstag, astag;
	uint32_t mw[OPS]; /* invalidatable STags at B */
	int nmw;
	struct rdmap_event want_b[OPS * 2], want_a[OPS * 2];
	int nwant_b, nwant_a;
	uint64_t results[OPS]; /* atomic originals land here at A */
};

/* Random pieces of a buffer, as a scatter/gather list. */
static int split(uint8_t *p, uint32_t len, struct iovec *iov, int max)
{
	int n = 1 + (int)(rnd() % (uint32_t)max);
	uint32_t off = 0;
	for (int i = 0; i < n; i++) {
		uint32_t k = i == n - 1 ? len - off : (len - off) ? rnd() % (len - off + 1) : 0;
		iov[i] = (struct iovec){ p + off, k };
		off += k;
	}
	return n;
}

/* Deliver what one side queued, in random pieces. */
static void pump(struct sim_end *to, struct sim_wire *w)
{
	size_t off = 0;
	while (off < w->len) {
		size_t k = 1 + rnd() % (rnd() % 4 ? 70000 : 7);
		if (k > w->len - off)
			k = w->len - off;
		assert_int_equal(sim_end_feed(to, w->b + off, k), 0);
		off += k;
	}
	w->len = 0;
}

static void exchange(struct model *m, struct sim_wire *w)
{
	pump(&m->b, w);
	sim_end_respond(&m->b, w);
	pump(&m->a, w);
}

static void one_op(struct model *m, int i, struct sim_wire *w)
{
	struct rdmap_msg msg;
	struct iovec iov[8];
	uint32_t kind = rnd() % 11;
	memset(&msg, 0, sizeof(msg));

	if (kind <= 2) { /* RDMA Write */
		uint32_t len = rnd_size() % (MEM / 2);
		uint32_t dst = rnd() % (MEM - len + 1), s = rnd() % (MEM - len + 1);
		msg.opcode = RDMAP_RDMA_WRITE;
		msg.nsge = split(m->src + s, len, iov, 4);
		msg.sge = iov;
		msg.stag = m->bstag;
		msg.to = 0x4000000000ull + dst;
		memcpy(m->bexp + dst, m->src + s, len);
		m->want_b[m->nwant_b++] =
			(struct rdmap_event){ .kind = RDMAP_EV_WRITE, .len = len };
	} else if (kind <= 5) { /* the Send variants */
		static const uint8_t ops[] = { RDMAP_SEND, RDMAP_SEND_SE, RDMAP_SEND_INVAL,
					       RDMAP_SEND_SE_INVAL };
		uint32_t len = rnd_size() % (RECV_ARENA / OPS / 2);
		uint32_t s = rnd() % (MEM - len + 1);
		uint32_t room = len + rnd() % 100;
		if (m->recv_used + room > RECV_ARENA)
			return;
		struct iovec r[SIM_MAX_SGE];
		int nr = split(m->recv + m->recv_used, room, r, SIM_MAX_SGE);
		uint64_t cookie = sim_rq_post(&m->b.rq, r, nr);
		memcpy(m->recv_exp + m->recv_used, m->src + s, len);
		m->recv_used += room;
		msg.opcode = ops[rnd() % 4];
		msg.nsge = split(m->src + s, len, iov, 4);
		msg.sge = iov;
		struct rdmap_event want = { .kind = RDMAP_EV_RECV, .cookie = cookie, .len = len };
		want.solicited = msg.opcode == RDMAP_SEND_SE || msg.opcode == RDMAP_SEND_SE_INVAL;
		if (msg.opcode == RDMAP_SEND_INVAL || msg.opcode == RDMAP_SEND_SE_INVAL) {
			msg.inval_stag = m->mw[m->nmw];
			want.invalidated = true;
			want.inval_stag = m->mw[m->nmw++];
		}
		m->want_b[m->nwant_b++] = want;
	} else if (kind <= 7) { /* RDMA Read */
		uint32_t len = rnd_size() % (MEM / 2);
		uint32_t from = rnd() % (MEM - len + 1), to = rnd() % (MEM - len + 1);
		msg.opcode = RDMAP_RDMA_READ_REQ;
		msg.sink_stag = m->astag;
		msg.sink_to = to;
		msg.stag = m->bstag;
		msg.to = 0x4000000000ull + from;
		msg.len = len;
		msg.cookie = 1000 + (uint64_t)i;
		memcpy(m->aexp + to, m->bexp + from, len);
		m->want_b[m->nwant_b++] =
			(struct rdmap_event){ .kind = RDMAP_EV_READ_REQ, .len = len };
		m->want_a[m->nwant_a++] = (struct rdmap_event){ .kind = RDMAP_EV_READ_DONE,
								.cookie = msg.cookie,
								.len = len };
	} else if (kind <= 9) { /* an atomic on an aligned word */
		uint32_t at = (rnd() % (MEM / 8)) * 8;
		uint64_t old;
		memcpy(&old, m->bexp + at, 8);
		msg.opcode = RDMAP_ATOMIC_REQ;
		msg.atomic_op = (uint8_t)(rnd() % 3);
		msg.stag = m->bstag;
		msg.to = 0x4000000000ull + at;
		msg.data = (uint64_t)rnd() << 32 | rnd();
		msg.data_mask = rnd() % 2 ? ~0ull : (uint64_t)rnd() << 32 | rnd();
		msg.cmp = rnd() % 2 ? old : (uint64_t)rnd();
		msg.cmp_mask = rnd() % 4 ? ~0ull : (uint64_t)rnd() << 32;
		msg.result = (uint8_t *)&m->results[i];
		msg.cookie = 2000 + (uint64_t)i;
		uint64_t now = rdmap_atomic_result(old, msg.atomic_op, msg.data, msg.data_mask,
						   msg.cmp, msg.cmp_mask);
		memcpy(m->bexp + at, &now, 8);
		m->want_b[m->nwant_b++] =
			(struct rdmap_event){ .kind = RDMAP_EV_ATOMIC_REQ, .value = old };
		m->want_a[m->nwant_a++] = (struct rdmap_event){ .kind = RDMAP_EV_ATOMIC_DONE,
								.cookie = msg.cookie,
								.value = old };
	} else { /* Immediate Data */
		struct iovec r = { m->recv + m->recv_used, 16 };
		if (m->recv_used + 16 > RECV_ARENA)
			return;
		m->recv_used += 16; /* the receive's buffer stays untouched */
		uint64_t cookie = sim_rq_post(&m->b.rq, &r, 1);
		msg.opcode = rnd() % 2 ? RDMAP_IMMEDIATE : RDMAP_IMMEDIATE_SE;
		msg.value = (uint64_t)rnd() << 32 | rnd();
		m->want_b[m->nwant_b++] =
			(struct rdmap_event){ .kind = RDMAP_EV_IMMEDIATE,
					      .cookie = cookie,
					      .value = msg.value,
					      .solicited = msg.opcode == RDMAP_IMMEDIATE_SE };
	}
	assert_int_equal(sim_end_send(&m->a, &msg, w), 0);
	exchange(m, w);
}

static void same_event(const struct rdmap_event *got, const struct rdmap_event *want, int i)
{
	if (got->kind != want->kind || got->cookie != want->cookie || got->len != want->len ||
	    got->solicited != want->solicited || got->invalidated != want->invalidated ||
	    got->inval_stag != want->inval_stag || got->value != want->value)
		fail_msg("completion %d: kind %d cookie %llu len %llu, want kind %d cookie %llu "
			 "len %llu",
			 i, got->kind, (unsigned long long)got->cookie,
			 (unsigned long long)got->len, want->kind, (unsigned long long)want->cookie,
			 (unsigned long long)want->len);
}

static void run_model(uint32_t seed)
{
	struct model *m = calloc(1, sizeof(*m));
	struct sim_wire w = { 0 };
	rs = seed;
	bool crc = rnd() & 1, ma = rnd() % 4 == 0, mb = rnd() % 4 == 0;
	uint32_t mulpdu = 71 + rnd() % (rnd() % 2 ? 2000 : 65460);
	struct sim_cfg ca = { .crc = crc,
			      .markers_tx = ma,
			      .markers_rx = mb,
			      .rfc7306 = true,
			      .ird = 16,
			      .ord = 16,
			      .mulpdu = mulpdu,
			      .pd = 3,
			      .qp = 7 };
	struct sim_cfg cb = ca;
	cb.markers_tx = mb;
	cb.markers_rx = ma;
	assert_int_equal(sim_end_init(&m->a, &ca), 0);
	assert_int_equal(sim_end_init(&m->b, &cb), 0);
	m->src = malloc(MEM);
	m->bmem = malloc(MEM);
	m->bexp = malloc(MEM);
	m->amem = malloc(MEM);
	m->aexp = malloc(MEM);
	m->recv = malloc(RECV_ARENA);
	m->recv_exp = malloc(RECV_ARENA);
	for (uint32_t i = 0; i < MEM; i++) {
		m->src[i] = (uint8_t)rnd();
		m->bmem[i] = m->bexp[i] = (uint8_t)(i * 7);
		m->amem[i] = m->aexp[i] = (uint8_t)(i * 13);
	}
	memset(m->recv, 0xab, RECV_ARENA);
	memset(m->recv_exp, 0xab, RECV_ARENA);
	uint32_t all = DDP_LOCAL_WRITE | DDP_REMOTE_WRITE | DDP_REMOTE_READ | DDP_REMOTE_ATOMIC;
	m->bstag = sim_mem_add(&m->b.mem, m->bmem, 0x4000000000ull, MEM, all, 3, 0, false);
	m->astag = sim_mem_add(&m->a.mem, m->amem, 0, MEM, DDP_LOCAL_WRITE, 3, 0, false);
	for (int i = 0; i < 40; i++)
		m->mw[i] = sim_mem_add(&m->b.mem, m->bmem, 0, 64, all, 3, 7, true);

	for (int i = 0; i < OPS && m->nmw < 40; i++)
		one_op(m, i, &w);

	assert_false(m->a.failed);
	assert_false(m->b.failed);
	/* the sequence really exercised the stream */
	assert_true(m->nwant_b > OPS / 2);
	assert_int_equal(m->b.nev, m->nwant_b);
	for (int i = 0; i < m->nwant_b; i++)
		same_event(&m->b.ev[i], &m->want_b[i], i);
	assert_int_equal(m->a.nev, m->nwant_a);
	for (int i = 0; i < m->nwant_a; i++) {
		same_event(&m->a.ev[i], &m->want_a[i], i);
		if (m->want_a[i].kind == RDMAP_EV_ATOMIC_DONE)
			assert_int_equal(m->results[m->want_a[i].cookie - 2000],
					 m->want_a[i].value);
	}
	assert_memory_equal(m->bmem, m->bexp, MEM);
	assert_memory_equal(m->amem, m->aexp, MEM);
	assert_memory_equal(m->recv, m->recv_exp, RECV_ARENA);
	/* every invalidated window is gone, the rest still resolve */
	for (int i = 0; i < 40; i++) {
		struct ddp_region r;
		assert_int_equal(sim_mem_lookup(&m->b.mem, m->mw[i], &r) != 0, i < m->nmw);
	}
	assert_int_equal(rdmap_orq_count(&m->a.conn), 0);
	assert_int_equal(rdmap_irq_count(&m->b.conn), 0);

	sim_wire_free(&w);
	sim_end_fini(&m->a);
	sim_end_fini(&m->b);
	free(m->src);
	free(m->bmem);
	free(m->bexp);
	free(m->amem);
	free(m->aexp);
	free(m->recv);
	free(m->recv_exp);
	free(m);
}

static void random_sequences_place_exactly_and_complete_in_order(void **state)
{
	for (uint32_t seed = 1; seed <= 12; seed++)
		run_model(seed * 2654435761u);
}

/* Requests beyond ORD wait: the transmitter refuses with EAGAIN and nothing
 * changes until a Response frees a slot. */
static void ord_bounds_outstanding_requests(void **state)
{
	struct sim_end a, b;
	struct sim_wire w = { 0 };
	static uint8_t mem[4096], sink[4096];
	struct sim_cfg cfg = {
		.crc = true, .rfc7306 = true, .ird = 2, .ord = 2, .mulpdu = 1454, .pd = 1, .qp = 1
	};
	sim_end_init(&a, &cfg);
	sim_end_init(&b, &cfg);
	uint32_t bs = sim_mem_add(&b.mem, mem, 0, sizeof(mem), DDP_REMOTE_READ, 1, 0, false);
	uint32_t as = sim_mem_add(&a.mem, sink, 0, sizeof(sink), DDP_LOCAL_WRITE, 1, 0, false);
	struct rdmap_msg rd = {
		.opcode = RDMAP_RDMA_READ_REQ, .sink_stag = as, .stag = bs, .len = 8
	};
	assert_int_equal(sim_end_send(&a, &rd, &w), 0);
	assert_int_equal(sim_end_send(&a, &rd, &w), 0);
	uint32_t msn = a.conn.tx_msn[DDP_QN_READ_REQ];
	assert_int_equal(sim_end_send(&a, &rd, &w), -EAGAIN);
	assert_int_equal(a.conn.tx_msn[DDP_QN_READ_REQ], msn);
	assert_int_equal(rdmap_orq_count(&a.conn), 2);
	/* deliver, answer: the slots free up */
	assert_int_equal(sim_end_feed(&b, w.b, w.len), 0);
	w.len = 0;
	assert_int_equal(sim_end_respond(&b, &w), 2);
	assert_int_equal(sim_end_feed(&a, w.b, w.len), 0);
	assert_int_equal(rdmap_orq_count(&a.conn), 0);
	assert_int_equal(sim_end_send(&a, &rd, &w), 0);
	sim_wire_free(&w);
	sim_end_fini(&a);
	sim_end_fini(&b);
}

/* Zero-length operations: a Write that names no valid STag is accepted
 * (no STag check), a zero-length Read gets one zero-length Response, a
 * zero-length Send completes a receive. */
static void zero_length_operations(void **state)
{
	struct sim_end a, b;
	struct sim_wire w = { 0 };
	static uint8_t sink[64];
	struct sim_cfg cfg = { .crc = true, .ird = 1, .ord = 1, .mulpdu = 1454, .pd = 1, .qp = 1 };
	sim_end_init(&a, &cfg);
	sim_end_init(&b, &cfg);
	uint32_t as = sim_mem_add(&a.mem, sink, 0, sizeof(sink), DDP_LOCAL_WRITE, 1, 0, false);
	struct iovec r = { sink, 8 };
	sim_rq_post(&b.rq, &r, 1);
	struct rdmap_msg wr = { .opcode = RDMAP_RDMA_WRITE, .stag = 0xdeadbe00, .to = 123 };
	struct rdmap_msg rd = {
		.opcode = RDMAP_RDMA_READ_REQ, .sink_stag = as, .stag = 1, .len = 0, .cookie = 9
	};
	struct rdmap_msg sd = { .opcode = RDMAP_SEND };
	assert_int_equal(sim_end_send(&a, &wr, &w), 0);
	assert_int_equal(w.len, 20); /* one FPDU: ULPDU 14, CRC */
	assert_int_equal(sim_end_send(&a, &rd, &w), 0);
	assert_int_equal(sim_end_send(&a, &sd, &w), 0);
	assert_int_equal(sim_end_feed(&b, w.b, w.len), 0);
	assert_int_equal(b.nev, 3);
	assert_int_equal(b.ev[0].kind, RDMAP_EV_WRITE);
	assert_int_equal(b.ev[0].len, 0);
	assert_int_equal(b.ev[1].kind, RDMAP_EV_READ_REQ);
	assert_int_equal(b.ev[2].kind, RDMAP_EV_RECV);
	assert_int_equal(b.ev[2].len, 0);
	w.len = 0;
	assert_int_equal(sim_end_respond(&b, &w), 1);
	assert_int_equal(w.len, 20); /* one zero-length Read Response */
	assert_int_equal(sim_end_feed(&a, w.b, w.len), 0);
	assert_int_equal(a.nev, 1);
	assert_int_equal(a.ev[0].kind, RDMAP_EV_READ_DONE);
	assert_int_equal(a.ev[0].cookie, 9);
	sim_wire_free(&w);
	sim_end_fini(&a);
	sim_end_fini(&b);
}

/* RFC 7306 messages are refused at the sender toward a peer without it. */
static void rfc7306_needs_a_uwarp_peer(void **state)
{
	struct sim_end a;
	struct sim_wire w = { 0 };
	struct sim_cfg cfg = { .crc = true, .ird = 1, .ord = 1, .mulpdu = 1454 };
	sim_end_init(&a, &cfg);
	static const uint8_t ops[] = { RDMAP_IMMEDIATE,
				       RDMAP_IMMEDIATE_SE,
				       RDMAP_ATOMIC_REQ,
				       RDMAP_ATOMIC_RESP,
				       RDMAP_TERMINATE,
				       0x8,
				       0xf };
	for (size_t i = 0; i < sizeof(ops); i++) {
		struct rdmap_msg m = { .opcode = ops[i] };
		assert_int_equal(sim_end_send(&a, &m, &w), -EINVAL);
	}
	assert_int_equal(w.len, 0);
	sim_end_fini(&a);
}

/* Segmentation on the wire: every segment of a Send carries the same MSN
 * and its MO, a Write's TO advances, L only on the last. */
static void segments_carry_msn_mo_to_and_l(void **state)
{
	struct sim_end a;
	struct sim_wire w = { 0 };
	static uint8_t data[1000];
	struct sim_cfg cfg = { .mulpdu = 18 + 300, .ird = 1, .ord = 1 };
	sim_end_init(&a, &cfg);
	struct iovec iov = { data, sizeof(data) };
	struct rdmap_msg s = { .opcode = RDMAP_SEND, .sge = &iov, .nsge = 1 };
	assert_int_equal(sim_end_send(&a, &s, &w), 0);
	size_t off = 0;
	for (uint32_t k = 0; k < 4; k++) {
		const uint8_t *h = w.b + off + 2;
		uint32_t n = k < 3 ? 300 : 100;
		assert_int_equal((w.b[off] << 8 | w.b[off + 1]), 18 + n);
		assert_int_equal(h[0], k < 3 ? 0x01 : 0x41);
		assert_int_equal(be32_get(h + DDP_OFF_MSN), 1);
		assert_int_equal(be32_get(h + DDP_OFF_MO), 300 * k);
		off += 2 + 18 + n + fpdu_pad(18 + n) + 4;
	}
	assert_int_equal(off, w.len);
	w.len = 0;
	struct rdmap_msg wr = {
		.opcode = RDMAP_RDMA_WRITE, .sge = &iov, .nsge = 1, .stag = 5, .to = 77
	};
	cfg.mulpdu = 14 + 400;
	a.conn.cfg.mulpdu = cfg.mulpdu;
	assert_int_equal(sim_end_send(&a, &wr, &w), 0);
	off = 0;
	for (uint32_t k = 0; k < 3; k++) {
		const uint8_t *h = w.b + off + 2;
		uint32_t n = k < 2 ? 400 : 200;
		assert_int_equal(h[0], k < 2 ? 0x81 : 0xc1);
		assert_int_equal(be32_get(h + DDP_OFF_STAG), 5);
		assert_int_equal(be64_get(h + DDP_OFF_TO), 77 + 400 * k);
		off += 2 + 14 + n + fpdu_pad(14 + n) + 4;
	}
	/* and a second Send takes MSN 2 */
	w.len = 0;
	assert_int_equal(sim_end_send(&a, &s, &w), 0);
	assert_int_equal(be32_get(w.b + 2 + DDP_OFF_MSN), 2);
	sim_wire_free(&w);
	sim_end_fini(&a);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(random_sequences_place_exactly_and_complete_in_order),
		cmocka_unit_test(ord_bounds_outstanding_requests),
		cmocka_unit_test(zero_length_operations),
		cmocka_unit_test(rfc7306_needs_a_uwarp_peer),
		cmocka_unit_test(segments_carry_msn_mo_to_and_l),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
