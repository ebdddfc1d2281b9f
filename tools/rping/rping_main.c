/*
 * uwarp-rping: rdma-core's rping over uwarp (rping.h).
 *
 *   server: uwarp-rping -s [-a ADDR] [-p PORT] [-S SIZE] [-P] [-v] [-V] [-q]
 *   client: uwarp-rping -c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-v] [-V] [-q]
 *   both:   [--crc on|off] [--markers on|off] [--rev 1|2] [--fault bad-rkey]
 *
 * As rping: -C iterations (default: until interrupted), -S ping size
 * (default 64), -v print the ping data, -V check the echo, -P keep
 * accepting (each client on a thread of its own, as rping's persistent
 * server). --crc off does not ask for CRC (it still runs if the peer
 * asks); --markers on asks the peer for markers. --fault bad-rkey tests
 * the peer's error path (rping.h). Exit status 0 on success.
 */
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rping.h"
#include "tools/lib/tool_opt.h"

static void usage(const char *argv0)
{
	fprintf(stderr,
		"usage: %s -s [-a ADDR] [-p PORT] [-S SIZE] [-P] [-v] [-V] [-q]\n"
		"       %s -c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-v] [-V] [-q]\n"
		"       (both) [--crc on|off] [--markers on|off] [--rev 1|2] [--fault bad-rkey]\n",
		argv0, argv0);
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	struct rping_opts o = { .port = RPING_PORT,
				.size = RPING_DEFAULT_SIZE,
				.crc = UW_CRC_DEFAULT };
	bool client = false;
	static const struct option longopts[] = {
		{ "crc", required_argument, 0, 'R' }, { "markers", required_argument, 0, 'M' },
		{ "rev", required_argument, 0, 'r' }, { "fault", required_argument, 0, 'F' },
		{ "help", no_argument, 0, 'h' },      { 0, 0, 0, 0 },
	};
	static const char *const off_on[] = { "off", "on", NULL };
	static const char *const faults[] = { "bad-rkey", NULL };
	const char *p = argv[0];
	int c;
	while ((c = getopt_long(argc, argv, "sca:p:C:S:PvVqdh", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.server = true;
			break;
		case 'c':
			client = true;
			break;
		case 'a':
			o.addr = optarg;
			break;
		case 'p':
			o.port = (int)tool_opt_uint(p, "-p", optarg, 0, 65535);
			break;
		case 'C':
			o.count = (long)tool_opt_uint(p, "-C", optarg, 0, LONG_MAX);
			break;
		case 'S':
			o.size = (uint32_t)tool_opt_size(p, "-S", optarg, 1, RPING_MAX_SIZE);
			break;
		case 'P':
			o.persistent = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'V':
			o.validate = true;
			break;
		case 'q':
			o.quiet = true;
			break;
		case 'd':
			o.debug = true;
			break; /* what MPA negotiated */
		case 'R':
			o.crc = tool_opt_word(p, "--crc", optarg, off_on) ? UW_CRC_ON : UW_CRC_OFF;
			break;
		case 'M':
			o.markers = tool_opt_word(p, "--markers", optarg, off_on);
			break;
		case 'r':
			o.mpa_rev = (int)tool_opt_uint(p, "--rev", optarg, 1, 2);
			break;
		case 'F':
			o.fault_bad_rkey = !tool_opt_word(p, "--fault", optarg, faults);
			break;
		case 'h':
			printf("usage: %s -s [-a ADDR] [-p PORT] [-S SIZE] [-P] [-v] [-V] [-q]\n"
			       "       %s -c -a ADDR [-p PORT] [-C COUNT] [-S SIZE] [-v] [-V] "
			       "[-q]\n"
			       "       (both) [--crc on|off] [--markers on|off] [--rev 1|2]\n"
			       "              [--fault bad-rkey]\n"
			       "rdma-core's rping over uwarp, with Linux's rping on siw at either "
			       "end.\n"
			       "  -s, -c        server or client\n"
			       "  -a ADDR       the server's address (the server binds to it)\n"
			       "  -p PORT       default %d, as rping\n"
			       "  -C COUNT      pings (default: until interrupted)\n"
			       "  -S SIZE       the ping's size (default %d, at most 16M)\n"
			       "  -P            server: keep accepting, a thread per client\n"
			       "  -v, -V, -q    print the pings; check the echoes; say less\n"
			       "  --crc on|off  ask for MPA CRC (default on)\n"
			       "  --markers on|off  ask for MPA markers (default off)\n"
			       "  --rev 1|2     the MPA revision to ask for (default 2)\n"
			       "  --fault bad-rkey  advertise a wrong rkey (the peer's error "
			       "path)\n",
			       argv[0], argv[0], RPING_PORT, RPING_DEFAULT_SIZE);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	tool_opt_no_more(p, argc, argv, optind);
	if (o.server == client) {
		usage(argv[0]);
		tool_opt_fail(p, "give -s (server) or -c (client), one of them");
	}
	if (client && !o.addr)
		tool_opt_fail(p, "a client needs -a ADDR, the server's address");
	int rc = o.server ? rping_server(&o) : rping_client(&o);
	return rc ? 1 : 0;
}
