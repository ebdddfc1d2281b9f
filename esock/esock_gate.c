/*
 * esock_gate.c: the gate, one thread per process that has DDP listeners
 * (see struct esock_listener). For each listener it accepts TCP clients
 * and holds them until each is known and ready:
 *   - its first 16 bytes are an MPA Request's key (RFC 5044 section 7.1):
 *     the engine negotiates MPA (exs_accept_fd), and the negotiated exs
 *     socket arrives through esock__gate_arrived; a client that does not
 *     finish (key only, a rejected Request) is dropped by the engine and
 *     forgotten here, without anyone having waited for it;
 *   - anything else, an end of stream, or silence for ESOCK_PEEK_MS: a
 *     plain TCP client, given to the program as it is (nothing consumed).
 * A listener's clients held here and ready count against its backlog;
 * at the backlog the gate stops accepting, and the kernel's queue holds
 * the rest, as it would for a plain listener.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "esock_internal.h"
#include "util/clock.h"
#include "util/list.h"

enum { G_LISTENER = 1, G_PEEK };

/* a client whose first bytes are awaited */
struct peek {
	int gate_kind; /* G_PEEK */
	int fd;
	struct esock_listener *l;
	uint64_t deadline;
	struct sockaddr_storage peer;
	struct util_list link; /* on peeks, in deadline order */
};

/* an MPA client the engine negotiates */
struct shake {
	struct sockaddr_storage peer;
	int tcp; /* a copy of its TCP socket */
	struct esock_listener *l;
	uint64_t deadline;
	struct util_list link; /* on shakes, in deadline order */
};

/* a FIFO of entries that all wait the same time: the head ends first */
static struct util_list peeks = UTIL_LIST_INIT(peeks);
static struct util_list shakes = UTIL_LIST_INIT(shakes);

static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pid_t gate_pid; /* the process whose thread runs */
static int ep = -1;
static struct util_list listeners = UTIL_LIST_INIT(listeners);

/* an MPA negotiation lasts 5 s at most (the engine's timeout); this is
 * only how long the gate remembers the client */
#define SHAKE_MS (ESOCK_SETUP_MS + 1000)
#define PAUSE_MS 100 /* after accept ran out of descriptors */

unsigned esock__backlog_cap(int backlog)
{
	static unsigned somaxconn;
	if (!somaxconn) {
		unsigned v = 4096;
		FILE *f = fopen("/proc/sys/net/core/somaxconn", "re");
		if (f) {
			if (fscanf(f, "%u", &v) != 1 || v == 0)
				v = 4096;
			fclose(f);
		}
		somaxconn = v;
	}
	unsigned b = backlog <= 0 ? 1 : (unsigned)backlog;
	return b < somaxconn ? b : somaxconn;
}

/* (the gate's own share is let go only once the listener has left its
 * list, in expire: never while an epoll event may still point at it) */
static void unref(struct esock_listener *l)
{
	if (--l->refs == 0)
		free(l);
}

/* accept from the listener while it has room (under gate_mu) */
static void arm(struct esock_listener *l)
{
	bool want = !l->closed && l->held < l->cap && util_now_ms() >= l->paused_until;
	if (want == l->armed)
		return;
	struct epoll_event ev = { .events = want ? EPOLLIN : 0, .data.ptr = l };
	if (!epoll_ctl(ep, EPOLL_CTL_MOD, l->tcp, &ev))
		l->armed = want;
}

/* a client is ready: queue it (@front: first in line) and let the
 * program's number say so (under gate_mu); false: it could not be queued
 * (the caller closes it) */
static bool queue(struct esock_listener *l, struct esock_ready *r, bool front)
{
	int s = REAL(socket)(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return false;
	/* the token stays in the listener's queue after we close our end; a
	 * program that takes it at once waits in esock__gate_pop for our lock,
	 * so the entry is queued by then */
	int rc = REAL(connect)(s, (const struct sockaddr *)&l->token_addr, l->token_len);
	esock__close(s);
	if (rc)
		return false; /* (cannot happen below the cap) */
	if (front)
		util_list_add_head(&l->ready, &r->link);
	else
		util_list_add_tail(&l->ready, &r->link);
	return true;
}

static bool ready(struct esock_listener *l, int fd, int tcp, const struct sockaddr_storage *peer)
{
	struct esock_ready *r = malloc(sizeof(*r));
	if (!r)
		return false;
	*r = (struct esock_ready){ .fd = fd, .tcp = tcp, .peer = *peer };
	if (queue(l, r, false))
		return true;
	free(r);
	return false;
}

static void close_entry(int fd, int tcp)
{
	if (tcp >= 0) {
		esock__close(tcp);
		exs_close(fd, EXS_QHANDLE_INVALID, NULL);
	} else {
		esock__close(fd);
	}
}

/* a client given up by the gate (under gate_mu) */
static void release(struct esock_listener *l)
{
	l->held--;
	arm(l);
	unref(l);
}

/* the peek's verdict: plain (to the program) or MPA (to the engine) */
static void decide(struct peek *p, bool mpa)
{
	struct esock_listener *l = p->l;
	util_list_del(&p->link);
	epoll_ctl(ep, EPOLL_CTL_DEL, p->fd, NULL);
	if (l->closed) {
		esock__close(p->fd);
		release(l);
		free(p);
		return;
	}
	esock__say(-1, (struct sockaddr *)&p->peer, "%s",
		   mpa ? "DDP (it sent the MPA Request)"
		       : "plain TCP (its first bytes are not an MPA Request, or it was silent)");
	if (!mpa) {
		int fl = REAL(fcntl)(p->fd, F_GETFL);
		REAL(fcntl)(p->fd, F_SETFL, fl & ~O_NONBLOCK); /* as accept makes it */
		if (!ready(l, p->fd, -1, &p->peer)) {
			esock__close(p->fd);
			release(l);
		}
		free(p);
		return;
	}
	struct shake *h = calloc(1, sizeof(*h));
	int copy = h ? esock__dup_high(p->fd) : -1;
	if (copy < 0) {
		free(h);
		esock__close(p->fd);
		release(l);
		free(p);
		return;
	}
	*h = (struct shake){
		.peer = p->peer, .tcp = copy, .l = l, .deadline = util_now_ms() + SHAKE_MS
	};
	util_list_add_tail(&shakes, &h->link);
	int fd = p->fd;
	free(p);
	/* the engine is not called under our lock: its thread calls us */
	pthread_mutex_unlock(&gate_mu);
	int rc = esock__engine();
	if (!rc)
		rc = exs_accept_fd(esock__handoff_fd(), fd) ? -errno : 0;
	pthread_mutex_lock(&gate_mu);
	if (rc) {
		/* refused at once: the engine never took it, so nothing but
		 * this thread (which expires shakes) could have let h go */
		esock__close(fd);
		util_list_del(&h->link);
		esock__close(h->tcp);
		release(h->l);
		free(h);
	}
}

static void look(struct peek *p)
{
	int v = esock__mpa_verdict(p->fd);
	if (v >= 0)
		decide(p, v == 1);
}

static void take_clients(struct esock_listener *l)
{
	while (!l->closed && l->held < l->cap) {
		struct peek *p = calloc(1, sizeof(*p));
		if (!p)
			break;
		socklen_t len = sizeof(p->peer);
		int c = REAL(accept4)(l->tcp, (struct sockaddr *)&p->peer, &len,
				      SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (c < 0) {
			free(p);
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
			    errno == ENOMEM) {
				l->paused_until = util_now_ms() + PAUSE_MS;
				arm(l);
			}
			break;
		}
		p->gate_kind = G_PEEK;
		p->fd = esock__hide(c);
		p->l = l;
		p->deadline = util_now_ms() + esock__peek_ms();
		l->held++;
		l->refs++;
		util_list_add_tail(&peeks, &p->link);
		/* edge-triggered: each arrival of bytes, however few, once */
		struct epoll_event ev = { .events = EPOLLIN | EPOLLRDHUP | EPOLLET, .data.ptr = p };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, p->fd, &ev))
			decide(p, false);
		else
			look(p);
	}
	arm(l);
}

/* ends due now; the wait until the next one (ms, -1: none) */
static int expire(void)
{
	uint64_t now = util_now_ms();
	struct peek *p;
	struct shake *h;
	while ((p = util_list_first(&peeks, struct peek, link)) && p->deadline <= now)
		decide(p, false); /* silent so far: a plain client */
	while ((h = util_list_first(&shakes, struct shake, link)) && h->deadline <= now) {
		util_list_del(&h->link);
		esock__close(h->tcp);
		release(h->l);
		free(h);
	}
	uint64_t next = UINT64_MAX;
	if ((p = util_list_first(&peeks, struct peek, link)))
		next = p->deadline;
	if ((h = util_list_first(&shakes, struct shake, link)) && h->deadline < next)
		next = h->deadline;
	struct esock_listener *l, *ln;
	util_list_for_each_safe(l, ln, &listeners, link) {
		if (l->closed) {
			/* no epoll event in hand points at it now */
			util_list_del(&l->link);
			unref(l);
			continue;
		}
		if (l->paused_until > now) {
			if (l->paused_until < next)
				next = l->paused_until;
		} else if (l->paused_until) {
			l->paused_until = 0;
			arm(l);
		}
	}
	return next == UINT64_MAX ? -1 : (int)(next - now);
}

static void *gate_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "esock-gate"); /* (top -H, gdb, perf) */
	struct epoll_event evs[64];
	pthread_mutex_lock(&gate_mu);
	for (;;) {
		int wait = expire();
		pthread_mutex_unlock(&gate_mu);
		int n = REAL(epoll_wait)(ep, evs, 64, wait); /* (not the program's wait) */
		pthread_mutex_lock(&gate_mu);
		for (int i = 0; i < n; i++) {
			int *kind = evs[i].data.ptr;
			if (*kind == G_LISTENER)
				take_clients(evs[i].data.ptr);
			else
				look(evs[i].data.ptr);
		}
	}
	return NULL;
}

/* the thread, once per process (under gate_mu) */
static int start(void)
{
	pid_t me = getpid();
	if (gate_pid == me)
		return 0;
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (ep < 0)
		return -errno;
	ep = esock__hide(ep);
	/* the program's signals go to its own threads */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int rc = pthread_create(&t, NULL, gate_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		esock__close(ep);
		ep = -1;
		return -rc;
	}
	pthread_detach(t);
	gate_pid = me;
	return 0;
}

int esock__gate_add(struct esock_listener *l)
{
	pthread_mutex_lock(&gate_mu);
	int rc = start();
	if (!rc) {
		l->gate_kind = G_LISTENER;
		struct epoll_event ev = { .events = 0, .data.ptr = l };
		if (epoll_ctl(ep, EPOLL_CTL_ADD, l->tcp, &ev))
			rc = -errno;
	}
	if (!rc) {
		util_list_add_head(&listeners, &l->link);
		arm(l);
	}
	pthread_mutex_unlock(&gate_mu);
	return rc;
}

/* the last name closed (under gate_mu): no more clients; the ready ones
 * go to @out, to be closed once the lock is let go */
static void shut_listener(struct esock_listener *l, struct util_list *out)
{
	l->closed = true;
	epoll_ctl(ep, EPOLL_CTL_DEL, l->tcp, NULL);
	esock__close(l->tcp);
	l->tcp = -1;
	l->armed = false;
	struct esock_ready *r;
	while ((r = util_list_first(&l->ready, struct esock_ready, link))) {
		util_list_del(&r->link);
		util_list_add_tail(out, &r->link);
		l->held--;
		l->refs--; /* (never the last: the gate's share is still held) */
	}
	unref(l); /* the names' share */
}

static void close_ready(struct util_list *all)
{
	struct esock_ready *r;
	while ((r = util_list_first(all, struct esock_ready, link))) {
		util_list_del(&r->link);
		close_entry(r->fd, r->tcp); /* (the engine is not called under our lock) */
		free(r);
	}
}

void esock__gate_name(struct esock_listener *l, int delta)
{
	pthread_mutex_lock(&gate_mu);
	l->names += delta;
	struct util_list gone = UTIL_LIST_INIT(gone);
	if (l->names <= 0 && !l->closed)
		shut_listener(l, &gone);
	pthread_mutex_unlock(&gate_mu);
	close_ready(&gone);
}

struct esock_ready *esock__gate_pop(struct esock_listener *l)
{
	pthread_mutex_lock(&gate_mu);
	struct esock_ready *r = util_list_first(&l->ready, struct esock_ready, link);
	if (r) {
		util_list_del(&r->link);
		l->held--;
		l->refs--; /* (the names' share remains: the program holds one) */
		arm(l);
	}
	pthread_mutex_unlock(&gate_mu);
	return r;
}

void esock__gate_putback(struct esock_listener *l, struct esock_ready *r)
{
	pthread_mutex_lock(&gate_mu);
	bool queued = !l->closed && queue(l, r, true);
	if (queued) {
		l->held++;
		l->refs++;
	}
	pthread_mutex_unlock(&gate_mu);
	if (!queued) {
		close_entry(r->fd, r->tcp);
		free(r);
	}
}

void esock__gate_set_cap(struct esock_listener *l, unsigned cap)
{
	pthread_mutex_lock(&gate_mu);
	l->cap = cap;
	if (!l->closed)
		arm(l);
	pthread_mutex_unlock(&gate_mu);
}

bool esock__gate_arrived(int x, const struct sockaddr_storage *peer)
{
	pthread_mutex_lock(&gate_mu);
	struct shake *h, *found = NULL;
	util_list_for_each(h, &shakes, link)
		if (esock__same_peer(&h->peer, peer)) {
			found = h;
			break;
		}
	h = found;
	if (!h) {
		pthread_mutex_unlock(&gate_mu);
		return false;
	}
	util_list_del(&h->link);
	struct esock_listener *l = h->l;
	int tcp = h->tcp;
	bool queued = !l->closed && ready(l, x, tcp, peer);
	if (!queued)
		release(l);
	pthread_mutex_unlock(&gate_mu);
	free(h);
	if (!queued)
		close_entry(x, tcp); /* (the engine is not called under our lock) */
	return true;
}

/* fork (struct esock_listener says why): the lock is held across it */
static void before_fork(void) { pthread_mutex_lock(&gate_mu); }

static void after_fork_parent(void)
{
	struct util_list all = UTIL_LIST_INIT(all);
	if (gate_pid == getpid()) {
		struct esock_listener *l;
		util_list_for_each(l, &listeners, link) {
			if (l->closed || l->accepted)
				continue;
			esock__listener_revert(l);
			shut_listener(l, &all);
		}
	}
	pthread_mutex_unlock(&gate_mu);
	close_ready(&all);
}

static void after_fork_child(void)
{
	if (gate_pid) {
		/* the parent's gate is not here: its listeners that are still
		 * to accept from become TCP listeners here too, and the copies
		 * of what it holds are closed */
		struct esock_listener *l;
		util_list_for_each(l, &listeners, link) {
			if (l->closed || l->accepted)
				continue;
			esock__listener_revert(l);
			REAL(close)(l->tcp);
		}
		struct peek *p;
		struct shake *h;
		util_list_for_each(p, &peeks, link)
			REAL(close)(p->fd);
		util_list_for_each(h, &shakes, link)
			REAL(close)(h->tcp);
		if (ep >= 0)
			REAL(close)(ep);
		ep = -1;
		gate_pid = 0;
		util_list_init(&listeners);
		util_list_init(&peeks); /* (their memory is the parent's to free) */
		util_list_init(&shakes);
	}
	pthread_mutex_unlock(&gate_mu);
}

__attribute__((constructor)) static void gate_init(void)
{
	pthread_atfork(before_fork, after_fork_parent, after_fork_child);
}
