/*
 * ddp_hdr.c: DDP header codec.
 */
#include "ddp_hdr.h"

#include <string.h>

#include "mpa/be.h"

size_t ddp_hdr_decode(const uint8_t *p, size_t len, struct ddp_hdr *h)
{
	if (len < 1)
		return 0;
	bool tagged = p[0] & (DDP_CTRL_T >> 8);
	size_t n = ddp_hdr_len(tagged);
	if (len < n)
		return 0;
	memset(h, 0, sizeof(*h));
	h->tagged = tagged;
	h->last = p[0] & (DDP_CTRL_L >> 8);
	h->rsvd = (uint8_t)((p[0] & (DDP_CTRL_RSVD >> 8)) >> 2);
	h->dv = p[0] & (DDP_CTRL_DV_MASK >> 8);
	h->ulp_ctrl = p[1];
	if (tagged) {
		h->stag = be32_get(p + DDP_OFF_STAG);
		h->to = be64_get(p + DDP_OFF_TO);
	} else {
		h->ulp_word = be32_get(p + DDP_OFF_RSVDULP);
		h->qn = be32_get(p + DDP_OFF_QN);
		h->msn = be32_get(p + DDP_OFF_MSN);
		h->mo = be32_get(p + DDP_OFF_MO);
	}
	return n;
}

size_t ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *p)
{
	p[0] = (uint8_t)((h->tagged ? DDP_CTRL_T >> 8 : 0) | (h->last ? DDP_CTRL_L >> 8 : 0) |
			 (h->dv & (DDP_CTRL_DV_MASK >> 8)));
	p[1] = h->ulp_ctrl;
	if (h->tagged) {
		be32_put(p + DDP_OFF_STAG, h->stag);
		be64_put(p + DDP_OFF_TO, h->to);
		return DDP_TAGGED_HDR_LEN;
	}
	be32_put(p + DDP_OFF_RSVDULP, h->ulp_word);
	be32_put(p + DDP_OFF_QN, h->qn);
	be32_put(p + DDP_OFF_MSN, h->msn);
	be32_put(p + DDP_OFF_MO, h->mo);
	return DDP_UNTAGGED_HDR_LEN;
}
