/*
 * esock_setup.c: a TCP socket becoming a DDP socket, on the connecting
 * side (connect, or setsockopt on a connected socket) and on the accepting
 * side (a client that sent an MPA Request). The TCP socket goes to uwarp;
 * the program's descriptor number goes to one end of a socket pair.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "esock_internal.h"
#include "util/ddpmode.h"
#include "util/pages.h"

int esock__mpa_verdict(int fd)
{
	uint8_t b[UTIL_MPA_KEY_LEN];
	ssize_t n = REAL(recv)(fd, b, sizeof(b), MSG_PEEK | MSG_DONTWAIT);
	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? -1 : 0;
	return util_mpa_request_verdict(b, (size_t)n);
}

/* buffers, registrations, the socket pair and the exs socket */
static int prepare(struct esock *e)
{
	/* pages only where the connection uses them (util/pages.h) */
	e->rbuf = util_pages_alloc((size_t)ESOCK_RCHUNKS * ESOCK_RCHUNK);
	e->sbuf = util_pages_alloc(ESOCK_SBUF);
	if (!e->rbuf || !e->sbuf)
		return -ENOMEM;
	e->rmh = exs_mregister(e->rbuf, (size_t)ESOCK_RCHUNK * ESOCK_RCHUNKS, EXS_ACCESS_WRITE);
	e->smh = exs_mregister(e->sbuf, ESOCK_SBUF, EXS_ACCESS_READ);
	if (e->rmh == EXS_MHANDLE_INVALID || e->smh == EXS_MHANDLE_INVALID)
		return -ENOMEM;
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	e->a = esock__hide(sv[0]);
	e->b = esock__hide(sv[1]);
	/* no byte for readable until a wait that asks the kernel looks at
	 * it (esock_ready.c): a program that only reads and writes, or
	 * waits in epoll, never needs one */
	esock__ready_lazy(e);
	/* the smallest send buffer: a small write from our side of the
	 * program's end makes it unwritable (esock__update) */
	int one = 1;
	REAL(setsockopt)(e->a, SOL_SOCKET, SO_SNDBUF, &one, sizeof(one));
	for (int i = 0; i < ESOCK_RCHUNKS; i++)
		e->rstate[i] = RC_END;
	return 0;
}

static int new_exs(struct esock *e)
{
	int x = exs_socket(e->domain == AF_INET6 ? AF_INET6 : AF_INET, SOCK_STREAM, 0);
	if (x >= 0) {
		esock__exs_options(x);
		const char *crc = getenv("ESOCK_CRC");
		if (crc && !strcmp(crc, "off")) {
			int off = 0;
			exs_setsockopt(x, SOL_EXS, EXS_SO_CRC, &off, sizeof(off));
		}
	}
	return x < 0 ? -errno : x;
}

static int domain_of(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	if (REAL(getsockname)(fd, (struct sockaddr *)&ss, &len))
		return AF_INET;
	return ss.ss_family;
}

static void undo(struct esock *e)
{
	/* nothing refers to it yet: as esock__engine_done with no names */
	e->fds = 1;
	esock__unref_fd(e);
}

/* the accepting side: uwarp takes @t, the handoff listener brings its
 * exs socket once the negotiation is done */
static int take_over_accepted(struct esock *e, int t, bool *owned)
{
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	if (REAL(getpeername)(t, (struct sockaddr *)&peer, &len))
		return -errno;
	int rc = exs_accept_fd(esock__handoff_fd(), t);
	if (rc)
		return -errno;
	*owned = true;
	int x = esock__take_accepted(&peer, ESOCK_SETUP_MS);
	if (x < 0)
		return -ECONNABORTED;
	e->exs = x;
	e->engine_ref = true;
	esock__engine_live();
	e->st = ES_CONNECTED;
	return esock__post_recvs(e);
}

struct esock *esock__switch(int fd, bool initiator, int t, const struct sockaddr *to)
{
	int rc = esock__engine();
	if (rc) {
		errno = -rc;
		return NULL;
	}
	struct esock *e = esock__new(domain_of(t));
	if (!e) {
		errno = ENOMEM;
		return NULL;
	}
	int fl = REAL(fcntl)(fd, F_GETFL);
	int fdfl = REAL(fcntl)(fd, F_GETFD);
	e->tcp = esock__dup_high(t);
	if (fl < 0 || fdfl < 0 || e->tcp < 0) {
		rc = -EBADF;
		goto fail;
	}
	rc = prepare(e);
	if (rc)
		goto fail;
	pthread_mutex_lock(&e->mu);
	if (initiator) {
		rc = new_exs(e);
		if (rc >= 0) {
			e->exs = rc;
			e->st = ES_CONNECTING;
			e->conn_fd = fd;
			/* a switch at both ends waits as long as the other
			 * end's call may take; a connect as long as a server
			 * that may not be iWARP gets to answer */
			unsigned ms = to ? esock__reply_ms() : ESOCK_SETUP_MS;
			struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
			exs_setsockopt(e->exs, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
			if (to) {
				memcpy(&e->peer, to,
				       to->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
								 : sizeof(struct sockaddr_in));
				e->may_fall_back = esock__fallback_on();
			} else {
				socklen_t pl = sizeof(e->peer);
				REAL(getpeername)(t, (struct sockaddr *)&e->peer, &pl);
			}
			rc = exs_connect_fd(e->exs, t, esock_q, &e->tag_conn) ? -errno : 0;
			if (rc) {
				exs_close(e->exs, EXS_QHANDLE_INVALID, NULL);
			} else {
				e->engine_ref = true;
				esock__engine_live();
			}
		}
	} else {
		bool owned = false;
		rc = take_over_accepted(e, t, &owned);
	}
	if (rc) {
		pthread_mutex_unlock(&e->mu);
		goto fail;
	}
	/* from here uwarp owns @t; the program's number becomes its end */
	if (fl & O_NONBLOCK) {
		REAL(fcntl)(e->a, F_SETFL, REAL(fcntl)(e->a, F_GETFL) | O_NONBLOCK);
		e->nonblock = true;
	}
	if (REAL(dup3)(e->a, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0 && !e->conn_err)
		e->conn_err = e->so_error = errno;
	esock__update(e, false);
	pthread_mutex_unlock(&e->mu);
	esock__set(fd, e);
	return e;
fail:
	undo(e);
	errno = -rc;
	return NULL;
}

/* an accepted socket's number for the program, accept4's @flags applied
 * (under e->mu): the number or -errno */
static int program_end(struct esock *e, int flags)
{
	if (flags & SOCK_NONBLOCK) {
		REAL(fcntl)(e->a, F_SETFL, REAL(fcntl)(e->a, F_GETFL) | O_NONBLOCK);
		e->nonblock = true;
	}
	int nfd = REAL(fcntl)(e->a, (flags & SOCK_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	if (nfd < 0)
		return -errno;
	esock__update(e, false);
	return nfd;
}

int esock__adopt_exs(int x, int tcp, int flags)
{
	struct esock *e = esock__new(domain_of(tcp));
	if (!e) {
		esock__close(tcp);
		exs_close(x, EXS_QHANDLE_INVALID, NULL);
		errno = ECONNABORTED;
		return -1;
	}
	e->tcp = tcp;
	int rc = prepare(e);
	int nfd = -1;
	pthread_mutex_lock(&e->mu);
	e->exs = x;
	e->engine_ref = true;
	esock__engine_live();
	e->st = ES_CONNECTED;
	if (!rc)
		rc = esock__post_recvs(e);
	if (!rc) {
		nfd = program_end(e, flags);
		rc = nfd < 0 ? nfd : 0;
	}
	pthread_mutex_unlock(&e->mu);
	if (rc) {
		undo(e);              /* (closes the exs socket too: engine_ref) */
		errno = ECONNABORTED; /* as a connection reset in the backlog */
		return -1;
	}
	esock__set(nfd, e);
	return nfd;
}
