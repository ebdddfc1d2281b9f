/*
 * test_rdmap_noalloc.c: the receive hot path (FPDU parser, DDP/RDMAP
 * receive core, placement) and the transmit core never allocate per
 * message. Linked with --wrap=malloc/calloc/realloc so every allocation
 * from our code is counted.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tools/lib/rdmap_sim.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);

static unsigned long allocations;

void *__wrap_malloc(size_t n)
{
	allocations++;
	return __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t m)
{
	allocations++;
	return __real_calloc(n, m);
}

void *__wrap_realloc(void *p, size_t n)
{
	allocations++;
	return __real_realloc(p, n);
}

static uint8_t src[1 << 20], bmem[1 << 20], amem[1 << 20], recvbuf[64 << 10];

static void receive_path_does_not_allocate(void **state)
{
	struct sim_end *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct sim_cfg cfg = { .crc = true,
			       .markers_tx = true,
			       .markers_rx = true,
			       .rfc7306 = true,
			       .ird = 8,
			       .ord = 8,
			       .mulpdu = 1454,
			       .pd = 1,
			       .qp = 1 };
	struct sim_wire w = { 0 }, resp = { 0 };
	sim_end_init(a, &cfg);
	sim_end_init(b, &cfg);
	uint32_t all = DDP_LOCAL_WRITE | DDP_REMOTE_WRITE | DDP_REMOTE_READ | DDP_REMOTE_ATOMIC;
	uint32_t bs = sim_mem_add(&b->mem, bmem, 0, sizeof(bmem), all, 1, 0, false);
	uint32_t as = sim_mem_add(&a->mem, amem, 0, sizeof(amem), DDP_LOCAL_WRITE, 1, 0, false);
	uint64_t result;
	/* 400 messages of every kind */
	for (int i = 0; i < 400; i++) {
		struct iovec iov = { src + i, (size_t)(i * 997) % 70000 };
		struct rdmap_msg m = { .sge = &iov, .nsge = 1 };
		switch (i % 5) {
		case 0:
			m.opcode = RDMAP_RDMA_WRITE;
			m.stag = bs;
			m.to = (uint64_t)i * 8;
			break;
		case 1: {
			struct iovec r = { recvbuf, sizeof(recvbuf) };
			sim_rq_post(&b->rq, &r, 1);
			m.opcode = RDMAP_SEND_SE;
			iov.iov_len %= sizeof(recvbuf);
			break;
		}
		case 2:
			m.opcode = RDMAP_RDMA_READ_REQ;
			m.sink_stag = as;
			m.stag = bs;
			m.len = (uint32_t)iov.iov_len;
			break;
		case 3:
			m.opcode = RDMAP_ATOMIC_REQ;
			m.atomic_op = RDMAP_ATOMIC_FETCH_ADD;
			m.stag = bs;
			m.to = 64;
			m.data = 1;
			m.result = (uint8_t *)&result;
			break;
		case 4: {
			struct iovec r = { recvbuf, 8 };
			sim_rq_post(&b->rq, &r, 1);
			m.opcode = RDMAP_IMMEDIATE;
			m.value = (uint64_t)i;
			break;
		}
		}
		assert_int_equal(sim_end_send(a, &m, &w), 0);
		/* answer as we go so ORD never blocks; responses are kept */
		assert_int_equal(sim_end_feed(b, w.b, w.len), 0);
		sim_end_respond(b, &resp);
		assert_int_equal(sim_end_feed(a, resp.b, resp.len), 0);
		w.len = resp.len = 0;
	}
	assert_int_equal(b->nev, 400);
	assert_false(b->failed);

	/* Now replay a fresh stream into a fresh receiver, counting. */
	struct sim_end *a2 = calloc(1, sizeof(*a2)), *b2 = calloc(1, sizeof(*b2));
	sim_end_init(a2, &cfg);
	sim_end_init(b2, &cfg);
	bs = sim_mem_add(&b2->mem, bmem, 0, sizeof(bmem), all, 1, 0, false);
	for (int i = 0; i < 200; i++) {
		struct iovec iov = { src + i, (size_t)(i * 997) % 70000 };
		struct rdmap_msg m = { .sge = &iov, .nsge = 1, .stag = bs, .to = (uint64_t)i * 8 };
		m.opcode = i % 2 ? RDMAP_RDMA_WRITE : RDMAP_SEND;
		if (m.opcode == RDMAP_SEND) {
			struct iovec r = { recvbuf, sizeof(recvbuf) };
			sim_rq_post(&b2->rq, &r, 1);
			iov.iov_len %= sizeof(recvbuf);
		}
		assert_int_equal(sim_end_send(a2, &m, &w), 0);
	}
	unsigned long before = allocations;
	for (size_t off = 0; off < w.len; off += 1000) {
		size_t k = w.len - off < 1000 ? w.len - off : 1000;
		assert_int_equal(sim_end_feed(b2, w.b + off, k), 0);
	}
	assert_int_equal(allocations - before, 0);
	assert_int_equal(b2->nev, 200);

	/* the transmit core, too */
	struct rdmap_tx_msg t;
	uint8_t hdr[2 + RDMAP_MAX_HDR];
	struct iovec out[RDMAP_PLACE_MAX_IOV];
	size_t hl;
	int niov;
	before = allocations;
	for (int i = 0; i < 100; i++) {
		struct iovec iov = { src, 50000 };
		struct rdmap_msg m = {
			.opcode = RDMAP_RDMA_WRITE, .sge = &iov, .nsge = 1, .stag = 1
		};
		assert_int_equal(rdmap_tx_start(&a2->conn, &m, &t), 0);
		while (rdmap_tx_next(&t, hdr, &hl, out, RDMAP_PLACE_MAX_IOV, &niov) == 1)
			;
	}
	assert_int_equal(allocations - before, 0);

	sim_wire_free(&w);
	sim_wire_free(&resp);
	sim_end_fini(a);
	sim_end_fini(b);
	sim_end_fini(a2);
	sim_end_fini(b2);
	free(a);
	free(b);
	free(a2);
	free(b2);
}

/* A connection that never reads holds no request queues: an IRD and ORD
 * of 128 made 14 KiB of each idle connection (rdmap_ring_ready). The
 * first Read makes the requester's ORQ and the responder's IRQ, one
 * allocation each, and later ones none. */
static void request_queues_come_with_the_first_request(void **state)
{
	(void)state;
	struct sim_end *a = calloc(1, sizeof(*a)), *b = calloc(1, sizeof(*b));
	struct sim_cfg cfg = {
		.crc = true, .ird = 128, .ord = 128, .mulpdu = 1454, .pd = 1, .qp = 1
	};
	sim_end_init(a, &cfg);
	sim_end_init(b, &cfg);
	assert_null(a->conn.orq.e);
	assert_null(a->conn.irq.e);
	assert_null(b->conn.irq.e);
	uint32_t all = DDP_LOCAL_WRITE | DDP_REMOTE_WRITE | DDP_REMOTE_READ;
	uint32_t bs = sim_mem_add(&b->mem, bmem, 0, 4096, all, 1, 0, false);
	uint32_t as = sim_mem_add(&a->mem, amem, 0, 4096, DDP_LOCAL_WRITE, 1, 0, false);
	struct sim_wire w = { 0 }, resp = { 0 };
	struct iovec iov = { src, 100 };
	struct rdmap_msg wr = {
		.opcode = RDMAP_RDMA_WRITE, .sge = &iov, .nsge = 1, .stag = bs, .to = 0
	};
	assert_int_equal(sim_end_send(a, &wr, &w), 0);
	assert_int_equal(sim_end_feed(b, w.b, w.len), 0);
	w.len = 0;
	assert_null(a->conn.orq.e); /* a Write needs neither */
	assert_null(b->conn.irq.e);
	for (int i = 0; i < 3; i++) {
		struct rdmap_msg rd = {
			.opcode = RDMAP_RDMA_READ_REQ, .sink_stag = as, .stag = bs, .len = 100
		};
		unsigned long at = allocations;
		assert_int_equal(sim_end_send(a, &rd, &w), 0);
		assert_int_equal(sim_end_feed(b, w.b, w.len), 0);
		sim_end_respond(b, &resp);
		assert_int_equal(sim_end_feed(a, resp.b, resp.len), 0);
		w.len = resp.len = 0;
		/* (the wire buffers grow on the first message only) */
		if (i == 0) {
			assert_non_null(a->conn.orq.e);
			assert_non_null(b->conn.irq.e);
		} else {
			assert_int_equal(allocations - at, 0);
		}
	}
	assert_false(b->failed);
	assert_int_equal(b->nev, 4);
	sim_wire_free(&w);
	sim_wire_free(&resp);
	sim_end_fini(a);
	sim_end_fini(b);
	free(a);
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(receive_path_does_not_allocate),
		cmocka_unit_test(request_queues_come_with_the_first_request),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
