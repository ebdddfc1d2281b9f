/*
 * perf_pt_msg.c: what perftest's exchanges carry, byte for byte.
 *
 *   prologue  16-byte version string ("6.06", NUL-padded); the page size
 *             and the cache line size, 4-byte big-endian each (both sides
 *             keep the larger); the MTU as 2 bytes of text ("5" and a NUL:
 *             an ibv_mtu enum value, of which each side keeps the smaller)
 *   handshake struct pingpong_dest, 56 bytes, every field big-endian
 *   report    five 8-byte big-endian values: size, iterations, and the
 *             peak bandwidth, average bandwidth and message rate as the
 *             bit patterns of doubles
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf_pt.h"

/* IBV_MTU_4096: we have no MTU of our own, so the peer keeps its own */
#define PT_MTU_TEXT "5"
#define PT_MIN_PEER_VERSION 5.70

static int xchg_u32(struct pt_comm *c, uint32_t *v)
{
	uint32_t mine = htobe32(*v), theirs = 0;
	int rc = pt_xchg(c, &mine, &theirs, sizeof(mine));
	uint32_t t = be32toh(theirs);
	if (!rc && t > *v)
		*v = t;
	return rc;
}

int pt_prologue(struct pt_comm *c, uint32_t *cycle_buffer, uint32_t *cache_line)
{
	char mine[PT_VERSION_LEN] = PT_VERSION, theirs[PT_VERSION_LEN + 1] = { 0 };
	int rc = pt_xchg(c, mine, theirs, PT_VERSION_LEN);
	if (rc)
		return rc;
	/* perftest refuses older peers, and the formats below are theirs */
	if (atof(theirs) < PT_MIN_PEER_VERSION) {
		fprintf(stderr, "uwarp-perf: the peer's perftest version '%s' is older than 5.70\n",
			theirs);
		return -EPROTONOSUPPORT;
	}
	*cycle_buffer = PT_CYCLE_BUFFER;
	*cache_line = PT_CACHE_LINE;
	if ((rc = xchg_u32(c, cycle_buffer)) || (rc = xchg_u32(c, cache_line)))
		return rc;
	char mtu[2] = PT_MTU_TEXT, their_mtu[2];
	return pt_xchg(c, mtu, their_mtu, sizeof(mtu));
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htobe32(v);
	memcpy(p, &v, 4);
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return be32toh(v);
}

static void put64(uint8_t *p, uint64_t v)
{
	v = htobe64(v);
	memcpy(p, &v, 8);
}

static uint64_t get64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return be64toh(v);
}

/* struct pingpong_dest on x86_64: five ints, 4 bytes of padding, the
 * 64-bit address, the 16-byte GID, two more ints */
enum {
	D_LID = 0,
	D_OUT_READS = 4,
	D_QPN = 8,
	D_PSN = 12,
	D_RKEY = 16,
	D_VADDR = 24,
	D_GID = 32,
	D_SRQN = 48,
	D_GID_INDEX = 52,
	D_LEN = 56
};

int pt_handshake(struct pt_comm *c, const struct pt_dest *mine, struct pt_dest *theirs)
{
	uint8_t m[D_LEN] = { 0 }, t[D_LEN];
	put32(m + D_LID, mine->lid);
	put32(m + D_OUT_READS, mine->out_reads);
	put32(m + D_QPN, mine->qpn);
	put32(m + D_PSN, mine->psn);
	put32(m + D_RKEY, mine->rkey);
	put64(m + D_VADDR, mine->vaddr);
	memcpy(m + D_GID, mine->gid, sizeof(mine->gid));
	put32(m + D_SRQN, mine->srqn);
	put32(m + D_GID_INDEX, mine->gid_index);
	int rc = pt_xchg(c, m, t, D_LEN);
	if (rc)
		return rc;
	theirs->lid = get32(t + D_LID);
	theirs->out_reads = get32(t + D_OUT_READS);
	theirs->qpn = get32(t + D_QPN);
	theirs->psn = get32(t + D_PSN);
	theirs->rkey = get32(t + D_RKEY);
	theirs->vaddr = get64(t + D_VADDR);
	memcpy(theirs->gid, t + D_GID, sizeof(theirs->gid));
	theirs->srqn = get32(t + D_SRQN);
	theirs->gid_index = get32(t + D_GID_INDEX);
	return 0;
}

static int xchg_u64(struct pt_comm *c, uint64_t mine, uint64_t *theirs)
{
	uint8_t m[8], t[8];
	put64(m, mine);
	int rc = pt_xchg(c, m, t, sizeof(m));
	*theirs = get64(t);
	return rc;
}

static int xchg_double(struct pt_comm *c, double mine, double *theirs)
{
	uint64_t m, t = 0;
	memcpy(&m, &mine, sizeof(m));
	int rc = xchg_u64(c, m, &t);
	memcpy(theirs, &t, sizeof(t));
	return rc;
}

int pt_xchg_report(struct pt_comm *c, const struct pt_bw_report *mine, struct pt_bw_report *theirs)
{
	int rc;
	if ((rc = xchg_u64(c, mine->size, &theirs->size)) ||
	    (rc = xchg_u64(c, mine->iters, &theirs->iters)) ||
	    (rc = xchg_double(c, mine->bw_peak, &theirs->bw_peak)) ||
	    (rc = xchg_double(c, mine->bw_avg, &theirs->bw_avg)))
		return rc;
	return xchg_double(c, mine->msg_rate, &theirs->msg_rate);
}
