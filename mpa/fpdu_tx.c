/*
 * fpdu_tx.c: turn (header, payload iovecs) into FPDUs on a gather list.
 *
 * The payload is referenced in place; only the ULPDU_Length (written into
 * the caller's header slot), pad, markers and CRC are produced here. The CRC
 * is computed over the pieces in wire order while they are queued, which is
 * when the payload is most likely still in cache. A flat batch (markers)
 * copies the payload into scratch behind its markers instead, and takes
 * the CRC over the copy in one pass (fpdu.h, fpdu_batch.flat).
 */
#include "fpdu.h"

#include <errno.h>
#include <string.h>

#include "be.h"
#include "crc32c.h"

void fpdu_tx_init(struct fpdu_tx *tx, bool crc, bool markers)
{
	memset(tx, 0, sizeof(*tx));
	tx->crc = crc;
	tx->markers = markers;
}

void fpdu_batch_init(struct fpdu_batch *b, struct iovec *iov, int cap, uint8_t *scratch,
		     size_t scratch_cap)
{
	b->iov = iov;
	b->cap = cap > FPDU_BATCH_IOV ? FPDU_BATCH_IOV : cap;
	b->scratch = scratch;
	b->scratch_cap = scratch_cap;
	b->flat = false;
	fpdu_batch_reset(b);
}

void fpdu_batch_reset(struct fpdu_batch *b)
{
	b->niov = 0;
	b->bytes = 0;
	b->scratch_used = 0;
}

static void push(struct fpdu_batch *b, const void *p, size_t n)
{
	struct iovec *last = b->niov ? &b->iov[b->niov - 1] : NULL;

	if (!n)
		return;
	/* Pieces that sit back to back in memory (a trailer followed by the
	 * next FPDU's marker in scratch, a header and payload sharing one
	 * buffer) go out as one iovec. */
	if (last && (const uint8_t *)last->iov_base + last->iov_len == (const uint8_t *)p) {
		last->iov_len += n;
	} else {
		b->iov[b->niov].iov_base = (void *)(uintptr_t)p;
		b->iov[b->niov].iov_len = n;
		b->niov++;
	}
	b->bytes += n;
}

struct emitter {
	struct fpdu_tx *tx;
	struct fpdu_batch *b;
	uint32_t crc;
	uint32_t off; /* bytes since this FPDU's ULPDU_Length field */
	/* A flat batch: where this FPDU begins in scratch. Its payload is
	 * copied in behind its markers, so every piece is contiguous (push
	 * makes one iovec of them) and the CRC is one pass at the end. */
	const uint8_t *flat;
};

/* Fold n bytes at p into the FPDU's CRC, unless it is taken at the end */
static void crc_piece(struct emitter *e, const void *p, size_t n)
{
	if (e->tx->crc && !e->flat)
		e->crc = crc32c_update(e->crc, p, n);
}

static void put_marker(struct emitter *e, uint16_t fpduptr)
{
	uint8_t *m = e->b->scratch + e->b->scratch_used;

	e->b->scratch_used += MPA_MARKER_SIZE;
	be16_put(m, 0);
	be16_put(m + 2, fpduptr);
	push(e->b, m, MPA_MARKER_SIZE);
	crc_piece(e, m, MPA_MARKER_SIZE);
	e->tx->mpos = MPA_MARKER_SIZE;
}

/* Queue n bytes at p, inserting a marker wherever the stream reaches a
 * multiple of 512. */
static void emit(struct emitter *e, const uint8_t *p, size_t n)
{
	while (n) {
		size_t k = n;

		if (e->tx->markers) {
			if (e->tx->mpos == 0) {
				put_marker(e, (uint16_t)e->off);
				e->off += MPA_MARKER_SIZE;
			}
			if (k > MPA_MARKER_INTERVAL - e->tx->mpos)
				k = MPA_MARKER_INTERVAL - e->tx->mpos;
			e->tx->mpos = (e->tx->mpos + (uint32_t)k) % MPA_MARKER_INTERVAL;
		}
		if (e->flat) {
			uint8_t *to = e->b->scratch + e->b->scratch_used;
			memcpy(to, p, k);
			e->b->scratch_used += k;
			push(e->b, to, k);
		} else {
			push(e->b, p, k);
			crc_piece(e, p, k);
		}
		e->off += (uint32_t)k;
		p += k;
		n -= k;
	}
}

/* Queue n (<= 4) bytes of scratch that a marker cannot split: pad ends and
 * the CRC starts on a 4-byte boundary, and markers only sit on those. */
static uint8_t *emit_scratch(struct emitter *e, size_t n)
{
	uint8_t *p;

	if (e->tx->markers && e->tx->mpos == 0) {
		put_marker(e, (uint16_t)e->off);
		e->off += MPA_MARKER_SIZE;
	}
	p = e->b->scratch + e->b->scratch_used;
	e->b->scratch_used += n;
	push(e->b, p, n);
	if (e->tx->markers)
		e->tx->mpos = (e->tx->mpos + (uint32_t)n) % MPA_MARKER_INTERVAL;
	e->off += (uint32_t)n;
	return p;
}

static int trailer(struct emitter *e, unsigned pad);

int fpdu_tx_append(struct fpdu_tx *tx, struct fpdu_batch *b, uint8_t *hdr, size_t hdr_len,
		   const struct iovec *payload, int npayload)
{
	size_t plen = 0, ulpdu, body, inside = 0, need_iov, need_scratch;
	unsigned pad;
	bool lead;

	for (int i = 0; i < npayload; i++)
		plen += payload[i].iov_len;
	ulpdu = hdr_len + plen;
	if (ulpdu > UINT16_MAX || plen > UINT16_MAX)
		return -EMSGSIZE;
	pad = fpdu_pad(ulpdu);
	body = MPA_ULPDU_LEN_SIZE + ulpdu + pad + MPA_CRC_SIZE;

	lead = tx->markers && tx->mpos == 0;
	if (tx->markers) {
		size_t gap = MPA_MARKER_INTERVAL - (lead ? MPA_MARKER_SIZE : tx->mpos);
		size_t step = MPA_MARKER_INTERVAL - MPA_MARKER_SIZE;
		inside = body > gap ? 1 + (body - gap - 1) / step : 0;
		/* FPDUPTR is 16 bits: no marker may sit 64 KiB past the
		 * ULPDU_Length field. */
		if (body + MPA_MARKER_SIZE * inside > MPA_FPDU_MAX)
			return -EMSGSIZE;
	}

	/* Upper bounds: every marker inside can split a piece in two and add
	 * itself; the trailer is at most pad and CRC around a marker. Flat:
	 * one iovec, the whole FPDU in scratch. */
	size_t wire = body + MPA_MARKER_SIZE * ((lead ? 1 : 0) + inside);
	bool flat = b->flat && tx->markers;
	need_iov = flat ? 1 : (lead ? 1 : 0) + 1 + (size_t)npayload + 2 * inside + 2;
	need_scratch =
		flat ? wire : MPA_MARKER_SIZE * ((lead ? 1 : 0) + inside) + pad + MPA_CRC_SIZE;
	if (need_iov > (size_t)b->cap || need_scratch > b->scratch_cap)
		return -EMSGSIZE;
	if ((size_t)b->niov + need_iov > (size_t)b->cap ||
	    b->scratch_used + need_scratch > b->scratch_cap)
		return -ENOBUFS;

	be16_put(hdr, (uint16_t)ulpdu);
	tx->fpdus++;
	tx->bytes += wire;
	struct emitter e = { .tx = tx,
			     .b = b,
			     .crc = CRC32C_INIT,
			     .off = 0,
			     .flat = flat ? b->scratch + b->scratch_used : NULL };
	if (lead)
		put_marker(&e, 0); /* precedes the FPDU; its CRC covers it */
	emit(&e, hdr, MPA_ULPDU_LEN_SIZE + hdr_len);
	for (int i = 0; i < npayload; i++)
		emit(&e, payload[i].iov_base, payload[i].iov_len);
	return trailer(&e, pad);
}

/* The pad and the CRC that end an FPDU. */
static int trailer(struct emitter *e, unsigned pad)
{
	struct fpdu_tx *tx = e->tx;
	if (pad) {
		uint8_t *p = emit_scratch(e, pad);
		memset(p, 0, pad);
		crc_piece(e, p, pad);
	}
	uint8_t *c = emit_scratch(e, MPA_CRC_SIZE);
	/* flat: the whole FPDU before its CRC field, a marker there included */
	if (e->flat && tx->crc)
		e->crc = crc32c_update(CRC32C_INIT, e->flat, (size_t)(c - e->flat));
	/* Without CRC the field still travels, as zeros (what siw sends). */
	le32_put(c, tx->crc ? crc32c_final(e->crc) : 0);
	return 0;
}
