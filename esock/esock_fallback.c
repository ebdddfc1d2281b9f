/*
 * esock_fallback.c: a client's DDP connection whose server does not speak
 * iWARP becomes a plain TCP connection, as users of a transparent preload
 * expect (ESOCK_FALLBACK=off keeps the strict behaviour: the connect fails
 * with ECONNREFUSED or ECONNRESET, esock.h).
 *
 * The MPA Request is the first thing the client sends (RFC 5044 7.1), so
 * once it has gone the connection's byte stream is the peer's to interpret:
 * no probe can be taken back. The verdict therefore comes from the MPA
 * exchange itself, and the plain connection is a fresh one:
 *   - the peer sent no MPA Reply within ESOCK_REPLY_MS (ETIME), answered
 *     with bytes that are not one (EPROTO), or closed first (ECONNRESET,
 *     EPIPE): the peer is remembered as plain for PLAIN_REMEMBER_MS, the
 *     first connection is closed, and the program's next call on the
 *     socket (or the blocking connect still waiting) makes a new TCP
 *     connection with the first one's TCP options and puts it under the
 *     program's descriptor number;
 *   - a TCP connection that never came up, or a peer that refused in MPA
 *     terms (it is iWARP), fails as before.
 * The cost: the first connection to such a peer waits up to ESOCK_REPLY_MS
 * (a peer that answers or hangs up costs a round trip) and shows the peer
 * an aborted connection carrying the MPA Request's bytes; later ones to
 * the same address and port go straight to plain TCP until the memory
 * expires.
 *
 * The swap happens on the program's thread, never behind its back: the
 * engine only marks the socket (ES_FALLBACK) and makes the program's end
 * readable and writable, so a poll, select or epoll wait returns and the
 * call that follows finds the socket through esock__get, which swaps it.
 * An epoll set holds the program's end itself, not the number, so the
 * registrations made while the connection was being set up are recorded
 * and made again on the new socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "esock_internal.h"
#include "util/clock.h"
#include "util/env_ms.h"

#define PLAIN_PEERS 64
#define PLAIN_REMEMBER_MS 60000
#define DRAIN_MS 500    /* the first connection's end, waited for at most */
#define REFUSED_MS 2000 /* the second connection, refused, tried again so long */
#define SETTLE_MS 100   /* the second connection, watched for a reset so long */

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool fallback_on = true;
static unsigned reply_ms = ESOCK_REPLY_MS_DEFAULT;

static pthread_mutex_t plain_mu = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct sockaddr_storage peer;
	uint64_t until; /* 0: a free entry */
} plain[PLAIN_PEERS];

static void parse(void)
{
	const char *f = getenv("ESOCK_FALLBACK");
	if (f && *f) {
		if (!strcasecmp(f, "off") || !strcmp(f, "0"))
			fallback_on = false;
		else if (strcasecmp(f, "on") && strcmp(f, "1"))
			fprintf(stderr,
				"esock: ESOCK_FALLBACK='%s' ignored: on or off (default on)\n", f);
	}
	reply_ms = util_env_ms("esock", "ESOCK_REPLY_MS", ESOCK_REPLY_MS_DEFAULT, 1, 600000);
}

bool esock__fallback_on(void)
{
	pthread_once(&once, parse);
	return fallback_on;
}

unsigned esock__reply_ms(void)
{
	pthread_once(&once, parse);
	return reply_ms;
}

bool esock__falls_back(int err)
{
	return err == ETIME || err == EPROTO || err == ECONNRESET || err == EPIPE;
}

uint64_t esock__plain_since(const struct sockaddr *peer)
{
	struct sockaddr_storage p = { 0 };
	memcpy(&p, peer,
	       peer->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6)
					   : sizeof(struct sockaddr_in));
	uint64_t now = util_now_ms(), since = 0;
	pthread_mutex_lock(&plain_mu);
	for (int i = 0; i < PLAIN_PEERS; i++)
		if (plain[i].until > now && esock__same_peer(&plain[i].peer, &p)) {
			since = plain[i].until - PLAIN_REMEMBER_MS;
			break;
		}
	pthread_mutex_unlock(&plain_mu);
	return since;
}

static void remember_plain(const struct sockaddr_storage *peer)
{
	uint64_t now = util_now_ms();
	pthread_mutex_lock(&plain_mu);
	int slot = 0;
	for (int i = 0; i < PLAIN_PEERS; i++) {
		if (plain[i].until > now && esock__same_peer(&plain[i].peer, peer)) {
			slot = i;
			break;
		}
		if (plain[i].until < plain[slot].until)
			slot = i; /* a free or the oldest entry */
	}
	plain[slot].peer = *peer;
	plain[slot].until = now + PLAIN_REMEMBER_MS;
	pthread_mutex_unlock(&plain_mu);
}

void esock__connect_failed(struct esock *e, int err)
{
	if (e->may_fall_back && esock__falls_back(err)) {
		e->st = ES_FALLBACK;
		e->fell_err = err;
		atomic_store(&e->fallback_due, true);
		remember_plain(&e->peer);
		return;
	}
	esock__say(e->conn_fd, (struct sockaddr *)&e->peer, "failed: %s%s", esock__words(err),
		   esock__falls_back(err) ? " (ESOCK_FALLBACK=off)" : "");
	/* a TCP program knows a refused connection; the timer's own errno
	 * (ETIME) or a protocol error mean nothing to it */
	if (err == ETIME || err == EPROTO)
		err = ECONNREFUSED;
	e->st = ES_FAILED;
	e->so_error = e->conn_err = err;
}

void esock__track_epoll(struct esock *e, int ep, int op, const struct epoll_event *ev)
{
	pthread_mutex_lock(&e->mu);
	if (e->may_fall_back && (e->st == ES_CONNECTING || e->st == ES_FALLBACK)) {
		int i = 0;
		while (i < e->neps && e->eps[i].ep != ep)
			i++;
		if (op == EPOLL_CTL_DEL) {
			if (i < e->neps)
				e->eps[i] = e->eps[--e->neps];
		} else if (ev && (i < e->neps || e->neps < ESOCK_EPOLL_TRACK)) {
			e->eps[i].ep = ep;
			e->eps[i].ev = *ev;
			if (i == e->neps)
				e->neps++;
		}
	}
	pthread_mutex_unlock(&e->mu);
}

/* the first connection's TCP-level options on the new one: what the
 * program set before connect (TCP_NODELAY above all) */
static void copy_options(const struct esock *e, int from, int to)
{
	static const struct {
		int level, name;
	} ints[] = {
		{ IPPROTO_TCP, TCP_NODELAY },      { IPPROTO_TCP, TCP_KEEPIDLE },
		{ IPPROTO_TCP, TCP_KEEPINTVL },    { IPPROTO_TCP, TCP_KEEPCNT },
		{ IPPROTO_TCP, TCP_USER_TIMEOUT }, { SOL_SOCKET, SO_KEEPALIVE },
		{ SOL_SOCKET, SO_PRIORITY },       { SOL_SOCKET, SO_OOBINLINE },
	};
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
		int v, w;
		socklen_t l = sizeof(v), m = sizeof(w);
		if (!REAL(getsockopt)(from, ints[i].level, ints[i].name, &v, &l) &&
		    !REAL(getsockopt)(to, ints[i].level, ints[i].name, &w, &m) && v != w)
			REAL(setsockopt)(to, ints[i].level, ints[i].name, &v, sizeof(v));
	}
	/* buffer sizes, if the program chose them (else the kernel tunes
	 * them, and a copy would fix them): it reports twice what was set */
	static const int bufs[] = { SO_SNDBUF, SO_RCVBUF };
	bool set = e->conn_fd >= 0 && e->conn_fd < ESOCK_FD_MAX &&
		   (esock_fdflags[e->conn_fd] & FD_BUFS_SET);
	for (size_t i = 0; set && i < 2; i++) {
		int v, w;
		socklen_t l = sizeof(v), m = sizeof(w);
		if (!REAL(getsockopt)(from, SOL_SOCKET, bufs[i], &v, &l) &&
		    !REAL(getsockopt)(to, SOL_SOCKET, bufs[i], &w, &m) && v != w) {
			v /= 2;
			REAL(setsockopt)(to, SOL_SOCKET, bufs[i], &v, sizeof(v));
		}
	}
	struct linger lg;
	socklen_t l = sizeof(lg);
	if (!REAL(getsockopt)(from, SOL_SOCKET, SO_LINGER, &lg, &l) && lg.l_onoff)
		REAL(setsockopt)(to, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	int tos;
	l = sizeof(tos);
	if (e->domain == AF_INET && !REAL(getsockopt)(from, IPPROTO_IP, IP_TOS, &tos, &l) && tos)
		REAL(setsockopt)(to, IPPROTO_IP, IP_TOS, &tos, sizeof(tos));
	char cc[16];
	l = sizeof(cc);
	if (!REAL(getsockopt)(from, IPPROTO_TCP, TCP_CONGESTION, cc, &l))
		REAL(setsockopt)(to, IPPROTO_TCP, TCP_CONGESTION, cc, l);
	/* SO_RCVTIMEO and SO_SNDTIMEO were the DDP socket's to keep */
	struct timeval tv = { e->rcvtimeo_ms / 1000, (e->rcvtimeo_ms % 1000) * 1000 };
	if (e->rcvtimeo_ms)
		REAL(setsockopt)(to, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	tv = (struct timeval){ e->sndtimeo_ms / 1000, (e->sndtimeo_ms % 1000) * 1000 };
	if (e->sndtimeo_ms)
		REAL(setsockopt)(to, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* poll(2) on one descriptor until @end (util_now_ms), across signals: its
 * revents, 0 when the time ran out, or -errno */
static int poll_until(int fd, short events, uint64_t end)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		uint64_t now = util_now_ms();
		int r = now >= end ? 0 : REAL(poll)(&p, 1, (int)(end - now));
		if (r < 0 && errno == EINTR)
			continue;
		return r < 0 ? -errno : r ? p.revents : 0;
	}
}

static int sock_error(int s)
{
	int err = 0;
	socklen_t l = sizeof(err);
	REAL(getsockopt)(s, SOL_SOCKET, SO_ERROR, &err, &l);
	return err;
}

/* The first connection ends before the second begins: a server that
 * serves one client at a time (iperf3) would turn the second away while
 * the first, with the MPA Request's bytes in it, is still its client. Our
 * FIN, then its end (or DRAIN_MS at most, for one that ignores ours). */
static void end_first(const struct esock *e)
{
	REAL(shutdown)(e->tcp, SHUT_WR);
	uint64_t end = util_now_ms() + DRAIN_MS;
	char buf[512];
	while (poll_until(e->tcp, POLLIN, end) > 0)
		if (REAL(recv)(e->tcp, buf, sizeof(buf), MSG_DONTWAIT) <= 0 && errno != EAGAIN)
			break; /* its end (or a reset) */
}

/* The second connection may have been queued on a listener the server
 * was about to close: iperf3 closes its client's connection, then its
 * listener, then opens a new one, and a connection made between the first
 * two is completed by the kernel and then reset when the listener goes.
 * Nothing distinguishes it until the reset comes, so it is watched for a
 * moment: bytes from the server (it accepted it) or quiet mean it lives;
 * a reset, ECONNRESET, which plain_connect treats as a refusal. The cost,
 * SETTLE_MS, is paid by the first connection to such a peer only. */
static int settle(int s)
{
	int r = poll_until(s, POLLIN | POLLRDHUP, util_now_ms() + SETTLE_MS);
	if (r <= 0 || !(r & (POLLERR | POLLHUP)))
		return 0; /* quiet, its bytes, or its orderly end */
	return sock_error(s);
}

/* a new TCP connection to the peer, connected and not reset at once: its
 * descriptor, or -errno */
static int plain_connect_once(const struct esock *e)
{
	int s = REAL(socket)(e->domain, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -errno;
	copy_options(e, e->tcp, s);
	socklen_t len = e->peer.ss_family == AF_INET6 ? sizeof(struct sockaddr_in6)
						      : sizeof(struct sockaddr_in);
	int err = 0;
	if (REAL(connect)(s, (const struct sockaddr *)&e->peer, len) && errno != EINPROGRESS)
		err = errno;
	/* one round trip: wait for it here, so that the program's next call
	 * (SO_ERROR, a write) meets a connected socket */
	if (!err) {
		int r = poll_until(s, POLLOUT, util_now_ms() + ESOCK_SETUP_MS);
		err = r < 0 ? -r : r == 0 ? ETIMEDOUT : sock_error(s);
	}
	if (!err)
		err = settle(s);
	if (err) {
		esock__close(s);
		return -err;
	}
	return s;
}

/* ...tried again while refused or reset, for a moment: the peer was
 * listening a moment ago, and a server that serves one client at a time
 * may open its listener anew after each (iperf3 does, once the first
 * connection ends) */
static int plain_connect(const struct esock *e)
{
	uint64_t end = util_now_ms() + REFUSED_MS;
	unsigned pause_ms = 5;
	for (;;) {
		int s = plain_connect_once(e);
		if ((s != -ECONNREFUSED && s != -ECONNRESET) || util_now_ms() + pause_ms > end)
			return s;
		struct timespec ts = { 0, (long)pause_ms * 1000000 };
		nanosleep(&ts, NULL);
		pause_ms = pause_ms < 200 ? pause_ms * 2 : 200;
	}
}

/* the program's end says nothing more: an epoll set that still holds it
 * until it is closed must not report it */
static void quiet(struct esock *e)
{
	e->quiet = true;
	char buf[64];
	while (REAL(recv)(e->a, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
	static const char fill[1500];
	if (!e->oblock && REAL(send)(e->a, fill, sizeof(fill), MSG_DONTWAIT | MSG_NOSIGNAL) > 0)
		e->oblock = true;
}

struct esock *esock__fall_back(int fd, struct esock *e)
{
	pthread_mutex_lock(&e->mu);
	if (e->st != ES_FALLBACK || esock__peek(fd) != e) {
		pthread_mutex_unlock(&e->mu);
		return esock__peek(fd);
	}
	end_first(e);
	int s = plain_connect(e);
	int fl = REAL(fcntl)(fd, F_GETFL), fdfl = REAL(fcntl)(fd, F_GETFD);
	if (s >= 0 && (fl < 0 || fdfl < 0 || REAL(fcntl)(s, F_SETFL, fl) ||
		       REAL(dup3)(s, fd, (fdfl & FD_CLOEXEC) ? O_CLOEXEC : 0) < 0)) {
		int err = errno;
		esock__close(s);
		s = -err;
	}
	atomic_store(&e->fallback_due, false);
	if (s < 0) {
		esock__say(fd, (struct sockaddr *)&e->peer, "plain TCP failed too: %s",
			   strerror(-s));
		e->st = ES_FAILED;
		e->so_error = e->conn_err = -s;
		esock__update(e, false);
		esock__wake(e);
		pthread_mutex_unlock(&e->mu);
		return e;
	}
	esock__close(s); /* (fd names it now) */
	for (int i = 0; i < e->neps; i++)
		REAL(epoll_ctl)(e->eps[i].ep, EPOLL_CTL_ADD, fd, &e->eps[i].ev);
	e->neps = 0;
	e->st = ES_FAILED;
	e->conn_err = ENOTCONN;
	e->fell_back = true; /* a call waiting on it goes on on fd */
	quiet(e);
	esock__wake(e);
	int why = e->fell_err;
	struct sockaddr_storage peer = e->peer; /* (e may be gone once unnamed) */
	pthread_mutex_unlock(&e->mu);
	esock__unname(fd, e);
	esock__say(fd, (struct sockaddr *)&peer, "plain TCP: %s; remembered for %d s",
		   esock__words(why), PLAIN_REMEMBER_MS / 1000);
	return NULL;
}
