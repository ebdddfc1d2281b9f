/*
 * esock_stdio.c: C library streams over DDP sockets. glibc's stdio reads
 * and writes a stream's descriptor with its own internal calls, which
 * symbol interposition cannot reach: a stream made with fdopen(3) on a
 * DDP socket would read the library's readiness bytes instead of the
 * peer's. fdopen makes such a stream over the socket calls instead, and
 * fileno(3) still names the socket.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "esock_internal.h"

#define EXPORT __attribute__((visibility("default")))

static ssize_t cookie_read(void *c, char *buf, size_t n)
{
	struct esock *e = esock__get((int)(intptr_t)c);
	if (!e) {
		errno = EBADF;
		return -1;
	}
	struct iovec v = { buf, n };
	return esock__recv(e, &v, 1, 0);
}

static ssize_t cookie_write(void *c, const char *buf, size_t n)
{
	struct esock *e = esock__get((int)(intptr_t)c);
	if (!e) {
		errno = EBADF;
		return -1;
	}
	struct iovec v = { (void *)buf, n };
	ssize_t r = esock__send(e, &v, 1, 0);
	return r < 0 ? 0 : r; /* (a cookie writer reports errors as 0) */
}

/* the streams made here and the descriptor each names */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct stream {
	FILE *f;
	int fd;
	struct stream *next;
} *streams;
static _Atomic int nstreams; /* (read without the lock) */

static int cookie_close(void *c)
{
	int fd = (int)(intptr_t)c;
	pthread_mutex_lock(&mu);
	for (struct stream **pp = &streams; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			struct stream *s = *pp;
			*pp = s->next;
			free(s);
			nstreams--;
			break;
		}
	pthread_mutex_unlock(&mu);
	return close(fd);
}

EXPORT FILE *fdopen(int fd, const char *mode)
{
	if (!esock__get(fd))
		return REAL(fdopen)(fd, mode);
	struct stream *s = malloc(sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	cookie_io_functions_t io = { .read = cookie_read,
				     .write = cookie_write,
				     .close = cookie_close };
	s->f = fopencookie((void *)(intptr_t)fd, mode, io);
	if (!s->f) {
		free(s);
		return NULL;
	}
	s->fd = fd;
	pthread_mutex_lock(&mu);
	s->next = streams;
	streams = s;
	nstreams++;
	pthread_mutex_unlock(&mu);
	return s->f;
}

static int stream_fd(FILE *f)
{
	if (!nstreams)
		return -1; /* (no DDP stream: no lock taken) */
	pthread_mutex_lock(&mu);
	int fd = -1;
	for (struct stream *s = streams; s; s = s->next)
		if (s->f == f)
			fd = s->fd;
	pthread_mutex_unlock(&mu);
	return fd;
}

EXPORT int fileno(FILE *f)
{
	int fd = stream_fd(f);
	return fd >= 0 ? fd : REAL(fileno)(f);
}

EXPORT int fileno_unlocked(FILE *f)
{
	int fd = stream_fd(f);
	return fd >= 0 ? fd : REAL(fileno_unlocked)(f);
}
