/*
 * fpdu_tx.c: turn (header, payload iovecs) into FPDUs on a gather list.
 *
 * The payload is referenced in place; only the ULPDU_Length (written into
 * the caller's header slot), pad, markers and CRC are produced here. The CRC
 * is computed over the pieces in wire order while they are queued, which is
 * when the payload is most likely still in cache.
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
};

static void put_marker(struct emitter *e, uint16_t fpduptr)
{
	uint8_t *m = e->b->scratch + e->b->scratch_used;

	e->b->scratch_used += MPA_MARKER_SIZE;
	be16_put(m, 0);
	be16_put(m + 2, fpduptr);
	push(e->b, m, MPA_MARKER_SIZE);
	if (e->tx->crc)
		e->crc = crc32c_update(e->crc, m, MPA_MARKER_SIZE);
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
		push(e->b, p, k);
		if (e->tx->crc)
			e->crc = crc32c_update(e->crc, p, k);
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

/* A flat FPDU (fpdu_batch.flat) as it is written into scratch. */
struct flat {
	struct fpdu_tx *tx;
	uint8_t *w;   /* the next byte */
	uint32_t off; /* bytes since this FPDU's ULPDU_Length field */
};

static void flat_marker(struct flat *f, uint16_t fpduptr)
{
	be16_put(f->w, 0);
	be16_put(f->w + 2, fpduptr);
	f->w += MPA_MARKER_SIZE;
	f->tx->mpos = MPA_MARKER_SIZE;
}

/* n bytes copied, a marker wherever the stream reaches a multiple of 512 */
static void flat_put(struct flat *f, const void *p, size_t n)
{
	const uint8_t *src = p;
	while (n) {
		if (f->tx->mpos == 0) {
			flat_marker(f, (uint16_t)f->off);
			f->off += MPA_MARKER_SIZE;
		}
		size_t k = MPA_MARKER_INTERVAL - f->tx->mpos;
		if (k > n)
			k = n;
		memcpy(f->w, src, k);
		f->w += k;
		f->off += (uint32_t)k;
		f->tx->mpos = (f->tx->mpos + (uint32_t)k) % MPA_MARKER_INTERVAL;
		src += k;
		n -= k;
	}
}

static void append_flat(struct fpdu_tx *tx, struct fpdu_batch *b, const uint8_t *hdr,
			size_t hdr_len, const struct iovec *payload, int npayload, unsigned pad,
			bool lead, size_t wire)
{
	static const uint8_t zeros[4];
	uint8_t *start = b->scratch + b->scratch_used;
	struct flat f = { tx, start, 0 };
	if (lead)
		flat_marker(&f, 0); /* precedes the FPDU; its CRC covers it */
	flat_put(&f, hdr, MPA_ULPDU_LEN_SIZE + hdr_len);
	for (int i = 0; i < npayload; i++)
		flat_put(&f, payload[i].iov_base, payload[i].iov_len);
	flat_put(&f, zeros, pad);
	if (tx->mpos == 0) { /* a marker just before the CRC is covered by it */
		flat_marker(&f, (uint16_t)f.off);
		f.off += MPA_MARKER_SIZE;
	}
	uint32_t crc =
		tx->crc ? crc32c_final(crc32c_update(CRC32C_INIT, start, (size_t)(f.w - start)))
			: 0;
	uint8_t c[MPA_CRC_SIZE];
	le32_put(c, crc); /* (zeros without CRC, as siw sends) */
	flat_put(&f, c, MPA_CRC_SIZE);
	b->scratch_used += wire;
	push(b, start, wire);
}

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
	if (flat) {
		append_flat(tx, b, hdr, hdr_len, payload, npayload, pad, lead, wire);
		return 0;
	}
	struct emitter e = { .tx = tx, .b = b, .crc = CRC32C_INIT, .off = 0 };
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
		if (tx->crc)
			e->crc = crc32c_update(e->crc, p, pad);
	}
	uint8_t *c = emit_scratch(e, MPA_CRC_SIZE);
	/* Without CRC the field still travels, as zeros (what siw sends). */
	le32_put(c, tx->crc ? crc32c_final(e->crc) : 0);
	return 0;
}
