/*
 * fpdu_stream.c: build FPDU streams with the real transmitter and parse
 * them back with the real receiver, for tests, the pcap check and the demo.
 */
#include "fpdu_stream.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "mpa/be.h"
#include "rdmap/rdmap_opcode.h"

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);
	if (!q)
		abort();
	return q;
}

static uint32_t xorshift(uint32_t *s)
{
	uint32_t x = *s;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return *s = x;
}

static void flush(struct fpdu_stream *s, struct fpdu_batch *b, size_t *cap)
{
	if (s->len + b->bytes > *cap) {
		*cap = (s->len + b->bytes) * 2;
		s->bytes = xrealloc(s->bytes, *cap);
	}
	for (int i = 0; i < b->niov; i++) {
		memcpy(s->bytes + s->len, b->iov[i].iov_base, b->iov[i].iov_len);
		s->len += b->iov[i].iov_len;
	}
	fpdu_batch_reset(b);
}

#define HBUF (MPA_ULPDU_LEN_SIZE + FPDU_RX_HDR_MAX)

void fpdu_stream_build(struct fpdu_stream *s, const uint32_t *msg_sizes, size_t nmsgs,
		       uint32_t ulpdu_max, bool crc, bool markers, uint32_t seed)
{
	struct fpdu_tx tx;
	struct fpdu_batch_max *store = malloc(sizeof(*store));
	size_t total = 0, count = 0, cap = 0;
	uint32_t msn_send = 1, msn_rreq = 1, rnd = seed ? seed : 1;

	if (!store)
		abort();
	struct fpdu_batch *b = fpdu_batch_max_init(store);
	memset(s, 0, sizeof(*s));
	for (size_t m = 0; m < nmsgs; m++) {
		uint32_t hl = (m & 1) ? DDP_UNTAGGED_HDR_LEN : DDP_TAGGED_HDR_LEN;
		uint32_t seg = ulpdu_max - hl;
		total += msg_sizes[m];
		count += msg_sizes[m] ? (msg_sizes[m] + seg - 1) / seg : 1;
		count += m % 7 == 0;
	}
	s->payload = xrealloc(NULL, total);
	s->payload_len = total;
	for (size_t i = 0; i < total; i++)
		s->payload[i] = (uint8_t)xorshift(&rnd);
	s->fpdus = xrealloc(NULL, count * sizeof(*s->fpdus));
	uint8_t(*hbuf)[HBUF] = xrealloc(NULL, count * HBUF);

	fpdu_tx_init(&tx, crc, markers);
	size_t poff = 0;
	const uint16_t rr_len = rdmap_op(RDMAP_RDMA_READ_REQ)->hdr_len;
	for (size_t m = 0; m < nmsgs; m++) {
		bool send = m & 1;
		uint32_t size = msg_sizes[m], off = 0;

		if (m % 7 == 0) {
			uint8_t *h = hbuf[s->n] + MPA_ULPDU_LEN_SIZE;
			h[0] = DDP_CTRL_L >> 8 | DDP_VERSION;
			h[1] = RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | RDMAP_RDMA_READ_REQ;
			be32_put(h + DDP_OFF_RSVDULP, 0);
			be32_put(h + DDP_OFF_QN, DDP_QN_READ_REQ);
			be32_put(h + DDP_OFF_MSN, msn_rreq++);
			be32_put(h + DDP_OFF_MO, 0);
			be32_put(h + 18, 0x2000 + (uint32_t)m); /* sink STag */
			be64_put(h + 22, 0x10000u * m);         /* sink TO */
			be32_put(h + 30, size);                 /* read size */
			be32_put(h + 34, 0x3000 + (uint32_t)m); /* source STag */
			be64_put(h + 38, 0);                    /* source TO */
			struct sent_fpdu *f = &s->fpdus[s->n];
			memcpy(f->hdr, h, rr_len);
			f->hdr_len = rr_len;
			f->payload = NULL;
			f->payload_len = 0;
			f->wire_start = (size_t)tx.bytes;
			if (fpdu_tx_append(&tx, b, hbuf[s->n], f->hdr_len, NULL, 0) == -ENOBUFS) {
				flush(s, b, &cap);
				fpdu_tx_append(&tx, b, hbuf[s->n], f->hdr_len, NULL, 0);
			}
			f->wire_end = (size_t)tx.bytes;
			s->n++;
		}
		do {
			uint32_t hl = send ? DDP_UNTAGGED_HDR_LEN : DDP_TAGGED_HDR_LEN;
			uint32_t n = size - off;
			if (n > ulpdu_max - hl)
				n = ulpdu_max - hl;
			bool last = off + n == size;
			uint8_t *h = hbuf[s->n] + MPA_ULPDU_LEN_SIZE;
			if (send) {
				h[0] = (uint8_t)((last ? DDP_CTRL_L >> 8 : 0) | DDP_VERSION);
				h[1] = RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | RDMAP_SEND;
				be32_put(h + DDP_OFF_RSVDULP, 0);
				be32_put(h + DDP_OFF_QN, DDP_QN_SEND);
				be32_put(h + DDP_OFF_MSN, msn_send);
				be32_put(h + DDP_OFF_MO, off);
			} else {
				h[0] = (uint8_t)(DDP_CTRL_T >> 8 | (last ? DDP_CTRL_L >> 8 : 0) |
						 DDP_VERSION);
				h[1] = RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | RDMAP_RDMA_WRITE;
				be32_put(h + DDP_OFF_STAG, 0x1000 + (uint32_t)m);
				be64_put(h + DDP_OFF_TO, 0x100000000ull + off);
			}
			struct sent_fpdu *f = &s->fpdus[s->n];
			memcpy(f->hdr, h, hl);
			f->hdr_len = (uint16_t)hl;
			f->payload = s->payload + poff + off;
			f->payload_len = n;
			struct iovec iov[2];
			int niov = 0;
			/* Two pieces when possible, so gathers are exercised. */
			if (n > 1) {
				iov[niov++] = (struct iovec){ (void *)f->payload, n / 3 };
				iov[niov++] =
					(struct iovec){ (void *)(f->payload + n / 3), n - n / 3 };
			} else if (n) {
				iov[niov++] = (struct iovec){ (void *)f->payload, n };
			}
			f->wire_start = (size_t)tx.bytes;
			if (fpdu_tx_append(&tx, b, hbuf[s->n], hl, iov, niov) == -ENOBUFS) {
				flush(s, b, &cap);
				fpdu_tx_append(&tx, b, hbuf[s->n], hl, iov, niov);
			}
			f->wire_end = (size_t)tx.bytes;
			s->n++;
			off += n;
		} while (off < size);
		if (send)
			msn_send++;
		poff += size;
	}
	flush(s, b, &cap);
	free(hbuf);
	free(store);
}

void fpdu_stream_free(struct fpdu_stream *s)
{
	free(s->bytes);
	free(s->fpdus);
	free(s->payload);
	memset(s, 0, sizeof(*s));
}

static struct parsed_fpdu *push_fpdu(struct parse_result *r)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 64;
		r->fpdus = xrealloc(r->fpdus, r->cap * sizeof(*r->fpdus));
	}
	struct parsed_fpdu *p = &r->fpdus[r->n++];
	memset(p, 0, sizeof(*p));
	return p;
}

void parse_with_cuts(struct parse_result *r, const struct fpdu_rx_cfg *cfg, const uint8_t *bytes,
		     size_t len, const size_t *cuts, size_t ncuts, bool direct)
{
	struct fpdu_rx *rx = malloc(sizeof(*rx));
	struct parsed_fpdu *cur = NULL;
	size_t start = 0;

	if (!rx)
		abort();
	memset(r, 0, sizeof(*r));
	fpdu_rx_init(rx, cfg);
	for (size_t c = 0; c <= ncuts && !r->error && len; c++) {
		size_t end = c < ncuts ? cuts[c] : len;
		const uint8_t *p = bytes + start;
		size_t n = end - start;
		start = end;
		while (n && !r->error) {
			size_t span = direct ? fpdu_rx_direct_span(rx) : 0;
			if (span && cur) {
				/* Stand-in for a readv() straight into the
				 * destination buffer. */
				size_t k = span < n ? span : n;
				uint8_t *dst = cur->payload + rx->payload_off;
				memcpy(dst, p, k);
				fpdu_rx_direct_done(rx, dst, k);
				cur->payload_got += (uint32_t)k;
				p += k;
				n -= k;
				continue;
			}
			struct fpdu_rx_out out;
			size_t used;
			enum fpdu_rx_event ev = fpdu_rx_step(rx, p, n, &used, &out);
			p += used;
			n -= used;
			switch (ev) {
			case FPDU_RX_HDR:
				cur = push_fpdu(r);
				memcpy(cur->hdr, rx->hdr, rx->hdr_len);
				cur->hdr_len = rx->hdr_len;
				cur->ulpdu_len = rx->ulpdu_len;
				cur->payload_len = rx->payload_len;
				cur->payload = xrealloc(NULL, rx->payload_len);
				break;
			case FPDU_RX_DATA:
				if (!cur || out.off != cur->payload_got || out.n < 1 ||
				    out.data != out.piece[0].data || out.len != out.piece[0].len)
					abort(); /* the parser broke its contract */
				for (int k = 0; k < out.n; k++) {
					if (cur->payload_got + out.piece[k].len > cur->payload_len)
						abort();
					memcpy(cur->payload + cur->payload_got, out.piece[k].data,
					       out.piece[k].len);
					cur->payload_got += out.piece[k].len;
				}
				break;
			case FPDU_RX_END:
				if (cur)
					cur->ended = true;
				cur = NULL;
				break;
			case FPDU_RX_ERROR:
				r->error = true;
				r->err = rx->err;
				break;
			case FPDU_RX_MORE:
				break;
			}
		}
	}
	free(rx);
}

void parse_result_free(struct parse_result *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->fpdus[i].payload);
	free(r->fpdus);
	memset(r, 0, sizeof(*r));
}

static bool same_fpdu(const struct parsed_fpdu *a, const struct parsed_fpdu *b)
{
	return a->hdr_len == b->hdr_len && !memcmp(a->hdr, b->hdr, a->hdr_len) &&
	       a->ulpdu_len == b->ulpdu_len && a->payload_len == b->payload_len &&
	       a->payload_got == b->payload_got && a->ended == b->ended &&
	       !memcmp(a->payload, b->payload, a->payload_got);
}

size_t parse_result_diff(const struct parse_result *a, const struct parse_result *b)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++)
		if (!same_fpdu(&a->fpdus[i], &b->fpdus[i]))
			return i + 1;
	if (a->n != b->n || a->error != b->error ||
	    (a->error && (a->err.ecode != b->err.ecode || a->err.layer != b->err.layer)))
		return n + 1;
	return 0;
}

size_t parse_result_check(const struct parse_result *r, const struct fpdu_stream *s)
{
	if (r->error)
		return r->n + 1;
	for (size_t i = 0; i < s->n; i++) {
		const struct sent_fpdu *f = &s->fpdus[i];
		if (i >= r->n)
			return i + 1;
		const struct parsed_fpdu *p = &r->fpdus[i];
		if (!p->ended || p->hdr_len != f->hdr_len || memcmp(p->hdr, f->hdr, f->hdr_len) ||
		    p->payload_len != f->payload_len || p->payload_got != f->payload_len ||
		    (f->payload_len && memcmp(p->payload, f->payload, f->payload_len)))
			return i + 1;
	}
	return r->n == s->n ? 0 : s->n + 1;
}
