/*
 * esock_io.c: the byte stream of a DDP socket. Sends are copied into the
 * send ring and posted as exs sends (a write returns once its bytes are
 * in the ring, as TCP's does once they are in the socket buffer); reads
 * take bytes from the receive chunks, which are posted again once read to
 * their end, in the order the stream fills them.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "esock_internal.h"

bool esock__nonblocking(const struct esock *e) { return e->nonblock; }

static size_t iov_total(const struct iovec *iov, int cnt)
{
	size_t t = 0;
	for (int i = 0; i < cnt; i++)
		t += iov[i].iov_len;
	return t;
}

/* copy @n bytes between @buf and the iovec's bytes from @off on */
static void iov_copy(const struct iovec *iov, int cnt, size_t off, void *buf, size_t n, bool to_iov)
{
	uint8_t *p = buf;
	for (int i = 0; i < cnt && n; i++) {
		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		size_t k = iov[i].iov_len - off;
		if (k > n)
			k = n;
		uint8_t *base = (uint8_t *)iov[i].iov_base + off;
		if (to_iov)
			memcpy(base, p, k);
		else
			memcpy(p, base, k);
		p += k;
		n -= k;
		off = 0;
	}
}

size_t esock__readable_bytes(struct esock *e)
{
	size_t n = 0;
	for (int k = 0, h = e->rhead; k < ESOCK_RCHUNKS && e->rstate[h] == RC_FILLED;
	     k++, h = (h + 1) % ESOCK_RCHUNKS)
		n += e->rlen[h] - e->roff[h];
	return n;
}

size_t esock__take(struct esock *e, const struct iovec *iov, int cnt, size_t at, size_t want,
		   bool peek)
{
	size_t got = 0;
	int h = e->rhead;
	for (int k = 0; k < ESOCK_RCHUNKS && got < want && e->rstate[h] == RC_FILLED; k++) {
		size_t n = e->rlen[h] - e->roff[h];
		if (n > want - got)
			n = want - got;
		iov_copy(iov, cnt, at + got, e->rbuf + (size_t)h * ESOCK_RCHUNK + e->roff[h], n,
			 true);
		got += n;
		if (peek) {
			h = (h + 1) % ESOCK_RCHUNKS;
			continue;
		}
		e->roff[h] += n;
		if (e->roff[h] < e->rlen[h])
			break;
		if (!e->eof) {
			e->rstate[h] = RC_FREE;
			e->rfree++;
		} else {
			e->rstate[h] = RC_END;
		}
		h = e->rhead = (h + 1) % ESOCK_RCHUNKS;
	}
	/* half the chunks wait: the progress thread saw no completion since,
	 * so the peer has nothing more to send for now; post them here */
	if (e->rfree >= ESOCK_RCHUNKS / 2)
		esock__repost_free(e, 0);
	return got;
}

/* A call that was waiting on a connecting socket whose peer turned out not
 * to be iWARP: it goes on on the plain connection now under the number
 * (esock_fallback.c). Called with e->mu released. */
static ssize_t on_plain(struct esock *e, const struct iovec *iov, int cnt, int flags, bool send)
{
	int fd = e->conn_fd;
	struct esock *now = esock__get(fd); /* makes the connection if still due */
	if (now) {
		pthread_mutex_lock(&now->mu);
		errno = now->conn_err ? now->conn_err : ENOTCONN;
		pthread_mutex_unlock(&now->mu);
		return -1;
	}
	struct msghdr m = { .msg_iov = (struct iovec *)iov, .msg_iovlen = (size_t)cnt };
	return send ? REAL(sendmsg)(fd, &m, flags) : REAL(recvmsg)(fd, &m, flags);
}

ssize_t esock__recv(struct esock *e, const struct iovec *iov, int cnt, int flags)
{
	if (esock__foreign(e)) {
		errno = ENOTCONN;
		return -1;
	}
	if (flags & MSG_OOB) {
		errno = EOPNOTSUPP;
		return -1;
	}
	size_t total = iov_total(iov, cnt);
	bool nb = (flags & MSG_DONTWAIT) || esock__nonblocking(e);
	bool peek = flags & MSG_PEEK;
	pthread_mutex_lock(&e->mu);
	size_t got = 0;
	int err = 0;
	while (total) {
		if (e->st == ES_FALLBACK || e->fell_back) {
			pthread_mutex_unlock(&e->mu);
			return on_plain(e, iov, cnt, flags, false);
		}
		/* (bytes go to pending asynchronous receives first) */
		if (e->st != ES_CONNECTING && !e->arecv)
			got += esock__take(e, iov, cnt, got, total - got, peek);
		if (got == total || (got && (peek || !(flags & MSG_WAITALL))))
			break;
		if (e->st == ES_FAILED || (e->conn_err && e->rstate[e->rhead] != RC_FILLED)) {
			if (!got)
				err = e->conn_err ? e->conn_err : ENOTCONN;
			break;
		}
		if ((e->rd_shut || e->eof || e->rstate[e->rhead] == RC_END) && !e->arecv)
			break; /* the end of the stream: what there was, or 0 */
		if (nb) {
			if (!got)
				err = EAGAIN;
			break;
		}
		int w = esock__wait(e, e->rcvtimeo_ms);
		if (w) {
			/* what came before the timeout or the signal is the call's
			 * result, as recv(2) returns it */
			if (!got)
				err = w == ETIMEDOUT ? EAGAIN : w;
			break;
		}
	}
	if (got && !peek)
		esock__update(e, false);
	pthread_mutex_unlock(&e->mu);
	if (err) {
		/* A program that polls a non-blocking socket in a loop keeps a
		 * CPU the progress thread, which brings its bytes, may need
		 * (rsockets programs do: rstream's default): an empty read
		 * gives it up, as an empty ibv_poll_cq does (rdma/). */
		if (err == EAGAIN && nb)
			sched_yield();
		errno = err;
		return -1;
	}
	return (ssize_t)got;
}

/* Post the ring's unposted bytes, in pieces of at most ESOCK_SEND_MAX
 * that do not wrap; then a shutdown or close that waited for them. */
bool esock__settle(struct esock *e)
{
	/* Chunks the program has read go back first, their adverts held for
	 * the data (MSG_MORE): one segment for both (a server's request freed
	 * the chunk its reply now follows), not one of their own at the next
	 * completion: redis GET 15.9 k to 25.2 k requests/s (docs/performance.md). */
	if (e->sunposted && e->rfree)
		esock__repost_free(e, MSG_MORE);
	while (e->sunposted && e->scount < ESOCK_SENDS_MAX && !e->conn_err) {
		size_t at = (e->stail + ESOCK_SBUF - e->sunposted) % ESOCK_SBUF;
		size_t n = e->sunposted;
		if (n > ESOCK_SBUF - at)
			n = ESOCK_SBUF - at;
		if (n > ESOCK_SEND_MAX)
			n = ESOCK_SEND_MAX;
		int slot = (e->shead + e->scount) % ESOCK_SENDS_MAX;
		e->slen[slot] = (uint32_t)n;
		e->sdone[slot] = false;
		ssize_t rc =
			exs_send(e->exs, e->sbuf + at, n, 0, esock_q, &e->tag_send[slot], e->smh);
		if (rc < 0) {
			/* the connection is gone: what was written is lost, as
			 * a reset loses TCP's socket buffer */
			e->conn_err = e->so_error = errno;
			break;
		}
		e->scount++;
		e->sunposted -= n;
	}
	bool flushed = !e->sunposted || e->conn_err;
	if (e->shut_due && flushed) {
		e->shut_due = false;
		exs_shutdown(e->exs, SHUT_WR, esock_q, &e->tag_shut);
	}
	if (e->close_due && flushed) {
		e->close_due = false;
		int rc = exs_close(e->exs, esock_q, &e->tag_close);
		return rc != 0;
	}
	return false;
}

/* copy @n bytes of the iovec from @off on into the ring at its tail */
static void ring_put(struct esock *e, const struct iovec *iov, int cnt, size_t off, size_t n)
{
	/* An empty ring starts again at its beginning: a request/reply
	 * connection then writes the same few warm pages, where walking
	 * the 2 MiB ring touched a new page every 4 KiB sent (a page fault
	 * each on first touch: memcached's server spent 4% of its cycles
	 * setting page-table entries from this copy). */
	if (!e->sout)
		e->stail = 0;
	size_t first = ESOCK_SBUF - e->stail < n ? ESOCK_SBUF - e->stail : n;
	iov_copy(iov, cnt, off, e->sbuf + e->stail, first, false);
	if (first < n)
		iov_copy(iov, cnt, off + first, e->sbuf, n - first, false);
	e->stail = (e->stail + n) % ESOCK_SBUF;
	e->sout += n;
	e->sunposted += n;
}

ssize_t esock__send(struct esock *e, const struct iovec *iov, int cnt, int flags)
{
	int err = 0;
	size_t put = 0;
	if (esock__foreign(e)) {
		err = EPIPE;
		goto out;
	}
	if (flags & MSG_OOB) {
		errno = EOPNOTSUPP;
		return -1;
	}
	size_t total = iov_total(iov, cnt);
	bool nb = (flags & MSG_DONTWAIT) || esock__nonblocking(e);
	pthread_mutex_lock(&e->mu);
	while (put < total) {
		if (e->st == ES_FALLBACK || e->fell_back) {
			pthread_mutex_unlock(&e->mu);
			return on_plain(e, iov, cnt, flags, true);
		}
		if (e->wr_shut) {
			err = EPIPE;
			break;
		}
		if (e->st == ES_FAILED || e->conn_err) {
			err = e->conn_err == ECONNRESET ? ECONNRESET : EPIPE;
			break;
		}
		size_t space = ESOCK_SBUF - e->sout;
		if (e->st == ES_CONNECTED && space) {
			/* Into the ring; posted at once while few sends are out,
			 * else by the completion that brings the next room (one
			 * larger send for several writes, and the program's
			 * thread stays out of the ES-API, whose lock the progress
			 * thread holds while it works). */
			size_t n = total - put < space ? total - put : space;
			ring_put(e, iov, cnt, put, n);
			put += n;
			if (e->scount < ESOCK_SENDS_EAGER)
				esock__settle(e); /* (no close is due: a descriptor names it) */
			continue;
		}
		if (nb) {
			if (!put)
				err = EAGAIN;
			break;
		}
		int w = esock__wait(e, e->sndtimeo_ms);
		if (w) {
			if (!put)
				err = w == ETIMEDOUT ? EAGAIN : w;
			break;
		}
	}
	esock__update(e, false);
	pthread_mutex_unlock(&e->mu);
out:
	if (put)
		return (ssize_t)put;
	if (err == EPIPE && !(flags & MSG_NOSIGNAL))
		pthread_kill(pthread_self(), SIGPIPE);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}

int esock__shutdown(struct esock *e, int how)
{
	if (esock__foreign(e)) {
		errno = ENOTCONN;
		return -1;
	}
	if (how != SHUT_RD && how != SHUT_WR && how != SHUT_RDWR) {
		errno = EINVAL;
		return -1;
	}
	pthread_mutex_lock(&e->mu);
	int err = 0;
	if (e->st != ES_CONNECTED) {
		err = ENOTCONN;
	} else {
		if (how != SHUT_WR)
			e->rd_shut = true;
		if (how != SHUT_RD && !e->wr_shut) {
			/* after the bytes already written, the stream ends */
			e->wr_shut = true;
			e->shut_due = true;
			esock__settle(e);
		}
		esock__update(e, false);
		esock__wake(e);
	}
	pthread_mutex_unlock(&e->mu);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
