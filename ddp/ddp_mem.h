/*
 * ddp_mem.h: what DDP needs to know about registered memory, and the
 * tagged-buffer check every tagged placement goes through.
 *
 * The protocol core never owns memory: the verbs layer answers lookups
 * through this interface (STag to region, its protection domain, the QP a
 * memory window is bound to, its rights), so the core stays pure and a test
 * can hand it any table it likes.
 */
#ifndef UWARP_DDP_MEM_H
#define UWARP_DDP_MEM_H

#include <stdbool.h>
#include <stdint.h>

#include "mpa/rddp_error.h"

/* Rights of a region (the verbs access flags that matter on the wire). */
enum ddp_rights {
	DDP_LOCAL_WRITE = 1 << 0,
	DDP_REMOTE_WRITE = 1 << 1,
	DDP_REMOTE_READ = 1 << 2,
	DDP_REMOTE_ATOMIC = 1 << 3,
};

struct ddp_region {
	uint8_t *addr;    /* where tagged offset to_base lives in memory */
	uint64_t to_base; /* first valid tagged offset */
	uint64_t len;     /* bytes from to_base */
	uint32_t rights;  /* enum ddp_rights */
	uint32_t pd;      /* protection domain */
	uint32_t qp;      /* QP a memory window is bound to, 0 for any in the PD */
};

struct ddp_mem {
	/* Resolve a full STag (index and key) to a valid region. Returns 0,
	 * or nonzero for an unknown, stale or invalidated STag. */
	int (*lookup)(void *ctx, uint32_t stag, struct ddp_region *out);
	/* Invalidate a local STag for a Send with Invalidate from the stream
	 * (pd, qp). Returns 0, or nonzero when it may not be invalidated. */
	int (*invalidate)(void *ctx, uint32_t stag, uint32_t pd, uint32_t qp);
	void *ctx;
};

enum ddp_tag_check {
	DDP_TAG_OK = 0,
	DDP_TAG_INVALID_STAG, /* unknown, stale, or not this stream's */
	DDP_TAG_BOUNDS,
	DDP_TAG_TO_WRAP,
	DDP_TAG_ACCESS,
};

/*
 * May len bytes at tagged offset to of stag be accessed with rights by the
 * stream (pd, qp)? On DDP_TAG_OK *addr is where offset to lives. Checked in
 * the order RFC 5041 lists the errors: STag (an STag of another PD or QP is
 * as invalid as one that names nothing, so that none of the answers tells
 * a peer another stream's STag exists), TO wrap, bounds, then rights (an
 * RDMAP matter, reported last so DDP errors win).
 */
enum ddp_tag_check ddp_check_tagged(const struct ddp_mem *mem, uint32_t stag, uint64_t to,
				    uint64_t len, uint32_t rights, uint32_t pd, uint32_t qp,
				    uint8_t **addr);

/* The DDP tagged-buffer error for a failed check (RFC 5041 7.2). */
void ddp_tag_error(enum ddp_tag_check c, struct rddp_error *e);

#endif
