/*
 * sim.c: the two-endpoint simulation of the dynamic stream protocol (sim.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim.h"

static int trace = -1;
#define T(...)                                                         \
	do {                                                           \
		if (trace < 0)                                         \
			trace = getenv("UWARP_EXS_SIM_TRACE") != NULL; \
		if (trace)                                             \
			fprintf(stderr, __VA_ARGS__);                  \
	} while (0)

static void fail(struct sim *s, const char *what, unsigned long long a, unsigned long long b)
{
	if (!s->failure[0])
		snprintf(s->failure, sizeof(s->failure), "%s (%llu, %llu)", what, a, b);
}

static void push(struct sim_chan *c, struct sim_msg *m)
{
	m->next = NULL;
	if (c->tail)
		c->tail->next = m;
	else
		c->head = m;
	c->tail = m;
	c->len++;
}

static struct sim_msg *pop(struct sim_chan *c)
{
	struct sim_msg *m = c->head;
	if (m) {
		c->head = m->next;
		if (!c->head)
			c->tail = NULL;
		c->len--;
	}
	return m;
}

void sim_init(struct sim *s, enum exs_sp_mode mode, uint64_t ring_size)
{
	memset(s, 0, sizeof(*s));
	exs_sp_tx_init(&s->tx, mode, ring_size);
	exs_sp_rx_init(&s->rx, mode, ring_size);
	s->ring = calloc(1, ring_size);
	s->recvs_tail = &s->recvs;
	s->paper = mode == EXS_SP_PAPER;
}

/* Lemma 3: a sender in a direct (even) phase sent directly last. */
static void check_sender_phase(struct sim *s)
{
	if (s->paper && !(s->tx.phase & 1) && s->last_kind == EXS_SP_INDIRECT)
		fail(s, "lemma 3: sender in an even phase after an indirect transfer", s->tx.phase,
		     s->last_phase);
}

/* a direct transfer: even phase; the last one's, or past an indirect one's */
static void check_direct(struct sim *s, const struct exs_sp_xfer *x)
{
	if (x->phase & 1)
		fail(s, "direct transfer in an odd phase", x->phase, 0);
	else if (s->last_kind == EXS_SP_DIRECT && x->phase != s->last_phase)
		fail(s, "direct transfer changed phase without an indirect one", x->phase,
		     s->last_phase);
	else if (s->last_kind == EXS_SP_INDIRECT && x->phase <= s->last_phase)
		fail(s, "direct transfer after an indirect one without a fresh advert", x->phase,
		     s->last_phase);
}

static void free_chan(struct sim_chan *c)
{
	struct sim_msg *m;
	while ((m = pop(c))) {
		free(m->bytes);
		free(m);
	}
}

void sim_free(struct sim *s)
{
	free_chan(&s->s2r);
	free_chan(&s->r2s);
	while (s->recvs) {
		struct sim_recv *v = s->recvs;
		s->recvs = v->next;
		free(v->buf);
		free(v);
	}
	free(s->ring);
}

void sim_send(struct sim *s, uint64_t len) { s->posted += len; }

bool sim_recv(struct sim *s, uint32_t len, bool waitall)
{
	uint32_t id;
	if (exs_sp_rx_post(&s->rx, len, waitall, &id))
		return false;
	T("R: post recv %u len %u%s\n", id, len, waitall ? " WAITALL" : "");
	struct sim_recv *v = calloc(1, sizeof(*v));
	v->id = id;
	v->len = len;
	v->buf = malloc(len);
	memset(v->buf, 0xEE, len);
	*s->recvs_tail = v;
	s->recvs_tail = &v->next;
	s->nrecvs++;
	return true;
}

bool sim_sender_step(struct sim *s)
{
	struct exs_sp_xfer x;
	uint32_t phase;
	uint64_t seq = s->tx.seq;
	if (exs_sp_tx_next(&s->tx, s->posted - seq, &x) != 1) {
		uint64_t at;
		struct sim_msg *m = calloc(1, sizeof(*m));
		if (exs_sp_tx_phase_due(&s->tx, &phase)) {
			m->type = SIM_PHASE;
			m->phase = phase;
			T("S: PHASE %u\n", phase);
		} else if (exs_sp_tx_hold_due(&s->tx, &at)) {
			m->type = SIM_HOLD;
			m->seq = at;
			T("S: HOLD %llu\n", (unsigned long long)at);
		} else {
			free(m);
			return false;
		}
		push(&s->s2r, m);
		return true;
	}
	if (x.seq != seq || x.len == 0 || x.seq + x.len > s->posted)
		fail(s, "sender sent outside its stream", x.seq, x.len);
	if (x.kind == EXS_SP_DIRECT && s->last_kind == EXS_SP_INDIRECT)
		s->back_to_direct++;
	if (s->paper && x.kind == EXS_SP_DIRECT)
		check_direct(s, &x);
	s->last_kind = x.kind;
	s->last_phase = x.phase;
	check_sender_phase(s);
	struct sim_msg *m = calloc(1, sizeof(*m));
	m->type = SIM_DATA;
	m->x = x;
	m->bytes = malloc(x.len);
	for (uint32_t i = 0; i < x.len; i++)
		m->bytes[i] = sim_byte(x.seq + i);
	T("S: %s seq %llu len %u phase %u id %u off %u ring %llu\n",
	  x.kind == EXS_SP_DIRECT ? "DIRECT" : "INDIRECT", (unsigned long long)x.seq, x.len,
	  x.phase, x.id, x.off, (unsigned long long)x.ring_off);
	push(&s->s2r, m);
	return true;
}

static bool complete_one(struct sim *s)
{
	uint32_t id, bytes;
	if (exs_sp_rx_complete(&s->rx, &id, &bytes) != 1)
		return false;
	struct sim_recv *h = s->recvs;
	if (!h || h->id != id) {
		fail(s, "completion out of order", id, h ? h->id : ~0u);
		return true;
	}
	if (bytes != h->placed)
		fail(s, "completion's byte count is not what was placed", bytes, h->placed);
	for (uint32_t i = 0; i < bytes; i++)
		if (h->buf[i] != sim_byte(s->delivered + i)) {
			fail(s, "a receive holds the wrong bytes", s->delivered + i, id);
			break;
		}
	T("R: complete %u with %u bytes (rx phase %u)\n", id, bytes, s->rx.phase);
	s->delivered += bytes;
	s->completions++;
	if (bytes < h->len)
		s->partial_completions++;
	s->recvs = h->next;
	if (!s->recvs)
		s->recvs_tail = &s->recvs;
	s->nrecvs--;
	free(h->buf);
	free(h);
	return true;
}

bool sim_deliver_to_receiver(struct sim *s)
{
	struct sim_msg *m = pop(&s->s2r);
	if (!m)
		return false;
	T("R: got %s\n", m->type == SIM_PHASE         ? "PHASE"
			 : m->type == SIM_HOLD        ? "HOLD"
			 : m->x.kind == EXS_SP_DIRECT ? "DIRECT"
						      : "INDIRECT");
	if (m->type == SIM_PHASE) {
		exs_sp_rx_phase(&s->rx, m->phase);
	} else if (m->type == SIM_HOLD) {
		/* it follows the sender's transfers: all of them are in */
		if (exs_sp_rx_hold(&s->rx, m->seq))
			fail(s, "receiver refused a HOLD", m->seq, s->rx.arrived);
	} else if (m->x.kind == EXS_SP_DIRECT) {
		/* the safety property, from the simulation's own account */
		struct sim_recv *h = s->recvs;
		if (!h || h->id != m->x.id)
			fail(s, "direct transfer not into the oldest open receive", m->x.id,
			     h ? h->id : ~0u);
		else if (m->x.off != h->placed)
			fail(s, "direct transfer not where the receive's data continues", m->x.off,
			     h->placed);
		else if (s->paper && h->from_ring)
			fail(s, "direct transfer into a receive filled from the ring", m->x.id,
			     h->from_ring);
		else if (exs_sp_rx_direct(&s->rx, m->x.phase, m->x.id, m->x.off, m->x.len))
			fail(s, "receiver refused a direct transfer", m->x.id, m->x.off);
		else {
			memcpy(h->buf + m->x.off, m->bytes, m->x.len);
			h->placed += m->x.len;
		}
	} else {
		if (exs_sp_rx_indirect(&s->rx, m->x.phase, m->x.ring_off, m->x.len))
			fail(s, "receiver refused an indirect transfer", m->x.ring_off, m->x.len);
		else
			memcpy(s->ring + m->x.ring_off, m->bytes, m->x.len);
		s->adv_phase_set = false;
	}
	free(m->bytes);
	free(m);
	/* the receiver's engine completes what is done as soon as it is */
	while (!s->failure[0] && complete_one(s))
		;
	return true;
}

bool sim_receiver_step(struct sim *s)
{
	struct exs_sp_copy cp;
	struct exs_sp_advert a;
	uint64_t drained;
	if (complete_one(s))
		return true;
	if (exs_sp_rx_drain(&s->rx, &cp) == 1) {
		struct sim_recv *h = s->recvs;
		if (!h || h->id != cp.id || cp.off != h->placed)
			fail(s, "ring copy not into the oldest open receive", cp.id, cp.off);
		else {
			T("R: copy %u bytes into %u at %u\n", cp.len, cp.id, cp.off);
			memcpy(h->buf + cp.off, s->ring + cp.ring_off, cp.len);
			h->placed += cp.len;
			h->from_ring += cp.len;
		}
		return true;
	}
	if (exs_sp_rx_ack_due(&s->rx, &drained)) {
		struct sim_msg *m = calloc(1, sizeof(*m));
		m->type = SIM_ACK;
		m->drained = drained;
		push(&s->r2s, m);
		return true;
	}
	uint64_t at;
	if (exs_sp_rx_idle_due(&s->rx, &at)) {
		struct sim_msg *m = calloc(1, sizeof(*m));
		m->type = SIM_IDLE;
		m->seq = at;
		T("R: IDLE %llu\n", (unsigned long long)at);
		push(&s->r2s, m);
		return true;
	}
	if (exs_sp_rx_advert(&s->rx, &a) == 1) {
		struct sim_msg *m = calloc(1, sizeof(*m));
		m->type = SIM_ADVERT;
		m->a = a;
		T("R: ADVERT id %u phase %u seq %llu off %u len %u%s\n", a.id, a.phase,
		  (unsigned long long)a.seq, a.off, a.len, a.waitall ? " WAITALL" : "");
		if (s->paper && (a.phase & 1))
			fail(s, "lemma 1: an advert with an odd phase", a.id, a.phase);
		if (s->paper && s->adv_phase_set && a.phase != s->adv_phase)
			fail(s, "lemma 2: adverts changed phase without an indirect arrival",
			     a.phase, s->adv_phase);
		s->adv_phase_set = true;
		s->adv_phase = a.phase;
		push(&s->r2s, m);
		return true;
	}
	return false;
}

bool sim_deliver_to_sender(struct sim *s)
{
	struct sim_msg *m = pop(&s->r2s);
	if (!m)
		return false;
	static const char *const what[] = {
		[SIM_ADVERT] = "advert", [SIM_ACK] = "ack", [SIM_IDLE] = "IDLE"
	};
	T("S: got %s (tx phase %u seq %llu)\n", what[m->type], s->tx.phase,
	  (unsigned long long)s->tx.seq);
	int rc = m->type == SIM_ADVERT ? exs_sp_tx_advert(&s->tx, &m->a)
		 : m->type == SIM_IDLE ? exs_sp_tx_idle(&s->tx, m->seq)
				       : exs_sp_tx_ack(&s->tx, m->drained);
	if (rc) {
		char why[64];
		snprintf(why, sizeof(why), "sender refused an %s", what[m->type]);
		fail(s, why, (unsigned long long)-rc, 0);
	}
	check_sender_phase(s);
	free(m);
	return true;
}

uint64_t sim_open_bytes(struct sim *s)
{
	uint64_t at = s->delivered, n = 0;
	for (struct sim_recv *v = s->recvs; v; v = v->next) {
		for (uint32_t i = 0; i < v->placed; i++)
			if (v->buf[i] != sim_byte(at + i)) {
				fail(s, "an open receive holds the wrong bytes", at + i, v->id);
				break;
			}
		at += v->placed;
		n += v->placed;
	}
	return n;
}
