/*
 * exs_ddp.c: a stream socket the system made (socket(2) + connect(2)),
 * put in DDP mode: its TCP connection negotiates MPA and carries the
 * dynamic stream protocol, under the program's own descriptor number.
 *
 * Which sockets: exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &one, ...)
 * marks one (a mark, kept here by descriptor and inode, since the socket
 * is the system's), or the environment's ESOCK_DDPMODE selects it by port
 * as the preload would (read only when no library above claims sockets
 * itself: under the preload esock has already applied it at connect).
 *
 * The switch: an ES-API socket like exs_connect's, over a copy of the
 * program's descriptor (uwarp owns the copy, so the program's number stays
 * open for it to close), found by the program's number from then on (an
 * alias). The first call that needs the connection makes the MPA exchange
 * and waits for it, as a blocking connect with esock does; a connection
 * the peer refuses (not an iWARP peer) fails that call and every later one
 * with the error.
 *
 * The accepting end (a listener on the socket's local port says that this
 * end was accepted) is sorted as esock sorts its clients, without making
 * any call wait: exs_plain.c holds the operations and peeks at the
 * client's first bytes; an MPA Request's key hands a copy of the
 * descriptor to an internal handoff listener (uw_cm_request_fd), whose
 * request finds the socket waiting for it by its addresses; once the
 * connection is established the held operations move to it. Anything
 * else, or silence for ESOCK_PEEK_MS, and the socket is plain TCP.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "exs_internal.h"
#include "util/ddpmode.h"

#define EXS_DDP_MARKS_MAX 4096

struct exs_ddp_mark {
	int fd;
	ino_t ino; /* the socket's: a number used again is another socket */
	bool on;
	struct util_list link; /* on exs_rt.ddp_marks */
};

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static struct util_ddpmode env_mode;
static unsigned peek_ms = UTIL_PEEK_MS_DEFAULT;

static void env_read(void)
{
	const char *v = getenv("ESOCK_DDPMODE");
	char why[128];
	if (!util_ddpmode_parse(v, &env_mode, why, sizeof(why)))
		fprintf(stderr, "exs: ESOCK_DDPMODE='%s' ignored (no socket selected): %s\n", v,
			why);
	v = getenv("ESOCK_PEEK_MS");
	if (!util_ddpmode_peek_ms(v, &peek_ms))
		fprintf(stderr, "exs: ESOCK_PEEK_MS='%s' ignored: milliseconds, 0 to 60000\n", v);
}

unsigned exs__ddp_peek_ms(void)
{
	pthread_once(&env_once, env_read);
	return peek_ms;
}

static ino_t inode_of(int fd)
{
	struct stat st;
	return fstat(fd, &st) || !S_ISSOCK(st.st_mode) ? 0 : st.st_ino;
}

static struct exs_ddp_mark *mark_find(int fd, ino_t ino)
{
	struct exs_ddp_mark *m;
	util_list_for_each(m, &exs_rt.ddp_marks, link)
		if (m->fd == fd && m->ino == ino)
			return m;
	return NULL;
}

/* marks whose descriptor now names another socket, or none (closed with
 * close(2), never switched) */
static int marks_prune(void)
{
	int n = 0;
	struct exs_ddp_mark *m, *next;
	util_list_for_each_safe(m, next, &exs_rt.ddp_marks, link) {
		if (inode_of(m->fd) == m->ino) {
			n++;
			continue;
		}
		util_list_del(&m->link);
		free(m);
	}
	return n;
}

void exs__ddp_forget_mark(int fd)
{
	struct exs_ddp_mark *m, *next;
	util_list_for_each_safe(m, next, &exs_rt.ddp_marks, link)
		if (m->fd == fd) {
			util_list_del(&m->link);
			free(m);
		}
}

int exs__ddp_set(int fd, bool on)
{
	ino_t ino = inode_of(fd);
	if (!ino)
		return EBADF;
	struct exs_ddp_mark *m = mark_find(fd, ino);
	if (m) {
		m->on = on;
		return 0;
	}
	exs__ddp_forget_mark(fd); /* (another socket's, under this number before) */
	int n = 0;
	util_list_for_each(m, &exs_rt.ddp_marks, link)
		n++;
	if (n >= EXS_DDP_MARKS_MAX && marks_prune() >= EXS_DDP_MARKS_MAX)
		return ENOBUFS;
	m = calloc(1, sizeof(*m));
	if (!m)
		return ENOMEM;
	*m = (struct exs_ddp_mark){ .fd = fd, .ino = ino, .on = on };
	util_list_add_tail(&exs_rt.ddp_marks, &m->link);
	return 0;
}

/* the environment's choice for a socket with these addresses */
static bool env_selects(const struct sockaddr_storage *local, const struct sockaddr_storage *peer)
{
	if (exs__fd_claims())
		return false;
	pthread_once(&env_once, env_read);
	return util_ddpmode_port(&env_mode, util_sockaddr_port((const struct sockaddr *)peer)) ||
	       util_ddpmode_port(&env_mode, util_sockaddr_port((const struct sockaddr *)local));
}

bool exs__ddp_wanted(int fd)
{
	struct exs_ddp_mark *m = mark_find(fd, inode_of(fd));
	if (m)
		return m->on;
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	util_sys_getsockname(fd, (struct sockaddr *)&local, &ll);
	util_sys_getpeername(fd, (struct sockaddr *)&peer, &pl);
	return env_selects(&local, &peer);
}

/* Is some socket of this network namespace listening on @port? Then a
 * socket with that local port is one it accepted (a socket cannot connect
 * out from a port a listener holds). /proc/self/net/tcp and tcp6 list
 * them: "sl local_address rem_address st ...", the port in hex, LISTEN
 * state 0A. Read once per switch, never on a data call. */
static bool listening_on(int port)
{
	static const char *const files[] = { "/proc/self/net/tcp", "/proc/self/net/tcp6" };
	bool found = false;
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]) && !found; i++) {
		FILE *f = fopen(files[i], "re");
		if (!f)
			continue;
		char line[512];
		unsigned lport, st;
		while (!found && fgets(line, sizeof(line), f))
			found = sscanf(line, " %*u: %*[0-9A-Fa-f]:%x %*[0-9A-Fa-f]:%*x %x", &lport,
				       &st) == 2 &&
				st == 0x0A && (int)lport == port;
		fclose(f);
	}
	return found;
}

static struct exs_sock *alias_find(int fd)
{
	struct exs_sock *s;
	util_list_for_each(s, &exs_rt.socks, link)
		if (s->alias == fd + 1 && !s->closing)
			return s;
	return NULL;
}

/* The program closed its descriptor with close(2), and the number now
 * names another object: the connection behind the old one ends, and
 * whatever was outstanding on it fails (EBADF). */
static void alias_orphaned(struct exs_sock *s)
{
	s->alias = 0;
	s->closing = true;
	exs__fail_ops(s, EBADF);
	exs__end_recvs(s, EBADF, false);
	if (s->close_op) {
		exs__op_complete(s->close_op, EBADF, 0);
		s->close_op = NULL;
	}
	exs__sock_free(s); /* (the reaper destroys its id: the connection closes) */
}

struct exs_sock *exs__ddp_alias(int fd)
{
	struct exs_sock *s;
	while ((s = alias_find(fd))) {
		if (inode_of(fd) != s->alias_ino) {
			alias_orphaned(s);
			return NULL;
		}
		if (s->st == S_NEW || s->st == S_PENDING)
			return NULL; /* an accepted one still sorting: exs_plain.c holds its calls */
		if (s->st != S_CONNECTING)
			return s;
		/* another call is making the MPA exchange: its end wakes us */
		exs__sync_wait_change();
	}
	return NULL;
}

/* a new ES-API socket standing behind the program's @fd, in the table, and
 * the copy of @fd uwarp is to own (NULL: errno) */
static struct exs_sock *alias_new(int fd, ino_t ino, const struct sockaddr_storage *local,
				  const struct sockaddr_storage *peer, int *copy)
{
	struct exs_sock *s = exs__sock_new(local->ss_family, SOCK_STREAM);
	if (!s)
		return NULL;
	*copy = exs__fd_high(util_sys_fcntl(fd, F_DUPFD_CLOEXEC, 0));
	if (*copy < 0) {
		int err = errno;
		exs__sock_free(s);
		errno = err;
		return NULL;
	}
	s->alias = fd + 1;
	s->alias_ino = ino;
	memcpy(&s->local, local, sizeof(s->local));
	memcpy(&s->peer, peer, sizeof(s->peer));
	util_list_add_head(&exs_rt.socks, &s->link); /* (its CM events look it up there) */
	return s;
}

/* The connecting end's switch (the lock held): 0 with *out the socket,
 * once its negotiation has ended (its state says how); or an errno. */
static int take(int fd, ino_t ino, const struct sockaddr_storage *local,
		const struct sockaddr_storage *peer, struct exs_sock **out)
{
	struct exs_sync w;
	struct exs_op *op = exs__op_new(fd, OP_CONNECT, EXS_QHANDLE_INVALID, NULL, &w);
	if (!op)
		return errno;
	int t;
	struct exs_sock *s = alias_new(fd, ino, local, peer, &t);
	if (!s) {
		exs__op_drop(op);
		return errno;
	}
	exs__stream_init(s, s->mode);
	int rc = exs__connect_setup(s, t);
	if (rc) {
		exs__op_drop(op);
		util_sys_close(t); /* (uwarp took it only on success) */
		exs__sock_free(s);
		return -rc;
	}
	exs__ddp_forget_mark(fd);
	s->st = S_CONNECTING;
	s->connect_op = op;
	exs__kick();
	exs__sync_wait(&w);
	/* (closed meanwhile by another thread: gone from the table) */
	*out = exs__ddp_alias(fd);
	return *out ? 0 : EBADF;
}

/* nothing marked, and the environment selects nothing: the plain path
 * pays no system call for DDP mode */
static bool none_wanted(void)
{
	pthread_once(&env_once, env_read);
	exs__lock();
	bool none = util_list_empty(&exs_rt.ddp_marks) &&
		    (exs__fd_claims() || (!env_mode.all && !env_mode.nports));
	pthread_mutex_unlock(&exs_rt.lock);
	return none;
}

int exs__ddp_take(int fd, struct exs_sock **out)
{
	*out = NULL;
	if (none_wanted())
		return 0;
	ino_t ino = inode_of(fd);
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	if (!ino || util_sys_getsockname(fd, (struct sockaddr *)&local, &ll))
		return 0; /* (the plain path says what it is) */
	bool connected = !util_sys_getpeername(fd, (struct sockaddr *)&peer, &pl);
	exs__lock();
	struct exs_ddp_mark *m = mark_find(fd, ino);
	bool want = m ? m->on : connected && env_selects(&local, &peer);
	pthread_mutex_unlock(&exs_rt.lock);
	if (!want)
		return 0;
	if (!connected) {
		errno = ENOTCONN;
		return -1;
	}
	bool passive = listening_on(util_sockaddr_port((struct sockaddr *)&local));
	exs__lock();
	/* another thread may have switched it meanwhile */
	if ((*out = exs__ddp_alias(fd)))
		return 1;
	int err = 0;
	if (passive) {
		/* sorted without waiting: the calls go to exs_plain.c, which
		 * holds them (unless another thread has begun that) */
		if (!exs__plain_known(fd))
			err = exs__plain_sort(fd);
	} else {
		err = take(fd, ino, &local, &peer, out);
		if (!err)
			return 1;
	}
	pthread_mutex_unlock(&exs_rt.lock);
	errno = err;
	return err ? -1 : 0;
}

/* ---- the accepting end ---- */

/* the listener that takes the copies of accepted sockets whose client
 * sent an MPA Request (made at the first; never closed) */
static struct exs_sock *handoff(void)
{
	if (exs_rt.ddp_handoff)
		return exs_rt.ddp_handoff;
	struct exs_sock *s = exs__sock_new(AF_INET, SOCK_STREAM);
	if (!s)
		return NULL;
	s->id = uw_cm_create_id(exs_rt.cm, s);
	int rc = s->id ? uw_cm_listen_handoff(s->id) : ENOMEM;
	if (rc) {
		exs__sock_free(s); /* (the reaper destroys the id) */
		errno = rc;
		return NULL;
	}
	s->st = S_LISTENING;
	s->backlog = EXS_MAX_CONNECTIONS;
	util_list_add_head(&exs_rt.socks, &s->link);
	exs_rt.ddp_handoff = s;
	return s;
}

int exs__ddp_passive(int fd)
{
	struct exs_sock *l = handoff();
	ino_t ino = inode_of(fd);
	struct sockaddr_storage local = { 0 }, peer = { 0 };
	socklen_t ll = sizeof(local), pl = sizeof(peer);
	if (!l)
		return errno;
	if (!ino || util_sys_getsockname(fd, (struct sockaddr *)&local, &ll) ||
	    util_sys_getpeername(fd, (struct sockaddr *)&peer, &pl))
		return ENOTCONN;
	int t;
	struct exs_sock *s = alias_new(fd, ino, &local, &peer, &t);
	if (!s)
		return errno;
	int rc = uw_cm_request_fd(l->id, t);
	if (rc) {
		util_sys_close(t);
		exs__sock_free(s);
		return rc;
	}
	exs__kick();
	return 0;
}

static bool same_addr(const struct sockaddr_storage *a, const struct sockaddr_storage *b)
{
	return a->ss_family == b->ss_family && !memcmp(a, b, exs__addr_len(a));
}

struct exs_sock *exs__ddp_request(const struct uw_cm_event *e)
{
	struct exs_sock *s;
	util_list_for_each(s, &exs_rt.socks, link)
		if (s->alias && s->st == S_NEW && !s->closing &&
		    same_addr(&s->local, &e->id->local_addr) &&
		    same_addr(&s->peer, &e->id->peer_addr))
			return s;
	return NULL;
}

void exs__ddp_passive_drop(int fd)
{
	struct exs_sock *s;
	util_list_for_each(s, &exs_rt.socks, link)
		if (s->alias == fd + 1 && !s->closing && s->st != S_CONNECTED) {
			s->alias = 0;
			exs__sock_free(s); /* (the reaper destroys its id: the connection closes) */
			return;
		}
}

void exs__ddp_repost(struct exs_sock *s, struct exs_op *op)
{
	/* the handles the plain path took are taken again the socket's way */
	exs_mhandle_t mh[EXS_IOV_MAX];
	bool any = false;
	for (int i = 0; i < op->iovcnt; i++)
		any |= (mh[i] = op->mem[i]) != NULL;
	exs__op_mem_release(op);
	int rc = -EINVAL;
	if (op->kind == OP_SEND) {
		rc = exs__send_post(s, op, any ? mh : NULL);
	} else if (op->kind == OP_RECV) {
		rc = exs__recv_post(s, op, any ? mh : NULL);
	} else if (op->kind == OP_SHUTDOWN) {
		exs_fin_shut_wr(&s->fin);
		s->shut_op = op;
		exs__progress(s);
		return;
	}
	if (rc)
		exs__op_complete(op, -rc, -1);
}
