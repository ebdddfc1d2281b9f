/*
 * ddp_mem.c: the tagged buffer check.
 */
#include "ddp_mem.h"

#include <uwarp/wire.h>

enum ddp_tag_check ddp_check_tagged(const struct ddp_mem *mem, uint32_t stag, uint64_t to,
				    uint64_t len, uint32_t rights, uint32_t pd, uint32_t qp,
				    uint8_t **addr)
{
	struct ddp_region r;

	/* An STag this stream may not use (another PD's, a window bound to
	 * another QP) is reported exactly as one that names nothing: a
	 * distinct "not associated" answer would tell a peer walking STags
	 * that it had found another connection's memory (RFC 5042 section
	 * 5; docs/wire-notes.md, "STags and isolation"). */
	if (!mem || !mem->lookup || mem->lookup(mem->ctx, stag, &r) || r.pd != pd ||
	    (r.qp && r.qp != qp))
		return DDP_TAG_INVALID_STAG;
	/* So is, to a peer's request, a region with no remote rights at all
	 * (local keys are never given to a peer): a rights answer would tell
	 * a walker that an STag of its own PD is live. Rights are reported
	 * only for STags that grant the peer something. (A Read Response
	 * lands with local rights in the sink its own Read named.) */
	const uint32_t remote = DDP_REMOTE_WRITE | DDP_REMOTE_READ | DDP_REMOTE_ATOMIC;
	if ((rights & remote) && !(r.rights & remote))
		return DDP_TAG_INVALID_STAG;
	if (len && to + len - 1 < to)
		return DDP_TAG_TO_WRAP;
	if (to < r.to_base || to - r.to_base > r.len || len > r.len - (to - r.to_base))
		return DDP_TAG_BOUNDS;
	if ((r.rights & rights) != rights)
		return DDP_TAG_ACCESS;
	*addr = r.addr + (to - r.to_base);
	return DDP_TAG_OK;
}

void ddp_tag_error(enum ddp_tag_check c, struct rddp_error *e)
{
	switch (c) {
	case DDP_TAG_OK:
		break;
	case DDP_TAG_INVALID_STAG:
	case DDP_TAG_ACCESS:
		/* RFC 5041 has no code for rights; like siw we report an STag
		 * that cannot be used for this as invalid. */
		rddp_error_set(e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG,
			       "invalid STag");
		return;
	case DDP_TAG_BOUNDS:
		rddp_error_set(e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS,
			       "base or bounds violation");
		return;
	case DDP_TAG_TO_WRAP:
		rddp_error_set(e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_TO_WRAP, "TO wrap");
		return;
	}
}
