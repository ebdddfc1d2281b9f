/*
 * sp_pair.h: a sender and a receiver of the dynamic stream protocol
 * (exs/stream_proto.h) driven by hand, message by message, with what each
 * must decide checked at every step (cmocka). For the tests that replay
 * exact message sequences.
 */
#ifndef UWARP_TESTS_EXS_SP_PAIR_H
#define UWARP_TESTS_EXS_SP_PAIR_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "exs/stream_proto.h"

struct pair {
	struct exs_sp_tx s;
	struct exs_sp_rx r;
};

static inline void pair_init_mode(struct pair *p, enum exs_sp_mode mode, uint64_t ring)
{
	exs_sp_tx_init(&p->s, mode, ring);
	exs_sp_rx_init(&p->r, mode, ring);
}

static inline void pair_init(struct pair *p, uint64_t ring)
{
	pair_init_mode(p, EXS_SP_DYNAMIC, ring);
}

static inline uint32_t post(struct pair *p, uint32_t len, bool waitall)
{
	uint32_t id;
	assert_int_equal(exs_sp_rx_post(&p->r, len, waitall, &id), 0);
	return id;
}

static inline struct exs_sp_advert advert(struct pair *p, uint32_t id, uint32_t phase, uint64_t seq)
{
	struct exs_sp_advert a;
	assert_int_equal(exs_sp_rx_advert(&p->r, &a), 1);
	assert_int_equal(a.id, id);
	assert_int_equal(a.phase, phase);
	assert_int_equal(a.seq, seq);
	return a;
}

static inline struct exs_sp_xfer xfer(struct pair *p, uint64_t avail, enum exs_sp_kind kind,
				      uint32_t phase, uint32_t len)
{
	struct exs_sp_xfer x;
	assert_int_equal(exs_sp_tx_next(&p->s, avail, &x), 1);
	assert_int_equal(x.kind, kind);
	assert_int_equal(x.phase, phase);
	assert_int_equal(x.len, len);
	return x;
}

static inline void arrive(struct pair *p, const struct exs_sp_xfer *x)
{
	if (x->kind == EXS_SP_DIRECT)
		assert_int_equal(exs_sp_rx_direct(&p->r, x->phase, x->id, x->off, x->len), 0);
	else
		assert_int_equal(exs_sp_rx_indirect(&p->r, x->phase, x->ring_off, x->len), 0);
}

static inline void copy(struct pair *p, uint32_t id, uint32_t off, uint32_t len)
{
	struct exs_sp_copy cp;
	assert_int_equal(exs_sp_rx_drain(&p->r, &cp), 1);
	assert_int_equal(cp.id, id);
	assert_int_equal(cp.off, off);
	assert_int_equal(cp.len, len);
}

static inline void completes(struct pair *p, uint32_t id, uint32_t bytes)
{
	uint32_t got, n;
	assert_int_equal(exs_sp_rx_complete(&p->r, &got, &n), 1);
	assert_int_equal(got, id);
	assert_int_equal(n, bytes);
}

static inline void no_advert(struct pair *p)
{
	struct exs_sp_advert a;
	assert_int_equal(exs_sp_rx_advert(&p->r, &a), 0);
}

/* the receiver must acknowledge the ring up to drained now */
static inline uint64_t ack(struct pair *p, uint64_t drained)
{
	uint64_t d;
	assert_true(exs_sp_rx_ack_due(&p->r, &d));
	assert_int_equal(d, drained);
	return d;
}

/* the sender has nothing it may send with avail bytes waiting */
static inline void no_xfer(struct pair *p, uint64_t avail)
{
	struct exs_sp_xfer x;
	assert_int_equal(exs_sp_tx_next(&p->s, avail, &x), 0);
}

#endif
