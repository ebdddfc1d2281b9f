/*
 * sys.c: the C library's descriptor calls, reached directly (sys.h says
 * why). Each is looked up once in the C library already loaded, by name;
 * a lookup that fails (no such C library: a static build) falls back on
 * the name as the program links it.
 *
 * Under a sanitizer the names as linked are used instead: its runtime
 * watches these calls (ThreadSanitizer takes a socket's send and receive
 * for the order between the threads at its two ends, AddressSanitizer
 * checks the buffers), and its builds never run under esock's preload.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <gnu/lib-names.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "util/sys.h"

static struct {
	__typeof__(socket) *socket;
	__typeof__(connect) *connect;
	__typeof__(bind) *bind;
	__typeof__(listen) *listen;
	__typeof__(accept4) *accept4;
	__typeof__(setsockopt) *setsockopt;
	__typeof__(getsockopt) *getsockopt;
	__typeof__(getsockname) *getsockname;
	__typeof__(getpeername) *getpeername;
	__typeof__(shutdown) *shutdown;
	__typeof__(close) *close;
	__typeof__(read) *read;
	__typeof__(readv) *readv;
	__typeof__(recv) *recv;
	__typeof__(send) *send;
	__typeof__(sendmsg) *sendmsg;
	__typeof__(recvmsg) *recvmsg;
	__typeof__(fcntl) *fcntl;
	__typeof__(ioctl) *ioctl;
	__typeof__(poll) *poll;
	__typeof__(ppoll) *ppoll;
	__typeof__(epoll_ctl) *epoll_ctl;
} libc;

static pthread_once_t once = PTHREAD_ONCE_INIT;

#if defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define UTIL_SYS_AS_LINKED 1
#endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define UTIL_SYS_AS_LINKED 1
#endif

#define FIND(name)                                               \
	do {                                                     \
		void *f = h ? dlsym(h, #name) : NULL;            \
		libc.name = f ? (__typeof__(libc.name))f : name; \
	} while (0)

static void find(void)
{
#ifdef UTIL_SYS_AS_LINKED
	void *h = NULL;
#else
	void *h = dlopen(LIBC_SO, RTLD_LAZY | RTLD_NOLOAD);
#endif
	FIND(socket);
	FIND(connect);
	FIND(bind);
	FIND(listen);
	FIND(accept4);
	FIND(setsockopt);
	FIND(getsockopt);
	FIND(getsockname);
	FIND(getpeername);
	FIND(shutdown);
	FIND(close);
	FIND(read);
	FIND(readv);
	FIND(recv);
	FIND(send);
	FIND(sendmsg);
	FIND(recvmsg);
	FIND(fcntl);
	FIND(ioctl);
	FIND(poll);
	FIND(ppoll);
	FIND(epoll_ctl);
	/* (the handle stays open: the C library is never unloaded) */
}

#define LIBC() (pthread_once(&once, find), &libc)

int util_sys_socket(int d, int t, int p) { return LIBC()->socket(d, t, p); }
int util_sys_connect(int fd, const struct sockaddr *a, socklen_t l)
{
	return LIBC()->connect(fd, a, l);
}
int util_sys_bind(int fd, const struct sockaddr *a, socklen_t l) { return LIBC()->bind(fd, a, l); }
int util_sys_listen(int fd, int b) { return LIBC()->listen(fd, b); }
int util_sys_accept4(int fd, struct sockaddr *a, socklen_t *l, int f)
{
	return LIBC()->accept4(fd, a, l, f);
}
int util_sys_setsockopt(int fd, int lv, int n, const void *v, socklen_t l)
{
	return LIBC()->setsockopt(fd, lv, n, v, l);
}
int util_sys_getsockopt(int fd, int lv, int n, void *v, socklen_t *l)
{
	return LIBC()->getsockopt(fd, lv, n, v, l);
}
int util_sys_getsockname(int fd, struct sockaddr *a, socklen_t *l)
{
	return LIBC()->getsockname(fd, a, l);
}
int util_sys_getpeername(int fd, struct sockaddr *a, socklen_t *l)
{
	return LIBC()->getpeername(fd, a, l);
}
int util_sys_shutdown(int fd, int how) { return LIBC()->shutdown(fd, how); }
int util_sys_close(int fd) { return LIBC()->close(fd); }
ssize_t util_sys_read(int fd, void *b, size_t n) { return LIBC()->read(fd, b, n); }
ssize_t util_sys_readv(int fd, const struct iovec *v, int c) { return LIBC()->readv(fd, v, c); }
ssize_t util_sys_recv(int fd, void *b, size_t n, int f) { return LIBC()->recv(fd, b, n, f); }
ssize_t util_sys_send(int fd, const void *b, size_t n, int f) { return LIBC()->send(fd, b, n, f); }
ssize_t util_sys_sendmsg(int fd, const struct msghdr *m, int f)
{
	return LIBC()->sendmsg(fd, m, f);
}

ssize_t util_sys_recvmsg(int fd, struct msghdr *m, int f) { return LIBC()->recvmsg(fd, m, f); }
int util_sys_fcntl(int fd, int cmd, long arg) { return LIBC()->fcntl(fd, cmd, arg); }
int util_sys_ioctl(int fd, unsigned long req, void *arg) { return LIBC()->ioctl(fd, req, arg); }
int util_sys_poll(struct pollfd *p, nfds_t n, int t) { return LIBC()->poll(p, n, t); }
int util_sys_ppoll(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask)
{
	return LIBC()->ppoll(p, n, t, mask);
}
int util_sys_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev)
{
	return LIBC()->epoll_ctl(ep, op, fd, ev);
}
