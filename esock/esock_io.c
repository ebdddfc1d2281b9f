/*
 * esock_io.c: the byte stream of a DDP socket. Sends are copied into the
 * send ring and posted as exs sends (a write returns once its bytes are
 * in the ring, as TCP's does once they are in the socket buffer); reads
 * take bytes from the receive chunks, which are posted again once read to
 * their end, in the order the stream fills them.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>

#include "esock_internal.h"

bool esock__nonblocking(const struct esock *e)
{
	int fl = REAL(fcntl)(e->a, F_GETFL);
	return fl >= 0 && (fl & O_NONBLOCK);
}

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
		iov_copy(iov, cnt, at + got,
			 e->rbuf + (size_t)h * ESOCK_RCHUNK + e->roff[h], n, true);
		got += n;
		if (peek) {
			h = (h + 1) % ESOCK_RCHUNKS;
			continue;
		}
		e->roff[h] += n;
		if (e->roff[h] < e->rlen[h])
			break;
		if (!e->eof)
			esock__repost(e, h);
		else
			e->rstate[h] = RC_END;
		h = e->rhead = (h + 1) % ESOCK_RCHUNKS;
	}
	return got;
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
		if (esock__wait(e, e->rcvtimeo_ms) == ETIMEDOUT) {
			if (!got)
				err = EAGAIN;
			break;
		}
	}
	if (got && !peek)
		esock__update(e, false);
	pthread_mutex_unlock(&e->mu);
	if (err) {
		errno = err;
		return -1;
	}
	return (ssize_t)got;
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
		if (e->wr_shut) {
			err = EPIPE;
			break;
		}
		if (e->st == ES_FAILED || e->conn_err) {
			err = e->conn_err == ECONNRESET ? ECONNRESET : EPIPE;
			break;
		}
		size_t space = ESOCK_SBUF - e->sout;
		if (e->st == ES_CONNECTED && space && e->scount < ESOCK_SENDS_MAX) {
			size_t n = total - put;
			if (n > space)
				n = space;
			if (n > ESOCK_SBUF - e->stail)
				n = ESOCK_SBUF - e->stail;
			iov_copy(iov, cnt, put, e->sbuf + e->stail, n, false);
			int slot = (e->shead + e->scount) % ESOCK_SENDS_MAX;
			e->slen[slot] = (uint32_t)n;
			e->sdone[slot] = false;
			esock_inside++;
			ssize_t rc = exs_send(e->exs, e->sbuf + e->stail, n, 0, esock_q,
					      &e->tag_send[slot], e->smh);
			esock_inside--;
			if (rc < 0) {
				err = errno;
				break;
			}
			e->scount++;
			e->sout += n;
			e->stail = (e->stail + n) % ESOCK_SBUF;
			put += n;
			continue;
		}
		if (nb) {
			if (!put)
				err = EAGAIN;
			break;
		}
		if (esock__wait(e, e->sndtimeo_ms) == ETIMEDOUT) {
			if (!put)
				err = EAGAIN;
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
			e->wr_shut = true;
			/* after the sends already posted, the stream ends */
			esock_inside++;
			exs_shutdown(e->exs, SHUT_WR, esock_q, &e->tag_shut);
			esock_inside--;
		}
		esock__update(e, false);
		pthread_cond_broadcast(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
	if (err) {
		errno = err;
		return -1;
	}
	return 0;
}
