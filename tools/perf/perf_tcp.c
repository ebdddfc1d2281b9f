/*
 * perf_tcp.c: the baseline: the same pattern over a plain TCP socket, so
 * every uwarp figure comes with the raw TCP figure of the same run.
 * Bandwidth streams messages of the size one way (toward the server for
 * send/write/imm/atomic, from it for read); latency is a ping-pong.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "perf.h"
#include "tools/lib/tool_stats.h"

struct tcp_hello {
	uint8_t op, mode, pad[2];
	uint32_t slots; /* buffers each side cycles through, as uwarp's do */
	uint64_t size;
};

static int io_all(int fd, void *p, size_t n, bool wr)
{
	uint8_t *b = p;
	while (n) {
		/* no SIGPIPE when the other end has gone: an error, as uwarp's */
		ssize_t k = wr ? send(fd, b, n, MSG_NOSIGNAL) : read(fd, b, n);
		if (k <= 0) {
			if (k < 0 && errno == EINTR)
				continue;
			return -1;
		}
		b += k;
		n -= (size_t)k;
	}
	return 0;
}

static void *serve(void *arg)
{
	int fd = (int)(intptr_t)arg, one = 1;
	struct tcp_hello h;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (io_all(fd, &h, sizeof(h), false))
		goto out;
	uint64_t size = be64toh(h.size) ? be64toh(h.size) : 1;
	uint64_t slots = ntohl(h.slots);
	if (slots < 1 || size * slots > PERF_MAX_BUF)
		slots = 1;
	uint8_t *buf = malloc(size * slots);
	if (!buf)
		goto out;
	if (h.mode == MODE_LAT) {
		while (!io_all(fd, buf, size, false) && !io_all(fd, buf, size, true))
			;
	} else if (h.op == OP_READ) {
		memset(buf, 0x5a, size * slots);
		for (uint64_t i = 0; !io_all(fd, buf + (i % slots) * size, size, true); i++)
			;
	} else {
		/* into the slots in turn, as the uwarp server's receives and
		 * Write targets land: a one-buffer sink would stay in cache */
		uint64_t total = 0, off = 0, slot = 0;
		ssize_t k;
		while ((k = read(fd, buf + slot * size + off, size - off)) > 0) {
			total += (uint64_t)k;
			off += (uint64_t)k;
			if (off == size) {
				off = 0;
				slot = (slot + 1) % slots;
			}
		}
		total = htobe64(total);
		io_all(fd, &total, sizeof(total), true);
	}
	free(buf);
out:
	close(fd);
	return NULL;
}

static void *acceptor(void *arg)
{
	int lfd = (int)(intptr_t)arg;
	for (;;) {
		int fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		pthread_t t;
		if (pthread_create(&t, NULL, serve, (void *)(intptr_t)fd))
			close(fd);
		else
			pthread_detach(t);
	}
	return NULL;
}

int perf_tcp_server_start(const struct perf_opts *o, int tcp_port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE },
			*ai;
	char port[16];
	int one = 1;
	snprintf(port, sizeof(port), "%d", tcp_port);
	if (getaddrinfo(o->bind, port, &hints, &ai))
		return -1;
	/* as the uwarp listener: the IPv6 wildcard takes IPv4 too */
	struct addrinfo *pick = ai;
	for (struct addrinfo *a = ai; a && !o->bind; a = a->ai_next)
		if (a->ai_family == AF_INET6)
			pick = a;
	int fd = socket(pick->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	int rc = fd < 0 || bind(fd, pick->ai_addr, pick->ai_addrlen) || listen(fd, 64);
	freeaddrinfo(ai);
	pthread_t t;
	if (rc || pthread_create(&t, NULL, acceptor, (void *)(intptr_t)fd)) {
		int err = errno;
		if (fd >= 0)
			close(fd); /* the caller may try another port */
		errno = err;
		return -1;
	}
	pthread_detach(t);
	return 0;
}

int perf_tcp_client(const struct perf_opts *o, struct perf_result *r)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	int one = 1;
	uint64_t size = o->size ? o->size : 1;
	memset(r, 0, sizeof(*r));
	snprintf(port, sizeof(port), "%d", o->port + 1);
	if (getaddrinfo(o->host, port, &hints, &ai))
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int rc = fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen);
	freeaddrinfo(ai);
	if (rc)
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* the same memory footprint as the uwarp run: depth buffers in turn
	 * at both ends, so neither side has an unfair cache advantage */
	uint64_t slots = o->mode == MODE_LAT ? 1 : (uint64_t)o->depth;
	if (slots * size > PERF_MAX_BUF / 4)
		slots = PERF_MAX_BUF / 4 / size ? PERF_MAX_BUF / 4 / size : 1;
	struct tcp_hello h = {
		(uint8_t)o->op, (uint8_t)o->mode, { 0 }, htonl((uint32_t)slots), htobe64(size)
	};
	uint8_t *mem = malloc(size * slots), *buf = mem;
	if (!mem || io_all(fd, &h, sizeof(h), true)) {
		free(mem);
		close(fd);
		return -1;
	}
	memset(mem, 0xa5, size * slots);
	double t0 = util_now_s(), stop = o->seconds > 0 ? t0 + o->seconds : 0;
	uint64_t i = 0;
	if (o->mode == MODE_LAT) {
		uint64_t cap = o->iters ? o->iters : 1 << 20;
		double *lat = malloc(cap * sizeof(double));
		for (; stop ? util_now_s() < stop : i < o->iters; i++) {
			double a = util_now_s();
			if (io_all(fd, buf, size, true) || io_all(fd, buf, size, false))
				break;
			if (i < cap)
				lat[i] = (util_now_s() - a) * 1e6;
		}
		uint64_t n = i < cap ? i : cap;
		r->lat_p50_us = tool_percentile(lat, n, 0.50);
		r->lat_p99_us = tool_percentile(lat, n, 0.99);
		free(lat);
	} else if (o->op == OP_READ) {
		for (; stop ? util_now_s() < stop : i < o->iters; i++)
			if (io_all(fd, mem + (i % slots) * size, size, false))
				break;
	} else {
		for (; stop ? util_now_s() < stop : i < o->iters; i++)
			if (io_all(fd, mem + (i % slots) * size, size, true))
				break;
		uint64_t total;
		shutdown(fd, SHUT_WR);
		/* the server's count says everything arrived */
		if (io_all(fd, &total, sizeof(total), false) || be64toh(total) != i * size)
			r->errors++;
	}
	double dt = util_now_s() - t0;
	r->iters = i;
	r->bytes = i * size;
	r->gbps = dt > 0 ? (double)r->bytes * 8 / dt / 1e9 : 0;
	free(mem);
	close(fd);
	return r->errors ? -1 : 0;
}
