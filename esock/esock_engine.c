/*
 * esock_engine.c: the ES-API runtime under DDP sockets. One event queue
 * takes every exs operation's completion; the ES-API's progress thread
 * hands them to us as they come (exs_qnotify: no thread of ours sits in
 * between, which would cost a wake-up per event), and each updates the
 * socket it belongs to and drives its readiness. Accepted DDP clients are
 * given to one exs listener without a socket of its own.
 */
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "esock_internal.h"
#include "util/clock.h"

exs_qhandle_t esock_q = EXS_QHANDLE_INVALID;
static pthread_mutex_t eng_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t eng_cv;
static pid_t eng_pid; /* the process that started it */
static int eng_err;   /* a start that failed: for every later call */
static int handoff = -1;

/* accepted exs sockets not yet claimed by the accept that handed them */
#define ARRIVED_MAX 256
static struct {
	int fd;
	struct sockaddr_storage peer;
} arrived[ARRIVED_MAX];
static int narrived;
static struct esock_tag accept_tag = { NULL, TAG_CONNECT, -1 };
#define ACCEPTS_POSTED 16

/* The queue holds every connection's events: room for QUEUE_CONNS at
 * first, doubled as more come (esock__queue_room) */
#define CONN_EVENTS (ESOCK_RCHUNKS + ESOCK_SENDS_MAX + 4)
#define QUEUE_CONNS 64
static int queue_depth;

/* Empties one end of a socket pair (a stream): a read that comes back
 * short took all there was, so the usual drain is one call, not a second
 * that finds nothing (a system call per request to a small-message
 * server: docs/performance.md). */
static void drain(int fd)
{
	char buf[4096];
	while (REAL(recv)(fd, buf, sizeof(buf), MSG_DONTWAIT) == (ssize_t)sizeof(buf))
		;
}

static bool hup_rd(const struct esock *e)
{
	return e->eof || e->rd_shut || e->conn_err || e->st == ES_FAILED;
}

bool esock__readable(const struct esock *e)
{
	if (e->st == ES_FALLBACK)
		return true; /* the program's next call makes the plain connection */
	if (e->st == ES_CONNECTING || e->arecv)
		return false;
	int st = e->rstate[e->rhead];
	return st == RC_FILLED || st == RC_END || hup_rd(e);
}

static bool writable(const struct esock *e)
{
	if (e->st == ES_FALLBACK)
		return true;
	if (e->wr_shut || e->conn_err || e->st == ES_FAILED)
		return true;
	return e->st == ES_CONNECTED && ESOCK_SBUF - e->sout >= ESOCK_SBUF / 4;
}

void esock__update(struct esock *e, bool arrived_data)
{
	if (e->b < 0 || e->quiet)
		return;
	if (hup_rd(e) && e->st != ES_CONNECTING) {
		bool first = !e->rdhup_done;
		if (first) {
			/* the program's end: POLLIN|POLLRDHUP from now on */
			REAL(shutdown)(e->b, SHUT_WR);
			e->rdhup_done = true;
		}
		if (e->umode) /* (the end is readable: an edge, once) */
			esock__ready_changed(e, true, first);
	} else if (e->umode) {
		/* (no byte: esock's epoll waits look at uready) */
		esock__ready_changed(e, esock__readable(e), arrived_data);
	} else if (esock__readable(e)) {
		/* a byte per arrival: edge-triggered epoll fires on each, as
		 * TCP's does for each segment */
		if ((!e->rsig || arrived_data) &&
		    REAL(send)(e->b, "r", 1, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
			e->rsig = true;
	} else if (e->rsig) {
		drain(e->a);
		e->rsig = false;
	}
	bool w = writable(e);
	if (w && e->oblock) {
		drain(e->b);
		e->oblock = false;
	} else if (!w && !e->oblock) {
		/* over a quarter of its (minimum) send buffer in use: the
		 * kernel reports the program's end unwritable */
		static const char fill[1500];
		if (REAL(send)(e->a, fill, sizeof(fill), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
			e->oblock = true;
	}
	bool hup_wr = e->wr_shut || e->conn_err || e->st == ES_FAILED;
	if (hup_wr && hup_rd(e) && !e->wrhup_done && e->rdhup_done) {
		/* both directions over: POLLHUP, as TCP reports it */
		REAL(shutdown)(e->b, SHUT_RD);
		e->wrhup_done = true;
	}
}

static int post_recv(struct esock *e, int i, int flags)
{
	ssize_t rc = exs_recv(e->exs, e->rbuf + (size_t)i * ESOCK_RCHUNK, ESOCK_RCHUNK, flags,
			      esock_q, &e->tag_recv[i], e->rmh);
	if (rc < 0)
		return -errno;
	e->rstate[i] = RC_POSTED;
	return 0;
}

int esock__post_recvs(struct esock *e)
{
	/* from the chunk the stream continues in, in order */
	for (int k = 0; k < ESOCK_RCHUNKS; k++) {
		int rc = post_recv(e, (e->rhead + k) % ESOCK_RCHUNKS, 0);
		if (rc)
			return rc;
	}
	return 0;
}

/* Chunks read to their end are posted again here, oldest first (the
 * stream fills receives in the order posted), mostly on the progress
 * thread as the next completion comes in: the program's reads seldom
 * enter the ES-API, whose lock the progress thread holds while it works. */
void esock__repost_free(struct esock *e, int flags)
{
	while (e->rfree > 0 && e->st == ES_CONNECTED && !e->eof && !e->conn_err) {
		int i = (e->rhead + ESOCK_RCHUNKS - e->rfree) % ESOCK_RCHUNKS;
		int rc = post_recv(e, i, flags);
		if (rc) {
			e->rstate[i] = RC_END;
			e->conn_err = e->so_error = -rc;
			return;
		}
		e->rfree--;
	}
}

static void fail(struct esock *e, int err)
{
	if (!e->conn_err) {
		e->conn_err = err;
		e->so_error = err;
	}
}

static void on_socket_event(struct esock_tag *t, const exs_event_t *ev)
{
	struct esock *e = t->e;
	int err = ev->exs_evt_errno;
	if (t->kind == TAG_ASYNC) {
		/* (the tag is the operation's first member) */
		esock__async_done((struct esock_aop *)t, err,
				  err ? 0 : (size_t)ev->exs_evt_union.xfer.bytes);
		return;
	}
	if (t->kind == TAG_CLOSE) {
		esock__engine_done(e);
		return;
	}
	pthread_mutex_lock(&e->mu);
	bool arrived_data = false;
	switch (t->kind) {
	case TAG_CONNECT:
		if (err) {
			esock__connect_failed(e, err);
			break;
		}
		e->st = ES_CONNECTED;
		if (e->may_fall_back)
			esock__say(e->conn_fd, (struct sockaddr *)&e->peer, "DDP");
		int rc = esock__post_recvs(e);
		if (rc)
			fail(e, -rc);
		break;
	case TAG_RECV: {
		int i = t->idx;
		ssize_t n = ev->exs_evt_union.xfer.bytes;
		if (!err && n > 0) {
			e->rstate[i] = RC_FILLED;
			e->rlen[i] = (size_t)n;
			e->roff[i] = 0;
			arrived_data = true;
		} else {
			e->rstate[i] = RC_END;
			if (!err)
				e->eof = true;
			else if (err != ECANCELED)
				fail(e, err);
		}
		break;
	}
	case TAG_SEND:
		/* the ring's space comes back in order: up to the oldest
		 * send still out */
		e->sdone[t->idx] = true;
		while (e->scount > 0 && e->sdone[e->shead]) {
			e->sout -= e->slen[e->shead];
			e->shead = (e->shead + 1) % ESOCK_SENDS_MAX;
			e->scount--;
		}
		if (err && err != ECANCELED)
			fail(e, err);
		break;
	case TAG_SHUT:
		break;
	}
	esock__serve_arecv(e);
	esock__repost_free(e, 0);
	bool close_failed = esock__settle(e);
	esock__update(e, arrived_data);
	/* A writer waiting for room wakes once a quarter of the ring is free
	 * (the point at which poll reports it writable), not at each
	 * send's completion: one wake-up per several writes' worth. */
	if (t->kind != TAG_SEND || err || ESOCK_SBUF - e->sout >= ESOCK_SBUF / 4)
		esock__wake(e);
	pthread_mutex_unlock(&e->mu);
	if (close_failed)
		esock__engine_done(e);
}

static void post_accept(void) { exs_accept(handoff, NULL, NULL, esock_q, &accept_tag); }

static void on_accept(const exs_event_t *ev)
{
	if (ev->exs_evt_errno)
		return; /* cancelled: the process is going */
	if (esock__gate_arrived(ev->exs_evt_union.accept.fd, &ev->exs_evt_union.accept.addr)) {
		post_accept();
		return;
	}
	/* a connected socket switched at both ends (esock__switch) waits */
	pthread_mutex_lock(&eng_mu);
	if (narrived < ARRIVED_MAX) {
		arrived[narrived].fd = ev->exs_evt_union.accept.fd;
		arrived[narrived].peer = ev->exs_evt_union.accept.addr;
		narrived++;
	} else {
		exs_close(ev->exs_evt_union.accept.fd, esock_q, NULL); /* (its event is ignored) */
	}
	pthread_cond_broadcast(&eng_cv);
	pthread_mutex_unlock(&eng_mu);
	post_accept();
}

/* on the ES-API's progress thread: every event there is now */
static void dispatch(exs_qhandle_t q, void *arg)
{
	(void)arg;
	exs_event_t ev[64];
	int n;
	while ((n = exs_qdequeue(q, ev, 64, NULL)) > 0) {
		for (int i = 0; i < n; i++) {
			struct esock_tag *t = ev[i].exs_evt_ahandle;
			if (t == &accept_tag)
				on_accept(&ev[i]);
			else if (t)
				on_socket_event(t, &ev[i]);
		}
	}
}

int esock__idle_default(void)
{
	const char *idle = getenv("ESOCK_IDLE_MS");
	if (!idle || !*idle)
		return 0;
	char *end;
	long ms = strtol(idle, &end, 10);
	if (*end == '\0' && ms > 0 && ms <= INT_MAX)
		return (int)ms;
	static _Atomic bool said;
	if (!atomic_exchange(&said, true))
		fprintf(stderr, "esock: ESOCK_IDLE_MS=%s ignored: milliseconds, 1 to %d\n", idle,
			INT_MAX);
	return 0;
}

/* the exs options of every DDP connection (ESOCK_MODE: an experiment's knob) */
void esock__exs_options(int x)
{
	const char *m = getenv("ESOCK_MODE");
	int mode = EXS_MODE_DIRECT;
	if (m && !strcmp(m, "dynamic"))
		mode = EXS_MODE_DYNAMIC;
	else if (m && !strcmp(m, "indirect"))
		mode = EXS_MODE_INDIRECT;
	exs_setsockopt(x, SOL_EXS, EXS_SO_STREAM_MODE, &mode, sizeof(mode));
	int idle = esock__idle_default();
	if (idle)
		exs_setsockopt(x, SOL_EXS, EXS_SO_IDLE_MS, &idle, sizeof(idle));
	if (mode == EXS_MODE_DIRECT) {
		/* no transfer lands in the hidden ring: keep it small */
		int ring = 64 << 10;
		exs_setsockopt(x, SOL_EXS, EXS_SO_RING_SIZE, &ring, sizeof(ring));
	}
}

_Atomic bool esock_here;

/* ThreadSanitizer's build runs esock's poll and read behind its own
 * interceptors of them, which take the calls they make for the C
 * library's: the ES-API's locks taken in there were not seen as held (a
 * race reported on util/handoff.c's flag under exs_rt.lock). There the
 * waits leave the data to the progress thread, as before; test_exs_here
 * runs exs_ppoll_here itself under ThreadSanitizer. */
#if defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define ESOCK_NO_HERE 1
#endif
#endif
#ifdef __SANITIZE_THREAD__
#define ESOCK_NO_HERE 1
#endif

/* A child has no progress thread, and its waits no DDP sockets of its
 * own: they pass straight on. */
static void here_off(void) { atomic_store_explicit(&esock_here, false, memory_order_relaxed); }

static int start(void)
{
	exs_set_fd_floor(esock__fd_floor());
	if (exs_init(EXS_VERSION))
		return -errno;
	queue_depth = QUEUE_CONNS * CONN_EVENTS + 2 * ACCEPTS_POSTED;
	esock_q = exs_qcreate(queue_depth);
	if (esock_q == EXS_QHANDLE_INVALID)
		return -errno;
	handoff = exs_socket(AF_INET6, SOCK_STREAM, 0);
	if (handoff < 0)
		return -errno;
	const char *crc = getenv("ESOCK_CRC");
	if (crc && !strcmp(crc, "off")) {
		int off = 0;
		exs_setsockopt(handoff, SOL_EXS, EXS_SO_CRC, &off, sizeof(off));
	}
	esock__exs_options(handoff);
	if (exs_listen_handoff(handoff, 1024))
		return -errno;
	util_cond_init(&eng_cv);
	for (int i = 0; i < ACCEPTS_POSTED; i++)
		post_accept();
	if (exs_qnotify(esock_q, dispatch, NULL))
		return -errno;
	atexit(esock__at_exit);
	pthread_atfork(NULL, NULL, here_off);
#ifndef ESOCK_NO_HERE
	atomic_store(&esock_here, true);
#endif
	return 0;
}

int esock__engine(void)
{
	pthread_mutex_lock(&eng_mu);
	int rc;
	if (eng_pid && eng_pid != getpid()) {
		rc = -ENOTCONN; /* the parent's engine: its threads are not here */
	} else if (eng_pid) {
		rc = -eng_err;
	} else {
		rc = start();
		eng_pid = getpid();
		eng_err = -rc;
	}
	pthread_mutex_unlock(&eng_mu);
	return rc;
}

int esock__handoff_fd(void) { return handoff; }

int esock__queue_room(int conns)
{
	/* one connection more than asked: a connect posts before it counts */
	long need = (long)(conns + 1) * CONN_EVENTS + 2 * ACCEPTS_POSTED;
	int rc = 0;
	pthread_mutex_lock(&eng_mu);
	if (esock_q != EXS_QHANDLE_INVALID && need > queue_depth) {
		long d = queue_depth;
		while (d < need)
			d *= 2;
		if (d > INT_MAX || exs_qresize(esock_q, (int)d))
			rc = d > INT_MAX ? -ENOBUFS : -errno;
		else
			queue_depth = (int)d;
	}
	pthread_mutex_unlock(&eng_mu);
	return rc;
}

bool esock__same_peer(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	if (a->ss_family != b->ss_family)
		return false;
	if (a->ss_family == AF_INET) {
		const struct sockaddr_in *x = (const void *)a, *y = (const void *)b;
		return x->sin_port == y->sin_port && x->sin_addr.s_addr == y->sin_addr.s_addr;
	}
	const struct sockaddr_in6 *x = (const void *)a, *y = (const void *)b;
	return x->sin6_port == y->sin6_port &&
	       !memcmp(&x->sin6_addr, &y->sin6_addr, sizeof(x->sin6_addr));
}

int esock__take_accepted(const struct sockaddr_storage *peer, unsigned ms)
{
	struct timespec ts = util_deadline_ms(ms);
	pthread_mutex_lock(&eng_mu);
	for (;;) {
		for (int i = 0; i < narrived; i++) {
			if (!esock__same_peer(&arrived[i].peer, peer))
				continue;
			int fd = arrived[i].fd;
			arrived[i] = arrived[--narrived];
			pthread_mutex_unlock(&eng_mu);
			return fd;
		}
		if (pthread_cond_timedwait(&eng_cv, &eng_mu, &ts) == ETIMEDOUT) {
			pthread_mutex_unlock(&eng_mu);
			return -ETIMEDOUT;
		}
	}
}
