/*
 * fuzz_mpa_frame.c: the MPA frame decoder and both negotiation roles.
 *
 * Input: one selector byte (limits and policy), then the frame bytes as
 * they would arrive from a peer.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "mpa/mpa_negotiate.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_frame(const struct mpa_frame *a, const struct mpa_frame *b)
{
	FUZZ_CHECK(a->type == b->type && a->rev == b->rev && a->markers == b->markers);
	FUZZ_CHECK(a->crc == b->crc && a->reject == b->reject && a->enhanced == b->enhanced);
	FUZZ_CHECK(a->p2p == b->p2p && a->rtr == b->rtr && a->ird == b->ird && a->ord == b->ord);
	FUZZ_CHECK(a->pdata_len == b->pdata_len);
	FUZZ_CHECK(!a->pdata_len || !memcmp(a->pdata, b->pdata, a->pdata_len));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct mpa_frame f, g, reply;
	struct mpa_policy pol;
	struct mpa_params out;
	struct mpa_verdict v;
	uint8_t buf[MPA_FRAME_HDR_LEN + MPA_PD_MAX_RFC];

	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	data++;
	size--;
	uint16_t pd_max = (sel & 1) ? MPA_PD_MAX_SIW : MPA_PD_MAX_RFC;

	ssize_t n = mpa_frame_decode(data, size, pd_max, &f);
	FUZZ_CHECK(n == -EAGAIN || n == -EPROTO || n == -EPROTONOSUPPORT || n == -EMSGSIZE ||
		   n == -EBADMSG || (n >= MPA_FRAME_HDR_LEN && (size_t)n <= size));
	if (n <= 0)
		return 0;
	FUZZ_CHECK((size_t)n == MPA_FRAME_HDR_LEN + f.pdata_len + (f.enhanced ? 4u : 0u));
	FUZZ_CHECK(f.pdata_len <= pd_max);

	/* Every proper prefix of a good frame only asks for more bytes. */
	for (size_t k = 0; k < (size_t)n; k += 1 + k / 4)
		FUZZ_CHECK(mpa_frame_decode(data, k, pd_max, &g) == -EAGAIN);

	/* Re-encoding gives a frame that decodes to the same thing. */
	ssize_t m = mpa_frame_encode(&f, buf, sizeof(buf));
	FUZZ_CHECK(m == n);
	FUZZ_CHECK(mpa_frame_decode(buf, (size_t)m, pd_max, &g) == m);
	same_frame(&f, &g);

	mpa_policy_default(&pol);
	pol.pd_max = pd_max;
	pol.rev = (sel & 2) ? MPA_REV_1 : MPA_REV_2;
	pol.crc = sel & 4;
	pol.crc_refuse = !pol.crc && (sel & 8);
	pol.markers_tx = !(sel & 16);
	pol.relaxed_ird = !(sel & 32);
	pol.p2p_request = sel & 64;
	pol.require_enhanced = sel & 128;
	pol.ird = (uint16_t)(sel % 5);
	pol.ord = (uint16_t)(sel % 7);

	if (f.type == MPA_FRAME_REQUEST) {
		int rc = mpa_respond(&pol, &f, (const uint8_t *)"pd", 2, &reply, &out, &v);
		FUZZ_CHECK(rc == 0 || rc == -ECONNREFUSED);
		FUZZ_CHECK((rc == 0) == (v.reason == MPA_ACCEPTED));
		if (rc == 0 || v.send_reject) {
			/* whatever we answer must be a frame we can send */
			ssize_t r = mpa_frame_encode(&reply, buf, sizeof(buf));
			FUZZ_CHECK(r > 0);
			FUZZ_CHECK(reply.type == MPA_FRAME_REPLY && reply.rev <= f.rev);
			FUZZ_CHECK(rc != 0 || reply.reject == false);
		}
		if (rc == 0 && out.enhanced)
			FUZZ_CHECK(out.ord <= f.ird);
	} else {
		struct mpa_frame req;
		mpa_request(&pol, NULL, 0, &req);
		int rc = mpa_conclude(&pol, &req, &f, &out, &v);
		FUZZ_CHECK(rc == 0 || rc == -ECONNREFUSED);
		if (rc == 0) {
			FUZZ_CHECK(!f.reject);
			FUZZ_CHECK(out.ord <= req.ord || !out.enhanced);
			FUZZ_CHECK(!out.p2p || (out.rtr && !(out.rtr & (out.rtr - 1))));
		} else {
			FUZZ_CHECK(v.llp_ecode == 0 ||
				   (v.llp_ecode >= UW_MPA_ECODE_BAD_FRAME &&
				    v.llp_ecode <= UW_MPA_ECODE_NO_MATCHING_RTR));
		}
	}
	return 0;
}
