/*
 * test_mpa_negotiate.c: what two MPA endpoints agree on, and every way
 * setup is refused, with the LLP error code a Terminate would carry.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mpa/mpa_negotiate.h"

struct outcome {
	int resp_rc, init_rc;
	struct mpa_params resp, init;
	struct mpa_verdict resp_v, init_v;
	struct mpa_frame req, rep;
	uint8_t reqbuf[600], repbuf[600];
};

/* A whole exchange through the wire encoding: Request bytes, Reply bytes. */
static void exchange(const struct mpa_policy *ip, const struct mpa_policy *rp, struct outcome *o)
{
	struct mpa_frame req, rep;
	ssize_t n;

	memset(o, 0, sizeof(*o));
	mpa_request(ip, (const uint8_t *)"init", 4, &req);
	n = mpa_frame_encode(&req, o->reqbuf, sizeof(o->reqbuf));
	assert_true(n > 0);
	assert_int_equal(mpa_frame_decode(o->reqbuf, (size_t)n, rp->pd_max, &o->req), n);
	o->resp_rc =
		mpa_respond(rp, &o->req, (const uint8_t *)"resp", 4, &rep, &o->resp, &o->resp_v);
	if (o->resp_rc && !o->resp_v.send_reject)
		return;
	n = mpa_frame_encode(&rep, o->repbuf, sizeof(o->repbuf));
	assert_true(n > 0);
	assert_int_equal(mpa_frame_decode(o->repbuf, (size_t)n, ip->pd_max, &o->rep), n);
	o->init_rc = mpa_conclude(ip, &req, &o->rep, &o->init, &o->init_v);
}

static void defaults_agree_on_rev2_enhanced_crc(void **state)
{
	struct mpa_policy p;
	struct outcome o;
	mpa_policy_default(&p);
	exchange(&p, &p, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.init_rc, 0);
	assert_true(o.init.crc && o.resp.crc);
	assert_true(o.init.enhanced && o.resp.enhanced);
	assert_int_equal(o.init.rev, 2);
	assert_false(o.init.markers_tx || o.init.markers_rx || o.resp.markers_tx ||
		     o.resp.markers_rx);
	assert_int_equal(o.init.ird, 16);
	assert_int_equal(o.init.ord, 16);
	assert_int_equal(o.resp.ird, 16);
	assert_int_equal(o.resp.ord, 16);
	assert_false(o.init.p2p);
	assert_memory_equal(o.req.pdata, "init", 4);
	assert_memory_equal(o.rep.pdata, "resp", 4);
}

/* siw's rping client: Rev 2, E, no CRC, IRD=ORD=1. We answer Rev 2 + E
 * (siw aborts otherwise), may switch CRC on, and never issue more Reads
 * than its IRD of 1. */
static void answers_siw_initiator_as_siw_needs(void **state)
{
	struct mpa_policy p, siw;
	struct outcome o;
	mpa_policy_default(&p);
	mpa_policy_default(&siw);
	siw.crc = false;
	siw.ird = siw.ord = 1;
	siw.p2p_accept = false;
	exchange(&siw, &p, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.rep.rev, 2);
	assert_true(o.rep.enhanced);
	assert_true(o.rep.crc);
	assert_int_equal(o.resp.ord, 1);
	assert_int_equal(o.resp.ird, 16);
	assert_int_equal(o.init_rc, 0);
	assert_true(o.init.crc);
	/* siw adopts our values: its ORD stays 1 (we can take 16) */
	assert_int_equal(o.init.ord, 1);
}

static void crc_is_on_when_either_side_asks(void **state)
{
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++) {
			struct mpa_policy ip, rp;
			struct outcome o;
			mpa_policy_default(&ip);
			mpa_policy_default(&rp);
			ip.crc = a;
			rp.crc = b;
			exchange(&ip, &rp, &o);
			assert_int_equal(o.resp_rc, 0);
			assert_int_equal(o.init_rc, 0);
			assert_int_equal(o.init.crc, a || b);
			assert_int_equal(o.resp.crc, a || b);
		}
}

static void crc_refusal_rejects_a_peer_that_wants_crc(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	rp.crc = false;
	rp.crc_refuse = true;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, -ECONNREFUSED);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_CRC);
	assert_true(o.resp_v.send_reject);
	/* the initiator sees the Reject */
	assert_true(o.rep.reject);
	assert_int_equal(o.init_rc, -ECONNREFUSED);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_PEER_REJECTED);

	/* and an initiator that refuses CRC refuses a Reply with C=1 */
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.crc = false;
	ip.crc_refuse = true;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.init_rc, -ECONNREFUSED);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_CRC);
	assert_int_equal(o.init_v.llp_ecode, 0);
}

/* M means "send me markers": negotiated per direction. */
static void markers_are_negotiated_per_direction(void **state)
{
	for (int a = 0; a < 2; a++)
		for (int b = 0; b < 2; b++) {
			struct mpa_policy ip, rp;
			struct outcome o;
			mpa_policy_default(&ip);
			mpa_policy_default(&rp);
			ip.markers_rx = a;
			rp.markers_rx = b;
			exchange(&ip, &rp, &o);
			assert_int_equal(o.init_rc, 0);
			assert_int_equal(o.req.markers, a);
			assert_int_equal(o.rep.markers, b);
			assert_int_equal(o.init.markers_rx, a);
			assert_int_equal(o.resp.markers_tx, a);
			assert_int_equal(o.resp.markers_rx, b);
			assert_int_equal(o.init.markers_tx, b);
		}
}

/* Like siw: a peer that cannot send markers rejects a Request with M=1. */
static void markers_refused_by_a_peer_that_cannot_send_them(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.markers_rx = true;
	rp.markers_tx = false;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, -ECONNREFUSED);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_MARKERS);
	assert_true(o.resp_v.send_reject);
	assert_true(o.rep.reject);
	assert_false(o.rep.markers);
	assert_true(o.rep.enhanced); /* a zeroed block, as siw sends */
	assert_int_equal(o.rep.ird, 0);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_PEER_REJECTED);

	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	rp.markers_rx = true;
	ip.markers_tx = false;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.init_rc, -ECONNREFUSED);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_MARKERS);
}

static void ird_ord_relaxed_lowers_ord(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.ird = 4;
	ip.ord = 8;
	rp.ird = 2;
	rp.ord = 16;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.init_rc, 0);
	/* responder: issues at most the initiator's IRD, holds its own IRD */
	assert_int_equal(o.resp.ord, 4);
	assert_int_equal(o.resp.ird, 2);
	/* initiator: lowers its ORD to the responder's IRD */
	assert_int_equal(o.init.ord, 2);
	assert_int_equal(o.init.ird, 4);
}

static void ird_ord_strict_refuses_with_0x06(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.ord = 8;
	rp.ird = 2;
	rp.relaxed_ird = false;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, -ECONNREFUSED);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_IRD);
	assert_int_equal(o.resp_v.llp_ecode, UW_MPA_ECODE_INSUFFICIENT_IRD);

	/* strict initiator, relaxed responder: the Reply's IRD is too small */
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.ord = 8;
	ip.relaxed_ird = false;
	rp.ird = 2;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.init_rc, -ECONNREFUSED);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_IRD);
	assert_int_equal(o.init_v.llp_ecode, UW_MPA_ECODE_INSUFFICIENT_IRD);
	assert_false(o.init_v.send_reject);
}

/* A Reply whose ORD exceeds the IRD we advertised would overrun us. */
static void reply_ord_above_our_ird_is_0x06(void **state)
{
	struct mpa_policy ip;
	struct mpa_frame req, rep;
	struct mpa_params out;
	struct mpa_verdict v;
	mpa_policy_default(&ip);
	ip.ird = 3;
	mpa_request(&ip, NULL, 0, &req);
	rep = (struct mpa_frame){
		.type = MPA_FRAME_REPLY, .rev = 2, .enhanced = true, .ird = 16, .ord = 4
	};
	assert_int_equal(mpa_conclude(&ip, &req, &rep, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.reason, MPA_REFUSE_IRD);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_INSUFFICIENT_IRD);
	rep.ord = 3;
	assert_int_equal(mpa_conclude(&ip, &req, &rep, &out, &v), 0);
}

static void p2p_picks_one_rtr_write_first(void **state)
{
	static const struct {
		uint8_t offer, accept, chosen;
	} cases[] = {
		{ MPA_RTR_ALL, MPA_RTR_ALL, MPA_RTR_WRITE },
		{ MPA_RTR_READ | MPA_RTR_SEND, MPA_RTR_ALL, MPA_RTR_READ },
		{ MPA_RTR_SEND, MPA_RTR_ALL, MPA_RTR_SEND },
		{ MPA_RTR_ALL, MPA_RTR_SEND, MPA_RTR_SEND },
		{ MPA_RTR_WRITE | MPA_RTR_READ, MPA_RTR_READ, MPA_RTR_READ },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct mpa_policy ip, rp;
		struct outcome o;
		mpa_policy_default(&ip);
		mpa_policy_default(&rp);
		ip.p2p_request = true;
		ip.rtr_types = cases[i].offer;
		rp.rtr_types = cases[i].accept;
		exchange(&ip, &rp, &o);
		assert_true(o.req.p2p);
		assert_int_equal(o.req.rtr, cases[i].offer);
		assert_int_equal(o.resp_rc, 0);
		assert_int_equal(o.init_rc, 0);
		assert_true(o.rep.p2p);
		assert_int_equal(o.rep.rtr, cases[i].chosen);
		assert_int_equal(o.init.rtr, cases[i].chosen);
		assert_int_equal(o.resp.rtr, cases[i].chosen);
		assert_true(o.init.p2p && o.resp.p2p);
	}
}

static void p2p_without_a_common_rtr_is_0x07(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.p2p_request = true;
	ip.rtr_types = MPA_RTR_WRITE;
	rp.rtr_types = MPA_RTR_SEND | MPA_RTR_READ;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, -ECONNREFUSED);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_RTR);
	assert_int_equal(o.resp_v.llp_ecode, UW_MPA_ECODE_NO_MATCHING_RTR);
	assert_true(o.resp_v.send_reject);

	/* a responder that does not do P2P at all */
	rp.rtr_types = MPA_RTR_ALL;
	rp.p2p_accept = false;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_RTR);

	/* a Read RTR needs IRD at the responder and ORD at the initiator */
	mpa_policy_default(&rp);
	ip.rtr_types = MPA_RTR_READ;
	ip.ord = 0;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_RTR);
}

/* The initiator checks the responder's RTR choice. */
static void bad_rtr_choice_in_reply_is_0x07(void **state)
{
	struct mpa_policy ip;
	struct mpa_frame req, rep;
	struct mpa_params out;
	struct mpa_verdict v;
	mpa_policy_default(&ip);
	ip.p2p_request = true;
	ip.rtr_types = MPA_RTR_WRITE | MPA_RTR_READ;
	mpa_request(&ip, NULL, 0, &req);
	struct mpa_frame good = { .type = MPA_FRAME_REPLY,
				  .rev = 2,
				  .enhanced = true,
				  .ird = 16,
				  .ord = 16,
				  .p2p = true,
				  .rtr = MPA_RTR_WRITE };
	assert_int_equal(mpa_conclude(&ip, &req, &good, &out, &v), 0);
	assert_int_equal(out.rtr, MPA_RTR_WRITE);

	const uint8_t bad_rtr[] = { 0, MPA_RTR_WRITE | MPA_RTR_READ, MPA_RTR_SEND };
	for (size_t i = 0; i < sizeof(bad_rtr); i++) {
		rep = good;
		rep.rtr = bad_rtr[i];
		assert_int_equal(mpa_conclude(&ip, &req, &rep, &out, &v), -ECONNREFUSED);
		assert_int_equal(v.llp_ecode, UW_MPA_ECODE_NO_MATCHING_RTR);
	}
	rep = good;
	rep.p2p = false; /* A not echoed */
	assert_int_equal(mpa_conclude(&ip, &req, &rep, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.reason, MPA_REFUSE_RTR);
	rep = good;
	rep.enhanced = false; /* no block at all */
	rep.rev = 1;
	assert_int_equal(mpa_conclude(&ip, &req, &rep, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_NO_MATCHING_RTR);
}

static void revision_1_peers_run_without_the_block(void **state)
{
	struct mpa_policy ip, rp;
	struct outcome o;
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.rev = 1;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_rc, 0);
	assert_int_equal(o.rep.rev, 1);
	assert_false(o.rep.enhanced);
	assert_int_equal(o.init_rc, 0);
	assert_false(o.init.enhanced);
	assert_int_equal(o.init.rev, 1);

	/* our Rev 2 Request answered in Rev 1 */
	mpa_policy_default(&ip);
	rp.rev = 1;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.rep.rev, 1);
	assert_int_equal(o.init_rc, 0);
	assert_false(o.init.enhanced);

	/* unless we insist on RFC 6581, as siw does as initiator */
	ip.require_enhanced = true;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.init_rc, -ECONNREFUSED);
	assert_int_equal(o.init_v.reason, MPA_REFUSE_NOT_ENHANCED);

	/* and a responder that insists rejects a Rev 1 Request */
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	ip.rev = 1;
	rp.require_enhanced = true;
	exchange(&ip, &rp, &o);
	assert_int_equal(o.resp_v.reason, MPA_REFUSE_NOT_ENHANCED);
	assert_true(o.rep.reject);
}

/* The application refuses a connection: the initiator gets our private
 * data with the rejection. */
static void application_reject_carries_private_data(void **state)
{
	struct mpa_policy ip, rp;
	struct mpa_frame req, rej, got;
	struct mpa_params out;
	struct mpa_verdict v;
	uint8_t buf[600];
	mpa_policy_default(&ip);
	mpa_policy_default(&rp);
	mpa_request(&ip, NULL, 0, &req);
	mpa_reject_reply(&rp, &req, (const uint8_t *)"go away", 7, &rej);
	ssize_t n = mpa_frame_encode(&rej, buf, sizeof(buf));
	assert_int_equal(n, 20 + 4 + 7);
	assert_int_equal(buf[MPA_OFF_FLAGS] & MPA_FLAG_R, MPA_FLAG_R);
	assert_int_equal(mpa_frame_decode(buf, (size_t)n, 512, &got), n);
	assert_int_equal(mpa_conclude(&ip, &req, &got, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.reason, MPA_REFUSE_PEER_REJECTED);
	assert_int_equal(got.pdata_len, 7);
	assert_memory_equal(got.pdata, "go away", 7);
	assert_string_equal(mpa_refusal_str(v.reason), "rejected by the peer");
}

static void wrong_frame_type_or_revision_is_0x04(void **state)
{
	struct mpa_policy p;
	struct mpa_frame req, rep;
	struct mpa_params out;
	struct mpa_verdict v;
	mpa_policy_default(&p);
	mpa_request(&p, NULL, 0, &req);
	/* a Request where a Reply belongs */
	assert_int_equal(mpa_conclude(&p, &req, &req, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.reason, MPA_REFUSE_BAD_FRAME);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_BAD_FRAME);
	/* a Reply where a Request belongs */
	rep = req;
	rep.type = MPA_FRAME_REPLY;
	assert_int_equal(mpa_respond(&p, &rep, NULL, 0, &req, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_BAD_FRAME);
	assert_false(v.send_reject);
	/* a Reply with a higher revision than we asked for */
	p.rev = 1;
	mpa_request(&p, NULL, 0, &req);
	rep = (struct mpa_frame){ .type = MPA_FRAME_REPLY, .rev = 2 };
	assert_int_equal(mpa_conclude(&p, &req, &rep, &out, &v), -ECONNREFUSED);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_BAD_FRAME);
	mpa_verdict_bad_frame(&v);
	assert_int_equal(v.llp_ecode, UW_MPA_ECODE_BAD_FRAME);
}

/* Random policies on both ends: whenever both accept, what they run with
 * is consistent. */
static void random_policies_agree_when_accepted(void **state)
{
	uint32_t s = 7;
	int accepted = 0;
	for (int trial = 0; trial < 20000; trial++) {
		struct mpa_policy p[2];
		struct outcome o;
		for (int k = 0; k < 2; k++) {
#define R() (s ^= s << 13, s ^= s >> 17, s ^= s << 5, s)
			mpa_policy_default(&p[k]);
			p[k].rev = (uint8_t)(1 + R() % 2);
			p[k].enhanced = R() & 1;
			p[k].crc = R() & 1;
			p[k].crc_refuse = !p[k].crc && (R() % 4 == 0);
			p[k].markers_rx = R() & 1;
			p[k].markers_tx = R() % 4 != 0;
			p[k].ird = (uint16_t)(R() % 40);
			p[k].ord = (uint16_t)(R() % 40);
			p[k].relaxed_ird = R() & 1;
			p[k].p2p_request = R() & 1;
			p[k].p2p_accept = R() % 4 != 0;
			p[k].rtr_types = (uint8_t)(R() % 8);
		}
		exchange(&p[0], &p[1], &o);
		if (o.resp_rc || o.init_rc)
			continue;
		accepted++;
		assert_int_equal(o.init.crc, o.resp.crc);
		assert_int_equal(o.init.markers_tx, o.resp.markers_rx);
		assert_int_equal(o.init.markers_rx, o.resp.markers_tx);
		assert_int_equal(o.init.rev, o.resp.rev);
		assert_int_equal(o.init.enhanced, o.resp.enhanced);
		assert_int_equal(o.init.p2p, o.resp.p2p);
		assert_int_equal(o.init.rtr, o.resp.rtr);
		if (o.init.enhanced) {
			assert_true(o.init.ord <= o.resp.ird);
			assert_true(o.resp.ord <= o.init.ird);
		}
		if (o.init.p2p)
			assert_true(o.init.rtr && !(o.init.rtr & (o.init.rtr - 1)));
	}
	assert_true(accepted > 1000);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(defaults_agree_on_rev2_enhanced_crc),
		cmocka_unit_test(answers_siw_initiator_as_siw_needs),
		cmocka_unit_test(crc_is_on_when_either_side_asks),
		cmocka_unit_test(crc_refusal_rejects_a_peer_that_wants_crc),
		cmocka_unit_test(markers_are_negotiated_per_direction),
		cmocka_unit_test(markers_refused_by_a_peer_that_cannot_send_them),
		cmocka_unit_test(ird_ord_relaxed_lowers_ord),
		cmocka_unit_test(ird_ord_strict_refuses_with_0x06),
		cmocka_unit_test(reply_ord_above_our_ird_is_0x06),
		cmocka_unit_test(p2p_picks_one_rtr_write_first),
		cmocka_unit_test(p2p_without_a_common_rtr_is_0x07),
		cmocka_unit_test(bad_rtr_choice_in_reply_is_0x07),
		cmocka_unit_test(revision_1_peers_run_without_the_block),
		cmocka_unit_test(application_reject_carries_private_data),
		cmocka_unit_test(wrong_frame_type_or_revision_is_0x04),
		cmocka_unit_test(random_policies_agree_when_accepted),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
