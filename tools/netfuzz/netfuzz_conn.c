/*
 * netfuzz_conn.c: one case on the wire. Dial (or accept), a real MPA
 * exchange, the case's bytes, and then what the peer does: its FPDUs are
 * parsed (a Terminate's codes read both in the RFC's and siw's layout), a
 * close or reset noted, silence timed, a watched process checked.
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mpa/fpdu.h"
#include "tools/lib/fpdu_watch.h"
#include "mpa/mpa_frame.h"
#include "netfuzz.h"
#include "rdmap/rdmap_opcode.h"
#include "rdmap/rdmap_term.h"
#include "util/clock.h"

static int dial(const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	char ps[16];
	snprintf(ps, sizeof(ps), "%d", port);
	if (getaddrinfo(host, ps, &hints, &ai))
		return -EHOSTUNREACH;
	int fd = socket(ai->ai_family, SOCK_STREAM, 0);
	int rc = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) ? -errno : fd;
	freeaddrinfo(ai);
	if (rc < 0 && fd >= 0)
		close(fd);
	return rc;
}

/* read one MPA frame, byte by byte so that nothing after it is taken */
static int read_frame(int fd, struct mpa_frame *f, uint8_t *buf, size_t cap, int timeout_ms)
{
	size_t got = 0;
	long end = (long)util_now_ms() + timeout_ms;
	while (got < cap) {
		struct pollfd p = { fd, POLLIN, 0 };
		long left = end - (long)util_now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			return -ETIMEDOUT;
		ssize_t k = read(fd, buf + got, 1);
		if (k <= 0)
			return k ? -errno : -ECONNRESET;
		got++;
		ssize_t len = mpa_frame_decode(buf, got, 512, f);
		if (len > 0)
			return 0;
		if (len != -EAGAIN)
			return (int)len;
	}
	return -EMSGSIZE;
}

/* 1 or 0: whether CRC is on; or -errno */
static int negotiate(int fd, bool initiator, bool crc, struct nf_case *c)
{
	uint8_t buf[700];
	struct mpa_frame f;
	/* revision 1, as siw's rping sends it by default: no private data a
	 * peer's application would have to understand */
	struct mpa_frame mine = { .type = initiator ? MPA_FRAME_REQUEST : MPA_FRAME_REPLY,
				  .rev = 1,
				  .crc = crc };
	int rc;
	if (!initiator) {
		if ((rc = read_frame(fd, &f, buf, sizeof(buf), 5000))) {
			snprintf(c->note, sizeof(c->note), "no MPA Request: %s", strerror(-rc));
			return rc;
		}
		/* answer in kind: revision 2 with its IRD/ORD block when asked,
		 * which siw's initiator insists on */
		mine.rev = f.rev;
		mine.enhanced = f.enhanced;
		mine.ird = f.ord ? f.ord : 1;
		mine.ord = f.ird ? f.ird : 1;
		mine.crc = crc || f.crc;
	}
	ssize_t n = mpa_frame_encode(&mine, buf, sizeof(buf));
	if (n < 0 || write(fd, buf, (size_t)n) != n)
		return -EIO;
	if (initiator) {
		if ((rc = read_frame(fd, &f, buf, sizeof(buf), 5000))) {
			snprintf(c->note, sizeof(c->note), "no MPA Reply: %s", strerror(-rc));
			return rc;
		}
		if (f.reject) {
			snprintf(c->note, sizeof(c->note), "the peer rejected the MPA Request");
			return -ECONNREFUSED;
		}
		return crc || f.crc;
	}
	return mine.crc;
}

/* what came back: a Terminate (its codes), or other FPDUs */
static void read_reaction(struct nf_case *c, const struct fpdu_watch *w)
{
	struct rdmap_term t;
	if (!fpdu_watch_terminate(w, &t)) {
		const struct rdmap_term_reading *r = rdmap_term_reading(&t);
		c->reaction = NF_TERMINATE;
		c->layer = r->layer;
		c->etype = r->etype;
		c->ecode = r->ecode;
		c->siw_layout = t.siw_likely;
	} else if (w->error) {
		snprintf(c->note, sizeof(c->note), "the peer's bytes do not parse: %s", w->error);
		c->reaction = NF_REPLY;
	} else if (w->fpdus) {
		c->reaction = NF_REPLY;
	}
}

int nf_run(struct nf_case *c, const struct nf_target *t, const char *host, int port, int lfd,
	   bool crc, int timeout_ms, int watch_pid)
{
	int fd = lfd >= 0 ? accept(lfd, NULL, NULL) : dial(host, port);
	if (fd < 0)
		return fd < -1 ? fd : -errno;
	int one = 1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	int rc = negotiate(fd, lfd < 0, crc, c);
	if (rc < 0) {
		close(fd);
		return rc;
	}
	crc = rc;
	c->crc = crc;
	/* As responder, let the Reply arrive alone: siw's initiator refuses
	 * a Reply with FPDU bytes behind it in the same read (CONNECT_ERROR),
	 * and a forwarder may merge what we write in quick succession. */
	if (lfd >= 0)
		usleep(200 * 1000);
	nf_build(c, t, crc); /* after the exchange: the CRC the peer agreed to */
	c->reaction = NF_SILENCE;
	size_t sent = 0;
	while (sent < c->len) {
		ssize_t k = send(fd, c->bytes + sent, c->len - sent, MSG_NOSIGNAL);
		if (k <= 0)
			break; /* the peer may close while we still send: its reaction tells */
		sent += (size_t)k;
	}
	if (c->close_after)
		shutdown(fd, SHUT_WR);
	static uint8_t in[1 << 16];
	struct fpdu_watch w;
	fpdu_watch_init(&w, crc);
	long end = (long)util_now_ms() + timeout_ms;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		long left = end - (long)util_now_ms();
		if (left <= 0 || poll(&p, 1, (int)left) <= 0)
			break;
		ssize_t k = read(fd, in, sizeof(in));
		if (k < 0) {
			if (c->reaction == NF_SILENCE)
				c->reaction = NF_RST;
			break;
		}
		if (k == 0) {
			if (c->reaction == NF_SILENCE)
				c->reaction = NF_FIN;
			break;
		}
		fpdu_watch_feed(&w, in, (size_t)k);
		read_reaction(c, &w);
		if (c->reaction == NF_TERMINATE)
			end = (long)util_now_ms() + 500; /* the close follows */
	}
	close(fd);
	if (watch_pid > 0 && kill(watch_pid, 0) && errno == ESRCH)
		c->reaction = NF_CRASH;
	return 0;
}
