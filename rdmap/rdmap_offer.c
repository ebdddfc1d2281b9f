/*
 * rdmap_offer.c: the RFC 7306 offer trailer in MPA private data.
 */
#include <string.h>

#include "rdmap_offer.h"

static const char magic[7] = { 'u', 'W', 'x', '7', '3', '0', '6' };

size_t rdmap_offer_strip(const uint8_t *pd, size_t len, bool *offered)
{
	*offered = false;
	if (len < RDMAP_OFFER_LEN || memcmp(pd + len - RDMAP_OFFER_LEN, magic, sizeof(magic)))
		return len;
	*offered = pd[len - 1] & 1;
	return len - RDMAP_OFFER_LEN;
}

size_t rdmap_offer_append(uint8_t *pd, size_t len)
{
	memcpy(pd + len, magic, sizeof(magic));
	pd[len + sizeof(magic)] = 1;
	return len + RDMAP_OFFER_LEN;
}
