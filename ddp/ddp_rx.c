/*
 * ddp_rx.c: DDP receive-side rules.
 */
#include "ddp_rx.h"

#include <errno.h>
#include <string.h>

void ddp_rx_init(struct ddp_rx *rx, unsigned nqueues)
{
	memset(rx, 0, sizeof(*rx));
	rx->nqueues = (uint8_t)(nqueues > DDP_QN_COUNT ? DDP_QN_COUNT : nqueues);
	for (int i = 0; i < DDP_QN_COUNT; i++)
		rx->q[i].msn = 1; /* RFC 5041 5.1: the first MSN is 1 */
}

static int fail(struct rddp_error *e, uint8_t etype, uint8_t ecode, const char *what)
{
	rddp_error_set(e, UW_TERM_LAYER_DDP, etype, ecode, what);
	return -EBADMSG;
}

int ddp_rx_check_version(const struct ddp_hdr *h, struct rddp_error *e)
{
	if (h->dv == DDP_VERSION)
		return 0;
	if (h->tagged)
		return fail(e, UW_DDP_TAGGED, UW_DDP_T_INVALID_VERSION, "invalid DDP version");
	return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_VERSION, "invalid DDP version");
}

int ddp_rx_check_untagged(const struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen,
			  int64_t buf_len, struct rddp_error *e)
{
	if (h->qn >= rx->nqueues)
		return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_QN, "invalid queue number");
	const struct ddp_rx_queue *q = &rx->q[h->qn];
	/* Over TCP segments arrive in order, so the only valid MSN is the
	 * one expected; anything else is outside the valid range. */
	if (h->msn != q->msn)
		return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_MSN_RANGE, "MSN out of range");
	if (h->mo != q->mo_next)
		return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_MO, "invalid MO");
	if (buf_len < 0)
		return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_NO_BUFFER, "no buffer for this MSN");
	if ((uint64_t)h->mo + seglen > (uint64_t)buf_len)
		return fail(e, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG,
			    "message too long for the available buffer");
	return 0;
}

void ddp_rx_commit_untagged(struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen)
{
	struct ddp_rx_queue *q = &rx->q[h->qn];
	if (h->last) {
		q->msn++;
		q->mo_next = 0;
		q->in_msg = false;
	} else {
		q->mo_next += seglen;
		q->in_msg = true;
	}
}

int ddp_rx_check_tagged(const struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen,
			const struct ddp_mem *mem, uint32_t rights, uint32_t pd, uint32_t qp,
			uint8_t **addr, struct rddp_error *e)
{
	static uint8_t nowhere;

	if (rx->tagged_in_msg) {
		if (h->stag != rx->tagged_stag) {
			ddp_tag_error(DDP_TAG_INVALID_STAG, e);
			e->what = "STag changed inside a tagged message";
			return DDP_TAG_INVALID_STAG;
		}
		if (h->to != rx->tagged_next_to) {
			ddp_tag_error(DDP_TAG_BOUNDS, e);
			e->what = "TO does not continue the tagged message";
			return DDP_TAG_BOUNDS;
		}
	} else if (seglen == 0 && h->last) {
		*addr = &nowhere; /* nothing is placed */
		return DDP_TAG_OK;
	}
	enum ddp_tag_check c = ddp_check_tagged(mem, h->stag, h->to, seglen, rights, pd, qp, addr);
	if (c != DDP_TAG_OK)
		ddp_tag_error(c, e);
	return (int)c;
}

void ddp_rx_commit_tagged(struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen)
{
	rx->tagged_in_msg = !h->last;
	rx->tagged_stag = h->stag;
	rx->tagged_next_to = h->to + seglen;
}
