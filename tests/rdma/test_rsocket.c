/*
 * test_rsocket: a program written to rdma-core's <rdma/rsocket.h> and
 * linked against Debian's librdmacm, run under uwarp-run: its rsockets
 * are uwarp's, carried by esock (rdma/rdmacm/cma_rsocket.c). Data both
 * ways, blocking and not, readiness through rpoll, a half close, the
 * options, and what rsockets refuses: another descriptor (EBADF),
 * datagrams, iomapped memory.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>
#include <rdma/rsocket.h>

#define BIG (4 << 20)

static int listener(struct sockaddr_in *a)
{
	int l = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	int one = 1;
	assert_int_equal(rsetsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
	*a = (struct sockaddr_in){ .sin_family = AF_INET,
				   .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(rbind(l, (struct sockaddr *)a, sizeof(*a)), 0);
	assert_int_equal(rlisten(l, 4), 0);
	socklen_t n = sizeof(*a);
	assert_int_equal(rgetsockname(l, (struct sockaddr *)a, &n), 0);
	assert_int_not_equal(a->sin_port, 0);
	return l;
}

/* the server's side: echo everything back until the client half-closes */
static void *echo(void *arg)
{
	int l = *(int *)arg;
	int c = raccept(l, NULL, NULL);
	if (c < 0)
		return (void *)1;
	static char buf[65536];
	ssize_t n;
	while ((n = rrecv(c, buf, sizeof(buf), 0)) > 0)
		for (ssize_t off = 0; off < n;) {
			ssize_t w = rsend(c, buf + off, (size_t)(n - off), 0);
			if (w <= 0)
				return (void *)2;
			off += w;
		}
	rclose(c);
	return n == 0 ? NULL : (void *)3;
}

/* 4 MiB through an echo server and back, every byte checked, with the
 * client's socket non-blocking and driven by rpoll */
static void data_both_ways_through_rpoll(void **state)
{
	struct sockaddr_in a;
	int l = listener(&a);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, echo, &l), 0);
	int c = rsocket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(rconnect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	struct sockaddr_in peer;
	socklen_t pl = sizeof(peer);
	assert_int_equal(rgetpeername(c, (struct sockaddr *)&peer, &pl), 0);
	assert_int_equal(peer.sin_port, a.sin_port);
	int one = 1;
	assert_int_equal(rsetsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	assert_int_equal(rfcntl(c, F_SETFL, rfcntl(c, F_GETFL, 0) | O_NONBLOCK), 0);
	char b;
	errno = 0;
	assert_int_equal(rrecv(c, &b, 1, 0), -1);
	assert_int_equal(errno, EAGAIN); /* nothing yet, and it does not wait */

	uint8_t *out = malloc(BIG), *in = malloc(BIG);
	for (size_t i = 0; i < BIG; i++)
		out[i] = (uint8_t)(i * 7 + (i >> 12));
	size_t sent = 0, got = 0;
	while (got < BIG) {
		struct pollfd p = { .fd = c, .events = POLLIN | (sent < BIG ? POLLOUT : 0) };
		assert_int_equal(rpoll(&p, 1, 5000), 1);
		if ((p.revents & POLLOUT) && sent < BIG) {
			ssize_t n = rsend(c, out + sent, BIG - sent, 0);
			if (n > 0)
				sent += (size_t)n;
			else
				assert_int_equal(errno, EAGAIN);
		}
		if (p.revents & POLLIN) {
			ssize_t n = rrecv(c, in + got, BIG - got, 0);
			assert_true(n > 0 || errno == EAGAIN);
			if (n > 0)
				got += (size_t)n;
		}
	}
	assert_memory_equal(in, out, BIG);
	/* a half close: the server sees the end and closes; we see its end */
	assert_int_equal(rshutdown(c, SHUT_WR), 0);
	struct pollfd p = { .fd = c, .events = POLLIN };
	assert_int_equal(rpoll(&p, 1, 5000), 1);
	assert_int_equal(rrecv(c, &b, 1, 0), 0);
	void *r;
	pthread_join(t, &r);
	assert_null(r);
	assert_int_equal(rclose(c), 0);
	assert_int_equal(rclose(l), 0);
	free(out);
	free(in);
}

/* rsockets' own options are taken (esock sizes its own queues); what the
 * API has and esock has not is refused, never faked */
static void options_and_refusals(void **state)
{
	struct sockaddr_in a;
	int l = listener(&a);
	uint32_t v = 64;
	assert_int_equal(rsetsockopt(l, SOL_RDMA, RDMA_SQSIZE, &v, sizeof(v)), 0);
	assert_int_equal(rsetsockopt(l, SOL_RDMA, RDMA_INLINE, &v, sizeof(v)), 0);
	errno = 0;
	assert_int_equal(rsetsockopt(l, SOL_RDMA, 99, &v, sizeof(v)), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	socklen_t vl = sizeof(v);
	errno = 0;
	assert_int_equal(rgetsockopt(l, SOL_RDMA, RDMA_SQSIZE, &v, &vl), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	int err = -1;
	socklen_t el = sizeof(err);
	assert_int_equal(rgetsockopt(l, SOL_SOCKET, SO_ERROR, &err, &el), 0);
	assert_int_equal(err, 0);
	errno = 0; /* rfcntl takes what rsockets takes: F_GETFL and F_SETFL */
	assert_int_equal(rfcntl(l, F_GETFD), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(riomap(l, &v, sizeof(v), PROT_WRITE, 0, -1), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(riounmap(l, &v, sizeof(v)), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0; /* riowrite says failure with 0 bytes written, as in rsockets */
	assert_int_equal(riowrite(l, &v, sizeof(v), 0, 0), 0);
	assert_int_equal(errno, EOPNOTSUPP);
	assert_int_equal(rclose(l), 0);

	/* datagram rsockets are not carried */
	errno = 0;
	assert_int_equal(rsocket(AF_INET, SOCK_DGRAM, 0), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	/* a descriptor that is not an rsocket (a pipe, a closed rsocket):
	 * EBADF, as rsockets answers; rpoll takes any descriptor */
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	errno = 0;
	assert_int_equal(rsend(pp[1], "x", 1, 0), -1);
	assert_int_equal(errno, EBADF);
	errno = 0;
	assert_int_equal(rclose(l), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(write(pp[1], "x", 1), 1);
	struct pollfd p = { .fd = pp[0], .events = POLLIN };
	assert_int_equal(rpoll(&p, 1, 1000), 1);
	close(pp[0]);
	close(pp[1]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(data_both_ways_through_rpoll),
		cmocka_unit_test(options_and_refusals),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
