/*
 * test_rdmap_offer.c: the RFC 7306 offer trailer in MPA private data
 * (rdmap/rdmap_offer.h; docs/wire-notes.md, "How uwarp peers agree on
 * RFC 7306"): what is appended is found again and taken off whole, the
 * application's own bytes untouched; private data without it, or with
 * something like it, is left as it is.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "rdmap/rdmap_offer.h"

static void an_appended_offer_is_found_and_stripped(void **state)
{
	uint8_t pd[64] = "hello";
	size_t len = rdmap_offer_append(pd, 5);
	assert_int_equal(len, 5 + RDMAP_OFFER_LEN);
	bool offered = false;
	assert_int_equal(rdmap_offer_strip(pd, len, &offered), 5);
	assert_true(offered);
	assert_memory_equal(pd, "hello", 5);
}

static void an_offer_alone_is_the_whole_private_data(void **state)
{
	uint8_t pd[RDMAP_OFFER_LEN];
	bool offered = false;
	assert_int_equal(rdmap_offer_strip(pd, rdmap_offer_append(pd, 0), &offered), 0);
	assert_true(offered);
}

static void private_data_without_it_is_left_whole(void **state)
{
	/* siw's peers, and a uwarp peer whose application turned it off */
	uint8_t pd[32];
	memset(pd, 0xab, sizeof(pd));
	bool offered = true;
	assert_int_equal(rdmap_offer_strip(pd, sizeof(pd), &offered), sizeof(pd));
	assert_false(offered);
	for (size_t n = 0; n < RDMAP_OFFER_LEN; n++) {
		offered = true;
		assert_int_equal(rdmap_offer_strip(pd, n, &offered), n);
		assert_false(offered);
	}
}

static void the_flag_bit_decides(void **state)
{
	/* the trailer with its flag clear is taken off but offers nothing */
	uint8_t pd[16] = "ab";
	size_t len = rdmap_offer_append(pd, 2);
	pd[len - 1] = 0;
	bool offered = true;
	assert_int_equal(rdmap_offer_strip(pd, len, &offered), 2);
	assert_false(offered);
}

static void a_near_miss_is_application_data(void **state)
{
	/* one byte of the magic wrong: the bytes are the application's */
	uint8_t pd[16] = "xy";
	size_t len = rdmap_offer_append(pd, 2);
	pd[2] ^= 0x20;
	bool offered = true;
	assert_int_equal(rdmap_offer_strip(pd, len, &offered), len);
	assert_false(offered);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(an_appended_offer_is_found_and_stripped),
		cmocka_unit_test(an_offer_alone_is_the_whole_private_data),
		cmocka_unit_test(private_data_without_it_is_left_whole),
		cmocka_unit_test(the_flag_bit_decides),
		cmocka_unit_test(a_near_miss_is_application_data),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
