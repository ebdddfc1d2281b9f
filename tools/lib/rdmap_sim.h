/*
 * rdmap_sim.h: RDMAP endpoints in one process, without sockets: an STag
 * table, a receive queue, the FPDU parser and the RDMAP core wired the way
 * the engine wires them. Tests, fuzzers and the demo use it to drive the
 * pure protocol core byte by byte.
 */
#ifndef UWARP_RDMAP_SIM_H
#define UWARP_RDMAP_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mpa/fpdu.h"
#include "rdmap/rdmap_conn.h"

#define SIM_MAX_REGIONS 64
#define SIM_MAX_RECV 512
#define SIM_MAX_SGE 8
#define SIM_MAX_EVENTS 4096

struct sim_region {
	uint32_t stag;
	struct ddp_region r;
	bool valid;
	bool invalidatable; /* a memory window or fast-registered MR */
};

struct sim_mem {
	struct sim_region e[SIM_MAX_REGIONS];
	int n;
	uint32_t next_key;
};

/* Register memory; returns its STag (index << 8 | key). */
uint32_t sim_mem_add(struct sim_mem *m, void *addr, uint64_t to_base, uint64_t len, uint32_t rights,
		     uint32_t pd, uint32_t qp, bool invalidatable);
int sim_mem_lookup(void *ctx, uint32_t stag, struct ddp_region *out);
int sim_mem_invalidate(void *ctx, uint32_t stag, uint32_t pd, uint32_t qp);

struct sim_rq {
	struct rdmap_recv r[SIM_MAX_RECV];
	struct iovec sge[SIM_MAX_RECV][SIM_MAX_SGE];
	uint32_t head, count;
	uint64_t next_cookie;
};

/* Post a receive of nsge pieces; returns its cookie. */
uint64_t sim_rq_post(struct sim_rq *q, const struct iovec *sge, int nsge);
const struct rdmap_recv *sim_rq_claim(void *ctx);

/* A growable byte buffer: what one end put on the wire. */
struct sim_wire {
	uint8_t *b;
	size_t len, cap;
};
void sim_wire_free(struct sim_wire *w);

struct sim_end {
	struct rdmap_conn conn;
	struct fpdu_rx rx;
	struct fpdu_tx tx;
	struct sim_mem mem;
	struct sim_rq rq;
	struct rdmap_event ev[SIM_MAX_EVENTS];
	int nev;
	struct rdmap_place pl;
	uint32_t pl_off;
	bool failed;           /* the stream ended: err or peer's Terminate */
	struct rddp_error err; /* what we found wrong (MPA or RDMAP) */
};

struct sim_cfg {
	bool crc, markers_tx, markers_rx, rfc7306;
	uint16_t ird, ord;
	uint32_t mulpdu;
	uint32_t pd, qp;
};

int sim_end_init(struct sim_end *e, const struct sim_cfg *cfg);
void sim_end_fini(struct sim_end *e);

/* Bytes from the peer, in any pieces. Returns 0, or -EBADMSG once the
 * stream has failed (e->err says why, e->conn.state says who). */
int sim_end_feed(struct sim_end *e, const uint8_t *b, size_t n);

/* Put a whole message on the wire. Returns rdmap_tx_start's result. */
int sim_end_send(struct sim_end *e, const struct rdmap_msg *m, struct sim_wire *w);
/* Answer every owed Read and Atomic Request. Returns how many. */
int sim_end_respond(struct sim_end *e, struct sim_wire *w);
/* Put one hand-made ULPDU (header bytes and payload) in an FPDU. */
void sim_end_raw(struct sim_end *e, const uint8_t *hdr, size_t hdr_len, const void *payload,
		 size_t len, struct sim_wire *w);
/* The Terminate this end would send now, framed. */
void sim_end_terminate(struct sim_end *e, struct sim_wire *w);

#endif
