/*
 * crc32c.h: CRC32c (Castagnoli, reflected, RFC 3720 / RFC 5044) for MPA.
 *
 * The running state is the raw register: start from CRC32C_INIT, feed any
 * number of pieces through crc32c_update() (so a CRC can follow an FPDU as it
 * is gathered from iovecs or placed into user memory), then crc32c_final().
 * Two engines compute the same function: ISA-L's crc32_iscsi (when the build
 * found libisal) and a portable slicing-by-8 table engine. crc32c_update()
 * uses the fastest one built in; both are callable so tests can compare them.
 */
#ifndef UWARP_MPA_CRC32C_H
#define UWARP_MPA_CRC32C_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define CRC32C_INIT 0xffffffffu
/* The finalised CRC of any message followed by its own little-endian CRC. */
#define CRC32C_RESIDUE 0x48674bc7u

uint32_t crc32c_update(uint32_t state, const void *buf, size_t len);
uint32_t crc32c_update_iov(uint32_t state, const struct iovec *iov, int iovcnt);

static inline uint32_t crc32c_final(uint32_t state) { return ~state; }

/* One-shot CRC of a buffer, finalised. */
static inline uint32_t crc32c(const void *buf, size_t len)
{
	return crc32c_final(crc32c_update(CRC32C_INIT, buf, len));
}

/* Engines, for tests and benchmarks. */
uint32_t crc32c_update_sb8(uint32_t state, const void *buf, size_t len);
#if UWARP_HAVE_ISAL
uint32_t crc32c_update_isal(uint32_t state, const void *buf, size_t len);
#endif
/* "isa-l" or "slicing-by-8": the engine crc32c_update() uses. */
const char *crc32c_engine(void);

#endif
