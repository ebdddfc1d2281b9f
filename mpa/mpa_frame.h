/*
 * mpa_frame.h: MPA Request, Reply and Reject frames (RFC 5044 section 7.1,
 * RFC 6581), encode and decode. Pure: bytes in, struct out, and back.
 */
#ifndef UWARP_MPA_FRAME_H
#define UWARP_MPA_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uwarp/wire.h>

enum mpa_frame_type {
	MPA_FRAME_REQUEST = 1,
	MPA_FRAME_REPLY = 2, /* a Reject is a Reply with reject set */
};

/* RTR types of RFC 6581, as one bit each (not the wire positions). */
enum mpa_rtr {
	MPA_RTR_SEND = 1 << 0,  /* B: zero-length Send */
	MPA_RTR_WRITE = 1 << 1, /* C: zero-length RDMA Write */
	MPA_RTR_READ = 1 << 2,  /* D: zero-length RDMA Read */
};
#define MPA_RTR_ALL (MPA_RTR_SEND | MPA_RTR_WRITE | MPA_RTR_READ)

struct mpa_frame {
	enum mpa_frame_type type;
	uint8_t rev;
	bool markers;  /* M: the sender of this frame wants to receive markers */
	bool crc;      /* C */
	bool reject;   /* R: meaningful in a Reply */
	bool enhanced; /* E with revision 2: the IRD/ORD block is present */
	uint8_t res;   /* reserved flag bits as received (in flag positions);
			* encode sends 0 */
	/* The RFC 6581 block; meaningful when enhanced. */
	bool p2p;     /* A */
	uint8_t rtr;  /* enum mpa_rtr bits (B/C/D) */
	uint16_t ird; /* 14 bits */
	uint16_t ord; /* 14 bits */
	/* ULP private data, after the block when enhanced. Decode points this
	 * into the caller's buffer; nothing is copied. */
	const uint8_t *pdata;
	uint16_t pdata_len;
};

/* Bytes mpa_frame_encode() will write: 20 + block + private data. */
size_t mpa_frame_len(const struct mpa_frame *f);

/*
 * Encode a frame into buf. Returns the length written, or -EINVAL for an
 * impossible frame (revision above 2, IRD/ORD above 0x3fff, RTR bits
 * outside enum mpa_rtr), -EMSGSIZE when the private data (with the block)
 * exceeds MPA_PD_MAX_RFC, -ENOBUFS when cap is too small. Reserved bits are
 * always sent as zero.
 */
ssize_t mpa_frame_encode(const struct mpa_frame *f, uint8_t *buf, size_t cap);

/*
 * Decode one frame from the start of buf (len bytes available).
 * Returns the number of bytes the frame occupies (20 + PD_Length); bytes
 * after it belong to the caller (a peer may send FPDUs right behind its
 * Reply) and are never looked at. Returns -EAGAIN when more bytes are needed,
 * or, as soon as the bytes seen prove the frame bad:
 *   -EPROTO            the key is neither "MPA ID Req Frame" nor "...Rep..."
 *   -EPROTONOSUPPORT   Rev above 2
 *   -EMSGSIZE          PD_Length above pd_max (use MPA_PD_MAX_RFC or less)
 *   -EBADMSG           an enhanced frame (Rev 2, E=1) with PD_Length below 4
 * Reserved flag bits are reported in f->res and otherwise ignored, as are E
 * in a revision 1 frame and R in a Request (reserved bits there).
 */
ssize_t mpa_frame_decode(const uint8_t *buf, size_t len, uint16_t pd_max, struct mpa_frame *f);

/*
 * True while the len bytes seen so far could still be the start of an MPA
 * Request. A server that also serves plain TCP clients uses this on the first
 * bytes of a connection (up to 16 decide it).
 */
bool mpa_frame_may_be_request(const uint8_t *buf, size_t len);

#endif
