/*
 * exs_socket.c: ES-API socket calls: socket, bind, listen, accept,
 * connect, shutdown, close, names and options.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "exs_internal.h"
#include "util/clock.h"

/* @s found by its number: the next lookup finds it at once (under the
 * lock; exs__sock_free forgets it) */
static void remember(struct exs_sock *s)
{
	if (s->fd >= exs_rt.nby_fd) {
		int n = exs_rt.nby_fd ? exs_rt.nby_fd : 256;
		while (n <= s->fd)
			n *= 2;
		struct exs_sock **t = realloc(exs_rt.by_fd, (size_t)n * sizeof(*t));
		if (!t)
			return; /* (the walk, next time) */
		memset(t + exs_rt.nby_fd, 0, (size_t)(n - exs_rt.nby_fd) * sizeof(*t));
		exs_rt.by_fd = t;
		exs_rt.nby_fd = n;
	}
	exs_rt.by_fd[s->fd] = s;
}

/* @sw: a system socket in DDP mode is switched (exs_ddp.c) */
static struct exs_sock *lookup(int fd, int *route, bool sw)
{
	*route = EXS_ROUTE_NONE;
	if (exs__ready())
		return NULL;
	exs__lock();
	struct exs_sock *s = fd >= 0 && fd < exs_rt.nby_fd ? exs_rt.by_fd[fd] : NULL;
	if (s && s->fd == fd && !s->closing)
		return s;
	/* (exs__sock's walk, which also sees the sockets closed already:
	 * they hold their numbers for a while, closed to the caller all the
	 * same; a system socket's number in DDP mode is another matter: the
	 * program's, used again once it is closed) */
	bool closed = false, alias = false;
	util_list_for_each(s, &exs_rt.socks, link) {
		if (s->fd == fd && !s->closing) {
			remember(s);
			return s;
		}
		closed |= s->fd == fd;
		alias |= s->alias == fd + 1 && !s->closing;
	}
	util_list_for_each(s, &exs_rt.graveyard, link)
		closed |= s->fd == fd;
	if (alias && (s = exs__ddp_alias(fd)))
		return s;
	bool known = exs__plain_known(fd);
	pthread_mutex_unlock(&exs_rt.lock);
	int err = closed ? EBADF : known ? 0 : exs__fd_kind(fd);
	/* a socket esock carries over DDP is not a plain TCP stream: its
	 * descriptor is one end of esock's socket pair; esock moves these
	 * calls' bytes (exs_carried.c), or nobody does */
	if (!err && !known && exs__fd_claimed(fd)) {
		*route = exs__carrier() ? EXS_ROUTE_CARRIED : EXS_ROUTE_NONE;
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (!err && !known && sw) {
		int r = exs__ddp_take(fd, &s);
		if (r > 0)
			return s;
		err = r < 0 ? errno : 0;
	}
	*route = err ? EXS_ROUTE_NONE : EXS_ROUTE_PLAIN;
	errno = err ? err : EOPNOTSUPP;
	return NULL;
}

struct exs_sock *exs__lock_sock_or_plain(int fd, int *route) { return lookup(fd, route, false); }

struct exs_sock *exs__lock_sock_or_switch(int fd, int *route) { return lookup(fd, route, true); }

struct exs_sock *exs__lock_sock(int fd)
{
	int route;
	return exs__lock_sock_or_plain(fd, &route);
}

static int unlock_err(int err)
{
	pthread_mutex_unlock(&exs_rt.lock);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

/* A new operation completing on @qh, or (EXS_QHANDLE_INVALID) waited for
 * through @sync. Under the lock. NULL with errno. */
struct exs_op *exs__op_new(int fd, enum exs_op_kind kind, exs_qhandle_t qh, exs_ahandle_t ahandle,
			   struct exs_sync *sync)
{
	struct exs_queue *q = NULL;
	if (qh != EXS_QHANDLE_INVALID) {
		q = exs__queue(qh);
		if (!q) {
			errno = EBADF;
			return NULL;
		}
	}
	struct exs_op *op = calloc(1, sizeof(*op));
	if (!op) {
		errno = ENOMEM;
		return NULL;
	}
	if (q && exs__op_reserve(q)) {
		free(op);
		return NULL;
	}
	*op = (struct exs_op){
		.kind = kind, .fd = fd, .q = q, .ahandle = ahandle, .sync = q ? NULL : sync
	};
	util_list_init(&op->link);
	util_list_init(&op->order);
	memset(sync, 0, sizeof(*sync));
	sync->fd = -1;
	return op;
}

/* An operation that could not be started: give back its queue slot. */

void exs__op_drop(struct exs_op *op)
{
	if (op->q)
		op->q->reserved--;
	exs__op_free(op);
}

struct exs_sock *exs__sock_new(int domain, int type)
{
	struct exs_sock *s = calloc(1, sizeof(*s));
	if (!s) {
		errno = ENOMEM;
		return NULL;
	}
	exs__sock_init(s);
	s->fd = exs__eventfd();
	if (s->fd < 0) {
		free(s);
		errno = EMFILE;
		return NULL;
	}
	s->domain = domain;
	s->type = type;
	s->ring_size = EXS_RING_DEFAULT;
	s->credit_size = EXS_CREDIT_DEFAULT;
	s->rules = EXS_RULES_DEFAULT;
	s->crc = true;
	s->st = S_NEW;
	return s;
}

int exs_socket(int domain, int type, int protocol)
{
	if (exs__ready())
		return -1;
	if (domain != AF_INET && domain != AF_INET6) {
		errno = EAFNOSUPPORT;
		return -1;
	}
	if (type != SOCK_STREAM && type != SOCK_SEQPACKET) {
		errno = EPROTOTYPE;
		return -1;
	}
	if (protocol != 0 && protocol != IPPROTO_TCP) {
		errno = EPROTONOSUPPORT;
		return -1;
	}
	struct exs_sock *s = exs__sock_new(domain, type);
	if (!s)
		return -1;
	exs__lock();
	util_list_add_head(&exs_rt.socks, &s->link);
	pthread_mutex_unlock(&exs_rt.lock);
	return s->fd;
}

static int addr_ok(const struct exs_sock *s, const struct sockaddr *addr, socklen_t len)
{
	if (!addr)
		return 0;
	if (addr->sa_family == AF_INET)
		return len >= sizeof(struct sockaddr_in);
	if (addr->sa_family == AF_INET6)
		return len >= sizeof(struct sockaddr_in6);
	return 0;
}

int exs_bind(int fd, const struct sockaddr *addr, socklen_t addrlen)
{
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	if (s->bound || s->st != S_NEW || !addr_ok(s, addr, addrlen))
		return unlock_err(EINVAL);
	memcpy(&s->local, addr, exs__addr_len((const struct sockaddr_storage *)addr));
	s->bound = true;
	return unlock_err(0);
}

/* exs_listen, or exs_listen_handoff (@handoff: no socket of its own) */
static int listen_common(int fd, int backlog, bool handoff)
{
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	if (s->st == S_LISTENING && !handoff) {
		s->backlog = backlog > 0 ? backlog : 1;
		return unlock_err(0);
	}
	if (s->st != S_NEW)
		return unlock_err(EINVAL);
	if (!s->bound) {
		if (s->domain == AF_INET6) {
			struct sockaddr_in6 a = { .sin6_family = AF_INET6,
						  .sin6_addr = in6addr_any };
			memcpy(&s->local, &a, sizeof(a));
		} else {
			struct sockaddr_in a = { .sin_family = AF_INET };
			memcpy(&s->local, &a, sizeof(a));
		}
	}
	s->id = uw_cm_create_id(exs_rt.cm, s);
	if (!s->id)
		return unlock_err(ENOMEM);
	int rc = handoff ? uw_cm_listen_handoff(s->id)
			 : uw_cm_listen(s->id, (struct sockaddr *)&s->local,
					backlog > 0 ? backlog : 1);
	if (rc) {
		uw_cm_destroy_id(s->id);
		s->id = NULL;
		return unlock_err(rc);
	}
	memcpy(&s->local, &s->id->local_addr, sizeof(s->local));
	s->backlog = backlog > 0 ? backlog : 1;
	s->st = S_LISTENING;
	exs__kick();
	return unlock_err(0);
}

int exs_listen(int fd, int backlog) { return listen_common(fd, backlog, false); }

int exs_listen_handoff(int fd, int backlog) { return listen_common(fd, backlog, true); }

int exs_accept_fd(int fd, int tcp_fd)
{
	struct exs_sock *l = exs__lock_sock(fd);
	if (!l)
		return -1;
	if (l->st != S_LISTENING)
		return unlock_err(EINVAL);
	int rc = uw_cm_request_fd(l->id, tcp_fd);
	if (!rc)
		exs__kick();
	return unlock_err(rc);
}

static void fill_addr(const struct sockaddr_storage *ss, struct sockaddr *addr, socklen_t *len)
{
	if (!addr || !len)
		return;
	socklen_t n = exs__addr_len(ss);
	memcpy(addr, ss, *len < n ? *len : n);
	*len = n;
}

/* the result of a synchronous call: 0 and its event, or -1 with errno */
static int sync_result(struct exs_sync *w)
{
	exs__sync_wait(w);
	if (w->ev.exs_evt_errno) {
		errno = w->ev.exs_evt_errno;
		return -1;
	}
	return 0;
}

int exs_accept(int fd, struct sockaddr *addr, socklen_t *addrlen, exs_qhandle_t qh,
	       exs_ahandle_t ahandle)
{
	struct exs_sock *l = exs__lock_sock(fd);
	if (!l)
		return -1;
	if (l->st != S_LISTENING)
		return unlock_err(EINVAL);
	struct exs_sock *ready = util_list_first(&l->ready, struct exs_sock, ready_link);
	if (ready && util_list_empty(&l->accepts)) {
		/* one is waiting: no need to queue */
		struct exs_op *op = NULL;
		struct exs_sync w;
		if (qh != EXS_QHANDLE_INVALID &&
		    !(op = exs__op_new(fd, OP_ACCEPT, qh, ahandle, &w)))
			return unlock_err(errno);
		util_list_del(&ready->ready_link);
		l->nready--;
		ready->listener = NULL;
		if (!op) {
			fill_addr(&ready->peer, addr, addrlen);
			pthread_mutex_unlock(&exs_rt.lock);
			return ready->fd;
		}
		exs__complete_accept(op, ready);
		exs__changed();
		return unlock_err(0);
	}
	int n = 0;
	struct exs_op *o;
	util_list_for_each(o, &l->accepts, link)
		n++;
	if (n >= EXS_MAX_RECVS)
		return unlock_err(EAGAIN);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_ACCEPT, qh, ahandle, &w);
	if (!op)
		return unlock_err(errno);
	util_list_add_tail(&l->accepts, &op->link);
	if (qh != EXS_QHANDLE_INVALID)
		return unlock_err(0);
	int rc = sync_result(&w);
	int err = errno;
	pthread_mutex_unlock(&exs_rt.lock);
	if (rc) {
		errno = err;
		return -1;
	}
	fill_addr(&w.ev.exs_evt_union.accept.addr, addr, addrlen);
	return w.ev.exs_evt_union.accept.fd;
}

/* exs_connect, or exs_connect_fd over @tcp_fd (>= 0) */
static int connect_common(int fd, int tcp_fd, const struct sockaddr *addr, socklen_t addrlen,
			  exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	struct exs_sock *s = exs__lock_sock(fd);
	if (!s)
		return -1;
	if (s->st == S_CONNECTING)
		return unlock_err(EALREADY);
	if (s->st != S_NEW)
		return unlock_err(s->st == S_LISTENING ? EINVAL : EISCONN);
	if (addr && !addr_ok(s, addr, addrlen))
		return unlock_err(EINVAL);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_CONNECT, qh, ahandle, &w);
	if (!op)
		return unlock_err(errno);
	if (addr)
		memcpy(&s->peer, addr, exs__addr_len((const struct sockaddr_storage *)addr));
	if (s->type == SOCK_STREAM)
		exs__stream_init(s, s->mode);
	int rc = exs__connect_setup(s, tcp_fd);
	if (rc) {
		exs__op_drop(op);
		s->st = S_CLOSED;
		s->error = -rc;
		return unlock_err(-rc);
	}
	s->st = S_CONNECTING;
	s->connect_op = op;
	exs__kick();
	/* (the socket may be gone when a wait ends: the local address was
	 * taken at establishment) */
	return (int)exs__finish(&w, qh);
}

int exs_connect(int fd, const struct sockaddr *addr, socklen_t addrlen, exs_qhandle_t qh,
		exs_ahandle_t ahandle)
{
	if (!addr) {
		errno = EINVAL;
		return -1;
	}
	return connect_common(fd, -1, addr, addrlen, qh, ahandle);
}

int exs_connect_fd(int fd, int tcp_fd, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	if (tcp_fd < 0) {
		errno = EINVAL;
		return -1;
	}
	return connect_common(fd, tcp_fd, NULL, 0, qh, ahandle);
}

int exs_shutdown(int fd, int how, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	int route;
	struct exs_sock *s = exs__lock_sock_or_switch(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN     ? exs__plain_shutdown(fd, how, qh, ahandle)
		       : route == EXS_ROUTE_CARRIED ? exs__carried_shutdown(fd, how, qh, ahandle)
						    : -1;
	if (s->st != S_CONNECTED && s->st != S_CLOSED)
		return unlock_err(ENOTCONN);
	if (how != SHUT_WR && !exs_fin_shut_rd(&s->fin))
		exs__cancel_recvs(s);
	if (how == SHUT_RD)
		return unlock_err(0);
	if (exs_fin_wr_shut(&s->fin) || s->shut_op)
		return unlock_err(exs_fin_wr_done(&s->fin) && qh == EXS_QHANDLE_INVALID ? 0
											: EALREADY);
	if (s->st != S_CONNECTED)
		return unlock_err(ENOTCONN);
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_SHUTDOWN, qh, ahandle, &w);
	if (!op)
		return unlock_err(errno);
	exs_fin_shut_wr(&s->fin);
	s->shut_op = op;
	exs__progress(s);
	exs__kick();
	return (int)exs__finish(&w, qh);
}

int exs_close(int fd, exs_qhandle_t qh, exs_ahandle_t ahandle)
{
	int route;
	struct exs_sock *s = exs__lock_sock_or_plain(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN     ? exs__plain_close(fd, qh, ahandle)
		       : route == EXS_ROUTE_CARRIED ? exs__carried_close(fd, qh, ahandle)
						    : -1;
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_CLOSE, qh, ahandle, &w);
	if (!op)
		return unlock_err(errno);
	s->closing = true;
	s->close_op = op;
	if (s->alias) {
		/* a system socket in DDP mode: the program's number goes now
		 * (uwarp's copy keeps the connection for the sends to finish) */
		util_sys_close(s->alias - 1);
		s->alias = 0;
	}
	/* receives and accepts are over; sends already posted still go */
	exs__cancel_recvs(s);
	struct exs_op *r;
	while ((r = exs__op_pop(&s->accepts)))
		exs__op_complete(r, ECANCELED, -1);
	if (s->st == S_LISTENING) {
		/* connections nobody accepted go with it */
		struct exs_sock *o, *next;
		util_list_for_each_safe(o, next, &exs_rt.socks, link)
			if (o->listener == s) {
				if (o->st == S_CONNECTED && o->id)
					uw_cm_disconnect(o->id);
				exs__sock_free(o); /* (o alone leaves the list) */
			}
		s->st = S_CLOSED;
	} else if (s->st == S_CONNECTING) {
		exs__fail_ops(s, ECANCELED);
		s->error = ECANCELED;
		s->st = S_CLOSED;
	} else if (s->st == S_CONNECTED) {
		exs_fin_shut_wr(&s->fin); /* (done already after exs_shutdown) */
		if (!s->linger_deadline)
			exs_rt.lingering++;
		s->linger_deadline = util_now_ms() + EXS_LINGER_MS;
	} else {
		s->st = S_CLOSED;
	}
	if (s->st == S_CONNECTED)
		exs__progress(s);
	else
		exs__maybe_finish_close(s);
	exs__kick();
	return (int)exs__finish(&w, qh);
}

int exs_getsockname(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	int route;
	struct exs_sock *s = exs__lock_sock_or_plain(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN     ? util_sys_getsockname(fd, addr, addrlen)
		       : route == EXS_ROUTE_CARRIED ? exs__carrier()->getsockname(fd, addr, addrlen)
						    : -1;
	if (!addr || !addrlen)
		return unlock_err(EFAULT);
	fill_addr(&s->local, addr, addrlen);
	return unlock_err(0);
}

int exs_getpeername(int fd, struct sockaddr *addr, socklen_t *addrlen)
{
	int route;
	struct exs_sock *s = exs__lock_sock_or_plain(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN     ? util_sys_getpeername(fd, addr, addrlen)
		       : route == EXS_ROUTE_CARRIED ? exs__carrier()->getpeername(fd, addr, addrlen)
						    : -1;
	if (!addr || !addrlen)
		return unlock_err(EFAULT);
	if (s->st != S_CONNECTED && s->st != S_CLOSED)
		return unlock_err(ENOTCONN);
	fill_addr(&s->peer, addr, addrlen);
	return unlock_err(0);
}

static int get_int(const void *v, socklen_t len, int *out)
{
	if (!v || len != sizeof(int))
		return EINVAL;
	memcpy(out, v, sizeof(int));
	return 0;
}

/* a system socket's options are the system's; SOL_EXS has none there */
static int plain_opt(int fd, int level)
{
	errno = level == SOL_EXS ? ENOPROTOOPT : 0;
	return level == SOL_EXS ? -1 : 0;
}

/* SOL_ESOCK on a system socket not switched yet: ESOCK_DDPMODE marks it
 * (exs_ddp.c); a connected one switches at once, as esock's setsockopt
 * does, and the call returns once the MPA exchange has ended. */
static int ddp_option(int fd, int optname, const void *optval, socklen_t optlen)
{
	int v = 0;
	int err = optname != ESOCK_DDPMODE ? ENOPROTOOPT : get_int(optval, optlen, &v);
	if (!err) {
		exs__lock();
		/* plain bytes of ours are on their way: MPA cannot follow them */
		err = exs__plain_known(fd) ? EBUSY : exs__ddp_set(fd, v != 0);
		pthread_mutex_unlock(&exs_rt.lock);
	}
	if (err) {
		errno = err;
		return -1;
	}
	struct sockaddr_storage peer;
	socklen_t len = sizeof(peer);
	if (!v || util_sys_getpeername(fd, (struct sockaddr *)&peer, &len))
		return 0; /* (not connected yet: the first call after connect switches it) */
	int route;
	struct exs_sock *s = exs__lock_sock_or_switch(fd, &route);
	if (!s)
		return route == EXS_ROUTE_PLAIN ? 0 : -1;
	return unlock_err(s->st != S_CLOSED ? 0 : s->error ? s->error : ECONNRESET);
}

int exs_setsockopt(int fd, int level, int optname, const void *optval, socklen_t optlen)
{
	int route;
	struct exs_sock *s = exs__lock_sock_or_plain(fd, &route);
	if (!s && route == EXS_ROUTE_CARRIED) /* (esock's: its options, SOL_ESOCK's too) */
		return exs__carrier()->setsockopt(fd, level, optname, optval, optlen);
	if (!s && route == EXS_ROUTE_PLAIN && level == SOL_ESOCK)
		return ddp_option(fd, optname, optval, optlen);
	if (!s)
		return route != EXS_ROUTE_PLAIN || plain_opt(fd, level)
			       ? -1
			       : util_sys_setsockopt(fd, level, optname, optval, optlen);
	int v, err;
	if (level == SOL_ESOCK) {
		/* an ES-API socket is in DDP mode for good */
		if (optname != ESOCK_DDPMODE)
			return unlock_err(ENOPROTOOPT);
		if ((err = get_int(optval, optlen, &v)))
			return unlock_err(err);
		return unlock_err(v ? 0 : EISCONN);
	}
	if (level == SOL_SOCKET && optname == SO_SNDTIMEO) {
		struct timeval tv;
		if (!optval || optlen != sizeof(tv))
			return unlock_err(EINVAL);
		memcpy(&tv, optval, sizeof(tv));
		if (tv.tv_sec < 0 || tv.tv_usec < 0 || tv.tv_usec >= 1000000 || tv.tv_sec > 3600)
			return unlock_err(EINVAL);
		s->timeout_ms = (unsigned)(tv.tv_sec * 1000 + tv.tv_usec / 1000);
		return unlock_err(0);
	}
	if (level == SOL_SOCKET && optname == SO_RCVBUF)
		optname = EXS_SO_RING_SIZE, level = SOL_EXS;
	if (level != SOL_EXS)
		return unlock_err(ENOPROTOOPT);
	if ((err = get_int(optval, optlen, &v)))
		return unlock_err(err);
	bool early = s->st == S_NEW || s->st == S_LISTENING;
	switch (optname) {
	case EXS_SO_STREAM_MODE:
		if (s->type != SOCK_STREAM || v < EXS_MODE_DYNAMIC || v > EXS_MODE_PAPER)
			return unlock_err(s->type != SOCK_STREAM ? ENOPROTOOPT : EINVAL);
		if (!early)
			return unlock_err(EISCONN);
		s->mode = v;
		break;
	case EXS_SO_RING_SIZE:
		if (v < 4096 || v > (1 << 28))
			return unlock_err(EINVAL);
		if (!early)
			return unlock_err(EISCONN);
		s->ring_size = (uint32_t)v;
		break;
	case EXS_SO_FLOW:
		if (s->type != SOCK_STREAM)
			return unlock_err(ENOPROTOOPT);
		if (v < EXS_FLOW_RDMA_AUTO || v > EXS_FLOW_CREDIT)
			return unlock_err(EINVAL);
		if (!early)
			return unlock_err(EISCONN);
		s->flow = v;
		break;
	case EXS_SO_CREDIT_SIZE:
		if (v < 512 || v > (1 << 20) || (v & (v - 1)))
			return unlock_err(EINVAL);
		if (!early)
			return unlock_err(EISCONN);
		s->credit_size = (uint32_t)v;
		break;
	case EXS_SO_RULES:
		if (s->type != SOCK_STREAM)
			return unlock_err(ENOPROTOOPT);
		if (v < 0 || v > EXS_RULES_ALL)
			return unlock_err(EINVAL);
		if (s->st == S_CLOSED)
			return unlock_err(ENOTCONN);
		s->rules = (unsigned)v;
		/* a stream under way takes them from its next advert or ACK
		 * (before connecting this fills state exs__stream_init sets
		 * again from s->rules) */
		exs__stream_rules(s);
		break;
	case EXS_SO_IDLE_MS:
	case EXS_SO_KEEPALIVE:
		if (v < 0 || (optname == EXS_SO_KEEPALIVE && v > UW_KEEPALIVE_MAX_S))
			return unlock_err(EINVAL);
		if (s->st == S_CLOSED)
			return unlock_err(ENOTCONN);
		*(optname == EXS_SO_IDLE_MS ? &s->idle_ms : &s->keepalive_s) = (unsigned)v;
		/* a connection already made (or being made) changes now */
		if (s->id && (err = uw_cm_set_limits(s->id, s->idle_ms, s->keepalive_s)) &&
		    err != ENOTCONN)
			return unlock_err(err);
		break;
	case EXS_SO_NO_IMMEDIATE:
	case EXS_SO_CRC:
		if (!early)
			return unlock_err(EISCONN);
		if (optname == EXS_SO_CRC)
			s->crc = v != 0;
		else
			s->no_imm = v != 0;
		break;
	default:
		return unlock_err(ENOPROTOOPT);
	}
	return unlock_err(0);
}

static int put_out(void *optval, socklen_t *optlen, const void *v, socklen_t len)
{
	if (!optval || !optlen || *optlen < len)
		return EINVAL;
	memcpy(optval, v, len);
	*optlen = len;
	return 0;
}

int exs_getsockopt(int fd, int level, int optname, void *optval, socklen_t *optlen)
{
	int route;
	struct exs_sock *s = exs__lock_sock_or_plain(fd, &route);
	if (!s && route == EXS_ROUTE_CARRIED)
		return exs__carrier()->getsockopt(fd, level, optname, optval, optlen);
	int v;
	if (level == SOL_ESOCK && (s || route == EXS_ROUTE_PLAIN)) {
		if (optname != ESOCK_DDPMODE)
			return s ? unlock_err(ENOPROTOOPT) : (errno = ENOPROTOOPT, -1);
		if (!s)
			exs__lock();
		v = s ? 1 : exs__ddp_wanted(fd);
		return unlock_err(put_out(optval, optlen, &v, sizeof(v)));
	}
	if (!s)
		return route != EXS_ROUTE_PLAIN || plain_opt(fd, level)
			       ? -1
			       : util_sys_getsockopt(fd, level, optname, optval, optlen);
	if (level == SOL_SOCKET) {
		switch (optname) {
		case SO_TYPE:
			v = s->type;
			break;
		case SO_ERROR:
			v = s->error;
			s->error = 0;
			break;
		case SO_RCVBUF:
			v = (int)s->ring_size;
			break;
		default:
			return unlock_err(ENOPROTOOPT);
		}
		return unlock_err(put_out(optval, optlen, &v, sizeof(v)));
	}
	if (level != SOL_EXS)
		return unlock_err(ENOPROTOOPT);
	switch (optname) {
	case EXS_SO_STREAM_MODE:
		v = s->mode;
		break;
	case EXS_SO_RING_SIZE:
		v = (int)s->ring_size;
		break;
	case EXS_SO_NO_IMMEDIATE:
		v = s->no_imm;
		break;
	case EXS_SO_IMMEDIATE:
		v = s->imm;
		break;
	case EXS_SO_CRC:
		v = s->crc;
		break;
	case EXS_SO_FLOW:
		v = s->flow;
		break;
	case EXS_SO_CREDIT_SIZE:
		v = (int)s->credit_size;
		break;
	case EXS_SO_RULES:
		if (s->type != SOCK_STREAM)
			return unlock_err(ENOPROTOOPT);
		v = (int)s->rules;
		/* connected: the sending rule in force, as its sender has it
		 * (the hold only towards a peer that understands it,
		 * exs__stream_rules) */
		if (s->st == S_CONNECTED && s->mode == EXS_MODE_DYNAMIC)
			v = (v & ~EXS_RULE_HOLD) | (int)(s->tx.rules & EXS_RULE_HOLD);
		break;
	case EXS_SO_IDLE_MS:
		v = (int)s->idle_ms;
		break;
	case EXS_SO_KEEPALIVE:
		v = (int)s->keepalive_s;
		break;
	case EXS_SO_COUNTERS: {
		struct exs_stream_counters c = { .direct = s->tx.c.direct,
						 .indirect = s->tx.c.indirect,
						 .switches = s->tx.c.switches,
						 .discarded = s->tx.c.discarded,
						 .adverts = s->adverts_sent,
						 .copied = s->rx.c.copied,
						 .rx_direct = s->rx_direct,
						 .rx_indirect = s->rx_indirect,
						 .ring_used = s->rx.c.ring_used,
						 .coalesced = s->coalesced,
						 .flushes = s->flushes,
						 .sendbuf = s->sendbuf_bytes,
						 .ring_held = exs_sp_rx_held(&s->rx),
						 .holds = s->tx.c.holds,
						 .adverts_held = s->tx.count };
		if (s->type == SOCK_SEQPACKET)
			c.direct = s->sent_seq, c.rx_direct = s->rx_msgs;
		/* the struct grows at its end: a shorter one gets its part */
		socklen_t len =
			optlen && *optlen >= offsetof(struct exs_stream_counters, sendbuf) &&
					*optlen < sizeof(c)
				? *optlen
				: sizeof(c);
		return unlock_err(put_out(optval, optlen, &c, len));
	}
	default:
		return unlock_err(ENOPROTOOPT);
	}
	return unlock_err(put_out(optval, optlen, &v, sizeof(v)));
}
