/*
 * test_exs_paper.c: the dynamic stream protocol in the paper's own rules
 * (EXS_SP_PAPER, exs/stream_paper.h), replayed message by message through
 * the situations of the UNH EXS design notes' appendix (their Figures 4
 * to 7): every transfer, advert, copy and acknowledgement in order, with
 * each side's phase, sequence number and estimate checked as it goes. A
 * replay that differs by one message fails. The figures are drawings
 * whose text names the decisive numbers; where a figure gives none, the
 * smallest sequence that shows its rule is used, and its comment says so.
 * (The random simulation of this mode, with the paper's lemmas checked at
 * every step, is in test_exs_stream.c.)
 */
#include <errno.h>
#include <stdbool.h>

#include "sp_pair.h"

static void paper(struct pair *p, uint64_t ring) { pair_init_mode(p, EXS_SP_PAPER, ring); }

/* Figure 4: after an indirect transfer the receiver sends no advert while
 * an advert of the earlier phase is outstanding (k_a > 0), until indirect
 * data has used it up; then it advertises at the exact stream position in
 * the next even phase, and the sender takes that advert. (Phases 0 to 2
 * here; the figure's are later ones of the same run.) */
static void fig4_no_advert_while_an_earlier_phase_is_out(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 1000);
	uint32_t a = post(&p, 100, false), b = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0);
	struct exs_sp_advert adv_b = advert(&p, b, 0, 1); /* estimate: one more byte */
	/* the sender had data before either advert came: indirect, phase 1 */
	struct exs_sp_xfer i1 = xfer(&p, 100, EXS_SP_INDIRECT, 1, 100);
	assert_int_equal(p.s.c.switches, 1); /* it starts in a direct phase */
	arrive(&p, &i1);
	assert_int_equal(p.r.phase, 1); /* Fig. 4 of the paper, line 9 */
	copy(&p, a, 0, 100);
	completes(&p, a, 100);
	assert_int_equal(p.r.est, 101); /* Fig. 5: 1 + 100 - 1 */
	uint64_t d1 = ack(&p, 100);
	uint32_t c = post(&p, 100, false);
	no_advert(&p); /* b's advert (phase 0) is still out: k_a = 1 */
	/* the sender throws both adverts away: their phase is behind its own */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0);
	assert_int_equal(p.s.c.discarded, 2);
	assert_int_equal(p.s.phase, 1);
	assert_int_equal(exs_sp_tx_ack(&p.s, d1), 0);
	struct exs_sp_xfer i2 = xfer(&p, 50, EXS_SP_INDIRECT, 1, 50);
	assert_int_equal(i2.seq, 100);
	arrive(&p, &i2);
	copy(&p, b, 0, 50); /* b's advert is used up by indirect data */
	completes(&p, b, 50);
	assert_int_equal(p.r.est, 150);
	uint64_t d2 = ack(&p, 150);
	struct exs_sp_advert adv_c = advert(&p, c, 2, 150); /* phase 1 -> 2 */
	assert_int_equal(exs_sp_tx_ack(&p.s, d2), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_c), 0);
	struct exs_sp_xfer d = xfer(&p, 100, EXS_SP_DIRECT, 2, 100);
	assert_int_equal(d.id, c);
	assert_int_equal(p.s.c.switches, 2);
	arrive(&p, &d);
	completes(&p, c, 100);
}

/* Figure 5: an advert already satisfied by an indirect transfer is thrown
 * away for its phase; the next one, of a higher phase than the sender's
 * and at exactly the sender's sequence number, is taken. (The figure's
 * phases 4, 5 and 6 are 0, 1 and 2 here.) */
static void fig5_stale_advert_rejected_next_phase_accepted(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 1000);
	uint32_t a = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0);
	struct exs_sp_xfer i = xfer(&p, 100, EXS_SP_INDIRECT, 1, 100); /* crosses adv_a */
	arrive(&p, &i);
	copy(&p, a, 0, 100);
	completes(&p, a, 100);
	uint64_t d1 = ack(&p, 100);
	uint32_t b = post(&p, 100, false);
	struct exs_sp_advert adv_b = advert(&p, b, 2, 100);
	assert_int_equal(exs_sp_tx_ack(&p.s, d1), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0); /* phase 0 < 1: gone */
	assert_int_equal(p.s.c.discarded, 1);
	assert_int_equal(p.s.phase, 1); /* 0 is not above 1: no jump */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0);
	struct exs_sp_xfer d = xfer(&p, 100, EXS_SP_DIRECT, 2, 100);
	assert_int_equal(d.id, b);
	assert_int_equal(d.seq, 100);
	arrive(&p, &d);
	completes(&p, b, 100);
	assert_int_equal(p.s.c.discarded, 1);
}

/* Figure 6: several adverts, each satisfied by its own indirect transfer;
 * the sender throws them all away and matches the first advert of the
 * receiver's next phase. (Three receives with MSG_WAITALL, so their
 * estimates are exact: 0, 100, 200.) */
static void fig6_several_adverts_satisfied_indirectly(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 1000);
	uint32_t id[3];
	struct exs_sp_advert adv[3];
	for (int k = 0; k < 3; k++) {
		id[k] = post(&p, 100, true);
		adv[k] = advert(&p, id[k], 0, 100u * (unsigned)k);
	}
	assert_int_equal(p.r.est, 300);
	struct exs_sp_xfer x[3];
	for (int k = 0; k < 3; k++)
		x[k] = xfer(&p, 100, EXS_SP_INDIRECT, 1, 100);
	uint64_t d = 0;
	for (int k = 0; k < 3; k++) {
		arrive(&p, &x[k]);
		copy(&p, id[k], 0, 100);
		completes(&p, id[k], 100);
		d = ack(&p, 100u * (unsigned)(k + 1));
		if (k < 2)
			no_advert(&p); /* nothing is posted; and k_a > 0 */
	}
	assert_int_equal(p.r.est, 300); /* MSG_WAITALL: counted at the advert */
	uint32_t n = post(&p, 100, true);
	struct exs_sp_advert adv_n = advert(&p, n, 2, 300);
	for (int k = 0; k < 3; k++)
		assert_int_equal(exs_sp_tx_advert(&p.s, &adv[k]), 0);
	assert_int_equal(p.s.c.discarded, 3);
	assert_int_equal(exs_sp_tx_ack(&p.s, d), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_n), 0);
	struct exs_sp_xfer dx = xfer(&p, 100, EXS_SP_DIRECT, 2, 100);
	assert_int_equal(dx.id, n);
	arrive(&p, &dx);
	completes(&p, n, 100);
}

/* Figure 7, as drawn: a 200-byte ring, 100-byte messages, and the 2-byte
 * start message ("go") that puts the ring two bytes off. After D202 the
 * sender is ahead: I302 (100 bytes), I402 (98, to the ring's end) and I500
 * (2, at its start) fill the ring and leave the sender at 502 in phase 3.
 * The receiver, having taken I302 and I402 (500 bytes), advertises three
 * receives in phase 4 at 500, 501 and 502 (the figure's A4, A5, A6; here
 * receives 6, 7 and 8). A6's 502 equals the sender's position, but byte
 * 502 belongs to A5's receive (I500's two bytes complete A4's). Rejecting
 * A4 moves the sender from phase 3 to 5, so A5 and A6 go too. */
static void fig7_small_ring_the_phase_jumps_from_3_to_5(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 200);
	/* "go": no advert yet; indirect at ring 0, phase 0 -> 1 */
	struct exs_sp_xfer go = xfer(&p, 2, EXS_SP_INDIRECT, 1, 2);
	assert_int_equal(go.ring_off, 0);
	arrive(&p, &go);
	uint32_t r0 = post(&p, 100, false); /* the server's receive for "go" */
	no_advert(&p);                      /* the ring holds "go" */
	copy(&p, r0, 0, 2);
	completes(&p, r0, 2);
	assert_int_equal(p.r.est, 2); /* never advertised: S'_r follows S_r */
	uint64_t ack_go = ack(&p, 2);
	uint32_t r[9];
	r[0] = r0;
	struct exs_sp_advert adv[9];
	for (int k = 1; k <= 3; k++) { /* A1..A3 in phase 2 */
		r[k] = post(&p, 100, false);
		adv[k] = advert(&p, r[k], 2, 2u + (unsigned)k - 1);
	}
	assert_int_equal(exs_sp_tx_ack(&p.s, ack_go), 0);
	for (int k = 1; k <= 3; k++)
		assert_int_equal(exs_sp_tx_advert(&p.s, &adv[k]), 0);
	/* D2: A1 at exactly 2 in a higher phase; then D102 and D202 take the
	 * head adverts of the direct phase as they come */
	struct exs_sp_xfer dx[4];
	for (int k = 1; k <= 3; k++) {
		dx[k] = xfer(&p, 100, EXS_SP_DIRECT, 2, 100);
		assert_int_equal(dx[k].id, r[k]);
		assert_int_equal(dx[k].seq, 2u + 100u * (unsigned)(k - 1));
	}
	/* the sender gets ahead: I302, I402 (98, to the end), I500 (2, wrapped) */
	struct exs_sp_xfer i302 = xfer(&p, 100, EXS_SP_INDIRECT, 3, 100);
	assert_int_equal(i302.seq, 302);
	assert_int_equal(i302.ring_off, 2);
	struct exs_sp_xfer i402 = xfer(&p, 100, EXS_SP_INDIRECT, 3, 98);
	assert_int_equal(i402.seq, 402);
	assert_int_equal(i402.ring_off, 102);
	struct exs_sp_xfer i500 = xfer(&p, 2, EXS_SP_INDIRECT, 3, 2);
	assert_int_equal(i500.seq, 500);
	assert_int_equal(i500.ring_off, 0);
	assert_int_equal(p.s.seq, 502);
	no_xfer(&p, 100); /* the ring is full */
	/* the receiver: the three direct transfers, then I302 and I402 */
	for (int k = 1; k <= 3; k++) {
		arrive(&p, &dx[k]);
		completes(&p, r[k], 100);
	}
	assert_int_equal(p.r.est, 302);
	arrive(&p, &i302);
	assert_int_equal(p.r.phase, 3);
	r[4] = post(&p, 100, false);
	r[5] = post(&p, 100, false);
	no_advert(&p); /* ring data */
	copy(&p, r[4], 0, 100);
	completes(&p, r[4], 100);
	uint64_t ack1 = ack(&p, 102);
	arrive(&p, &i402);
	copy(&p, r[5], 0, 98);
	completes(&p, r[5], 98);
	uint64_t ack2 = ack(&p, 200);
	assert_int_equal(p.r.est, 500);
	/* caught up: A4, A5, A6 in phase 4 */
	for (int k = 6; k <= 8; k++) {
		r[k] = post(&p, 100, false);
		adv[k] = advert(&p, r[k], 4, 500u + (unsigned)k - 6);
	}
	assert_int_equal(adv[8].seq, p.s.seq); /* A6 "appears to match" */
	assert_int_equal(exs_sp_tx_ack(&p.s, ack1), 0);
	assert_int_equal(exs_sp_tx_ack(&p.s, ack2), 0);
	assert_int_equal(p.s.phase, 3);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv[6]), 0); /* A4: 500 < 502 */
	assert_int_equal(p.s.phase, 5);                       /* NEXT_PHASE(4) */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv[7]), 0); /* A5: phase 4 < 5 */
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv[8]), 0); /* A6: likewise */
	assert_int_equal(p.s.c.discarded, 3);
	/* I500 completes A4's receive with 2 bytes; the next message goes
	 * indirect into A5's, as it must */
	arrive(&p, &i500);
	assert_int_equal(p.r.phase, 5);
	copy(&p, r[6], 0, 2);
	completes(&p, r[6], 2);
	uint64_t ack3 = ack(&p, 202);
	uint32_t r9 = post(&p, 100, false);
	no_advert(&p); /* A5 and A6 are out from phase 4: k_a = 2 */
	assert_int_equal(exs_sp_tx_ack(&p.s, ack3), 0);
	struct exs_sp_xfer i502 = xfer(&p, 100, EXS_SP_INDIRECT, 5, 100);
	assert_int_equal(i502.ring_off, 2);
	arrive(&p, &i502);
	copy(&p, r[7], 0, 100); /* byte 502 into A5's receive */
	completes(&p, r[7], 100);
	uint64_t ack4 = ack(&p, 302);
	no_advert(&p); /* A6 still out */
	assert_int_equal(exs_sp_tx_ack(&p.s, ack4), 0);
	/* the next message wraps as the fourth did: 98 + 2 */
	struct exs_sp_xfer i602 = xfer(&p, 100, EXS_SP_INDIRECT, 5, 98);
	assert_int_equal(i602.ring_off, 102);
	struct exs_sp_xfer i700 = xfer(&p, 2, EXS_SP_INDIRECT, 5, 2);
	assert_int_equal(i700.ring_off, 0);
	assert_int_equal(p.s.seq, 702);
	arrive(&p, &i602);
	copy(&p, r[8], 0, 98);
	completes(&p, r[8], 98);
	uint64_t ack5 = ack(&p, 400);
	/* phase 4 is used up by indirect data: r9 goes in phase 6 at 700,
	 * while I700 is still on its way: the same rule throws it away */
	struct exs_sp_advert adv9 = advert(&p, r9, 6, 700);
	assert_int_equal(exs_sp_tx_ack(&p.s, ack5), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv9), 0);
	assert_int_equal(p.s.phase, 7);
	arrive(&p, &i700);
	assert_int_equal(p.r.phase, 7);
	copy(&p, r9, 0, 2);
	completes(&p, r9, 2);
	uint64_t ack6 = ack(&p, 402);
	uint32_t r10 = post(&p, 100, false);
	struct exs_sp_advert adv10 = advert(&p, r10, 8, 702);
	assert_int_equal(exs_sp_tx_ack(&p.s, ack6), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv10), 0);
	struct exs_sp_xfer d702 = xfer(&p, 100, EXS_SP_DIRECT, 8, 100);
	assert_int_equal(d702.id, r10);
	assert_int_equal(d702.seq, 702);
	arrive(&p, &d702);
	completes(&p, r10, 100);
	/* phases 0 1 2 3 5 7 8: four switches between direct and indirect */
	assert_int_equal(p.s.c.switches, 4);
	assert_int_equal(p.s.c.direct, 4);
	assert_int_equal(p.s.c.indirect, 7);
	assert_int_equal(p.s.c.discarded, 4);
}

/* In a direct phase the paper's sender takes the head advert as it is:
 * two receives without MSG_WAITALL are advertised at 0 and at 1 (an
 * estimate); 30 bytes go into the first, then 50 into the second though
 * the sender is at 30, and the receiver's estimate is corrected as they
 * land (Fig. 4: S'_r + l_w - 1). */
static void direct_phase_takes_the_head_advert_as_it_is(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 1000);
	uint32_t a = post(&p, 100, false), b = post(&p, 100, false);
	struct exs_sp_advert adv_a = advert(&p, a, 0, 0), adv_b = advert(&p, b, 0, 1);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_a), 0);
	assert_int_equal(exs_sp_tx_advert(&p.s, &adv_b), 0);
	struct exs_sp_xfer x1 = xfer(&p, 30, EXS_SP_DIRECT, 0, 30);
	struct exs_sp_xfer x2 = xfer(&p, 50, EXS_SP_DIRECT, 0, 50);
	assert_int_equal(x2.id, b);
	assert_int_equal(x2.off, 0);
	arrive(&p, &x1);
	completes(&p, a, 30);
	assert_int_equal(p.r.est, 31);
	arrive(&p, &x2);
	completes(&p, b, 50);
	assert_int_equal(p.r.est, 80);
	assert_int_equal(p.s.c.switches, 0);
}

/* The paper's sender never sends a PHASE message: one is a protocol
 * error; and an advert of odd phase cannot come from the paper's
 * receiver (its Lemma 1), so the receiver's own are checked even. */
static void paper_mode_refuses_what_it_cannot_produce(void **state)
{
	(void)state;
	struct pair p;
	paper(&p, 256);
	assert_int_equal(exs_sp_rx_phase(&p.r, 3), -EPROTO);
	uint32_t a = post(&p, 10, true);
	advert(&p, a, 0, 0);
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, a, 5, 1), -EPROTO);  /* wrong offset */
	assert_int_equal(exs_sp_rx_direct(&p.r, 1, a, 0, 1), -EPROTO);  /* another phase */
	assert_int_equal(exs_sp_rx_direct(&p.r, 0, a, 0, 11), -EPROTO); /* past it */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fig4_no_advert_while_an_earlier_phase_is_out),
		cmocka_unit_test(fig5_stale_advert_rejected_next_phase_accepted),
		cmocka_unit_test(fig6_several_adverts_satisfied_indirectly),
		cmocka_unit_test(fig7_small_ring_the_phase_jumps_from_3_to_5),
		cmocka_unit_test(direct_phase_takes_the_head_advert_as_it_is),
		cmocka_unit_test(paper_mode_refuses_what_it_cannot_produce),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
