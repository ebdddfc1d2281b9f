/*
 * esock_pair.c: a program that uses extended sockets as their header says
 * (test_install.sh builds it from an installed tree with pkg-config esock):
 * a listener and a client, both switched to DDP with setsockopt, connect;
 * a message goes each way over the DDP connection. Prints "esock: ..." and
 * exits 0, or 1 with what failed.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <esock.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int fail(const char *what)
{
	fprintf(stderr, "esock_pair: %s: %s\n", what, strerror(errno));
	return 1;
}

int main(void)
{
	int one = 1;
	int l = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (l < 0 || setsockopt(l, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 4) ||
	    getsockname(l, (struct sockaddr *)&a, &al))
		return fail("listener");
	int c = socket(AF_INET, SOCK_STREAM, 0);
	if (c < 0 || setsockopt(c, SOL_ESOCK, ESOCK_DDPMODE, &one, sizeof(one)))
		return fail("client socket");
	/* non-blocking: the accept below completes the negotiation */
	fcntl(c, F_SETFL, O_NONBLOCK);
	if (connect(c, (struct sockaddr *)&a, sizeof(a)) && errno != EINPROGRESS)
		return fail("connect");
	int s = accept(l, NULL, NULL);
	if (s < 0)
		return fail("accept");
	struct pollfd p = { .fd = c, .events = POLLOUT };
	if (poll(&p, 1, 10000) != 1)
		return fail("waiting for the connection");
	fcntl(c, F_SETFL, 0);
	if (esock_is_ddp(c) != 1 || esock_is_ddp(s) != 1) {
		fprintf(stderr, "esock_pair: the connection is not carried over DDP\n");
		return 1;
	}
	char buf[16] = { 0 };
	if (write(c, "ping", 4) != 4 || read(s, buf, sizeof(buf)) != 4 || memcmp(buf, "ping", 4) ||
	    write(s, "pong", 4) != 4 || read(c, buf, sizeof(buf)) != 4 || memcmp(buf, "pong", 4))
		return fail("ping-pong");
	close(c);
	close(s);
	close(l);
	printf("esock: ping and pong over DDP\n");
	return 0;
}
