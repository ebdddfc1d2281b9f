/*
 * esock_table.c: which descriptor numbers name DDP sockets, and the life
 * of those sockets. A socket lives while a descriptor names it (dup makes
 * more) or its exs socket is still closing: the close lingers in the
 * background, as a TCP close does, and the buffers go when it is done.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "esock_internal.h"
#include "util/clock.h"
#include "util/pages.h"

_Atomic uint8_t esock_fdflags[ESOCK_FD_MAX];
static struct esock *_Atomic tab[ESOCK_FD_MAX];
static pthread_mutex_t tab_mu = PTHREAD_MUTEX_INITIALIZER;
/* getpid(2) is a system call on every call: the process's own, kept here
 * and renewed in a forked child */
static pid_t my_pid;

pid_t esock__pid(void) { return my_pid; }

struct esock *esock__peek(int fd)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX)
		return NULL;
	return atomic_load_explicit(&tab[fd], memory_order_acquire);
}

struct esock *esock__get(int fd)
{
	struct esock *e = esock__peek(fd);
	if (e && atomic_load_explicit(&e->fallback_due, memory_order_acquire))
		return esock__fall_back(fd, e);
	return e;
}

void esock__unname(int fd, struct esock *e)
{
	esock_fdflags[fd] = FD_TCP | FD_NO_DDP; /* it stays the plain socket it is */
	pthread_mutex_lock(&tab_mu);
	bool named = tab[fd] == e;
	if (named)
		atomic_store_explicit(&tab[fd], NULL, memory_order_release);
	pthread_mutex_unlock(&tab_mu);
	if (named) {
		esock__ready_forget(fd, e, false); /* (fd names the plain socket) */
		esock__unref_fd(e);
	}
}

void esock__set(int fd, struct esock *e)
{
	pthread_mutex_lock(&e->mu);
	e->fds++;
	pthread_mutex_unlock(&e->mu);
	pthread_mutex_lock(&tab_mu);
	struct esock *old = tab[fd];
	atomic_store_explicit(&tab[fd], e, memory_order_release);
	pthread_mutex_unlock(&tab_mu);
	if (old) {
		esock__ready_forget(fd, old, true);
		esock__unref_fd(old);
	}
}

void esock__forget(int fd)
{
	if (fd < 0 || fd >= ESOCK_FD_MAX)
		return;
	if (esock_fdflags[fd] & FD_LISTENER)
		esock__listener_forget(fd);
	esock__ready_drop_set(fd);
	esock_fdflags[fd] = 0;
	pthread_mutex_lock(&tab_mu);
	struct esock *old = tab[fd];
	atomic_store_explicit(&tab[fd], NULL, memory_order_release);
	pthread_mutex_unlock(&tab_mu);
	if (old) {
		esock__ready_forget(fd, old, true);
		esock__unref_fd(old);
	}
}

struct esock *esock__new(int domain)
{
	struct esock *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	pthread_mutex_init(&e->mu, NULL);
	util_cond_init(&e->cv);
	e->owner = my_pid;
	e->domain = domain;
	e->exs = e->tcp = e->a = e->b = -1;
	util_list_init(&e->memberships);
	e->tag_conn = (struct esock_tag){ e, TAG_CONNECT, 0 };
	e->tag_shut = (struct esock_tag){ e, TAG_SHUT, 0 };
	e->tag_close = (struct esock_tag){ e, TAG_CLOSE, 0 };
	for (int i = 0; i < ESOCK_RCHUNKS; i++)
		e->tag_recv[i] = (struct esock_tag){ e, TAG_RECV, i };
	for (int i = 0; i < ESOCK_SENDS_MAX; i++)
		e->tag_send[i] = (struct esock_tag){ e, TAG_SEND, i };
	return e;
}

bool esock__foreign(const struct esock *e) { return e->owner != my_pid; }

/* Our own descriptors live high, where the program does not look: event
 * loops sized by their connection count (wrk, redis) and select(2) sets
 * expect the numbers a plain TCP program would get. */
int esock__fd_floor(void)
{
	static int floor = -1;
	if (floor < 0) {
		struct rlimit rl;
		long f = 512;
		if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
			f = (long)rl.rlim_cur / 2;
		floor = (int)(f > 4096 ? 4096 : f);
	}
	return floor;
}

int esock__dup_high(int fd)
{
	int n = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, esock__fd_floor());
	return n >= 0 ? n : REAL(fcntl)(fd, F_DUPFD_CLOEXEC, 0);
}

int esock__hide(int fd)
{
	int n = REAL(fcntl)(fd, F_DUPFD_CLOEXEC, esock__fd_floor());
	if (n < 0)
		return fd;
	esock__close(fd);
	return n;
}

static void free_esock(struct esock *e)
{
	if (e->rmh != EXS_MHANDLE_INVALID)
		exs_mderegister(&e->rmh);
	if (e->smh != EXS_MHANDLE_INVALID)
		exs_mderegister(&e->smh);
	util_pages_free(e->rbuf, (size_t)ESOCK_RCHUNKS * ESOCK_RCHUNK);
	util_pages_free(e->sbuf, ESOCK_SBUF);
	int fds[] = { e->tcp, e->a, e->b };
	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] >= 0)
			esock__close(fds[i]);
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	free(e);
}

void esock__unref_fd(struct esock *e)
{
	/* A parent's (fork): its descriptors here are only copies, and its
	 * lock may have been held by a thread this process does not have. */
	if (esock__foreign(e))
		return;
	pthread_mutex_lock(&e->mu);
	bool last = --e->fds == 0;
	if (!last) {
		pthread_mutex_unlock(&e->mu);
		return;
	}
	if (e->engine_ref && getenv("ESOCK_DEBUG")) {
		struct exs_stream_counters c;
		socklen_t l = sizeof(c);
		if (!exs_getsockopt(e->exs, SOL_EXS, EXS_SO_COUNTERS, &c, &l))
			fprintf(stderr,
				"esock %d: direct %lu indirect %lu switches %lu discarded %lu "
				"adverts %lu "
				"copied %lu rx_direct %lu rx_indirect %lu coalesced %lu\n",
				(int)my_pid, (unsigned long)c.direct, (unsigned long)c.indirect,
				(unsigned long)c.switches, (unsigned long)c.discarded,
				(unsigned long)c.adverts, (unsigned long)c.copied,
				(unsigned long)c.rx_direct, (unsigned long)c.rx_indirect,
				(unsigned long)c.coalesced);
	}
	esock__cancel_arecv(e, ECANCELED);
	if (e->engine_ref) {
		/* the bytes already written still go (the ring's last ones may
		 * wait for a completion); CLOSE frees it */
		e->close_due = true;
		bool failed = esock__settle(e);
		pthread_mutex_unlock(&e->mu);
		if (failed)
			esock__engine_done(e);
		return;
	}
	pthread_mutex_unlock(&e->mu);
	free_esock(e);
}

/* connections whose exs socket is open: exit waits for their closes */
static int live;
static pthread_cond_t live_cv = PTHREAD_COND_INITIALIZER;

void esock__engine_live(void)
{
	pthread_mutex_lock(&tab_mu);
	int n = ++live;
	pthread_mutex_unlock(&tab_mu);
	/* (should the queue not grow, this connection's posts fail with
	 * EAGAIN and it fails cleanly: ECONNABORTED, or the connect's error) */
	esock__queue_room(n);
}

void esock__engine_done(struct esock *e)
{
	pthread_mutex_lock(&tab_mu);
	if (--live == 0)
		pthread_cond_broadcast(&live_cv);
	pthread_mutex_unlock(&tab_mu);
	pthread_mutex_lock(&e->mu);
	e->engine_ref = false;
	bool gone = e->fds == 0;
	pthread_mutex_unlock(&e->mu);
	if (gone)
		free_esock(e);
}

int esock_is_ddp(int fd)
{
	if (REAL(fcntl)(fd, F_GETFD) < 0)
		return -1;
	return esock__peek(fd) != NULL;
}

/*
 * At exit, as the kernel does for TCP: the DDP sockets still open are
 * closed, and the bytes already written still reach the peer. The process
 * waits for that (each close lingers EXS_LINGER_MS at most).
 */
void esock__at_exit(void)
{
	for (int fd = 0; fd < ESOCK_FD_MAX; fd++) {
		struct esock *e = esock__peek(fd);
		if (e && !esock__foreign(e))
			esock__forget(fd);
	}
	struct timespec ts = util_deadline_ms(EXS_LINGER_MS + 1000);
	pthread_mutex_lock(&tab_mu);
	while (live > 0)
		if (pthread_cond_timedwait(&live_cv, &tab_mu, &ts) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&tab_mu);
}

/* fork: the table's lock must not be held by a thread the child lacks */
static void before_fork(void) { pthread_mutex_lock(&tab_mu); }
static void after_fork(void) { pthread_mutex_unlock(&tab_mu); }
static void after_fork_child(void)
{
	my_pid = getpid();
	pthread_mutex_unlock(&tab_mu);
}

__attribute__((constructor)) static void esock_table_init(void)
{
	my_pid = getpid();
	/* its one timed wait is at exit, long after this; its static
	 * initialiser covers a signal from a constructor that runs before */
	util_cond_init(&live_cv);
	pthread_atfork(before_fork, after_fork, after_fork_child);
	/* the program's own ES-API calls must not take a DDP socket's
	 * descriptor for a plain TCP one: esock moves their bytes */
	exs_set_fd_claim(esock_is_ddp);
	exs_set_fd_carrier(&esock__carrier);
}
