/*
 * exs_receiver.c: exs_sender's receiving twin, written the same way: one
 * connection accepted, a ring of 16 outstanding exs_recv calls whose
 * application handles are their slot numbers, each buffer read and posted
 * again as its event comes, until the stream ends.
 *
 * exs_receiver [-k|-d] SIZE OFFSET
 * Listens on a free port of 127.0.0.1 and prints "port N"; receives into
 * SIZE-byte buffers OFFSET bytes past a page boundary; prints "receiving"
 * once a MiB has come, and at the end "received BYTES bytes hash HASH"
 * (CRC-32 over the stream, in order). Exit 0, or 1 with a message.
 *
 * -k: the sockets are the system's (socket(2), listen(2), accept(2)) and
 * the peer any TCP program; the first bytes are read with the program's
 * own recv(2), the rest with exs_recv, and exs_close closes it. Without
 * -k: exs_socket, exs_listen and exs_accept (a uwarp peer).
 *
 * -d: the system's sockets too, the accepted one in DDP mode (by
 * exs_setsockopt, unless ESOCK_DDPMODE in the environment selects it), so
 * the peer speaks MPA: every call on it is the ES-API's.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/exs.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "stream_crc.h"

#define RECVS 16

static void die(const char *what)
{
	fprintf(stderr, "exs_receiver: %s: %s\n", what, strerror(errno));
	exit(1);
}

int main(int argc, char **argv)
{
	int kernel = argc > 1 && !strcmp(argv[1], "-k");
	int ddp = argc > 1 && !strcmp(argv[1], "-d");
	argv += kernel || ddp;
	argc -= kernel || ddp;
	if (argc != 3) {
		fprintf(stderr, "usage: exs_receiver [-k|-d] SIZE OFFSET\n");
		return 2;
	}
	stream_crc_init();
	size_t size = strtoul(argv[1], NULL, 10);
	size_t offset = strtoul(argv[2], NULL, 10);
	if (exs_init(EXS_VERSION) == -1)
		die("exs_init");
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	int l, s;
	if (kernel || ddp) {
		l = socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
		    getsockname(l, (struct sockaddr *)&a, &al))
			die("listening");
	} else {
		l = exs_socket(AF_INET, SOCK_STREAM, 0);
		if (l < 0 || exs_bind(l, (struct sockaddr *)&a, sizeof(a)) || exs_listen(l, 1) ||
		    exs_getsockname(l, (struct sockaddr *)&a, &al))
			die("listening");
	}
	printf("port %d\n", ntohs(a.sin_port));
	fflush(stdout);
	uint64_t got = 0;
	uint32_t hash = 0;
	if (kernel) {
		s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept");
		close(l);
		unsigned char first[10];
		ssize_t n = recv(s, first, sizeof(first), MSG_WAITALL);
		if (n < 0)
			die("recv");
		hash = stream_crc(hash, first, (size_t)n);
		got += (uint64_t)n;
	} else if (ddp) {
		static const int one = 1;
		s = accept(l, NULL, NULL);
		if (s < 0)
			die("accept");
		/* (returns at once: the client's first bytes decide, later) */
		if (!getenv("ESOCK_DDPMODE") &&
		    exs_setsockopt(s, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)))
			die("DDP mode");
	} else {
		s = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
		if (s < 0)
			die("exs_accept");
		exs_close(l, EXS_QHANDLE_INVALID, NULL);
	}

	exs_qhandle_t q = exs_qcreate(RECVS);
	if (q == EXS_QHANDLE_INVALID)
		die("exs_qcreate");
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t slot = (size + offset + page - 1) / page * page;
	unsigned char *ring = mmap(NULL, slot * RECVS, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (ring == MAP_FAILED)
		die("mmap");
	exs_mhandle_t mh = exs_mregister(ring, slot * RECVS, 0);
	if (mh == EXS_MHANDLE_INVALID)
		die("exs_mregister");
	for (intptr_t i = 0; i < RECVS; i++)
		if (exs_recv(s, ring + (size_t)i * slot + offset, size, 0, q, (exs_ahandle_t)i, mh))
			die("exs_recv");
	if (ddp)
		close(l); /* (open until then: it tells the accepting end from a connecting one) */

	intptr_t expect = 0;
	int said = 0;
	for (;;) {
		exs_event_t ev;
		int n = exs_qdequeue(q, &ev, -1, NULL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("exs_qdequeue");
		}
		intptr_t i = (intptr_t)ev.exs_evt_ahandle;
		if (ev.exs_evt_errno) {
			errno = ev.exs_evt_errno;
			die("a receive failed");
		}
		if (i != expect) {
			fprintf(stderr, "exs_receiver: receive %ld completed before %ld\n", (long)i,
				(long)expect);
			return 1;
		}
		expect = (expect + 1) % RECVS;
		const exs_evt_xfer_t *x = &ev.exs_evt_union.xfer; /* (the spec's type name) */
		ssize_t bytes = x->bytes;
		if (bytes == 0)
			break; /* the end of the stream */
		const unsigned char *b = x->buf;
		if (b != ring + (size_t)i * slot + offset) {
			fprintf(stderr, "exs_receiver: receive %ld names buffer %p\n", (long)i,
				x->buf);
			return 1;
		}
		hash = stream_crc(hash, b, (size_t)bytes);
		got += (uint64_t)bytes;
		if (!said && got >= (1u << 20)) {
			printf("receiving\n");
			fflush(stdout);
			said = 1;
		}
		if (exs_recv(s, (void *)b, size, 0, q, (exs_ahandle_t)i, mh))
			die("exs_recv");
	}
	if (ddp) {
		int on = 0;
		socklen_t len = sizeof(on);
		if (exs_getsockopt(s, SOL_ESOCK, ESOCK_DDPMODE, &on, &len) || !on) {
			fprintf(stderr, "exs_receiver: the socket is not in DDP mode\n");
			return 1;
		}
	}
	if (exs_close(s, EXS_QHANDLE_INVALID, NULL))
		die("exs_close");
	printf("received %llu bytes hash %08x\n", (unsigned long long)got, hash);
	return 0;
}
