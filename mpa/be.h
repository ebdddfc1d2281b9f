/*
 * be.h: big-endian loads and stores for wire fields. Every layer reads and
 * writes headers through these, byte by byte, so alignment never matters and
 * the code is the same on any host.
 */
#ifndef UWARP_MPA_BE_H
#define UWARP_MPA_BE_H

#include <stdint.h>

static inline uint16_t be16_get(const uint8_t *p) { return (uint16_t)((uint16_t)p[0] << 8 | p[1]); }

static inline uint32_t be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t be64_get(const uint8_t *p)
{
	return (uint64_t)be32_get(p) << 32 | be32_get(p + 4);
}

static inline void be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void be64_put(uint8_t *p, uint64_t v)
{
	be32_put(p, (uint32_t)(v >> 32));
	be32_put(p + 4, (uint32_t)v);
}

static inline uint32_t le32_get(const uint8_t *p)
{
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[1] << 8 | p[0];
}

static inline void le32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

#endif
