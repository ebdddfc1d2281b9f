/*
 * ddp_rx.h: the receive side of one DDP stream (RFC 5041 sections 5, 7):
 * per-queue MSN and MO state for untagged messages, continuity of tagged
 * messages, and the checks that give the exact RFC 6580 codes.
 *
 * Each segment is checked when its header arrives (before any payload is
 * placed) and committed when the FPDU is complete (after its CRC), so state
 * advances only for segments that really arrived whole.
 */
#ifndef UWARP_DDP_RX_H
#define UWARP_DDP_RX_H

#include <stdbool.h>
#include <stdint.h>

#include "ddp_hdr.h"
#include "ddp_mem.h"
#include "mpa/rddp_error.h"

struct ddp_rx_queue {
	uint32_t msn;     /* MSN of the message in progress, or the next one */
	uint32_t mo_next; /* bytes of the message in progress received so far */
	bool in_msg;      /* a segment without L was received */
};

struct ddp_rx {
	uint8_t nqueues; /* queues this stream accepts: 3 (RFC 5040) or 5 (RFC 7306) */
	struct ddp_rx_queue q[DDP_QN_COUNT];
	bool tagged_in_msg;
	uint32_t tagged_stag;
	uint64_t tagged_next_to;
};

void ddp_rx_init(struct ddp_rx *rx, unsigned nqueues);

/* The DDP version: 1/0x04 (tagged) or 2/0x06 (untagged) otherwise. */
int ddp_rx_check_version(const struct ddp_hdr *h, struct rddp_error *e);

/*
 * An untagged segment of seglen payload bytes. buf_len is the size of the
 * untagged buffer that receives this message (the posted receive for a
 * Send), or -1 when there is none. Returns 0 or -EBADMSG with *e set:
 * invalid QN 0x01, no buffer 0x02, MSN range 0x03, MO 0x04, too long 0x05.
 */
int ddp_rx_check_untagged(const struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen,
			  int64_t buf_len, struct rddp_error *e);
void ddp_rx_commit_untagged(struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen);

/* True when h starts a new message on its queue (no segment of it yet). */
static inline bool ddp_rx_untagged_starts(const struct ddp_rx *rx, const struct ddp_hdr *h)
{
	return h->qn < DDP_QN_COUNT && !rx->q[h->qn].in_msg;
}

/*
 * A tagged segment: continuity with the tagged message in progress (same
 * STag, TO advancing), then the buffer check. rights is what the message
 * needs (DDP_REMOTE_WRITE for a Write). A zero-length single-segment
 * message is not STag-checked (RFC 5040 7.1, as siw does). Returns 0 with
 * *addr set, or the failed check (enum ddp_tag_check, nonzero) with *e
 * holding the DDP tagged error.
 */
int ddp_rx_check_tagged(const struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen,
			const struct ddp_mem *mem, uint32_t rights, uint32_t pd, uint32_t qp,
			uint8_t **addr, struct rddp_error *e);
void ddp_rx_commit_tagged(struct ddp_rx *rx, const struct ddp_hdr *h, uint32_t seglen);

#endif
