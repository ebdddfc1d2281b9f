/*
 * esock_policy.c: which sockets the environment puts in DDP mode
 * (libesock-preload.so only; the linked library leaves that to
 * setsockopt), and the server's wait for a client's first bytes.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>

#include "esock_internal.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool all;
static uint16_t ports[64];
static int nports;
static unsigned peek_ms = ESOCK_PEEK_MS_DEFAULT;

static void parse(void)
{
#ifdef ESOCK_PRELOAD
	const char *v = getenv("ESOCK_DDPMODE");
	if (v && !strcmp(v, "all")) {
		all = true;
	} else if (v) {
		/* a list of ports; anything else in it selects nothing */
		char *copy = strdup(v), *save = NULL;
		for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t && nports < 64;
		     t = strtok_r(NULL, ",", &save)) {
			char *end;
			long p = strtol(t, &end, 10);
			if (*end == '\0' && p > 0 && p < 65536)
				ports[nports++] = (uint16_t)p;
		}
		free(copy);
	}
#endif
	const char *pm = getenv("ESOCK_PEEK_MS");
	if (pm && *pm) {
		char *end;
		long v2 = strtol(pm, &end, 10);
		if (*end == '\0' && v2 >= 0 && v2 <= 60000)
			peek_ms = (unsigned)v2;
	}
}

static int port_of(const struct sockaddr *sa)
{
	if (!sa)
		return -1;
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return -1;
}

static bool listed(int port)
{
	for (int i = 0; i < nports; i++)
		if (ports[i] == port)
			return true;
	return false;
}

bool esock__env_selects(int fd, const struct sockaddr *peer)
{
	pthread_once(&once, parse);
	if (all)
		return true;
	if (!nports)
		return false;
	if (listed(port_of(peer)))
		return true;
	struct sockaddr_storage local;
	socklen_t len = sizeof(local);
	if (REAL(getsockname)(fd, (struct sockaddr *)&local, &len))
		return false;
	return listed(port_of((struct sockaddr *)&local));
}

unsigned esock__peek_ms(void)
{
	pthread_once(&once, parse);
	return peek_ms;
}
