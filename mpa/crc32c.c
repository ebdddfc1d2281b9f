/*
 * crc32c.c: engine choice and the iovec walk.
 */
#include "crc32c.h"

#include <limits.h>

#if UWARP_HAVE_ISAL
#include <isa-l/crc.h>

uint32_t crc32c_update_isal(uint32_t state, const void *buf, size_t len)
{
	/* crc32_iscsi() takes the raw register in and gives it back, with no
	 * inversion of its own, and counts in int: feed huge buffers in
	 * pieces. The cast drops const only because ISA-L's prototype lacks
	 * it; the buffer is never written. */
	unsigned char *p = (unsigned char *)(uintptr_t)buf;
	while (len > (size_t)INT_MAX) {
		state = crc32_iscsi(p, INT_MAX & ~63, state);
		p += INT_MAX & ~63;
		len -= INT_MAX & ~63;
	}
	return crc32_iscsi(p, (int)len, state);
}

uint32_t crc32c_update(uint32_t state, const void *buf, size_t len)
{
	return crc32c_update_isal(state, buf, len);
}

const char *crc32c_engine(void) { return "isa-l"; }
#else
uint32_t crc32c_update(uint32_t state, const void *buf, size_t len)
{
	return crc32c_update_sb8(state, buf, len);
}

const char *crc32c_engine(void) { return "slicing-by-8"; }
#endif

uint32_t crc32c_update_iov(uint32_t state, const struct iovec *iov, int iovcnt)
{
	for (int i = 0; i < iovcnt; i++)
		state = crc32c_update(state, iov[i].iov_base, iov[i].iov_len);
	return state;
}
