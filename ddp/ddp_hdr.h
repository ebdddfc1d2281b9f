/*
 * ddp_hdr.h: DDP segment headers (RFC 5041 section 4), tagged and untagged.
 *
 * The second byte and, for untagged segments, the four bytes after it are
 * "reserved for the ULP": RDMAP keeps its control byte (version and opcode)
 * and the Invalidate STag there. DDP carries them opaquely.
 */
#ifndef UWARP_DDP_HDR_H
#define UWARP_DDP_HDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uwarp/wire.h>

struct ddp_hdr {
	bool tagged;
	bool last;
	uint8_t dv;       /* DDP version, 1 */
	uint8_t rsvd;     /* DDP reserved bits as received */
	uint8_t ulp_ctrl; /* RsvdULP[0:7]: the RDMAP control byte */
	/* tagged */
	uint32_t stag;
	uint64_t to;
	/* untagged */
	uint32_t ulp_word; /* RsvdULP[8:39]: RDMAP's Invalidate STag */
	uint32_t qn;
	uint32_t msn;
	uint32_t mo;
};

static inline size_t ddp_hdr_len(bool tagged)
{
	return tagged ? DDP_TAGGED_HDR_LEN : DDP_UNTAGGED_HDR_LEN;
}

/* Decode the DDP header at the start of a ULPDU. Returns its length (14 or
 * 18), or 0 when len is too short to hold it. */
size_t ddp_hdr_decode(const uint8_t *p, size_t len, struct ddp_hdr *h);

/* Encode into p (14 or 18 bytes); reserved bits are sent as zero. Returns
 * the length written. */
size_t ddp_hdr_encode(const struct ddp_hdr *h, uint8_t *p);

#endif
