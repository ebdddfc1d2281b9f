/*
 * exs_wire.c: ES-API wire messages (exs_wire.h has the layout).
 */
#include <errno.h>
#include <string.h>

#include "exs_wire.h"

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}
static void put32(uint8_t *p, uint32_t v)
{
	put16(p, (uint16_t)(v >> 16));
	put16(p + 2, (uint16_t)v);
}
static void put64(uint8_t *p, uint64_t v)
{
	put32(p, (uint32_t)(v >> 32));
	put32(p + 4, (uint32_t)v);
}
static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }
static uint64_t get64(const uint8_t *p) { return (uint64_t)get32(p) << 32 | get32(p + 4); }

void exs_hello_encode(const struct exs_hello *h, uint8_t out[EXS_HELLO_LEN])
{
	memset(out, 0, EXS_HELLO_LEN);
	put32(out, EXS_HELLO_MAGIC);
	out[4] = h->version;
	out[5] = h->type;
	out[6] = h->mode;
	out[7] = h->slot_log2;
	put32(out + 8, h->credits);
	put32(out + 12, h->ring_stag);
	put64(out + 16, h->ring_addr);
	put64(out + 24, h->ring_size);
	put32(out + 32, h->features);
}

int exs_hello_decode(const void *buf, uint32_t len, struct exs_hello *h)
{
	const uint8_t *p = buf;
	if (!buf || len < EXS_HELLO_MIN_LEN || get32(p) != EXS_HELLO_MAGIC || p[4] != 1)
		return -EPROTO;
	*h = (struct exs_hello){ .version = p[4],
				 .type = p[5],
				 .mode = p[6],
				 .slot_log2 = p[7],
				 .credits = get32(p + 8),
				 .ring_stag = get32(p + 12),
				 .ring_addr = get64(p + 16),
				 .ring_size = get64(p + 24),
				 .features = len >= EXS_HELLO_LEN ? get32(p + 32) : 0 };
	if ((h->type != EXS_WIRE_STREAM && h->type != EXS_WIRE_SEQPACKET) || h->mode > 3 ||
	    (p[7] && (p[7] < 9 || p[7] > 20)) || !h->credits)
		return -EPROTO;
	/* a stream peer must have a ring we can write into */
	if (h->type == EXS_WIRE_STREAM && (h->ring_size < 4096 || h->ring_size > (1u << 28)))
		return -EPROTO;
	return 0;
}

void exs_ctl_encode(const struct exs_ctl *m, uint8_t out[EXS_CTL_LEN])
{
	out[0] = m->type;
	out[1] = m->flags;
	put16(out + 2, m->credits);
	put32(out + 4, m->phase);
	put32(out + 8, m->id);
	put32(out + 12, m->len);
	put64(out + 16, m->seq);
	put64(out + 24, m->addr);
	put32(out + 32, m->stag);
	put32(out + 36, m->off);
}

/* the flags each type may carry */
static const uint8_t ctl_flags[EXS_CTL_MAX_] = {
	[EXS_CTL_ADVERT] = EXS_CTL_F_WAITALL | EXS_CTL_F_CHAIN,
	[EXS_CTL_DATA] = EXS_CTL_F_TRUNC | EXS_CTL_F_KIND,
};

int exs_ctl_decode(const void *buf, uint32_t len, struct exs_ctl *m)
{
	const uint8_t *p = buf;
	if (!buf || len != EXS_CTL_LEN)
		return -EPROTO;
	*m = (struct exs_ctl){ .type = p[0],
			       .flags = p[1],
			       .credits = get16(p + 2),
			       .phase = get32(p + 4),
			       .id = get32(p + 8),
			       .len = get32(p + 12),
			       .seq = get64(p + 16),
			       .addr = get64(p + 24),
			       .stag = get32(p + 32),
			       .off = get32(p + 36) };
	if (!m->type || m->type >= EXS_CTL_MAX_ || (m->flags & ~ctl_flags[m->type]))
		return -EPROTO;
	switch (m->type) {
	case EXS_CTL_ADVERT:
		if (!m->len || (uint64_t)m->off + m->len > (1ull << 31))
			return -EPROTO;
		break;
	case EXS_CTL_DATA: {
		unsigned kind = (m->flags & EXS_CTL_F_KIND) >> 2;
		if (!kind || m->len > EXS_XFER_MAX || (kind != EXS_XFER_MESSAGE && !m->len) ||
		    ((m->flags & EXS_CTL_F_TRUNC) && kind != EXS_XFER_MESSAGE))
			return -EPROTO;
		break;
	}
	default:
		break;
	}
	return 0;
}

uint64_t exs_imm_pack(const struct exs_note *n)
{
	uint32_t low = n->kind == EXS_XFER_MESSAGE ? (n->trunc ? 1u : 0u) : (n->phase & 0xffff);
	return (uint64_t)n->kind << 62 | (uint64_t)(n->len & EXS_XFER_MAX) << 32 |
	       (uint64_t)low << 16 | (n->id & 0xffff);
}

int exs_imm_unpack(uint64_t imm, struct exs_note *n)
{
	*n = (struct exs_note){ .kind = (enum exs_xfer_kind)(imm >> 62),
				.len = (uint32_t)(imm >> 32) & EXS_XFER_MAX,
				.phase = (uint32_t)(imm >> 16) & 0xffff,
				.id = (uint32_t)imm & 0xffff };
	if (!n->kind)
		return -EPROTO;
	if (n->kind == EXS_XFER_MESSAGE) {
		if (n->phase > 1)
			return -EPROTO;
		n->trunc = n->phase;
		n->phase = 0;
	} else if (!n->len) {
		return -EPROTO;
	}
	return 0;
}

uint32_t exs_phase_widen(uint32_t now, uint32_t low16)
{
	/* phases only move forward, by little at a time: the candidate in
	 * the window [now - 2^15, now + 2^15) */
	uint32_t c = (now & ~0xffffu) | low16;
	if ((int32_t)(c - now) >= 0x8000)
		c -= 0x10000;
	else if ((int32_t)(c - now) < -0x8000)
		c += 0x10000;
	return c;
}
