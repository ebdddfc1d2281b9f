/*
 * test_esock.c: the socket calls on a DDP-mode connection behave as on a
 * plain TCP connection. Every test runs twice, on a plain TCP pair and on
 * a pair switched to DDP with setsockopt(SOL_ESOCK, ESOCK_DDPMODE), and
 * checks the same observable results; the DDP run also checks that the
 * connection really is carried over DDP (esock_is_ddp). Linked with
 * libesock, which replaces the C library's socket calls.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include <esock.h>
#include <exs.h>

struct pair {
	bool ddp;
	int c, s; /* the client's and the server's connected sockets */
};

static int mode_plain = 0, mode_ddp = 1;

static void set_ddp(int fd, bool on)
{
	if (!on)
		return;
	int one = 1;
	assert_int_equal(setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)), 0);
}

static int listener(bool ddp, uint16_t *port)
{
	int l = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(l >= 0);
	set_ddp(l, ddp);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(bind(l, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(l, 16), 0);
	socklen_t len = sizeof(a);
	assert_int_equal(getsockname(l, (struct sockaddr *)&a, &len), 0);
	*port = ntohs(a.sin_port);
	return l;
}

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif
#ifdef __SANITIZE_ADDRESS__
#define UNDER_ASAN 1
#endif

/* Whether the process's page faults and resident memory are the C
 * library allocator's: a sanitizer's own allocator holds freed blocks back
 * (each allocation comes from fresh pages) and adds its shadow memory. */
static bool libc_allocator(void)
{
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return false;
#endif
#endif
#if defined(UNDER_ASAN) || defined(__SANITIZE_THREAD__)
	return false;
#endif
	return true;
}

/* Whether a child forked from this (threaded) process may allocate. glibc's
 * malloc holds its locks across fork; AddressSanitizer's allocator before
 * LLVM 18 does not, so a child forked while uwarp's gate or progress thread
 * was inside malloc or free inherits that lock held and hangs at its next
 * allocation (seen here: a forked server and client both stuck in ASan's
 * calloc, about one run in a thousand under load). ThreadSanitizer ends a
 * forked child that starts a thread. The tests that fork run in the normal
 * build everywhere. */
static bool forked_child_may_allocate(void)
{
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return false;
#endif
#endif
#if defined(UNDER_ASAN) && defined(__clang_major__) && __clang_major__ < 18
	return false;
#endif
	return true;
}

static int wait_fd(int fd, short ev, int ms)
{
	struct pollfd p = { .fd = fd, .events = ev };
	int n = poll(&p, 1, ms);
	return n > 0 ? p.revents : 0;
}

static void connect_nb(int c, uint16_t port)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
	int rc = connect(c, (struct sockaddr *)&a, sizeof(a));
	assert_true(rc == 0 || errno == EINPROGRESS);
}

/* a connected pair, both ends blocking */
static struct pair make_pair(bool ddp)
{
	uint16_t port;
	int l = listener(ddp, &port);
	struct pair p = { .ddp = ddp };
	p.c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(p.c >= 0);
	set_ddp(p.c, ddp);
	connect_nb(p.c, port);
	p.s = accept(l, NULL, NULL);
	assert_true(p.s >= 0);
	assert_true(wait_fd(p.c, POLLOUT, 10000) & POLLOUT);
	int err = -1;
	socklen_t len = sizeof(err);
	assert_int_equal(getsockopt(p.c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	assert_int_equal(err, 0);
	fcntl(p.c, F_SETFL, fcntl(p.c, F_GETFL) & ~O_NONBLOCK);
	close(l);
	assert_int_equal(esock_is_ddp(p.c), ddp);
	assert_int_equal(esock_is_ddp(p.s), ddp);
	return p;
}

static void close_pair(struct pair *p)
{
	close(p->c);
	close(p->s);
}

static bool ddp_of(void **state) { return *(int *)*state == mode_ddp; }

static void write_all(int fd, const void *buf, size_t n)
{
	const uint8_t *b = buf;
	while (n) {
		ssize_t w = write(fd, b, n);
		assert_true(w > 0);
		b += w;
		n -= (size_t)w;
	}
}

static void read_all(int fd, void *buf, size_t n)
{
	uint8_t *b = buf;
	while (n) {
		ssize_t r = read(fd, b, n);
		assert_true(r > 0);
		b += r;
		n -= (size_t)r;
	}
}

/* ---- the tests ---- */

/* accept4's flags and address, on a DDP listener as on a plain one: the
 * accepted socket is non-blocking and close-on-exec, the address is the
 * client's */
static void accept4_applies_its_flags(void **state)
{
	bool ddp = ddp_of(state);
	uint16_t port;
	int l = listener(ddp, &port);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, ddp);
	connect_nb(c, port);
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	int s = accept4(l, (struct sockaddr *)&peer, &plen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	assert_true(s >= 0);
	assert_int_equal(esock_is_ddp(s), ddp);
	assert_true(fcntl(s, F_GETFL) & O_NONBLOCK);
	assert_true(fcntl(s, F_GETFD) & FD_CLOEXEC);
	struct sockaddr_in me;
	socklen_t mlen = sizeof(me);
	assert_true(wait_fd(c, POLLOUT, 10000) & POLLOUT);
	assert_int_equal(getsockname(c, (struct sockaddr *)&me, &mlen), 0);
	assert_int_equal(plen, sizeof(peer));
	assert_int_equal(peer.sin_port, me.sin_port);
	char b[4];
	errno = 0;
	assert_int_equal(read(s, b, sizeof(b)), -1);
	assert_int_equal(errno, EAGAIN);
	write_all(c, "ok", 2);
	assert_true(wait_fd(s, POLLIN, 5000) & POLLIN);
	assert_int_equal(read(s, b, sizeof(b)), 2);
	close(c);
	close(s);
	close(l);
}

static void bytes_flow_both_ways(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	write_all(p.c, "hello", 5);
	char b[16] = { 0 };
	read_all(p.s, b, 5);
	assert_memory_equal(b, "hello", 5);
	assert_int_equal(send(p.s, "world!", 6, 0), 6);
	assert_int_equal(recv(p.c, b, 6, MSG_WAITALL), 6);
	assert_memory_equal(b, "world!", 6);
	close_pair(&p);
}

/* the names and the socket's identity are TCP's */
static void names_and_identity_are_tcp(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	struct sockaddr_in cl, cp, sl, sp;
	socklen_t len = sizeof(cl);
	assert_int_equal(getsockname(p.c, (struct sockaddr *)&cl, &len), 0);
	len = sizeof(cp);
	assert_int_equal(getpeername(p.c, (struct sockaddr *)&cp, &len), 0);
	len = sizeof(sl);
	assert_int_equal(getsockname(p.s, (struct sockaddr *)&sl, &len), 0);
	len = sizeof(sp);
	assert_int_equal(getpeername(p.s, (struct sockaddr *)&sp, &len), 0);
	assert_int_equal(cl.sin_port, sp.sin_port);
	assert_int_equal(cp.sin_port, sl.sin_port);
	int v = 0;
	len = sizeof(v);
	assert_int_equal(getsockopt(p.c, SOL_SOCKET, SO_TYPE, &v, &len), 0);
	assert_int_equal(v, SOCK_STREAM);
	assert_int_equal(getsockopt(p.c, SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
	assert_int_equal(v, AF_INET);
	assert_int_equal(getsockopt(p.c, SOL_SOCKET, SO_PROTOCOL, &v, &len), 0);
	assert_int_equal(v, IPPROTO_TCP);
	v = 1;
	assert_int_equal(setsockopt(p.c, IPPROTO_TCP, TCP_NODELAY, &v, sizeof(v)), 0);
	v = 0;
	assert_int_equal(getsockopt(p.c, IPPROTO_TCP, TCP_NODELAY, &v, &len), 0);
	assert_int_equal(v, 1);
	assert_int_equal(getsockopt(p.c, SOL_ESOCK, ESOCK_DDPMODE, &v, &len), 0);
	assert_int_equal(v, p.ddp);
	close_pair(&p);
}

/* This thread's yields: the executable exports sched_yield
 * (tests/CMakeLists.txt), so it stands in for the C library's in esock's
 * library too, and yields for real. */
static __thread int yields;

__attribute__((visibility("default"))) int sched_yield(void)
{
	yields++;
	return (int)syscall(SYS_sched_yield);
}

static void nonblocking_read_says_eagain(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	char b[8];
	errno = 0;
	int before = yields;
	assert_int_equal(recv(p.s, b, sizeof(b), MSG_DONTWAIT), -1);
	assert_int_equal(errno, EAGAIN);
	/* a DDP socket's empty read gives up the CPU, so a program polling
	 * it in a loop leaves the progress thread, which brings its bytes, a
	 * core (esock_io.c); one that finds bytes does not */
	if (ddp_of(state)) {
		assert_int_equal(yields - before, 1);
		write_all(p.c, "x", 1);
		assert_true(wait_fd(p.s, POLLIN, 5000) & POLLIN);
		before = yields;
		assert_int_equal(recv(p.s, b, sizeof(b), MSG_DONTWAIT), 1);
		assert_int_equal(yields, before);
	}
	fcntl(p.s, F_SETFL, fcntl(p.s, F_GETFL) | O_NONBLOCK);
	errno = 0;
	assert_int_equal(read(p.s, b, sizeof(b)), -1);
	assert_int_equal(errno, EAGAIN);
	int off = 0;
	assert_int_equal(ioctl(p.s, FIONBIO, &off), 0);
	assert_int_equal(fcntl(p.s, F_GETFL) & O_NONBLOCK, 0);
	close_pair(&p);
}

struct delayed {
	int fd;
	const char *what;
	size_t len;
	int ms;
};

static void *write_later(void *arg)
{
	struct delayed *d = arg;
	usleep((useconds_t)d->ms * 1000);
	write_all(d->fd, d->what, d->len);
	return NULL;
}

/* O_NONBLOCK belongs to the open socket, whichever name sets it: FIONBIO
 * on a duplicate makes the original non-blocking, fcntl on the original
 * makes the duplicate blocking again (a read then waits for the bytes) */
static void blocking_mode_is_shared_by_every_name(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	int d = dup(p.s);
	int on = 1;
	assert_int_equal(ioctl(d, FIONBIO, &on), 0);
	char b[8];
	errno = 0;
	assert_int_equal(read(p.s, b, sizeof(b)), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(fcntl(p.s, F_SETFL, fcntl(p.s, F_GETFL) & ~O_NONBLOCK), 0);
	struct delayed w = { p.c, "later", 5, 50 };
	pthread_t t;
	pthread_create(&t, NULL, write_later, &w);
	assert_int_equal(recv(d, b, 5, MSG_WAITALL), 5);
	assert_memory_equal(b, "later", 5);
	pthread_join(t, NULL);
	close(d);
	close_pair(&p);
}

static void peek_and_fionread_leave_the_bytes(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	write_all(p.c, "abcdef", 6);
	assert_true(wait_fd(p.s, POLLIN, 5000) & POLLIN);
	int avail = 0;
	for (int i = 0; i < 1000 && avail < 6; i++) {
		assert_int_equal(ioctl(p.s, FIONREAD, &avail), 0);
		if (avail < 6)
			usleep(1000);
	}
	assert_int_equal(avail, 6);
	char b[8] = { 0 };
	assert_int_equal(recv(p.s, b, 3, MSG_PEEK), 3);
	assert_memory_equal(b, "abc", 3);
	assert_int_equal(recv(p.s, b, 6, 0), 6);
	assert_memory_equal(b, "abcdef", 6);
	assert_int_equal(ioctl(p.s, FIONREAD, &avail), 0);
	assert_int_equal(avail, 0);
	close_pair(&p);
}

static void waitall_gathers_several_writes(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	write_all(p.c, "12", 2);
	struct delayed d = { p.c, "345678", 6, 50 };
	pthread_t t;
	pthread_create(&t, NULL, write_later, &d);
	char b[8] = { 0 };
	assert_int_equal(recv(p.s, b, 8, MSG_WAITALL), 8);
	assert_memory_equal(b, "12345678", 8);
	pthread_join(t, NULL);
	close_pair(&p);
}

static void scatter_gather_calls(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	struct iovec w[3] = { { "ab", 2 }, { "cde", 3 }, { "f", 1 } };
	assert_int_equal(writev(p.c, w, 3), 6);
	struct msghdr m = { .msg_iov = w, .msg_iovlen = 2 };
	assert_int_equal(sendmsg(p.c, &m, MSG_NOSIGNAL), 5);
	char x[4], y[7];
	struct iovec r[2] = { { x, 4 }, { y, 7 } };
	struct msghdr rm = { .msg_iov = r, .msg_iovlen = 2 };
	assert_int_equal(recvmsg(p.s, &rm, MSG_WAITALL), 11);
	assert_memory_equal(x, "abcd", 4);
	assert_memory_equal(y, "efabcde", 7);
	assert_int_equal(rm.msg_flags, 0);
	assert_int_equal(sendto(p.s, "zz", 2, 0, NULL, 0), 2);
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	assert_int_equal(recvfrom(p.c, x, 2, MSG_WAITALL, (struct sockaddr *)&from, &fl), 2);
	struct iovec rv = { y, 2 };
	assert_int_equal(write(p.s, "qq", 2), 2);
	assert_int_equal(readv(p.c, &rv, 1) > 0, 1);
	close_pair(&p);
}

static void half_close_ends_the_stream_one_way(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	write_all(p.c, "last", 4);
	assert_int_equal(shutdown(p.c, SHUT_WR), 0);
	char b[8];
	read_all(p.s, b, 4);
	assert_int_equal(read(p.s, b, sizeof(b)), 0); /* end of stream */
	short ev = (short)wait_fd(p.s, POLLIN | POLLRDHUP, 1000);
	assert_true(ev & POLLIN);
	assert_true(ev & POLLRDHUP);
	assert_false(ev & POLLHUP);
	/* the other way still works */
	write_all(p.s, "back", 4);
	read_all(p.c, b, 4);
	assert_memory_equal(b, "back", 4);
	errno = 0;
	assert_int_equal(send(p.c, "x", 1, MSG_NOSIGNAL), -1);
	assert_int_equal(errno, EPIPE);
	/* both ways over: POLLHUP */
	assert_int_equal(shutdown(p.s, SHUT_WR), 0);
	assert_int_equal(read(p.c, b, sizeof(b)), 0);
	for (int i = 0; i < 500 && !(wait_fd(p.s, POLLIN, 10) & POLLHUP); i++)
		;
	ev = (short)wait_fd(p.c, POLLIN, 1000);
	assert_true(ev & POLLHUP);
	close_pair(&p);
}

static volatile sig_atomic_t pipes;
static void on_pipe(int sig)
{
	(void)sig;
	pipes++;
}

static void write_after_the_end_raises_sigpipe(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	struct sigaction sa = { .sa_handler = on_pipe }, old;
	sigaction(SIGPIPE, &sa, &old);
	pipes = 0;
	assert_int_equal(shutdown(p.c, SHUT_WR), 0);
	errno = 0;
	assert_int_equal(write(p.c, "x", 1), -1);
	assert_int_equal(errno, EPIPE);
	assert_int_equal(pipes, 1);
	assert_int_equal(send(p.c, "x", 1, MSG_NOSIGNAL), -1);
	assert_int_equal(pipes, 1);
	sigaction(SIGPIPE, &old, NULL);
	close_pair(&p);
}

static void close_gives_the_peer_eof_after_the_data(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	static uint8_t big[3 << 20];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + 3);
	fcntl(p.c, F_SETFL, fcntl(p.c, F_GETFL) | O_NONBLOCK);
	size_t sent = 0;
	while (sent < sizeof(big)) {
		ssize_t w = write(p.c, big + sent, sizeof(big) - sent);
		if (w > 0)
			sent += (size_t)w;
		else
			break; /* the rest would wait: close with bytes on their way */
	}
	close(p.c);
	static uint8_t got[3 << 20];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(p.s, got + n, sizeof(got) - n);
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	assert_int_equal(n, sent);
	assert_memory_equal(got, big, n);
	close(p.s);
}

/* a shutdown while written bytes are still on their way: the peer reads
 * every one of them, then the end of the stream */
static void shutdown_comes_after_every_byte_written(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	static uint8_t big[3 << 20];
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 13 + 1);
	fcntl(p.c, F_SETFL, fcntl(p.c, F_GETFL) | O_NONBLOCK);
	size_t sent = 0;
	for (size_t at = 0; at < sizeof(big); at += 4096) {
		/* many small writes: several wait in the send buffer together */
		ssize_t w = write(p.c, big + at, 4096);
		if (w <= 0)
			break;
		sent += (size_t)w;
	}
	assert_int_equal(shutdown(p.c, SHUT_WR), 0);
	static uint8_t got[3 << 20];
	size_t n = 0;
	for (;;) {
		ssize_t r = read(p.s, got + n, sizeof(got) - n);
		assert_true(r >= 0);
		if (r == 0)
			break;
		n += (size_t)r;
	}
	assert_int_equal(n, sent);
	assert_memory_equal(got, big, n);
	close_pair(&p);
}

/* a full send side: non-blocking writes stop with EAGAIN, POLLOUT goes;
 * once the peer reads, POLLOUT comes back */
static void writability_follows_the_send_buffer(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	fcntl(p.c, F_SETFL, fcntl(p.c, F_GETFL) | O_NONBLOCK);
	static uint8_t chunk[64 << 10];
	size_t total = 0;
	int guard = 0;
	/* Fill until the pipe is full, not only the send buffer: what the
	 * first EAGAIN leaves may still move on to the peer (over DDP the
	 * engine thread writes it into the peer's ring, and on a loaded
	 * machine it runs behind this loop), and POLLOUT rightly comes back.
	 * Full is when writability stays away for a while. */
	do {
		for (;;) {
			ssize_t w = write(p.c, chunk, sizeof(chunk));
			if (w < 0) {
				assert_int_equal(errno, EAGAIN);
				break;
			}
			total += (size_t)w;
			assert_true(++guard < 100000);
		}
	} while (wait_fd(p.c, POLLOUT, 300) & POLLOUT);
	assert_false(wait_fd(p.c, POLLOUT, 0) & POLLOUT);
	int ep = epoll_create1(0);
	struct epoll_event ee = { .events = EPOLLOUT | EPOLLET, .data.fd = p.c };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, p.c, &ee), 0);
	struct epoll_event got;
	assert_int_equal(epoll_wait(ep, &got, 1, 0), 0);
	static uint8_t sink[256 << 10];
	size_t drained = 0;
	while (drained < total) {
		ssize_t r = read(p.s, sink, sizeof(sink));
		assert_true(r > 0);
		drained += (size_t)r;
	}
	assert_true(wait_fd(p.c, POLLOUT, 5000) & POLLOUT);
	assert_int_equal(epoll_wait(ep, &got, 1, 5000), 1);
	assert_true(got.events & EPOLLOUT);
	close(ep);
	close_pair(&p);
}

/* readiness through poll, select and the three epoll modes */
static void readiness_in_every_interface(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	int lt = epoll_create1(0), et = epoll_create1(0), os = epoll_create1(0);
	struct epoll_event e1 = { .events = EPOLLIN, .data.fd = p.s };
	struct epoll_event e2 = { .events = EPOLLIN | EPOLLET, .data.fd = p.s };
	struct epoll_event e3 = { .events = EPOLLIN | EPOLLONESHOT, .data.fd = p.s };
	assert_int_equal(epoll_ctl(lt, EPOLL_CTL_ADD, p.s, &e1), 0);
	assert_int_equal(epoll_ctl(et, EPOLL_CTL_ADD, p.s, &e2), 0);
	assert_int_equal(epoll_ctl(os, EPOLL_CTL_ADD, p.s, &e3), 0);
	struct epoll_event got;
	assert_int_equal(wait_fd(p.s, POLLIN, 0), 0);
	assert_int_equal(epoll_wait(lt, &got, 1, 0), 0);
	write_all(p.c, "a", 1);
	assert_int_equal(epoll_wait(et, &got, 1, 5000), 1); /* the edge */
	assert_int_equal(epoll_wait(et, &got, 1, 0), 0);    /* once */
	assert_int_equal(epoll_wait(lt, &got, 1, 0), 1);    /* level: again */
	assert_int_equal(epoll_wait(lt, &got, 1, 0), 1);
	assert_int_equal(epoll_wait(os, &got, 1, 0), 1);
	assert_int_equal(epoll_wait(os, &got, 1, 0), 0); /* disarmed */
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(p.s, &rs);
	struct timeval tv = { 0, 0 };
	assert_int_equal(select(p.s + 1, &rs, NULL, NULL, &tv), 1);
	struct timespec ts = { 0, 0 };
	struct pollfd pf = { .fd = p.s, .events = POLLIN };
	assert_int_equal(ppoll(&pf, 1, &ts, NULL), 1);
	FD_ZERO(&rs);
	FD_SET(p.s, &rs);
	assert_int_equal(pselect(p.s + 1, &rs, NULL, NULL, &ts, NULL), 1);
	/* more data while still readable: an edge-triggered waiter hears it */
	write_all(p.c, "b", 1);
	assert_int_equal(epoll_wait(et, &got, 1, 5000), 1);
	char b[4];
	read_all(p.s, b, 2);
	assert_int_equal(epoll_wait(lt, &got, 1, 0), 0); /* nothing left */
	/* the reads sent the writer control traffic (DDP: new adverts; TCP:
	 * window updates), which carries no data: not readable there */
	assert_int_equal(wait_fd(p.c, POLLIN, 100), 0);
	assert_int_equal(wait_fd(p.s, POLLIN, 0), 0);
	assert_int_equal(epoll_ctl(os, EPOLL_CTL_MOD, p.s, &e3), 0);
	write_all(p.c, "c", 1);
	assert_int_equal(epoll_wait(os, &got, 1, 5000), 1); /* re-armed */
	close(lt);
	close(et);
	close(os);
	close_pair(&p);
}

static void duplicates_share_the_connection(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	int d1 = dup(p.c);
	int d2 = fcntl(p.c, F_DUPFD_CLOEXEC, 100);
	assert_true(d2 >= 100);
	int d3 = dup3(p.c, 200, O_CLOEXEC);
	assert_int_equal(d3, 200);
	int d4 = dup2(p.c, 201);
	assert_int_equal(d4, 201);
	assert_int_equal(esock_is_ddp(d2), p.ddp);
	close(p.c); /* the others keep it open */
	write_all(d1, "1", 1);
	write_all(d2, "2", 1);
	write_all(d3, "3", 1);
	write_all(d4, "4", 1);
	char b[4];
	read_all(p.s, b, 4);
	assert_memory_equal(b, "1234", 4);
	close(d1);
	close(d2);
	close(d3);
	write_all(d4, "5", 1);
	read_all(p.s, b, 1);
	/* dup2 over a DDP socket's number closes that one */
	int l2 = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(dup2(l2, d4), d4);
	assert_int_equal(esock_is_ddp(d4), 0);
	assert_int_equal(read(p.s, b, 1), 0); /* the last name went: closed */
	close(l2);
	close(d4);
	close(p.s);
}

/* wait until @n bytes can be read from @fd without waiting */
static void wait_readable_bytes(int fd, int n)
{
	int avail = 0;
	for (int i = 0; i < 5000 && avail < n; i++) {
		assert_int_equal(ioctl(fd, FIONREAD, &avail), 0);
		if (avail < n)
			usleep(1000);
	}
	assert_int_equal(avail, n);
}

static void mmsg_calls_move_several_buffers(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	char o1[] = "abc", o2[] = "defg", o3[] = "hi";
	struct iovec ov[3] = { { o1, 3 }, { o2, 4 }, { o3, 2 } };
	struct mmsghdr out[3];
	memset(out, 0, sizeof(out));
	for (int i = 0; i < 3; i++) {
		out[i].msg_hdr.msg_iov = &ov[i];
		out[i].msg_hdr.msg_iovlen = 1;
	}
	assert_int_equal(sendmmsg(p.c, out, 3, 0), 3);
	assert_int_equal(out[1].msg_len, 4);
	wait_readable_bytes(p.s, 9);
	char i1[3], i2[3], i3[8];
	struct iovec iv[3] = { { i1, 3 }, { i2, 3 }, { i3, 8 } };
	struct mmsghdr in[3];
	memset(in, 0, sizeof(in));
	for (int i = 0; i < 3; i++) {
		in[i].msg_hdr.msg_iov = &iv[i];
		in[i].msg_hdr.msg_iovlen = 1;
	}
	assert_int_equal(recvmmsg(p.s, in, 3, MSG_WAITFORONE, NULL), 3);
	assert_int_equal(in[0].msg_len, 3);
	assert_int_equal(in[1].msg_len, 3);
	assert_int_equal(in[2].msg_len, 3);
	assert_memory_equal(i1, "abc", 3);
	assert_memory_equal(i2, "def", 3);
	assert_memory_equal(i3, "ghi", 3);
	/* nothing more: MSG_WAITFORONE with nothing there is EAGAIN */
	errno = 0;
	assert_int_equal(recvmmsg(p.s, in, 1, MSG_DONTWAIT, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	close_pair(&p);
}

/* a C library stream over the socket (fdopen): the peer's bytes, not the
 * library's; fileno names the socket; fclose closes it */
static void stdio_streams_carry_the_bytes(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	FILE *w = fdopen(p.c, "w");
	FILE *r = fdopen(p.s, "r");
	assert_non_null(w);
	assert_non_null(r);
	assert_int_equal(fileno(w), p.c);
	assert_int_equal(fileno(r), p.s);
	fprintf(w, "line %d\nsecond\n", 1);
	assert_int_equal(fflush(w), 0);
	char line[32];
	assert_non_null(fgets(line, sizeof(line), r));
	assert_string_equal(line, "line 1\n");
	assert_non_null(fgets(line, sizeof(line), r));
	assert_string_equal(line, "second\n");
	assert_int_equal(fclose(w), 0);
	assert_null(fgets(line, sizeof(line), r)); /* the end of the stream */
	assert_true(feof(r));
	assert_int_equal(fclose(r), 0);
	errno = 0;
	assert_int_equal(fcntl(p.s, F_GETFD), -1); /* fclose closed it */
	assert_int_equal(errno, EBADF);
}

static void sendfile_sends_the_file(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	char path[] = "/tmp/test_esock_XXXXXX";
	int f = mkstemp(path);
	assert_true(f >= 0);
	unlink(path);
	static uint8_t data[300000], got[300000];
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i ^ (i >> 8));
	assert_int_equal(write(f, data, sizeof(data)), sizeof(data));
	off_t off = 1000;
	assert_int_equal(sendfile(p.c, f, &off, sizeof(data) - 1000), sizeof(data) - 1000);
	assert_int_equal(off, sizeof(data));
	lseek(f, 0, SEEK_SET);
	assert_int_equal(sendfile(p.c, f, NULL, 1000), 1000);
	assert_int_equal(lseek(f, 0, SEEK_CUR), 1000);
	read_all(p.s, got, sizeof(data));
	assert_memory_equal(got, data + 1000, sizeof(data) - 1000);
	assert_memory_equal(got + sizeof(data) - 1000, data, 1000);
	close(f);
	close_pair(&p);
}

static void receive_timeout_says_eagain(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	struct timeval tv = { 0, 50000 };
	assert_int_equal(setsockopt(p.s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	char b[4];
	errno = 0;
	assert_int_equal(read(p.s, b, sizeof(b)), -1);
	assert_true(errno == EAGAIN || errno == EWOULDBLOCK);
	struct timeval back;
	socklen_t len = sizeof(back);
	assert_int_equal(getsockopt(p.s, SOL_SOCKET, SO_RCVTIMEO, &back, &len), 0);
	assert_int_equal(back.tv_sec, 0); /* (the kernel keeps it in ticks) */
	assert_in_range(back.tv_usec, 50000, 60000);
	close_pair(&p);
}

/* A blocking read ends as on TCP when a signal handler runs (signal(7)):
 * after a handler without SA_RESTART it fails with EINTR (qperf ends its
 * timed runs with SIGALRM so; over DDP its read waited on for ever); after
 * one with SA_RESTART it goes on and returns the data that comes. The
 * signal is sent to the reading thread, as a process's may go to any. */
static atomic_int alarms;
static void on_alarm(int sig)
{
	(void)sig;
	atomic_fetch_add(&alarms, 1);
}

struct late_write {
	pthread_t reader;
	int fd;
	int after; /* signals to send before writing */
	atomic_bool stop;
	atomic_bool write_failed;
};

/* Sends the reader SIGALRM each millisecond and, after @after of them,
 * writes its byte (when a read must end by EINTR, after 2000: a read that
 * never ends must not hang the test). Counted as sent, not as handled: a
 * ThreadSanitizer build runs a handler only once the restarted read is
 * over. (No cmocka assertions here: a thread of ours.) */
static void *alarm_then_write(void *arg)
{
	struct late_write *lw = arg;
	bool written = false;
	for (int sent = 0; !atomic_load(&lw->stop); sent++) {
		if (!written && sent >= lw->after) {
			if (write(lw->fd, "x", 1) != 1)
				atomic_store(&lw->write_failed, true);
			written = true;
		}
		pthread_kill(lw->reader, SIGALRM);
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL); /* (pacing the signals, not waiting for one) */
	}
	return NULL;
}

static void read_under_alarms(struct pair *p, int flags, int after, ssize_t *n, int *err)
{
	struct sigaction sa = { .sa_handler = on_alarm, .sa_flags = flags };
	sigemptyset(&sa.sa_mask);
	struct sigaction old;
	assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
	atomic_store(&alarms, 0);
	struct late_write lw = { .reader = pthread_self(), .fd = p->c, .after = after };
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, alarm_then_write, &lw), 0);
	char b;
	errno = 0;
	*n = read(p->s, &b, 1);
	*err = errno;
	atomic_store(&lw.stop, true);
	pthread_join(t, NULL);
	sigaction(SIGALRM, &old, NULL);
	assert_false(atomic_load(&lw.write_failed));
}

static void a_signal_ends_a_blocking_read_as_on_tcp(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	ssize_t n;
	int err;
	/* no SA_RESTART: the first alarm that finds the read asleep ends it */
	read_under_alarms(&p, 0, 2000, &n, &err);
	assert_int_equal(n, -1);
	assert_int_equal(err, EINTR);
	assert_true(atomic_load(&alarms) >= 1);
	/* SA_RESTART: signals come and go, the read waits for the byte */
	read_under_alarms(&p, SA_RESTART, 20, &n, &err);
	assert_int_equal(n, 1);
	close_pair(&p);
}

static void refused_connect_reports_econnrefused(void **state)
{
	bool ddp = ddp_of(state);
	uint16_t port;
	int l = listener(false, &port);
	close(l); /* nobody listens there now */
	int c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, ddp);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	errno = 0;
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), -1);
	assert_int_equal(errno, ECONNREFUSED);
	close(c);
	/* non-blocking: the error comes through SO_ERROR */
	c = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	set_ddp(c, ddp);
	int rc = connect(c, (struct sockaddr *)&a, sizeof(a));
	if (rc < 0 && errno == EINPROGRESS) {
		assert_true(wait_fd(c, POLLOUT, 5000) & POLLOUT);
		int err = 0;
		socklen_t len = sizeof(err);
		assert_int_equal(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
		assert_int_equal(err, ECONNREFUSED);
	} else {
		assert_int_equal(errno, ECONNREFUSED);
	}
	close(c);
}

/* A DDP client of a plain TCP server (it reads the MPA Request as data
 * and answers with an error line, then hangs up) becomes a plain TCP
 * client (esock_fallback.c): the non-blocking connect turns writable with
 * SO_ERROR 0, the socket is not DDP, and its bytes reach the server on a
 * second connection; the next connection to that server is plain at once
 * (its first bytes are the program's, no MPA Request). ESOCK_FALLBACK=off
 * (the strict behaviour: refused) is tested with curl, test_fallback.sh. */
static void ddp_client_of_a_plain_server_falls_back_to_tcp(void **state)
{
	(void)state;
	uint16_t port;
	int l = listener(false, &port);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, true);
	int one = 1, rcvbuf = 96 << 10;
	assert_int_equal(setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)), 0);
	assert_int_equal(setsockopt(c, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)), 0);
	connect_nb(c, port);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	char req[16];
	read_all(s, req, sizeof(req));
	assert_memory_equal(req, "MPA ID Req Frame", 16);
	write_all(s, "HTTP/1.0 400 Bad Request\r\n\r\n", 28);
	close(s);
	assert_true(wait_fd(c, POLLOUT, 10000) & POLLOUT);
	int err = -1;
	socklen_t len = sizeof(err);
	assert_int_equal(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	assert_int_equal(err, 0);
	assert_int_equal(esock_is_ddp(c), 0);
	/* the option set before connect holds on the new connection */
	int nd = 0;
	len = sizeof(nd);
	assert_int_equal(getsockopt(c, IPPROTO_TCP, TCP_NODELAY, &nd, &len), 0);
	assert_int_equal(nd, 1);
	len = sizeof(nd);
	assert_int_equal(getsockopt(c, SOL_SOCKET, SO_RCVBUF, &nd, &len), 0);
	assert_int_equal(nd, 2 * rcvbuf); /* (the kernel reports twice what was set) */
	int s2 = accept(l, NULL, NULL);
	assert_true(s2 >= 0);
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
	write_all(c, "ping", 4);
	char b[4];
	read_all(s2, b, 4);
	assert_memory_equal(b, "ping", 4);
	write_all(s2, "pong", 4);
	read_all(c, b, 4);
	assert_memory_equal(b, "pong", 4);
	close(c);
	close(s2);

	/* remembered: the next client's first bytes are its own */
	c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, true);
	connect_nb(c, port);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	assert_true(wait_fd(c, POLLOUT, 10000) & POLLOUT);
	fcntl(c, F_SETFL, fcntl(c, F_GETFL) & ~O_NONBLOCK);
	write_all(c, "next", 4);
	read_all(s, b, 4);
	assert_memory_equal(b, "next", 4);
	assert_int_equal(esock_is_ddp(c), 0);
	close(c);
	close(s);
	close(l);
}

/* The fallback under epoll: the set holds the program's end, not its
 * number, so the registration made while connecting is made again on the
 * plain socket; without that the set would never report it again. Here
 * the server hangs up on the MPA Request (ECONNRESET: a fallback too). */
static void a_fallback_keeps_the_epoll_registration(void **state)
{
	(void)state;
	uint16_t port;
	int l = listener(false, &port);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, true);
	connect_nb(c, port);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 42 };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, c, &ev), 0);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	char req[16];
	read_all(s, req, sizeof(req));
	close(s);
	struct epoll_event got;
	assert_int_equal(epoll_wait(ep, &got, 1, 10000), 1);
	assert_int_equal(got.data.u64, 42);
	int err = -1;
	socklen_t len = sizeof(err);
	assert_int_equal(getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &len), 0);
	assert_int_equal(err, 0);
	int s2 = accept(l, NULL, NULL);
	assert_true(s2 >= 0);
	/* writable only now, then readable once the server writes */
	ev.events = EPOLLIN;
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_MOD, c, &ev), 0);
	assert_int_equal(epoll_wait(ep, &got, 1, 0), 0);
	write_all(s2, "hi", 2);
	assert_int_equal(epoll_wait(ep, &got, 1, 10000), 1);
	assert_int_equal(got.data.u64, 42);
	assert_true(got.events & EPOLLIN);
	char b[2];
	assert_int_equal(read(c, b, 2), 2);
	assert_memory_equal(b, "hi", 2);
	close(ep);
	close(c);
	close(s2);
	close(l);
}

struct blocking_connect {
	uint16_t port;
	int fd, rc, err;
};

static void *connect_blocking(void *arg)
{
	struct blocking_connect *b = arg;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(b->port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	b->rc = connect(b->fd, (struct sockaddr *)&a, sizeof(a));
	b->err = errno;
	return NULL;
}

/* a blocking connect to a plain server returns 0 on the plain connection */
static void a_blocking_connect_falls_back(void **state)
{
	(void)state;
	uint16_t port;
	int l = listener(false, &port);
	struct blocking_connect b = { .port = port, .fd = socket(AF_INET, SOCK_STREAM, 0) };
	set_ddp(b.fd, true);
	pthread_t t;
	pthread_create(&t, NULL, connect_blocking, &b);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	char req[16];
	read_all(s, req, sizeof(req));
	write_all(s, "SSH-2.0-x\r\n", 11); /* a server that speaks first */
	close(s);
	int s2 = accept(l, NULL, NULL);
	assert_true(s2 >= 0);
	pthread_join(t, NULL);
	assert_int_equal(b.rc, 0);
	write_all(b.fd, "ok", 2);
	char x[2];
	read_all(s2, x, 2);
	assert_memory_equal(x, "ok", 2);
	close(b.fd);
	close(s2);
	close(l);
}

/* a DDP-mode server serves a plain client as plain TCP */
static void ddp_server_serves_plain_clients_plainly(void **state)
{
	(void)state;
	uint16_t port;
	int l = listener(true, &port);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	int no = 0;
	assert_int_equal(setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &no, sizeof(no)), 0);
	connect_nb(c, port);
	write_all(c, "GET / HTTP/1.0\r\n\r\n", 18);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	assert_int_equal(esock_is_ddp(s), 0);
	char b[18];
	read_all(s, b, sizeof(b));
	assert_memory_equal(b, "GET / HTTP/1.0", 14);
	close(s);
	close(c);
	/* and a client that says nothing first, after the peek time */
	c = socket(AF_INET, SOCK_STREAM, 0);
	setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &no, sizeof(no));
	connect_nb(c, port);
	s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	assert_int_equal(esock_is_ddp(s), 0);
	write_all(s, "220 hello\r\n", 11);
	fcntl(c, F_SETFL, 0);
	read_all(c, b, 11);
	assert_memory_equal(b, "220 hello\r\n", 11);
	close(s);
	close(c);
	close(l);
}

/* accept never waits for a client to finish its MPA negotiation: a client
 * that sends only the MPA key (and would hold a waiting accept for the
 * whole MPA timeout) is passed over, and the listener is readable only
 * once a client is ready (docs: esock_internal.h, struct esock_listener) */
static void a_ddp_listener_never_waits_for_a_client(void **state)
{
	(void)state;
	uint16_t port;
	int l = listener(true, &port);
	fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_NONBLOCK);
	int on = 0;
	socklen_t len = sizeof(on);
	assert_int_equal(getsockopt(l, SOL_SOCKET, SO_ACCEPTCONN, &on, &len), 0);
	assert_int_equal(on, 1);

	int no = 0;
	int k = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(setsockopt(k, SOL_ESOCK, ESOCK_DDPMODE, &no, sizeof(no)), 0);
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(k, (struct sockaddr *)&a, sizeof(a)), 0);
	write_all(k, "MPA ID Req Frame", 16); /* and nothing more */

	int d = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(d, true);
	connect_nb(d, port);
	assert_true(wait_fd(l, POLLIN, 10000) & POLLIN);
	struct sockaddr_in peer, dl;
	len = sizeof(peer);
	int s = accept4(l, (struct sockaddr *)&peer, &len, SOCK_NONBLOCK);
	assert_true(s >= 0);
	assert_int_equal(esock_is_ddp(s), 1);
	socklen_t dlen = sizeof(dl);
	assert_int_equal(getsockname(d, (struct sockaddr *)&dl, &dlen), 0);
	assert_int_equal(peer.sin_port, dl.sin_port); /* the ready one, not the first */
	assert_true(fcntl(s, F_GETFL) & O_NONBLOCK);

	/* the key-only client is still not ready: nothing to accept */
	assert_int_equal(wait_fd(l, POLLIN, 300), 0);
	assert_int_equal(accept(l, NULL, NULL), -1);
	assert_int_equal(errno, EAGAIN);

	/* a copy of the listener serves as well, after the first name closed */
	int l2 = dup(l);
	assert_true(l2 >= 0);
	close(l);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &no, sizeof(no)), 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	write_all(c, "plain", 5);
	assert_true(wait_fd(l2, POLLIN, 10000) & POLLIN);
	int p = accept(l2, NULL, NULL);
	assert_true(p >= 0);
	assert_int_equal(esock_is_ddp(p), 0);
	char b[5];
	read_all(p, b, 5);
	assert_memory_equal(b, "plain", 5);
	close(p);
	close(c);
	close(s);
	close(d);
	close(k);
	close(l2);
}

struct acceptor {
	int l, s;
	bool ddp;
};

static void *accept_and_switch(void *arg)
{
	struct acceptor *a = arg;
	a->s = accept(a->l, NULL, NULL);
	char b[5];
	read_all(a->s, b, 5); /* a plain request first */
	write_all(a->s, "okay!", 5);
	set_ddp(a->s, a->ddp);
	return NULL;
}

/* setsockopt on a connected socket switches both ends at that point */
static void a_connected_socket_switches_to_ddp(void **state)
{
	(void)state;
	uint16_t port;
	struct acceptor a = { .ddp = true };
	a.l = listener(false, &port);
	pthread_t t;
	pthread_create(&t, NULL, accept_and_switch, &a);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(connect(c, (struct sockaddr *)&sa, sizeof(sa)), 0);
	write_all(c, "hello", 5);
	char b[5];
	read_all(c, b, 5);
	assert_int_equal(esock_is_ddp(c), 0);
	set_ddp(c, true);
	pthread_join(t, NULL);
	assert_int_equal(esock_is_ddp(c), 1);
	assert_int_equal(esock_is_ddp(a.s), 1);
	write_all(c, "ddp!!", 5);
	read_all(a.s, b, 5);
	assert_memory_equal(b, "ddp!!", 5);
	write_all(a.s, "back!", 5);
	read_all(c, b, 5);
	assert_memory_equal(b, "back!", 5);
	close(c);
	close(a.s);
	close(a.l);
}

/* fork: the child gets clean errors on the parent's DDP socket, and its
 * close leaves the parent's connection alone */
static void a_forked_child_gets_clean_errors(void **state)
{
	if (!forked_child_may_allocate())
		skip();
	struct pair p = make_pair(ddp_of(state));
	pid_t pid = fork();
	if (pid == 0) {
		int code = 0;
		if (p.ddp) {
			char b[1];
			if (read(p.s, b, 1) != -1 || errno != ENOTCONN)
				code = 1;
			if (send(p.c, "x", 1, MSG_NOSIGNAL) != -1 || errno != EPIPE)
				code = 2;
		}
		close(p.c);
		close(p.s);
		_exit(code);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
	write_all(p.c, "still", 5);
	char b[5];
	read_all(p.s, b, 5);
	assert_memory_equal(b, "still", 5);
	close_pair(&p);
}

/* which open file a descriptor names */
static ino_t file_of(int fd)
{
	struct stat st;
	assert_int_equal(fstat(fd, &st), 0);
	return st.st_ino;
}

/* how a forked child first touches the listener (0: it does not) */
static void child_touches(int how, int l)
{
	struct timespec zero = { 0, 0 };
	struct timeval tv = { 0, 0 };
	fd_set r;
	FD_ZERO(&r);
	FD_SET(l, &r);
	struct pollfd p = { .fd = l, .events = POLLIN };
	struct epoll_event ev = { .events = EPOLLIN };
	int e = -1;
	switch (how) {
	case 0: { /* something else only */
		int fds[2];
		if (pipe(fds) == 0) {
			p.fd = fds[0];
			poll(&p, 1, 0);
			close(fds[0]);
			close(fds[1]);
		}
		break;
	}
	case 1:
		poll(&p, 1, 0);
		break;
	case 2:
		ppoll(&p, 1, &zero, NULL);
		break;
	case 3:
		select(l + 1, &r, NULL, NULL, &tv);
		break;
	case 4:
		pselect(l + 1, &r, NULL, NULL, &zero, NULL);
		break;
	case 5:
		e = epoll_create1(0);
		epoll_ctl(e, EPOLL_CTL_ADD, l, &ev);
		break;
	}
	if (e >= 0)
		close(e);
}

/* the client side of the test below, in a process of its own: a client
 * that sends the MPA key and no more, then a DDP client, whose port goes
 * to @to and which then expects its "hello" echoed */
static int two_clients(uint16_t port, int to)
{
	int no = 0;
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_port = htons(port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int k = socket(AF_INET, SOCK_STREAM, 0);
	if (setsockopt(k, SOL_ESOCK, ESOCK_DDPMODE, &no, sizeof(no)) ||
	    connect(k, (struct sockaddr *)&a, sizeof(a)) || write(k, "MPA ID Req Frame", 16) != 16)
		return 20;
	int d = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(d, true);
	if (connect(d, (struct sockaddr *)&a, sizeof(a)) || esock_is_ddp(d) != 1)
		return 21;
	struct sockaddr_in dl;
	socklen_t dlen = sizeof(dl);
	char m[5];
	if (getsockname(d, (struct sockaddr *)&dl, &dlen) || write(to, &dl.sin_port, 2) != 2 ||
	    write(d, "hello", 5) != 5 || recv(d, m, 5, MSG_WAITALL) != 5 || memcmp(m, "hello", 5))
		return 22;
	close(d);
	close(k);
	return 0;
}

/* the server side: touches the listener @how, then accepts */
static int forked_server(int how, int l, int told, int port_from)
{
	ino_t before = file_of(l);
	child_touches(how, l);
	bool own = file_of(l) != before;
	char b = own ? 'y' : 'n';
	if (write(told, &b, 1) != 1)
		return 10;
	if (!own)
		return how == 0 ? 0 : 11;
	if (wait_fd(l, POLLIN, 10000) != POLLIN)
		return 12;
	struct sockaddr_in peer;
	socklen_t len = sizeof(peer);
	int s = accept(l, (struct sockaddr *)&peer, &len);
	if (s < 0 || esock_is_ddp(s) != 1)
		return 13;
	char m[5];
	if (read(port_from, m, 2) != 2)
		return 14;
	if (memcmp(&peer.sin_port, m, 2))
		return 15; /* the key-only client's, taken first */
	if (recv(s, m, 5, MSG_WAITALL) != 5 || write(s, m, 5) != 5)
		return 16;
	close(s);
	return 0;
}

static void reap(pid_t pid)
{
	int st = 0;
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* A DDP listener shared across fork (a prefork server's) is the TCP
 * listener again in both processes; a process that then waits on it (each
 * waiting call) makes it its own DDP listener, with its own sorter, so its
 * accept never waits for a client's negotiation: with a key-only client
 * queued first, the forked server's accept gets the DDP client that came
 * after it. A process that does not touch it keeps it as it is. Every
 * process here is forked from one that has never run a DDP connection (a
 * child of one that has cannot carry DDP: include/esock.h), so this test
 * runs first. */
static void a_listener_shared_across_fork_is_sorted_where_it_is_waited_on(void **state)
{
	(void)state;
	if (!forked_child_may_allocate())
		skip();
	for (int how = 0; how <= 5; how++) {
		uint16_t port;
		int l = listener(true, &port);
		fcntl(l, F_SETFL, fcntl(l, F_GETFL) | O_NONBLOCK);
		int told[2], ports[2];
		assert_int_equal(pipe(told), 0);
		assert_int_equal(pipe(ports), 0);
		pid_t srv = fork();
		if (srv == 0)
			_exit(forked_server(how, l, told[1], ports[0]));
		assert_true(srv > 0);
		close(told[1]); /* (a server that dies: no answer, not a wait) */
		char b;
		assert_int_equal(read(told[0], &b, 1), 1);
		assert_int_equal(b, how == 0 ? 'n' : 'y');
		if (how) {
			pid_t cli = fork();
			if (cli == 0)
				_exit(two_clients(port, ports[1]));
			assert_true(cli > 0);
			reap(cli);
		}
		reap(srv);
		close(l);
		close(told[0]);
		close(ports[0]);
		close(ports[1]);
	}
}

/* bad arguments get an errno */
static void bad_arguments_get_errors(void **state)
{
	(void)state;
	int v = 1;
	errno = 0;
	assert_int_equal(setsockopt(-1, SOL_ESOCK, ESOCK_DDPMODE, &v, sizeof(v)), -1);
	assert_int_equal(errno, EBADF);
	int u = socket(AF_INET, SOCK_DGRAM, 0);
	errno = 0;
	assert_int_equal(setsockopt(u, SOL_ESOCK, ESOCK_DDPMODE, &v, sizeof(v)), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	close(u);
	int s = socket(AF_INET, SOCK_STREAM, 0);
	errno = 0;
	assert_int_equal(setsockopt(s, SOL_ESOCK, 99, &v, sizeof(v)), -1);
	assert_int_equal(errno, ENOPROTOOPT);
	errno = 0;
	assert_int_equal(setsockopt(s, SOL_ESOCK, ESOCK_DDPMODE, &v, 1), -1);
	assert_int_equal(errno, EINVAL);
	close(s);
	assert_int_equal(esock_is_ddp(-1), -1);
	struct pair p = make_pair(true);
	int off = 0;
	errno = 0;
	assert_int_equal(setsockopt(p.c, SOL_ESOCK, ESOCK_DDPMODE, &off, sizeof(off)), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(send(p.c, "x", 1, MSG_OOB), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	close_pair(&p);
}

/* megabytes both ways at once, every byte checked */
struct pump {
	int fd;
	size_t n;
	uint32_t seed;
	bool ok;
};

static uint8_t pattern(uint32_t seed, size_t i) { return (uint8_t)((i * 131 + seed) ^ (i >> 11)); }

static void *pump_out(void *arg)
{
	struct pump *p = arg;
	static __thread uint8_t b[100000];
	for (size_t i = 0; i < p->n;) {
		size_t k = p->n - i < sizeof(b) ? p->n - i : sizeof(b);
		for (size_t j = 0; j < k; j++)
			b[j] = pattern(p->seed, i + j);
		write_all(p->fd, b, k);
		i += k;
	}
	p->ok = true;
	return NULL;
}

static void *pump_in(void *arg)
{
	struct pump *p = arg;
	static __thread uint8_t b[70000];
	size_t i = 0;
	p->ok = true;
	while (i < p->n) {
		ssize_t r = read(p->fd, b, sizeof(b));
		if (r <= 0) {
			p->ok = false;
			return NULL;
		}
		for (ssize_t j = 0; j < r; j++)
			if (b[j] != pattern(p->seed, i + (size_t)j))
				p->ok = false;
		i += (size_t)r;
	}
	return NULL;
}

static void megabytes_both_ways_arrive_intact(void **state)
{
	struct pair p = make_pair(ddp_of(state));
	size_t n = 24u << 20;
	struct pump o1 = { p.c, n, 1, false }, i1 = { p.s, n, 1, false };
	struct pump o2 = { p.s, n, 2, false }, i2 = { p.c, n, 2, false };
	pthread_t t[4];
	pthread_create(&t[0], NULL, pump_out, &o1);
	pthread_create(&t[1], NULL, pump_in, &i1);
	pthread_create(&t[2], NULL, pump_out, &o2);
	pthread_create(&t[3], NULL, pump_in, &i2);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	assert_true(o1.ok && i1.ok && o2.ok && i2.ok);
	close_pair(&p);
}

/* one request from @p's client and its echo from the server */
static void round_trip(struct pair *p, const uint8_t *req, uint8_t *got, size_t n)
{
	write_all(p->c, req, n);
	read_all(p->s, got, n);
	write_all(p->s, got, n);
	read_all(p->c, got, n);
	assert_memory_equal(got, req, n);
}

/* A request/reply connection keeps using the same few pages of its rings:
 * esock's 2 MiB send ring and the runtime's CQ (65536 entries in the
 * ES-API) each start again at their beginning when empty. Walking them
 * touched a fresh page (a page fault) every 4 KiB sent and every few dozen
 * completions through each ring's first lap; 1 MiB each way in 1 KiB
 * requests and replies gave 512 faults from the send ring and 112 from
 * the CQ. Warm-up first: the STag table
 * grows until its quarantine of freed indices (4096, one per receive
 * posted) is full, and each receive chunk's first page is touched once;
 * 64 B round trips do it within the send ring's first lap, which the
 * counted part stays in too. Counted, not timed. */
static void request_reply_reuses_its_pages(void **state)
{
	if (!libc_allocator())
		skip();
	struct pair p = make_pair(ddp_of(state));
	struct rusage before, after;
	static uint8_t req[1024], got[1024];
	for (int i = 0; i < 4200; i++)
		round_trip(&p, req, got, 64);
	assert_int_equal(getrusage(RUSAGE_SELF, &before), 0);
	for (int i = 0; i < 1024; i++) {
		memset(req, i, sizeof(req));
		round_trip(&p, req, got, sizeof(req));
	}
	assert_int_equal(getrusage(RUSAGE_SELF, &after), 0);
	long faults = after.ru_minflt - before.ru_minflt;
	print_message("%ld page faults in 1024 round trips\n", faults);
	assert_true(faults < 32);
	close_pair(&p);
}

/* the process's resident memory in KiB (/proc/self/statm, in pages) */
static long resident_kib(void)
{
	long size = 0, res = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &res), 2);
	fclose(f);
	return res * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A connection's memory is resident only where it is used, and goes back
 * when it closes. Its rings are 4 MiB at each end (receive chunks and send
 * ring); calloc zeroed a recycled block with memset, so a process that had
 * closed connections made all 4 MiB of each new one resident at once, and
 * kept them after it closed. Its QP's send queue (512 requests with their
 * gather lists, some 170 KiB in the ES-API) was zeroed likewise and walked
 * as a ring, all of it resident after 512 requests; it now starts again at
 * its first slot whenever it empties. Two rounds of 16 connections, each
 * carrying 600 round trips of 64 bytes, then closed: 3.8 MiB per
 * connection's end without the rings' mappings, 285 KiB without the send
 * queue's, 108 to 110 KiB with both (the bound is 192). */
static void connections_hold_memory_only_where_used(void **state)
{
	if (!libc_allocator())
		skip();
	enum { PAIRS = 16 };
	struct pair p[PAIRS];
	static uint8_t req[64], got[64];
	long before = resident_kib(), most = 0;
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < PAIRS; i++) {
			p[i] = make_pair(ddp_of(state));
			for (int k = 0; k < 600; k++)
				round_trip(&p[i], req, got, sizeof(req));
		}
		long open = (resident_kib() - before) / (2 * PAIRS);
		most = open > most ? open : most;
		for (int i = 0; i < PAIRS; i++)
			close_pair(&p[i]);
	}
	print_message("at most %ld KiB resident per connection's end\n", most);
	assert_true(most < 192);
}

/* ---- the extended calls ---- */

static int cq_wait(int cq, struct esock_wc *wc)
{
	for (int i = 0; i < 1000; i++) {
		int n = esock_cq_poll(cq, wc, 1);
		if (n)
			return n;
		wait_fd(cq, POLLIN, 10);
	}
	return 0;
}

/* asynchronous sends go in order with write(2); asynchronous receives
 * take the stream's bytes before read(2); completions reach a queue whose
 * descriptor poll(2) reports */
static void async_send_and_receive_complete_on_a_queue(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	int cq = esock_cq_create(4);
	assert_true(cq >= 0);
	assert_int_equal(wait_fd(cq, POLLIN, 0), 0);
	static char in[16], in2[16];
	esock_mr_t mr = esock_mr_reg(in, sizeof(in), ESOCK_ACCESS_LOCAL);
	assert_non_null(mr);
	assert_int_equal(esock_recv_async(p.s, in, 3, mr, cq, (void *)1), 0);
	assert_int_equal(esock_recv_async(p.s, in2, sizeof(in2), NULL, cq, (void *)2), 0);
	write_all(p.c, "AB", 2);
	assert_int_equal(esock_send_async(p.c, "CD", 2, NULL, cq, (void *)3), 0);
	write_all(p.c, "EF", 2);
	struct esock_wc wc[4];
	int got = 0;
	size_t rbytes = 0, first = 0;
	bool sent = false;
	while (got < 3) {
		assert_true(wait_fd(cq, POLLIN, 5000) & POLLIN);
		int n = esock_cq_poll(cq, wc, 4);
		assert_true(n >= 0);
		for (int i = 0; i < n; i++) {
			assert_int_equal(wc[i].status, 0);
			if (wc[i].ctx == (void *)3) {
				assert_int_equal(wc[i].op, ESOCK_OP_SEND);
				sent = true;
			} else {
				assert_int_equal(wc[i].op, ESOCK_OP_RECV);
				/* in the order posted */
				assert_ptr_equal(wc[i].ctx, rbytes == 0 ? (void *)1 : (void *)2);
				if (!rbytes)
					first = wc[i].bytes;
				rbytes += wc[i].bytes;
			}
		}
		got += n;
	}
	assert_true(sent);
	/* the first took 3 bytes at most; together they hold ABC.. in order */
	char all[8] = { 0 };
	assert_in_range(first, 1, 3);
	memcpy(all, in, first);
	memcpy(all + first, in2, rbytes - first);
	if (rbytes < 6) {
		/* the rest is for read(2) now that none is pending */
		read_all(p.s, all + rbytes, 6 - rbytes);
	}
	assert_memory_equal(all, "ABCDEF", 6);
	assert_int_equal(wait_fd(cq, POLLIN, 0), 0); /* drained */
	/* a full queue refuses, and nothing is lost */
	int small = esock_cq_create(1);
	assert_int_equal(esock_recv_async(p.s, in, 1, NULL, small, NULL), 0);
	errno = 0;
	assert_int_equal(esock_recv_async(p.s, in, 1, NULL, small, NULL), -1);
	assert_int_equal(errno, EAGAIN);
	assert_int_equal(esock_cq_destroy(small), -1);
	assert_int_equal(errno, EBUSY);
	/* closing the socket completes the pending receive */
	close(p.s);
	assert_int_equal(cq_wait(small, wc), 1);
	assert_int_equal(wc[0].status, ECANCELED);
	assert_int_equal(esock_cq_destroy(small), 0);
	assert_int_equal(esock_cq_destroy(cq), 0);
	assert_int_equal(esock_mr_dereg(mr), 0);
	close(p.c);
}

/* one-sided: the server exposes memory and sends the key over the stream;
 * the client writes and reads it without the server's program */
static void one_sided_write_and_read_through_the_socket(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	static uint8_t region[4096], mine[1000], back[1000];
	esock_mr_t rmr = esock_mr_reg(region, sizeof(region),
				      ESOCK_ACCESS_LOCAL | ESOCK_ACCESS_REMOTE_WRITE |
					      ESOCK_ACCESS_REMOTE_READ);
	esock_mr_t ro = esock_mr_reg(mine, sizeof(mine), ESOCK_ACCESS_LOCAL);
	assert_non_null(rmr);
	struct esock_remote rem;
	errno = 0;
	assert_int_equal(esock_expose(p.s, ro, mine, 10, ESOCK_ACCESS_REMOTE_WRITE, &rem), -1);
	assert_int_equal(errno, EACCES);
	assert_int_equal(esock_expose(p.s, rmr, region + 1024, 2048,
				      ESOCK_ACCESS_REMOTE_WRITE | ESOCK_ACCESS_REMOTE_READ, &rem),
			 0);
	write_all(p.s, &rem, sizeof(rem));
	struct esock_remote theirs;
	read_all(p.c, &theirs, sizeof(theirs));
	int cq = esock_cq_create(8);
	for (size_t i = 0; i < sizeof(mine); i++)
		mine[i] = (uint8_t)(i * 3 + 7);
	errno = 0;
	assert_int_equal(esock_write_async(p.c, mine, 1000, ro, &theirs, 1500, cq, NULL), -1);
	assert_int_equal(errno, EINVAL); /* beyond the 2048 exposed */
	assert_int_equal(esock_write_async(p.c, mine, 1000, ro, &theirs, 100, cq, (void *)5), 0);
	assert_int_equal(esock_read_async(p.c, back, 1000, NULL, &theirs, 100, cq, (void *)6), 0);
	struct esock_wc wc;
	assert_int_equal(cq_wait(cq, &wc), 1);
	assert_int_equal(wc.op, ESOCK_OP_WRITE);
	assert_int_equal(wc.status, 0);
	assert_int_equal(cq_wait(cq, &wc), 1);
	assert_int_equal(wc.op, ESOCK_OP_READ);
	assert_int_equal(wc.status, 0);
	assert_int_equal(wc.bytes, 1000);
	assert_memory_equal(back, mine, 1000);
	assert_memory_equal(region + 1024 + 100, mine, 1000);
	static const uint8_t zero[1024];
	assert_memory_equal(region, zero, 1024); /* outside the exposure */
	/* the stream is untouched */
	write_all(p.c, "ok", 2);
	char b[2];
	read_all(p.s, b, 2);
	assert_memory_equal(b, "ok", 2);
	assert_int_equal(esock_mr_dereg(rmr), -1); /* exposed */
	assert_int_equal(errno, EBUSY);
	close_pair(&p);
	assert_int_equal(esock_cq_destroy(cq), 0);
	usleep(100000); /* the connection's exposure ends with it */
	assert_int_equal(esock_mr_dereg(ro), 0);
	for (int i = 0; i < 100 && esock_mr_dereg(rmr); i++)
		usleep(10000);
}

/* the extended calls on what is not a DDP socket */
static void extended_calls_need_a_ddp_socket(void **state)
{
	(void)state;
	struct pair p = make_pair(false);
	int cq = esock_cq_create(2);
	char b[4];
	errno = 0;
	assert_int_equal(esock_send_async(p.c, "x", 1, NULL, cq, NULL), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(esock_recv_async(-1, b, 1, NULL, cq, NULL), -1);
	assert_int_equal(errno, EBADF);
	struct pair d = make_pair(true);
	errno = 0;
	assert_int_equal(esock_send_async(d.c, "x", 1, NULL, 12345, NULL), -1);
	assert_int_equal(errno, EBADF); /* not a queue */
	errno = 0;
	assert_int_equal(esock_cq_poll(cq, NULL, 1), -1);
	assert_int_equal(errno, EINVAL);
	assert_null(esock_mr_reg(b, 0, ESOCK_ACCESS_LOCAL));
	assert_int_equal(errno, EINVAL);
	assert_int_equal(esock_cq_create(0), -1);
	assert_int_equal(esock_cq_destroy(cq), 0);
	close_pair(&p);
	close_pair(&d);
}

/* The program's own ES-API calls: on a plain TCP socket they run on its
 * stream; a socket esock carries over DDP is not taken for a plain one
 * (its descriptor is one end of esock's socket pair, and bytes written
 * there would never reach the peer): EOPNOTSUPP, nothing lost. */
/* the next event on @q (at most 20 s) */
static exs_event_t es_event(exs_qhandle_t q)
{
	exs_event_t ev;
	struct timespec t = { 20, 0 };
	assert_int_equal(exs_qdequeue(q, &ev, -1, &t), 1);
	return ev;
}

/* ES-API calls on a socket esock carries over DDP: the ES-API's
 * operations (its queue, its handles, the program's descriptor in the
 * event) whose bytes esock moves, in order with the program's own read(2)
 * and write(2) on the socket. A plain socket's go the plain way. */
static void es_api_calls_on_a_ddp_socket_go_through_esock(void **state)
{
	(void)state;
	assert_int_equal(exs_init(EXS_VERSION), 0);
	exs_qhandle_t q = exs_qcreate(16);
	assert_int_not_equal(q, EXS_QHANDLE_INVALID);
	struct pair p = make_pair(false), d = make_pair(true);
	char b[8];
	assert_int_equal(exs_send(p.c, "ab", 2, 0, EXS_QHANDLE_INVALID, NULL, NULL), 2);
	read_all(p.s, b, 2);
	assert_memory_equal(b, "ab", 2);
	/* the program's write, an ES-API send, a write: in that order */
	write_all(d.c, "1", 1);
	assert_int_equal(exs_send(d.c, "23", 2, 0, q, (exs_ahandle_t)5, NULL), 0);
	write_all(d.c, "4", 1);
	read_all(d.s, b, 4);
	assert_memory_equal(b, "1234", 4);
	exs_event_t ev = es_event(q);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_SEND);
	assert_int_equal(ev.exs_evt_errno, 0);
	assert_int_equal(ev.exs_evt_fd, d.c);
	assert_ptr_equal(ev.exs_evt_ahandle, (exs_ahandle_t)5);
	assert_int_equal(ev.exs_evt_union.xfer.bytes, 2);
	/* a receive waiting for all of two buffers gets two writes */
	char r1[3], r2[3];
	struct iovec v[2] = { { r1, 3 }, { r2, 3 } };
	assert_int_equal(exs_recvv(d.s, v, 2, MSG_WAITALL, q, (exs_ahandle_t)6, NULL), 0);
	write_all(d.c, "abc", 3);
	write_all(d.c, "def", 3);
	ev = es_event(q);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_RECV);
	assert_int_equal(ev.exs_evt_fd, d.s);
	assert_ptr_equal(ev.exs_evt_ahandle, (exs_ahandle_t)6);
	assert_int_equal(ev.exs_evt_union.xfer.bytes, 6);
	assert_memory_equal(r1, "abc", 3);
	assert_memory_equal(r2, "def", 3);
	/* without a queue: the count */
	write_all(d.c, "x", 1);
	assert_int_equal(exs_recv(d.s, b, sizeof(b), 0, EXS_QHANDLE_INVALID, NULL, NULL), 1);
	assert_int_equal(b[0], 'x');
	/* esock's options and names */
	int on = 0;
	socklen_t len = sizeof(on);
	assert_int_equal(exs_getsockopt(d.c, SOL_ESOCK, ESOCK_DDPMODE, &on, &len), 0);
	assert_int_equal(on, 1);
	/* the end: esock's half-close, after the sends before it */
	assert_int_equal(exs_send(d.c, "yz", 2, 0, q, (exs_ahandle_t)7, NULL), 0);
	assert_int_equal(exs_shutdown(d.c, SHUT_WR, EXS_QHANDLE_INVALID, NULL), 0);
	read_all(d.s, b, 2);
	assert_memory_equal(b, "yz", 2);
	assert_int_equal(read(d.s, b, 1), 0);
	ev = es_event(q);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_SEND);
	assert_int_equal(ev.exs_evt_errno, 0);
	/* a receive waiting when the socket closes ends, cancelled */
	assert_int_equal(exs_recv(d.c, b, 1, 0, q, (exs_ahandle_t)8, NULL), 0);
	assert_int_equal(exs_close(d.c, EXS_QHANDLE_INVALID, NULL), 0);
	ev = es_event(q);
	assert_int_equal(ev.exs_evt_type, EXS_EVT_RECV);
	assert_ptr_equal(ev.exs_evt_ahandle, (exs_ahandle_t)8);
	assert_true(ev.exs_evt_errno == ECANCELED || ev.exs_evt_errno == ECONNRESET);
	close(d.s);
	close_pair(&p);
	exs_qdelete(q);
}

/* a blocking read that the connection's idle limit ends: -1 ETIMEDOUT
 * (SO_RCVTIMEO only keeps a broken limit from hanging the test) */
static void read_ends_by_idle_limit(int fd)
{
	struct timeval tv = { 20, 0 };
	assert_int_equal(setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)), 0);
	char b[4];
	errno = 0;
	assert_int_equal(read(fd, b, sizeof(b)), -1);
	assert_int_equal(errno, ETIMEDOUT);
}

/* ESOCK_IDLE_MS per socket: set on a DDP listener, each client accept
 * gives afterwards has it; set on a connected DDP socket, it holds from
 * then; a socket not carried over DDP refuses it */
static void an_idle_limit_is_set_per_socket_and_per_listener(void **state)
{
	(void)state;
	int v = 300, got = -1;
	socklen_t gl = sizeof(got);
	struct pair plain = make_pair(false);
	errno = 0;
	assert_int_equal(setsockopt(plain.c, SOL_ESOCK, ESOCK_IDLE_MS, &v, sizeof(v)), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	errno = 0;
	assert_int_equal(getsockopt(plain.c, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), -1);
	assert_int_equal(errno, EOPNOTSUPP);
	close_pair(&plain);

	uint16_t port;
	int l = listener(true, &port);
	assert_int_equal(getsockopt(l, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), 0);
	assert_int_equal(got, 0); /* no ESOCK_IDLE_MS in this test's environment */
	v = -1;
	errno = 0;
	assert_int_equal(setsockopt(l, SOL_ESOCK, ESOCK_IDLE_MS, &v, sizeof(v)), -1);
	assert_int_equal(errno, EINVAL);
	v = 300;
	assert_int_equal(setsockopt(l, SOL_ESOCK, ESOCK_IDLE_MS, &v, sizeof(v)), 0);
	assert_int_equal(getsockopt(l, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), 0);
	assert_int_equal(got, 300);
	int c = socket(AF_INET, SOCK_STREAM, 0);
	set_ddp(c, true);
	connect_nb(c, port);
	int s = accept(l, NULL, NULL);
	assert_true(s >= 0);
	assert_int_equal(esock_is_ddp(s), 1);
	assert_int_equal(getsockopt(s, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), 0);
	assert_int_equal(got, 300);
	read_ends_by_idle_limit(s); /* the client says nothing */
	close(c);
	close(s);
	close(l);

	struct pair p = make_pair(true);
	assert_int_equal(getsockopt(p.c, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), 0);
	assert_int_equal(got, 0);
	v = 200;
	assert_int_equal(setsockopt(p.c, SOL_ESOCK, ESOCK_IDLE_MS, &v, sizeof(v)), 0);
	assert_int_equal(getsockopt(p.c, SOL_ESOCK, ESOCK_IDLE_MS, &got, &gl), 0);
	assert_int_equal(got, 200);
	read_ends_by_idle_limit(p.c);
	close_pair(&p);
}

/* This thread's voluntary context switches so far (its sleeps). */
static long sleeps_so_far(void)
{
	FILE *f = fopen("/proc/thread-self/status", "r");
	char line[256];
	long v = -1;
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "voluntary_ctxt_switches: %ld", &v) == 1)
			break;
	fclose(f);
	return v;
}

struct bystander {
	int pipe_rd;
	bool use_poll;
	int yields, sleeps, woke;
};

/* A thread that waits for a pipe alone, through epoll or poll. */
static void *bystander(void *arg)
{
	struct bystander *b = arg;
	int y0 = yields;
	long s0 = sleeps_so_far();
	if (b->use_poll) {
		struct pollfd p = { .fd = b->pipe_rd, .events = POLLIN };
		b->woke = poll(&p, 1, 20000);
	} else {
		int ep = epoll_create1(0);
		struct epoll_event e = { .events = EPOLLIN }, got;
		epoll_ctl(ep, EPOLL_CTL_ADD, b->pipe_rd, &e);
		b->woke = epoll_wait(ep, &got, 1, 20000);
		close(ep);
	}
	b->yields = yields - y0;
	b->sleeps = (int)(sleeps_so_far() - s0);
	return NULL;
}

/* A thread that waits for no DDP socket (a server's accepting thread,
 * whose epoll set holds its listener) stays out of the ES-API's work
 * while the process's DDP connections run: it neither spins on it nor
 * wakes with their messages. (It did both, contending for the ES-API's
 * lock with the threads serving the connections: docs/performance.md.) */
static void a_wait_for_no_ddp_socket_stays_out(void **state)
{
	struct pair p = make_pair(true);
	for (int use_poll = 0; use_poll < 2; use_poll++) {
		int pp[2];
		assert_int_equal(pipe(pp), 0);
		struct bystander b = { .pipe_rd = pp[0], .use_poll = use_poll };
		pthread_t t;
		assert_int_equal(pthread_create(&t, NULL, bystander, &b), 0);
		char c = 'x';
		for (int i = 0; i < 300; i++) {
			write_all(p.c, &c, 1);
			read_all(p.s, &c, 1);
			write_all(p.s, &c, 1);
			read_all(p.c, &c, 1);
		}
		assert_int_equal(write(pp[1], "!", 1), 1);
		pthread_join(t, NULL);
		assert_int_equal(b.woke, 1);
		assert_int_equal(b.yields, 0); /* (no spin) */
		/* 600 messages went by; it slept once (and whatever the
		 * scheduler adds) */
		if (b.sleeps > 30)
			fail_msg("%s: the bystander slept %d times while 600 messages went by",
				 use_poll ? "poll" : "epoll_wait", b.sleeps);
		close(pp[0]);
		close(pp[1]);
	}
	close_pair(&p);
}

/* whether esock keeps a DDP socket's readability in user space for the
 * epoll sets that hold it (not in ThreadSanitizer's build, whose waits
 * leave the data to the progress thread: esock_engine.c) */
static bool readiness_in_user_space(void)
{
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
	return false;
#endif
#endif
#ifdef __SANITIZE_THREAD__
	return false;
#endif
	return true;
}

/* what the kernel itself says of @fd, past esock: bytes waiting in it
 * (for a DDP socket, in its socket pair) and whether poll(2) finds it
 * readable */
static int kernel_fionread(int fd)
{
	int n = -1;
	assert_int_equal(syscall(SYS_ioctl, fd, FIONREAD, &n), 0);
	return n;
}

static bool kernel_readable(int fd)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	struct timespec zero = { 0, 0 };
	return syscall(SYS_ppoll, &pf, 1, &zero, NULL, 8) == 1 && (pf.revents & POLLIN);
}

/* one event from @ep within @ms: its events (0: none came) */
static uint32_t one_event(int ep, uint64_t data, int ms)
{
	struct epoll_event ev[4];
	int n = epoll_wait(ep, ev, 4, ms);
	assert_true(n >= 0 && n <= 1);
	if (n)
		assert_int_equal(ev[0].data.u64, data);
	return n ? ev[0].events : 0;
}

/* A DDP socket that no poll, select or plain epoll registration has seen
 * gets no byte in its socket pair when data comes (a program that only
 * reads and writes never needs one: two system calls per message); once
 * poll(2) looks, the kernel sees it readable. */
static void a_socket_no_wait_has_seen_gets_no_byte(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	write_all(p.c, "ab", 2);
	wait_readable_bytes(p.s, 2); /* (esock's FIONREAD: no wait) */
	if (readiness_in_user_space()) {
		assert_int_equal(kernel_fionread(p.s), 0);
		assert_false(kernel_readable(p.s));
	}
	char b[2];
	read_all(p.s, b, 2);
	assert_memory_equal(b, "ab", 2);
	write_all(p.c, "c", 1);
	assert_int_equal(wait_fd(p.s, POLLIN, 5000), POLLIN);
	assert_true(kernel_readable(p.s));
	read_all(p.s, b, 1);
	assert_false(kernel_readable(p.s));
	close_pair(&p);
}

/* A DDP socket held in epoll sets alone is readable to esock's
 * epoll_wait with no byte in its socket pair (two system calls less per
 * request: docs/performance.md): level- and edge-triggered, merged with
 * the kernel's writable into one event with the program's data, the end
 * of the stream readable with RDHUP. Once poll(2) looks at it, the byte
 * is back and the kernel sees it readable too. */
static void an_epoll_set_learns_readiness_without_the_socket_pair(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	int lt = epoll_create1(0), et = epoll_create1(0);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u64 = 0x1234 };
	struct epoll_event e2 = { .events = EPOLLIN | EPOLLET, .data.u64 = 0x5678 };
	assert_int_equal(epoll_ctl(lt, EPOLL_CTL_ADD, p.s, &e1), 0);
	assert_int_equal(epoll_ctl(et, EPOLL_CTL_ADD, p.s, &e2), 0);
	assert_int_equal(epoll_ctl(et, EPOLL_CTL_ADD, p.s, &e2), -1);
	assert_int_equal(errno, EEXIST);
	assert_int_equal(one_event(lt, 0x1234, 0), 0);
	write_all(p.c, "a", 1);
	assert_int_equal(one_event(et, 0x5678, 5000), EPOLLIN); /* the edge */
	assert_int_equal(one_event(et, 0x5678, 0), 0);          /* once */
	assert_int_equal(one_event(lt, 0x1234, 0), EPOLLIN);    /* level: again */
	assert_int_equal(one_event(lt, 0x1234, 0), EPOLLIN);
	/* the point: nothing in the socket pair, nothing the kernel sees */
	bool user = readiness_in_user_space();
	if (user) {
		assert_int_equal(kernel_fionread(p.s), 0);
		assert_false(kernel_readable(p.s));
	}
	write_all(p.c, "b", 1);
	assert_int_equal(one_event(et, 0x5678, 5000), EPOLLIN); /* a new arrival */
	char b[4];
	read_all(p.s, b, 2);
	assert_memory_equal(b, "ab", 2);
	assert_int_equal(one_event(lt, 0x1234, 0), 0); /* read: nothing left */
	/* writable is the kernel's, readable ours: one event, the data the
	 * program gave */
	struct epoll_event e3 = { .events = EPOLLIN | EPOLLOUT, .data.u64 = 0x9 };
	assert_int_equal(epoll_ctl(lt, EPOLL_CTL_MOD, p.s, &e3), 0);
	assert_int_equal(one_event(lt, 0x9, 0), EPOLLOUT);
	write_all(p.c, "c", 1);
	assert_int_equal(one_event(et, 0x5678, 5000), EPOLLIN);
	assert_int_equal(one_event(lt, 0x9, 0), EPOLLIN | EPOLLOUT);
	if (user)
		assert_int_equal(kernel_fionread(p.s), 0);
	/* the end of the stream, on a second connection */
	struct pair q = make_pair(true);
	struct epoll_event e4 = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 0xe };
	assert_int_equal(epoll_ctl(et, EPOLL_CTL_ADD, q.s, &e4), 0);
	close(q.c);
	assert_int_equal(one_event(et, 0xe, 5000), EPOLLIN | EPOLLRDHUP);
	assert_int_equal(read(q.s, b, 1), 0);
	close(q.s);
	/* poll(2) sees the socket: the byte again, for good */
	struct pollfd pf = { .fd = p.s, .events = POLLIN };
	assert_int_equal(poll(&pf, 1, 0), 1);
	assert_int_equal(kernel_fionread(p.s), 1);
	assert_true(kernel_readable(p.s));
	assert_int_equal(one_event(lt, 0x9, 0), EPOLLIN | EPOLLOUT);
	read_all(p.s, b, 1);
	assert_int_equal(one_event(lt, 0x9, 0), EPOLLOUT);
	assert_int_equal(kernel_fionread(p.s), 0);
	close(lt);
	close(et);
	close_pair(&p);
}

/* An epoll set that holds a DDP socket, itself inside another epoll set
 * (put there after the socket or before it) or waited on by epoll_pwait2
 * (which esock answers with the kernel's wait): each sees the socket
 * readable. */
static void a_nested_set_sees_a_ddp_socket_readable(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	int inner = epoll_create1(0), outer = epoll_create1(0);
	struct epoll_event e1 = { .events = EPOLLIN, .data.u64 = 1 };
	assert_int_equal(epoll_ctl(inner, EPOLL_CTL_ADD, p.s, &e1), 0);
	struct epoll_event e2 = { .events = EPOLLIN, .data.u64 = 2 };
	assert_int_equal(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &e2), 0);
	write_all(p.c, "x", 1);
	assert_int_equal(one_event(outer, 2, 5000), EPOLLIN);
	assert_int_equal(one_event(inner, 1, 0), EPOLLIN);
	char b;
	read_all(p.s, &b, 1);
	close(outer);
	close(inner);
	/* a set inside another before it holds any DDP socket (a socket
	 * new to epoll): the same */
	struct pair q = make_pair(true);
	inner = epoll_create1(0);
	outer = epoll_create1(0);
	assert_int_equal(epoll_ctl(outer, EPOLL_CTL_ADD, inner, &e2), 0);
	assert_int_equal(epoll_ctl(inner, EPOLL_CTL_ADD, q.s, &e1), 0);
	assert_int_equal(one_event(inner, 1, 0), 0);
	assert_int_equal(one_event(outer, 2, 0), 0);
	write_all(q.c, "z", 1);
	assert_int_equal(one_event(outer, 2, 5000), EPOLLIN);
	assert_int_equal(one_event(inner, 1, 0), EPOLLIN);
	read_all(q.s, &b, 1);
	close(outer);
	close(inner);
	close_pair(&q);
	/* epoll_pwait2 */
	int ep = epoll_create1(0);
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, p.c, &e1), 0);
	write_all(p.s, "y", 1);
	struct epoll_event got;
	struct timespec five = { 5, 0 };
	int n = epoll_pwait2(ep, &got, 1, &five, NULL);
	if (n < 0 && errno == ENOSYS) { /* (a kernel before 5.11) */
		n = epoll_wait(ep, &got, 1, 5000);
	}
	assert_int_equal(n, 1);
	assert_int_equal(got.data.u64, 1);
	read_all(p.c, &b, 1);
	close(ep);
	close_pair(&p);
}

/* Two threads, each asleep in epoll_wait on a set of its own with one DDP
 * socket, while both their waits move the process's data: each wakes for
 * every message, whichever thread's round brought it, and never waits
 * out its time. */
struct sleeper {
	int ep, fd, count;
	int missed; /* waits that timed out */
};

static void *sleeper(void *arg)
{
	struct sleeper *s = arg;
	for (int got = 0; got < s->count;) {
		struct epoll_event ev;
		int n = epoll_wait(s->ep, &ev, 1, 2000);
		if (n == 0) {
			s->missed++;
			if (s->missed > 3)
				break;
			continue;
		}
		char b[16];
		ssize_t r = read(s->fd, b, sizeof(b));
		if (r > 0)
			got += (int)r;
	}
	return NULL;
}

static void a_sleeping_epoll_wait_wakes_for_another_threads_progress(void **state)
{
	(void)state;
	struct pair p = make_pair(true), q = make_pair(true);
	struct sleeper a = { .ep = epoll_create1(0), .fd = p.s, .count = 200 };
	struct sleeper b = { .ep = epoll_create1(0), .fd = q.s, .count = 200 };
	struct epoll_event ev = { .events = EPOLLIN };
	assert_int_equal(epoll_ctl(a.ep, EPOLL_CTL_ADD, p.s, &ev), 0);
	assert_int_equal(epoll_ctl(b.ep, EPOLL_CTL_ADD, q.s, &ev), 0);
	fcntl(p.s, F_SETFL, fcntl(p.s, F_GETFL) | O_NONBLOCK);
	fcntl(q.s, F_SETFL, fcntl(q.s, F_GETFL) | O_NONBLOCK);
	pthread_t ta, tb;
	assert_int_equal(pthread_create(&ta, NULL, sleeper, &a), 0);
	assert_int_equal(pthread_create(&tb, NULL, sleeper, &b), 0);
	for (int i = 0; i < 200; i++) {
		write_all(i % 2 ? q.c : p.c, "m", 1);
		write_all(i % 2 ? p.c : q.c, "m", 1);
		/* (now and then a pause, for both to fall asleep) */
		if (i % 16 == 0) {
			struct timespec t = { 0, 2000000 };
			nanosleep(&t, NULL);
		}
	}
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
	assert_int_equal(a.missed, 0);
	assert_int_equal(b.missed, 0);
	close(a.ep);
	close(b.ep);
	close_pair(&p);
	close_pair(&q);
}

/* whether thread @tid of this process is asleep */
static bool task_sleeping(pid_t tid)
{
	char path[64], buf[256];
	snprintf(path, sizeof(path), "/proc/self/task/%d/stat", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *p = strrchr(buf, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

struct lone_waiter {
	int ep;
	_Atomic pid_t tid;
	uint32_t events;
	int n;
};

/* until @w's thread sleeps (past its spin): five looks in a row */
static void until_asleep(struct lone_waiter *w)
{
	for (int asleep = 0; asleep < 5;) {
		pid_t tid = atomic_load(&w->tid);
		asleep = tid && task_sleeping(tid) ? asleep + 1 : 0;
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
	}
}

/* @t ends within 20 s, or the test fails with @why (a wait that is never
 * woken sleeps on for ever) */
static void join_or_fail(pthread_t t, const char *why)
{
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 20;
	if (pthread_timedjoin_np(t, NULL, &until))
		fail_msg("%s", why);
}

static void *lone_wait(void *arg)
{
	struct lone_waiter *w = arg;
	atomic_store(&w->tid, (pid_t)syscall(SYS_gettid));
	struct epoll_event ev = { 0 };
	w->n = epoll_wait(w->ep, &ev, 1, -1);
	w->events = ev.events;
	return NULL;
}

/* A thread asleep in epoll_wait wakes when another thread's call, with no
 * network traffic at all, makes a socket of its set readable: here a
 * shutdown(SHUT_RD), after which a read returns the end at once (the
 * set's bell: no byte tells the kernel). */
static void a_sleeping_epoll_wait_wakes_for_another_threads_call(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	struct lone_waiter w = { .ep = epoll_create1(0) };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 7 };
	assert_int_equal(epoll_ctl(w.ep, EPOLL_CTL_ADD, p.s, &ev), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, lone_wait, &w), 0);
	until_asleep(&w);
	assert_int_equal(shutdown(p.s, SHUT_RD), 0);
	/* (without the bell it sleeps on: uwarp has nothing to wake it for) */
	join_or_fail(t, "epoll_wait slept on after the socket became readable");
	assert_int_equal(w.n, 1);
	assert_true(w.events & EPOLLIN);
	char b;
	assert_int_equal(read(p.s, &b, 1), 0);
	close(w.ep);
	close_pair(&p);
}

/* A thread asleep in epoll_wait on a set that has never held a DDP socket
 * (a pipe alone) when another thread adds one: the socket's data wakes
 * it, with the event the program registered (esock's set wakes the plain
 * wait, whose own events it takes out, and the wait goes on through it). */
static void a_wait_begun_before_the_first_ddp_socket_sees_it(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	int pp[2];
	assert_int_equal(pipe(pp), 0);
	struct lone_waiter w = { .ep = epoll_create1(0) };
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = 0x66 };
	assert_int_equal(epoll_ctl(w.ep, EPOLL_CTL_ADD, pp[0], &ev), 0);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, lone_wait, &w), 0);
	until_asleep(&w);
	struct epoll_event ev2 = { .events = EPOLLIN, .data.u64 = 0x77 };
	assert_int_equal(epoll_ctl(w.ep, EPOLL_CTL_ADD, p.s, &ev2), 0);
	write_all(p.c, "d", 1);
	join_or_fail(t, "epoll_wait slept on after its new DDP socket became readable");
	assert_int_equal(w.n, 1);
	assert_int_equal(w.events, EPOLLIN);
	char b;
	read_all(p.s, &b, 1);
	close(pp[0]);
	close(pp[1]);
	close(w.ep);
	close_pair(&p);
}

/* A DDP socket's number closed while another copy keeps the connection:
 * its registration goes with the number, as the program expects (the
 * kernel keeps one while the file lives, and uwarp holds the file, so a
 * server that closes without EPOLL_CTL_DEL, as nginx does, got the closed
 * connection's events with its data): the peer's close then shows in no
 * set, even to the kernel's own wait. Readiness in user space or not
 * (the ThreadSanitizer build). */
static void a_closed_number_leaves_no_registration_behind(void **state)
{
	(void)state;
	struct pair p = make_pair(true);
	int ep = epoll_create1(0);
	struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP, .data.u64 = 0x55 };
	assert_int_equal(epoll_ctl(ep, EPOLL_CTL_ADD, p.s, &ev), 0);
	int d = dup(p.s);
	assert_true(d >= 0);
	close(p.s);
	close(p.c); /* the stream ends: RDHUP on the file both numbers named */
	char b;
	assert_int_equal(read(d, &b, 1), 0);
	struct epoll_event got;
	assert_int_equal(epoll_wait(ep, &got, 1, 0), 0);
	assert_int_equal(syscall(SYS_epoll_pwait, ep, &got, 1, 0, NULL, 8), 0);
	close(d);
	close(ep);
}

#define BOTH(f) cmocka_unit_test_prestate(f, &mode_plain), cmocka_unit_test_prestate(f, &mode_ddp)

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	const struct CMUnitTest tests[] = {
		/* first: before this process runs any DDP connection */
		cmocka_unit_test(a_listener_shared_across_fork_is_sorted_where_it_is_waited_on),
		BOTH(bytes_flow_both_ways),
		BOTH(names_and_identity_are_tcp),
		BOTH(accept4_applies_its_flags),
		BOTH(nonblocking_read_says_eagain),
		BOTH(a_signal_ends_a_blocking_read_as_on_tcp),
		BOTH(blocking_mode_is_shared_by_every_name),
		BOTH(peek_and_fionread_leave_the_bytes),
		BOTH(waitall_gathers_several_writes),
		BOTH(scatter_gather_calls),
		BOTH(half_close_ends_the_stream_one_way),
		BOTH(write_after_the_end_raises_sigpipe),
		BOTH(close_gives_the_peer_eof_after_the_data),
		BOTH(shutdown_comes_after_every_byte_written),
		BOTH(writability_follows_the_send_buffer),
		BOTH(readiness_in_every_interface),
		BOTH(duplicates_share_the_connection),
		BOTH(sendfile_sends_the_file),
		BOTH(mmsg_calls_move_several_buffers),
		BOTH(stdio_streams_carry_the_bytes),
		BOTH(receive_timeout_says_eagain),
		BOTH(refused_connect_reports_econnrefused),
		BOTH(a_forked_child_gets_clean_errors),
		BOTH(megabytes_both_ways_arrive_intact),
		BOTH(request_reply_reuses_its_pages),
		BOTH(connections_hold_memory_only_where_used),
		cmocka_unit_test(ddp_client_of_a_plain_server_falls_back_to_tcp),
		cmocka_unit_test(a_fallback_keeps_the_epoll_registration),
		cmocka_unit_test(a_blocking_connect_falls_back),
		cmocka_unit_test(ddp_server_serves_plain_clients_plainly),
		cmocka_unit_test(a_ddp_listener_never_waits_for_a_client),
		cmocka_unit_test(a_connected_socket_switches_to_ddp),
		cmocka_unit_test(bad_arguments_get_errors),
		cmocka_unit_test(async_send_and_receive_complete_on_a_queue),
		cmocka_unit_test(one_sided_write_and_read_through_the_socket),
		cmocka_unit_test(extended_calls_need_a_ddp_socket),
		cmocka_unit_test(es_api_calls_on_a_ddp_socket_go_through_esock),
		cmocka_unit_test(an_idle_limit_is_set_per_socket_and_per_listener),
		cmocka_unit_test(a_wait_for_no_ddp_socket_stays_out),
		cmocka_unit_test(a_socket_no_wait_has_seen_gets_no_byte),
		cmocka_unit_test(an_epoll_set_learns_readiness_without_the_socket_pair),
		cmocka_unit_test(a_nested_set_sees_a_ddp_socket_readable),
		cmocka_unit_test(a_sleeping_epoll_wait_wakes_for_another_threads_progress),
		cmocka_unit_test(a_sleeping_epoll_wait_wakes_for_another_threads_call),
		cmocka_unit_test(a_wait_begun_before_the_first_ddp_socket_sees_it),
		cmocka_unit_test(a_closed_number_leaves_no_registration_behind),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
