/*
 * uwarp-perf: RDMA over TCP, measured against TCP.
 *
 *   server: uwarp-perf -s [-p PORT] [-a ADDR] [--loop] [--progress manual|auto]
 *                      [--crc on|off] [--tcp]
 *   client: uwarp-perf -c HOST [-p PORT] --op send|write|read|imm|atomic
 *                      --size BYTES (--iters N | --time SECONDS) [--lat|--bw]
 *                      [--crc on|off] [--markers on|off] [--progress manual|auto]
 *                      [--qps N] [--depth N] [--sge N] [--rev 1|2] [--tcp]
 *                      [--no-verify] [--json]
 *   perftest: uwarp-perf --perftest TEST ... (perf_pt_cli.c): the peer of
 *             Linux perftest's ib_<TEST> -R, either end
 *
 * The server keeps a plain TCP listener on PORT+1 for the baseline. The
 * client verifies data and exits 3 when verification fails.
 */
#include <getopt.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perf.h"
#include "tools/lib/tool_opt.h"
#include "perf_pt.h"

static void usage(FILE *out, const char *argv0)
{
	fprintf(out,
		"usage: %s -s [-p PORT] [-a ADDR] [--loop] [--progress manual|auto] [--crc on|off] "
		"[--tcp]\n"
		"          [--max-conns N] [--max-mem BYTES]\n"
		"       %s -c HOST [-p PORT] --op send|write|read|imm|atomic --size BYTES\n"
		"          (--iters N | --time SECONDS) [--lat|--bw] [--crc on|off] [--markers "
		"on|off]\n"
		"          [--progress manual|auto] [--qps N] [--depth N] [--sge N] [--rev 1|2]\n"
		"          [--tcp] [--no-verify] [--json] [--interval SECONDS]\n"
		"          [--wait poll|adaptive]\n"
		"       %s --perftest TEST [-c HOST] [-p PORT] [--size BYTES] [--iters N]\n"
		"          [--crc on|off] [--json]   (%s --perftest --help)\n",
		argv0, argv0, argv0, argv0);
}

/* --help: what each option means and its default */
static void help(const char *argv0)
{
	usage(stdout, argv0);
	printf("\nRDMA operations over uwarp between two processes, measured beside plain TCP.\n"
	       "\nBoth ends:\n"
	       "  -p PORT             the server's port (default 19515; -s -p 0: one the\n"
	       "                      kernel picks, printed); the TCP baseline uses PORT+1\n"
	       "  --crc on|off        ask for MPA CRC (default on; off only when both ends\n"
	       "                      ask so)\n"
	       "  --progress manual|auto  who moves the data: the calling thread (default)\n"
	       "                      or uwarp's engine thread\n"
	       "  --version           uwarp's version\n"
	       "\nServer (-s):\n"
	       "  -a ADDR             listen on ADDR only (default: every address)\n"
	       "  --loop              serve clients until killed (default: one client)\n"
	       "  --tcp               also serve the TCP baseline on PORT+1\n"
	       "  --max-conns N       sessions at once (default %d); more are rejected\n"
	       "  --max-mem BYTES     buffers over all sessions (default 1G); a client past\n"
	       "                      it is rejected, with the reason in the MPA Reject\n"
	       "\nClient (-c HOST):\n"
	       "  --op OP             send, write (default), read, imm (Write with Immediate\n"
	       "                      Data) or atomic (fetch-and-add, 8 bytes)\n"
	       "  --size BYTES        per operation (default 64K; K, M and G: 1K = 1024)\n"
	       "  --iters N           operations (default 1000, 10000 with --lat)\n"
	       "  --time SECONDS      run for this long instead of --iters\n"
	       "  --bw                throughput, --depth operations in flight (default)\n"
	       "  --lat               round trips, one operation at a time (p50 and p99)\n"
	       "  --qps N             connections, each with its own buffers (default 1, at most "
	       "16384)\n"
	       "  --depth N           operations in flight per QP (default 16)\n"
	       "  --sge N             scatter-gather elements per operation (default 1)\n"
	       "  --markers on|off    ask for MPA markers (default off)\n"
	       "  --rev 1|2           MPA revision to ask for (default 2)\n"
	       "  --tcp               the same pattern over plain TCP in the same run, and\n"
	       "                      the ratio\n"
	       "  --no-verify         do not check the data (checked by default: exit 3 when\n"
	       "                      it differs)\n"
	       "  --json              one JSON object per result\n"
	       "  --interval SECONDS  a report per interval of a --time run (default 1; 0:\n"
	       "                      none; none with --json)\n"
	       "  --wait poll|adaptive  how both ends of a --lat run wait: poll throughout,\n"
	       "                      as perftest does (default; the fastest on a machine\n"
	       "                      with a CPU to spare), or poll but sleep until the\n"
	       "                      network has something while other tasks need the\n"
	       "                      CPU (a poller on a busy machine waits for their time\n"
	       "                      slices: milliseconds a round trip)\n"
	       "\nExit status: 0 done, 2 bad command line, 3 data differed, 1 other failures.\n",
	       PERF_DEFAULT_MAX_CONNS);
}

/* on|off (or two other words): 1, 0, or -1 for anything else */
int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	/* perftest's protocol has a command line of its own */
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--perftest") || !strncmp(argv[i], "--perftest=", 11))
			return perf_pt_main(argc, argv);
	struct perf_opts o = { .port = 18515 + 1000,
			       .op = OP_WRITE,
			       .size = 65536,
			       .mode = MODE_BW,
			       .crc = UW_CRC_DEFAULT,
			       .qps = 1,
			       .depth = 16,
			       .sge = 1,
			       .verify = true,
			       .interval = -1,
			       .max_conns = PERF_DEFAULT_MAX_CONNS,
			       .max_mem = PERF_DEFAULT_MAX_MEM };
	static const struct option longopts[] = {
		{ "op", required_argument, 0, 'o' },
		{ "size", required_argument, 0, 'S' },
		{ "iters", required_argument, 0, 'n' },
		{ "time", required_argument, 0, 't' },
		{ "interval", required_argument, 0, 'I' },
		{ "lat", no_argument, 0, 'L' },
		{ "bw", no_argument, 0, 'B' },
		{ "crc", required_argument, 0, 'C' },
		{ "markers", required_argument, 0, 'M' },
		{ "progress", required_argument, 0, 'P' },
		{ "qps", required_argument, 0, 'q' },
		{ "depth", required_argument, 0, 'd' },
		{ "sge", required_argument, 0, 'g' },
		{ "rev", required_argument, 0, 'r' },
		{ "tcp", no_argument, 0, 'T' },
		{ "json", no_argument, 0, 'j' },
		{ "loop", no_argument, 0, 'l' },
		{ "no-verify", no_argument, 0, 'V' },
		{ "quiet", no_argument, 0, 'Q' },
		{ "wait", required_argument, 0, 'W' },
		{ "max-conns", required_argument, 0, 'X' },
		{ "max-mem", required_argument, 0, 'Y' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	static const char *const ops[] = { "send", "write", "read", "imm", "atomic", NULL };
	static const char *const off_on[] = { "off", "on", NULL };
	static const char *const progress[] = { "manual", "auto", NULL };
	static const char *const waits[] = { "poll", "adaptive", NULL };
	const char *p = argv[0], *name = strrchr(p, '/') ? strrchr(p, '/') + 1 : p;
	int c;
	while ((c = getopt_long(argc, argv, "sc:p:a:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.server = true;
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'p':
			o.port = (int)tool_opt_uint(p, "-p", optarg, 0, 65535);
			break;
		case 'a':
			o.bind = optarg;
			break;
		case 'o':
			o.op = (enum perf_op)tool_opt_word(p, "--op", optarg, ops);
			break;
		case 'S':
			o.size = tool_opt_size(p, "--size", optarg, 0, 1ull << 31);
			break;
		case 'n':
			o.iters = tool_opt_uint(p, "--iters", optarg, 1, UINT64_MAX);
			break;
		case 't':
			o.seconds = tool_opt_seconds(p, "--time", optarg, 86400);
			break;
		case 'I':
			/* 0 turns the reports off */
			o.interval = tool_opt_decimal(p, "--interval", optarg, 0, 86400);
			break;
		case 'L':
			o.mode = MODE_LAT;
			break;
		case 'B':
			o.mode = MODE_BW;
			break;
		case 'C':
			o.crc = tool_opt_word(p, "--crc", optarg, off_on) ? UW_CRC_ON : UW_CRC_OFF;
			break;
		case 'M':
			o.markers = tool_opt_word(p, "--markers", optarg, off_on);
			break;
		case 'P':
			o.progress = tool_opt_word(p, "--progress", optarg, progress)
					     ? UW_PROGRESS_AUTO
					     : UW_PROGRESS_MANUAL;
			break;
		case 'q':
			o.qps = (int)tool_opt_uint(p, "--qps", optarg, 1, 16384);
			break;
		case 'd':
			o.depth = (int)tool_opt_uint(p, "--depth", optarg, 1, 4096);
			break;
		case 'g':
			o.sge = (int)tool_opt_uint(p, "--sge", optarg, 1, UW_MAX_SGE);
			break;
		case 'r':
			o.rev = (int)tool_opt_uint(p, "--rev", optarg, 1, 2);
			break;
		case 'T':
			o.tcp = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'l':
			o.loop = true;
			break;
		case 'V':
			o.verify = false;
			break;
		case 'Q':
			o.quiet = true;
			break;
		case 'W':
			o.wait_adaptive = tool_opt_word(p, "--wait", optarg, waits) == 1;
			break;
		case 'X':
			o.max_conns = (int)tool_opt_uint(p, "--max-conns", optarg, 1, 1 << 20);
			break;
		case 'Y':
			o.max_mem = tool_opt_size(p, "--max-mem", optarg, 1, UINT64_MAX);
			break;
		case 'h':
			help(argv[0]);
			return 0;
		default:
			usage(stderr, argv[0]);
			return 2;
		}
	}
	tool_opt_no_more(name, argc, argv, optind);
	if (o.server == !!o.host) {
		usage(stderr, argv[0]);
		tool_opt_fail(name, "give -s (server) or -c HOST (client), one of them");
	}
	if (o.iters && o.seconds > 0)
		tool_opt_fail(name, "--iters and --time exclude each other");
	/* a socket per QP: a thousand QPs need more than the usual 1024 fds */
	struct rlimit rl;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (o.server)
		return perf_server(&o);
	if (!o.iters && o.seconds <= 0)
		o.iters = o.mode == MODE_LAT ? 10000 : 1000;
	/* a timed run reports each second, as iperf3 does; JSON stays one line */
	if (o.interval < 0)
		o.interval = o.seconds > 0 && !o.json ? 1 : 0;
	if (o.mode == MODE_LAT)
		o.depth = 1;
	if (o.op == OP_ATOMIC)
		o.size = 8;
	if (o.mode == MODE_LAT && o.op == OP_WRITE && !o.size) {
		fprintf(stderr, "write latency needs --size of at least 1\n");
		return 2;
	}
	if ((o.op == OP_SEND || o.op == OP_IMM) && o.size * 2 * (uint64_t)o.depth > PERF_MAX_BUF) {
		/* the server posts 2 x depth receives, each its own buffer */
		fprintf(stderr, "send: 2 x --depth x --size is at most %u MiB\n",
			PERF_MAX_BUF >> 20);
		return 2;
	}
	return perf_client(&o);
}
