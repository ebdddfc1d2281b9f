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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rping.h"

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
	struct rping_opts o = { .port = RPING_PORT, .size = RPING_DEFAULT_SIZE, .crc = UW_CRC_DEFAULT };
	bool client = false;
	static const struct option longopts[] = {
		{ "crc", required_argument, 0, 'R' },
		{ "markers", required_argument, 0, 'M' },
		{ "rev", required_argument, 0, 'r' },
		{ "fault", required_argument, 0, 'F' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	int c;
	while ((c = getopt_long(argc, argv, "sca:p:C:S:PvVqdh", longopts, NULL)) != -1) {
		switch (c) {
		case 's': o.server = true; break;
		case 'c': client = true; break;
		case 'a': o.addr = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'C': o.count = atol(optarg); break;
		case 'S': o.size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'P': o.persistent = true; break;
		case 'v': o.verbose = true; break;
		case 'V': o.validate = true; break;
		case 'q': o.quiet = true; break;
		case 'd': o.debug = true; break; /* what MPA negotiated */
		case 'R':
		case 'M':
			if (strcmp(optarg, "on") && strcmp(optarg, "off")) {
				usage(argv[0]);
				return 2;
			}
			if (c == 'R')
				o.crc = strcmp(optarg, "on") ? UW_CRC_OFF : UW_CRC_ON;
			else
				o.markers = !strcmp(optarg, "on");
			break;
		case 'r': o.mpa_rev = atoi(optarg); break;
		case 'F':
			if (strcmp(optarg, "bad-rkey")) {
				usage(argv[0]);
				return 2;
			}
			o.fault_bad_rkey = true;
			break;
		default: usage(argv[0]); return c == 'h' ? 0 : 2;
		}
	}
	if (o.server == client || (client && !o.addr) || o.port < 0 || o.port > 65535 ||
	    o.size < 1 || o.size > RPING_MAX_SIZE || o.count < 0 || o.mpa_rev < 0 || o.mpa_rev > 2) {
		usage(argv[0]);
		return 2;
	}
	int rc = o.server ? rping_server(&o) : rping_client(&o);
	return rc ? 1 : 0;
}
