/*
 * exs_sender.c: a stream sender written the way ES-API programs are (the
 * Extended Sockets API, Issue 1.0): <sys/exs.h> alone, linked with -lexs;
 * registered memory with flags 0, a ring of 16 outstanding exs_send calls
 * with (exs_ahandle_t) casts, events taken half the outstanding count at a
 * time, a run timed by alarm() that ends on EINTR. test_exs_program.sh
 * builds it from an installed tree.
 *
 * exs_sender [-k|-d] HOST PORT SIZE SECONDS OFFSET
 * Sends SIZE-byte messages from buffers OFFSET bytes past a page boundary
 * for SECONDS, then half-closes and waits for the peer's end. Prints
 * "sent BYTES bytes hash HASH" (CRC-32 over the stream). Exit 0, or 1 with
 * a message on any failure (the peer vanishing included).
 *
 * -k: the socket is the system's, made the way most ES-API programs make
 * theirs (socket(2), connect(2)), and the peer any TCP program. The
 * program's own send(2) comes before the ES-API's sends on it, and the
 * end is the system's shutdown(2), recv(2) and close(2): the stream keeps
 * its order across both. Without -k: exs_socket and exs_connect (a uwarp
 * peer).
 *
 * -d: the system's socket too (socket(2), connect(2)), in DDP mode, so the
 * peer is a uwarp one: exs_setsockopt(SOL_ESOCK, ESOCK_DDPMODE) switches
 * it, unless ESOCK_DDPMODE in the environment selects it already (the
 * first exs_send then switches it). Every call on it is then the
 * ES-API's, the end included.
 */
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/exs.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_crc.h"

#define PENDING 16
#define WIDTH (2 * PENDING + 1) /* a buffer comes round again only once its send is done */
#define EVENTS 64

static volatile sig_atomic_t times_up;

static void on_alarm(int sig)
{
	(void)sig;
	times_up = 1;
}

static void die(const char *what)
{
	fprintf(stderr, "exs_sender: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* the stream's bytes: a function of their offset, so that no two sends
 * look alike */
static void fill(unsigned char *b, size_t n, uint64_t off)
{
	for (size_t i = 0; i < n; i++, off++)
		b[i] = (unsigned char)((off * 2654435761u) >> 13);
}

/* the events of completed sends: each must have sent all it was given */
static void check(const exs_event_t *ev, int n, size_t size)
{
	for (int i = 0; i < n; i++) {
		if (ev[i].exs_evt_errno) {
			errno = ev[i].exs_evt_errno;
			die("a send failed");
		}
		if (ev[i].exs_evt_type != EXS_EVT_SEND ||
		    ev[i].exs_evt_union.xfer.bytes != (ssize_t)size) {
			fprintf(stderr,
				"exs_sender: a send event of type %d moved %zd of %zu bytes\n",
				ev[i].exs_evt_type, ev[i].exs_evt_union.xfer.bytes, size);
			exit(1);
		}
	}
}

int main(int argc, char **argv)
{
	int kernel = argc > 1 && !strcmp(argv[1], "-k");
	int ddp = argc > 1 && !strcmp(argv[1], "-d");
	argv += kernel || ddp;
	argc -= kernel || ddp;
	if (argc != 6) {
		fprintf(stderr, "usage: exs_sender [-k|-d] HOST PORT SIZE SECONDS OFFSET\n");
		return 2;
	}
	stream_crc_init();
	size_t size = strtoul(argv[3], NULL, 10);
	unsigned seconds = (unsigned)atoi(argv[4]);
	size_t offset = strtoul(argv[5], NULL, 10);

	if (exs_init(EXS_VERSION) == -1)
		die("exs_init");
	exs_qhandle_t q = exs_qcreate(EVENTS);
	if (q == EXS_QHANDLE_INVALID)
		die("exs_qcreate");

	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	int rc = getaddrinfo(argv[1], argv[2], &hints, &ai);
	if (rc) {
		fprintf(stderr, "exs_sender: %s: %s\n", argv[1], gai_strerror(rc));
		return 1;
	}
	uint64_t sent = 0;
	uint32_t hash = 0;
	int fd;
	if (kernel) {
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
			die("connect");
		static const char hello[] = "exs_sender says hello\n";
		if (send(fd, hello, sizeof(hello) - 1, 0) != sizeof(hello) - 1)
			die("send");
		hash = stream_crc(hash, (const unsigned char *)hello, sizeof(hello) - 1);
		sent += sizeof(hello) - 1;
	} else if (ddp) {
		static const int one = 1;
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
			die("connect");
		if (!getenv("ESOCK_DDPMODE") &&
		    exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)))
			die("DDP mode");
	} else {
		fd = exs_socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0)
			die("exs_socket");
		if (exs_connect(fd, ai->ai_addr, ai->ai_addrlen, EXS_QHANDLE_INVALID, NULL))
			die("exs_connect");
	}
	freeaddrinfo(ai);

	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t slot = (size + offset + page - 1) / page * page;
	unsigned char *ring = mmap(NULL, slot * WIDTH, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap");
	exs_mhandle_t mh = exs_mregister(ring, slot * WIDTH, 0);
	if (mh == EXS_MHANDLE_INVALID)
		die("exs_mregister");

	signal(SIGALRM, on_alarm);
	alarm(seconds);
	exs_event_t ev[EVENTS];
	unsigned long eagain = 0;
	int pending = 0, next = 0;
	while (!times_up) {
		while (pending < PENDING) {
			unsigned char *b = ring + (size_t)next * slot + offset;
			fill(b, size, sent);
			if (exs_send(fd, b, size, 0, q, (exs_ahandle_t)-1, mh) != 0)
				break;
			hash = stream_crc(hash, b, size);
			sent += size;
			pending++;
			next = (next + 1) % WIDTH;
		}
		if (pending < PENDING) {
			if (errno == EINTR)
				break;
			if (errno != EAGAIN)
				die("exs_send");
			eagain++;
		}
		int n = exs_qdequeue(q, ev, -(pending >> 1), NULL);
		if (n < 0) {
			if (errno == EINTR)
				break;
			die("exs_qdequeue");
		}
		check(ev, n, size);
		pending -= n;
	}
	while (pending > 0) {
		int n = exs_qdequeue(q, ev, -pending, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("exs_qdequeue");
		}
		check(ev, n, size);
		pending -= n;
	}
	if (ddp) {
		int on = 0;
		socklen_t len = sizeof(on);
		if (exs_getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &on, &len) || !on) {
			fprintf(stderr, "exs_sender: the socket is not in DDP mode\n");
			return 1;
		}
	}
	/* the end: the peer has every byte when the half-close returns, and
	 * closes its side once it has read them */
	if (kernel ? shutdown(fd, SHUT_WR) : exs_shutdown(fd, SHUT_WR, EXS_QHANDLE_INVALID, NULL))
		die("shutdown");
	char c;
	ssize_t r = kernel ? recv(fd, &c, 1, 0)
			   : exs_recv(fd, &c, 1, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID);
	if (r != 0) {
		if (r > 0)
			errno = EPROTO;
		die("waiting for the peer's end");
	}
	if (kernel ? close(fd) : exs_close(fd, EXS_QHANDLE_INVALID, NULL))
		die("close");
	exs_mderegister(&mh);
	exs_qdelete(q);
	printf("sent %llu bytes hash %08x (%lu EAGAIN)\n", (unsigned long long)sent, hash, eagain);
	return 0;
}
