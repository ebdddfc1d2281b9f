/*
 * uwarp-iobench: the engine's data path under each I/O model (iobench.h),
 * in interleaved rounds beside raw TCP in the same run.
 *
 *   uwarp-iobench [--io tcp,epoll,lowat,uring,waitall] [--size BYTES] [--time S]
 *                 [--rounds N] [--list BYTES] [--no-crc] [--verify]
 *
 * One line per run, then per model the medians over the rounds: Gb/s of
 * payload, the median of each round's ratio to TCP's, and per MiB moved
 * each side's system calls and sleeps (voluntary context switches), and
 * its CPU seconds per GB. With --verify every message is compared with
 * what was sent (and every CRC checked, as always unless --no-crc); any
 * error ends the tool with status 1.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iobench.h"
#include "tools/lib/tool_opt.h"
#include "tools/lib/tool_stats.h"

#define MAX_ROUNDS 101
#define URING_BUILT (iob_uring.tx != NULL)

static const char *const prog = "uwarp-iobench";
static const struct iob_model *const models[IOB_NIO] = { &iob_tcp, &iob_epoll, &iob_lowat,
							 &iob_uring, &iob_waitall };

struct side {
	const struct iob_model *m;
	const struct iob_cfg *cfg;
	const uint8_t *data;
	int fd;
	struct iob_stats st;
};

static void *tx_thread(void *arg)
{
	struct side *s = arg;
	s->m->tx(s->fd, s->cfg, s->data, &s->st);
	return NULL;
}

static void *rx_thread(void *arg)
{
	struct side *s = arg;
	s->m->rx(s->fd, s->cfg, s->data, &s->st);
	if (s->st.err) {
		/* a receiver that gave up still drains the stream, or the
		 * sender would wait for room forever */
		static __thread uint8_t sink[1 << 16];
		fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK);
		while (read(s->fd, sink, sizeof(sink)) > 0)
			;
	}
	return NULL;
}

/* A connected pair of TCP sockets on loopback (the kernel picks the port). */
static int pair(int fd[2])
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int one = 1, l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		goto fail;
	fd[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd[0] < 0 || connect(fd[0], (struct sockaddr *)&a, sizeof(a)))
		goto fail;
	fd[1] = accept4(l, NULL, NULL, SOCK_CLOEXEC);
	if (fd[1] < 0)
		goto fail;
	close(l);
	for (int i = 0; i < 2; i++) /* as the engine sets its sockets */
		setsockopt(fd[i], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return 0;
fail:
	perror("uwarp-iobench: a loopback connection");
	return -1;
}

struct result {
	double gbps, ratio, tx_calls, rx_calls, tx_sleeps, rx_sleeps, tx_cpu, rx_cpu;
};

static int run(const struct iob_model *m, const struct iob_cfg *cfg, const uint8_t *data,
	       struct result *r)
{
	struct side tx = { m, cfg, data, -1, { 0 } }, rx = tx;
	int fd[2];
	pthread_t tt, rt;
	if (pair(fd))
		return -1;
	tx.fd = fd[0];
	rx.fd = fd[1];
	pthread_create(&rt, NULL, rx_thread, &rx);
	pthread_create(&tt, NULL, tx_thread, &tx);
	pthread_join(tt, NULL);
	pthread_join(rt, NULL);
	close(fd[0]);
	close(fd[1]);
	if (tx.st.err || rx.st.err) {
		fprintf(stderr, "%s: %s: sender %s, receiver %s\n", prog, m->name,
			tx.st.err ? strerror(tx.st.err) : "ok",
			rx.st.err ? strerror(rx.st.err) : "ok");
		return -1;
	}
	double mib = (double)rx.st.bytes / (1 << 20), gb = (double)rx.st.bytes * 1e-9;
	if (rx.st.bytes == 0 || rx.st.secs <= 0) {
		fprintf(stderr, "%s: %s: nothing arrived\n", prog, m->name);
		return -1;
	}
	*r = (struct result){ .gbps = gb * 8 / rx.st.secs,
			      .tx_calls = (double)tx.st.syscalls / mib,
			      .rx_calls = (double)rx.st.syscalls / mib,
			      .tx_sleeps = (double)tx.st.sleeps / mib,
			      .rx_sleeps = (double)rx.st.sleeps / mib,
			      .tx_cpu = tx.st.cpu / gb,
			      .rx_cpu = rx.st.cpu / gb };
	return 0;
}

static void print(const char *what, const char *name, const struct result *r, bool ratio)
{
	printf("%-8s %-8s %6.1f Gb/s", what, name, r->gbps);
	if (ratio)
		printf(" (%.2f of tcp)", r->ratio);
	printf("  tx %5.1f calls %5.2f sleeps %.3f s/GB  rx %5.1f calls %5.2f sleeps %.3f s/GB\n",
	       r->tx_calls, r->tx_sleeps, r->tx_cpu, r->rx_calls, r->rx_sleeps, r->rx_cpu);
}

static double median(const struct result *rs, size_t n, size_t field)
{
	double v[MAX_ROUNDS];
	for (size_t i = 0; i < n; i++)
		memcpy(&v[i], (const char *)&rs[i] + field, sizeof(double));
	return tool_percentile(v, n, 0.5);
}

static unsigned parse_models(const char *arg)
{
	static const char *const names[] = { "tcp", "epoll", "lowat", "uring", "waitall", NULL };
	char *copy = strdup(arg), *save = NULL;
	unsigned set = 0;
	for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
		int i = tool_opt_word(prog, "--io", w, names);
		if (!models[i]->tx)
			tool_opt_fail(prog, "--io %s: uwarp was built without liburing", w);
		set |= 1u << i;
	}
	free(copy);
	if (!set)
		tool_opt_fail(prog, "--io names no model");
	return set;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "io", required_argument, NULL, 'i' },
		{ "size", required_argument, NULL, 's' },
		{ "time", required_argument, NULL, 't' },
		{ "rounds", required_argument, NULL, 'r' },
		{ "no-crc", no_argument, NULL, 'C' },
		{ "verify", no_argument, NULL, 'V' },
		{ "list", required_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct iob_cfg cfg = { .msg = 1 << 20, .secs = 2, .crc = true, .list = IOB_LIST_BYTES };
	unsigned set = 0, rounds = 5;
	int c;
	tool_opt_version(argc, argv);
	for (unsigned i = 0; i < IOB_NIO; i++)
		if (models[i]->tx)
			set |= 1u << i;
	while ((c = getopt_long(argc, argv, "i:s:t:r:l:CVh", opts, NULL)) != -1) {
		switch (c) {
		case 'i':
			set = parse_models(optarg);
			break;
		case 's':
			cfg.msg = tool_opt_size(prog, "--size", optarg, 1, 1u << 30);
			break;
		case 't':
			cfg.secs = tool_opt_seconds(prog, "--time", optarg, 3600);
			break;
		case 'r':
			rounds = (unsigned)tool_opt_uint(prog, "--rounds", optarg, 1, MAX_ROUNDS);
			break;
		case 'l':
			cfg.list = tool_opt_size(prog, "--list", optarg, 1, IOB_LIST_MAX);
			break;
		case 'C':
			cfg.crc = false;
			break;
		case 'V':
			cfg.verify = true;
			break;
		case 'h':
			printf("usage: %s [OPTIONS]\n"
			       "  --io LIST      of tcp,epoll,lowat,uring,waitall (default: all "
			       "built:%s)\n"
			       "  --size BYTES   message size, K/M/G suffixes (default 1M)\n"
			       "  --time S       seconds per run (default 2)\n"
			       "  --rounds N     interleaved rounds, 1 to %d (default 5)\n"
			       "  --list BYTES   the sender's gather list (default 256K, the "
			       "engine's)\n"
			       "  --no-crc       FPDUs without the MPA CRC\n"
			       "  --verify       compare every message with what was sent\n",
			       prog, URING_BUILT ? " all five" : " tcp,epoll,lowat", MAX_ROUNDS);
			return 0;
		default:
			return 2;
		}
	}
	tool_opt_no_more(prog, argc, argv, optind);
	setvbuf(stdout, NULL, _IOLBF, 0); /* each run's line as it ends */
	uint8_t *data = malloc(cfg.msg);
	static struct result res[IOB_NIO][MAX_ROUNDS];
	if (!data) {
		fprintf(stderr, "%s: no memory for a %zu-byte message\n", prog, cfg.msg);
		return 1;
	}
	for (size_t i = 0; i < cfg.msg; i++)
		data[i] = iob_pattern(i);
	printf("%zu-byte messages, %.1f s runs, CRC %s%s; per MiB moved: system calls, sleeps\n",
	       cfg.msg, cfg.secs, cfg.crc ? "on" : "off",
	       cfg.verify ? ", every byte verified" : "");
	for (unsigned r = 0; r < rounds; r++) {
		char what[24];
		snprintf(what, sizeof(what), "round %u", r + 1);
		/* each round starts with another model, so none always runs
		 * first after an idle moment or last on a warm machine */
		for (unsigned j = 0; j < IOB_NIO; j++) {
			unsigned i = (j + r) % IOB_NIO;
			if (!(set & (1u << i)))
				continue;
			if (run(models[i], &cfg, data, &res[i][r]))
				return 1;
			print(what, models[i]->name, &res[i][r], false);
		}
		for (unsigned i = 0; i < IOB_NIO && (set & 1u); i++)
			res[i][r].ratio = res[i][r].gbps / res[IOB_TCP][r].gbps;
	}
	for (unsigned i = 0; i < IOB_NIO; i++) {
		if (!(set & (1u << i)))
			continue;
		struct result m;
		for (size_t f = 0; f < sizeof(m) / sizeof(double); f++) {
			double v = median(res[i], rounds, f * sizeof(double));
			memcpy((char *)&m + f * sizeof(double), &v, sizeof(double));
		}
		print("median", models[i]->name, &m, (set & 1u) && i != IOB_TCP);
	}
	free(data);
	return 0;
}
