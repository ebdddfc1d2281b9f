/*
 * fuzz_term.c: the Terminate parser (rdmap_term_decode), which reads
 * whatever follows a peer's Terminate header in both the RFC's and siw's
 * layouts.
 *
 * Input: the bytes after the Terminate's DDP header. Whatever they are,
 * the parser reads only them, reports attachments only when whole, and
 * its RFC reading is the control word's bytes. Then a Terminate that
 * uwarp encodes from the input's first bytes (a code and which headers go
 * along) decodes back to the same code and attachments: the round trip
 * stays exact.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "rdmap/rdmap_term.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rdmap_term t;
	/* the parser works on a copy the size of the input: ASan sees a read
	 * past it */
	uint8_t *p = malloc(size ? size : 1);
	memcpy(p, data, size);
	int rc = rdmap_term_decode(p, size, &t);
	if (size < RDMAP_TERM_CTRL_LEN) {
		FUZZ_CHECK(rc != 0);
	} else {
		FUZZ_CHECK(rc == 0);
		FUZZ_CHECK(t.rfc.layer == p[0] >> 4 && t.rfc.etype == (p[0] & 0xf) &&
			   t.rfc.ecode == p[1]);
		FUZZ_CHECK(t.ddp_hdr_len == 0 || t.ddp_hdr_len == 14 || t.ddp_hdr_len == 18);
		FUZZ_CHECK(t.ddp_hdr_len <= size);
		if (t.has_rdmap_hdr)
			FUZZ_CHECK(size >= RDMAP_TERM_CTRL_LEN + RDMAP_TERM_RDMAP_HDR_LEN);
	}
	free(p);

	/* round trip: our own encoding reads back as what was meant */
	if (size < 3)
		return 0;
	struct rddp_error e = { .layer = (uint8_t)(data[0] % 3),
				.etype = data[0] >> 4,
				.ecode = data[1],
				.what = "fuzz" };
	uint8_t ddp[18] = { 0 }, rd[RDMAP_TERM_RDMAP_HDR_LEN] = { 0 };
	size_t ddp_len = data[2] & 1 ? (data[2] & 2 ? 14 : 18) : 0;
	memcpy(ddp, data + 3, size - 3 < sizeof(ddp) ? size - 3 : sizeof(ddp));
	if (ddp_len)
		ddp[0] = ddp_len == 14 ? 0xC1 : 0x41; /* T as the length says */
	bool with_rd = ddp_len && (data[2] & 4);
	uint8_t out[RDMAP_TERM_CTRL_LEN + RDMAP_TERM_MAX_PAYLOAD];
	size_t n =
		rdmap_term_encode(&e, 100, ddp_len ? ddp : NULL, ddp_len, with_rd ? rd : NULL, out);
	FUZZ_CHECK(n >= RDMAP_TERM_CTRL_LEN && n <= sizeof(out));
	FUZZ_CHECK(rdmap_term_decode(out, n, &t) == 0);
	FUZZ_CHECK(t.rfc.layer == e.layer && t.rfc.etype == (e.etype & 0xf) &&
		   t.rfc.ecode == e.ecode);
	FUZZ_CHECK(t.ddp_hdr_len == ddp_len);
	FUZZ_CHECK(t.has_rdmap_hdr == with_rd);
	return 0;
}
