/*
 * mpa_negotiate.h: MPA connection setup as pure functions. Our policy plus
 * the peer's frame gives either the parameters both ends will run with, or a
 * refusal with its reason and the RFC 6580 LLP error code a Terminate needs.
 *
 * Initiator:  mpa_request()  -> send Request -> decode Reply -> mpa_conclude()
 * Responder:  decode Request -> mpa_respond() -> send the Reply it built
 *             (or, to refuse on the application's behalf, mpa_reject_reply()).
 */
#ifndef UWARP_MPA_NEGOTIATE_H
#define UWARP_MPA_NEGOTIATE_H

#include <stdbool.h>
#include <stdint.h>

#include "mpa_frame.h"

struct mpa_policy {
	uint8_t rev;           /* highest revision we speak: 1 or 2 */
	bool enhanced;         /* use the RFC 6581 IRD/ORD block with revision 2 */
	bool require_enhanced; /* refuse a peer that answers without the block */
	bool crc;              /* ask for CRC (C=1 in our frame) */
	bool crc_refuse;       /* never run CRC: refuse a peer that asks for it */
	bool markers_rx;       /* ask the peer to send markers (M=1 in our frame) */
	bool markers_tx;       /* willing to send markers when the peer asks */
	uint16_t ird;          /* inbound RDMA Reads we can hold (our IRD) */
	uint16_t ord;          /* outbound RDMA Reads we want in flight (our ORD) */
	bool relaxed_ird;      /* lower our ORD to the peer's IRD instead of refusing */
	bool p2p_request;      /* initiator: ask for peer-to-peer mode with an RTR */
	bool p2p_accept;       /* responder: agree to peer-to-peer mode */
	uint8_t rtr_types;     /* enum mpa_rtr: initiator offers, responder accepts */
	uint16_t pd_max;       /* largest PD_Length we take from the peer */
};

/* The parameters a connection runs with once setup succeeds. */
struct mpa_params {
	uint8_t rev;
	bool enhanced;   /* IRD/ORD were exchanged */
	bool crc;        /* both directions */
	bool markers_tx; /* we insert markers */
	bool markers_rx; /* the peer inserts markers */
	uint16_t ird;    /* our final IRD: Read Requests the peer may have outstanding */
	uint16_t ord;    /* our final ORD: Read Requests we may have outstanding */
	bool p2p;
	uint8_t rtr; /* the single RTR type chosen, or 0 */
};

enum mpa_refusal {
	MPA_ACCEPTED = 0,
	MPA_REFUSE_BAD_FRAME,     /* wrong frame type or key, bad revision */
	MPA_REFUSE_NOT_ENHANCED,  /* peer lacks RFC 6581, policy requires it */
	MPA_REFUSE_MARKERS,       /* peer wants markers we will not send */
	MPA_REFUSE_CRC,           /* peer wants CRC, policy refuses CRC */
	MPA_REFUSE_IRD,           /* IRD cannot cover the peer's ORD */
	MPA_REFUSE_RTR,           /* no RTR type both ends accept */
	MPA_REFUSE_PEER_REJECTED, /* the Reply carried R=1 */
};

struct mpa_verdict {
	enum mpa_refusal reason;
	/* LLP/MPA error code for a Terminate (UW_MPA_ECODE_*), or 0 when the
	 * refusal is a Reject frame or a plain close with no Terminate. */
	uint8_t llp_ecode;
	/* Responder only: answer with the Reject that mpa_respond() built. */
	bool send_reject;
};

/* uwarp's defaults: revision 2 enhanced, CRC requested, no markers asked
 * (we can send them), IRD=ORD=16, relaxed IRD, P2P accepted with any RTR,
 * private data up to the RFC's 512 bytes. */
void mpa_policy_default(struct mpa_policy *pol);

/* Initiator: the Request our policy sends, with the ULP's private data
 * (not copied: pdata must outlive the frame). */
void mpa_request(const struct mpa_policy *pol, const uint8_t *pdata, uint16_t pdata_len,
		 struct mpa_frame *req);

/*
 * Responder: judge a decoded Request. On success returns 0, fills *out and
 * builds *reply carrying pdata (the application's accept private data).
 * On refusal returns -ECONNREFUSED, fills *v, and, when v->send_reject,
 * builds *reply as the Reject to send before closing.
 */
int mpa_respond(const struct mpa_policy *pol, const struct mpa_frame *req, const uint8_t *pdata,
		uint16_t pdata_len, struct mpa_frame *reply, struct mpa_params *out,
		struct mpa_verdict *v);

/* Responder: the Reject an application sends to refuse a Request, with
 * its private data (behind a zeroed IRD/ORD block if the Request had one). */
void mpa_reject_reply(const struct mpa_policy *pol, const struct mpa_frame *req,
		      const uint8_t *pdata, uint16_t pdata_len, struct mpa_frame *reply);

/*
 * Initiator: judge the decoded Reply to the Request we sent. Returns 0 and
 * fills *out, or -ECONNREFUSED with *v filled (MPA_REFUSE_PEER_REJECTED when
 * the peer rejected us: its private data is in rep->pdata).
 */
int mpa_conclude(const struct mpa_policy *pol, const struct mpa_frame *req,
		 const struct mpa_frame *rep, struct mpa_params *out, struct mpa_verdict *v);

/* A decode error (from mpa_frame_decode) as a verdict: a bad frame is
 * LLP/MPA 0x04. */
void mpa_verdict_bad_frame(struct mpa_verdict *v);

const char *mpa_refusal_str(enum mpa_refusal r);

#endif
