/*
 * esock_policy.c: which sockets the environment puts in DDP mode
 * (libesock-preload.so only; the linked library leaves that to
 * setsockopt), and the server's wait for a client's first bytes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/connect_words.h"
#include "util/ddpmode.h"
#include "esock_internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static struct util_ddpmode mode;
static unsigned peek_ms = UTIL_PEEK_MS_DEFAULT;

static void parse(void)
{
#ifdef ESOCK_PRELOAD
	const char *v = getenv("ESOCK_DDPMODE");
	char why[128];
	if (!util_ddpmode_parse(v, &mode, why, sizeof(why)))
		fprintf(stderr, "esock: ESOCK_DDPMODE='%s' ignored (no socket selected): %s\n", v,
			why);
	if (esock__verbose()) {
		/* one line: what the environment selects */
		char list[UTIL_DDPMODE_PORTS_MAX * 7 + 1] = "";
		for (int i = 0, at = 0; i < mode.nports; i++)
			at += snprintf(list + at, sizeof(list) - (size_t)at, "%s%u", i ? "," : "",
				       mode.ports[i]);
		fprintf(stderr, "esock: pid %d: DDP for %s%s\n", (int)getpid(),
			mode.all      ? "every TCP socket"
			: mode.nports ? "TCP sockets with local or remote port "
				      : "no socket (ESOCK_DDPMODE selects none)",
			list);
	}
#endif
	const char *pm = getenv("ESOCK_PEEK_MS");
	if (!util_ddpmode_peek_ms(pm, &peek_ms))
		fprintf(stderr, "esock: ESOCK_PEEK_MS='%s' ignored: milliseconds, 0 to 60000\n",
			pm);
}

bool esock__env_selects(int fd, const struct sockaddr *peer)
{
	pthread_once(&once, parse);
	if (mode.all)
		return true;
	if (!mode.nports)
		return false;
	if (util_ddpmode_port(&mode, util_sockaddr_port(peer)))
		return true;
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	if (REAL(getsockname)(fd, (struct sockaddr *)&local, &len))
		return false;
	return util_ddpmode_port(&mode, util_sockaddr_port((struct sockaddr *)&local));
}

unsigned esock__peek_ms(void)
{
	pthread_once(&once, parse);
	return peek_ms;
}

bool esock__verbose(void)
{
	static _Atomic int v = -1; /* (every thread finds the same answer) */
	int now = atomic_load_explicit(&v, memory_order_relaxed);
	if (now < 0) {
		const char *s = getenv("ESOCK_VERBOSE");
		now = s && *s && strcmp(s, "0");
		atomic_store_explicit(&v, now, memory_order_relaxed);
	}
	return now;
}

const char *esock__words(int err)
{
	const char *w = util_connect_words(err);
	return w ? w : strerror(err);
}

/* "[ADDR]:PORT" or "ADDR:PORT" */
static void peer_str(const struct sockaddr *a, char *buf, size_t len)
{
	char host[INET6_ADDRSTRLEN] = "?";
	if (a->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)a;
		inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof(host));
		snprintf(buf, len, "[%s]:%d", host, ntohs(s->sin6_port));
		return;
	}
	const struct sockaddr_in *s = (const struct sockaddr_in *)a;
	inet_ntop(AF_INET, &s->sin_addr, host, sizeof(host));
	snprintf(buf, len, "%s:%d", host, ntohs(s->sin_port));
}

void esock__say(int fd, const struct sockaddr *peer, const char *fmt, ...)
{
	if (!esock__verbose())
		return;
	char who[80], what[256];
	peer_str(peer, who, sizeof(who));
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (fd >= 0)
		fprintf(stderr, "esock: pid %d: fd %d to %s: %s\n", (int)getpid(), fd, who, what);
	else
		fprintf(stderr, "esock: pid %d: client %s: %s\n", (int)getpid(), who, what);
}
