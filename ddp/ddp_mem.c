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

	if (!mem || !mem->lookup || mem->lookup(mem->ctx, stag, &r))
		return DDP_TAG_INVALID_STAG;
	if (r.pd != pd || (r.qp && r.qp != qp))
		return DDP_TAG_NOT_ASSOCIATED;
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
	case DDP_TAG_NOT_ASSOCIATED:
		rddp_error_set(e, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_STAG_NOT_ASSOCIATED,
			       "STag not associated with this stream");
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
