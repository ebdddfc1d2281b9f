/*
 * exs_runtime.c: exs_init, the progress thread, and the socket table.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "exs_internal.h"
#include "util/clock.h"
#include "util/env_ms.h"
#include "util/evfd.h"

struct exs_rt exs_rt = { .lock = PTHREAD_MUTEX_INITIALIZER,
			 .sync_cv = PTHREAD_COND_INITIALIZER,
			 .queues = UTIL_LIST_INIT(exs_rt.queues),
			 .socks = UTIL_LIST_INIT(exs_rt.socks),
			 .graveyard = UTIL_LIST_INIT(exs_rt.graveyard),
			 .pending = UTIL_LIST_INIT(exs_rt.pending),
			 .plains = UTIL_LIST_INIT(exs_rt.plains),
			 .ddp_marks = UTIL_LIST_INIT(exs_rt.ddp_marks),
			 .wake_fd = -1 };

/* Room for every connected socket's send and control completions. */

int exs__ready(void)
{
	if (exs_rt.started)
		return 0;
	errno = EINVAL;
	return -1;
}

static _Thread_local bool on_progress_thread;
/* this thread runs a round of the progress thread's work (exs_here.c) */
static _Thread_local bool in_round;

bool exs__on_progress_thread(void) { return on_progress_thread || in_round; }

void exs__lock(void) { util_handoff_lock(&exs_rt.handoff, &exs_rt.lock); }

void exs__lock_taken(void) { util_handoff_taken(&exs_rt.handoff); }

bool exs__trylock(void)
{
	if (pthread_mutex_trylock(&exs_rt.lock))
		return false;
	util_handoff_taken(&exs_rt.handoff);
	return true;
}

void exs__kick(void)
{
	if (exs__on_progress_thread())
		return; /* it moves the data when it is done */
	/* manual progress: what was posted goes out now, from this thread */
	uw_poll_cq(exs_rt.cq, 0, NULL);
	/* that is progress too: a program that waits in exs_ppoll_here and
	 * answers a batch of requests between two waits keeps the lease for
	 * as long as it answers (the progress thread coming back meanwhile
	 * would contend for the lock at every post) */
	uint64_t now = util_now_ns();
	if (now < exs_rt.lease.until)
		util_lease_take(&exs_rt.lease, now);
	/* the completions and the rest are the progress thread's, unless it
	 * stands back for a thread that waits in exs_ppoll_here: that one
	 * takes them on its next round (or the progress thread, once the
	 * lease is out) */
	if (exs_rt.sleeping && !exs_rt.standing_back)
		exs__wake();
}

bool exs__tx_may_run(const struct exs_sock *s)
{
	return s->flow != EXS_FLOW_RDMA || !on_progress_thread || exs_rt.app_inside > 0;
}

bool exs__may_hold(void) { return !on_progress_thread; }

void exs__held(void)
{
	if (!exs_rt.held_at)
		exs_rt.held_at = util_now_ns();
}

void exs__flush_held(void)
{
	if (!exs_rt.held_at)
		return;
	uw_flush_sends(exs_rt.ctx);
	exs_rt.held_at = 0;
}

void exs__idle_held(void)
{
	if (exs_rt.idle_at)
		return;
	exs_rt.idle_at = util_now_ns();
	/* (a progress thread asleep without a bound learns of the lease) */
	if (exs_rt.sleeping)
		exs__wake();
}

void exs__flush_idle(void)
{
	if (!exs_rt.idle_at)
		return;
	exs_rt.idle_at = 0;
	struct exs_sock *s, *next;
	util_list_for_each_safe(s, next, &exs_rt.socks, link)
		if (s->idle_held)
			exs__stream_flush_idle(s);
}

void exs__app_progress(void)
{
	struct exs_sock *s, *next;
	/* (progress may free s, and no other socket) */
	util_list_for_each_safe(s, next, &exs_rt.socks, link) {
		if (s->flow == EXS_FLOW_RDMA && s->type == SOCK_STREAM && s->st == S_CONNECTED &&
		    !util_list_empty(&s->sends) && !exs__op_last(&s->sends)->posted)
			exs__progress(s);
	}
}

void exs__wake(void) { util_evfd_raise(exs_rt.wake_fd); }

void exs__changed(void)
{
	for (int i = 0; i < exs_rt.npollers; i++)
		util_evfd_raise(exs_rt.pollers[i]);
}

struct exs_sock *exs__sock(int fd)
{
	struct exs_sock *s;
	util_list_for_each(s, &exs_rt.socks, link)
		if ((s->fd == fd || (s->alias == fd + 1 && s->st != S_NEW && s->st != S_PENDING)) &&
		    !s->closing)
			return s; /* (an accepted system socket still sorting is the system's) */
	return NULL;
}

/* A socket that is done leaves the table at once, but its memory, QP and
 * id go only when the progress thread reaps them between rounds: the
 * code that finished it (a completion, a pump, a connection event) may
 * still be looking at it, and so may the completions taken with it. */
void exs__sock_free(struct exs_sock *s)
{
	util_list_del(&s->link);
	util_list_del(&s->ready_link); /* (a listener's ready one, closed with it) */
	util_list_del(&s->pending_link);
	s->pending = false;
	if (s->fd >= 0 && s->fd < exs_rt.nby_fd && exs_rt.by_fd[s->fd] == s)
		exs_rt.by_fd[s->fd] = NULL;
	if (s->linger_deadline) {
		s->linger_deadline = 0;
		exs_rt.lingering--;
	}
	s->dead = true;
	if (s->id)
		s->id->context_ptr = NULL; /* events still queued for it find no socket */
	util_list_add_head(&exs_rt.graveyard, &s->link);
	exs__changed();
	exs__wake();
}

static void reap(void)
{
	struct exs_sock *s;
	while ((s = util_list_first(&exs_rt.graveyard, struct exs_sock, link))) {
		util_list_del(&s->link);
		exs__windows_free(s); /* (bound to its QP) */
		if (s->ring_mw)
			uw_dealloc_mw(s->ring_mw); /* before the region under it */
		if (s->qp) {
			uw_destroy_qp(s->qp); /* its flushed completions name no QP now */
			exs_rt.nconns--;
		}
		if (s->id)
			uw_cm_destroy_id(s->id);
		if (s->ctl_mr)
			uw_dereg_mr(s->ctl_mr);
		if (s->ring_mr)
			uw_dereg_mr(s->ring_mr);
		free(s->ctl_buf);
		free(s->ring);
		free(s->fl);
		free(s->sp_adv);
		exs__stream_free(s);
		util_sys_close(s->fd);
		free(s);
	}
}

/* One completion at a time: handling one may free a socket and destroy
 * its QP, and uwarp then clears the QP from the completions still in the
 * CQ, not from copies already taken. @queued takes only what is in the CQ
 * already; else an empty CQ first moves what the network has. */
static bool one_wc(bool queued)
{
	struct uw_wc wc;
	if ((queued ? uw_poll_cq_queued(exs_rt.cq, 1, &wc) : uw_poll_cq(exs_rt.cq, 1, &wc)) != 1)
		return false;
	exs__on_wc(&wc);
	return true;
}

void exs__drain_cq(void)
{
	while (one_wc(false))
		;
}

bool exs__round(void)
{
	bool was = in_round;
	in_round = true;
	bool work = false;
	struct uw_cm_event *e;
	/* The connection events' look moves what the network has (one run of
	 * the loop: its events before the completions that follow them); the
	 * completions are then taken as they are. Taking them with
	 * uw_poll_cq ran the loop a second time each round, for a system
	 * call that found what the first had just read: a preloaded redis
	 * server spent 9% less CPU per request without it
	 * (docs/performance.md). */
	while (!uw_cm_get_event_timeout(exs_rt.cm, &e, 0)) {
		exs__on_cm(e);
		work = true;
	}
	int n = 0;
	while (n < 256 && one_wc(true))
		n++;
	exs__progress_pending();
	exs__run_notifies();
	in_round = was;
	return work || n > 0;
}

/* Arm the CQ for the sleep to come, and handle what came before. */
static void arm(void)
{
	uw_req_notify_cq(exs_rt.cq, 0);
	exs__drain_cq(); /* what came before the arming */
	exs__progress_pending();
	exs__run_notifies();
}

/* After a sleep: take the completion channel's events. */
static void disarm(void)
{
	struct uw_cq *fired;
	while (!uw_get_cq_event(exs_rt.cc, &fired, NULL))
		uw_ack_cq_events(fired, 1);
}

/* The earliest deadline of a socket's lingering close (ms clock): 0 when
 * one has just run out (that socket is aborted), UINT64_MAX when none
 * lingers (a server's thousand connections are walked only while one
 * does) */
static uint64_t socks_linger(uint64_t now)
{
	uint64_t first = UINT64_MAX;
	if (!exs_rt.lingering)
		return first;
	struct exs_sock *s;
	util_list_for_each(s, &exs_rt.socks, link) {
		if (!s->linger_deadline)
			continue;
		if (s->linger_deadline <= now) {
			s->linger_deadline = 0;
			exs_rt.lingering--;
			exs__abort(s, ETIMEDOUT);
			return 0;
		}
		if (s->linger_deadline < first)
			first = s->linger_deadline;
	}
	return first;
}

/* The earliest deadline of a lingering close, as a poll timeout. */
static int linger_timeout(void)
{
	uint64_t now = util_now_ms(), first = socks_linger(now);
	if (!first)
		return 0;
	int plain = exs__plain_linger(now);
	if (plain >= 0 && now + (uint64_t)plain < first)
		first = now + (uint64_t)plain;
	return first == UINT64_MAX ? -1 : (int)(first - now);
}

static void *progress_thread(void *arg)
{
	on_progress_thread = true;
	pthread_setname_np(pthread_self(), "exs-progress"); /* (top -H, gdb, perf) */
	util_handoff_init(&exs_rt.handoff);                 /* the offers are this thread's */
	uint64_t next_linger_check = 0;
	struct pollfd fixed[3], *pf = fixed;
	int npf = 3;
	bool asked = false;   /* woken on purpose, by the system sockets, or by the CQ */
	bool rounded = false; /* a round since the last sleep */
	pthread_mutex_lock(&exs_rt.lock);
	for (;;) {
		reap();
		/* an advert a program's thread held for its send (MSG_MORE)
		 * waits a lease at most: its send, or its next wait, normally
		 * comes within microseconds; a younger one is left to it */
		if (exs_rt.held_at && util_now_ns() - exs_rt.held_at >= UTIL_LEASE_NS)
			exs__flush_held();
		/* so does an IDLE that waits for the program to post again */
		if (exs_rt.idle_at && util_now_ns() - exs_rt.idle_at >= UTIL_LEASE_NS)
			exs__flush_idle();
		uint64_t now = util_now_ms();
		if (now >= next_linger_check) {
			/* also on busy passes: other sockets' traffic must not
			 * stretch a close past EXS_LINGER_MS */
			linger_timeout();
			next_linger_check = now + 100;
		}
		/* A program's thread that waits in exs_ppoll_here moves the
		 * data itself (util/progress_lease.h): this thread then
		 * leaves the connections to it, or both would wake for every
		 * message and contend for the lock, and looks again when the
		 * lease may be out. It still reaps, and it still does a round
		 * when asked to (exs__wake: work that a program's call left
		 * for it) or when the system sockets moved: work due outside
		 * the connections' own completions, which no wait of the
		 * program's would see. */
		uint64_t now_ns = util_now_ns();
		uint64_t back = util_lease_engine_waits(&exs_rt.lease, now_ns);
		bool round = !back || asked;
		asked = false;
		rounded |= round;
		if (round && exs__round()) {
			/* A mutex lets the thread that unlocks take it straight
			 * back: with completions always coming, the application
			 * waited tens of milliseconds for its events (an ES-API
			 * receiver reposted its receives, and advertised them,
			 * only when the sender paused; with the paper's rules and
			 * 16 receives for 8 sends: 16 direct transfers, then the
			 * ring for good). A thread that waits gets it now. */
			util_handoff_offer(&exs_rt.handoff, &exs_rt.lock, 1);
			continue;
		}
		/* at least five times a second, for the lingering closes */
		int timeout = linger_timeout();
		if (timeout < 0 || timeout > 200)
			timeout = 200;
		exs_rt.standing_back = back != 0;
		if (back && rounded) /* what the rounds posted last goes out */
			uw_poll_cq(exs_rt.cq, 0, NULL);
		rounded = false;
		if (back) {
			int ms = (int)((back - now_ns + 999999) / 1000000);
			if (ms < timeout)
				timeout = ms;
		} else {
			arm();
			/* uwarp's own timers (the MPA timeouts) run only inside
			 * its calls with manual progress */
			int t = uw_progress_timeout(exs_rt.ctx);
			if (t >= 0 && t < timeout)
				timeout = t;
		}
		/* and the system sockets with operations waiting */
		int want = 3 + exs__plain_count();
		if (want > npf) {
			/* (without the memory, the sockets that do not fit
			 * move when the program calls) */
			struct pollfd *more = malloc((size_t)want * 2 * sizeof(*pf));
			if (more) {
				if (pf != fixed)
					free(pf);
				pf = more;
				npf = want * 2;
			}
		}
		/* back when the advert or IDLE held has waited a lease */
		uint64_t since[] = { exs_rt.held_at, exs_rt.idle_at };
		for (int i = 0; i < 2; i++) {
			if (!since[i])
				continue;
			uint64_t due = since[i] + UTIL_LEASE_NS, t = util_now_ns();
			int ms = due > t ? (int)((due - t + 999999) / 1000000) : 0;
			if (timeout < 0 || ms < timeout)
				timeout = ms;
		}
		/* (poll(2) passes over a negative descriptor) */
		pf[0] = (struct pollfd){ back ? -1 : exs_rt.cc->fd, POLLIN, 0 };
		pf[1] = (struct pollfd){ back ? -1 : exs_rt.cm->fd, POLLIN, 0 };
		pf[2] = (struct pollfd){ exs_rt.wake_fd, POLLIN, 0 };
		int nplain = exs__plain_pollfds(pf + 3, npf - 3);
		exs_rt.sleeping = true;
		pthread_mutex_unlock(&exs_rt.lock);
		util_sys_poll(pf, (nfds_t)(3 + nplain), timeout);
		pthread_mutex_lock(&exs_rt.lock);
		exs_rt.sleeping = false;
		exs_rt.standing_back = false;
		if (!back) {
			/* this thread takes the CQ's notification: a round
			 * follows whatever the lease says now */
			disarm();
			asked = true;
		}
		asked = pf[2].revents != 0;
		if (asked)
			util_evfd_lower(exs_rt.wake_fd);
		for (int i = 0; i < nplain; i++)
			asked |= pf[3 + i].revents != 0;
		exs__plain_ready(pf + 3, nplain);
	}
	return NULL;
}

int exs_init(int version)
{
	if (version != EXS_VERSION) {
		errno = EINVAL;
		return -1;
	}
	exs__lock();
	if (exs_rt.started) {
		pthread_mutex_unlock(&exs_rt.lock);
		return 0;
	}
	int err = ENOMEM;
	exs_rt.ctx = uw_open(NULL);
	if (!exs_rt.ctx)
		goto fail;
	exs_rt.pd = uw_alloc_pd(exs_rt.ctx);
	exs_rt.cc = exs_rt.pd ? uw_create_comp_channel(exs_rt.ctx) : NULL;
	exs_rt.cq = exs_rt.cc ? uw_create_cq(exs_rt.ctx, EXS_CQ_START, NULL, exs_rt.cc) : NULL;
	exs_rt.cm = exs_rt.cq ? uw_cm_create_channel(exs_rt.ctx) : NULL;
	if (!exs_rt.cm)
		goto fail;
	if (uw_comp_channel_nonblock(exs_rt.cc, 1) || uw_cm_channel_nonblock(exs_rt.cm, 1))
		goto fail;
	exs_rt.wake_fd = exs__eventfd();
	if (exs_rt.wake_fd < 0) {
		err = errno;
		goto fail;
	}
	exs_rt.spin_ns =
		(uint64_t)util_env_uint("exs", "UWARP_SPIN_US", "microseconds", 20, 0, 1000000) *
		1000u;
	err = pthread_create(&exs_rt.thread, NULL, progress_thread, NULL);
	if (err)
		goto fail;
	exs_rt.started = true;
	pthread_mutex_unlock(&exs_rt.lock);
	return 0;
fail:
	if (exs_rt.wake_fd >= 0)
		util_sys_close(exs_rt.wake_fd);
	exs_rt.wake_fd = -1;
	if (exs_rt.cm)
		uw_cm_destroy_channel(exs_rt.cm);
	if (exs_rt.cq)
		uw_destroy_cq(exs_rt.cq);
	if (exs_rt.cc)
		uw_destroy_comp_channel(exs_rt.cc);
	if (exs_rt.pd)
		uw_dealloc_pd(exs_rt.pd);
	if (exs_rt.ctx)
		uw_close(exs_rt.ctx);
	exs_rt.cm = NULL;
	exs_rt.cq = NULL;
	exs_rt.cc = NULL;
	exs_rt.pd = NULL;
	exs_rt.ctx = NULL;
	pthread_mutex_unlock(&exs_rt.lock);
	errno = err;
	return -1;
}

static int (*_Atomic fd_claim)(int fd);

void exs_set_fd_claim(int (*claimed)(int fd)) { fd_claim = claimed; }

bool exs__fd_claims(void) { return fd_claim != NULL; }

bool exs__fd_claimed(int fd)
{
	int (*claimed)(int) = fd_claim;
	return claimed && claimed(fd) > 0;
}

static _Atomic int fd_floor;

void exs_set_fd_floor(int floor) { fd_floor = floor > 0 ? floor : 0; }

int exs__eventfd(void) { return exs__fd_high(util_evfd_open()); }

int exs__fd_high(int fd)
{
	int floor = fd_floor;
	if (fd < 0 || !floor || fd >= floor)
		return fd;
	int high = util_sys_fcntl(fd, F_DUPFD_CLOEXEC, floor);
	if (high < 0)
		return fd; /* no room up there: a low number still works */
	util_sys_close(fd);
	return high;
}
