/*
 * test_ddpmode.c: ESOCK_DDPMODE and ESOCK_PEEK_MS as the preload and the
 * ES-API read them, and the MPA key a DDP-mode server sorts clients by
 * (util/ddpmode.h): "all" in any case, ports separated by commas or
 * white space, and anything it cannot read refused whole with a reason.
 * Before, "ALL" and "5201 6379" silently selected no socket, and "80,x"
 * took 80 and dropped the rest without a word.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "util/ddpmode.h"

struct row {
	const char *v;
	bool ok, all;
	int nports;
	uint16_t ports[3];
	const char *why; /* part of the reason, when refused */
};

static const struct row rows[] = {
	{ NULL, true, false, 0, { 0 }, NULL },
	{ "", true, false, 0, { 0 }, NULL },
	{ " , ", true, false, 0, { 0 }, NULL },
	{ "all", true, true, 0, { 0 }, NULL },
	{ "ALL", true, true, 0, { 0 }, NULL },
	{ " All ", true, true, 0, { 0 }, NULL },
	{ "5201", true, false, 1, { 5201 }, NULL },
	{ "5201,6379", true, false, 2, { 5201, 6379 }, NULL },
	{ "5201 6379", true, false, 2, { 5201, 6379 }, NULL },
	{ "5201, 6379,\t80", true, false, 3, { 5201, 6379, 80 }, NULL },
	{ "1,65535", true, false, 2, { 1, 65535 }, NULL },
	{ "80,x", false, false, 0, { 0 }, "'x' is not a port" },
	{ "0", false, false, 0, { 0 }, "'0' is not a port" },
	{ "65536", false, false, 0, { 0 }, "'65536' is not a port" },
	{ "-5", false, false, 0, { 0 }, "'-5' is not a port" },
	{ "+5", false, false, 0, { 0 }, "'+5' is not a port" },
	{ "80x", false, false, 0, { 0 }, "'80x' is not a port" },
	{ "all 80", false, false, 0, { 0 }, "'all' and more" },
	{ "yes", false, false, 0, { 0 }, "'yes' is not a port" },
};

static void every_value_is_read_or_refused_whole(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		const struct row *r = &rows[i];
		struct util_ddpmode m;
		char why[128] = "";
		print_message("ESOCK_DDPMODE=%s%s%s\n", r->v ? "'" : "", r->v ? r->v : "(unset)",
			      r->v ? "'" : "");
		assert_int_equal(util_ddpmode_parse(r->v, &m, why, sizeof(why)), r->ok);
		assert_int_equal(m.all, r->all);
		assert_int_equal(m.nports, r->nports);
		for (int k = 0; k < r->nports; k++)
			assert_int_equal(m.ports[k], r->ports[k]);
		if (r->why)
			assert_non_null(strstr(why, r->why));
	}
}

static void more_ports_than_it_holds_are_refused(void **state)
{
	(void)state;
	char v[65 * 6 + 1] = "", why[128];
	for (int i = 0; i < 65; i++)
		snprintf(v + strlen(v), sizeof(v) - strlen(v), "%d,", 1000 + i);
	struct util_ddpmode m;
	assert_false(util_ddpmode_parse(v, &m, why, sizeof(why)));
	assert_int_equal(m.nports, 0);
	assert_non_null(strstr(why, "more than 64 ports"));
	v[64 * 5] = '\0'; /* the first 64: taken */
	assert_true(util_ddpmode_parse(v, &m, why, sizeof(why)));
	assert_int_equal(m.nports, 64);
}

/* a DDP-mode server's sorting of its clients by their first bytes */
static void a_client_is_mpa_only_by_the_whole_key(void **state)
{
	(void)state;
	const uint8_t *k = (const uint8_t *)"MPA ID Req Frame\x81";
	assert_int_equal(util_mpa_request_verdict(k, 17), 1);
	assert_int_equal(util_mpa_request_verdict(k, 16), 1);
	assert_int_equal(util_mpa_request_verdict(k, 15), -1); /* wait for more */
	assert_int_equal(util_mpa_request_verdict(k, 1), -1);
	assert_int_equal(util_mpa_request_verdict(k, 0), 0); /* the end */
	assert_int_equal(util_mpa_request_verdict((const uint8_t *)"MPA ID Rep Frame", 16), 0);
	assert_int_equal(util_mpa_request_verdict((const uint8_t *)"GET / HTTP/1.1\r\n", 16), 0);
	assert_int_equal(util_mpa_request_verdict((const uint8_t *)"MPA IX", 6), 0);
}

static void peek_ms_is_read_or_refused(void **state)
{
	(void)state;
	unsigned ms = 1;
	assert_true(util_ddpmode_peek_ms(NULL, &ms));
	assert_int_equal(ms, UTIL_PEEK_MS_DEFAULT);
	assert_true(util_ddpmode_peek_ms("0", &ms));
	assert_int_equal(ms, 0);
	assert_true(util_ddpmode_peek_ms("60000", &ms));
	assert_int_equal(ms, 60000);
	const char *bad[] = { "60001", "-1", "abc", "10ms", " 5", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool ok = util_ddpmode_peek_ms(bad[i], &ms);
		assert_int_equal(ms, UTIL_PEEK_MS_DEFAULT);
		assert_true(ok == !*bad[i]); /* (empty: the default, as unset) */
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_value_is_read_or_refused_whole),
		cmocka_unit_test(more_ports_than_it_holds_are_refused),
		cmocka_unit_test(a_client_is_mpa_only_by_the_whole_key),
		cmocka_unit_test(peek_ms_is_read_or_refused),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
