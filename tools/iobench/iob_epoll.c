/*
 * iob_epoll.c: readiness, the model libuv gives uwarp's engine
 * (runtime/engine_tx.c, engine_rx.c): non-blocking sendmsg of a gather
 * list and readv by the engine's plan until the socket says EAGAIN, then
 * epoll_wait. The sender turns the loop after each 1 MiB (the engine's
 * UW_TX_BUDGET) and the receiver after 16 reads (UW_RX_ROUNDS), so that a
 * busy connection leaves the others their turn; a buffered read that
 * came back short drained the socket and goes back to epoll_wait at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iobench.h"

#define TX_BUDGET (1u << 20)
#define RX_ROUNDS 16

static int watch(int fd, uint32_t events)
{
	int ep = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event ev = { .events = events };
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (ep >= 0 && epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
		close(ep);
		return -1;
	}
	return ep;
}

static void wait_ready(int ep, struct iob_stats *st)
{
	struct epoll_event ev;
	while (epoll_wait(ep, &ev, 1, -1) < 0 && errno == EINTR)
		st->syscalls++;
	st->syscalls++;
}

static void epoll_tx(int fd, const struct iob_cfg *cfg, const uint8_t *buf, struct iob_stats *st)
{
	static __thread struct iob_list l;
	struct iob_src s;
	int ep = watch(fd, EPOLLOUT);
	size_t turn = 0;
	iob_src_init(&s, cfg, buf);
	iob_stats_begin(st);
	l.bm.b.niov = l.wr_iov = 0;
	while (ep >= 0 && !st->err) {
		if (l.wr_iov == l.bm.b.niov) {
			if (iob_tx_over(st, cfg))
				break;
			iob_src_fill(&s, &l);
		}
		struct msghdr m = { 0 };
		int niov;
		m.msg_iov = (struct iovec *)(uintptr_t)iob_list_rest(&l, &niov);
		m.msg_iovlen = (size_t)niov;
		ssize_t n = sendmsg(fd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
		st->syscalls++;
		if (n > 0) {
			iob_list_wrote(&l, (size_t)n);
			st->bytes += (uint64_t)n;
			if ((turn += (size_t)n) >= TX_BUDGET) {
				turn = 0;
				wait_ready(ep, st); /* the loop's turn */
			}
		} else if (errno == EAGAIN) {
			turn = 0;
			wait_ready(ep, st);
		} else if (errno != EINTR) {
			st->err = errno;
		}
	}
	shutdown(fd, SHUT_WR);
	iob_stats_end(st);
	if (ep >= 0)
		close(ep);
	else
		st->err = errno;
}

/* With lowat, the socket is readable (and its reader woken) only when
 * the payload being read in place is all there (SO_RCVLOWAT): one wake-up
 * and one read per FPDU rather than one per piece TCP delivered. Only
 * bytes certain to come may be waited for; a buffered read waits for one. */
static void set_lowat(int fd, const struct iob_plan *p, int *cur, struct iob_stats *st)
{
	int want = p->span ? (int)p->span : 1;
	if (want == *cur)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &want, sizeof(want));
	st->syscalls++;
	*cur = want;
}

static void rx_run(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st,
		   bool lowat)
{
	int cur_lowat = 1;
	struct iob_sink k;
	int ep = watch(fd, EPOLLIN);
	bool eof = false;
	if (ep < 0 || iob_sink_init(&k, cfg, ref)) {
		st->err = ep < 0 ? errno : ENOMEM;
		if (ep >= 0)
			close(ep);
		return;
	}
	iob_stats_begin(st);
	while (!eof && !st->err) {
		wait_ready(ep, st);
		for (int round = 0; round < RX_ROUNDS; round++) {
			struct iob_plan p;
			if (iob_sink_parse(&k)) {
				st->err = k.err;
				break;
			}
			iob_sink_plan(&k, &p);
			if (lowat)
				set_lowat(fd, &p, &cur_lowat, st);
			ssize_t n = readv(fd, p.iov, p.niov);
			st->syscalls++;
			if (n > 0) {
				iob_sink_got(&k, &p, (size_t)n);
				if (!p.span && (size_t)n < p.want)
					break; /* drained: a read now would say EAGAIN */
			} else if (n == 0) {
				eof = true;
				break;
			} else if (errno == EAGAIN) {
				break;
			} else if (errno != EINTR) {
				st->err = errno;
				break;
			}
		}
		if (!st->err && iob_sink_parse(&k))
			st->err = k.err;
	}
	if (!st->err && iob_sink_end(&k))
		st->err = k.err;
	st->bytes = k.bytes;
	iob_stats_end(st);
	iob_sink_free(&k);
	close(ep);
}

static void epoll_rx(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st)
{
	rx_run(fd, cfg, ref, st, false);
}

static void lowat_rx(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st)
{
	rx_run(fd, cfg, ref, st, true);
}

const struct iob_model iob_epoll = { "epoll", epoll_tx, epoll_rx };
const struct iob_model iob_lowat = { "lowat", epoll_tx, lowat_rx };
