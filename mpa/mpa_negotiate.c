/*
 * mpa_negotiate.c: what two MPA endpoints agree on (RFC 5044 7.1, RFC 6581).
 */
#include "mpa_negotiate.h"

#include <errno.h>
#include <string.h>

void mpa_policy_default(struct mpa_policy *pol)
{
	memset(pol, 0, sizeof(*pol));
	pol->rev = MPA_REV_2;
	pol->enhanced = true;
	pol->crc = true; /* integrity is cheap with ISA-L; siw honours C=1 */
	pol->markers_tx = true;
	pol->ird = 16;
	pol->ord = 16;
	pol->relaxed_ird = true;
	pol->p2p_accept = true; /* Intel irdma always initiates with A=1 */
	pol->rtr_types = MPA_RTR_ALL;
	pol->pd_max = MPA_PD_MAX_RFC;
}

static int refuse(struct mpa_verdict *v, enum mpa_refusal r, uint8_t ecode, bool send_reject)
{
	v->reason = r;
	v->llp_ecode = ecode;
	v->send_reject = send_reject;
	return -ECONNREFUSED;
}

static void accept_verdict(struct mpa_verdict *v) { memset(v, 0, sizeof(*v)); }

void mpa_verdict_bad_frame(struct mpa_verdict *v)
{
	refuse(v, MPA_REFUSE_BAD_FRAME, UW_MPA_ECODE_BAD_FRAME, false);
}

static uint16_t min16(uint16_t a, uint16_t b) { return a < b ? a : b; }

void mpa_request(const struct mpa_policy *pol, const uint8_t *pdata, uint16_t pdata_len,
		 struct mpa_frame *req)
{
	memset(req, 0, sizeof(*req));
	req->type = MPA_FRAME_REQUEST;
	req->rev = pol->rev;
	req->markers = pol->markers_rx;
	req->crc = pol->crc && !pol->crc_refuse;
	req->enhanced = pol->enhanced && pol->rev == MPA_REV_2;
	if (req->enhanced) {
		req->ird = min16(pol->ird, MPA_V2_IRD_ORD_MASK);
		req->ord = min16(pol->ord, MPA_V2_IRD_ORD_MASK);
		if (pol->p2p_request) {
			req->p2p = true;
			req->rtr = pol->rtr_types & MPA_RTR_ALL;
		}
	}
	req->pdata = pdata;
	req->pdata_len = pdata_len;
}

/* The responder picks exactly one RTR type (RFC 6581 section 3). Write is
 * preferred: it needs no posted receive and no IRD; Read next; Send last,
 * because it consumes a receive the application may not have posted yet. */
static uint8_t pick_rtr(uint8_t offered, bool read_ok)
{
	if (offered & MPA_RTR_WRITE)
		return MPA_RTR_WRITE;
	if ((offered & MPA_RTR_READ) && read_ok)
		return MPA_RTR_READ;
	if (offered & MPA_RTR_SEND)
		return MPA_RTR_SEND;
	return 0;
}

static void build_reject(const struct mpa_frame *req, uint8_t rev, const uint8_t *pdata,
			 uint16_t pdata_len, struct mpa_frame *reply)
{
	memset(reply, 0, sizeof(*reply));
	reply->type = MPA_FRAME_REPLY;
	reply->rev = rev;
	reply->reject = true;
	/* Echo the block (zeroed) so an enhanced initiator can parse us. */
	reply->enhanced = req->enhanced && rev == MPA_REV_2;
	reply->pdata = pdata;
	reply->pdata_len = pdata_len;
}

static uint8_t reply_rev(const struct mpa_policy *pol, const struct mpa_frame *req)
{
	return req->rev < pol->rev ? req->rev : pol->rev;
}

void mpa_reject_reply(const struct mpa_policy *pol, const struct mpa_frame *req,
		      const uint8_t *pdata, uint16_t pdata_len, struct mpa_frame *reply)
{
	build_reject(req, reply_rev(pol, req), pdata, pdata_len, reply);
}

int mpa_respond(const struct mpa_policy *pol, const struct mpa_frame *req, const uint8_t *pdata,
		uint16_t pdata_len, struct mpa_frame *reply, struct mpa_params *out,
		struct mpa_verdict *v)
{
	uint8_t rev = reply_rev(pol, req);
	bool enhanced = req->enhanced && pol->enhanced && rev == MPA_REV_2;
	struct mpa_params p;

	memset(&p, 0, sizeof(p));
	if (req->type != MPA_FRAME_REQUEST || req->rev > MPA_REV_2)
		return refuse(v, MPA_REFUSE_BAD_FRAME, UW_MPA_ECODE_BAD_FRAME, false);

	build_reject(req, rev, NULL, 0, reply);
	if (pol->require_enhanced && !enhanced)
		return refuse(v, MPA_REFUSE_NOT_ENHANCED, 0, true);
	/* M in the Request: the initiator wants to receive markers from us. */
	if (req->markers && !pol->markers_tx)
		return refuse(v, MPA_REFUSE_MARKERS, 0, true);
	if (req->crc && pol->crc_refuse)
		return refuse(v, MPA_REFUSE_CRC, 0, true);

	p.rev = rev;
	p.enhanced = enhanced;
	p.crc = req->crc || (pol->crc && !pol->crc_refuse);
	p.markers_tx = req->markers;
	p.markers_rx = pol->markers_rx;
	p.ird = pol->ird;
	p.ord = pol->ord;

	if (enhanced) {
		/* Never issue more Reads than the initiator can hold. */
		p.ord = min16(pol->ord, req->ird);
		/* The initiator's ORD must fit our IRD; relaxed, we advertise
		 * what we have and the initiator lowers its ORD to it. */
		if (req->ord > pol->ird && !pol->relaxed_ird)
			return refuse(v, MPA_REFUSE_IRD, UW_MPA_ECODE_INSUFFICIENT_IRD, true);
		p.ird = min16(pol->ird, MPA_V2_IRD_ORD_MASK);
		if (req->p2p) {
			/* A Read RTR is a zero-length Read: it needs one slot of
			 * our IRD and one of the initiator's ORD. */
			bool read_ok = p.ird > 0 && req->ord > 0;
			uint8_t rtr =
				pol->p2p_accept ? pick_rtr(req->rtr & pol->rtr_types, read_ok) : 0;
			if (!rtr)
				return refuse(v, MPA_REFUSE_RTR, UW_MPA_ECODE_NO_MATCHING_RTR,
					      true);
			p.p2p = true;
			p.rtr = rtr;
		}
	}

	memset(reply, 0, sizeof(*reply));
	reply->type = MPA_FRAME_REPLY;
	reply->rev = rev;
	reply->markers = p.markers_rx;
	reply->crc = p.crc;
	reply->enhanced = enhanced;
	reply->ird = p.ird;
	reply->ord = p.ord;
	reply->p2p = p.p2p;
	reply->rtr = p.rtr;
	reply->pdata = pdata;
	reply->pdata_len = pdata_len;
	*out = p;
	accept_verdict(v);
	return 0;
}

int mpa_conclude(const struct mpa_policy *pol, const struct mpa_frame *req,
		 const struct mpa_frame *rep, struct mpa_params *out, struct mpa_verdict *v)
{
	struct mpa_params p;

	memset(&p, 0, sizeof(p));
	if (rep->type != MPA_FRAME_REPLY || rep->rev > req->rev)
		return refuse(v, MPA_REFUSE_BAD_FRAME, UW_MPA_ECODE_BAD_FRAME, false);
	if (rep->reject)
		return refuse(v, MPA_REFUSE_PEER_REJECTED, 0, false);

	p.rev = rep->rev;
	p.enhanced = req->enhanced && rep->enhanced && rep->rev == MPA_REV_2;
	if (req->enhanced && !p.enhanced) {
		/* Peer-to-peer needs the block to agree on an RTR. */
		if (req->p2p)
			return refuse(v, MPA_REFUSE_RTR, UW_MPA_ECODE_NO_MATCHING_RTR, false);
		if (pol->require_enhanced)
			return refuse(v, MPA_REFUSE_NOT_ENHANCED, 0, false);
	}
	/* M in the Reply: the responder wants markers from us. */
	if (rep->markers && !pol->markers_tx)
		return refuse(v, MPA_REFUSE_MARKERS, 0, false);
	p.crc = req->crc || rep->crc;
	if (p.crc && pol->crc_refuse)
		return refuse(v, MPA_REFUSE_CRC, 0, false);
	p.markers_tx = rep->markers;
	p.markers_rx = req->markers;
	p.ird = req->enhanced ? req->ird : pol->ird;
	p.ord = req->enhanced ? req->ord : pol->ord;

	if (p.enhanced) {
		/* The responder may never have more Reads outstanding at us
		 * than the IRD we advertised. */
		if (rep->ord > req->ird)
			return refuse(v, MPA_REFUSE_IRD, UW_MPA_ECODE_INSUFFICIENT_IRD, false);
		if (rep->ird < req->ord) {
			if (!pol->relaxed_ird)
				return refuse(v, MPA_REFUSE_IRD, UW_MPA_ECODE_INSUFFICIENT_IRD,
					      false);
			p.ord = rep->ird;
		}
		if (req->p2p) {
			uint8_t r = rep->rtr;
			bool one = r && !(r & (r - 1));
			if (!rep->p2p || !one || !(r & req->rtr) ||
			    (r == MPA_RTR_READ && (p.ord == 0 || rep->ird == 0)))
				return refuse(v, MPA_REFUSE_RTR, UW_MPA_ECODE_NO_MATCHING_RTR,
					      false);
			p.p2p = true;
			p.rtr = r;
		}
	}
	*out = p;
	accept_verdict(v);
	return 0;
}

const char *mpa_refusal_str(enum mpa_refusal r)
{
	switch (r) {
	case MPA_ACCEPTED:
		return "accepted";
	case MPA_REFUSE_BAD_FRAME:
		return "invalid MPA Request/Reply frame";
	case MPA_REFUSE_NOT_ENHANCED:
		return "peer does not speak RFC 6581 enhanced setup";
	case MPA_REFUSE_MARKERS:
		return "peer asks for markers we will not send";
	case MPA_REFUSE_CRC:
		return "peer asks for CRC, which policy refuses";
	case MPA_REFUSE_IRD:
		return "insufficient IRD resources";
	case MPA_REFUSE_RTR:
		return "no matching RTR option";
	case MPA_REFUSE_PEER_REJECTED:
		return "rejected by the peer";
	}
	return "unknown";
}
