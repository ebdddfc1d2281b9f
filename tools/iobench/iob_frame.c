/*
 * iob_frame.c: what every I/O model of uwarp-iobench shares: the sender's
 * FPDUs (tagged DDP segments of RDMA Write messages) and the receiver's
 * parse and reading plan, which follow the engine's (runtime/engine_rx.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "iobench.h"
#include "util/clock.h"

uint8_t iob_pattern(size_t i)
{
	uint8_t v = (uint8_t)((i * 2654435761u) >> 13 ^ i);
	return v == IOB_POISON ? 0 : v;
}

bool iob_tx_over(const struct iob_stats *st, const struct iob_cfg *cfg)
{
	return util_now_s() - st->t0 >= cfg->secs;
}

static void usage_now(double *cpu, uint64_t *sleeps)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	*cpu = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
	*sleeps = (uint64_t)ru.ru_nvcsw;
}

void iob_stats_begin(struct iob_stats *st)
{
	memset(st, 0, sizeof(*st));
	usage_now(&st->cpu0, &st->sleeps0);
	st->t0 = util_now_s();
}

void iob_stats_end(struct iob_stats *st)
{
	usage_now(&st->cpu, &st->sleeps);
	st->cpu -= st->cpu0;
	st->sleeps -= st->sleeps0;
	st->secs = util_now_s() - st->t0;
}

/* message @msgno's segments from now on */
static void src_message(struct iob_src *s, uint32_t msgno)
{
	const struct ddp_hdr base = {
		.tagged = true,
		.dv = DDP_VERSION,
		.ulp_ctrl = RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | RDMAP_RDMA_WRITE,
		.stag = msgno,
	};
	uint32_t ulpdu_max = fpdu_ulpdu_max(FPDU_SIZE_LARGE, 0, false);
	ddp_segmenter_init(&s->seg, &base, s->cfg->msg, ulpdu_max - DDP_TAGGED_HDR_LEN);
}

void iob_src_init(struct iob_src *s, const struct iob_cfg *cfg, const uint8_t *buf)
{
	memset(s, 0, sizeof(*s));
	s->cfg = cfg;
	s->buf = buf;
	src_message(s, 0);
	fpdu_tx_init(&s->tx, cfg->crc, false);
}

void iob_src_fill(struct iob_src *s, struct iob_list *l)
{
	struct fpdu_batch *b = fpdu_batch_max_init(&l->bm);
	l->wr_iov = 0;
	for (int i = 0; i < IOB_LIST_HDRS && b->bytes < s->cfg->list; i++) {
		if (!s->have) {
			if (s->seg.done)
				src_message(s, s->seg.base.stag + 1);
			ddp_segmenter_next(&s->seg, &s->h, &s->off, &s->n);
			s->have = true;
		}
		ddp_hdr_encode(&s->h, l->hdr[i] + MPA_ULPDU_LEN_SIZE);
		struct iovec pay = { (void *)(uintptr_t)(s->buf + s->off), s->n };
		if (fpdu_tx_append(&s->tx, b, l->hdr[i], DDP_TAGGED_HDR_LEN, &pay, 1))
			break; /* the list is full: the segment goes in the next */
		s->have = false;
	}
}

bool iob_list_wrote(struct iob_list *l, size_t n)
{
	struct fpdu_batch *b = &l->bm.b;
	l->wr_iov += iov_advance(b->iov + l->wr_iov, b->niov - l->wr_iov, n);
	return l->wr_iov == b->niov;
}

int iob_sink_init(struct iob_sink *k, const struct iob_cfg *cfg, const uint8_t *ref)
{
	memset(k, 0, sizeof(*k));
	k->cfg = cfg;
	k->ref = ref;
	k->dst = malloc(cfg->msg);
	k->buf = malloc(IOB_RXBUF);
	if (!k->dst || !k->buf) {
		iob_sink_free(k);
		return -1;
	}
	memset(k->dst, IOB_POISON, cfg->msg);
	struct fpdu_rx_cfg rc = { .crc = cfg->crc, .min_ulpdu = DDP_TAGGED_HDR_LEN };
	fpdu_rx_init(&k->rx, &rc);
	return 0;
}

void iob_sink_free(struct iob_sink *k)
{
	free(k->dst);
	free(k->buf);
	k->dst = k->buf = NULL;
}

static int bad(struct iob_sink *k, int err)
{
	k->err = err;
	return -1;
}

/* A message is whole: with verify, every byte as sent, and the place
 * poisoned again so that a byte the next one misses shows. */
static int message_done(struct iob_sink *k)
{
	k->msgs++;
	if (!k->cfg->verify)
		return 0;
	if (memcmp(k->dst, k->ref, k->cfg->msg))
		return bad(k, EBADMSG);
	memset(k->dst, IOB_POISON, k->cfg->msg);
	return 0;
}

int iob_sink_parse(struct iob_sink *k)
{
	while (k->off < k->len) {
		struct fpdu_rx_out out;
		size_t used;
		enum fpdu_rx_event e =
			fpdu_rx_step(&k->rx, k->buf + k->off, k->len - k->off, &used, &out);
		k->off += used;
		switch (e) {
		case FPDU_RX_MORE:
			break;
		case FPDU_RX_HDR: {
			struct ddp_hdr h;
			if (!ddp_hdr_decode(k->rx.hdr, k->rx.hdr_len, &h) || !h.tagged ||
			    h.to > k->cfg->msg || k->rx.payload_len > k->cfg->msg - h.to)
				return bad(k, EPROTO);
			k->to = h.to;
			k->last = h.last;
			break;
		}
		case FPDU_RX_DATA:
			memcpy(k->dst + k->to + out.off, out.data, out.len);
			k->bytes += out.len;
			break;
		case FPDU_RX_END:
			if (k->last && message_done(k))
				return -1;
			break;
		case FPDU_RX_ERROR:
			return bad(k, EBADMSG);
		}
	}
	k->off = k->len = 0;
	return 0;
}

int iob_sink_end(struct iob_sink *k)
{
	/* the sender ends after a whole gather list: at an FPDU's end */
	if (k->rx.st != FPDU_RX_S_LEN || k->rx.got)
		return bad(k, EPIPE);
	return 0;
}

void iob_sink_plan(struct iob_sink *k, struct iob_plan *p)
{
	size_t span = fpdu_rx_direct_span(&k->rx);
	uint32_t plen = k->rx.payload_len;
	/* the payload's last byte comes through the buffer, as in the
	 * engine: programs poll a Write's last byte */
	if (span && k->rx.payload_off + span == plen)
		span--;
	if (span >= IOB_DIRECT_MIN || (span && plen >= IOB_DIRECT_MIN)) {
		p->iov[0] = (struct iovec){ k->dst + k->to + k->rx.payload_off, span };
		p->iov[1] = (struct iovec){ k->buf, IOB_TAIL };
		p->niov = 2;
		p->span = span;
		p->want = 0;
		return;
	}
	/* after a large payload expect another: little more than its header */
	p->want = plen >= IOB_DIRECT_MIN ? IOB_TAIL : IOB_RXBUF;
	p->iov[0] = (struct iovec){ k->buf, p->want };
	p->niov = 1;
	p->span = 0;
}

void iob_sink_got(struct iob_sink *k, const struct iob_plan *p, size_t n)
{
	if (p->span) {
		size_t m = n < p->span ? n : p->span;
		fpdu_rx_direct_done(&k->rx, p->iov[0].iov_base, m);
		k->bytes += m;
		n -= m;
	}
	k->off = 0;
	k->len = n;
}
