/*
 * libc_real.c: the calls esock replaces, as the next library (the C
 * library) provides them. Resolved once, on the first call that needs
 * them: a replaced call can come before any constructor has run.
 */
#include <dlfcn.h>

#include "esock_internal.h"

struct esock_libc esock_libc;

#define LOOKUP(field, name) esock_libc.field = (__typeof__(esock_libc.field))dlsym(RTLD_NEXT, name)

void esock__libc_init(void)
{
	/* racing threads store the same values */
	LOOKUP(connect, "connect");
	LOOKUP(listen, "listen");
	LOOKUP(accept4, "accept4");
	LOOKUP(setsockopt, "setsockopt");
	LOOKUP(getsockopt, "getsockopt");
	LOOKUP(getsockname, "getsockname");
	LOOKUP(getpeername, "getpeername");
	LOOKUP(shutdown, "shutdown");
	LOOKUP(close, "close");
	LOOKUP(dup, "dup");
	LOOKUP(dup2, "dup2");
	LOOKUP(dup3, "dup3");
	LOOKUP(fcntl, "fcntl");
	LOOKUP(ioctl, "ioctl");
	LOOKUP(read, "read");
	LOOKUP(write, "write");
	LOOKUP(readv, "readv");
	LOOKUP(writev, "writev");
	LOOKUP(recv, "recv");
	LOOKUP(send, "send");
	LOOKUP(recvfrom, "recvfrom");
	LOOKUP(sendto, "sendto");
	LOOKUP(recvmsg, "recvmsg");
	LOOKUP(sendmsg, "sendmsg");
	LOOKUP(sendfile, "sendfile");
	LOOKUP(recvmmsg, "recvmmsg");
	LOOKUP(sendmmsg, "sendmmsg");
	LOOKUP(fdopen, "fdopen");
	LOOKUP(fileno, "fileno");
	LOOKUP(fileno_unlocked, "fileno_unlocked");
	LOOKUP(read_chk, "__read_chk");
	LOOKUP(recv_chk, "__recv_chk");
	LOOKUP(recvfrom_chk, "__recvfrom_chk");
	LOOKUP(poll, "poll");
	LOOKUP(ppoll, "ppoll");
	LOOKUP(select, "select");
	LOOKUP(pselect, "pselect");
	LOOKUP(epoll_create, "epoll_create");
	LOOKUP(epoll_create1, "epoll_create1");
	LOOKUP(epoll_ctl, "epoll_ctl");
	LOOKUP(epoll_wait, "epoll_wait");
	LOOKUP(epoll_pwait, "epoll_pwait");
	LOOKUP(epoll_pwait2, "epoll_pwait2");
	/* last: REAL() tests the field it needs, and this one is set last */
	LOOKUP(socket, "socket");
}
