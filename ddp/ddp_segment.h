/*
 * ddp_segment.h: cutting one message into DDP segments (RFC 5041 5.2):
 * every segment of an untagged message carries the same MSN and its MO,
 * tagged segments advance the TO, and L marks the last. A zero-length
 * message is one segment.
 */
#ifndef UWARP_DDP_SEGMENT_H
#define UWARP_DDP_SEGMENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp_hdr.h"

struct ddp_segmenter {
	struct ddp_hdr base; /* first segment's header: TO or MSN/QN set, MO 0 */
	uint64_t len;        /* message length */
	uint64_t off;        /* bytes already cut */
	uint32_t max_payload;
	bool done;
};

/* max_payload: MULPDU minus the ULPDU header (DDP and RDMAP); at least 1. */
void ddp_segmenter_init(struct ddp_segmenter *s, const struct ddp_hdr *base, uint64_t len,
			uint32_t max_payload);
/* The next segment's header and its slice [*off, *off + *n) of the message.
 * Returns false when the message is fully cut. */
bool ddp_segmenter_next(struct ddp_segmenter *s, struct ddp_hdr *h, uint64_t *off, uint32_t *n);

/* Walking a scatter/gather list in pieces. */
struct iov_cursor {
	const struct iovec *iov;
	int n;
	int i;
	size_t off; /* into iov[i] */
};

void iov_cursor_init(struct iov_cursor *c, const struct iovec *iov, int n);
/* Up to len bytes as at most max iovecs in out; returns the count and sets
 * *took to the bytes covered (less than len only when max or the list ran
 * out). */
int iov_cursor_take(struct iov_cursor *c, size_t len, struct iovec *out, int max, size_t *took);
/* @bytes of a list have been written (a short writev): the first @n
 * iovecs that are wholly done are passed over and the one cut in the
 * middle is shortened in place. Returns how many were passed over. */
int iov_advance(struct iovec *iov, int n, size_t bytes);
/* Total bytes of an iovec list. */
size_t iov_total(const struct iovec *iov, int n);

#endif
