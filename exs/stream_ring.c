/*
 * stream_ring.c: the dynamic stream protocol's shared bookkeeping
 * (stream_ring.h): receive queue, ring arithmetic, advert queue.
 */
#include <errno.h>

#include "stream_ring.h"

uint64_t exs_sp_ring_bytes(const struct exs_sp_rx *r)
{
	return r->slot ? r->slot_data : r->ring_in - r->ring_out;
}

bool exs_sp_recv_done(const struct exs_sp_recv *v)
{
	return v->filled == v->len || (!v->waitall && v->filled && v->adv != EXS_SP_ADV_LIVE);
}

int exs_sp_ring_arrive(struct exs_sp_rx *r, uint64_t ring_off, uint32_t len)
{
	uint64_t woff = r->ring_in % r->ring_size;
	uint64_t takes = r->slot ? r->slot : len; /* ring bytes it uses up */
	if (!len || ring_off != woff || takes > r->ring_size - (r->ring_in - r->ring_out) ||
	    woff + len > r->ring_size || len > takes)
		return -EPROTO;
	if (r->slot) {
		r->slot_len[(r->slot_head + r->slot_count++) % EXS_SP_MAX_SLOTS] = len;
		r->slot_data += len;
	}
	r->ring_in += takes;
	r->arrived += len;
	return 0;
}

void exs_sp_ring_take(struct exs_sp_rx *r, struct exs_sp_recv *h, struct exs_sp_copy *cp)
{
	uint64_t roff = r->ring_out % r->ring_size;
	uint32_t n;
	if (r->slot) {
		/* the head slot's data, from where the last copy stopped */
		uint32_t in_slot = r->slot_len[r->slot_head] - r->slot_off;
		n = (uint32_t)exs_sp_min64(in_slot, h->len - h->filled);
		roff += r->slot_off;
		r->slot_off += n;
		r->slot_data -= n;
		if (n == in_slot) {
			r->slot_head = (r->slot_head + 1) % EXS_SP_MAX_SLOTS;
			r->slot_count--;
			r->slot_off = 0;
			r->ring_out += r->slot;
			r->c.ring_used += r->slot;
		}
	} else {
		n = (uint32_t)exs_sp_min64(exs_sp_min64(exs_sp_ring_bytes(r), h->len - h->filled),
					   r->ring_size - roff);
		r->ring_out += n;
		r->c.ring_used += n;
	}
	*cp = (struct exs_sp_copy){ .id = h->id, .off = h->filled, .len = n, .ring_off = roff };
	h->filled += n;
	r->c.copied += n;
}

void exs_sp_rq_pop(struct exs_sp_rx *r)
{
	r->head = (r->head + 1) % EXS_SP_MAX_RECVS;
	r->count--;
}

void exs_sp_adv_pop(struct exs_sp_tx *t)
{
	t->head = (t->head + 1) % EXS_SP_MAX_ADVERTS;
	t->count--;
}

int exs_sp_adv_push(struct exs_sp_tx *t, const struct exs_sp_advert *a)
{
	if (t->count == EXS_SP_MAX_ADVERTS)
		return -ENOBUFS;
	struct exs_sp_advert *n = &t->adv[(t->head + t->count++) % EXS_SP_MAX_ADVERTS];
	*n = *a;
	n->used = 0;
	return 0;
}

void exs_sp_send_direct(struct exs_sp_tx *t, struct exs_sp_advert *a, uint64_t avail,
			struct exs_sp_xfer *x)
{
	uint32_t n = (uint32_t)exs_sp_min64(exs_sp_min64(avail, EXS_SP_MAX_XFER), a->len - a->used);
	*x = (struct exs_sp_xfer){ .kind = EXS_SP_DIRECT,
				   .phase = t->phase,
				   .len = n,
				   .id = a->id,
				   .off = a->off + a->used,
				   .seq = t->seq };
	a->used += n;
	t->consumed_last = !a->waitall || a->used == a->len;
	t->consumed_id = a->id;
	if (t->consumed_last)
		exs_sp_adv_pop(t);
	t->last = EXS_SP_DIRECT;
	t->c.direct++;
	t->seq += n;
	t->tell_phase = false; /* the notification carries the phase */
}

uint32_t exs_sp_ring_room(const struct exs_sp_tx *t, uint64_t avail)
{
	uint64_t used = t->ring_written - t->ring_acked;
	if (used + (t->slot ? t->slot : 1) > t->ring_size)
		return 0;
	uint64_t woff = t->ring_written % t->ring_size;
	uint64_t n = exs_sp_min64(exs_sp_min64(avail, EXS_SP_MAX_XFER), t->ring_size - used);
	n = exs_sp_min64(n, t->ring_size - woff); /* a transfer does not wrap */
	if (t->slot && n > t->slot)
		n = t->slot; /* one credit carries one slot at most */
	return (uint32_t)n;
}

void exs_sp_send_indirect(struct exs_sp_tx *t, uint32_t n, struct exs_sp_xfer *x)
{
	*x = (struct exs_sp_xfer){ .kind = EXS_SP_INDIRECT,
				   .phase = t->phase,
				   .len = n,
				   .ring_off = t->ring_written % t->ring_size,
				   .seq = t->seq };
	t->consumed_last = false;
	t->ring_written += t->slot ? t->slot : n; /* a slot is used up whole */
	t->seq += n;
	t->last = EXS_SP_INDIRECT;
	t->c.indirect++;
	t->tell_phase = false;
}
