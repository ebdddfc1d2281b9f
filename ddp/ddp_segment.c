/*
 * ddp_segment.c: segmentation and scatter/gather walking.
 */
#include "ddp_segment.h"

void ddp_segmenter_init(struct ddp_segmenter *s, const struct ddp_hdr *base, uint64_t len,
			uint32_t max_payload)
{
	s->base = *base;
	s->len = len;
	s->off = 0;
	s->max_payload = max_payload ? max_payload : 1;
	s->done = false;
}

bool ddp_segmenter_next(struct ddp_segmenter *s, struct ddp_hdr *h, uint64_t *off, uint32_t *n)
{
	if (s->done)
		return false;
	uint64_t left = s->len - s->off;
	uint32_t k = left > s->max_payload ? s->max_payload : (uint32_t)left;

	*h = s->base;
	if (h->tagged)
		h->to = s->base.to + s->off;
	else
		h->mo = (uint32_t)s->off;
	h->last = s->off + k == s->len;
	*off = s->off;
	*n = k;
	s->off += k;
	s->done = h->last;
	return true;
}

void iov_cursor_init(struct iov_cursor *c, const struct iovec *iov, int n)
{
	c->iov = iov;
	c->n = n;
	c->i = 0;
	c->off = 0;
}

int iov_cursor_take(struct iov_cursor *c, size_t len, struct iovec *out, int max, size_t *took)
{
	int k = 0;
	size_t got = 0;

	while (got < len && c->i < c->n && k < max) {
		size_t avail = c->iov[c->i].iov_len - c->off;
		size_t t = avail < len - got ? avail : len - got;
		if (t) {
			out[k].iov_base = (uint8_t *)c->iov[c->i].iov_base + c->off;
			out[k].iov_len = t;
			k++;
			got += t;
			c->off += t;
		}
		if (c->off == c->iov[c->i].iov_len) {
			c->i++;
			c->off = 0;
		}
	}
	*took = got;
	return k;
}

size_t iov_total(const struct iovec *iov, int n)
{
	size_t t = 0;
	for (int i = 0; i < n; i++)
		t += iov[i].iov_len;
	return t;
}

int iov_advance(struct iovec *iov, int n, size_t bytes)
{
	int i = 0;
	while (bytes && i < n) {
		if (iov[i].iov_len <= bytes) {
			bytes -= iov[i].iov_len;
			i++;
		} else {
			iov[i].iov_base = (uint8_t *)iov[i].iov_base + bytes;
			iov[i].iov_len -= bytes;
			bytes = 0;
		}
	}
	return i;
}
