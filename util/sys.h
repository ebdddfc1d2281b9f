/*
 * util/sys.h: the C library's descriptor calls, reached directly.
 *
 * A program may run with a library loaded before ours that replaces the
 * socket calls for the program's own sockets: esock's preload does, and
 * it drives the ES-API and the runtime from above. The runtime's and the
 * ES-API's own descriptors (the TCP sockets under DDP connections, their
 * listeners, eventfds, queues) must never pass up through such a library:
 * under ESOCK_DDPMODE=all it would take the runtime's own connection for
 * one of the program's and carry it over DDP in turn. So the layers below
 * esock make these calls here, through the C library's own definitions
 * (found once by name in the loaded libc), and never by the names a
 * preloaded library can replace; tests/layering/check_layers.py sees to
 * it. The calls behave exactly as the C library's.
 */
#ifndef UWARP_UTIL_SYS_H
#define UWARP_UTIL_SYS_H

#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/uio.h>

int util_sys_socket(int domain, int type, int protocol);
int util_sys_connect(int fd, const struct sockaddr *addr, socklen_t len);
int util_sys_bind(int fd, const struct sockaddr *addr, socklen_t len);
int util_sys_listen(int fd, int backlog);
int util_sys_accept4(int fd, struct sockaddr *addr, socklen_t *len, int flags);
int util_sys_setsockopt(int fd, int level, int name, const void *val, socklen_t len);
int util_sys_getsockopt(int fd, int level, int name, void *val, socklen_t *len);
int util_sys_getsockname(int fd, struct sockaddr *addr, socklen_t *len);
int util_sys_getpeername(int fd, struct sockaddr *addr, socklen_t *len);
int util_sys_shutdown(int fd, int how);
int util_sys_close(int fd);
ssize_t util_sys_read(int fd, void *buf, size_t n);
ssize_t util_sys_readv(int fd, const struct iovec *iov, int cnt);
ssize_t util_sys_recv(int fd, void *buf, size_t n, int flags);
ssize_t util_sys_send(int fd, const void *buf, size_t n, int flags);
ssize_t util_sys_sendmsg(int fd, const struct msghdr *m, int flags);
ssize_t util_sys_recvmsg(int fd, struct msghdr *m, int flags);
int util_sys_fcntl(int fd, int cmd, long arg);
int util_sys_ioctl(int fd, unsigned long req, void *arg);
int util_sys_poll(struct pollfd *p, nfds_t n, int timeout);
int util_sys_ppoll(struct pollfd *p, nfds_t n, const struct timespec *t, const sigset_t *mask);
int util_sys_epoll_ctl(int ep, int op, int fd, struct epoll_event *ev);

#endif
