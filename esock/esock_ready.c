/*
 * esock_ready.c: a DDP socket's readability kept in user space for the
 * epoll sets that hold it, answered by esock's epoll_wait.
 *
 * A DDP socket tells the kernel it is readable with a byte in its socket
 * pair, sent when data arrives and drained when the program has read it
 * all: two system calls per request for a request/reply server, a third of
 * what redis's server made per request over DDP (docs/performance.md). A
 * socket the program puts in an epoll set (where servers keep theirs)
 * leaves the byte out: its registration in the kernel's set keeps the
 * program's other events (writable, hang-ups, errors), and esock's
 * epoll_wait adds readable from user space, as the kernel's ready list
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
 * is sent if it is readable. (A wait the library never sees, a raw system
 * call or io_uring, is not covered.)
 *
 * Locks: ctl_mu (registrations made and dropped), then a socket's e->mu,
 * then a set's mu. A member's socket stays alive while it is a member
 * (a descriptor's close drops its registrations first).
 */
#include <errno.h>
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
	int bell;    /* an eventfd in the set, -1: none yet */
	bool kernel; /* waited outside esock: no user mode here */
	int turn;    /* epoll_wait for one event: user space's turn or the kernel's */
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
static _Atomic(struct esock_set *) sets[ESOCK_FD_MAX];
static uint32_t key_hi; /* a kernel registration's data: key_hi << 32 | fd */
#define BELL_FD 0xffffffffu

/* the set this thread waits on (its own wake needs no bell) */
static __thread struct esock_set *waiting_on;

static uint64_t key_of(uint32_t fd) { return (uint64_t)key_hi << 32 | fd; }

static void init_key(void)
{
	if (key_hi)
		return;
	/* upper half of a non-canonical address: no pointer a program
	 * registers has it, and a number would have to be chosen so */
	key_hi = 0xe50c0000u | ((uint32_t)util_now_ns() & 0xffffu);
}

static struct esock_set *set_of(int ep)
{
	if (!esock__fd_in_range(ep))
		return NULL;
	return atomic_load_explicit(&sets[ep], memory_order_acquire);
}

/* under ctl_mu */
static struct esock_set *set_make(int ep)
{
	struct esock_set *s = set_of(ep);
	if (s)
		return s;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	int bell = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (bell >= 0)
		bell = esock__hide(bell);
	struct epoll_event bev = { .events = EPOLLIN, .data.u64 = key_of(BELL_FD) };
	if (bell < 0 || REAL(epoll_ctl)(ep, EPOLL_CTL_ADD, bell, &bev)) {
		if (bell >= 0)
			esock__close(bell);
		free(s);
		return NULL;
	}
	pthread_mutex_init(&s->mu, NULL);
	s->ep = ep;
	s->bell = bell;
	util_list_init(&s->members);
	util_list_init(&s->ready);
	atomic_store_explicit(&sets[ep], s, memory_order_release);
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

static void ring(struct esock_set *s)
{
	if (atomic_exchange(&s->rung, true))
		return;
	uint64_t one = 1;
	if (write(s->bell, &one, sizeof(one)) < 0)
		atomic_store(&s->rung, false);
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

/* under ctl_mu and e->mu: the byte again, for good; each registration
 * gets the program's events and data back */
static void to_kernel(struct esock *e)
{
	e->rkernel = true;
	if (!e->umode)
		return;
	struct esock_member *m, *n;
	util_list_for_each_safe(m, n, &e->memberships, elink) {
		struct epoll_event ev = { .events = m->events, .data = m->data };
		REAL(epoll_ctl)(m->set->ep, EPOLL_CTL_MOD, m->fd, &ev);
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

/* under ctl_mu: every member of @s back to the byte */
static void set_to_kernel(struct esock_set *s)
{
	if (s->kernel)
		return;
	s->kernel = true;
	struct esock_member *m;
	struct esock *e;
	while ((e = first_member(s, &m))) {
		pthread_mutex_lock(&e->mu);
		to_kernel(e);
		pthread_mutex_unlock(&e->mu);
	}
}

void esock__ready_kernel_set(int ep)
{
	struct esock_set *s = set_of(ep);
	if (!s || s->kernel)
		return;
	int err = errno;
	pthread_mutex_lock(&ctl_mu);
	if ((s = set_of(ep)))
		set_to_kernel(s);
	pthread_mutex_unlock(&ctl_mu);
	errno = err;
}

void esock__ready_kernel(int fd)
{
	struct esock *e = esock__peek(fd);
	struct esock_set *s = set_of(fd);
	if ((!e || e->rkernel) && (!s || s->kernel))
		return;
	int err = errno;
	pthread_mutex_lock(&ctl_mu);
	if (e && !esock__foreign(e)) {
		pthread_mutex_lock(&e->mu);
		to_kernel(e);
		pthread_mutex_unlock(&e->mu);
	}
	if ((s = set_of(fd)))
		set_to_kernel(s);
	pthread_mutex_unlock(&ctl_mu);
	errno = err;
}

/* under ctl_mu, e->mu: whether a registration of @e with @events may stay
 * in user space */
static bool user_ok(const struct esock *e, uint32_t events, const struct esock_set *s)
{
	if (e->rkernel || (s && s->kernel) || esock__foreign(e) || e->b < 0 || e->quiet)
		return false;
	if (!atomic_load_explicit(&esock_here, memory_order_relaxed))
		return false; /* (nobody would make it readable in a wait) */
	/* (a connect that falls back to plain TCP registers the new
	 * socket with the program's events: esock_fallback.c) */
	return !(events & (EPOLLONESHOT | EPOLLEXCLUSIVE));
}

/* under ctl_mu and e->mu: @e leaves the byte for user mode */
static void to_user(struct esock *e)
{
	if (e->umode)
		return;
	e->umode = true;
	if (e->rsig) {
		char buf[64];
		while (REAL(recv)(e->a, buf, sizeof(buf), MSG_DONTWAIT) == (ssize_t)sizeof(buf))
			;
		e->rsig = false;
	}
	atomic_store(&e->uready, esock__readable(e));
}

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
	struct epoll_event kev = { .events = kernel_events(ev->events),
				   .data.u64 = key_of((uint32_t)fd) };
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
	util_list_add_tail(&s->members, &m->slink);
	s->byfd[fd] = m;
	s->nmembers++;
	pthread_mutex_unlock(&s->mu);
	to_user(e);
	atomic_store(&esock_umode_any, true);
	util_list_add_tail(&e->memberships, &m->elink);
	/* readable already: reported once, edge-triggered or not */
	m->seen = atomic_load(&e->arrivals) - 1;
	if (atomic_load(&e->uready))
		queue(m);
	return 0;
}

int esock__ready_ctl(int ep, int op, int fd, struct esock *e, struct epoll_event *ev, int *rc)
{
	if (!esock__fd_in_range(ep) || (op != EPOLL_CTL_DEL && !ev))
		return 0;
	struct esock_set *s = set_of(ep);
	if (op == EPOLL_CTL_DEL && !member_of(s, fd))
		return 0;
	pthread_mutex_lock(&ctl_mu);
	init_key();
	pthread_mutex_lock(&e->mu);
	int done = 1;
	s = set_of(ep);
	struct esock_member *m = member_of(s, fd);
	if (m && m->e != e) { /* (the number names another socket now) */
		member_free(m);
		m = NULL;
	}
	switch (op) {
	case EPOLL_CTL_ADD:
		if (!user_ok(e, ev->events, s)) {
			to_kernel(e);
			done = 0;
		} else if (m) {
			errno = EEXIST;
			*rc = -1;
		} else if (!(s = set_make(ep))) {
			to_kernel(e);
			done = 0;
		} else {
			*rc = add(s, fd, e, ev);
		}
		break;
	case EPOLL_CTL_MOD:
		if (!m || !user_ok(e, ev->events, s)) {
			to_kernel(e); /* (a registration of the byte's: the plain call) */
			done = 0;
			break;
		}
		struct epoll_event kev = { .events = kernel_events(ev->events),
					   .data.u64 = key_of((uint32_t)fd) };
		*rc = REAL(epoll_ctl)(ep, EPOLL_CTL_MOD, fd, &kev);
		if (!*rc) {
			pthread_mutex_lock(&s->mu);
			m->events = ev->events;
			m->data = ev->data;
			pthread_mutex_unlock(&s->mu);
			/* a modification reports a ready socket again, as the
			 * kernel's does */
			m->seen = atomic_load(&e->arrivals) - 1;
			if (atomic_load(&e->uready))
				queue(m);
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

bool esock__ready_set(int ep)
{
	struct esock_set *s = set_of(ep);
	return s && !s->kernel && s->nmembers > 0;
}

void esock__ready_forget(int fd, struct esock *e)
{
	pthread_mutex_lock(&e->mu);
	bool any = !util_list_empty(&e->memberships);
	pthread_mutex_unlock(&e->mu);
	if (!any)
		return;
	pthread_mutex_lock(&ctl_mu);
	pthread_mutex_lock(&e->mu);
	struct esock_member *m, *n;
	util_list_for_each_safe(m, n, &e->memberships, elink)
		if (m->fd == fd)
			member_free(m);
	pthread_mutex_unlock(&e->mu);
	pthread_mutex_unlock(&ctl_mu);
}

void esock__ready_drop_set(int ep)
{
	struct esock_set *s = set_of(ep);
	if (!s)
		return;
	pthread_mutex_lock(&ctl_mu);
	struct esock_member *m;
	struct esock *e;
	while ((e = first_member(s, &m))) {
		pthread_mutex_lock(&e->mu);
		member_free(m);
		pthread_mutex_unlock(&e->mu);
	}
	atomic_store_explicit(&sets[ep], NULL, memory_order_release);
	pthread_mutex_unlock(&ctl_mu);
	esock__close(s->bell);
	/* (a thread still waiting on a set being closed is the program's
	 * race, as with the kernel's: the set then lives on) */
	if (!atomic_load(&s->waiters)) {
		free(s->byfd);
		free(s);
	}
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

/* The kernel's @k events at @ev + @n, merged into the @n user-space ones
 * before them (members in @who): a member's key becomes its data, the
 * bell is emptied. The count of events left. Under the set's mu. */
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
		uint32_t fd = (uint32_t)x.data.u64;
		if (fd == BELL_FD) {
			uint64_t c;
			if (read(s->bell, &c, sizeof(c)) < 0) {
				/* (empty: another waiter emptied it) */
			}
			atomic_store(&s->rung, false);
			continue;
		}
		struct esock_member *m = member_of(s, (int)fd);
		if (!m)
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
		if (atomic_load(&m->e->uready))
			x.events |= m->events & (EPOLLIN | EPOLLRDNORM);
		x.data = m->data;
		if (x.events)
			ev[out++] = x;
	}
	return out;
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

int esock__ready_wait(int ep, struct epoll_event *ev, int max, int timeout, const sigset_t *mask)
{
	struct esock_set *s = set_of(ep);
	if (!s)
		return REAL(epoll_pwait)(ep, ev, max, timeout, mask);
	struct esock_set *was = waiting_on;
	waiting_on = s;
	atomic_fetch_add(&s->waiters, 1);
	uint64_t deadline = timeout > 0 ? util_now_ns() + (uint64_t)timeout * 1000000u : 0;
	int n;
	for (;;) {
		n = take(s, ev, max);
		if (n != 0 || !timeout)
			break;
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
			r = esock__ppoll_here_until(&p, 1, timeout > 0 ? &t : NULL, mask, user_due,
						    s);
		else
			r = REAL(ppoll)(&p, 1, timeout > 0 ? &t : NULL, mask);
		if (r < 0) {
			n = -1;
			break;
		}
	}
	int err = errno;
	atomic_fetch_sub(&s->waiters, 1);
	waiting_on = was;
	errno = err;
	return n;
}
