/*
 * fuzz_exs_wire.c: the decoders of what an ES-API peer sends (control
 * messages, the connection hello, Immediate Data notifications).
 *
 * Input: the first byte picks the decoder, the rest is the message.
 * Whatever it is, a decoder reads only those bytes, and what it accepts
 * encodes back to the same bytes (nothing it accepts is read two ways),
 * and obeys the limits the runtime relies on: adverts non-empty and
 * within 2^31, transfers below 2^30 and non-empty but for messages, the
 * cut flag only on messages, a peer's ring between 4 KiB and 256 MiB.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "exs/exs_wire.h"
#include "fuzz_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	uint8_t which = data[0] % 3;
	size--;
	uint8_t *p = malloc(size ? size : 1);
	memcpy(p, data + 1, size);
	if (which == 0) {
		struct exs_ctl m;
		if (exs_ctl_decode(p, (uint32_t)size, &m) == 0) {
			uint8_t back[EXS_CTL_LEN];
			FUZZ_CHECK(size == EXS_CTL_LEN);
			exs_ctl_encode(&m, back);
			FUZZ_CHECK(!memcmp(back, p, EXS_CTL_LEN));
			FUZZ_CHECK(m.type >= EXS_CTL_ADVERT && m.type < EXS_CTL_MAX_);
			if (m.type == EXS_CTL_ADVERT)
				FUZZ_CHECK(m.len && (uint64_t)m.off + m.len <= (1ull << 31));
			if (m.type == EXS_CTL_DATA) {
				unsigned kind = (m.flags & EXS_CTL_F_KIND) >> 2;
				FUZZ_CHECK(kind >= EXS_XFER_DIRECT && kind <= EXS_XFER_MESSAGE);
				FUZZ_CHECK(m.len <= EXS_XFER_MAX);
				FUZZ_CHECK(kind == EXS_XFER_MESSAGE || m.len);
				FUZZ_CHECK(!(m.flags & EXS_CTL_F_TRUNC) ||
					   kind == EXS_XFER_MESSAGE);
			}
		}
	} else if (which == 1) {
		struct exs_hello h;
		if (exs_hello_decode(p, (uint32_t)size, &h) == 0) {
			uint8_t back[EXS_HELLO_LEN];
			FUZZ_CHECK(size >= EXS_HELLO_MIN_LEN);
			exs_hello_encode(&h, back);
			/* what it read comes back; a hello too short for the
			 * features word (an older peer's) says none */
			size_t n = size >= EXS_HELLO_LEN ? EXS_HELLO_LEN : EXS_HELLO_MIN_LEN;
			FUZZ_CHECK(!memcmp(back, p, n));
			FUZZ_CHECK(size >= EXS_HELLO_LEN || h.features == 0);
			FUZZ_CHECK(h.credits > 0);
			if (h.type == EXS_WIRE_STREAM)
				FUZZ_CHECK(h.ring_size >= 4096 && h.ring_size <= (1u << 28));
		}
	} else if (size >= 8) {
		uint64_t imm = 0;
		for (int i = 0; i < 8; i++)
			imm = imm << 8 | p[i];
		struct exs_note n;
		if (exs_imm_unpack(imm, &n) == 0) {
			FUZZ_CHECK(n.kind >= EXS_XFER_DIRECT && n.kind <= EXS_XFER_MESSAGE);
			FUZZ_CHECK(n.len <= EXS_XFER_MAX);
			FUZZ_CHECK(n.kind == EXS_XFER_MESSAGE || n.len);
			FUZZ_CHECK(!n.trunc || n.kind == EXS_XFER_MESSAGE);
			FUZZ_CHECK(exs_imm_pack(&n) == imm);
			/* a widened phase keeps its low bits and lands near */
			uint32_t now = (uint32_t)size * 0x9e37u;
			uint32_t w = exs_phase_widen(now, n.phase & 0xffff);
			FUZZ_CHECK((w & 0xffff) == (n.phase & 0xffff));
			FUZZ_CHECK((int32_t)(w - now) >= -0x8000 && (int32_t)(w - now) < 0x8000);
		}
	}
	free(p);
	return 0;
}
