/*
 * uwarp-fuzz: mutated FPDUs against any iWARP peer (netfuzz.h).
 *
 *   uwarp-fuzz -c HOST -p PORT      connect to the peer, once per case
 *   uwarp-fuzz -s -p PORT           the peer connects, once per case
 *     [--crc on|off] [--seed N] [--cases N] [--class NAME[,NAME...]]
 *     [--case I] [--timeout MS] [--stag X] [--to N] [--payload N]
 *     [--watch PID] [--json FILE] [--quiet]
 *
 * --cases N cases of each class (default 20), each reproducible alone with
 * the same --seed, --class and --case. The peer's reaction to each goes to
 * the JSON report (--json) and into a table by class. Exit status: 0 when
 * every case ran (whatever the reactions), 1 when the peer crashed or the
 * MPA exchange failed, 2 for bad usage.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "netfuzz.h"
#include "tools/lib/tool_opt.h"

static void usage(const char *a0)
{
	fprintf(stderr,
		"usage: %s (-c HOST -p PORT | -s -p PORT) [--crc on|off] [--seed N] [--cases N]\n"
		"          [--class NAME[,NAME...]] [--case I] [--timeout MS] [--stag X] [--to N]\n"
		"          [--payload N] [--watch PID] [--json FILE] [--quiet]\n"
		"classes:",
		a0);
	for (int c = 0; c < NF_CLASSES; c++)
		fprintf(stderr, " %s", nf_class_name(c));
	fprintf(stderr, "\n");
}

static int listen_on(int port)
{
	int fd = socket(AF_INET6, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in6 a = { .sin6_family = AF_INET6,
				  .sin6_port = htons((uint16_t)port),
				  .sin6_addr = IN6ADDR_ANY_INIT };
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, 16))
		return -1;
	return fd;
}

static void json_case(FILE *j, const struct nf_case *c, bool first)
{
	fprintf(j, "%s\n    {\"class\":\"%s\",\"case\":%u,\"crc\":%s,\"reaction\":\"%s\"",
		first ? "" : ",", nf_class_name(c->cls), c->index, c->crc ? "true" : "false",
		nf_reaction_name(c->reaction));
	if (c->reaction == NF_TERMINATE)
		fprintf(j, ",\"layer\":%u,\"etype\":%u,\"ecode\":%u,\"siw_layout\":%s", c->layer,
			c->etype, c->ecode, c->siw_layout ? "true" : "false");
	if (c->note[0])
		fprintf(j, ",\"note\":\"%s\"", c->note);
	/* the first bytes after the MPA exchange, enough to see the change */
	fprintf(j, ",\"bytes\":\"");
	for (size_t i = 0; i < c->len && i < 40; i++)
		fprintf(j, "%02x", c->bytes[i]);
	fprintf(j, "%s\",\"len\":%zu}", c->len > 40 ? "..." : "", c->len);
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	const char *host = NULL, *json = NULL, *classes = NULL;
	int port = -1, cases = 20, one_case = -1, timeout = 2000, watch = 0, crc = 1;
	bool server = false, quiet = false;
	uint64_t seed = 1;
	struct nf_target t = { .payload = 64 };
	static const struct option lo[] = {
		{ "crc", required_argument, 0, 'C' },     { "seed", required_argument, 0, 'e' },
		{ "cases", required_argument, 0, 'n' },   { "class", required_argument, 0, 'k' },
		{ "case", required_argument, 0, 'i' },    { "timeout", required_argument, 0, 't' },
		{ "stag", required_argument, 0, 'S' },    { "to", required_argument, 0, 'T' },
		{ "payload", required_argument, 0, 'P' }, { "watch", required_argument, 0, 'w' },
		{ "json", required_argument, 0, 'j' },    { "quiet", no_argument, 0, 'q' },
		{ "help", no_argument, 0, 'h' },          { 0, 0, 0, 0 },
	};
	static const char *const off_on[] = { "off", "on", NULL };
	const char *p = argv[0];
	int o;
	while ((o = getopt_long(argc, argv, "c:sp:h", lo, NULL)) != -1) {
		switch (o) {
		case 'c':
			host = optarg;
			break;
		case 's':
			server = true;
			break;
		case 'p':
			port = (int)tool_opt_uint(p, "-p", optarg, 0, 65535);
			break;
		case 'C':
			crc = tool_opt_word(p, "--crc", optarg, off_on);
			break;
		case 'e':
			seed = tool_opt_uint(p, "--seed", optarg, 0, UINT64_MAX);
			break;
		case 'n':
			cases = (int)tool_opt_uint(p, "--cases", optarg, 1, INT_MAX);
			break;
		case 'k':
			classes = optarg;
			break;
		case 'i':
			one_case = (int)tool_opt_uint(p, "--case", optarg, 0, INT_MAX);
			break;
		case 't':
			timeout = (int)tool_opt_uint(p, "--timeout", optarg, 1, 3600000);
			break;
		case 'S':
			t.stag = (uint32_t)tool_opt_uint(p, "--stag", optarg, 0, UINT32_MAX);
			break;
		case 'T':
			t.to = tool_opt_uint(p, "--to", optarg, 0, UINT64_MAX);
			break;
		case 'P':
			t.payload = (uint32_t)tool_opt_uint(p, "--payload", optarg, 0, 1024);
			break;
		case 'w':
			watch = (int)tool_opt_uint(p, "--watch", optarg, 1, INT_MAX);
			break;
		case 'j':
			json = optarg;
			break;
		case 'q':
			quiet = true;
			break;
		case 'h':
			printf("usage: %s (-c HOST -p PORT | -s -p PORT) [--crc on|off] [--seed "
			       "N]\n"
			       "          [--cases N] [--class NAME[,NAME...]] [--case I] "
			       "[--timeout MS]\n"
			       "          [--stag X] [--to N] [--payload N] [--watch PID] [--json "
			       "FILE]\n"
			       "          [--quiet]\n"
			       "Mutated FPDUs against an iWARP peer, one MPA connection per case.\n"
			       "  -c HOST -p PORT   connect to the peer; -s -p PORT: it connects\n"
			       "  --cases N         cases per class (default 20)\n"
			       "  --seed N, --class NAMES, --case I   a case alone, reproduced\n"
			       "  --timeout MS      wait for the peer's reaction (default 2000)\n"
			       "  --stag X, --to N, --payload N   tagged cases' target; payload\n"
			       "                    bytes (default 64)\n"
			       "  --watch PID       a local peer whose death is a crash\n"
			       "  --json FILE       the report; --quiet: no table\n"
			       "  --crc on|off      ask for MPA CRC (default on)\n"
			       "Exit: 0 every case ran, 1 the peer crashed or MPA failed, 2 "
			       "usage.\n",
			       argv[0]);
			return 0;
		default:
			usage(argv[0]);
			return 2;
		}
	}
	tool_opt_no_more(p, argc, argv, optind);
	bool want[NF_CLASSES];
	for (int c = 0; c < NF_CLASSES; c++)
		want[c] = !classes;
	for (char *list = classes ? strdup(classes) : NULL, *tok = list ? strtok(list, ",") : NULL;
	     tok; tok = strtok(NULL, ",")) {
		int c = nf_class_parse(tok);
		if (c < 0) {
			usage(argv[0]);
			tool_opt_fail(p, "--class '%s': no such class (the list above)", tok);
		}
		want[c] = true;
	}
	if (server == !!host) {
		usage(argv[0]);
		tool_opt_fail(p, "give -s (server) or -c HOST (client), one of them");
	}
	if (port < 0)
		tool_opt_fail(p, "-p PORT is needed");
	int lfd = -1;
	if (server) {
		if ((lfd = listen_on(port)) < 0) {
			perror("uwarp-fuzz: listen");
			return 1;
		}
		struct sockaddr_in6 a;
		socklen_t al = sizeof(a);
		getsockname(lfd, (struct sockaddr *)&a, &al);
		fprintf(stderr, "uwarp-fuzz: listening on port %d\n", ntohs(a.sin6_port));
	}
	FILE *j = json ? fopen(json, "w") : NULL;
	if (json && !j) {
		perror(json);
		return 1;
	}
	if (j)
		fprintf(j, "{\"peer\":\"%s:%d\",\"seed\":%llu,\"crc_asked\":%s,\"cases\":[",
			host ? host : "(accepted)", port, (unsigned long long)seed,
			crc ? "true" : "false");
	static struct nf_case c;
	unsigned counts[NF_CLASSES][NF_REACTIONS] = { { 0 } };
	int status = 0, first = 1;
	for (int cls = 0; cls < NF_CLASSES && !status; cls++) {
		if (!want[cls])
			continue;
		for (int i = one_case >= 0 ? one_case : 0;
		     i < (one_case >= 0 ? one_case + 1 : cases); i++) {
			c.seed = seed;
			c.index = (unsigned)i;
			c.cls = (enum nf_class)cls;
			int rc = nf_run(&c, &t, host, port, lfd, crc, timeout, watch);
			if (rc) {
				fprintf(stderr, "uwarp-fuzz: %s case %d: %s%s%s\n",
					nf_class_name(cls), i, strerror(-rc), c.note[0] ? ": " : "",
					c.note);
				status = 1;
				break;
			}
			counts[cls][c.reaction]++;
			if (j)
				json_case(j, &c, first);
			first = 0;
			if (!quiet) {
				printf("%-9s %3d  %-9s", nf_class_name(cls), i,
				       nf_reaction_name(c.reaction));
				if (c.reaction == NF_TERMINATE)
					printf(" %u/%u/0x%02x%s", c.layer, c.etype, c.ecode,
					       c.siw_layout ? " (siw layout)" : "");
				printf("%s%s\n", c.note[0] ? "  " : "", c.note);
				fflush(stdout);
			}
			if (c.reaction == NF_CRASH) {
				status = 1;
				break;
			}
		}
	}
	/* the table: reactions by class */
	printf("\n%-9s", "class");
	for (int r = 0; r < NF_REACTIONS; r++)
		printf(" %9s", nf_reaction_name(r));
	printf("\n");
	for (int cls = 0; cls < NF_CLASSES; cls++) {
		if (!want[cls])
			continue;
		printf("%-9s", nf_class_name(cls));
		for (int r = 0; r < NF_REACTIONS; r++)
			printf(" %9u", counts[cls][r]);
		printf("\n");
	}
	if (j) {
		fprintf(j, "\n  ],\"summary\":{");
		int fc = 1;
		for (int cls = 0; cls < NF_CLASSES; cls++) {
			if (!want[cls])
				continue;
			fprintf(j, "%s\"%s\":{", fc ? "" : ",", nf_class_name(cls));
			for (int r = 0; r < NF_REACTIONS; r++)
				fprintf(j, "%s\"%s\":%u", r ? "," : "", nf_reaction_name(r),
					counts[cls][r]);
			fprintf(j, "}");
			fc = 0;
		}
		fprintf(j, "}}\n");
		fclose(j);
	}
	if (lfd >= 0)
		close(lfd);
	return status;
}
