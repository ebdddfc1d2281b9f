/*
 * test_crc32c.c: CRC32c known answers, wire byte order, engine agreement,
 * incremental use over iovecs, and the residue property MPA relies on.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "mpa/be.h"
#include "mpa/crc32c.h"

typedef uint32_t (*engine_fn)(uint32_t, const void *, size_t);

static const struct {
	const char *name;
	engine_fn fn;
} engines[] = {
	{ "slicing-by-8", crc32c_update_sb8 },
#if UWARP_HAVE_ISAL
	{ "isa-l", crc32c_update_isal },
#endif
	{ "default", crc32c_update },
};
#define NENGINES (sizeof(engines) / sizeof(engines[0]))

static uint32_t one_shot(engine_fn fn, const void *p, size_t n)
{
	return crc32c_final(fn(CRC32C_INIT, p, n));
}

/* RFC 3720 B.4 and the check value of the CRC catalogue. */
static void known_answers_every_engine(void **state)
{
	uint8_t zeros[32], ones[32], inc[32], dec[32];
	memset(zeros, 0, sizeof(zeros));
	memset(ones, 0xff, sizeof(ones));
	for (int i = 0; i < 32; i++) {
		inc[i] = (uint8_t)i;
		dec[i] = (uint8_t)(31 - i);
	}
	for (size_t e = 0; e < NENGINES; e++) {
		engine_fn fn = engines[e].fn;
		assert_int_equal(one_shot(fn, "123456789", 9), 0xE3069283u);
		assert_int_equal(one_shot(fn, zeros, 32), 0x8A9136AAu);
		assert_int_equal(one_shot(fn, ones, 32), 0x62A8AB43u);
		assert_int_equal(one_shot(fn, inc, 32), 0x46DD794Eu);
		assert_int_equal(one_shot(fn, dec, 32), 0x113FDB5Cu);
		assert_int_equal(one_shot(fn, "", 0), 0u);
	}
}

/* The CRC travels as the little-endian image of its value. */
static void wire_bytes_are_little_endian(void **state)
{
	uint8_t zeros[32] = { 0 }, ones[32], w[4];
	memset(ones, 0xff, sizeof(ones));
	le32_put(w, crc32c(zeros, 32));
	assert_memory_equal(w, "\xaa\x36\x91\x8a", 4);
	le32_put(w, crc32c(ones, 32));
	assert_memory_equal(w, "\x43\xab\xa8\x62", 4);
}

static uint32_t rnd_state = 0x9e3779b9u;
static uint32_t rnd(void)
{
	uint32_t x = rnd_state;
	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return rnd_state = x;
}

/* Every length 0..4096 at a random alignment: all engines agree. */
static void engines_agree_on_random_buffers(void **state)
{
	uint8_t *buf = malloc(4096 + 64);
	assert_non_null(buf);
	for (size_t i = 0; i < 4096 + 64; i++)
		buf[i] = (uint8_t)rnd();
	for (size_t len = 0; len <= 4096; len++) {
		const uint8_t *p = buf + rnd() % 64;
		uint32_t seed = rnd();
		uint32_t ref = engines[0].fn(seed, p, len);
		for (size_t e = 1; e < NENGINES; e++)
			if (engines[e].fn(seed, p, len) != ref)
				fail_msg("%s differs from %s at len %zu align %zu", engines[e].name,
					 engines[0].name, len, (size_t)((uintptr_t)p & 63));
	}
	free(buf);
}

/* Feeding pieces (iovecs of any sizes) gives the same CRC as one shot. */
static void incremental_over_iovecs_matches_one_shot(void **state)
{
	uint8_t buf[3000];
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	uint32_t whole = crc32c(buf, sizeof(buf));
	for (int trial = 0; trial < 200; trial++) {
		struct iovec iov[16];
		size_t off = 0;
		int n = 0;
		while (off < sizeof(buf) && n < 15) {
			size_t k = rnd() % 400;
			if (k > sizeof(buf) - off)
				k = sizeof(buf) - off;
			iov[n++] = (struct iovec){ buf + off, k };
			off += k;
		}
		iov[n++] = (struct iovec){ buf + off, sizeof(buf) - off };
		assert_int_equal(crc32c_final(crc32c_update_iov(CRC32C_INIT, iov, n)), whole);
		for (size_t e = 0; e < NENGINES; e++) {
			uint32_t st = CRC32C_INIT;
			for (int i = 0; i < n; i++)
				st = engines[e].fn(st, iov[i].iov_base, iov[i].iov_len);
			assert_int_equal(crc32c_final(st), whole);
		}
	}
}

/* A message followed by its own wire CRC always checks to the residue:
 * the property that lets a receiver verify without locating the field. */
static void residue_after_own_crc(void **state)
{
	uint8_t buf[600];
	for (int trial = 0; trial < 300; trial++) {
		size_t len = rnd() % 590;
		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd();
		le32_put(buf + len, crc32c(buf, len));
		for (size_t e = 0; e < NENGINES; e++)
			assert_int_equal(one_shot(engines[e].fn, buf, len + 4), CRC32C_RESIDUE);
		/* and any single flipped bit breaks it */
		buf[rnd() % (len + 4)] ^= (uint8_t)(1u << (rnd() % 8));
		assert_int_not_equal(crc32c(buf, len + 4), CRC32C_RESIDUE);
	}
}

static void engine_name_matches_build(void **state)
{
#if UWARP_HAVE_ISAL
	assert_string_equal(crc32c_engine(), "isa-l");
#else
	assert_string_equal(crc32c_engine(), "slicing-by-8");
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(known_answers_every_engine),
		cmocka_unit_test(wire_bytes_are_little_endian),
		cmocka_unit_test(engines_agree_on_random_buffers),
		cmocka_unit_test(incremental_over_iovecs_matches_one_shot),
		cmocka_unit_test(residue_after_own_crc),
		cmocka_unit_test(engine_name_matches_build),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
