/*
 * stream_paper.c: the paper's rules (stream_paper.h), figure by figure.
 */
#include <errno.h>

#include "stream_paper.h"
#include "stream_ring.h"

static bool phase_is_direct(uint32_t p) { return (p & 1) == 0; }

/* Fig. 2, lines 3-8: whether the sender throws advert a away. */
static bool stale(const struct exs_sp_tx *t, const struct exs_sp_advert *a)
{
	/* Line 3 discards when S_A < S_s; the text (and the design notes)
	 * accept only S_A == S_s. An honest receiver cannot send S_A > S_s
	 * to a sender in an indirect phase (docs/exs.md), and using one
	 * would place bytes at the wrong stream position: exact it is. */
	return !phase_is_direct(t->phase) && (a->phase < t->phase || a->seq + a->used != t->seq);
}

/* Fig. 2, lines 5-8 */
static void throw_away(struct exs_sp_tx *t, const struct exs_sp_advert *a)
{
	if (t->phase < a->phase)
		t->phase = a->phase + 1; /* NEXT_PHASE(P_A): odd, past them all */
	exs_sp_adv_pop(t);
	t->c.discarded++;
}

int exs_sp_paper_tx_advert(struct exs_sp_tx *t, const struct exs_sp_advert *a)
{
	int rc = exs_sp_adv_push(t, a);
	if (rc)
		return rc;
	/* Fig. 2's loop runs when data is to go; for an advert that it would
	 * throw away whenever it runs (an indirect phase and a phase or a
	 * position behind the sender's, which only grow) it runs now, so a
	 * sender with nothing to send holds no dead adverts. */
	while (t->count) {
		const struct exs_sp_advert *h = exs_sp_adv_head(t);
		if (!stale(t, h) || (h->phase >= t->phase && h->seq + h->used > t->seq))
			break;
		throw_away(t, h);
	}
	return 0;
}

int exs_sp_paper_tx_next(struct exs_sp_tx *t, uint64_t avail, struct exs_sp_xfer *x)
{
	while (t->count) { /* lines 1-16 */
		struct exs_sp_advert *a = exs_sp_adv_head(t);
		if (stale(t, a)) {
			throw_away(t, a);
			continue;
		}
		if (!phase_is_direct(t->phase)) {
			t->phase = a->phase; /* line 11: direct again */
			t->c.switches++;
		}
		exs_sp_send_direct(t, a, avail, x); /* lines 13-14 */
		return 1;
	}
	uint32_t n = exs_sp_ring_room(t, avail); /* lines 17-25 */
	if (!n)
		return 0;
	if (phase_is_direct(t->phase)) {
		t->phase++;
		t->c.switches++;
	}
	exs_sp_send_indirect(t, n, x);
	return 1;
}

int exs_sp_paper_rx_advert(struct exs_sp_rx *r, struct exs_sp_advert *a)
{
	/* b_r > 0 was checked by the caller */
	for (unsigned i = 0; i < r->count; i++) {
		struct exs_sp_recv *v = exs_sp_rq(r, i);
		if (v->adv == EXS_SP_ADV_LIVE) {
			if (v->adv_phase < r->phase)
				return 0; /* k_a > 0 */
			continue;
		}
		if (v->adv == EXS_SP_ADV_DEAD || exs_sp_recv_done(v))
			continue; /* consumed and complete, not yet reaped */
		if (v->filled)
			return 0; /* k_b > 0: filled from the ring, never advertised */
		if (!phase_is_direct(r->phase))
			r->phase++; /* Fig. 3, line 6 */
		v->adv = EXS_SP_ADV_LIVE;
		v->adv_phase = r->phase;
		v->adv_off = 0;
		v->adv_len = v->len;
		v->adv_chain = false;
		v->adv_seq = r->est;
		*a = (struct exs_sp_advert){ .id = v->id,
					     .phase = v->adv_phase,
					     .seq = r->est,
					     .off = 0,
					     .len = v->len,
					     .waitall = v->waitall };
		r->est += v->waitall ? v->len : 1; /* lines 10-14 */
		return 1;
	}
	return 0;
}

void exs_sp_paper_rx_direct(struct exs_sp_rx *r, struct exs_sp_recv *h, uint32_t len)
{
	if (!h->waitall) {
		r->est += len - 1;        /* Fig. 4, line 4 */
		h->adv = EXS_SP_ADV_DEAD; /* consumed: it completes */
	} else if (h->filled == h->len) {
		h->adv = EXS_SP_ADV_DEAD;
	}
}

void exs_sp_paper_rx_indirect(struct exs_sp_rx *r)
{
	if (phase_is_direct(r->phase))
		r->phase++; /* Fig. 4, line 9 */
}

void exs_sp_paper_rx_drain(struct exs_sp_rx *r, struct exs_sp_recv *h, struct exs_sp_copy *cp)
{
	exs_sp_ring_take(r, h, cp);
	if (h->adv == EXS_SP_ADV_NONE) {
		/* Fig. 5 leaves S'_r alone here; but S'_r is the next advert's
		 * position, and these bytes move it as they move S_r (without
		 * this the first advert after the start message would be 2
		 * behind the sender for good). */
		r->est += cp->len;
	} else if (h->adv == EXS_SP_ADV_LIVE && !h->waitall) {
		r->est += cp->len - 1;    /* Fig. 5, line 6 */
		h->adv = EXS_SP_ADV_DEAD; /* flushed by indirect data: it completes */
	}
}
