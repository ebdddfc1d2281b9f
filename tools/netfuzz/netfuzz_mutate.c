/*
 * netfuzz_mutate.c: one case's bytes. A valid Send (untagged, QN 0, MSN 1)
 * or RDMA Write (tagged) is built, one class of field is changed, and the
 * FPDU is framed around the result with its CRC computed afterwards, so
 * that the change reaches DDP and RDMAP instead of dying at MPA (except
 * for the CRC class, whose point is the CRC).
 */
#include <stdio.h>
#include <string.h>

#include "mpa/be.h"
#include "mpa/crc32c.h"
#include "netfuzz.h"

static const char *const class_names[NF_CLASSES] = {
	"opcode", "qn",      "msn",      "mo",       "stag", "to",     "length",
	"bits",   "version", "truncate", "oversize", "crc",  "random", "valid",
};

const char *nf_class_name(enum nf_class c) { return class_names[c]; }

int nf_class_parse(const char *name)
{
	for (int c = 0; c < NF_CLASSES; c++)
		if (!strcmp(name, class_names[c]))
			return c;
	return -1;
}

static const char *const reaction_names[NF_REACTIONS] = {
	"terminate", "fin", "rst", "silence", "reply", "crash",
};

const char *nf_reaction_name(enum nf_reaction r) { return reaction_names[r]; }

/* splitmix64: a case's numbers from (seed, index) alone */
static uint64_t next(uint64_t *s)
{
	uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static uint32_t pick32(uint64_t *s)
{
	/* the values that break parsers most often, then anything */
	static const uint32_t edge[] = { 0,          1,          2,          3,
					 4,          5,          0x7f,       0x80,
					 0xff,       0x100,      0xffff,     0x10000,
					 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff };
	uint64_t r = next(s);
	return r & 1 ? edge[(r >> 1) % 16] : (uint32_t)(r >> 32);
}

/* header offsets in the ULPDU (RFC 5041 section 4) */
#define OFF_STAG 2
#define OFF_TO 6
#define OFF_QN 6
#define OFF_MSN 10
#define OFF_MO 14

static size_t base_message(uint8_t *u, bool tagged, const struct nf_target *t, uint64_t *s)
{
	size_t hl;
	if (tagged) {
		u[0] = 0xC1; /* T, L, DDP version 1 */
		u[1] = 0x40; /* RDMAP version 1, RDMA Write */
		be32_put(u + OFF_STAG, t->stag ? t->stag : 0x00DEAD01);
		be64_put(u + OFF_TO, t->to);
		hl = 14;
	} else {
		u[0] = 0x41; /* L, DDP version 1 */
		u[1] = 0x43; /* RDMAP version 1, Send */
		be32_put(u + 2, 0);
		be32_put(u + OFF_QN, 0);
		be32_put(u + OFF_MSN, 1);
		be32_put(u + OFF_MO, 0);
		hl = 18;
	}
	for (uint32_t i = 0; i < t->payload; i++)
		u[hl + i] = (uint8_t)next(s);
	return hl + t->payload;
}

/* one header change; which ones a class makes */
static void mutate_field(uint8_t *u, size_t ulen, enum nf_class cls, uint64_t *s)
{
	bool tagged = u[0] & 0x80;
	switch (cls) {
	case NF_OPCODE:
		u[1] = (uint8_t)((u[1] & 0xF0) | (next(s) & 0x0F));
		break;
	case NF_QN:
		if (!tagged)
			be32_put(u + OFF_QN, 1 + pick32(s) % 0xfffffffe);
		break;
	case NF_MSN:
		if (!tagged) {
			uint32_t v = pick32(s);
			be32_put(u + OFF_MSN, v == 1 ? 0 : v);
		}
		break;
	case NF_MO:
		if (!tagged)
			be32_put(u + OFF_MO, 1 + pick32(s) % 0xfffffffe);
		break;
	case NF_STAG:
		if (tagged)
			be32_put(u + OFF_STAG,
				 be32_get(u + OFF_STAG) ^ (1 + pick32(s) % 0xfffffffe));
		break;
	case NF_TO:
		if (tagged)
			be64_put(u + OFF_TO, ((uint64_t)pick32(s) << 32) | pick32(s));
		break;
	case NF_BITS:
		u[0] ^= (uint8_t)(0x40 << (next(s) % 2)) | (next(s) % 2 ? 0x80 : 0);
		break;
	case NF_VERSION:
		if (next(s) % 2)
			u[0] = (uint8_t)((u[0] & 0xFC) | (2 + next(s) % 2) % 4);
		else
			u[1] = (uint8_t)((u[1] & 0x3F) |
					 ((next(s) % 3) == 0 ? 0x00 : 0x80 | (next(s) % 2) << 6));
		break;
	default: /* reserved bits: DDP's and RDMAP's */
		u[0] |= (uint8_t)((1 + next(s) % 15) << 2);
		if (ulen > 1)
			u[1] |= (uint8_t)(1 + next(s) % 3) << 4;
		break;
	}
}

/* frame a ULPDU: length, bytes, pad, CRC (or zeros without CRC) */
static size_t frame(uint8_t *w, uint16_t ulpdu_len, const uint8_t *u, size_t ulen, bool crc)
{
	be16_put(w, ulpdu_len);
	memcpy(w + 2, u, ulen);
	size_t n = 2 + ulen;
	while (n % 4)
		w[n++] = 0;
	/* the CRC's little-endian image (RFC 5044 section 4.4, confirmed against siw) */
	uint32_t c = crc ? crc32c(w, n) : 0;
	for (int i = 0; i < 4; i++)
		w[n + i] = (uint8_t)(c >> (8 * i));
	return n + 4;
}

void nf_build(struct nf_case *c, const struct nf_target *t, bool crc)
{
	uint64_t s = c->seed ^ ((uint64_t)c->index << 32) ^ ((uint64_t)c->cls << 56);
	static uint8_t u[70000];
	bool tagged = c->cls == NF_STAG || c->cls == NF_TO                     ? true
		      : c->cls == NF_QN || c->cls == NF_MSN || c->cls == NF_MO ? false
									       : next(&s) % 2;
	size_t ulen = base_message(u, tagged, t, &s);
	c->close_after = false;
	c->note[0] = 0;
	switch (c->cls) {
	case NF_LENGTH: {
		/* a ULPDU too short for the header its first bytes announce */
		size_t k = next(&s) % (tagged ? 14 : 18);
		c->len = frame(c->bytes, (uint16_t)k, u, k, crc);
		return;
	}
	case NF_TRUNCATE: {
		size_t n = frame(c->bytes, (uint16_t)ulen, u, ulen, crc);
		c->len = 1 + next(&s) % (n - 1);
		c->close_after = true;
		return;
	}
	case NF_OVERSIZE:
		/* the largest ULPDU MPA can frame: past any MULPDU over Ethernet */
		for (size_t i = ulen; i < 65535; i++)
			u[i] = (uint8_t)i;
		ulen = 65535;
		break;
	case NF_CRC:
	case NF_VALID:
		break;
	case NF_RANDOM:
		for (int k = 1 + (int)(next(&s) % 3); k > 0; k--)
			mutate_field(u, ulen, (enum nf_class)(next(&s) % (NF_VERSION + 2)), &s);
		break;
	default:
		mutate_field(u, ulen, c->cls, &s);
		break;
	}
	c->len = frame(c->bytes, (uint16_t)ulen, u, ulen, crc);
	if (c->cls == NF_CRC) {
		if (!crc)
			snprintf(c->note, sizeof(c->note), "no CRC negotiated: a zero CRC field");
		c->bytes[c->len - 1 - next(&s) % 4] ^= (uint8_t)(1 + next(&s) % 255);
	}
}
