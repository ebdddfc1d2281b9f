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

/* perftest's limits on -n */
#define PT_MIN_ITERS 5
#define PT_MAX_ITERS 100000000ull

static const struct pt_test tests[] = {
	{ "write_bw", PT_WRITE, PT_BW }, { "read_bw", PT_READ, PT_BW },
	{ "send_bw", PT_SEND, PT_BW },	 { "write_lat", PT_WRITE, PT_LAT },
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

/* a count with an optional k/m/g suffix (powers of 1024); 0 if malformed */
static uint64_t parse_count(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 0);
	int shift = *end == 'k' || *end == 'K' ? 10 : *end == 'm' || *end == 'M' ? 20
						 : *end == 'g' || *end == 'G' ? 30 : 0;
	if (end == s || (shift && end[1]) || (!shift && *end))
		return 0;
	return (uint64_t)v << shift;
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
	int c;
	while ((c = getopt_long(argc, argv, "c:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'T':
			for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
				if (!strcmp(optarg, tests[i].name))
					o.test = &tests[i];
			if (!o.test) {
				fprintf(stderr, "--perftest: unknown test '%s'\n", optarg);
				return 2;
			}
			break;
		case 'c': o.host = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'S':
			if (!(o.size = parse_count(optarg))) {
				fprintf(stderr, "--size: '%s' is not a size of at least 1\n",
					optarg);
				return 2;
			}
			break;
		case 'n':
			if (!(o.iters = parse_count(optarg))) {
				fprintf(stderr, "--iters: '%s' is not a count\n", optarg);
				return 2;
			}
			break;
		case 'C':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				fprintf(stderr, "--crc: on or off, not '%s'\n", optarg);
				return 2;
			}
			o.crc = !strcmp(optarg, "on") ? UW_CRC_ON : UW_CRC_OFF;
			break;
		case 'j': o.json = true; break;
		default: usage(argv[0]); return c == 'h' ? 0 : 2;
		}
	}
	if (!o.test || optind < argc || o.port < 0 || o.port > 65535 || (o.host && !o.port)) {
		usage(argv[0]);
		return 2;
	}
	if (!o.size)
		o.size = o.test->kind == PT_BW ? 65536 : 2;
	if (!o.iters)
		o.iters = o.test->kind == PT_BW && o.test->verb == PT_WRITE ? 5000 : 1000;
	if (o.iters < PT_MIN_ITERS || o.iters > PT_MAX_ITERS) {
		fprintf(stderr, "--iters: perftest takes %d to %llu\n", PT_MIN_ITERS, PT_MAX_ITERS);
		return 2;
	}
	if (o.size > PERF_MAX_BUF / 2) {
		fprintf(stderr, "--size: at most %u MiB\n", PERF_MAX_BUF >> 21);
		return 2;
	}
	return pt_run(&o) ? 1 : 0;
}
