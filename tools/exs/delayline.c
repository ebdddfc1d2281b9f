/*
 * uwarp-delayline: a wire with a fixed one-way delay, for experiments over
 * distance on a kernel without netem. It creates two TUN devices, prints
 * "ready", and from then on every IP packet written into one comes out of
 * the other DELAY later, in order, both ways. Move each device into its
 * own network namespace and give them point-to-point addresses:
 *
 *   uwarp-delayline --delay-ms 24 tunA tunB &
 *   ip link set tunA netns left; ip link set tunB netns right
 *   ip -n left addr add 10.77.0.1 peer 10.77.0.2 dev tunA; ...
 *
 * The devices live as long as the process. One thread moves both ways; it
 * copies each packet once.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>
#include "tools/lib/tool_opt.h"
#include "util/clock.h"

#define MAX_PKT 65536

struct pkt {
	struct pkt *next;
	uint64_t due_ns;
	size_t len;
	uint8_t data[];
};

struct way { /* packets read from one device, due out of the other */
	int in, out;
	struct pkt *head, *tail;
	size_t queued;
};

static int tun_open(const char *name, int mtu)
{
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return -1;
	struct ifreq ifr;
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TUN | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		close(fd);
		return -1;
	}
	/* the MTU goes through an ordinary socket's ioctl */
	int s = socket(AF_INET, SOCK_DGRAM, 0);
	ifr.ifr_mtu = mtu;
	if (s < 0 || ioctl(s, SIOCSIFMTU, &ifr) < 0) {
		close(fd);
		if (s >= 0)
			close(s);
		return -1;
	}
	close(s);
	return fd;
}

/* read what waits on w->in into the queue, due after delay */
static int take(struct way *w, uint64_t delay, size_t limit)
{
	static uint8_t buf[MAX_PKT];
	for (;;) {
		ssize_t n = read(w->in, buf, sizeof(buf));
		if (n < 0)
			return errno == EAGAIN ? 0 : -1;
		if (w->queued >= limit)
			continue; /* the wire is full: dropped, as a router would */
		struct pkt *p = malloc(sizeof(*p) + (size_t)n);
		if (!p)
			return -1;
		p->next = NULL;
		p->due_ns = util_now_ns() + delay;
		p->len = (size_t)n;
		memcpy(p->data, buf, (size_t)n);
		if (w->tail)
			w->tail->next = p;
		else
			w->head = p;
		w->tail = p;
		w->queued++;
	}
}

/* write out what is due; returns ns until the next one (or -1: none) */
static int64_t give(struct way *w)
{
	uint64_t t = util_now_ns();
	while (w->head && w->head->due_ns <= t) {
		struct pkt *p = w->head;
		if (write(w->out, p->data, p->len) < 0 && errno == EAGAIN)
			return 1000000; /* the device queue is full: a millisecond */
		w->head = p->next;
		if (!w->head)
			w->tail = NULL;
		w->queued--;
		free(p);
	}
	return w->head ? (int64_t)(w->head->due_ns - t) : -1;
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	double delay_ms = 24;
	int mtu = 9000;
	size_t limit = 100000;
	static const struct option lo[] = { { "delay-ms", required_argument, 0, 'd' },
					    { "mtu", required_argument, 0, 'm' },
					    { "limit", required_argument, 0, 'l' },
					    { "help", no_argument, 0, 'h' },
					    { 0, 0, 0, 0 } };
	const char *p = "uwarp-delayline";
	int c;
	while ((c = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (c) {
		case 'd':
			delay_ms = tool_opt_decimal(p, "--delay-ms", optarg, 0, 60000);
			break;
		case 'm':
			mtu = (int)tool_opt_uint(p, "--mtu", optarg, 576, MAX_PKT);
			break;
		case 'l':
			limit = (size_t)tool_opt_uint(p, "--limit", optarg, 1, 100000000);
			break;
		case 'h':
			printf("usage: uwarp-delayline [--delay-ms MS] [--mtu N] [--limit PACKETS] "
			       "TUN_A TUN_B\n"
			       "Two TUN devices joined by a wire with a fixed delay each way: "
			       "every\n"
			       "IP packet written into one comes out of the other MS later, in "
			       "order.\n"
			       "Prints \"ready\" once both exist; they live as long as the "
			       "process.\n"
			       "  --delay-ms MS      the one-way delay (default 24, a fraction "
			       "allowed)\n"
			       "  --mtu N            the devices' MTU (default 9000)\n"
			       "  --limit PACKETS    packets held each way at most; more are "
			       "dropped\n"
			       "                     (default 100000)\n"
			       "Needs CAP_NET_ADMIN (root) for the TUN devices.\n");
			return 0;
		default:
			goto usage;
		}
	}
	if (argc - optind != 2) {
	usage:
		fprintf(stderr, "usage: uwarp-delayline [--delay-ms MS] [--mtu N] [--limit "
				"PACKETS] TUN_A TUN_B\n");
		return 2;
	}
	int a = tun_open(argv[optind], mtu), b = tun_open(argv[optind + 1], mtu);
	if (a < 0 || b < 0) {
		perror("uwarp-delayline: TUN device");
		return 1;
	}
	uint64_t delay = (uint64_t)(delay_ms * 1e6);
	struct way w[2] = { { a, b, NULL, NULL, 0 }, { b, a, NULL, NULL, 0 } };
	printf("ready: %s <-> %s, %.1f ms each way, MTU %d\n", argv[optind], argv[optind + 1],
	       delay_ms, mtu);
	fflush(stdout);
	for (;;) {
		int64_t next = -1;
		for (int i = 0; i < 2; i++) {
			if (take(&w[i], delay, limit) < 0) {
				perror("uwarp-delayline");
				return 1;
			}
			int64_t n = give(&w[i]);
			if (n >= 0 && (next < 0 || n < next))
				next = n;
		}
		struct pollfd pf[2] = { { a, POLLIN, 0 }, { b, POLLIN, 0 } };
		struct timespec ts = { (time_t)(next / 1000000000), (long)(next % 1000000000) };
		ppoll(pf, 2, next < 0 ? NULL : &ts, NULL);
	}
}
