/*
 * stream_ring.h: the bookkeeping both rule sets of the dynamic stream
 * protocol share (uwarp's in stream_proto.c, the paper's in stream_paper.c):
 * the receiver's queue of receives, the hidden ring's arithmetic at both
 * ends, the sender's queue of adverts. Internal to exs/; pure.
 */
#ifndef UWARP_EXS_STREAM_RING_H
#define UWARP_EXS_STREAM_RING_H

#include "stream_proto.h"

/* one transfer at most this long: notifications carry 32-bit lengths */
#define EXS_SP_MAX_XFER (1u << 30)

static inline uint64_t exs_sp_min64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* the i-th posted receive, oldest first */
static inline struct exs_sp_recv *exs_sp_rq(struct exs_sp_rx *r, unsigned i)
{
	return &r->q[(r->head + i) % EXS_SP_MAX_RECVS];
}

/* data waiting in the ring */
uint64_t exs_sp_ring_bytes(const struct exs_sp_rx *r);
/* Full, or (without MSG_WAITALL) holding data with no more to come by its
 * advert: it completes with what it has. */
bool exs_sp_recv_done(const struct exs_sp_recv *v);
/* An indirect transfer's ring bookkeeping: -EPROTO unless it is the next
 * stretch of the ring and fits. */
int exs_sp_ring_arrive(struct exs_sp_rx *r, uint64_t ring_off, uint32_t len);
/* The next copy out of the ring into the head receive h (which has room):
 * counts it done and fills *cp. */
void exs_sp_ring_take(struct exs_sp_rx *r, struct exs_sp_recv *h, struct exs_sp_copy *cp);
/* Pop the head receive. */
void exs_sp_rq_pop(struct exs_sp_rx *r);

/* The sender's head advert, and dropping it. */
static inline struct exs_sp_advert *exs_sp_adv_head(struct exs_sp_tx *t)
{
	return &t->adv[t->head];
}
void exs_sp_adv_pop(struct exs_sp_tx *t);
/* Queue an advert: -ENOBUFS when the sender holds too many. */
int exs_sp_adv_push(struct exs_sp_tx *t, const struct exs_sp_advert *a);
/* A direct transfer of up to avail bytes into the head advert a, which the
 * rules have accepted: fills *x, moves the sender on, pops a once used up
 * (a receive without MSG_WAITALL completes with what one transfer brings). */
void exs_sp_send_direct(struct exs_sp_tx *t, struct exs_sp_advert *a, uint64_t avail,
			struct exs_sp_xfer *x);
/* Room in the peer's ring for an indirect transfer: 0 when full. */
uint32_t exs_sp_ring_room(const struct exs_sp_tx *t, uint64_t avail);
/* An indirect transfer of n (from exs_sp_ring_room) bytes in the sender's
 * current phase: fills *x, moves the sender on. */
void exs_sp_send_indirect(struct exs_sp_tx *t, uint32_t n, struct exs_sp_xfer *x);

#endif
