/*
 * test_exs_ddp.c: a socket the system made (socket(2) + connect(2)) put in
 * DDP mode: exs_setsockopt(SOL_ESOCK, ESOCK_DDPMODE) switches it, and the
 * ES-API's calls on the program's own descriptor then run over MPA and
 * the dynamic stream protocol to an ES-API server (exs_listen's sockets
 * speak nothing else: a plain byte reaching one is refused). Loopback,
 * ports from the kernel.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <exs.h>

static exs_qhandle_t Q;
static const int one = 1;

static int setup(void **state)
{
	(void)state;
	if (exs_init(EXS_VERSION))
		return -1;
	Q = exs_qcreate(256);
	return Q == EXS_QHANDLE_INVALID ? -1 : 0;
}

static exs_event_t next_event(void)
{
	exs_event_t ev;
	struct timespec t = { 20, 0 };
	assert_int_equal(exs_qdequeue(Q, &ev, -1, &t), 1);
	return ev;
}

/* an ES-API listener on a loopback port of the kernel's choosing */
static int es_listener(struct sockaddr_in *sa)
{
	int l = exs_socket(AF_INET, SOCK_STREAM, 0);
	*sa = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(*sa);
	assert_true(l >= 0);
	assert_int_equal(exs_bind(l, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(exs_listen(l, 4), 0);
	assert_int_equal(exs_getsockname(l, (struct sockaddr *)sa, &len), 0);
	return l;
}

/* a system listener on a loopback port of the kernel's choosing */
static int tcp_listener(struct sockaddr_in *sa)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	*sa = (struct sockaddr_in){ .sin_family = AF_INET,
				    .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(*sa);
	assert_true(l >= 0);
	assert_int_equal(bind(l, (struct sockaddr *)sa, sizeof(*sa)), 0);
	assert_int_equal(listen(l, 1), 0);
	assert_int_equal(getsockname(l, (struct sockaddr *)sa, &len), 0);
	return l;
}

static int tcp_connected(const struct sockaddr_in *sa)
{
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (const struct sockaddr *)sa, sizeof(*sa)), 0);
	return c;
}

/* a loopback connection of system sockets: *c connected, *b accepted;
 * returns the listener, left open (it marks *b as the accepting end) */
static int accepted_pair(int *c, int *b)
{
	struct sockaddr_in sa;
	int l = tcp_listener(&sa);
	*c = tcp_connected(&sa);
	*b = accept(l, NULL, NULL);
	assert_true(*b >= 0);
	return l;
}

static int ddp_mode(int fd)
{
	int v = -1;
	socklen_t len = sizeof(v);
	assert_int_equal(exs_getsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &v, &len), 0);
	return v;
}

static void pattern(unsigned char *b, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (unsigned char)((i + seed) * 2654435761u >> 11);
}

/* @n bytes from @from to @to over ES-API calls: 16 sends in flight from
 * odd offsets, one waiting receive at the far end */
static void stream(int from, int to, size_t n)
{
	unsigned char *src = malloc(n + 1), *dst = malloc(n);
	assert_non_null(src);
	assert_non_null(dst);
	pattern(src + 1, n, (unsigned)n);
	size_t part = n / 16;
	for (int i = 0; i < 16; i++) {
		size_t len = i == 15 ? n - 15 * part : part;
		assert_int_equal(exs_send(from, src + 1 + (size_t)i * part, len, 0, Q,
					  (exs_ahandle_t)(intptr_t)i, NULL),
				 0);
	}
	assert_int_equal(exs_recv(to, dst, n, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL, NULL),
			 (ssize_t)n);
	for (int i = 0; i < 16; i++) {
		exs_event_t ev = next_event();
		assert_int_equal(ev.exs_evt_type, EXS_EVT_SEND);
		assert_int_equal(ev.exs_evt_errno, 0);
		assert_int_equal(ev.exs_evt_fd, from);
		assert_int_equal((intptr_t)ev.exs_evt_ahandle, i);
	}
	assert_memory_equal(src + 1, dst, n);
	free(src);
	free(dst);
}

static void a_connected_socket_switches_and_talks_to_an_es_api_server(void **state)
{
	(void)state;
	struct sockaddr_in sa;
	int l = es_listener(&sa);
	int c = tcp_connected(&sa);
	assert_int_equal(ddp_mode(c), 0);
	/* the MPA exchange happens in the call (the listener answers it) */
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	assert_int_equal(ddp_mode(c), 1);
	int a = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	assert_true(a >= 0);
	stream(c, a, 4u << 20);
	stream(a, c, 65537);
	/* the names are the connection's */
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	assert_int_equal(exs_getpeername(c, (struct sockaddr *)&peer, &len), 0);
	assert_int_equal(peer.sin_port, sa.sin_port);
	/* the end goes over the protocol; exs_close takes the program's number */
	assert_int_equal(exs_shutdown(c, SHUT_WR, EXS_QHANDLE_INVALID, NULL), 0);
	char b;
	assert_int_equal(exs_recv(a, &b, 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), 0);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(fcntl(c, F_GETFD), -1);
	assert_int_equal(errno, EBADF);
	assert_int_equal(exs_close(a, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(l, EXS_QHANDLE_INVALID, NULL), 0);
}

static void a_socket_marked_before_connect_switches_at_its_first_call(void **state)
{
	(void)state;
	struct sockaddr_in sa;
	int l = es_listener(&sa);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	assert_int_equal(ddp_mode(c), 1);
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	/* the first call makes the exchange: without it the listener would
	 * never hand out a connection */
	assert_int_equal(exs_send(c, "x", 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), 1);
	int a = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	assert_true(a >= 0);
	char x;
	assert_int_equal(exs_recv(a, &x, 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), 1);
	assert_int_equal(x, 'x');
	stream(c, a, 65536);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(a, EXS_QHANDLE_INVALID, NULL), 0);
	assert_int_equal(exs_close(l, EXS_QHANDLE_INVALID, NULL), 0);
}

static void a_peer_that_is_not_iwarp_fails_the_switch(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	close(l);
	/* a plain TCP server that hangs up on the MPA Request */
	shutdown(b, SHUT_RDWR);
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), -1);
	assert_true(errno == ECONNRESET || errno == ECONNREFUSED);
	/* every later call says so, at once */
	char x = 0;
	assert_int_equal(exs_send(c, &x, 1, 0, Q, NULL, NULL), -1);
	assert_true(errno == ECONNRESET || errno == ECONNREFUSED);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	close(b);
}

/* a recv's event: its handle, its socket and its bytes */
static void expect_recv(int fd, intptr_t ah, const void *want, ssize_t n, const void *buf)
{
	exs_event_t ev = next_event();
	assert_int_equal(ev.exs_evt_type, EXS_EVT_RECV);
	assert_int_equal(ev.exs_evt_errno, 0);
	assert_int_equal(ev.exs_evt_fd, fd);
	assert_int_equal((intptr_t)ev.exs_evt_ahandle, ah);
	assert_int_equal(ev.exs_evt_union.xfer.bytes, n);
	assert_memory_equal(buf, want, (size_t)n);
}

static void two_system_sockets_in_ddp_mode_talk_over_ddp(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	/* the accepting end returns at once, and so does a receive made
	 * before the client has said anything: they wait for its first bytes
	 * without holding up the caller */
	assert_int_equal(exs_setsockopt(b, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	char first[5];
	assert_int_equal(exs_recv(b, first, 5, MSG_WAITALL, Q, (exs_ahandle_t)(intptr_t)7, NULL),
			 0);
	/* the connecting end's switch: its MPA Request is sorted there */
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	assert_int_equal(exs_send(c, "hello", 5, 0, EXS_QHANDLE_INVALID, NULL, NULL), 5);
	expect_recv(b, 7, "hello", 5, first);
	assert_int_equal(ddp_mode(b), 1);
	stream(c, b, 4u << 20);
	stream(b, c, 65537);
	assert_int_equal(exs_close(c, EXS_QHANDLE_INVALID, NULL), 0);
	char x;
	assert_int_equal(exs_recv(b, &x, 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), 0);
	assert_int_equal(exs_close(b, EXS_QHANDLE_INVALID, NULL), 0);
	close(l);
}

static void an_accepted_socket_in_ddp_mode_serves_a_plain_client(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	assert_int_equal(exs_setsockopt(b, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	char got[5];
	assert_int_equal(exs_recv(b, got, 5, MSG_WAITALL, Q, (exs_ahandle_t)(intptr_t)8, NULL), 0);
	assert_int_equal(send(c, "plain", 5, 0), 5);
	expect_recv(b, 8, "plain", 5, got);
	/* sorted for good: plain TCP both ways */
	assert_int_equal(ddp_mode(b), 0);
	assert_int_equal(exs_send(b, "back", 4, 0, EXS_QHANDLE_INVALID, NULL, NULL), 4);
	assert_int_equal(recv(c, got, 4, MSG_WAITALL), 4);
	assert_memory_equal(got, "back", 4);
	close(b);
	close(c);
	close(l);
}

static void a_part_of_the_key_and_silence_is_plain_data(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	assert_int_equal(send(c, "MPA ID", 6, 0), 6);
	assert_int_equal(exs_setsockopt(b, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	char got[6];
	assert_int_equal(exs_recv(b, got, 6, MSG_WAITALL, Q, (exs_ahandle_t)(intptr_t)9, NULL), 0);
	expect_recv(b, 9, "MPA ID", 6, got);
	close(b);
	close(c);
	close(l);
}

static void closing_while_sorting_cancels_what_was_held(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	assert_int_equal(exs_setsockopt(b, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	char got[4];
	assert_int_equal(exs_recv(b, got, 4, 0, Q, (exs_ahandle_t)(intptr_t)10, NULL), 0);
	assert_int_equal(exs_close(b, EXS_QHANDLE_INVALID, NULL), 0);
	exs_event_t ev = next_event();
	assert_int_equal(ev.exs_evt_type, EXS_EVT_RECV);
	assert_int_equal((intptr_t)ev.exs_evt_ahandle, 10);
	assert_int_equal(ev.exs_evt_errno, ECANCELED);
	assert_int_equal(recv(c, got, 1, 0), 0); /* the client sees the end */
	close(c);
	close(l);
}

/* a client that sends the MPA Request's key and then nothing holds up
 * no other client of the same server: its receive waits (held, the
 * negotiation handed over) while another's completes */
static void a_client_stuck_in_its_request_holds_up_no_other(void **state)
{
	(void)state;
	int c1, b1, c2, b2;
	int l1 = accepted_pair(&c1, &b1);
	assert_int_equal(send(c1, "MPA ID Req Frame", 16, 0), 16);
	assert_int_equal(exs_setsockopt(b1, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	char got1[4], got2[5];
	assert_int_equal(exs_recv(b1, got1, 4, 0, Q, (exs_ahandle_t)(intptr_t)11, NULL), 0);
	int l2 = accepted_pair(&c2, &b2);
	assert_int_equal(exs_setsockopt(b2, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	assert_int_equal(exs_recv(b2, got2, 5, MSG_WAITALL, Q, (exs_ahandle_t)(intptr_t)12, NULL),
			 0);
	assert_int_equal(send(c2, "hello", 5, 0), 5);
	expect_recv(b2, 12, "hello", 5, got2);
	/* the stuck one's receive ends with its close */
	assert_int_equal(exs_close(b1, EXS_QHANDLE_INVALID, NULL), 0);
	exs_event_t ev = next_event();
	assert_int_equal((intptr_t)ev.exs_evt_ahandle, 11);
	assert_int_equal(ev.exs_evt_errno, ECANCELED);
	close(c1);
	close(b2);
	close(c2);
	close(l1);
	close(l2);
}

static void plain_bytes_on_their_way_keep_the_socket_plain(void **state)
{
	(void)state;
	int c, b;
	int l = accepted_pair(&c, &b);
	close(l);
	char x[16];
	assert_int_equal(exs_recv(c, x, sizeof(x), 0, Q, NULL, NULL), 0);
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), -1);
	assert_int_equal(errno, EBUSY);
	assert_int_equal(send(b, "plain", 5, 0), 5);
	exs_event_t ev = next_event();
	assert_int_equal(ev.exs_evt_type, EXS_EVT_RECV);
	assert_int_equal(ev.exs_evt_union.xfer.bytes, 5);
	assert_int_equal(ddp_mode(c), 0);
	close(b);
	close(c);
}

static void a_number_closed_with_close_and_used_again_is_a_new_socket(void **state)
{
	(void)state;
	struct sockaddr_in sa;
	int l = es_listener(&sa);
	int c = tcp_connected(&sa);
	assert_int_equal(exs_setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	int a = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	assert_true(a >= 0);
	/* the program lets its number go the system's way, and it comes
	 * back as another connection's (plain TCP now) */
	close(c);
	struct sockaddr_in sb;
	int ls = tcp_listener(&sb);
	int n = tcp_connected(&sb);
	int b = accept(ls, NULL, NULL);
	close(ls);
	assert_int_equal(dup2(n, c), c);
	close(n);
	assert_int_equal(ddp_mode(c), 0);
	assert_int_equal(exs_send(c, "new", 3, 0, EXS_QHANDLE_INVALID, NULL, NULL), 3);
	char got[3];
	assert_int_equal(recv(b, got, 3, MSG_WAITALL), 3);
	assert_memory_equal(got, "new", 3);
	/* and the old connection ended: its far end reads the end or an error */
	char x;
	assert_true(exs_recv(a, &x, 1, 0, EXS_QHANDLE_INVALID, NULL, NULL) <= 0);
	exs_close(a, EXS_QHANDLE_INVALID, NULL);
	exs_close(l, EXS_QHANDLE_INVALID, NULL);
	close(b);
	close(c);
}

/* What cannot be done says why: an option of SOL_ESOCK's that is not
 * there, a value of the wrong size, and an ES-API call on a socket marked
 * for DDP mode that was never connected (there is no one to speak MPA
 * to): ENOPROTOOPT, EINVAL, ENOTCONN; the socket is unharmed and can
 * still be connected and used. */
static void bad_options_and_a_never_connected_socket_say_why(void **state)
{
	(void)state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(fd >= 0);
	assert_int_equal(exs_setsockopt(fd, SOL_ESOCK, 99, &one, sizeof(one)), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	assert_int_equal(exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, 2), -1);
	assert_int_equal(errno, EINVAL);
	assert_int_equal(exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
	assert_int_equal(exs_send(fd, "x", 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), -1);
	assert_int_equal(errno, ENOTCONN);
	char c;
	assert_int_equal(exs_recv(fd, &c, 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), -1);
	assert_int_equal(errno, ENOTCONN);
	/* connected now, to an ES-API server: it switches and talks */
	struct sockaddr_in sa;
	int l = es_listener(&sa);
	assert_int_equal(connect(fd, (const struct sockaddr *)&sa, sizeof(sa)), 0);
	assert_int_equal(exs_send(fd, "y", 1, 0, EXS_QHANDLE_INVALID, NULL, NULL), 1);
	int a = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	assert_true(a >= 0);
	assert_int_equal(exs_recv(a, &c, 1, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL, NULL), 1);
	assert_int_equal(c, 'y');
	assert_int_equal(ddp_mode(fd), 1);
	exs_close(fd, EXS_QHANDLE_INVALID, NULL);
	exs_close(a, EXS_QHANDLE_INVALID, NULL);
	exs_close(l, EXS_QHANDLE_INVALID, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_connected_socket_switches_and_talks_to_an_es_api_server),
		cmocka_unit_test(bad_options_and_a_never_connected_socket_say_why),
		cmocka_unit_test(a_socket_marked_before_connect_switches_at_its_first_call),
		cmocka_unit_test(a_peer_that_is_not_iwarp_fails_the_switch),
		cmocka_unit_test(two_system_sockets_in_ddp_mode_talk_over_ddp),
		cmocka_unit_test(an_accepted_socket_in_ddp_mode_serves_a_plain_client),
		cmocka_unit_test(a_part_of_the_key_and_silence_is_plain_data),
		cmocka_unit_test(closing_while_sorting_cancels_what_was_held),
		cmocka_unit_test(a_client_stuck_in_its_request_holds_up_no_other),
		cmocka_unit_test(plain_bytes_on_their_way_keep_the_socket_plain),
		cmocka_unit_test(a_number_closed_with_close_and_used_again_is_a_new_socket),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
