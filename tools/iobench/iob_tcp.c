/*
 * iob_tcp.c: the yardstick: raw TCP, a blocking send of each whole message
 * and blocking reads into one message-sized buffer, as iperf3 moves bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "iobench.h"

static void tcp_tx(int fd, const struct iob_cfg *cfg, const uint8_t *buf, struct iob_stats *st)
{
	iob_stats_begin(st);
	while (!iob_tx_over(st, cfg) && !st->err) {
		for (size_t off = 0; off < cfg->msg;) {
			ssize_t n = send(fd, buf + off, cfg->msg - off, MSG_NOSIGNAL);
			st->syscalls++;
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				st->err = errno;
				break;
			}
			off += (size_t)n;
			st->bytes += (uint64_t)n;
		}
	}
	shutdown(fd, SHUT_WR);
	iob_stats_end(st);
}

static void tcp_rx(int fd, const struct iob_cfg *cfg, const uint8_t *ref, struct iob_stats *st)
{
	uint8_t *dst = malloc(cfg->msg);
	size_t off = 0;
	iob_stats_begin(st);
	while (dst) {
		ssize_t n = read(fd, dst + off, cfg->msg - off);
		st->syscalls++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			st->err = n < 0 ? errno : 0;
			break;
		}
		if (cfg->verify && memcmp(dst + off, ref + off, (size_t)n)) {
			st->err = EBADMSG;
			break;
		}
		st->bytes += (uint64_t)n;
		off = (off + (size_t)n) % cfg->msg;
	}
	if (!dst)
		st->err = ENOMEM;
	iob_stats_end(st);
	free(dst);
}

const struct iob_model iob_tcp = { "tcp", tcp_tx, tcp_rx };
