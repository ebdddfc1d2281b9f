/*
 * fpdu_rx.c: the FPDU receive machine.
 *
 * It consumes an arbitrary byte stream, in whatever pieces the socket gives,
 * and keeps all partial progress in counters, so a read may end anywhere:
 * inside a marker, the length field, the header, pad or CRC. Markers are
 * stripped and checked wherever they fall; the CRC runs over every byte
 * from the FPDU's leading marker or length field through the pad.
 *
 * The CRC is taken over the whole span of input a call consumes, markers
 * and all, in one pass (crc_flush), not piece by piece: with markers a
 * piece is 508 bytes, and a CRC call per piece and per marker cost three
 * times what the bytes themselves did (docs/performance.md, "Markers").
 */
#include "fpdu.h"

#include <string.h>

#include "be.h"
#include "crc32c.h"

void fpdu_rx_init(struct fpdu_rx *rx, const struct fpdu_rx_cfg *cfg)
{
	memset(rx, 0, sizeof(*rx));
	rx->cfg = *cfg;
	if (rx->cfg.min_ulpdu == 0)
		rx->cfg.min_ulpdu = DDP_TAGGED_HDR_LEN;
	if (rx->cfg.min_ulpdu < 2)
		rx->cfg.min_ulpdu = 2; /* the control word is always there */
	rx->st = FPDU_RX_S_LEN;
	rx->crc = CRC32C_INIT;
}

static enum fpdu_rx_event fail(struct fpdu_rx *rx, uint8_t ecode, const char *what)
{
	rx->st = FPDU_RX_S_DEAD;
	rddp_error_set(&rx->err, UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, ecode, what);
	return FPDU_RX_ERROR;
}

/* Account for n stream bytes just consumed. */
static void advance(struct fpdu_rx *rx, size_t n, bool in_fpdu)
{
	rx->mpos = (uint32_t)((rx->mpos + n) % MPA_MARKER_INTERVAL);
	if (in_fpdu)
		rx->fpdu_off += (uint32_t)n;
	rx->bytes += n;
}

static void crc_add(struct fpdu_rx *rx, const void *p, size_t n)
{
	if (rx->cfg.crc)
		rx->crc = crc32c_update(rx->crc, p, n);
}

/* Fold the input consumed since *from (up to to) into the CRC. */
static void crc_flush(struct fpdu_rx *rx, const uint8_t *in, size_t *from, size_t to)
{
	if (to > *from)
		crc_add(rx, in + *from, to - *from);
	*from = to;
}

/* Where the FPDU goes after its header or payload is complete. */
static void after_payload(struct fpdu_rx *rx)
{
	rx->got = 0;
	rx->st = rx->pad ? FPDU_RX_S_PAD : FPDU_RX_S_CRC;
}

static void next_fpdu(struct fpdu_rx *rx)
{
	rx->st = FPDU_RX_S_LEN;
	rx->got = 0;
	rx->fpdu_off = 0;
	rx->crc = CRC32C_INIT;
	rx->fpdus++;
}

/* Bytes of FPDU content available before the next marker. */
static size_t run(const struct fpdu_rx *rx, size_t avail)
{
	if (rx->cfg.markers && avail > MPA_MARKER_INTERVAL - rx->mpos)
		return MPA_MARKER_INTERVAL - rx->mpos;
	return avail;
}

/* Payload from in[*i], run by run; with cfg.pieces across the markers
 * between runs while the input holds them whole. Fills out's pieces. */
static enum fpdu_rx_event data_runs(struct fpdu_rx *rx, const uint8_t *in, size_t len, size_t *i,
				    struct fpdu_rx_out *out)
{
	out->off = rx->payload_off;
	out->n = 0;
	for (;;) {
		size_t k = run(rx, len - *i);
		if (k > rx->payload_len - rx->payload_off)
			k = rx->payload_len - rx->payload_off;
		out->piece[out->n].data = in + *i;
		out->piece[out->n].len = (uint32_t)k;
		out->n++;
		advance(rx, k, true);
		rx->payload_off += (uint32_t)k;
		*i += k;
		if (rx->payload_off == rx->payload_len) {
			after_payload(rx);
			break;
		}
		/* a marker is next (the run ended before the payload did) */
		if (!rx->cfg.pieces || !rx->cfg.markers || rx->mpos != 0 ||
		    out->n == FPDU_RX_PIECES || len - *i < MPA_MARKER_SIZE + 1)
			break;
		if (be16_get(in + *i + 2) != rx->fpdu_off)
			return fail(rx, UW_MPA_ECODE_MARKER,
				    "marker FPDUPTR does not point at the FPDU");
		advance(rx, MPA_MARKER_SIZE, true);
		*i += MPA_MARKER_SIZE;
	}
	out->data = out->piece[0].data;
	out->len = out->piece[0].len;
	return FPDU_RX_DATA;
}

enum fpdu_rx_event fpdu_rx_step(struct fpdu_rx *rx, const uint8_t *in, size_t len, size_t *used,
				struct fpdu_rx_out *out)
{
	size_t i = 0, cs = 0; /* in[cs, i): consumed, not yet in the CRC */

	*used = 0;
	if (rx->st == FPDU_RX_S_DEAD)
		return FPDU_RX_ERROR;

	while (i < len) {
		bool boundary = rx->st == FPDU_RX_S_LEN && rx->got == 0;

		if (rx->cfg.markers && (rx->mpos == 0 || rx->mgot)) {
			size_t k = MPA_MARKER_SIZE - rx->mgot;
			if (k > len - i)
				k = len - i;
			memcpy(rx->mbuf + rx->mgot, in + i, k);
			rx->mgot += (uint8_t)k;
			/* A marker on an FPDU boundary precedes the FPDU: it
			 * counts toward nothing but that FPDU's CRC. */
			advance(rx, k, !boundary);
			i += k;
			if (rx->mgot < MPA_MARKER_SIZE)
				continue;
			rx->mgot = 0;
			uint32_t expect = boundary ? 0 : rx->fpdu_off - MPA_MARKER_SIZE;
			if (be16_get(rx->mbuf + 2) != expect) {
				*used = i;
				return fail(rx, UW_MPA_ECODE_MARKER,
					    "marker FPDUPTR does not point at the FPDU");
			}
			continue;
		}

		size_t k = run(rx, len - i);
		switch (rx->st) {
		case FPDU_RX_S_LEN: {
			if (k > 2u - rx->got)
				k = 2u - rx->got;
			memcpy(rx->lenbuf + rx->got, in + i, k);
			advance(rx, k, true);
			rx->got += (uint8_t)k;
			i += k;
			if (rx->got < 2)
				break;
			rx->ulpdu_len = be16_get(rx->lenbuf);
			if (rx->ulpdu_len < rx->cfg.min_ulpdu) {
				*used = i;
				return fail(rx, UW_MPA_ECODE_MARKER,
					    "ULPDU_Length too small for a DDP header");
			}
			rx->pad = (uint8_t)fpdu_pad(rx->ulpdu_len);
			rx->hdr_len = 0;
			rx->hdr_got = 0;
			rx->st = FPDU_RX_S_HDR;
			break;
		}
		case FPDU_RX_S_HDR: {
			size_t want = (rx->hdr_len ? rx->hdr_len : 2u) - rx->hdr_got;
			if (k > want)
				k = want;
			memcpy(rx->hdr + rx->hdr_got, in + i, k);
			advance(rx, k, true);
			rx->hdr_got += (uint16_t)k;
			i += k;
			if (!rx->hdr_len && rx->hdr_got == 2) {
				size_t h = rx->cfg.hdr_len ? rx->cfg.hdr_len(rx->cfg.arg, rx->hdr)
							   : rx->cfg.min_ulpdu;
				if (h < 2)
					h = 2;
				if (h > FPDU_RX_HDR_MAX)
					h = FPDU_RX_HDR_MAX;
				if (h > rx->ulpdu_len) {
					*used = i;
					return fail(rx, UW_MPA_ECODE_MARKER,
						    "ULPDU_Length shorter than its header");
				}
				rx->hdr_len = (uint16_t)h;
			}
			if (!rx->hdr_len || rx->hdr_got < rx->hdr_len)
				break;
			rx->payload_len = rx->ulpdu_len - rx->hdr_len;
			rx->payload_off = 0;
			if (rx->payload_len)
				rx->st = FPDU_RX_S_DATA;
			else
				after_payload(rx);
			crc_flush(rx, in, &cs, i);
			*used = i;
			return FPDU_RX_HDR;
		}
		case FPDU_RX_S_DATA: {
			enum fpdu_rx_event e = data_runs(rx, in, len, &i, out);
			crc_flush(rx, in, &cs, i);
			*used = i;
			return e;
		}
		case FPDU_RX_S_PAD: {
			if (k > (size_t)rx->pad - rx->got)
				k = (size_t)rx->pad - rx->got;
			advance(rx, k, true);
			rx->got += (uint8_t)k;
			i += k;
			if (rx->got == rx->pad) {
				rx->got = 0;
				rx->st = FPDU_RX_S_CRC;
			}
			break;
		}
		case FPDU_RX_S_CRC: {
			if (k > (size_t)MPA_CRC_SIZE - rx->got)
				k = (size_t)MPA_CRC_SIZE - rx->got;
			crc_flush(rx, in, &cs, i); /* (the CRC does not cover itself) */
			memcpy(rx->crcbuf + rx->got, in + i, k);
			advance(rx, k, true);
			rx->got += (uint8_t)k;
			i += k;
			cs = i;
			if (rx->got < MPA_CRC_SIZE)
				break;
			*used = i;
			if (rx->cfg.crc && le32_get(rx->crcbuf) != crc32c_final(rx->crc))
				return fail(rx, UW_MPA_ECODE_CRC, "CRC mismatch");
			next_fpdu(rx);
			return FPDU_RX_END;
		}
		case FPDU_RX_S_DEAD:
			return FPDU_RX_ERROR;
		}
	}
	crc_flush(rx, in, &cs, len);
	*used = len;
	return FPDU_RX_MORE;
}

size_t fpdu_rx_direct_span(const struct fpdu_rx *rx)
{
	if (rx->st != FPDU_RX_S_DATA || rx->mgot || (rx->cfg.markers && rx->mpos == 0))
		return 0;
	return run(rx, rx->payload_len - rx->payload_off);
}

void fpdu_rx_direct_done(struct fpdu_rx *rx, const void *placed, size_t n)
{
	crc_add(rx, placed, n);
	advance(rx, n, true);
	rx->payload_off += (uint32_t)n;
	if (rx->payload_off == rx->payload_len)
		after_payload(rx);
}
