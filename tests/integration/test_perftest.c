/*
 * test_perftest.c: uwarp-perf --perftest against itself over loopback, for
 * each of perftest's six tests: both ends follow perftest's -R protocol to
 * the end (every exchange, the test connection, the report) and print
 * their figures. Against the real perftest on siw: tests/interop/perftest.sh.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proc.h"

static const char *perf = UWARP_PERF_BIN;

static void run_perftest(const char *test, const char *want_client, const char *want_server)
{
	struct proc srv;
	char *sargv[] = {
		(char *)perf, "--perftest", (char *)test, "-p", "0", "--iters", "50", NULL
	};
	assert_int_equal(proc_start(&srv, sargv), 0);
	const char *l = proc_expect(&srv, "server on port ", 10000);
	assert_non_null(l);
	char port[16], out[8192];
	snprintf(port, sizeof(port), "%d", atoi(l + strlen("server on port ")));
	char *cargv[] = { (char *)perf, "--perftest", (char *)test, "-c",     "127.0.0.1", "-p",
			  port,         "--iters",    "50",         "--json", NULL };
	int rc = proc_run(cargv, 60000, out, sizeof(out));
	if (rc || !strstr(out, want_client))
		fprintf(stderr, "%s client: exit %d\n%s\n", test, rc, out);
	assert_int_equal(rc, 0);
	assert_non_null(strstr(out, want_client));
	/* the server ends by itself once the test is over, with its figures */
	assert_non_null(proc_expect(&srv, want_server, 30000));
	assert_true(proc_wait(&srv, 30000));
	assert_int_equal(proc_exit_code(&srv), 0);
	proc_end(&srv);
}

static void write_bw_completes_and_reports(void **state)
{
	run_perftest("write_bw", "\"bw_avg_mbs\":", "#bytes");
}
static void read_bw_completes_and_reports(void **state)
{
	run_perftest("read_bw", "\"bw_avg_mbs\":", "#bytes");
}
static void send_bw_completes_and_reports(void **state)
{
	run_perftest("send_bw", "\"bw_avg_mbs\":", "#bytes");
}
static void write_lat_completes_and_reports(void **state)
{
	run_perftest("write_lat", "\"t_typical_us\":", "#bytes");
}
static void read_lat_completes_and_reports(void **state)
{
	run_perftest("read_lat", "\"t_typical_us\":", "uwarp-perf");
}
static void send_lat_completes_and_reports(void **state)
{
	run_perftest("send_lat", "\"t_typical_us\":", "#bytes");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(write_bw_completes_and_reports),
		cmocka_unit_test(read_bw_completes_and_reports),
		cmocka_unit_test(send_bw_completes_and_reports),
		cmocka_unit_test(write_lat_completes_and_reports),
		cmocka_unit_test(read_lat_completes_and_reports),
		cmocka_unit_test(send_lat_completes_and_reports),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
