/*
 * stream_crc.h: the check both ends of a test stream compute: CRC-32 as
 * zlib's crc32() has it (reflected polynomial 0xEDB88320), so that a peer
 * written in Python checks the same stream with zlib.crc32.
 */
#ifndef STREAM_CRC_H
#define STREAM_CRC_H

#include <stddef.h>
#include <stdint.h>

static uint32_t stream_crc_table[256];

static void stream_crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
		stream_crc_table[i] = c;
	}
}

/* the CRC of what came before (0 at the start) extended over @b */
static uint32_t stream_crc(uint32_t crc, const unsigned char *b, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++)
		crc = stream_crc_table[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
	return ~crc;
}

#endif
