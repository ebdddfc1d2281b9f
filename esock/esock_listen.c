/*
 * esock_listen.c: DDP listeners, the program's side (struct
 * esock_listener says why they look as they do): the swap made at listen,
 * the names that dup and close make, and accept.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "esock_internal.h"

static struct esock_listener *_Atomic ltab[ESOCK_FD_MAX];
/* a listener's ESOCK_IDLE_MS (+1) while fork has turned it back into the
 * TCP listener: the processes that make it theirs again take it over */
static int reverted_idle[ESOCK_FD_MAX];
_Atomic bool esock_any_reverted;

struct esock_listener *esock__listener(int fd)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX || !(esock_fdflags[fd] & FD_LISTENER))
		return NULL;
	return atomic_load_explicit(&ltab[fd], memory_order_acquire);
}

int esock__listener_make(int fd, int backlog)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX) {
		errno = EMFILE;
		return -1;
	}
	struct esock_listener *l = calloc(1, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return -1;
	}
	l->tcp = -1;
	l->idle_ms = -1;
	util_list_init(&l->ready);
	int u = -1, err = 0;
	int fl = REAL(fcntl)(fd, F_GETFL);
	int fdfl = REAL(fcntl)(fd, F_GETFD);
	if (fl < 0 || fdfl < 0) {
		err = errno;
		goto fail;
	}
	l->tcp = esock__dup_high(fd);
	u = REAL(socket)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* a name the kernel picks in the abstract namespace: no file */
	sa_family_t fam = AF_UNIX;
	l->token_len = sizeof(l->token_addr);
	if (l->tcp < 0 || u < 0 || bind(u, (const struct sockaddr *)&fam, sizeof(fam)) ||
	    REAL(listen)(u, INT_MAX) ||
	    REAL(getsockname)(u, (struct sockaddr *)&l->token_addr, &l->token_len)) {
		err = errno;
		goto fail;
	}
	if (fl & O_NONBLOCK)
		REAL(fcntl)(u, F_SETFL, REAL(fcntl)(u, F_GETFL) | O_NONBLOCK);
	/* the gate never waits in accept (the program's number keeps the
	 * program's own mode; this copy is the only name left of the TCP
	 * listener's file once the number is swapped) */
	REAL(fcntl)(l->tcp, F_SETFL, fl | O_NONBLOCK);
	l->owner = esock__pid();
	l->names = 1;
	l->refs = 2; /* the names' and the gate's */
	l->cap = esock__backlog_cap(backlog);
	int rc = esock__gate_add(l);
	if (rc) {
		err = -rc;
		goto fail;
	}
	if (REAL(dup3)(u, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0) {
		err = errno;
		esock__close(u);
		esock__gate_name(l, -1); /* (the gate lets go of it) */
		errno = err;
		return -1;
	}
	esock__close(u);
	atomic_store_explicit(&ltab[fd], l, memory_order_release);
	esock_fdflags[fd] |= FD_LISTENER | FD_DDP_LISTEN | FD_TCP;
	return 0;
fail:
	if (u >= 0)
		esock__close(u);
	if (l->tcp >= 0)
		esock__close(l->tcp);
	free(l);
	errno = err ? err : ENOMEM;
	return -1;
}

static bool reverted(int fd)
{
	return atomic_load_explicit(&esock_any_reverted, memory_order_relaxed) && fd >= 0 &&
	       fd < ESOCK_FD_MAX &&
	       (esock_fdflags[fd] & (FD_DDP_LISTEN | FD_LISTENER)) == FD_DDP_LISTEN;
}

int esock__listener_regate(int fd)
{
	static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
	if (!reverted(fd))
		return 0;
	pthread_mutex_lock(&mu);
	int rc = 0;
	if (reverted(fd)) {
		/* the kernel tells a listener's backlog as tcpi_sacked: the
		 * gate holds as many as the program asked the kernel to */
		struct tcp_info ti;
		socklen_t n = sizeof(ti);
		int backlog = SOMAXCONN;
		if (!REAL(getsockopt)(fd, IPPROTO_TCP, TCP_INFO, &ti, &n) &&
		    ti.tcpi_state == TCP_LISTEN && ti.tcpi_sacked)
			backlog = (int)ti.tcpi_sacked;
		rc = esock__listener_make(fd, backlog);
		if (!rc && reverted_idle[fd])
			esock__listener(fd)->idle_ms = reverted_idle[fd] - 1;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

void esock__listener_name(int fd, struct esock_listener *l)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX)
		return;
	if (l->owner == esock__pid())
		esock__gate_name(l, 1);
	atomic_store_explicit(&ltab[fd], l, memory_order_release);
}

void esock__listener_forget(int fd)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX)
		return;
	struct esock_listener *l = atomic_exchange(&ltab[fd], NULL);
	/* a parent's (fork): its gate is not here, the parent's still serves it */
	if (l && l->owner == esock__pid())
		esock__gate_name(l, -1);
}

int esock__listener_relisten(struct esock_listener *l, int backlog)
{
	if (REAL(listen)(l->tcp, backlog))
		return -1;
	esock__gate_set_cap(l, esock__backlog_cap(backlog));
	return 0;
}

static void put_addr(const struct sockaddr_storage *ss, struct sockaddr *addr, socklen_t *len)
{
	if (!addr || !len)
		return;
	socklen_t n = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						: sizeof(struct sockaddr_in);
	memcpy(addr, ss, *len < n ? *len : n);
	*len = n;
}

/* a plain client's socket at the number the program gets */
static int plain_fd(struct esock_ready *r, int flags)
{
	int nfd = REAL(fcntl)(r->fd, (flags & SOCK_CLOEXEC) ? F_DUPFD_CLOEXEC : F_DUPFD, 0);
	if (nfd < 0)
		return -1;
	esock__close(r->fd);
	if (flags & SOCK_NONBLOCK)
		REAL(fcntl)(nfd, F_SETFL, REAL(fcntl)(nfd, F_GETFL) | O_NONBLOCK);
	return nfd;
}

int esock__listener_accept(struct esock_listener *l, int fd, struct sockaddr *addr, socklen_t *len,
			   int flags, bool *ddp)
{
	*ddp = false;
	l->accepted = true;
	if (l->owner != esock__pid()) {
		/* inherited across fork: the parent's gate serves the program's
		 * number; here the TCP listener is taken as it is */
		return REAL(accept4)(l->tcp, addr, len, flags);
	}
	for (;;) {
		/* a token: blocks, times out (SO_RCVTIMEO), is interrupted or
		 * finds none (O_NONBLOCK) exactly as the program asked */
		int t = REAL(accept4)(fd, NULL, NULL, SOCK_CLOEXEC);
		if (t < 0)
			return -1;
		/* only our gate's tokens count: the abstract name is visible
		 * to every process in the network namespace */
		struct ucred cr;
		socklen_t cl = sizeof(cr);
		bool ours = !REAL(getsockopt)(t, SOL_SOCKET, SO_PEERCRED, &cr, &cl) &&
			    cr.pid == esock__pid();
		esock__close(t);
		if (!ours)
			continue;
		struct esock_ready *r = esock__gate_pop(l);
		if (!r)
			continue;
		struct sockaddr_storage peer = r->peer;
		int nfd;
		if (r->tcp < 0) {
			nfd = plain_fd(r, flags);
			if (nfd < 0) {
				int err = errno;
				/* (EMFILE: the client waits for a later accept) */
				esock__gate_putback(l, r);
				errno = err;
				return -1;
			}
		} else {
			int idle = l->idle_ms;
			if (idle >= 0) /* (what the process's default set goes) */
				exs_setsockopt(r->fd, SOL_EXS, EXS_SO_IDLE_MS, &idle, sizeof(idle));
			nfd = esock__adopt_exs(r->fd, r->tcp, flags);
			*ddp = nfd >= 0;
		}
		free(r);
		if (nfd >= 0)
			put_addr(&peer, addr, len);
		return nfd;
	}
}

void esock__listener_revert(struct esock_listener *l)
{
	for (int fd = 0; fd < ESOCK_FD_MAX; fd++) {
		if (atomic_load_explicit(&ltab[fd], memory_order_relaxed) != l)
			continue;
		int fl = REAL(fcntl)(fd, F_GETFL);
		int fdfl = REAL(fcntl)(fd, F_GETFD);
		atomic_store_explicit(&ltab[fd], NULL, memory_order_release);
		esock_fdflags[fd] &= (uint8_t)~FD_LISTENER; /* FD_DDP_LISTEN stays */
		atomic_store_explicit(&esock_any_reverted, true, memory_order_relaxed);
		reverted_idle[fd] = l->idle_ms + 1;
		if (fl >= 0)
			REAL(fcntl)(l->tcp, F_SETFL, fl);
		REAL(dup3)(l->tcp, fd, (fdfl >= 0 && (fdfl & FD_CLOEXEC)) ? O_CLOEXEC : 0);
		l->names--;
	}
}
