/*
 * test_exs_stream.c: the dynamic stream protocol (exs/stream_proto.h).
 *
 * - The four situations of the protocol's case study, each as the exact
 *   sequence of messages, with what each endpoint must decide.
 * - A deterministic simulation of two endpoints (sim.h) under a seeded
 *   random scheduler that interleaves both directions, with random send
 *   and receive sizes, outstanding depths, MSG_WAITALL and ring sizes, in
 *   uwarp's three modes, and again in the paper's (EXS_SP_PAPER): after
 *   every step the safety property holds (a direct transfer lands in the
 *   receive at the head of the receiver's queue, at the byte where it
 *   continues), in the paper's mode its lemmas hold (sim.h), nothing
 *   stalls, and at the end the byte stream has arrived whole and in
 *   order. UWARP_EXS_SIM_STEPS sets the number of steps for each of the
 *   two (default one million; the soak target sets more).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>

#include "sim.h"
#include "sp_pair.h"

/* ---- the case study: four situations, message by message ---- */

/* The receiver advertises A while the sender, ahead, writes 100 bytes into
 * the ring. The ring data is for A's own position: the receiver copies it
 * into A and knows A dead. The sender then meets A: its sequence number
 * (0) is behind the sender's (100), so it is discarded and the sender's
 * phase moves past it; the next 50 bytes go indirect in phase 1. */
static void stale_advert_rejected_after_an_indirect_transfer(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 1000);
	uint32_t a = post(&p, 100, false);
	struct exs_sp_advert adv = advert(&p, a, 0, 0);
	struct exs_sp_xfer x1 = xfer(&p, 100, EXS_SP_INDIRECT, 0, 100); /* A still in flight */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv), 0);
	struct exs_sp_xfer x2 = xfer(&p, 50, EXS_SP_INDIRECT, 1, 50); /* A discarded */
	assert_int_equal(p.s.c.discarded, 1);
	arrive(&p, &x1);
	copy(&p, a, 0, 100);
	completes(&p, a, 100);
	arrive(&p, &x2);
	assert_int_equal(p.r.phase, 1);
	assert_int_equal(p.s.c.direct, 0);
}

/* The receiver has moved to phase 1 (A died as in the first situation)
 * and advertises B at the exact stream position; the sender, still in
 * phase 0, first discards A (moving to phase 1), then finds B's phase at
 * least its own and its sequence number equal to its own: B is used,
 * directly, and the sender switches from indirect to direct. */
static void advert_accepted_once_the_sender_catches_up(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 1000);
	uint32_t a = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0);
	struct exs_sp_xfer x1 = xfer(&p, 100, EXS_SP_INDIRECT, 0, 100);
	arrive(&p, &x1);
	copy(&p, a, 0, 100);
	completes(&p, a, 100);
	uint32_t b = post(&p, 100, true);
	struct exs_sp_advert adv_b = advert(&p, b, 1, 100);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0); /* A goes as B comes */
	assert_int_equal(p.s.phase, 1);
	struct exs_sp_xfer x2 = xfer(&p, 100, EXS_SP_DIRECT, 1, 100);
	assert_int_equal(x2.id, b);
	assert_int_equal(x2.off, 0);
	arrive(&p, &x2);
	completes(&p, b, 100);
	assert_int_equal(p.s.c.switches, 1);
	assert_int_equal(p.r.c.copied, 100);
}

/* Three adverts (A, B, C with MSG_WAITALL, 100 bytes each) are in flight
 * when the sender writes 300 bytes into the ring. The receiver copies them
 * into A, B and C (no advert goes while the ring holds data); the sender
 * then discards all three: A for its sequence number, B and C for their
 * phase. */
static void several_adverts_consumed_by_indirect_transfers(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 1000);
	uint32_t id[3];
	struct exs_sp_advert adv[3];
	for (int i = 0; i < 3; i++) {
		id[i] = post(&p, 100, true);
		adv[i] = advert(&p, id[i], 0, 100u * i);
	}
	struct exs_sp_xfer x = xfer(&p, 300, EXS_SP_INDIRECT, 0, 300);
	arrive(&p, &x);
	for (int i = 0; i < 3; i++) {
		copy(&p, id[i], 0, 100);
		if (i < 2)
			no_advert(&p);
		completes(&p, id[i], 100);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(exs_sp_tx_advert(&p.s, &adv[i]), 0);
	struct exs_sp_xfer more = xfer(&p, 10, EXS_SP_INDIRECT, 1, 10);
	(void)more;
	assert_int_equal(p.s.c.discarded, 3);
	assert_int_equal(p.s.c.direct, 0);
	assert_int_equal(p.r.c.copied, 300);
}

/* A 200-byte ring and 100-byte messages. The sender fills the ring (m1,
 * m2, phase 0) and must wait. m1 goes round advert A (receiver to phase
 * 1); B, advertised in phase 1 between m1 and m2, is gone round by m2
 * (receiver to phase 2); C is advertised in phase 2. The sender meets A,
 * B and C in that order: A and B are discarded as the next arrives, and
 * C matches. Its phase jumps from 0 to 2 between two transfers: m3 goes
 * directly into C in phase 2, and the sender never sent in phase 1. */
static void small_ring_the_phase_must_jump(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 200);
	uint32_t a = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0);
	struct exs_sp_xfer m1 = xfer(&p, 100, EXS_SP_INDIRECT, 0, 100);
	struct exs_sp_xfer m2 = xfer(&p, 100, EXS_SP_INDIRECT, 0, 100);
	struct exs_sp_xfer none;
	assert_int_equal(exs_sp_tx_next(&p.s, 100, &none), 0); /* the ring is full */
	arrive(&p, &m1);
	copy(&p, a, 0, 100);
	completes(&p, a, 100);
	uint64_t ack1;
	assert_true(exs_sp_rx_ack_due(&p.r, &ack1));
	uint32_t b = post(&p, 100, false);
	struct exs_sp_advert adv_b = advert(&p, b, 1, 100);
	arrive(&p, &m2);
	copy(&p, b, 0, 100);
	completes(&p, b, 100);
	uint64_t ack2;
	assert_true(exs_sp_rx_ack_due(&p.r, &ack2));
	assert_int_equal(ack2, 200);
	uint32_t c = post(&p, 100, false);
	struct exs_sp_advert adv_c = advert(&p, c, 2, 200);
	/* the sender hears it all, in order */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0);
	assert_int_equal(exs_sp_tx_ack(&p.s, ack1), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0);
	assert_int_equal(exs_sp_tx_ack(&p.s, ack2), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_c), 0);
	struct exs_sp_xfer m3 = xfer(&p, 100, EXS_SP_DIRECT, 2, 100);
	assert_int_equal(m3.id, c);
	arrive(&p, &m3);
	completes(&p, c, 100);
	assert_int_equal(p.s.c.discarded, 2);
}

/* A peer's lie is refused, not placed: direct data for a receive that is
 * not at the head, at the wrong offset, past its advert, or while ring
 * data waits; ring data that is not the next stretch of the ring. */
static void receiver_refuses_what_the_protocol_cannot_produce(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 256);
	uint32_t a = post(&p, 100, true), b = post(&p, 100, true);
	advert(&p, a, 0, 0);
	advert(&p, b, 0, 100);
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, b, 0, 10), -EPROTO);  /* not the head */
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, a, 5, 10), -EPROTO);  /* wrong offset */
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, a, 0, 101), -EPROTO); /* past the advert */
	assert_int_equal(exs_sp_rx_direct(&p.r, 1, a, 0, 10), -EPROTO);  /* another phase */
	assert_int_equal(exs_sp_rx_indirect(&p.r, 0, 8, 10), -EPROTO);   /* not the next stretch */
	assert_int_equal(exs_sp_rx_indirect(&p.r, 0, 0, 257), -EPROTO);  /* bigger than the ring */
	assert_int_equal(exs_sp_rx_indirect(&p.r, 0, 0, 10), 0);
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, a, 0, 10), -EPROTO); /* ring data first */
	struct exs_sp_advert empty = { .len = 0 };
	assert_int_equal(exs_sp_tx_advert(&p.s, &empty), -EPROTO);
	assert_int_equal(exs_sp_tx_ack(&p.s, 1), -EPROTO); /* nothing was written */
}

/* ---- the random simulation ---- */

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545F4914F6CDD1Dull;
}

static uint64_t pick(uint64_t *s, uint64_t lo, uint64_t hi) { return lo + rnd(s) % (hi - lo + 1); }

struct run_stats {
	uint64_t direct, indirect, switches, copied, partial;
	uint64_t back_to_direct; /* the paper's mode: direct again after indirect */
	uint64_t slotted;        /* connections with credit slots */
	uint64_t ruled;          /* dynamic ones without some of uwarp's rules */
	uint64_t holds;          /* sends that held (EXS_SP_RULE_HOLD) */
};

/* One simulated connection of about `steps` steps; 0, or -1 with why. */
static int run_random(uint64_t seed, bool paper, long steps, struct run_stats *st, char *why,
		      size_t whylen)
{
	uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;
	static const uint64_t rings[] = { 64, 200, 256, 1000, 4096 };
	enum exs_sp_mode mode = pick(&r, 0, 9) < 7 ? EXS_SP_DYNAMIC
				: pick(&r, 0, 1)   ? EXS_SP_DIRECT_ONLY
						   : EXS_SP_INDIRECT_ONLY;
	if (paper)
		mode = EXS_SP_PAPER;
	uint64_t ring = rings[pick(&r, 0, 4)];
	/* one in four with credit slots, some larger than the ring */
	static const uint32_t slots[] = { 16, 64, 5000 };
	uint32_t slot = pick(&r, 0, 3) == 0 ? slots[pick(&r, 0, 2)] : 0;
	uint32_t maxsz = (uint32_t)pick(&r, 1, 3) == 1 ? (uint32_t)ring / 2
			 : pick(&r, 0, 1)              ? (uint32_t)ring * 2
						       : 3000;
	unsigned dsend = (unsigned)pick(&r, 1, 32), drecv = (unsigned)pick(&r, 1, 32);
	unsigned waitall_pct = (unsigned)pick(&r, 0, 3) * 33;
	struct sim s;
	sim_init(&s, mode, ring);
	/* sends of every size hold, or only the larger ones (EXS_SP_HOLD_MIN
	 * is larger than these rings) */
	s.tx.hold_min = (uint32_t)pick(&r, 1, maxsz);
	/* a third of uwarp's dynamic runs without some of its own rules, which
	 * change now and then as they go (EXS_SO_RULES may be set at any time) */
	bool ruled = mode == EXS_SP_DYNAMIC && pick(&r, 0, 2) == 0;
	if (ruled) {
		unsigned rules = (unsigned)pick(&r, 0, EXS_SP_RULES_ALL - 1);
		exs_sp_rx_rules(&s.rx, rules);
		exs_sp_tx_rules(&s.tx, rules);
		st->ruled++;
	}
	if (slot) {
		exs_sp_tx_slots(&s.tx, slot);
		exs_sp_rx_slots(&s.rx, slot);
		st->slotted++;
	}
	uint64_t send_ends[64];
	unsigned nsends = 0;
	int rc = 0;
	long i;
	/* Turns for the stream to drain after the sends stop: up to 11 times
	 * the sending steps in 10 M steps with all rules; without the probe
	 * and the empty-ring ACK up to 60 (a 200-byte ring, adverts overtaken
	 * by the ring's refills round after round: what those rules are for). */
	long turns = steps * (ruled ? 500 : 50);
	for (i = 0; i < turns && !s.failure[0]; i++) {
		bool sending = i < steps;
		while (nsends && s.tx.seq >= send_ends[0]) /* sends complete in order */
			memmove(send_ends, send_ends + 1, --nsends * sizeof(send_ends[0]));
		if (!sending && s.delivered + sim_open_bytes(&s) == s.posted && !s.s2r.len &&
		    !s.r2s.len)
			break;
		bool did = false;
		if (ruled && pick(&r, 0, 999) == 0) {
			unsigned rules = (unsigned)pick(&r, 0, EXS_SP_RULES_ALL);
			exs_sp_rx_rules(&s.rx, rules);
			exs_sp_tx_rules(&s.tx, rules);
		}
		switch (pick(&r, 0, 5)) {
		case 0:
			if (sending && nsends < dsend) {
				uint64_t len = pick(&r, 1, maxsz);
				sim_send(&s, len);
				send_ends[nsends++] = s.posted;
				did = true;
			}
			break;
		case 1:
			if (s.nrecvs < drecv)
				did = sim_recv(&s, (uint32_t)pick(&r, 1, maxsz),
					       pick(&r, 0, 99) < waitall_pct);
			break;
		case 2:
			did = sim_sender_step(&s);
			break;
		case 3:
			did = sim_deliver_to_receiver(&s);
			break;
		case 4:
			did = sim_receiver_step(&s);
			break;
		case 5:
			did = sim_deliver_to_sender(&s);
			break;
		}
		if (did)
			continue;
		/* nothing happened: is anything at all possible? */
		bool moves = sim_sender_step(&s) || sim_deliver_to_receiver(&s) ||
			     sim_receiver_step(&s) || sim_deliver_to_sender(&s);
		bool any = moves || s.nrecvs < drecv || (sending && nsends < dsend);
		/* Only a sender that must use adverts waits for the receiving
		 * application to post a receive; any other, with bytes to send
		 * and room in the ring, gets there by the protocol alone (the
		 * hold ends with the receiver's IDLE). */
		if (!moves && mode != EXS_SP_DIRECT_ONLY && s.posted > s.tx.seq &&
		    s.tx.ring_written - s.tx.ring_acked + (s.tx.slot ? s.tx.slot : 1) <=
			    s.tx.ring_size) {
			snprintf(why, whylen,
				 "the sender waits for a receive with room in the ring (mode %d "
				 "rules %u, %llu of %llu bytes sent)",
				 mode, s.tx.rules, (unsigned long long)s.tx.seq,
				 (unsigned long long)s.posted);
			rc = -1;
			break;
		}
		if (!any && s.delivered + sim_open_bytes(&s) < s.posted) {
			snprintf(why, whylen,
				 "stalled with %llu of %llu bytes delivered (mode %d ring %llu "
				 "rules %u)",
				 (unsigned long long)s.delivered, (unsigned long long)s.posted,
				 mode, (unsigned long long)ring, s.rx.rules);
			rc = -1;
			break;
		}
	}
	if (!rc && s.failure[0]) {
		snprintf(why, whylen, "%s at step %ld (mode %d ring %llu)", s.failure, i, mode,
			 (unsigned long long)ring);
		rc = -1;
	}
	if (!rc && s.delivered + sim_open_bytes(&s) != s.posted) {
		snprintf(why, whylen,
			 "only %llu of %llu bytes arrived (mode %d ring %llu rules %u)",
			 (unsigned long long)s.delivered, (unsigned long long)s.posted, mode,
			 (unsigned long long)ring, s.rx.rules);
		rc = -1;
	}
	st->direct += s.tx.c.direct;
	st->indirect += s.tx.c.indirect;
	st->switches += s.tx.c.switches;
	st->holds += s.tx.c.holds;
	st->copied += s.rx.c.copied;
	st->partial += s.partial_completions;
	st->back_to_direct += s.back_to_direct;
	if (!rc && s.rx.c.ring_used < s.rx.c.copied) {
		snprintf(why, whylen, "the ring held more data than room (slot %u)", slot);
		rc = -1;
	}
	sim_free(&s);
	return rc;
}

static void simulate(bool paper)
{
	const char *env = getenv("UWARP_EXS_SIM_STEPS");
	long total = env ? atol(env) : 1000000, done = 0;
	struct run_stats st = { 0 };
	char why[512];
	uint64_t seed;
	for (seed = 1; done < total; seed++) {
		long steps = 2000 + (long)(seed % 7) * 1000;
		if (run_random(seed, paper, steps, &st, why, sizeof(why))) {
			fail_msg("seed %llu: %s", (unsigned long long)seed, why);
		}
		done += steps;
	}
	printf("simulated %ld steps in %llu connections (%s): %llu direct and %llu indirect "
	       "transfers, %llu switches (%llu back to direct), %llu holds, %llu bytes copied, "
	       "%llu short receives\n",
	       done, (unsigned long long)seed - 1, paper ? "the paper's mode" : "uwarp's modes",
	       (unsigned long long)st.direct, (unsigned long long)st.indirect,
	       (unsigned long long)st.switches, (unsigned long long)st.back_to_direct,
	       (unsigned long long)st.holds, (unsigned long long)st.copied,
	       (unsigned long long)st.partial);
	/* the runs must have exercised both paths and the switches between */
	assert_true(st.direct > 0 && st.indirect > 0 && st.switches > 0 && st.partial > 0 &&
		    st.slotted > 0 && (paper || (st.ruled > 0 && st.holds > 0)));
	/* the paper's receiver resynchronises: direct transfers resume */
	if (paper)
		assert_true(st.back_to_direct > 0);
}

static void random_interleavings_keep_the_stream_whole_and_safe(void **state)
{
	(void)state;
	simulate(false);
}

static void random_interleavings_keep_the_papers_lemmas(void **state)
{
	(void)state;
	simulate(true);
}

/* Chained adverts: receives A and B of 100 bytes without MSG_WAITALL.
 * B's space begins wherever the transfer that takes A ends (A completes
 * with whatever one transfer brings), so B goes CHAINED. Sends of 30 and
 * 50 bytes both go direct: 30 into A, 50 into B at its start; A completes
 * short with 30 and B stays live. Without the chain B's estimate (100)
 * would be wrong and the 50 bytes would go through the ring. */
static void chained_advert_follows_a_short_receive(void **state)
{
	(void)state;
	struct pair p;
	pair_init(&p, 4096);
	uint32_t a = post(&p, 100, false), b = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0);
	assert_false(adv_a.chain);
	struct exs_sp_advert adv_b;
	assert_int_equal(exs_sp_rx_advert(&p.r, &adv_b), 1);
	assert_int_equal(adv_b.id, b);
	assert_true(adv_b.chain);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0);
	struct exs_sp_xfer x1 = xfer(&p, 30, EXS_SP_DIRECT, 0, 30);
	assert_int_equal(x1.id, a);
	struct exs_sp_xfer x2 = xfer(&p, 50, EXS_SP_DIRECT, 0, 50);
	assert_int_equal(x2.id, b);
	assert_int_equal(x2.off, 0);
	arrive(&p, &x1);
	completes(&p, a, 30);
	arrive(&p, &x2);
	completes(&p, b, 50);
	assert_int_equal(p.s.c.discarded, 0);

	/* a transfer through the ring between the two makes the chain stale
	 * (a sender without the hold, which would wait for D instead:
	 * sender_holds_after_a_direct_transfer) */
	exs_sp_tx_rules(&p.s, EXS_SP_RULES_ALL & ~EXS_SP_RULE_HOLD);
	uint32_t c = post(&p, 100, false), d = post(&p, 100, false);
	struct exs_sp_advert adv_c, adv_d;
	assert_int_equal(exs_sp_rx_advert(&p.r, &adv_c), 1);
	assert_int_equal(exs_sp_rx_advert(&p.r, &adv_d), 1);
	assert_int_equal(adv_c.id, c);
	assert_int_equal(adv_d.id, d);
	assert_true(adv_d.chain);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_c), 0);
	struct exs_sp_xfer x3 = xfer(&p, 10, EXS_SP_DIRECT, 0, 10);
	struct exs_sp_xfer x4 = xfer(&p, 20, EXS_SP_INDIRECT, 1, 20); /* D not here yet */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_d), 0);
	struct exs_sp_xfer x5 = xfer(&p, 5, EXS_SP_INDIRECT, 1, 5); /* D is discarded */
	assert_int_equal(p.s.c.discarded, 1);
	arrive(&p, &x3);
	completes(&p, c, 10);
	arrive(&p, &x4);
	arrive(&p, &x5);
	copy(&p, d, 0, 25); /* D takes the ring's bytes; its advert is dead */
}

/* The hold (EXS_SP_RULE_HOLD): after a direct transfer a sender without
 * an advert waits and says HOLD; the receiver's next advert lets it go on
 * directly, or, with every byte in and no receive posted, its IDLE lets
 * it into the ring. Without the rule the same send goes to the ring at
 * once and the advert behind it is stale. */
static void sender_holds_after_a_direct_transfer(void **state)
{
	(void)state;
	struct pair p;
	struct exs_sp_xfer x;
	uint64_t at;
	for (int on = 0; on < 3; on++) {
		pair_init(&p, 4096);
		/* (these sends are small: the hold is for 30 bytes and more;
		 * in the third round for 101, so after 100 a send of 50 goes on) */
		p.s.hold_min = on == 2 ? 101 : 30;
		if (!on)
			exs_sp_tx_rules(&p.s, EXS_SP_RULES_ALL & ~EXS_SP_RULE_HOLD);
		uint32_t a = post(&p, 100, true);
		struct exs_sp_advert adv = advert(&p, a, 0, 0);
		assert_int_equal(exs_sp_tx_advert(&p.s, &adv), 0);
		struct exs_sp_xfer x1 = xfer(&p, 100, EXS_SP_DIRECT, 0, 100);
		if (on != 1) {
			xfer(&p, 50, EXS_SP_INDIRECT, 1, 50);
			assert_false(exs_sp_tx_hold_due(&p.s, &at));
			assert_int_equal(p.s.c.switches, 1);
			continue;
		}
		/* held: no transfer, one HOLD at 100; a send too short to hold
		 * alone holds too in a stream whose transfers are long enough */
		assert_int_equal(exs_sp_tx_next(&p.s, 50, &x), 0);
		assert_int_equal(exs_sp_tx_next(&p.s, 29, &x), 0);
		assert_true(exs_sp_tx_hold_due(&p.s, &at));
		assert_int_equal(at, 100);
		assert_int_equal(exs_sp_tx_next(&p.s, 50, &x), 0);
		assert_false(exs_sp_tx_hold_due(&p.s, &at));
		assert_int_equal(p.s.c.holds, 1);
		/* the receiver reposts: an advert, no IDLE; the sender goes on
		 * directly, no switch */
		arrive(&p, &x1);
		completes(&p, a, 100);
		assert_int_equal(exs_sp_rx_hold(&p.r, 99), -EPROTO); /* not where it stands */
		assert_int_equal(exs_sp_rx_hold(&p.r, 100), 0);
		uint32_t b = post(&p, 100, false);
		adv = advert(&p, b, 0, 100);
		assert_false(exs_sp_rx_idle_due(&p.r, &at));
		assert_int_equal(exs_sp_tx_advert(&p.s, &adv), 0);
		struct exs_sp_xfer x2 = xfer(&p, 50, EXS_SP_DIRECT, 0, 50);
		assert_int_equal(p.s.c.switches, 0);
		/* held again at 150; B completes short and nothing is posted:
		 * the receiver is idle where the sender holds, and says so */
		assert_int_equal(exs_sp_tx_next(&p.s, 30, &x), 0);
		assert_true(exs_sp_tx_hold_due(&p.s, &at));
		assert_int_equal(at, 150);
		arrive(&p, &x2);
		assert_false(exs_sp_rx_idle_due(&p.r, &at)); /* no HOLD heard yet */
		assert_int_equal(exs_sp_rx_hold(&p.r, 150), 0);
		assert_false(exs_sp_rx_idle_due(&p.r, &at)); /* B is not reaped yet */
		completes(&p, b, 50);
		assert_true(exs_sp_rx_idle_due(&p.r, &at));
		assert_int_equal(at, 150);
		assert_false(exs_sp_rx_idle_due(&p.r, &at));          /* once */
		assert_int_equal(exs_sp_tx_idle(&p.s, 151), -EPROTO); /* beyond the stream */
		assert_int_equal(exs_sp_tx_idle(&p.s, 150), 0);
		xfer(&p, 30, EXS_SP_INDIRECT, 1, 30);
		assert_int_equal(p.s.c.switches, 1);
		assert_int_equal(p.s.c.holds, 2);
	}
}

/* uwarp's receiving-side rules (EXS_SP_RULE_*), each turned off alone,
 * give the behaviour the paper's text implies; on, uwarp's own. */
static void each_of_uwarps_rules_can_be_turned_off(void **state)
{
	(void)state;
	struct pair p;
	struct exs_sp_advert a;
	for (int on = 0; on < 2; on++) {
		/* chained adverts: behind a receive that may end short, B's
		 * space follows A's transfer, or is estimated as if A filled */
		pair_init(&p, 4096);
		if (!on)
			exs_sp_rx_rules(&p.r, EXS_SP_RULES_ALL & ~EXS_SP_RULE_CHAIN);
		uint32_t ra = post(&p, 100, false), rb = post(&p, 100, false);
		advert(&p, ra, 0, 0);
		assert_int_equal(exs_sp_rx_advert(&p.r, &a), 1);
		assert_int_equal(a.id, rb);
		assert_int_equal(a.chain, on);
		if (!on)
			assert_int_equal(a.seq, 100);

		/* one advert at a time after adverts died (A completed short
		 * with 30 bytes, so B's and C's estimates were too high) */
		pair_init(&p, 4096);
		exs_sp_rx_rules(&p.r, EXS_SP_RULES_ALL & ~EXS_SP_RULE_CHAIN &
					      ~(on ? 0 : EXS_SP_RULE_PROBE));
		ra = post(&p, 100, false);
		rb = post(&p, 100, false);
		uint32_t rc = post(&p, 100, false);
		struct exs_sp_advert aa = advert(&p, ra, 0, 0), ab = advert(&p, rb, 0, 100),
				     ac = advert(&p, rc, 0, 200);
		assert_int_equal(exs_sp_tx_advert(&p.s, &aa), 0);
		assert_int_equal(exs_sp_tx_advert(&p.s, &ab), 0);
		assert_int_equal(exs_sp_tx_advert(&p.s, &ac), 0);
		struct exs_sp_xfer x = xfer(&p, 30, EXS_SP_DIRECT, 0, 30);
		arrive(&p, &x);
		completes(&p, ra, 30);
		advert(&p, rb, 1, 30);
		if (on)
			no_advert(&p);
		else
			advert(&p, rc, 1, 130);

		/* the ring's room goes back when it is empty, or a quarter at a
		 * time */
		pair_init(&p, 4096);
		if (!on)
			exs_sp_rx_rules(&p.r, EXS_SP_RULES_ALL & ~EXS_SP_RULE_ACK_EMPTY);
		assert_int_equal(exs_sp_tx_next(&p.s, 2048, &x), 1);
		assert_int_equal(x.kind, EXS_SP_INDIRECT);
		assert_int_equal(x.len, 2048);
		arrive(&p, &x);
		ra = post(&p, 1024, false);
		copy(&p, ra, 0, 1024);
		uint64_t d;
		if (on)
			assert_false(exs_sp_rx_ack_due(&p.r, &d));
		else
			ack(&p, 1024);
	}
}

/* Credit-based flow control: a ring of 64 bytes as four slots of 16. Each
 * send of up to a slot takes a whole one (5 bytes use 16 of the ring), a
 * longer one is cut at the slot; a fifth slot waits for the ACK, which
 * the receiver owes once a quarter of the ring is drained. The receiver
 * copies each slot's data from its start and skips the rest. */
static void credit_slots_take_a_whole_slot_each(void **state)
{
	(void)state;
	struct pair p;
	exs_sp_tx_init(&p.s, EXS_SP_INDIRECT_ONLY, 64);
	exs_sp_rx_init(&p.r, EXS_SP_INDIRECT_ONLY, 64);
	exs_sp_tx_slots(&p.s, 16);
	exs_sp_rx_slots(&p.r, 16);
	struct exs_sp_xfer a = xfer(&p, 5, EXS_SP_INDIRECT, 0, 5);
	assert_int_equal(a.ring_off, 0);
	struct exs_sp_xfer b = xfer(&p, 40, EXS_SP_INDIRECT, 0, 16);
	assert_int_equal(b.ring_off, 16);
	struct exs_sp_xfer c = xfer(&p, 24, EXS_SP_INDIRECT, 0, 16);
	struct exs_sp_xfer d = xfer(&p, 8, EXS_SP_INDIRECT, 0, 8);
	assert_int_equal(d.ring_off, 48);
	struct exs_sp_xfer x;
	assert_int_equal(exs_sp_tx_next(&p.s, 1, &x), 0); /* no credit left */
	arrive(&p, &a);
	/* a transfer longer than a slot, or not at the next slot, is a lie */
	assert_int_equal(exs_sp_rx_indirect(&p.r, 0, 16, 17), -EPROTO);
	assert_int_equal(exs_sp_rx_indirect(&p.r, 0, 20, 4), -EPROTO);
	arrive(&p, &b);
	arrive(&p, &c);
	arrive(&p, &d);
	uint32_t id = post(&p, 100, true);
	copy(&p, id, 0, 5);
	uint64_t drained;
	/* the SDP paper's delayed acknowledgement: not at one credit of
	 * four, at two (half of them) */
	assert_false(exs_sp_rx_ack_due(&p.r, &drained));
	copy(&p, id, 5, 16);
	assert_true(exs_sp_rx_ack_due(&p.r, &drained));
	assert_int_equal(drained, 32);
	assert_int_equal(exs_sp_tx_ack(&p.s, drained), 0);
	copy(&p, id, 21, 16);
	copy(&p, id, 37, 8);
	assert_true(exs_sp_rx_ack_due(&p.r, &drained)); /* the other two */
	assert_int_equal(drained, 64);
	assert_int_equal(p.r.c.copied, 45);
	assert_int_equal(p.r.c.ring_used, 64);
	struct exs_sp_xfer e = xfer(&p, 3, EXS_SP_INDIRECT, 0, 3);
	assert_int_equal(e.ring_off, 0); /* round to the first slot */
	/* a slot larger than the ring is the ring */
	uint32_t eff;
	assert_int_equal(exs_sp_slots(1000, 4096, &eff), 1000);
	assert_int_equal(eff, 1000);
	assert_int_equal(exs_sp_slots(1u << 20, 512, &eff), 256 * 512); /* 256 credits at most */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(stale_advert_rejected_after_an_indirect_transfer),
		cmocka_unit_test(advert_accepted_once_the_sender_catches_up),
		cmocka_unit_test(several_adverts_consumed_by_indirect_transfers),
		cmocka_unit_test(small_ring_the_phase_must_jump),
		cmocka_unit_test(receiver_refuses_what_the_protocol_cannot_produce),
		cmocka_unit_test(chained_advert_follows_a_short_receive),
		cmocka_unit_test(sender_holds_after_a_direct_transfer),
		cmocka_unit_test(each_of_uwarps_rules_can_be_turned_off),
		cmocka_unit_test(credit_slots_take_a_whole_slot_each),
		cmocka_unit_test(random_interleavings_keep_the_stream_whole_and_safe),
		cmocka_unit_test(random_interleavings_keep_the_papers_lemmas),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
