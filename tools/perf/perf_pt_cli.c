/*
 * perf_pt_cli.c: the command line of uwarp-perf's perftest mode.
 *
 *   uwarp-perf --perftest write_bw|read_bw|send_bw|write_lat|read_lat|send_lat
 *              [-c HOST] [-p PORT] [--size N] [--iters N] [--crc on|off] [--json]
 *
 * Without -c it is the server (-p 0: a port of the kernel's choosing, which
 * it prints). The defaults are perftest's: port 18515,
 * 65536 bytes for bandwidth and 2 for latency, 5000 iterations for
 * write_bw and 1000 for the others; like perftest, both ends must be
 * given the same size and iterations.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "perf_pt.h"
#include "tools/lib/tool_opt.h"

/* perftest's limits on -n */
#define PT_MIN_ITERS 5
#define PT_MAX_ITERS 100000000ull

static const struct pt_test tests[] = {
	{ "write_bw", PT_WRITE, PT_BW }, { "read_bw", PT_READ, PT_BW },
	{ "send_bw", PT_SEND, PT_BW },   { "write_lat", PT_WRITE, PT_LAT },
	{ "read_lat", PT_READ, PT_LAT }, { "send_lat", PT_SEND, PT_LAT },
};

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s --perftest write_bw|read_bw|send_bw|write_lat|read_lat|send_lat\n"
		"          [-c HOST] [-p PORT] [--size BYTES] [--iters N] [--crc on|off] [--json]\n"
		"  the peer of perftest's ib_<test> -R (rdma_cm); server without -c\n",
		argv0);
}

int perf_pt_main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "perftest", required_argument, 0, 'T' },
		{ "size", required_argument, 0, 'S' },
		{ "iters", required_argument, 0, 'n' },
		{ "crc", required_argument, 0, 'C' },
		{ "json", no_argument, 0, 'j' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	struct pt_opts o = { .port = PT_DEFAULT_PORT, .crc = UW_CRC_DEFAULT };
	static const char *const off_on[] = { "off", "on", NULL };
	static const char *names[sizeof(tests) / sizeof(tests[0]) + 1];
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		names[i] = tests[i].name;
	const char *p = argv[0];
	int c;
	while ((c = getopt_long(argc, argv, "c:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			/* "--perftest --help", as the main usage line says */
			if (!strcmp(optarg, "--help") || !strcmp(optarg, "-h")) {
				usage(argv[0]);
				return 0;
			}
			o.test = &tests[tool_opt_word(p, "--perftest", optarg, names)];
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'p':
			o.port = (int)tool_opt_uint(p, "-p", optarg, 0, 65535);
			break;
		case 'S':
			o.size = tool_opt_size(p, "--size", optarg, 1, PERF_MAX_BUF / 2);
			break;
		case 'n':
			/* perftest's limits on -n */
			o.iters = tool_opt_uint(p, "--iters", optarg, PT_MIN_ITERS, PT_MAX_ITERS);
			break;
		case 'C':
			o.crc = tool_opt_word(p, "--crc", optarg, off_on) ? UW_CRC_ON : UW_CRC_OFF;
			break;
		case 'j':
			o.json = true;
			break;
		default:
			usage(argv[0]);
			return c == 'h' ? 0 : 2;
		}
	}
	tool_opt_no_more(p, argc, argv, optind);
	if (!o.test) {
		usage(argv[0]);
		tool_opt_fail(p, "--perftest TEST is needed");
	}
	if (o.host && !o.port)
		tool_opt_fail(p, "a client needs the server's port: -p 0 is for a server");
	if (!o.size)
		o.size = o.test->kind == PT_BW ? 65536 : 2;
	if (!o.iters)
		o.iters = o.test->kind == PT_BW && o.test->verb == PT_WRITE ? 5000 : 1000;
	return pt_run(&o) ? 1 : 0;
}
