/*
 * fuzz_rdmap_rx.c: the DDP/RDMAP receive core with memory validation,
 * behind the FPDU parser with CRC off so every mutation reaches it.
 *
 * Input: a selector byte (RFC 7306 on/off, IRD, posted receives), then the
 * byte stream a peer sends. The receiver owns one region between guard
 * bands and posted receives inside guarded memory. Whatever arrives: no
 * byte outside those lands anywhere, a failure always has an RFC 6580 code
 * whose Terminate decodes back to it, and a failed stream accepts nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_check.h"
#include "tools/lib/rdmap_sim.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define GUARD 256
#define REGION 8192
#define RECVLEN 2048

static uint8_t arena[GUARD + REGION + GUARD + 4 * (RECVLEN + GUARD)];

static int guards_ok(void)
{
	for (size_t i = 0; i < GUARD; i++)
		if (arena[i] != 0xEE || arena[GUARD + REGION + i] != 0xEE)
			return 0;
	for (int r = 0; r < 4; r++) {
		const uint8_t *g =
			arena + GUARD + REGION + GUARD + (size_t)r * (RECVLEN + GUARD) + RECVLEN;
		for (size_t i = 0; i < GUARD; i++)
			if (g[i] != 0xEE)
				return 0;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sim_end b, peer;
	if (size < 1)
		return 0;
	uint8_t sel = data[0];
	data++;
	size--;

	struct sim_cfg cfg = { .crc = false,
			       .rfc7306 = sel & 1,
			       .ird = (uint16_t)((sel >> 1) & 3),
			       .ord = 4,
			       .mulpdu = 1454,
			       .pd = 1,
			       .qp = 1 };
	memset(arena, 0xEE, sizeof(arena));
	memset(arena + GUARD, 0, REGION);
	sim_end_init(&b, &cfg);
	sim_end_init(&peer, &cfg);
	uint32_t all = DDP_LOCAL_WRITE | DDP_REMOTE_WRITE | DDP_REMOTE_READ | DDP_REMOTE_ATOMIC;
	/* STags 0x1xx..0x3xx: the keys come from a fixed seed, so seeds and
	 * mutations can name them */
	sim_mem_add(&b.mem, arena + GUARD, 0, REGION, all, 1, 0, false);
	sim_mem_add(&b.mem, arena + GUARD, 0x1000, REGION / 2, DDP_REMOTE_READ, 1, 0, true);
	sim_mem_add(&b.mem, arena + GUARD + REGION / 2, 0, REGION / 2, all, 2, 0, false);
	for (int r = 0; r < ((sel >> 3) & 3) + 1; r++) {
		uint8_t *p = arena + GUARD + REGION + GUARD + (size_t)r * (RECVLEN + GUARD);
		struct iovec sge[2] = { { p, RECVLEN / 2 }, { p + RECVLEN / 2, RECVLEN / 2 } };
		sim_rq_post(&b.rq, sge, 2);
	}

	/* feed in pieces chosen by the selector's top bits */
	size_t piece = (sel & 0x80) ? 1 + (size_t)(sel & 0x60) : size + 1, off = 0;
	int rc = 0;
	while (off < size) {
		size_t k = size - off < piece ? size - off : piece;
		rc = sim_end_feed(&b, data + off, k);
		off += k;
		if (rc)
			break;
		struct sim_wire w = { 0 };
		sim_end_respond(&b, &w); /* Read and Atomic Responses go out */
		sim_wire_free(&w);
	}
	FUZZ_CHECK(guards_ok());
	if (rc) {
		FUZZ_CHECK(b.failed);
		if (b.conn.state == RDMAP_TERMINATING) {
			FUZZ_CHECK(b.err.layer <= UW_TERM_LAYER_LLP && b.err.what);
			/* our Terminate says what we found */
			struct sim_wire t = { 0 };
			sim_end_terminate(&b, &t);
			sim_end_feed(&peer, t.b, t.len);
			FUZZ_CHECK(peer.nev == 1 && peer.ev[0].kind == RDMAP_EV_TERMINATE);
			FUZZ_CHECK(peer.ev[0].term.rfc.layer == b.err.layer &&
				   peer.ev[0].term.rfc.etype == b.err.etype &&
				   peer.ev[0].term.rfc.ecode == b.err.ecode);
			sim_wire_free(&t);
		} else {
			FUZZ_CHECK(b.conn.state == RDMAP_PEER_TERMINATED);
		}
		FUZZ_CHECK(sim_end_feed(&b, (const uint8_t *)"\0\x0e", 2) != 0);
	}
	FUZZ_CHECK(rc || rdmap_irq_count(&b.conn) == 0);
	sim_end_fini(&b);
	sim_end_fini(&peer);
	return 0;
}
