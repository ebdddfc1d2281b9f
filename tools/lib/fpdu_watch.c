/*
 * fpdu_watch.c: a peer's FPDUs counted, its first Terminate kept.
 */
#include <string.h>

#include "ddp/ddp_hdr.h"
#include "fpdu_watch.h"
#include "rdmap/rdmap_opcode.h"

void fpdu_watch_init(struct fpdu_watch *w, bool crc)
{
	memset(w, 0, sizeof(*w));
	struct fpdu_rx_cfg cfg = { .crc = crc, .hdr_len = rdmap_hdr_len };
	fpdu_rx_init(&w->rx, &cfg);
	w->op = -1;
}

/* ULPDU bytes of the first Terminate, within the room kept for it */
static void keep(struct fpdu_watch *w, const uint8_t *p, size_t n)
{
	size_t room = sizeof(w->term) - w->term_len;
	if (n > room) {
		w->term_cut = true;
		n = room;
	}
	memcpy(w->term + w->term_len, p, n);
	w->term_len += n;
}

int fpdu_watch_feed(struct fpdu_watch *w, const uint8_t *in, size_t n)
{
	size_t off = 0;
	while (!w->error && off < n) {
		struct fpdu_rx_out out;
		size_t used = 0;
		enum fpdu_rx_event ev = fpdu_rx_step(&w->rx, in + off, n - off, &used, &out);
		off += used;
		switch (ev) {
		case FPDU_RX_HDR:
			w->op = w->rx.hdr[1] & 0x0f;
			w->keeping = w->op == RDMAP_TERMINATE && w->by_op[RDMAP_TERMINATE] == 0;
			if (w->keeping)
				keep(w, w->rx.hdr, w->rx.hdr_len);
			break;
		case FPDU_RX_DATA:
			if (w->keeping)
				keep(w, out.data, out.len);
			break;
		case FPDU_RX_END:
			w->fpdus++;
			w->after_terminate |= w->by_op[RDMAP_TERMINATE] > 0;
			w->term_whole |= w->keeping;
			w->keeping = false;
			if (w->op >= 0)
				w->by_op[w->op]++;
			w->op = -1;
			break;
		case FPDU_RX_ERROR:
			w->error = w->rx.err.what;
			return -1;
		case FPDU_RX_MORE:
			return 0;
		default:
			break;
		}
	}
	return w->error ? -1 : 0;
}

int fpdu_watch_terminate(const struct fpdu_watch *w, struct rdmap_term *t)
{
	if (!w->term_whole || w->term_cut || w->term_len <= DDP_UNTAGGED_HDR_LEN)
		return -1;
	return rdmap_term_decode(w->term + DDP_UNTAGGED_HDR_LEN, w->term_len - DDP_UNTAGGED_HDR_LEN,
				 t)
		       ? -1
		       : 0;
}
