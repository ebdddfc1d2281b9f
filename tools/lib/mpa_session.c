/*
 * mpa_session.c: an MPA conversation between two in-process endpoints.
 */
#include "mpa_session.h"

#include <errno.h>
#include <string.h>

#include "pcap_writer.h"

void mpa_session_init(struct mpa_session *s)
{
	memset(s, 0, sizeof(*s));
	mpa_policy_default(&s->pol[0]);
	mpa_policy_default(&s->pol[1]);
}

static int refused(struct mpa_session *s, int who)
{
	s->rc = -ECONNREFUSED;
	s->refused_by = who;
	return s->rc;
}

int mpa_session_connect(struct mpa_session *s, const uint8_t *pd_init, uint16_t pd_init_len,
			const uint8_t *pd_resp, uint16_t pd_resp_len)
{
	struct mpa_frame req, got_req, rep, got_rep;
	ssize_t n;

	mpa_request(&s->pol[0], pd_init, pd_init_len, &req);
	n = mpa_frame_encode(&req, s->req, sizeof(s->req));
	if (n < 0)
		return s->rc = (int)n;
	s->req_len = (size_t)n;
	if (mpa_frame_decode(s->req, s->req_len, s->pol[1].pd_max, &got_req) != n) {
		mpa_verdict_bad_frame(&s->verdict);
		return refused(s, 1);
	}
	if (mpa_respond(&s->pol[1], &got_req, pd_resp, pd_resp_len, &rep, &s->params[1],
			&s->verdict)) {
		if (!s->verdict.send_reject)
			return refused(s, 1);
	}
	n = mpa_frame_encode(&rep, s->rep, sizeof(s->rep));
	if (n < 0)
		return s->rc = (int)n;
	s->rep_len = (size_t)n;
	if (s->verdict.reason != MPA_ACCEPTED)
		return refused(s, 1);
	if (mpa_frame_decode(s->rep, s->rep_len, s->pol[0].pd_max, &got_rep) != n) {
		mpa_verdict_bad_frame(&s->verdict);
		return refused(s, 0);
	}
	if (mpa_conclude(&s->pol[0], &req, &got_rep, &s->params[0], &s->verdict))
		return refused(s, 0);
	return s->rc = 0;
}

void mpa_session_send(struct mpa_session *s, int dir, const uint32_t *sizes, size_t n,
		      uint32_t ulpdu_max, uint32_t seed)
{
	fpdu_stream_free(&s->stream[dir]);
	fpdu_stream_build(&s->stream[dir], sizes, n, ulpdu_max, s->params[dir].crc,
			  s->params[dir].markers_tx, seed);
}

size_t mpa_session_check(const struct mpa_session *s, int dir, struct rddp_error *err)
{
	const struct mpa_params *rxp = &s->params[!dir];
	struct fpdu_rx_cfg cfg = { .crc = rxp->crc,
				   .markers = rxp->markers_rx,
				   .hdr_len = rdmap_hdr_len };
	struct parse_result r;
	const struct fpdu_stream *st = &s->stream[dir];

	parse_with_cuts(&r, &cfg, st->bytes, st->len, NULL, 0, false);
	if (err)
		*err = r.err;
	size_t bad = parse_result_check(&r, st);
	parse_result_free(&r);
	return bad;
}

int mpa_session_write_pcap(const struct mpa_session *s, const char *path)
{
	struct pcapw w;
	/* TEST-NET-1 addresses: documentation only, never routed. */
	int rc = pcapw_open(&w, path, 0xc0000201, 40000, 0xc0000202, 4791);
	size_t i[2] = { 0, 0 };

	if (rc)
		return rc;
	rc = pcapw_segment(&w, 0, s->req, s->req_len);
	if (!rc && s->rep_len)
		rc = pcapw_segment(&w, 1, s->rep, s->rep_len);
	while (!rc && (i[0] < s->stream[0].n || i[1] < s->stream[1].n)) {
		for (int d = 0; d < 2 && !rc; d++) {
			const struct fpdu_stream *st = &s->stream[d];
			if (i[d] >= st->n)
				continue;
			const struct sent_fpdu *f = &st->fpdus[i[d]++];
			rc = pcapw_segment(&w, d, st->bytes + f->wire_start,
					   f->wire_end - f->wire_start);
		}
	}
	int rc2 = pcapw_close(&w);
	return rc ? rc : rc2;
}

void mpa_session_free(struct mpa_session *s)
{
	fpdu_stream_free(&s->stream[0]);
	fpdu_stream_free(&s->stream[1]);
}
