/*
 * rdmap_sim.c: in-process RDMAP endpoints.
 */
#include "rdmap_sim.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t sim_mem_add(struct sim_mem *m, void *addr, uint64_t to_base, uint64_t len, uint32_t rights,
		     uint32_t pd, uint32_t qp, bool invalidatable)
{
	if (m->n >= SIM_MAX_REGIONS)
		abort();
	struct sim_region *s = &m->e[m->n];
	m->next_key = m->next_key * 1103515245u + 12345u;
	/* index + 1 so that STag 0 never names a region */
	s->stag = (uint32_t)(m->n + 1) << 8 | ((m->next_key >> 16) & 0xff);
	s->r = (struct ddp_region){ addr, to_base, len, rights, pd, qp };
	s->valid = true;
	s->invalidatable = invalidatable;
	m->n++;
	return s->stag;
}

static struct sim_region *find(struct sim_mem *m, uint32_t stag)
{
	uint32_t idx = stag >> 8;
	if (idx == 0 || idx > (uint32_t)m->n)
		return NULL;
	struct sim_region *s = &m->e[idx - 1];
	return s->valid && s->stag == stag ? s : NULL;
}

int sim_mem_lookup(void *ctx, uint32_t stag, struct ddp_region *out)
{
	struct sim_region *s = find(ctx, stag);
	if (!s)
		return -ENOENT;
	*out = s->r;
	return 0;
}

int sim_mem_invalidate(void *ctx, uint32_t stag, uint32_t pd, uint32_t qp)
{
	struct sim_region *s = find(ctx, stag);
	if (!s || !s->invalidatable || s->r.pd != pd || (s->r.qp && s->r.qp != qp))
		return -EACCES;
	s->valid = false;
	return 0;
}

uint64_t sim_rq_post(struct sim_rq *q, const struct iovec *sge, int nsge)
{
	if (q->count >= SIM_MAX_RECV || nsge > SIM_MAX_SGE)
		abort();
	uint32_t i = (q->head + q->count) % SIM_MAX_RECV;
	memcpy(q->sge[i], sge, (size_t)nsge * sizeof(*sge));
	q->r[i] = (struct rdmap_recv){ q->sge[i], nsge, 0, ++q->next_cookie };
	for (int k = 0; k < nsge; k++)
		q->r[i].len += sge[k].iov_len;
	q->count++;
	return q->next_cookie;
}

const struct rdmap_recv *sim_rq_claim(void *ctx)
{
	struct sim_rq *q = ctx;
	if (!q->count)
		return NULL;
	const struct rdmap_recv *r = &q->r[q->head];
	q->head = (q->head + 1) % SIM_MAX_RECV;
	q->count--;
	return r;
}

void sim_wire_free(struct sim_wire *w)
{
	free(w->b);
	memset(w, 0, sizeof(*w));
}

static void wire_put(struct sim_wire *w, const void *p, size_t n)
{
	if (w->len + n > w->cap) {
		w->cap = (w->len + n) * 2 + 4096;
		w->b = realloc(w->b, w->cap);
		if (!w->b)
			abort();
	}
	memcpy(w->b + w->len, p, n);
	w->len += n;
}

int sim_end_init(struct sim_end *e, const struct sim_cfg *cfg)
{
	memset(e, 0, sizeof(*e));
	e->mem.next_key = 0x5eed;
	struct rdmap_conn_cfg cc = {
		.pd = cfg->pd,
		.qp = cfg->qp,
		.ird = cfg->ird,
		.ord = cfg->ord,
		.rfc7306 = cfg->rfc7306,
		.mulpdu = cfg->mulpdu,
		.mem = { sim_mem_lookup, sim_mem_invalidate, &e->mem },
		.recv_claim = sim_rq_claim,
		.recv_ctx = &e->rq,
	};
	struct fpdu_rx_cfg rc = { .crc = cfg->crc,
				  .markers = cfg->markers_rx,
				  .hdr_len = rdmap_hdr_len,
				  .arg = &e->conn };
	fpdu_rx_init(&e->rx, &rc);
	fpdu_tx_init(&e->tx, cfg->crc, cfg->markers_tx);
	return rdmap_conn_init(&e->conn, &cc);
}

void sim_end_fini(struct sim_end *e) { rdmap_conn_fini(&e->conn); }

static int fail(struct sim_end *e, const struct rddp_error *err)
{
	if (!e->failed && err)
		e->err = *err;
	e->failed = true;
	return -EBADMSG;
}

int sim_end_feed(struct sim_end *e, const uint8_t *b, size_t n)
{
	if (e->failed)
		return -EBADMSG;
	while (n) {
		struct fpdu_rx_out out;
		size_t used;
		enum fpdu_rx_event ev = fpdu_rx_step(&e->rx, b, n, &used, &out);
		b += used;
		n -= used;
		switch (ev) {
		case FPDU_RX_MORE:
			break;
		case FPDU_RX_HDR:
			e->pl_off = 0;
			if (rdmap_rx_begin(&e->conn, e->rx.hdr, e->rx.hdr_len, e->rx.payload_len,
					   &e->pl))
				return fail(e, &e->conn.err);
			break;
		case FPDU_RX_DATA:
			rdmap_place_copy(&e->pl, out.off, out.data, out.len);
			break;
		case FPDU_RX_END: {
			struct rdmap_event rev;
			int rc = rdmap_rx_end(&e->conn, &rev);
			if (rc < 0)
				return fail(e, &e->conn.err);
			if (rc > 0 && e->nev < SIM_MAX_EVENTS)
				e->ev[e->nev++] = rev;
			if (e->conn.state == RDMAP_PEER_TERMINATED)
				return fail(e, NULL);
			break;
		}
		case FPDU_RX_ERROR:
			rdmap_conn_fail(&e->conn, &e->rx.err);
			return fail(e, &e->rx.err);
		}
	}
	return 0;
}

static void put_fpdu(struct sim_end *e, uint8_t *hdr, size_t hdr_len, const struct iovec *iov,
		     int niov, struct sim_wire *w)
{
	static struct fpdu_batch_max store;
	struct fpdu_batch *b = fpdu_batch_max_init(&store);
	if (fpdu_tx_append(&e->tx, b, hdr, hdr_len, iov, niov))
		abort();
	for (int i = 0; i < b->niov; i++)
		wire_put(w, b->iov[i].iov_base, b->iov[i].iov_len);
}

static void put_message(struct sim_end *e, struct rdmap_tx_msg *t, struct sim_wire *w)
{
	uint8_t hdr[MPA_ULPDU_LEN_SIZE + RDMAP_MAX_HDR];
	struct iovec iov[RDMAP_PLACE_MAX_IOV];
	size_t hl;
	int niov, rc;

	while ((rc = rdmap_tx_next(t, hdr, &hl, iov, RDMAP_PLACE_MAX_IOV, &niov)) == 1)
		put_fpdu(e, hdr, hl, iov, niov, w);
	if (rc < 0)
		abort();
}

int sim_end_send(struct sim_end *e, const struct rdmap_msg *m, struct sim_wire *w)
{
	struct rdmap_tx_msg t;
	int rc = rdmap_tx_start(&e->conn, m, &t);
	if (rc)
		return rc;
	put_message(e, &t, w);
	return 0;
}

int sim_end_respond(struct sim_end *e, struct sim_wire *w)
{
	int n = 0;
	struct rdmap_tx_msg t;
	while (rdmap_irq_head(&e->conn)) {
		if (rdmap_tx_response(&e->conn, &t))
			abort();
		put_message(e, &t, w);
		rdmap_irq_pop(&e->conn);
		n++;
	}
	return n;
}

void sim_end_raw(struct sim_end *e, const uint8_t *hdr, size_t hdr_len, const void *payload,
		 size_t len, struct sim_wire *w)
{
	uint8_t h[MPA_ULPDU_LEN_SIZE + FPDU_RX_HDR_MAX];
	struct iovec iov = { (void *)(uintptr_t)payload, len };
	memcpy(h + MPA_ULPDU_LEN_SIZE, hdr, hdr_len);
	put_fpdu(e, h, hdr_len, &iov, len ? 1 : 0, w);
}

void sim_end_terminate(struct sim_end *e, struct sim_wire *w)
{
	uint8_t t[MPA_ULPDU_LEN_SIZE + RDMAP_TERM_MAX_ULPDU];
	size_t n = rdmap_tx_terminate(&e->conn, t);
	put_fpdu(e, t, n, NULL, 0, w);
}
