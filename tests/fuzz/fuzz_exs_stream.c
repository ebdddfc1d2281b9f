/*
 * fuzz_exs_stream.c: the dynamic stream protocol's two state machines
 * (exs/stream_proto.h), in all four modes (the paper's rules too), fed
 * what a hostile peer could send: ADVERTs, ACKs, PHASE messages and direct
 * and indirect transfer notifications with any field values, between the
 * local application's posts and steps.
 *
 * Input: a sequence of 12-byte records, each an operation and its numbers.
 * Whatever comes: nothing crashes, the receiver never counts more in its
 * ring than the ring holds nor fills a receive past its length, a direct
 * transfer is accepted only into the head receive at its next byte, and
 * the sender never has more unacknowledged ring bytes than the ring.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_check.h"
#include "exs/stream_proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint32_t u32(const uint8_t *p)
{
	return (uint32_t)p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

static void invariants(const struct exs_sp_tx *t, const struct exs_sp_rx *r)
{
	FUZZ_CHECK(r->ring_in - r->ring_out <= r->ring_size);
	FUZZ_CHECK(r->ring_acked <= r->ring_out && r->ring_out <= r->ring_in);
	FUZZ_CHECK(r->count <= EXS_SP_MAX_RECVS);
	for (unsigned i = 0; i < r->count; i++) {
		const struct exs_sp_recv *v = &r->q[(r->head + i) % EXS_SP_MAX_RECVS];
		FUZZ_CHECK(v->filled <= v->len);
	}
	FUZZ_CHECK(t->ring_written - t->ring_acked <= t->ring_size);
	FUZZ_CHECK(t->count <= EXS_SP_MAX_ADVERTS);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct exs_sp_tx t;
	static struct exs_sp_rx r;
	if (size < 1)
		return 0;
	static const uint64_t rings[] = { 64, 200, 4096, 65536 };
	enum exs_sp_mode mode = (enum exs_sp_mode)(data[0] % 4);
	exs_sp_tx_init(&t, mode, rings[(data[0] >> 2) % 4]);
	exs_sp_rx_init(&r, mode, rings[(data[0] >> 4) % 4]);
	for (size_t i = 1; i + 12 <= size; i += 12) {
		const uint8_t *p = data + i;
		uint32_t a = u32(p + 4), b = u32(p + 8);
		uint8_t op = p[0] % 12, x = p[1], y = p[2], z = p[3];
		switch (op) {
		case 0: { /* the application posts a receive */
			uint32_t id;
			exs_sp_rx_post(&r, 1 + a % 100000, x & 1, &id);
			break;
		}
		case 1: { /* an ADVERT from the peer, any fields */
			struct exs_sp_advert adv = { .id = a,
						     .phase = x,
						     .seq = b,
						     .off = y,
						     .len = z ? (uint32_t)z << (x % 16) : 0,
						     .waitall = y & 1 };
			exs_sp_tx_advert(&t, &adv);
			break;
		}
		case 2:
			exs_sp_tx_ack(&t, b);
			break;
		case 3: { /* the sender decides, for a bytes */
			struct exs_sp_xfer xf;
			if (exs_sp_tx_next(&t, a % 200000, &xf) == 1)
				FUZZ_CHECK(xf.len > 0 && xf.len <= a % 200000);
			break;
		}
		case 4: { /* a direct notification, any fields */
			unsigned before = r.count;
			uint32_t head_id = r.count ? r.q[r.head].id : 0;
			uint32_t head_filled = r.count ? r.q[r.head].filled : 0;
			if (!exs_sp_rx_direct(&r, x, a, b % 200000, 1 + z * (uint32_t)y)) {
				/* the safety property: only into the head, at its next byte */
				FUZZ_CHECK(before && head_id == a && head_filled == b % 200000);
			}
			break;
		}
		case 5:
			exs_sp_rx_indirect(&r, x, b % 70000, a % 70000);
			break;
		case 6:
			exs_sp_rx_phase(&r, a);
			break;
		case 7: {
			struct exs_sp_copy cp;
			if (exs_sp_rx_drain(&r, &cp) == 1)
				FUZZ_CHECK(cp.len > 0 && cp.ring_off + cp.len <= r.ring_size);
			break;
		}
		case 8: {
			uint32_t id, n;
			exs_sp_rx_complete(&r, &id, &n);
			struct exs_sp_advert adv;
			exs_sp_rx_advert(&r, &adv);
			break;
		}
		case 9: {
			uint64_t d;
			uint32_t ph;
			exs_sp_rx_ack_due(&r, &d);
			exs_sp_tx_phase_due(&t, &ph);
			exs_sp_tx_hold_due(&t, &d);
			if (exs_sp_rx_idle_due(&r, &d))
				FUZZ_CHECK(d == r.arrived && !r.count);
			break;
		}
		case 10: /* a HOLD, any position: only where the stream stands */
			if (!exs_sp_rx_hold(&r, b))
				FUZZ_CHECK(b == r.arrived && mode == EXS_SP_DYNAMIC);
			break;
		case 11: /* an IDLE, any position: never past what was sent */
			if (!exs_sp_tx_idle(&t, b))
				FUZZ_CHECK(b <= t.seq);
			break;
		}
		invariants(&t, &r);
	}
	return 0;
}
