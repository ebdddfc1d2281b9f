/*
 * mpa_session.h: two MPA endpoints in one process. They negotiate through
 * real encoded frames, exchange FPDU traffic built by the real transmitter,
 * check it with the real receiver, and can write the conversation to a pcap
 * for tshark. Endpoint 0 is the initiator, 1 the responder.
 */
#ifndef UWARP_MPA_SESSION_H
#define UWARP_MPA_SESSION_H

#include <stddef.h>
#include <stdint.h>

#include "fpdu_stream.h"
#include "mpa/mpa_negotiate.h"

struct mpa_session {
	struct mpa_policy pol[2];
	int rc;         /* 0 or -ECONNREFUSED */
	int refused_by; /* which endpoint refused, when rc != 0 */
	struct mpa_verdict verdict;
	struct mpa_params params[2];
	uint8_t req[MPA_FRAME_HDR_LEN + MPA_PD_MAX_RFC];
	size_t req_len;
	uint8_t rep[MPA_FRAME_HDR_LEN + MPA_PD_MAX_RFC];
	size_t rep_len;
	struct fpdu_stream stream[2]; /* what each endpoint sent */
};

/* Set both policies to uwarp's defaults. */
void mpa_session_init(struct mpa_session *s);
/* Request, Reply, verdicts. Returns s->rc. */
int mpa_session_connect(struct mpa_session *s, const uint8_t *pd_init, uint16_t pd_init_len,
			const uint8_t *pd_resp, uint16_t pd_resp_len);
/* Endpoint dir sends messages of these sizes with its negotiated CRC and
 * markers, cut into FPDUs of at most ulpdu_max. */
void mpa_session_send(struct mpa_session *s, int dir, const uint32_t *sizes, size_t n,
		      uint32_t ulpdu_max, uint32_t seed);
/* The other endpoint parses what dir sent; returns 0 when it got exactly
 * that, otherwise 1 + the index of the first wrong FPDU; *err gets the
 * receive error if there was one. */
size_t mpa_session_check(const struct mpa_session *s, int dir, struct rddp_error *err);
/* Request, Reply, then the FPDUs of both directions, one per segment.
 * Returns 0 or -errno (-EMSGSIZE for an FPDU larger than a segment). */
int mpa_session_write_pcap(const struct mpa_session *s, const char *path);
void mpa_session_free(struct mpa_session *s);

#endif
