/*
 * iob_uring.c: completions (io_uring, liburing): the sender's gather lists
 * go as sendmsg with MSG_WAITALL, one in flight while the next is built
 * (a stream socket's sends may not overtake each other, and a link
 * between two lists would break at a short send); the receiver submits
 * the engine's plan as a readv and waits for it (uring), or each large
 * payload as one MSG_WAITALL receive into its place linked to the small
 * read of what follows (waitall). A submission that the socket can take
 * completes inside it; one that must wait is finished by the kernel when
 * the bytes or the room come, with no EAGAIN and no readiness round trip.
 */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "iobench.h"

#if UWARP_HAVE_URING
#include <liburing.h>

#define RING_ENTRIES 8

/* The next completion, counting the system call when it has to wait. */
static int reap(struct io_uring *ring, struct iob_stats *st, uint64_t *tag)
{
	struct io_uring_cqe *cqe;
	int rc;
	if (io_uring_peek_cqe(ring, &cqe)) {
		st->syscalls++;
		while ((rc = io_uring_wait_cqe(ring, &cqe)) == -EINTR)
			st->syscalls++;
		if (rc < 0)
			return rc;
	}
	rc = cqe->res;
	*tag = cqe->user_data;
	io_uring_cqe_seen(ring, cqe);
	return rc;
}

static void send_list(struct io_uring *ring, int fd, struct iob_list *l, struct msghdr *m,
		      struct iob_stats *st)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	int niov;
	memset(m, 0, sizeof(*m));
	m->msg_iov = (struct iovec *)(uintptr_t)iob_list_rest(l, &niov);
	m->msg_iovlen = (size_t)niov;
	io_uring_prep_sendmsg(sqe, fd, m, MSG_NOSIGNAL | MSG_WAITALL);
	io_uring_submit(ring);
	st->syscalls++;
}

static void uring_tx(int fd, const struct iob_cfg *cfg, const uint8_t *buf, struct iob_stats *st)
{
	static __thread struct iob_list lists[2];
	struct iob_list *cur = &lists[0], *next = &lists[1];
	struct io_uring ring;
	struct msghdr m;
	struct iob_src s;
	int rc = io_uring_queue_init(RING_ENTRIES, &ring, 0);
	if (rc < 0) {
		st->err = -rc;
		return;
	}
	iob_src_init(&s, cfg, buf);
	iob_stats_begin(st);
	iob_src_fill(&s, cur);
	send_list(&ring, fd, cur, &m, st);
	while (!st->err) {
		/* build the next list while the kernel sends this one */
		bool more = !iob_tx_over(st, cfg);
		if (more)
			iob_src_fill(&s, next);
		for (;;) {
			uint64_t tag;
			rc = reap(&ring, st, &tag);
			if (rc <= 0) {
				st->err = rc < 0 ? -rc : EPIPE;
				break;
			}
			st->bytes += (uint64_t)rc;
			if (iob_list_wrote(cur, (size_t)rc))
				break;
			send_list(&ring, fd, cur, &m, st); /* (a signal cut it short) */
		}
		if (!more || st->err)
			break;
		struct iob_list *t = cur;
		cur = next;
		next = t;
		send_list(&ring, fd, cur, &m, st);
	}
	shutdown(fd, SHUT_WR);
	iob_stats_end(st);
	io_uring_queue_exit(&ring);
}

/* One plan: a readv, or (waitall and reading in place) the payload with
 * MSG_WAITALL linked to the read of what follows it. The bytes that came,
 * 0 at the end of the stream, or -errno. */
static ssize_t read_plan(struct io_uring *ring, int fd, struct iob_plan *p, bool waitall,
			 struct iob_stats *st)
{
	struct msghdr m[2];
	uint64_t tag;
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);
	if (!waitall || !p->span) {
		io_uring_prep_readv(sqe, fd, p->iov, (unsigned)p->niov, (uint64_t)-1);
		io_uring_submit_and_wait(ring, 1);
		st->syscalls++;
		return reap(ring, st, &tag);
	}
	memset(m, 0, sizeof(m));
	m[0].msg_iov = &p->iov[0];
	m[0].msg_iovlen = 1;
	m[1].msg_iov = &p->iov[1];
	m[1].msg_iovlen = 1;
	io_uring_prep_recvmsg(sqe, fd, &m[0], MSG_WAITALL);
	sqe->flags |= IOSQE_IO_LINK;
	sqe->user_data = 0;
	sqe = io_uring_get_sqe(ring);
	io_uring_prep_recvmsg(sqe, fd, &m[1], 0);
	sqe->user_data = 1;
	io_uring_submit_and_wait(ring, 2);
	st->syscalls++;
	int res[2] = { 0, 0 };
	for (int i = 0; i < 2; i++) {
		int rc = reap(ring, st, &tag);
		res[tag ? 1 : 0] = rc;
	}
	if (res[0] < 0)
		return res[0];
	if ((size_t)res[0] < p->span)
		return res[0]; /* the stream ended; the tail was cancelled */
	return res[1] < 0 ? res[1] : res[0] + res[1];
}

static void rx_run(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st,
		   bool waitall)
{
	struct io_uring ring;
	struct iob_sink k;
	int rc = io_uring_queue_init(RING_ENTRIES, &ring, 0);
	if (rc < 0) {
		st->err = -rc;
		return;
	}
	if (iob_sink_init(&k, cfg, ref)) {
		io_uring_queue_exit(&ring);
		st->err = ENOMEM;
		return;
	}
	iob_stats_begin(st);
	for (;;) {
		struct iob_plan p;
		if (iob_sink_parse(&k)) {
			st->err = k.err;
			break;
		}
		iob_sink_plan(&k, &p);
		ssize_t n = read_plan(&ring, fd, &p, waitall, st);
		if (n == -EINTR)
			continue;
		if (n <= 0) {
			if (n < 0)
				st->err = (int)-n;
			else if (iob_sink_end(&k))
				st->err = k.err;
			break;
		}
		iob_sink_got(&k, &p, (size_t)n);
	}
	st->bytes = k.bytes;
	iob_stats_end(st);
	iob_sink_free(&k);
	io_uring_queue_exit(&ring);
}

static void uring_rx(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st)
{
	rx_run(fd, cfg, ref, st, false);
}

static void waitall_rx(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st)
{
	rx_run(fd, cfg, ref, st, true);
}

const struct iob_model iob_uring = { "uring", uring_tx, uring_rx };
const struct iob_model iob_waitall = { "waitall", uring_tx, waitall_rx };
#else
const struct iob_model iob_uring = { "uring", NULL, NULL };
const struct iob_model iob_waitall = { "waitall", NULL, NULL };
#endif
