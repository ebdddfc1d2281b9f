/*
 * test_ops_matrix.c: every operation between two uwarp processes over
 * loopback, data verified byte for byte by uwarp-perf: sizes 0, 1, 4095,
 * 4096, 65535, 65536, 1 MiB and 64 MiB, 1 to 16 SGEs, CRC on and off,
 * markers on and off, MPA revision 1 and 2; both progress modes; echo
 * (latency) paths; a thousand QPs in one context.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proc.h"

static const char *perf = UWARP_PERF_BIN;

static int run_client(int port, const char *op, const char *size, const char *iters,
		      const char *sge, const char *crc, const char *markers, const char *rev,
		      const char *extra)
{
	char portbuf[16], out[4096];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	char *argv[32] = { (char *)perf, "-c",        "127.0.0.1",     "-p",
			   portbuf,      "--op",      (char *)op,      "--size",
			   (char *)size, "--iters",   (char *)iters,   "--depth",
			   "2",          "--sge",     (char *)sge,     "--crc",
			   (char *)crc,  "--markers", (char *)markers, "--rev",
			   (char *)rev };
	int n = 21;
	/* @extra: arguments separated by spaces */
	char more[64] = "";
	if (extra) {
		snprintf(more, sizeof(more), "%s", extra);
		for (char *a = strtok(more, " "); a && n < 30; a = strtok(NULL, " "))
			argv[n++] = a;
	}
	argv[n] = NULL;
	int rc = proc_run(argv, 120000, out, sizeof(out));
	if (rc != 0 || !strstr(out, "data verified")) {
		fprintf(stderr,
			"FAILED: %s size %s sge %s crc %s markers %s rev %s %s: exit %d\n%s\n", op,
			size, sge, crc, markers, rev, extra ? extra : "", rc, out);
		return -1;
	}
	return 0;
}

static void every_operation_size_and_mode(void **state)
{
	static const char *ops[] = { "send", "write", "read", "imm" };
	static const char *sizes[] = { "0",     "1",     "4095",    "4096",
				       "65535", "65536", "1048576", "67108864" };
	static const char *sges[] = { "1", "2", "7", "16" };
	int failures = 0, runs = 0;
	for (int cfg = 0; cfg < 8; cfg++) {
		const char *crc = cfg & 1 ? "on" : "off";
		const char *markers = cfg & 2 ? "on" : "off";
		const char *rev = cfg & 4 ? "1" : "2";
		struct proc srv;
		char *extra[] = { "--crc", (char *)crc, "--quiet", NULL };
		int port = perf_server_start(&srv, perf, extra);
		assert_true(port > 0);
		for (size_t o = 0; o < 4; o++)
			for (size_t s = 0; s < 8; s++) {
				const char *iters = s == 7 ? "2" : "5";
				runs++;
				failures +=
					run_client(port, ops[o], sizes[s], iters, sges[(o + s) % 4],
						   crc, markers, rev, NULL) != 0;
			}
		runs++;
		failures +=
			run_client(port, "atomic", "8", "50", "1", crc, markers, rev, NULL) != 0;
		proc_end(&srv);
	}
	fprintf(stderr, "%d runs, %d failed\n", runs, failures);
	assert_int_equal(failures, 0);
}

/* The echo paths: a Send echoed, Immediate Data echoed, a Write answered
 * by a Write, a Read, an atomic, one at a time; with both ends polling
 * (the default) and with waits that may sleep (--wait adaptive). */
static void latency_paths(void **state)
{
	static const char *ops[] = { "send", "write", "read", "imm", "atomic" };
	int failures = 0;
	for (int adaptive = 0; adaptive < 2; adaptive++) {
		struct proc srv;
		char *extra[] = { "--quiet", NULL };
		int port = perf_server_start(&srv, perf, extra);
		assert_true(port > 0);
		for (size_t o = 0; o < 5; o++)
			failures += run_client(port, ops[o], "4096", "200", "3", "on", "off", "2",
					       adaptive ? "--lat --wait adaptive" : "--lat") != 0;
		proc_end(&srv);
	}
	assert_int_equal(failures, 0);
}

/* Auto progress on either side. */
static void auto_progress_both_ends(void **state)
{
	struct proc srv;
	char *extra[] = { "--progress", "auto", "--quiet", NULL };
	int port = perf_server_start(&srv, perf, extra);
	assert_true(port > 0);
	int failures = 0;
	static const char *ops[] = { "send", "write", "read", "imm" };
	for (size_t o = 0; o < 4; o++) {
		char portbuf[16], out[4096];
		snprintf(portbuf, sizeof(portbuf), "%d", port);
		char *argv[] = { (char *)perf, "-c",         "127.0.0.1",    "-p",
				 portbuf,      "--op",       (char *)ops[o], "--size",
				 "100000",     "--iters",    "50",           "--depth",
				 "8",          "--progress", "auto",         NULL };
		int rc = proc_run(argv, 60000, out, sizeof(out));
		if (rc || !strstr(out, "data verified")) {
			fprintf(stderr, "auto %s: exit %d\n%s\n", ops[o], rc, out);
			failures++;
		}
	}
	proc_end(&srv);
	assert_int_equal(failures, 0);
}

/* A thousand QPs in one context, all exchanging traffic at once. */
static void a_thousand_qps_in_one_context(void **state)
{
	struct proc srv;
	char *extra[] = { "--quiet", NULL };
	int port = perf_server_start(&srv, perf, extra);
	assert_true(port > 0);
	char portbuf[16], out[8192];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	static const char *ops[] = { "send", "write" };
	for (size_t o = 0; o < 2; o++) {
		char *argv[] = { (char *)perf,
				 "-c",
				 "127.0.0.1",
				 "-p",
				 portbuf,
				 "--op",
				 (char *)ops[o],
				 "--size",
				 "4096",
				 "--iters",
				 "5",
				 "--depth",
				 "1",
				 "--qps",
				 "1000",
				 "--json",
				 NULL };
		int rc = proc_run(argv, 120000, out, sizeof(out));
		if (rc)
			fprintf(stderr, "%s\n", out);
		assert_int_equal(rc, 0);
		assert_non_null(strstr(out, "\"iters\":5000"));
		assert_non_null(strstr(out, "\"errors\":0"));
	}
	proc_end(&srv);
}

/* An argument picks the tests to run (a cmocka filter, e.g. "auto_*"):
 * the ThreadSanitizer build runs only the threaded ones. */
int main(int argc, char **argv)
{
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_operation_size_and_mode),
		cmocka_unit_test(latency_paths),
		cmocka_unit_test(auto_progress_both_ends),
		cmocka_unit_test(a_thousand_qps_in_one_context),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
