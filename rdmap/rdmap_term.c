/*
 * rdmap_term.c: Terminate encode and lenient decode.
 */
#include "rdmap_term.h"

#include <errno.h>
#include <string.h>

#include "mpa/be.h"

size_t rdmap_term_encode(const struct rddp_error *e, uint16_t seglen, const uint8_t *ddp_hdr,
			 size_t ddp_hdr_len, const uint8_t *rdmap_hdr, uint8_t *out)
{
	size_t n = RDMAP_TERM_CTRL_LEN;
	uint8_t hdrct = 0;

	if (ddp_hdr && ddp_hdr_len)
		hdrct |= RDMAP_TERM_HDRCT_M | RDMAP_TERM_HDRCT_D;
	if (hdrct && rdmap_hdr)
		hdrct |= RDMAP_TERM_HDRCT_R;
	out[0] = (uint8_t)((e->layer & 0xf) << 4 | (e->etype & 0xf));
	out[1] = e->ecode;
	out[2] = hdrct;
	out[3] = 0;
	if (hdrct) {
		be16_put(out + n, seglen);
		n += RDMAP_TERM_SEGLEN_SIZE;
		memcpy(out + n, ddp_hdr, ddp_hdr_len);
		n += ddp_hdr_len;
		if (hdrct & RDMAP_TERM_HDRCT_R) {
			memcpy(out + n, rdmap_hdr, RDMAP_TERM_RDMAP_HDR_LEN);
			n += RDMAP_TERM_RDMAP_HDR_LEN;
		}
	}
	return n;
}

/* Layer/type pairs RFC 6580 defines: RDMAP and DDP have types 0..2, the
 * LLP (MPA) only type 0. */
static bool plausible(uint8_t layer, uint8_t etype)
{
	return (layer <= UW_TERM_LAYER_DDP && etype <= 2) ||
	       (layer == UW_TERM_LAYER_LLP && etype == 0);
}

int rdmap_term_decode(const uint8_t *p, size_t len, struct rdmap_term *t)
{
	memset(t, 0, sizeof(*t));
	if (len < RDMAP_TERM_CTRL_LEN)
		return -EBADMSG;
	t->rfc.layer = p[0] >> 4;
	t->rfc.etype = p[0] & 0xf;
	t->rfc.ecode = p[1];
	t->rfc.m = p[2] & RDMAP_TERM_HDRCT_M;
	t->rfc.d = p[2] & RDMAP_TERM_HDRCT_D;
	t->rfc.r = p[2] & RDMAP_TERM_HDRCT_R;
	t->siw.layer = p[0] & 0xf;
	t->siw.etype = p[0] >> 4;
	t->siw.ecode = p[1];
	t->siw.m = p[2] & RDMAP_TERM_SIW_M;
	t->siw.d = p[2] & RDMAP_TERM_SIW_D;
	t->siw.r = p[2] & RDMAP_TERM_SIW_R;

	bool rfc_flags = p[2] & (RDMAP_TERM_HDRCT_M | RDMAP_TERM_HDRCT_D | RDMAP_TERM_HDRCT_R);
	bool siw_flags = p[2] & (RDMAP_TERM_SIW_M | RDMAP_TERM_SIW_D | RDMAP_TERM_SIW_R);
	if (siw_flags != rfc_flags)
		t->siw_likely = siw_flags;
	else
		t->siw_likely = !plausible(t->rfc.layer, t->rfc.etype) &&
				plausible(t->siw.layer, t->siw.etype);

	const struct rdmap_term_reading *r = rdmap_term_reading(t);
	size_t off = RDMAP_TERM_CTRL_LEN;
	if ((r->m || r->d) && len >= off + RDMAP_TERM_SEGLEN_SIZE) {
		t->has_seglen = r->m;
		t->seglen = be16_get(p + off);
		off += RDMAP_TERM_SEGLEN_SIZE;
		if (r->d && len > off) {
			/* the attached header says itself whether it is tagged */
			size_t h = (p[off] & (DDP_CTRL_T >> 8)) ? DDP_TAGGED_HDR_LEN
								: DDP_UNTAGGED_HDR_LEN;
			if (len >= off + h) {
				memcpy(t->ddp_hdr, p + off, h);
				t->ddp_hdr_len = (uint8_t)h;
				off += h;
				if (r->r && len >= off + RDMAP_TERM_RDMAP_HDR_LEN) {
					memcpy(t->rdmap_hdr, p + off, RDMAP_TERM_RDMAP_HDR_LEN);
					t->has_rdmap_hdr = true;
				}
			}
		}
	}
	return 0;
}
