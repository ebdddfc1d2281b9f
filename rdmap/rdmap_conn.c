/*
 * rdmap_conn.c: setting up and tearing down a stream's protocol state, and
 * the request queues (ORQ: our Reads and Atomics in flight, bounded by ORD;
 * IRQ: the peer's we owe Responses, bounded by IRD).
 */
#include "rdmap_conn.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The ring's entries come with its first request (rdmap_ring_ready): a
 * connection that never reads holds none (an IRD and ORD of 128 made 14
 * KiB per connection, most of an idle one's memory). */
static void ring_init(struct rdmap_ring *r, uint32_t cap, uint32_t size)
{
	r->size = size;
	r->cap = cap ? cap : 1; /* a zero IRD/ORD still needs a valid ring */
	r->head = r->count = 0;
	r->e = NULL;
}

int rdmap_ring_ready(struct rdmap_ring *r)
{
	if (!r->e)
		r->e = calloc(r->cap, r->size);
	return r->e ? 0 : -ENOMEM;
}

int rdmap_conn_init(struct rdmap_conn *c, const struct rdmap_conn_cfg *cfg)
{
	memset(c, 0, sizeof(*c));
	c->cfg = *cfg;
	ddp_rx_init(&c->ddp, cfg->rfc7306 ? DDP_QN_COUNT : DDP_QN_TERMINATE + 1);
	for (int i = 0; i < DDP_QN_COUNT; i++)
		c->tx_msn[i] = 1;
	c->next_atomic_id = 1;
	ring_init(&c->orq, cfg->ord, sizeof(struct rdmap_orq_entry));
	ring_init(&c->irq, cfg->ird, sizeof(struct rdmap_irq_entry));
	return 0;
}

void rdmap_conn_fini(struct rdmap_conn *c)
{
	free(c->orq.e);
	free(c->irq.e);
	c->orq.e = c->irq.e = NULL;
}

void rdmap_conn_fail(struct rdmap_conn *c, const struct rddp_error *e)
{
	if (c->state != RDMAP_OPEN)
		return;
	c->err = *e;
	c->err_has_hdr = false;
	c->err_has_rdmap_hdr = false;
	c->state = RDMAP_TERMINATING;
}

void rdmap_conn_retract(struct rdmap_conn *c)
{
	if (c->state == RDMAP_TERMINATING)
		c->state = RDMAP_OPEN;
}

static void *at(const struct rdmap_ring *r, uint32_t n)
{
	return (uint8_t *)r->e + (size_t)((r->head + n) % r->cap) * r->size;
}

const struct rdmap_irq_entry *rdmap_irq_head(const struct rdmap_conn *c)
{
	return c->irq.count ? at(&c->irq, 0) : NULL;
}

void rdmap_irq_pop(struct rdmap_conn *c)
{
	if (!c->irq.count)
		return;
	c->irq.head = (c->irq.head + 1) % c->irq.cap;
	c->irq.count--;
}

const struct rdmap_orq_entry *rdmap_orq_at(const struct rdmap_conn *c, uint32_t n)
{
	return n < c->orq.count ? at(&c->orq, n) : NULL;
}
