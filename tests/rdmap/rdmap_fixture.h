/*
 * rdmap_fixture.h: a sender A and a receiver B under test, B's memory laid
 * out between guard bands, and helpers to hand-make DDP/RDMAP headers.
 */
#ifndef UWARP_TEST_RDMAP_FIXTURE_H
#define UWARP_TEST_RDMAP_FIXTURE_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "mpa/be.h"
#include "tools/lib/rdmap_sim.h"

#define GUARD 1024
#define REGION 4096
#define GUARD_BYTE 0xEE
#define FILL_BYTE 0x11

struct fixture {
	struct sim_end a, b;
	struct sim_wire w;
	/* B's memory: [guard][region rw][guard][recv buffer][guard] */
	uint8_t arena[GUARD + REGION + GUARD + 256 + GUARD];
	uint8_t *region;
	uint8_t *recvbuf;
	uint32_t stag_rw;         /* PD 1, remote read/write/atomic */
	uint32_t stag_other_pd;   /* PD 2 */
	uint32_t stag_other_qp;   /* a window bound to QP 99 */
	uint32_t stag_no_rights;  /* local write only: never a peer's */
	uint32_t stag_read_only;  /* remote read, no remote write or atomic */
	uint32_t stag_write_only; /* remote write, no remote read or atomic */
	uint32_t stag_mw;         /* invalidatable */
	uint8_t a_sink[REGION];   /* A's Read sink */
	uint32_t a_sink_stag;
};

static inline void fixture_init(struct fixture *f, bool rfc7306, uint16_t ird)
{
	struct sim_cfg cfg = { .crc = true,
			       .rfc7306 = rfc7306,
			       .ird = ird,
			       .ord = 8,
			       .mulpdu = 1454,
			       .pd = 1,
			       .qp = 1 };
	memset(f->arena, GUARD_BYTE, sizeof(f->arena));
	f->region = f->arena + GUARD;
	f->recvbuf = f->region + REGION + GUARD;
	memset(f->region, FILL_BYTE, REGION);
	memset(f->recvbuf, FILL_BYTE, 256);
	sim_end_init(&f->a, &cfg);
	sim_end_init(&f->b, &cfg);
	uint32_t all = DDP_LOCAL_WRITE | DDP_REMOTE_WRITE | DDP_REMOTE_READ | DDP_REMOTE_ATOMIC;
	f->stag_rw = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION, all, 1, 0, false);
	f->stag_other_pd = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION, all, 2, 0, false);
	f->stag_other_qp = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION, all, 1, 99, true);
	f->stag_no_rights =
		sim_mem_add(&f->b.mem, f->region, 0x10000, REGION, DDP_LOCAL_WRITE, 1, 0, false);
	f->stag_read_only = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION,
					DDP_LOCAL_WRITE | DDP_REMOTE_READ, 1, 0, false);
	f->stag_write_only = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION,
					 DDP_LOCAL_WRITE | DDP_REMOTE_WRITE, 1, 0, false);
	f->stag_mw = sim_mem_add(&f->b.mem, f->region, 0x10000, REGION, all, 1, 0, true);
	f->a_sink_stag = sim_mem_add(&f->a.mem, f->a_sink, 0, REGION, DDP_LOCAL_WRITE, 1, 0, false);
	memset(&f->w, 0, sizeof(f->w));
}

static inline void fixture_fini(struct fixture *f)
{
	sim_end_fini(&f->a);
	sim_end_fini(&f->b);
	sim_wire_free(&f->w);
}

static inline void post_recv(struct fixture *f, uint32_t len)
{
	struct iovec iov = { f->recvbuf, len };
	sim_rq_post(&f->b.rq, &iov, 1);
}

static inline bool guards_intact(const struct fixture *f)
{
	const uint8_t *g[3] = { f->arena, f->region + REGION, f->recvbuf + 256 };
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < GUARD; i++)
			if (g[k][i] != GUARD_BYTE)
				return false;
	return true;
}

static inline bool untouched(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i] != FILL_BYTE)
			return false;
	return true;
}

/* Control bytes for an opcode: T, L, DV 1, RV 1. */
static inline void ctrl(uint8_t *h, bool tagged, bool last, uint8_t opcode)
{
	h[0] = (uint8_t)((tagged ? 0x80 : 0) | (last ? 0x40 : 0) | DDP_VERSION);
	h[1] = (uint8_t)(RDMAP_VERSION << 6 | opcode);
}

static inline size_t hdr_untagged(uint8_t *h, uint8_t opcode, bool last, uint32_t qn, uint32_t msn,
				  uint32_t mo, uint32_t ulp_word)
{
	ctrl(h, false, last, opcode);
	be32_put(h + DDP_OFF_RSVDULP, ulp_word);
	be32_put(h + DDP_OFF_QN, qn);
	be32_put(h + DDP_OFF_MSN, msn);
	be32_put(h + DDP_OFF_MO, mo);
	return DDP_UNTAGGED_HDR_LEN;
}

static inline size_t hdr_tagged(uint8_t *h, uint8_t opcode, bool last, uint32_t stag, uint64_t to)
{
	ctrl(h, true, last, opcode);
	be32_put(h + DDP_OFF_STAG, stag);
	be64_put(h + DDP_OFF_TO, to);
	return DDP_TAGGED_HDR_LEN;
}

static inline size_t hdr_read_req(uint8_t *h, uint32_t msn, uint32_t sink_stag, uint64_t sink_to,
				  uint32_t size, uint32_t src_stag, uint64_t src_to)
{
	size_t n = hdr_untagged(h, RDMAP_RDMA_READ_REQ, true, DDP_QN_READ_REQ, msn, 0, 0);
	be32_put(h + n + RDMAP_RR_OFF_SINK_STAG, sink_stag);
	be64_put(h + n + RDMAP_RR_OFF_SINK_TO, sink_to);
	be32_put(h + n + RDMAP_RR_OFF_SIZE, size);
	be32_put(h + n + RDMAP_RR_OFF_SRC_STAG, src_stag);
	be64_put(h + n + RDMAP_RR_OFF_SRC_TO, src_to);
	return n + RDMAP_READ_REQ_LEN;
}

/* A sends one hand-made ULPDU to B; B digests it. Returns B's feed result. */
static inline int deliver(struct fixture *f, const uint8_t *h, size_t hl, const void *payload,
			  size_t len)
{
	f->w.len = 0;
	sim_end_raw(&f->a, h, hl, payload, len, &f->w);
	return sim_end_feed(&f->b, f->w.b, f->w.len);
}

#endif
