/*
 * esock_ready.c: a DDP socket's readability kept in user space for the
 * epoll sets that hold it, answered by esock's epoll_wait.
 *
 * A DDP socket tells the kernel it is readable with a byte in its socket
 * pair, sent when data arrives and drained when the program has read it
 * all: two system calls per request for a request/reply server, a third of
 * what redis's server made per request over DDP (docs/performance.md). So
 * a socket starts without the byte: a program that only reads and writes
 * (its blocking reads wait in esock) never needs it, nor does one that
 * puts the socket in epoll sets (where servers keep theirs). There its
 * registration in the kernel's set keeps the program's other events
 * (writable, hang-ups, errors), and esock's epoll_wait adds readable from
 * user space, as the kernel's ready list
 * would (a member queued on its set when data arrives; level-triggered
 * ones stay queued while the socket is readable, edge-triggered ones
 * report each arrival once). The kernel's registration carries a key of
 * ours instead of the program's data, so that its events are merged with
 * the user-space ones into one per socket and given the program's data.
 *
 * A thread asleep in such a wait, when another thread makes one of the
 * set's sockets readable, is woken by the set's bell: an eventfd in the
 * set, written only while a thread other than the writer waits on it.
 *
 * A wait esock does not answer this way would miss the readiness: poll,
 * select, an epoll set inside another or polled, epoll_pwait2,
 * EPOLLONESHOT and EPOLLEXCLUSIVE registrations. Before any of those sees
 * the socket, it goes back to the byte for good (esock__ready_kernel):
 * its registrations get the program's events and data again, and the byte
 * is sent if it is readable. An epoll set (made by epoll_create here)
 * that poll, select, another set or epoll_pwait2 has ever seen keeps no
 * socket in user space, since such a wait may still be under way when one
 * is added. (A wait the library never sees, a raw system call or io_uring,
 * or a set's copy made by dup, is not covered.)
 *
 * A set is esock's while it lives (its number closed, it stays, dead, for
 * the next set by that number): a thread that still waits on a set being
 * closed finds it, as it would find the kernel's. A child after fork
 * leaves its parent's sets and sockets alone (their locks may have been
 * held at the fork).
 *
 * Locks: ctl_mu (registrations made and dropped), then a socket's e->mu,
 * then a set's mu. A member's socket stays alive while it is a member
 * (a descriptor's close drops its registrations first).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>

#include "esock_internal.h"
#include "util/clock.h"

struct esock_set;

/* a DDP socket's registration in a set, in user mode */
struct esock_member {
	struct esock_set *set;
	struct esock *e;
	int fd;
	uint16_t gen;    /* in its key */
	uint32_t events; /* the program's */
	epoll_data_t data;
	unsigned seen; /* edge-triggered: the arrivals reported */
	bool queued;
	struct util_list slink; /* on the set's members */
	struct util_list rlink; /* on the set's ready ones */
	struct util_list elink; /* on the socket's memberships */
};

struct esock_set {
	pthread_mutex_t mu;
	int ep;
	pid_t owner;
	bool dead;    /* its number was closed */
	int bell;     /* an eventfd in the set, -1: none */
	bool kernel;  /* waited outside esock: no user mode here */
	uint16_t gen; /* the next member's (a registration left behind by a
		       * closed copy of a number must not pass for its next one) */
	int turn;     /* epoll_wait for one event: user space's turn or the kernel's */
	int nmembers;
	struct util_list members, ready;
	struct esock_member **byfd; /* members by descriptor, nbyfd of them */
	int nbyfd;
	_Atomic int nready;  /* queued members (a quick look without mu) */
	_Atomic int waiters; /* threads in esock__ready_wait on it */
	_Atomic bool rung;   /* the bell holds a count */
};

static pthread_mutex_t ctl_mu = PTHREAD_MUTEX_INITIALIZER;
_Atomic bool esock_umode_any;
_Atomic bool esock_epoll_any;
static _Atomic(struct esock_set *) sets[ESOCK_FD_MAX];
/* what esock knows of an epoll set's number (SF_*) */
static _Atomic uint8_t set_flags[ESOCK_FD_MAX];
enum {
	SF_EPOLL = 0x1,  /* made by epoll_create here */
	SF_WAITED = 0x2, /* seen by poll, select, another set or epoll_pwait2 */
};
/* a kernel registration's data: key_hi << 32 | gen << 16 | fd */
static uint32_t key_hi;
#define BELL_LOW 0xffffffffu /* (gen 0xffff is never a member's) */

/* the set this thread waits on (its own wake needs no bell) */
static __thread struct esock_set *waiting_on;

static uint64_t key_of(uint16_t gen, int fd)
{
	return (uint64_t)key_hi << 32 | (uint32_t)gen << 16 | (uint32_t)fd;
}

static void init_key(void)
{
	/* upper half of a non-canonical address: no pointer a program
	 * registers has it, and a number would have to be chosen so */
	key_hi = 0xe50c0000u | ((uint32_t)util_now_ns() & 0xffffu);
}

/* a child starts with the lock free (a thread of its parent's may have
 * held it at the fork) */
static void child_unlock(void) { pthread_mutex_init(&ctl_mu, NULL); }

static struct esock_set *set_of(int ep)
{
	if (!esock__fd_in_range(ep))
		return NULL;
	return atomic_load_explicit(&sets[ep], memory_order_acquire);
}

/* this process's live set by that number, or NULL */
static struct esock_set *live_set(int ep)
{
	struct esock_set *s = set_of(ep);
	return s && !s->dead && s->owner == esock__pid() ? s : NULL;
}

static void ring(struct esock_set *s)
{
	if (atomic_exchange(&s->rung, true))
		return;
	uint64_t one = 1;
	if (REAL(write)(s->bell, &one, sizeof(one)) < 0)
		atomic_store(&s->rung, false);
}

/* under ctl_mu: the set's bell out of it, closed */
static void bell_off(struct esock_set *s)
{
	if (s->bell < 0)
		return;
	REAL(epoll_ctl)(s->ep, EPOLL_CTL_DEL, s->bell, NULL);
	REAL(close)(s->bell);
	s->bell = -1;
	atomic_store(&s->rung, false);
}

/* under ctl_mu: @ep's set, made or made live again */
static struct esock_set *set_make(int ep)
{
	struct esock_set *s = set_of(ep);
	if (s && !s->dead)
		return s->owner == esock__pid() ? s : NULL;
	if (!s) {
		static pthread_once_t once = PTHREAD_ONCE_INIT;
		pthread_once(&once, init_key);
		s = calloc(1, sizeof(*s));
		if (!s)
			return NULL;
		pthread_mutex_init(&s->mu, NULL);
		util_list_init(&s->members);
		util_list_init(&s->ready);
	}
	/* our own descriptor, where the program's numbers are not (closed
	 * past the interposed close, which would come back here) */
	int bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	int high = bell >= 0 ? esock__dup_high(bell) : -1;
	if (high >= 0) {
		REAL(close)(bell);
		bell = high;
	}
	struct epoll_event bev = { .events = EPOLLIN, .data.u64 = key_of(0xffff, 0xffff) };
	if (bell < 0 || REAL(epoll_ctl)(ep, EPOLL_CTL_ADD, bell, &bev)) {
		if (bell >= 0)
			REAL(close)(bell);
		if (!set_of(ep))
			free(s);
		return NULL;
	}
	s->ep = ep;
	s->owner = esock__pid();
	s->bell = bell;
	s->kernel = false;
	s->nmembers = 0;
	atomic_store(&s->nready, 0);
	atomic_store(&s->rung, false);
	s->dead = false;
	atomic_store_explicit(&sets[ep], s, memory_order_release);
	/* a thread already in a plain wait on the set (it had no DDP
	 * socket) wakes, finds the bell, and waits again through esock */
	ring(s);
	return s;
}

/* under the set's mu */
static void dequeue(struct esock_member *m)
{
	if (!m->queued)
		return;
	util_list_del(&m->rlink);
	m->queued = false;
	atomic_fetch_sub(&m->set->nready, 1);
}

/* under e->mu: @m's socket may be readable now */
static void queue(struct esock_member *m)
{
	struct esock_set *s = m->set;
	if (!(m->events & (EPOLLIN | EPOLLRDNORM)))
		return;
	pthread_mutex_lock(&s->mu);
	bool added = !m->queued;
	if (added) {
		util_list_add_tail(&s->ready, &m->rlink);
		m->queued = true;
		atomic_fetch_add(&s->nready, 1); /* (before the waiters' count is read) */
	}
	pthread_mutex_unlock(&s->mu);
	/* a waiter counts itself, then looks at nready: one of the two
	 * sees the other (both sequentially consistent) */
	if (added && atomic_load(&s->waiters) > (waiting_on == s ? 1 : 0))
		ring(s);
}

void esock__ready_changed(struct esock *e, bool readable, bool arrived)
{
	if (arrived)
		atomic_fetch_add(&e->arrivals, 1);
	bool was = atomic_exchange(&e->uready, readable);
	if (!readable || (was && !arrived))
		return; /* (a member no longer readable leaves its queue lazily) */
	struct esock_member *m;
	util_list_for_each(m, &e->memberships, elink)
		queue(m);
}

/* under ctl_mu and e->mu: @m leaves its set (and is freed) */
static void member_free(struct esock_member *m)
{
	struct esock_set *s = m->set;
	pthread_mutex_lock(&s->mu);
	dequeue(m);
	util_list_del(&m->slink);
	if (m->fd < s->nbyfd && s->byfd[m->fd] == m)
		s->byfd[m->fd] = NULL;
	s->nmembers--;
	pthread_mutex_unlock(&s->mu);
	util_list_del(&m->elink);
	free(m);
}

static uint32_t kernel_events(uint32_t events)
{
	return events & ~(uint32_t)(EPOLLIN | EPOLLRDNORM);
}

/* under e->mu: the plain registrations of @e (esock__ready_track) */
static void kreg_add(struct esock *e, int ep, int fd)
{
	for (int i = 0; i < e->nkregs; i++)
		if (e->kregs[i].ep == ep && e->kregs[i].fd == fd)
			return;
	if (e->nkregs < ESOCK_KREGS)
		e->kregs[e->nkregs++] = (__typeof__(e->kregs[0])){ ep, fd };
}

static void kreg_del(struct esock *e, int ep, int fd)
{
	for (int i = 0; i < e->nkregs; i++)
		if (e->kregs[i].ep == ep && e->kregs[i].fd == fd) {
			e->kregs[i] = e->kregs[--e->nkregs];
			return;
		}
}

/* under ctl_mu and e->mu: the byte again, for good; each registration
 * gets the program's events and data back (a plain one now) */
static void to_kernel(struct esock *e)
{
	if (!e->umode)
		return;
	struct esock_member *m, *n;
	util_list_for_each_safe(m, n, &e->memberships, elink) {
		struct epoll_event ev = { .events = m->events, .data = m->data };
		if (!REAL(epoll_ctl)(m->set->ep, EPOLL_CTL_MOD, m->fd, &ev))
			kreg_add(e, m->set->ep, m->fd);
		member_free(m);
	}
	e->umode = false;
	atomic_store(&e->uready, false);
	esock__update(e, true); /* the byte, if it is readable */
}

/* under ctl_mu: @s's first member (in *@m) and its socket, NULL when it
 * has none (the membership, and so the socket, lasts while ctl_mu is
 * held) */
static struct esock *first_member(struct esock_set *s, struct esock_member **m)
{
	pthread_mutex_lock(&s->mu);
	*m = util_list_first(&s->members, struct esock_member, slink);
	struct esock *e = *m ? (*m)->e : NULL;
	pthread_mutex_unlock(&s->mu);
	return e;
}

/* under ctl_mu: @fn(socket, member) under the socket's lock for each
 * member of @s, until none is left (@fn ends the membership) */
static void drain_members(struct esock_set *s, void (*fn)(struct esock *, struct esock_member *))
{
	struct esock_member *m;
	struct esock *e;
	while ((e = first_member(s, &m))) {
		pthread_mutex_lock(&e->mu);
		fn(e, m);
		pthread_mutex_unlock(&e->mu);
	}
}

static void member_to_kernel(struct esock *e, struct esock_member *m)
{
	(void)m;
	to_kernel(e); /* (all of the socket's memberships end) */
}

static void member_drop(struct esock *e, struct esock_member *m)
{
	(void)e;
	member_free(m);
}

/* under ctl_mu: every member of @s back to the byte, and its bell out
 * (a wait esock does not answer would return it) */
static void set_to_kernel(struct esock_set *s)
{
	if (s->kernel)
		return;
	s->kernel = true;
	drain_members(s, member_to_kernel);
	bell_off(s);
}

bool esock__ready_known(int fd)
{
	return esock__fd_in_range(fd) && (atomic_load(&set_flags[fd]) || live_set(fd));
}

void esock__ready_epoll_made(int ep)
{
	if (!esock__fd_in_range(ep))
		return;
	esock__ready_drop_set(ep); /* (a set by that number closed unseen) */
	atomic_store(&set_flags[ep], SF_EPOLL);
	atomic_store_explicit(&esock_epoll_any, true, memory_order_relaxed);
}

void esock__ready_kernel_set(int ep)
{
	if (!esock__fd_in_range(ep) || !(atomic_load(&set_flags[ep]) & SF_EPOLL))
		return;
	atomic_fetch_or(&set_flags[ep], SF_WAITED);
	struct esock_set *s = live_set(ep);
	if (!s || s->kernel)
		return;
	int err = errno;
	pthread_mutex_lock(&ctl_mu);
	if ((s = live_set(ep)))
		set_to_kernel(s);
	pthread_mutex_unlock(&ctl_mu);
	errno = err;
}

void esock__ready_kernel(int fd)
{
	esock__ready_kernel_set(fd);
	struct esock *e = esock__peek(fd);
	if (!e || !e->umode || esock__foreign(e))
		return;
	int err = errno;
	pthread_mutex_lock(&ctl_mu);
	pthread_mutex_lock(&e->mu);
	to_kernel(e);
	pthread_mutex_unlock(&e->mu);
	pthread_mutex_unlock(&ctl_mu);
	errno = err;
}

/* under ctl_mu, e->mu: whether a registration of @e with @events in set
 * @ep may stay in user space */
static bool user_ok(const struct esock *e, uint32_t events, int ep)
{
	if (!e->umode || e->quiet)
		return false; /* (on the byte already, for good) */
	if (atomic_load(&set_flags[ep]) != SF_EPOLL)
		return false; /* (not made here, or waited on outside esock) */
	const struct esock_set *s = set_of(ep);
	if (s && !s->dead && s->kernel)
		return false;
	/* (a connect that falls back to plain TCP registers the new
	 * socket with the program's events: esock_fallback.c) */
	return !(events & (EPOLLONESHOT | EPOLLEXCLUSIVE));
}

void esock__ready_lazy(struct esock *e)
{
	if (!atomic_load_explicit(&esock_here, memory_order_relaxed))
		return; /* (nobody would make it readable in a wait) */
	e->umode = true;
	atomic_store(&esock_umode_any, true);
}

/* under the set's mu */
static struct esock_member *member_of(struct esock_set *s, int fd)
{
	return s && fd < s->nbyfd ? s->byfd[fd] : NULL;
}

/* under ctl_mu, e->mu */
static int add(struct esock_set *s, int fd, struct esock *e, const struct epoll_event *ev)
{
	struct esock_member *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	pthread_mutex_lock(&s->mu);
	if (fd >= s->nbyfd) {
		int n = s->nbyfd ? s->nbyfd : 64;
		while (n <= fd)
			n *= 2;
		struct esock_member **b = realloc(s->byfd, (size_t)n * sizeof(*b));
		if (!b) {
			pthread_mutex_unlock(&s->mu);
			free(m);
			return -1;
		}
		memset(b + s->nbyfd, 0, (size_t)(n - s->nbyfd) * sizeof(*b));
		s->byfd = b;
		s->nbyfd = n;
	}
	m->gen = s->gen;
	s->gen = (uint16_t)(s->gen + 1 == 0xffff ? 0 : s->gen + 1);
	struct epoll_event kev = { .events = kernel_events(ev->events),
				   .data.u64 = key_of(m->gen, fd) };
	if (REAL(epoll_ctl)(s->ep, EPOLL_CTL_ADD, fd, &kev)) {
		pthread_mutex_unlock(&s->mu);
		free(m);
		return -1;
	}
	m->set = s;
	m->e = e;
	m->fd = fd;
	m->events = ev->events;
	m->data = ev->data;
	/* readable already: reported once, edge-triggered or not */
	m->seen = atomic_load(&e->arrivals) - 1;
	util_list_add_tail(&s->members, &m->slink);
	s->byfd[fd] = m;
	s->nmembers++;
	pthread_mutex_unlock(&s->mu);
	util_list_add_tail(&e->memberships, &m->elink);
	if (atomic_load(&e->uready))
		queue(m);
	return 0;
}

/* under ctl_mu, e->mu: the registration of a member */
static int modify(struct esock_set *s, struct esock_member *m, struct esock *e,
		  const struct epoll_event *ev)
{
	struct epoll_event kev = { .events = kernel_events(ev->events),
				   .data.u64 = key_of(m->gen, m->fd) };
	if (REAL(epoll_ctl)(s->ep, EPOLL_CTL_MOD, m->fd, &kev))
		return -1;
	pthread_mutex_lock(&s->mu);
	m->events = ev->events;
	m->data = ev->data;
	/* a modification reports a ready socket again, as the kernel's
	 * does */
	m->seen = atomic_load(&e->arrivals) - 1;
	pthread_mutex_unlock(&s->mu);
	if (atomic_load(&e->uready))
		queue(m);
	return 0;
}

int esock__ready_ctl(int ep, int op, int fd, struct esock *e, struct epoll_event *ev, int *rc)
{
	if (!esock__fd_in_range(ep) || !esock__fd_in_range(fd) || (op != EPOLL_CTL_DEL && !ev))
		return 0;
	if (esock__foreign(e))
		return 0; /* (a parent's socket: its registrations are the parent's) */
	if (op == EPOLL_CTL_DEL) {
		struct esock_set *s = live_set(ep);
		if (!s)
			return 0;
		pthread_mutex_lock(&s->mu);
		bool member = member_of(s, fd) != NULL;
		pthread_mutex_unlock(&s->mu);
		if (!member)
			return 0;
	}
	pthread_mutex_lock(&ctl_mu);
	pthread_mutex_lock(&e->mu);
	int done = 1;
	struct esock_set *s = live_set(ep);
	struct esock_member *m = NULL;
	if (s) {
		pthread_mutex_lock(&s->mu);
		m = member_of(s, fd);
		pthread_mutex_unlock(&s->mu);
	}
	if (m && m->e != e) { /* (the number names another socket now) */
		pthread_mutex_lock(&m->e->mu);
		member_free(m);
		pthread_mutex_unlock(&m->e->mu);
		m = NULL;
	}
	switch (op) {
	case EPOLL_CTL_ADD:
		if (m) {
			errno = EEXIST;
			*rc = -1;
		} else if (!user_ok(e, ev->events, ep) || !(s = set_make(ep))) {
			to_kernel(e); /* (a plain registration: the byte, for good) */
			done = 0;
		} else {
			*rc = add(s, fd, e, ev);
		}
		break;
	case EPOLL_CTL_MOD:
		if (!m) {
			done = 0; /* (the plain call: ENOENT, or a registration of the byte's) */
		} else if (!user_ok(e, ev->events, ep)) {
			to_kernel(e);
			done = 0;
		} else {
			*rc = modify(s, m, e, ev);
		}
		break;
	case EPOLL_CTL_DEL:
		if (!m) {
			done = 0;
			break;
		}
		*rc = REAL(epoll_ctl)(ep, EPOLL_CTL_DEL, fd, NULL);
		member_free(m);
		break;
	default:
		done = 0;
	}
	pthread_mutex_unlock(&e->mu);
	pthread_mutex_unlock(&ctl_mu);
	return done;
}

bool esock__ready_set(int ep) { return live_set(ep) != NULL; }

void esock__ready_track(struct esock *e, int ep, int op, int fd)
{
	if (esock__foreign(e) || op == EPOLL_CTL_MOD)
		return;
	pthread_mutex_lock(&e->mu);
	if (op == EPOLL_CTL_ADD)
		kreg_add(e, ep, fd);
	else
		kreg_del(e, ep, fd);
	pthread_mutex_unlock(&e->mu);
}

void esock__ready_forget(int fd, struct esock *e, bool del)
{
	if (esock__foreign(e))
		return; /* (its lock may have been held at the fork) */
	pthread_mutex_lock(&e->mu);
	for (int i = 0; i < e->nkregs;) {
		if (e->kregs[i].fd != fd) {
			i++;
			continue;
		}
		/* (the kernel would report the file under the closed number,
		 * with the program's data, until uwarp closes its copy) */
		if (del)
			REAL(epoll_ctl)(e->kregs[i].ep, EPOLL_CTL_DEL, fd, NULL);
		e->kregs[i] = e->kregs[--e->nkregs];
	}
	bool any = !util_list_empty(&e->memberships);
	pthread_mutex_unlock(&e->mu);
	if (!any)
		return;
	pthread_mutex_lock(&ctl_mu);
	pthread_mutex_lock(&e->mu);
	struct esock_member *m, *n;
	util_list_for_each_safe(m, n, &e->memberships, elink) {
		if (m->fd != fd)
			continue;
		/* The kernel keeps a registration while the file lives (our
		 * copy of the program's end holds it): it goes with the
		 * number, as the program expects of a close. */
		if (del)
			REAL(epoll_ctl)(m->set->ep, EPOLL_CTL_DEL, fd, NULL);
		member_free(m);
	}
	pthread_mutex_unlock(&e->mu);
	pthread_mutex_unlock(&ctl_mu);
}

void esock__ready_drop_set(int ep)
{
	if (!esock__fd_in_range(ep))
		return;
	atomic_store(&set_flags[ep], 0);
	struct esock_set *s = set_of(ep);
	if (!s || s->dead)
		return;
	if (s->owner != esock__pid()) {
		s->dead = true; /* (a parent's: its locks are not ours to take) */
		return;
	}
	pthread_mutex_lock(&ctl_mu);
	drain_members(s, member_drop);
	if (s->bell >= 0) { /* (the set itself is going: no DEL) */
		REAL(close)(s->bell);
		s->bell = -1;
	}
	s->dead = true;
	pthread_mutex_unlock(&ctl_mu);
}

/* user-space events of one call at most (more wait for the next) */
#define TAKE_USER_MAX 256

/* The user-space events of @s into @ev (at most @max), their members in
 * @who. Under its mu. */
static int collect(struct esock_set *s, struct epoll_event *ev, struct esock_member **who, int max)
{
	int n = 0;
	int left = atomic_load(&s->nready); /* (level-triggered ones go to the back) */
	while (n < max && left-- > 0) {
		struct esock_member *m = util_list_first(&s->ready, struct esock_member, rlink);
		if (!m)
			break;
		uint32_t want = m->events & (EPOLLIN | EPOLLRDNORM);
		if (!atomic_load(&m->e->uready) || !want) {
			dequeue(m);
			continue;
		}
		if (m->events & EPOLLET) {
			unsigned a = atomic_load(&m->e->arrivals);
			dequeue(m);
			if (a == m->seen)
				continue;
			m->seen = a;
		} else {
			util_list_del(&m->rlink);
			util_list_add_tail(&s->ready, &m->rlink);
		}
		ev[n].events = want;
		ev[n].data = m->data;
		who[n] = m;
		n++;
	}
	return n;
}

/* under the set's mu: the input events of member @m to report beside a
 * kernel event of its own (an edge-triggered one's new arrival once) */
static uint32_t input_of(struct esock_member *m)
{
	uint32_t want = m->events & (EPOLLIN | EPOLLRDNORM);
	if (!want || !atomic_load(&m->e->uready))
		return 0;
	if (m->events & EPOLLET) {
		unsigned a = atomic_load(&m->e->arrivals);
		if (a == m->seen)
			return 0;
		m->seen = a;
	}
	return want;
}

/* The kernel's @k events at @ev + @n, merged into the @n user-space ones
 * before them (members in @who): a member's key becomes its data, the
 * bell is emptied, a key of no member is dropped. The count of events
 * left. Under the set's mu. */
static int merge(struct esock_set *s, struct epoll_event *ev, struct esock_member **who, int n,
		 int k)
{
	int out = n;
	for (int i = n; i < n + k; i++) {
		struct epoll_event x = ev[i];
		if ((uint32_t)(x.data.u64 >> 32) != key_hi) {
			ev[out++] = x;
			continue;
		}
		uint32_t low = (uint32_t)x.data.u64;
		if (low == BELL_LOW) {
			uint64_t c;
			if (s->bell >= 0 && REAL(read)(s->bell, &c, sizeof(c)) < 0) {
				/* (empty: another waiter emptied it) */
			}
			atomic_store(&s->rung, false);
			/* a ring between the read and now found it rung: the
			 * other waiters hear of what is queued again */
			if (atomic_load(&s->nready) > 0 && atomic_load(&s->waiters) > 1)
				ring(s);
			continue;
		}
		struct esock_member *m = member_of(s, (int)(low & 0xffff));
		if (!m || m->gen != (uint16_t)(low >> 16))
			continue; /* (a registration left behind by a closed copy) */
		x.events &= m->events | EPOLLERR | EPOLLHUP;
		int j = 0;
		while (j < n && who[j] != m)
			j++;
		if (j < n) {
			ev[j].events |= x.events;
			continue;
		}
		/* (end of stream: the kernel says RDHUP; readable is ours) */
		x.events |= input_of(m);
		x.data = m->data;
		if (x.events)
			ev[out++] = x;
	}
	return out;
}

int esock__ready_filter(int ep, struct epoll_event *ev, int n)
{
	struct esock_set *s = live_set(ep);
	if (!s || n <= 0)
		return n;
	pthread_mutex_lock(&s->mu);
	int r = merge(s, ev, NULL, 0, n);
	pthread_mutex_unlock(&s->mu);
	return r;
}

/* the events now, user space's and the kernel's, without a wait */
static int take(struct esock_set *s, struct epoll_event *ev, int max)
{
	struct esock_member *who[TAKE_USER_MAX];
	/* room for the kernel's: one at least, so that a busy stream of
	 * user-space events never starves the set's other descriptors (with
	 * room for one event only, the two take turns) */
	int users = max > 1 ? max - 1 : (s->turn ^= 1);
	if (users > TAKE_USER_MAX)
		users = TAKE_USER_MAX;
	pthread_mutex_lock(&s->mu);
	int n = collect(s, ev, who, users);
	pthread_mutex_unlock(&s->mu);
	if (n >= max)
		return n;
	int k = REAL(epoll_wait)(s->ep, ev + n, max - n, 0);
	if (k < 0)
		return n ? n : -1;
	int r = n;
	if (k > 0) {
		pthread_mutex_lock(&s->mu);
		r = merge(s, ev, who, n, k);
		pthread_mutex_unlock(&s->mu);
	}
	if (!r && !users) { /* (the kernel's turn, and it had nothing) */
		pthread_mutex_lock(&s->mu);
		r = collect(s, ev, who, 1);
		pthread_mutex_unlock(&s->mu);
	}
	return r;
}

static int user_due(void *arg)
{
	struct esock_set *s = arg;
	return atomic_load(&s->nready) > 0;
}

/* The events now: @s's, user space's and the kernel's, or for a set with
 * no socket in user space the kernel's (esock's own taken out, should
 * the set have got its first one meanwhile). */
static int take_now(int ep, struct esock_set *s, struct epoll_event *ev, int max)
{
	if (s)
		return take(s, ev, max);
	int n = REAL(epoll_wait)(ep, ev, max, 0);
	return n > 0 ? esock__ready_filter(ep, ev, n) : n;
}

int esock__ready_wait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	struct esock_set *s = NULL, *was = waiting_on;
	uint64_t deadline = timeout > 0 ? util_now_ns() + (uint64_t)timeout * 1000000u : 0;
	int n;
	for (;;) {
		/* (a set may get its first socket in user space meanwhile:
		 * the wait counts on it from then) */
		if (!s && (s = live_set(ep))) {
			waiting_on = s;
			atomic_fetch_add(&s->waiters, 1);
		}
		n = take_now(ep, s, ev, max);
		if (n != 0 || !timeout)
			break;
		/* the set's descriptor is readable while the kernel has
		 * events for it (the bell among them) */
		struct pollfd p = { ep, POLLIN, 0 };
		struct timespec t;
		if (timeout > 0) {
			uint64_t now = util_now_ns();
			if (now >= deadline)
				break;
			uint64_t left = deadline - now;
			t = (struct timespec){ (time_t)(left / 1000000000u),
					       (long)(left % 1000000000u) };
		}
		int r;
		if (esock__waits_here())
			r = esock__ppoll_here_until(&p, 1, timeout > 0 ? &t : NULL, mask,
						    s ? user_due : NULL, s);
		else
			r = REAL(ppoll)(&p, 1, timeout > 0 ? &t : NULL, mask);
		if (r < 0) {
			n = -1;
			break;
		}
	}
	int err = errno;
	if (s)
		atomic_fetch_sub(&s->waiters, 1);
	waiting_on = was;
	errno = err;
	return n;
}

__attribute__((constructor)) static void ready_init(void)
{
	pthread_atfork(NULL, NULL, child_unlock);
}
