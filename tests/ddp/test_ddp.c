/*
 * test_ddp.c: DDP headers, segmentation, scatter/gather walking and the
 * tagged buffer check, away from RDMAP.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ddp/ddp_hdr.h"
#include "ddp/ddp_mem.h"
#include "ddp/ddp_rx.h"
#include "ddp/ddp_segment.h"

/* Byte 0 and 1 of common FPDUs' ULPDUs (RFC 5041 section 4, RFC 5040
 * section 4). */
static void control_bytes_of_common_messages(void **state)
{
	static const struct {
		bool tagged, last;
		uint8_t rdmap, b0;
	} rows[] = {
		{ true, true, 0x40, 0xc1 },   { false, true, 0x41, 0x41 },
		{ true, true, 0x42, 0xc1 },   { false, true, 0x43, 0x41 },
		{ false, true, 0x47, 0x41 },  { true, false, 0x40, 0x81 },
		{ false, false, 0x43, 0x01 },
	};
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		struct ddp_hdr h = { .tagged = rows[i].tagged,
				     .last = rows[i].last,
				     .dv = 1,
				     .ulp_ctrl = rows[i].rdmap };
		uint8_t b[18];
		assert_int_equal(ddp_hdr_encode(&h, b), rows[i].tagged ? 14 : 18);
		assert_int_equal(b[0], rows[i].b0);
		assert_int_equal(b[1], rows[i].rdmap);
	}
}

static void header_round_trip(void **state)
{
	struct ddp_hdr t = { .tagged = true,
			     .last = false,
			     .dv = 1,
			     .ulp_ctrl = 0x40,
			     .stag = 0xdeadbeef,
			     .to = 0x0123456789abcdefull };
	struct ddp_hdr u = { .tagged = false,
			     .last = true,
			     .dv = 1,
			     .ulp_ctrl = 0x44,
			     .ulp_word = 0x11223344,
			     .qn = 2,
			     .msn = 0x80000001u,
			     .mo = 77 };
	struct ddp_hdr g;
	uint8_t b[18];
	assert_int_equal(ddp_hdr_encode(&t, b), 14);
	assert_int_equal(ddp_hdr_decode(b, 14, &g), 14);
	assert_true(g.tagged && !g.last && g.stag == t.stag && g.to == t.to && g.ulp_ctrl == 0x40);
	assert_int_equal(ddp_hdr_decode(b, 13, &g), 0);
	assert_int_equal(ddp_hdr_encode(&u, b), 18);
	assert_int_equal(ddp_hdr_decode(b, 18, &g), 18);
	assert_true(!g.tagged && g.last && g.ulp_word == u.ulp_word && g.qn == 2 &&
		    g.msn == u.msn && g.mo == 77);
	assert_int_equal(ddp_hdr_decode(b, 17, &g), 0);
	/* reserved bits are reported, never sent */
	b[0] |= 0x3c;
	assert_int_equal(ddp_hdr_decode(b, 18, &g), 18);
	assert_int_equal(g.rsvd, 0xf);
	assert_int_equal(ddp_hdr_encode(&g, b), 18);
	assert_int_equal(b[0] & 0x3c, 0);
}

static void segmentation_cuts_messages(void **state)
{
	struct ddp_hdr base = { .tagged = false, .dv = 1, .qn = 0, .msn = 9 }, h;
	struct ddp_segmenter s;
	uint64_t off;
	uint32_t n, total = 0, count = 0;
	ddp_segmenter_init(&s, &base, 1000, 300);
	while (ddp_segmenter_next(&s, &h, &off, &n)) {
		assert_int_equal(h.msn, 9);
		assert_int_equal(h.mo, off);
		assert_int_equal(off, total);
		assert_int_equal(h.last, total + n == 1000);
		total += n;
		count++;
	}
	assert_int_equal(total, 1000);
	assert_int_equal(count, 4);
	/* a zero-length message is one last segment */
	ddp_segmenter_init(&s, &base, 0, 300);
	assert_true(ddp_segmenter_next(&s, &h, &off, &n));
	assert_true(h.last);
	assert_int_equal(n, 0);
	assert_false(ddp_segmenter_next(&s, &h, &off, &n));
	/* tagged: TO advances */
	struct ddp_hdr tb = { .tagged = true, .dv = 1, .stag = 5, .to = 100 };
	ddp_segmenter_init(&s, &tb, 600, 300);
	assert_true(ddp_segmenter_next(&s, &h, &off, &n));
	assert_int_equal(h.to, 100);
	assert_false(h.last);
	assert_true(ddp_segmenter_next(&s, &h, &off, &n));
	assert_int_equal(h.to, 400);
	assert_true(h.last);
}

static void iov_cursor_walks_pieces(void **state)
{
	uint8_t b[100];
	struct iovec in[4] = { { b, 10 }, { b + 10, 0 }, { b + 10, 30 }, { b + 40, 60 } }, out[4];
	struct iov_cursor c;
	size_t took;
	iov_cursor_init(&c, in, 4);
	assert_int_equal(iov_cursor_take(&c, 15, out, 4, &took), 2);
	assert_int_equal(took, 15);
	assert_ptr_equal(out[1].iov_base, b + 10);
	assert_int_equal(out[1].iov_len, 5);
	assert_int_equal(iov_cursor_take(&c, 1000, out, 4, &took), 2);
	assert_int_equal(took, 85);
	assert_int_equal(iov_cursor_take(&c, 1, out, 4, &took), 0);
	assert_int_equal(took, 0);
	assert_int_equal(iov_total(in, 4), 100);
}

static struct ddp_region the_region;
static int lookup(void *ctx, uint32_t stag, struct ddp_region *r)
{
	if (stag != 0x100)
		return -1;
	*r = the_region;
	return 0;
}

/* A short writev's bytes: whole iovecs passed over, the one cut in the
 * middle shortened in place, nothing past the bytes touched. */
static void iov_advance_after_a_short_write(void **state)
{
	uint8_t a[10], b[20], c[5];
	struct iovec v[3] = { { a, 10 }, { b, 20 }, { c, 5 } };
	assert_int_equal(iov_advance(v, 3, 0), 0);
	assert_int_equal(iov_advance(v, 3, 10), 1); /* exactly the first */
	assert_ptr_equal(v[1].iov_base, b);
	assert_int_equal(iov_advance(v + 1, 2, 7), 0); /* into the second */
	assert_ptr_equal(v[1].iov_base, b + 7);
	assert_int_equal(v[1].iov_len, 13);
	assert_int_equal(iov_advance(v + 1, 2, 15), 1); /* its rest and 2 of the third */
	assert_ptr_equal(v[2].iov_base, c + 2);
	assert_int_equal(v[2].iov_len, 3);
	assert_int_equal(iov_advance(v + 2, 1, 3), 1);
}

static void tagged_check_order_and_bounds(void **state)
{
	static uint8_t mem[1000];
	struct ddp_mem m = { lookup, NULL, NULL };
	uint8_t *addr;
	the_region = (struct ddp_region){ mem, 5000, 1000, DDP_REMOTE_WRITE, 1, 0 };
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1000, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_OK);
	assert_ptr_equal(addr, mem);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5999, 1, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_OK);
	assert_ptr_equal(addr, mem + 999);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 6000, 0, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_OK);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5999, 2, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_BOUNDS);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 4999, 1, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_BOUNDS);
	assert_int_equal(ddp_check_tagged(&m, 0x100, UINT64_MAX, 2, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_TO_WRAP);
	assert_int_equal(ddp_check_tagged(&m, 0x101, 5000, 1, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	/* another PD's STag is as invalid as one that names nothing (no
	 * oracle: docs/wire-notes.md, "STags and isolation") */
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_REMOTE_WRITE, 2, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_REMOTE_READ, 1, 2, &addr),
			 DDP_TAG_ACCESS);
	/* an STag problem wins over bounds and rights, even out of bounds:
	 * a stranger's STag never earns a bounds answer */
	assert_int_equal(ddp_check_tagged(&m, 0x101, 0, 1, DDP_REMOTE_READ, 2, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 0, 1, DDP_REMOTE_READ, 2, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	/* a window bound to QP 7 */
	the_region.qp = 7;
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 0, 1, DDP_REMOTE_WRITE, 1, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_REMOTE_WRITE, 1, 7, &addr),
			 DDP_TAG_OK);
	/* a region with no remote rights is not a peer's to name at all, but
	 * still takes a Read Response (local rights) in its own sink */
	the_region = (struct ddp_region){ mem, 5000, 1000, DDP_LOCAL_WRITE, 1, 0 };
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_REMOTE_READ, 1, 2, &addr),
			 DDP_TAG_INVALID_STAG);
	assert_int_equal(ddp_check_tagged(&m, 0x100, 5000, 1, DDP_LOCAL_WRITE, 1, 2, &addr),
			 DDP_TAG_OK);
}

/* MSNs start at 1 on every queue; MO counts within a message. */
static void untagged_queue_state(void **state)
{
	struct ddp_rx rx;
	struct rddp_error e;
	ddp_rx_init(&rx, 3);
	struct ddp_hdr h = { .dv = 1, .qn = 0, .msn = 1, .mo = 0 };
	assert_int_equal(ddp_rx_check_untagged(&rx, &h, 10, 100, &e), 0);
	ddp_rx_commit_untagged(&rx, &h, 10);
	h.mo = 10;
	h.last = true;
	assert_int_equal(ddp_rx_check_untagged(&rx, &h, 90, 100, &e), 0);
	assert_int_not_equal(ddp_rx_check_untagged(&rx, &h, 91, 100, &e), 0);
	assert_int_equal(e.ecode, UW_DDP_U_TOO_LONG);
	ddp_rx_commit_untagged(&rx, &h, 90);
	h.msn = 2;
	h.mo = 0;
	assert_int_equal(ddp_rx_check_untagged(&rx, &h, 1, 1, &e), 0);
	h.qn = 3; /* RFC 7306 queues are off here */
	h.msn = 1;
	assert_int_not_equal(ddp_rx_check_untagged(&rx, &h, 1, 1, &e), 0);
	assert_int_equal(e.ecode, UW_DDP_U_INVALID_QN);
	ddp_rx_init(&rx, 5);
	assert_int_equal(ddp_rx_check_untagged(&rx, &h, 1, 1, &e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(control_bytes_of_common_messages),
		cmocka_unit_test(header_round_trip),
		cmocka_unit_test(segmentation_cuts_messages),
		cmocka_unit_test(iov_cursor_walks_pieces),
		cmocka_unit_test(iov_advance_after_a_short_write),
		cmocka_unit_test(tagged_check_order_and_bounds),
		cmocka_unit_test(untagged_queue_state),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
