/*
 * test_exs_plain.c: the ES-API's calls on sockets the system made
 * (socket(2), accept(2)), in plain TCP: asynchronous I/O on the stream
 * itself, completing through the event queue in order. Each pair is a
 * loopback TCP connection of the test's own (port 0); the far end is read
 * and written with the system's calls, as a plain TCP peer would.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <exs.h>

static exs_qhandle_t Q;

static int setup(void **state)
{
	(void)state;
	if (exs_init(EXS_VERSION))
		return -1;
	Q = exs_qcreate(512);
	return Q == EXS_QHANDLE_INVALID ? -1 : 0;
}

/* a connected loopback pair: *a is the connecting end, *b the accepted */
static void tcp_pair(int *a, int *b)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(sa);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)&sa, &len), 0);
	*a = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(*a, (struct sockaddr *)&sa, sizeof(sa)), 0);
	*b = accept(l, NULL, NULL);
	assert_true(*b >= 0);
	close(l);
}

/* the next event, waited for (at most 20 s: a missing one fails) */
static exs_event_t next_event(void)
{
	exs_event_t ev;
	struct timespec t = { 20, 0 };
	assert_int_equal(exs_qdequeue(Q, &ev, -1, &t), 1);
	return ev;
}

static void no_event(void)
{
	exs_event_t ev;
	struct timespec t = { 0, 50 * 1000 * 1000 };
	assert_int_equal(exs_qdequeue(Q, &ev, -1, &t), 0);
}

static void expect(exs_event_t ev, int type, intptr_t ah, int err, ssize_t bytes)
{
	assert_int_equal(ev.exs_evt_type, type);
	assert_int_equal((intptr_t)ev.exs_evt_ahandle, ah);
	assert_int_equal(ev.exs_evt_errno, err);
	if (type == EXS_EVT_SEND || type == EXS_EVT_RECV)
		assert_int_equal(ev.exs_evt_union.xfer.bytes, bytes);
}

/* read exactly n bytes from a plain socket */
static void read_all(int fd, unsigned char *b, size_t n)
{
	size_t got = 0;
	while (got < n) {
		ssize_t r = recv(fd, b + got, n - got, 0);
		assert_true(r > 0);
		got += (size_t)r;
	}
}

static void pattern(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((i + seed) * 2654435761u >> 11);
}

static void descriptors_that_are_not_sockets_are_refused(void **state)
{
	(void)state;
	char c = 0;
	int p[2];
	assert_int_equal(pipe(p), 0);
	assert_int_equal(exs_send(p[1], &c, 1, 0, Q, NULL, NULL), -1);
	assert_int_equal(errno, ENOTSOCK);
	assert_int_equal(exs_recv(p[0], &c, 1, 0, Q, NULL, NULL), -1);
	assert_int_equal(errno, ENOTSOCK);
	assert_int_equal(exs_close(p[0], EXS_QHANDLE_INVALID, NULL), -1);
	assert_int_equal(errno, ENOTSOCK);
	close(p[0]);
	close(p[1]);
	/* a closed number */
	assert_int_equal(exs_send(p[1], &c, 1, 0, Q, NULL, NULL), -1);
	assert_int_equal(errno, EBADF);
	/* a datagram socket has no stream to carry the calls */
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	assert_int_equal(exs_send(u, &c, 1, 0, Q, NULL, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	close(u);
	/* and a queue handle is not a socket either */
	assert_int_equal(exs_send(Q, &c, 1, 0, Q, NULL, NULL), -1);
	assert_int_equal(errno, ENOTSOCK);
}

/* A send the kernel cannot take at once completes only when its last byte
 * is taken: never with part of it. */
static void a_send_completes_only_when_every_byte_is_taken(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	/* more than the two ends' buffers hold: the sender's grows to at
	 * most 4 MiB by default (net.ipv4.tcp_wmem), the receiver's is fixed */
	int rcvbuf = 256 << 10;
	setsockopt(b, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
	size_t n = 32u << 20;
	unsigned char *out = malloc(n), *in = malloc(n);
	pattern(out, n, 1);
	assert_int_equal(exs_send(a, out, n, 0, Q, (exs_ahandle_t)1, NULL), 0);
	no_event(); /* the peer reads nothing yet: most of it is still here */
	read_all(b, in, n);
	expect(next_event(), EXS_EVT_SEND, 1, 0, (ssize_t)n);
	assert_memory_equal(in, out, n);
	free(out);
	free(in);
	close(a);
	close(b);
}

/* The program's own send(2) before and after, and a ring of ES-API sends
 * between: the peer reads them in the order they were made, and their
 * events come in that order. */
static void system_and_es_api_sends_keep_the_stream_order(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	enum { N = 40, SZ = 100000 };
	unsigned char *out = malloc((size_t)N * SZ + 2), *in = malloc((size_t)N * SZ + 2);
	pattern(out, (size_t)N * SZ + 2, 7);
	assert_int_equal(send(a, out, 1, 0), 1);
	for (intptr_t i = 0; i < N; i++)
		assert_int_equal(exs_send(a, out + 1 + i * SZ, SZ, 0, Q, (exs_ahandle_t)i, NULL),
				 0);
	read_all(b, in, 1 + (size_t)N * SZ);
	for (intptr_t i = 0; i < N; i++)
		expect(next_event(), EXS_EVT_SEND, i, 0, SZ);
	assert_int_equal(send(a, out + 1 + (size_t)N * SZ, 1, 0), 1);
	read_all(b, in + 1 + (size_t)N * SZ, 1);
	assert_memory_equal(in, out, (size_t)N * SZ + 2);
	free(out);
	free(in);
	close(a);
	close(b);
}

/* Receives fill in the order they were made, each with what has come
 * (MSG_WAITALL: all it asked for); the end of the stream completes every
 * one after it with 0 bytes; the program's own recv(2) takes up after. */
static void receives_fill_in_order_and_read_the_end(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	unsigned char r1[10], r2[100], r3[8];
	assert_int_equal(exs_recv(b, r1, sizeof(r1), 0, Q, (exs_ahandle_t)1, NULL), 0);
	assert_int_equal(exs_recv(b, r2, sizeof(r2), MSG_WAITALL, Q, (exs_ahandle_t)2, NULL), 0);
	no_event();
	unsigned char out[140];
	pattern(out, sizeof(out), 3);
	assert_int_equal(send(a, out, 4, 0), 4);
	expect(next_event(), EXS_EVT_RECV, 1, 0, 4);
	assert_memory_equal(r1, out, 4);
	assert_int_equal(send(a, out + 4, 60, 0), 60);
	no_event(); /* 60 of 100 */
	assert_int_equal(send(a, out + 64, 76, 0), 76);
	expect(next_event(), EXS_EVT_RECV, 2, 0, 100);
	assert_memory_equal(r2, out + 4, 100);
	/* the rest with the program's own recv(2) */
	unsigned char rest[36];
	read_all(b, rest, sizeof(rest));
	assert_memory_equal(rest, out + 104, 36);
	/* the end: every receive waiting reads 0 */
	assert_int_equal(exs_recv(b, r3, sizeof(r3), 0, Q, (exs_ahandle_t)3, NULL), 0);
	assert_int_equal(exs_recv(b, r3, sizeof(r3), 0, Q, (exs_ahandle_t)4, NULL), 0);
	assert_int_equal(shutdown(a, SHUT_WR), 0);
	expect(next_event(), EXS_EVT_RECV, 3, 0, 0);
	expect(next_event(), EXS_EVT_RECV, 4, 0, 0);
	close(a);
	close(b);
}

/* Without a queue the calls wait and return the count, as send(2) and
 * recv(2) do; a vector is sent and received whole. */
static void calls_without_a_queue_wait_for_their_result(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	char x[] = "abcdef", y[3], z[4];
	struct iovec v[2] = { { x, 2 }, { x + 2, 4 } };
	assert_int_equal(exs_sendv(a, v, 2, 0, EXS_QHANDLE_INVALID, NULL, NULL), 6);
	struct iovec w[2] = { { y, 3 }, { z, 3 } };
	assert_int_equal(exs_recvv(b, w, 2, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL, NULL), 6);
	assert_memory_equal(y, "abc", 3);
	assert_memory_equal(z, "def", 3);
	/* the system's options and names pass through; uwarp's have no meaning here */
	int type = 0, v1 = 1;
	socklen_t len = sizeof(type);
	assert_int_equal(exs_getsockopt(a, SOL_SOCKET, SO_TYPE, &type, &len), 0);
	assert_int_equal(type, SOCK_STREAM);
	assert_int_equal(exs_setsockopt(a, IPPROTO_TCP, TCP_NODELAY, &v1, sizeof(v1)), 0);
	assert_int_equal(exs_getsockopt(a, SOL_EXS, EXS_SO_STREAM_MODE, &type, &len), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	struct sockaddr_in me, peer;
	socklen_t ml = sizeof(me), pl = sizeof(peer);
	assert_int_equal(exs_getsockname(a, (struct sockaddr *)&me, &ml), 0);
	assert_int_equal(exs_getpeername(b, (struct sockaddr *)&peer, &pl), 0);
	assert_int_equal(me.sin_port, peer.sin_port);
	close(a);
	close(b);
}

/* SHUT_WR comes after the sends made before it; later sends fail with
 * EPIPE; the peer reads every byte, then the end. */
static void shutdown_follows_the_sends_before_it(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	size_t n = 4u << 20;
	unsigned char *out = malloc(n), *in = malloc(n + 1);
	pattern(out, n, 5);
	assert_int_equal(exs_send(a, out, n, 0, Q, (exs_ahandle_t)1, NULL), 0);
	assert_int_equal(exs_shutdown(a, SHUT_WR, Q, (exs_ahandle_t)2), 0);
	assert_int_equal(exs_send(a, out, 1, 0, Q, (exs_ahandle_t)3, NULL), -1);
	assert_int_equal(errno, EPIPE);
	read_all(b, in, n);
	assert_int_equal(recv(b, in + n, 1, 0), 0);
	expect(next_event(), EXS_EVT_SEND, 1, 0, (ssize_t)n);
	expect(next_event(), EXS_EVT_SHUTDOWN, 2, 0, 0);
	assert_memory_equal(in, out, n);
	free(out);
	free(in);
	close(a);
	close(b);
}

/* exs_close: receives waiting are cancelled, sends made before it go out,
 * then the descriptor is closed. */
static void close_cancels_receives_and_lets_sends_finish(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	char r[8];
	assert_int_equal(exs_recv(a, r, sizeof(r), 0, Q, (exs_ahandle_t)1, NULL), 0);
	size_t n = 4u << 20;
	unsigned char *out = malloc(n), *in = malloc(n + 1);
	pattern(out, n, 9);
	assert_int_equal(exs_send(a, out, n, 0, Q, (exs_ahandle_t)2, NULL), 0);
	assert_int_equal(exs_close(a, Q, (exs_ahandle_t)3), 0);
	expect(next_event(), EXS_EVT_RECV, 1, ECANCELED, -1);
	read_all(b, in, n);
	expect(next_event(), EXS_EVT_SEND, 2, 0, (ssize_t)n);
	expect(next_event(), EXS_EVT_CLOSE, 3, 0, 0);
	assert_int_equal(recv(b, in + n, 1, 0), 0); /* closed after the bytes */
	assert_memory_equal(in, out, n);
	assert_int_equal(fcntl(a, F_GETFD), -1); /* the descriptor is gone */
	assert_int_equal(errno, EBADF);
	free(out);
	free(in);
	close(b);
}

/* A peer that resets the connection: the send waiting fails, and so does
 * every one after it; none is reported done. */
static void a_reset_fails_the_sends_waiting(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	size_t n = 8u << 20;
	unsigned char *out = calloc(1, n);
	assert_int_equal(exs_send(a, out, n, 0, Q, (exs_ahandle_t)1, NULL), 0);
	assert_int_equal(exs_send(a, out, n, 0, Q, (exs_ahandle_t)2, NULL), 0);
	no_event();
	struct linger lg = { 1, 0 }; /* close(2) sends RST */
	setsockopt(b, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(b);
	exs_event_t e1 = next_event(), e2 = next_event();
	assert_int_equal((intptr_t)e1.exs_evt_ahandle, 1);
	assert_int_equal((intptr_t)e2.exs_evt_ahandle, 2);
	assert_true(e1.exs_evt_errno == ECONNRESET || e1.exs_evt_errno == EPIPE);
	assert_int_equal(e2.exs_evt_errno, e1.exs_evt_errno);
	assert_int_equal(e1.exs_evt_union.xfer.bytes, -1);
	free(out);
	close(a);
}

/* Memory that is not there, or a handle that does not cover the buffer:
 * the call says EFAULT at once, and the stream and the send already made
 * go on untouched. */
static void bad_memory_is_refused_and_nothing_is_lost(void **state)
{
	(void)state;
	int a, b;
	tcp_pair(&a, &b);
	long page = sysconf(_SC_PAGESIZE);
	char *gone = mmap(NULL, (size_t)page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
			  -1, 0);
	assert_true(gone != MAP_FAILED);
	assert_int_equal(munmap(gone, (size_t)page), 0);
	char ok[] = "kept", in[4], other[16];
	exs_mhandle_t mh = exs_mregister(other, sizeof(other), 0);
	assert_non_null(mh);
	assert_int_equal(exs_send(a, ok, 4, 0, Q, (exs_ahandle_t)1, NULL), 0);
	assert_int_equal(exs_send(a, gone, 16, 0, Q, (exs_ahandle_t)2, NULL), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(exs_recv(a, gone, 16, 0, Q, (exs_ahandle_t)3, NULL), -1);
	assert_int_equal(errno, EFAULT);
	assert_int_equal(exs_send(a, ok, 4, 0, Q, (exs_ahandle_t)4, mh), -1);
	assert_int_equal(errno, EFAULT); /* mh is other's */
	expect(next_event(), EXS_EVT_SEND, 1, 0, 4);
	no_event();
	read_all(b, (unsigned char *)in, 4);
	assert_memory_equal(in, "kept", 4);
	assert_int_equal(exs_mderegister(&mh), 0);
	close(a);
	close(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(descriptors_that_are_not_sockets_are_refused),
		cmocka_unit_test(a_send_completes_only_when_every_byte_is_taken),
		cmocka_unit_test(system_and_es_api_sends_keep_the_stream_order),
		cmocka_unit_test(receives_fill_in_order_and_read_the_end),
		cmocka_unit_test(calls_without_a_queue_wait_for_their_result),
		cmocka_unit_test(shutdown_follows_the_sends_before_it),
		cmocka_unit_test(close_cancels_receives_and_lets_sends_finish),
		cmocka_unit_test(a_reset_fails_the_sends_waiting),
		cmocka_unit_test(bad_memory_is_refused_and_nothing_is_lost),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
