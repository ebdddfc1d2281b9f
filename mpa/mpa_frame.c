/*
 * mpa_frame.c: MPA connection setup frames.
 */
#include "mpa_frame.h"

#include <errno.h>
#include <string.h>

#include "be.h"

static const char *frame_key(enum mpa_frame_type t)
{
	return t == MPA_FRAME_REQUEST ? MPA_KEY_REQ : MPA_KEY_REP;
}

static size_t frame_pd_len(const struct mpa_frame *f)
{
	bool block = f->enhanced && f->rev == MPA_REV_2;
	return (block ? MPA_V2_BLOCK_LEN : 0) + f->pdata_len;
}

size_t mpa_frame_len(const struct mpa_frame *f) { return MPA_FRAME_HDR_LEN + frame_pd_len(f); }

ssize_t mpa_frame_encode(const struct mpa_frame *f, uint8_t *buf, size_t cap)
{
	bool block = f->enhanced && f->rev == MPA_REV_2;
	size_t pd = frame_pd_len(f);
	uint8_t flags = 0;

	if (f->type != MPA_FRAME_REQUEST && f->type != MPA_FRAME_REPLY)
		return -EINVAL;
	/* Revision 0 is pre-RFC but still spoken by old peers (siw accepts
	 * it), so a Reply may have to echo it. */
	if (f->rev > MPA_REV_2)
		return -EINVAL;
	if (block && (f->ird > MPA_V2_IRD_ORD_MASK || f->ord > MPA_V2_IRD_ORD_MASK ||
		      (f->rtr & ~MPA_RTR_ALL)))
		return -EINVAL;
	if (f->pdata_len && !f->pdata)
		return -EINVAL;
	if (pd > MPA_PD_MAX_RFC)
		return -EMSGSIZE;
	if (cap < MPA_FRAME_HDR_LEN + pd)
		return -ENOBUFS;

	memcpy(buf, frame_key(f->type), MPA_KEY_LEN);
	if (f->markers)
		flags |= MPA_FLAG_M;
	if (f->crc)
		flags |= MPA_FLAG_C;
	if (f->reject && f->type == MPA_FRAME_REPLY)
		flags |= MPA_FLAG_R;
	if (block)
		flags |= MPA_FLAG_E;
	buf[MPA_OFF_FLAGS] = flags;
	buf[MPA_OFF_REV] = f->rev;
	be16_put(buf + MPA_OFF_PDLEN, (uint16_t)pd);

	uint8_t *p = buf + MPA_FRAME_HDR_LEN;
	if (block) {
		uint16_t ird = f->ird, ord = f->ord;
		if (f->p2p)
			ird |= MPA_V2_A_P2P;
		if (f->rtr & MPA_RTR_SEND)
			ird |= MPA_V2_B_SEND_RTR;
		if (f->rtr & MPA_RTR_WRITE)
			ord |= MPA_V2_C_WRITE_RTR;
		if (f->rtr & MPA_RTR_READ)
			ord |= MPA_V2_D_READ_RTR;
		be16_put(p, ird);
		be16_put(p + 2, ord);
		p += MPA_V2_BLOCK_LEN;
	}
	if (f->pdata_len)
		memcpy(p, f->pdata, f->pdata_len);
	return (ssize_t)(MPA_FRAME_HDR_LEN + pd);
}

bool mpa_frame_may_be_request(const uint8_t *buf, size_t len)
{
	return memcmp(buf, MPA_KEY_REQ, len < MPA_KEY_LEN ? len : MPA_KEY_LEN) == 0;
}

ssize_t mpa_frame_decode(const uint8_t *buf, size_t len, uint16_t pd_max, struct mpa_frame *f)
{
	size_t k = len < MPA_KEY_LEN ? len : MPA_KEY_LEN;
	enum mpa_frame_type type;

	/* Judge the key on the bytes we have, so garbage is refused at once
	 * instead of waiting for 20 bytes that may never come. */
	if (memcmp(buf, MPA_KEY_REQ, k) == 0)
		type = MPA_FRAME_REQUEST;
	else if (memcmp(buf, MPA_KEY_REP, k) == 0)
		type = MPA_FRAME_REPLY;
	else
		return -EPROTO;
	if (len > MPA_OFF_REV && buf[MPA_OFF_REV] > MPA_REV_2)
		return -EPROTONOSUPPORT;
	if (len < MPA_FRAME_HDR_LEN)
		return -EAGAIN;

	uint8_t flags = buf[MPA_OFF_FLAGS];
	uint8_t rev = buf[MPA_OFF_REV];
	uint16_t pd = be16_get(buf + MPA_OFF_PDLEN);
	size_t total = MPA_FRAME_HDR_LEN + (size_t)pd;
	bool enhanced = rev == MPA_REV_2 && (flags & MPA_FLAG_E);

	if (pd > pd_max)
		return -EMSGSIZE;
	if (enhanced && pd < MPA_V2_BLOCK_LEN)
		return -EBADMSG;
	if (len < total)
		return -EAGAIN;

	memset(f, 0, sizeof(*f));
	f->type = type;
	f->rev = rev;
	f->markers = flags & MPA_FLAG_M;
	f->crc = flags & MPA_FLAG_C;
	/* R only means something in a Reply; in a Request it is reported
	 * with the reserved bits, like E in revision 1. */
	f->reject = type == MPA_FRAME_REPLY && (flags & MPA_FLAG_R);
	f->enhanced = enhanced;
	f->res = flags & (MPA_FLAG_RES | (rev == MPA_REV_2 ? 0 : MPA_FLAG_E) |
			  (type == MPA_FRAME_REPLY ? 0 : MPA_FLAG_R));

	const uint8_t *p = buf + MPA_FRAME_HDR_LEN;
	if (enhanced) {
		uint16_t ird = be16_get(p), ord = be16_get(p + 2);
		f->p2p = ird & MPA_V2_A_P2P;
		f->rtr = (ird & MPA_V2_B_SEND_RTR ? MPA_RTR_SEND : 0) |
			 (ord & MPA_V2_C_WRITE_RTR ? MPA_RTR_WRITE : 0) |
			 (ord & MPA_V2_D_READ_RTR ? MPA_RTR_READ : 0);
		f->ird = ird & MPA_V2_IRD_ORD_MASK;
		f->ord = ord & MPA_V2_IRD_ORD_MASK;
		p += MPA_V2_BLOCK_LEN;
		pd -= MPA_V2_BLOCK_LEN;
	}
	f->pdata = pd ? p : NULL;
	f->pdata_len = pd;
	return (ssize_t)total;
}
