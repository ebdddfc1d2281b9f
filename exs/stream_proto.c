/*
 * stream_proto.c: the dynamic stream protocol's public state machines
 * (stream_proto.h): uwarp's own rules here, the paper's exact ones in
 * stream_paper.c (EXS_SP_PAPER), the bookkeeping both share in
 * stream_ring.c.
 */
#include <errno.h>
#include <string.h>

#include "stream_paper.h"
#include "stream_ring.h"

/* ---- sender ---- */

void exs_sp_tx_init(struct exs_sp_tx *t, enum exs_sp_mode mode, uint64_t ring_size)
{
	memset(t, 0, sizeof(*t));
	t->mode = mode;
	t->ring_size = ring_size;
	t->rules = mode == EXS_SP_DYNAMIC ? EXS_SP_RULES_ALL : 0;
	t->hold_min = EXS_SP_HOLD_MIN;
}

void exs_sp_tx_rules(struct exs_sp_tx *t, unsigned rules)
{
	if (t->mode == EXS_SP_DYNAMIC)
		t->rules = rules & EXS_SP_RULES_ALL;
}

int exs_sp_tx_idle(struct exs_sp_tx *t, uint64_t seq)
{
	if (seq > t->seq)
		return -EPROTO;
	/* (one for an earlier position says nothing now: data has gone since) */
	if (seq == t->seq)
		t->idle = true;
	return 0;
}

bool exs_sp_tx_hold_due(struct exs_sp_tx *t, uint64_t *seq)
{
	if (!t->tell_hold)
		return false;
	t->tell_hold = false;
	*seq = t->seq;
	return true;
}

/* The stream moved on by x: an earlier hold and IDLE are spent. The
 * transfers' mean length follows it (an eighth of the way each time). */
static int moved(struct exs_sp_tx *t, const struct exs_sp_xfer *x)
{
	t->held = t->tell_hold = t->idle = false;
	if (!t->mean_len)
		t->mean_len = x->len;
	else
		t->mean_len = t->mean_len - t->mean_len / 8 + x->len / 8;
	return 1;
}

uint64_t exs_sp_slots(uint64_t ring_size, uint32_t slot, uint32_t *eff)
{
	if (!slot) {
		*eff = 0;
		return ring_size;
	}
	if (slot > ring_size)
		slot = (uint32_t)ring_size;
	*eff = slot;
	return exs_sp_min64(ring_size / slot, EXS_SP_MAX_SLOTS) * slot;
}

void exs_sp_tx_slots(struct exs_sp_tx *t, uint32_t slot)
{
	t->ring_size = exs_sp_slots(t->ring_size, slot, &t->slot);
}

int exs_sp_tx_advert(struct exs_sp_tx *t, const struct exs_sp_advert *a)
{
	if (!a->len)
		return -EPROTO;
	if (t->mode == EXS_SP_PAPER)
		return exs_sp_paper_tx_advert(t, a);
	/* The receiver opens a phase only once every advert of the earlier
	 * ones is dead: those still held go now. */
	while (t->count && t->adv[t->head].phase < a->phase) {
		if (t->adv[t->head].phase + 1 > t->phase)
			t->phase = t->adv[t->head].phase + 1;
		exs_sp_adv_pop(t);
		t->c.discarded++;
	}
	return exs_sp_adv_push(t, a);
}

int exs_sp_tx_ack(struct exs_sp_tx *t, uint64_t drained)
{
	if (drained < t->ring_acked || drained > t->ring_written)
		return -EPROTO;
	t->ring_acked = drained;
	return 0;
}

int exs_sp_tx_next(struct exs_sp_tx *t, uint64_t avail, struct exs_sp_xfer *x)
{
	if (!avail)
		return 0;
	if (t->mode == EXS_SP_PAPER)
		return exs_sp_paper_tx_next(t, avail, x);
	while (t->count) {
		struct exs_sp_advert *a = &t->adv[t->head];
		bool usable =
			a->phase >= t->phase &&
			(a->chain && !a->used ? t->consumed_last && t->consumed_id + 1 == a->id
					      : a->seq + a->used == t->seq);
		if (usable) {
			if (a->chain && !a->used)
				a->seq = t->seq; /* it begins where that transfer ended */
			t->phase = a->phase;
			if (t->last == EXS_SP_INDIRECT)
				t->c.switches++;
			exs_sp_send_direct(t, a, avail, x);
			return moved(t, x);
		}
		/* stale: an earlier phase, or written round (its space has been
		 * or will be filled from the ring) */
		if (a->phase + 1 > t->phase)
			t->phase = a->phase + 1;
		exs_sp_adv_pop(t);
		t->c.discarded++;
		t->tell_phase = true;
		t->consumed_last = false;
	}
	if (t->mode == EXS_SP_DIRECT_ONLY)
		return 0;
	if ((t->rules & EXS_SP_RULE_HOLD) && t->last == EXS_SP_DIRECT && !t->idle &&
	    (avail >= t->hold_min || t->mean_len >= t->hold_min)) {
		/* the receiver has our data still to take; its next advert or
		 * its IDLE follows (stream_proto.h, "Holding") */
		if (!t->held) {
			t->held = t->tell_hold = true;
			t->c.holds++;
		}
		return 0;
	}
	uint32_t n = exs_sp_ring_room(t, avail);
	if (!n)
		return 0;
	/* Leaving direct mode opens a new phase: an advert still on its way
	 * was estimated before these bytes and must not be used after them. */
	if (t->last == EXS_SP_DIRECT) {
		t->phase++;
		t->c.switches++;
	}
	exs_sp_send_indirect(t, n, x);
	return moved(t, x);
}

bool exs_sp_tx_phase_due(struct exs_sp_tx *t, uint32_t *phase)
{
	if (!t->tell_phase)
		return false;
	t->tell_phase = false;
	*phase = t->phase;
	return true;
}

/* ---- receiver ---- */

void exs_sp_rx_init(struct exs_sp_rx *r, enum exs_sp_mode mode, uint64_t ring_size)
{
	memset(r, 0, sizeof(*r));
	r->mode = mode;
	r->ring_size = ring_size;
	r->rules = EXS_SP_RULES_ALL;
}

void exs_sp_rx_rules(struct exs_sp_rx *r, unsigned rules)
{
	if (r->mode == EXS_SP_DYNAMIC) /* (the forced modes keep theirs) */
		r->rules = rules & EXS_SP_RULES_ALL;
}

void exs_sp_rx_slots(struct exs_sp_rx *r, uint32_t slot)
{
	r->ring_size = exs_sp_slots(r->ring_size, slot, &r->slot);
}

uint64_t exs_sp_rx_ring_next(const struct exs_sp_rx *r) { return r->ring_in % r->ring_size; }

uint64_t exs_sp_rx_held(const struct exs_sp_rx *r) { return exs_sp_ring_bytes(r); }

int exs_sp_rx_post(struct exs_sp_rx *r, uint32_t len, bool waitall, uint32_t *id)
{
	if (!len || len > (1u << 31))
		return -EINVAL;
	if (r->count == EXS_SP_MAX_RECVS)
		return -ENOBUFS;
	struct exs_sp_recv *v = exs_sp_rq(r, r->count++);
	*v = (struct exs_sp_recv){ .id = r->next_id++, .len = len, .waitall = waitall };
	*id = v->id;
	return 0;
}

/* The sender's phase has reached phase: adverts before it are gone. */
static void heard(struct exs_sp_rx *r, uint32_t phase)
{
	if (phase > r->phase)
		r->phase = phase;
	for (unsigned i = 0; i < r->count; i++) {
		struct exs_sp_recv *v = exs_sp_rq(r, i);
		if (v->adv == EXS_SP_ADV_LIVE && v->adv_phase < phase)
			v->adv = EXS_SP_ADV_DEAD;
	}
}

/* Every advert of phase p or earlier can no longer be used: the sender,
 * which takes adverts in order, will meet one of them that cannot match
 * and discard it, moving its phase past p, and with it all the others.
 * New adverts go in the next phase. */
static void kill_through(struct exs_sp_rx *r, uint32_t p)
{
	for (unsigned i = 0; i < r->count; i++) {
		struct exs_sp_recv *v = exs_sp_rq(r, i);
		if (v->adv == EXS_SP_ADV_LIVE && v->adv_phase <= p)
			v->adv = EXS_SP_ADV_DEAD;
	}
	if (p + 1 > r->phase)
		r->phase = p + 1;
	r->probing = (r->rules & EXS_SP_RULE_PROBE) != 0;
}

int exs_sp_rx_advert(struct exs_sp_rx *r, struct exs_sp_advert *a)
{
	if (r->mode == EXS_SP_INDIRECT_ONLY || exs_sp_ring_bytes(r))
		return 0;
	if (r->mode == EXS_SP_PAPER)
		return exs_sp_paper_rx_advert(r, a);
	/* the stream position after every live advert is filled, unless
	 * one of them may complete short (then the next one is chained) */
	uint64_t est = r->arrived;
	bool chain = false;
	for (unsigned i = 0; i < r->count; i++) {
		struct exs_sp_recv *v = exs_sp_rq(r, i);
		if (v->adv == EXS_SP_ADV_LIVE) {
			if (v->adv_phase < r->phase || r->probing)
				return 0; /* an earlier phase is still out */
			est += v->adv_off + v->adv_len - v->filled;
			/* (behind a chained advert whose place is not known yet
			 * every advert chains, the rule turned off since or not:
			 * an estimate there could not be checked, and killing it
			 * would kill the chained one, still good, with it) */
			chain = chain || ((r->rules & EXS_SP_RULE_CHAIN) && !v->waitall) ||
				(v->adv_chain && v->adv_seq == UINT64_MAX);
			continue;
		}
		/* the first receive without a live advert: advertise what is
		 * left of it (all of it but for a head partly filled) */
		if (exs_sp_recv_done(v))
			return 0; /* complete, not yet reaped */
		v->adv = EXS_SP_ADV_LIVE;
		v->adv_phase = r->phase;
		v->adv_off = v->filled;
		v->adv_len = v->len - v->filled;
		v->adv_chain = chain;
		v->adv_seq = chain ? UINT64_MAX : est; /* known once its chain is */
		*a = (struct exs_sp_advert){ .id = v->id,
					     .phase = v->adv_phase,
					     .seq = est,
					     .off = v->adv_off,
					     .len = v->adv_len,
					     .waitall = v->waitall,
					     .chain = chain };
		return 1;
	}
	return 0;
}

int exs_sp_rx_direct(struct exs_sp_rx *r, uint32_t phase, uint32_t id, uint32_t off, uint32_t len)
{
	if (!r->count || !len || exs_sp_ring_bytes(r))
		return -EPROTO;
	struct exs_sp_recv *h = exs_sp_rq(r, 0);
	if (h->adv != EXS_SP_ADV_LIVE || h->id != id || h->adv_phase != phase || off != h->filled ||
	    (uint64_t)off + len > (uint64_t)h->adv_off + h->adv_len)
		return -EPROTO;
	h->filled += len;
	r->arrived += len;
	if (r->mode == EXS_SP_PAPER) {
		exs_sp_paper_rx_direct(r, h, len);
		return 0;
	}
	r->probing = false; /* the sender is taking adverts again */
	if (!h->waitall || h->filled == h->adv_off + h->adv_len) {
		h->adv = EXS_SP_ADV_DEAD; /* consumed */
		/* the advert chained to this one begins exactly here */
		struct exs_sp_recv *nx = r->count > 1 ? exs_sp_rq(r, 1) : NULL;
		if (nx && nx->adv == EXS_SP_ADV_LIVE && nx->adv_chain && nx->adv_seq == UINT64_MAX)
			nx->adv_seq = r->arrived;
	}
	heard(r, phase);
	return 0;
}

int exs_sp_rx_indirect(struct exs_sp_rx *r, uint32_t phase, uint64_t ring_off, uint32_t len)
{
	if (exs_sp_ring_arrive(r, ring_off, len))
		return -EPROTO;
	if (r->mode == EXS_SP_PAPER)
		exs_sp_paper_rx_indirect(r);
	else
		heard(r, phase);
	return 0;
}

int exs_sp_rx_phase(struct exs_sp_rx *r, uint32_t phase)
{
	if (r->mode == EXS_SP_PAPER)
		return -EPROTO; /* the paper's sender never says its phase */
	heard(r, phase);
	return 0;
}

int exs_sp_rx_hold(struct exs_sp_rx *r, uint64_t seq)
{
	if (r->mode != EXS_SP_DYNAMIC || seq != r->arrived)
		return -EPROTO;
	r->hold_heard = true;
	r->hold_at = seq;
	return 0;
}

bool exs_sp_rx_idle(const struct exs_sp_rx *r)
{
	/* (no receive posted: none to advertise, no data on its way, as a
	 * direct transfer needs a receive and the ring is empty; data since
	 * the HOLD: the sender has moved on) */
	return r->hold_heard && !r->count && !exs_sp_ring_bytes(r) && r->hold_at == r->arrived;
}

bool exs_sp_rx_idle_due(struct exs_sp_rx *r, uint64_t *seq)
{
	if (!exs_sp_rx_idle(r))
		return false;
	r->hold_heard = false;
	*seq = r->arrived;
	return true;
}

int exs_sp_rx_drain(struct exs_sp_rx *r, struct exs_sp_copy *cp)
{
	if (!exs_sp_ring_bytes(r) || !r->count)
		return 0;
	struct exs_sp_recv *h = exs_sp_rq(r, 0);
	if (exs_sp_recv_done(h))
		return 0; /* complete it first */
	if (r->mode == EXS_SP_PAPER) {
		exs_sp_paper_rx_drain(r, h, cp);
		return 1;
	}
	if (h->adv == EXS_SP_ADV_LIVE) {
		/* The sender's position is at least what has arrived. An advert
		 * whose next byte lies before that can never match it again: the
		 * sender went round it, and so all of its phase are gone. One
		 * further on might still be used: wait (estimates are exact
		 * while adverts are live, so this is a guard). */
		if (h->adv_seq != UINT64_MAX && h->adv_seq + (h->filled - h->adv_off) >= r->arrived)
			return 0;
		kill_through(r, h->adv_phase);
	}
	exs_sp_ring_take(r, h, cp);
	return 1;
}

int exs_sp_rx_complete(struct exs_sp_rx *r, uint32_t *id, uint32_t *bytes)
{
	if (!r->count)
		return 0;
	struct exs_sp_recv *h = exs_sp_rq(r, 0);
	if (!exs_sp_recv_done(h))
		return 0;
	if (h->filled < h->len && r->mode != EXS_SP_PAPER) {
		/* Short: the adverts after it estimated a full receive here, so
		 * their sequence numbers are too high and the sender cannot
		 * match the first of them: they are all gone (kill_through). */
		for (unsigned i = 1; i < r->count; i++) {
			struct exs_sp_recv *v = exs_sp_rq(r, i);
			/* (a chained one was fixed when this one's transfer came) */
			if (v->adv == EXS_SP_ADV_LIVE && !v->adv_chain)
				kill_through(r, v->adv_phase);
		}
	}
	*id = h->id;
	*bytes = h->filled;
	exs_sp_rq_pop(r);
	return 1;
}

bool exs_sp_rx_ack_due(struct exs_sp_rx *r, uint64_t *drained)
{
	uint64_t unacked = r->ring_out - r->ring_acked;
	/* In dynamic mode the room goes back only when the ring is empty: the
	 * sender is then blocked at exactly the position the receiver's next
	 * adverts (sent before the ACK) estimate, so it takes them. Room given
	 * back earlier is filled while the adverts are on their way, and they
	 * arrive stale, round after round. The paper acknowledges as the
	 * ring drains (its Fig. 5), before any advert. */
	if (!unacked)
		return false;
	if (r->slot && r->mode != EXS_SP_DYNAMIC && r->mode != EXS_SP_PAPER) {
		/* Credits on the indirect path (the SDP paper's first scheme,
		 * its delayed acknowledgement): once half the credits are used,
		 * not before, whether or not more data waits. */
		if (unacked * 2 < r->ring_size)
			return false;
	} else if (exs_sp_ring_bytes(r) && r->mode != EXS_SP_PAPER &&
		   ((r->mode == EXS_SP_DYNAMIC && (r->rules & EXS_SP_RULE_ACK_EMPTY)) ||
		    unacked < r->ring_size / 4)) {
		return false;
	}
	r->ring_acked = r->ring_out;
	*drained = r->ring_out;
	return true;
}

void exs_sp_rx_abandon(struct exs_sp_rx *r)
{
	r->head = 0;
	r->count = 0;
}

uint32_t exs_sp_rx_head_filled(const struct exs_sp_rx *r)
{
	return r->count ? r->q[r->head].filled : 0;
}

bool exs_sp_rx_live_adverts(const struct exs_sp_rx *r)
{
	for (unsigned i = 0; i < r->count; i++)
		if (r->q[(r->head + i) % EXS_SP_MAX_RECVS].adv == EXS_SP_ADV_LIVE)
			return true;
	return false;
}
