/*
 * ddpmode.c: reading ESOCK_DDPMODE's value (pure).
 */
#include "util/ddpmode.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool separator(char c) { return c == ',' || isspace((unsigned char)c); }

bool util_ddpmode_parse(const char *v, struct util_ddpmode *m, char *why, size_t whylen)
{
	*m = (struct util_ddpmode){ 0 };
	if (!v)
		return true;
	const char *p = v;
	while (separator(*p))
		p++;
	size_t n = 0;
	while (p[n] && !separator(p[n]))
		n++;
	if (n == 3 && !strncasecmp(p, "all", 3)) {
		const char *rest = p + n;
		while (separator(*rest))
			rest++;
		if (*rest) {
			snprintf(why, whylen, "'all' and more");
			return false;
		}
		m->all = true;
		return true;
	}
	while (*p) {
		n = 0;
		while (p[n] && !separator(p[n]))
			n++;
		char *end;
		long port = strtol(p, &end, 10);
		if (end != p + n || !isdigit((unsigned char)*p) || port < 1 || port > 65535) {
			snprintf(why, whylen, "'%.*s' is not a port (1 to 65535)", (int)n, p);
			*m = (struct util_ddpmode){ 0 };
			return false;
		}
		if (m->nports == UTIL_DDPMODE_PORTS_MAX) {
			snprintf(why, whylen, "more than %d ports", UTIL_DDPMODE_PORTS_MAX);
			*m = (struct util_ddpmode){ 0 };
			return false;
		}
		m->ports[m->nports++] = (uint16_t)port;
		p += n;
		while (separator(*p))
			p++;
	}
	return true;
}

bool util_ddpmode_port(const struct util_ddpmode *m, int port)
{
	if (m->all)
		return true;
	for (int i = 0; i < m->nports; i++)
		if (m->ports[i] == port)
			return true;
	return false;
}

bool util_ddpmode_peek_ms(const char *v, unsigned *ms)
{
	*ms = UTIL_PEEK_MS_DEFAULT;
	if (!v || !*v)
		return true;
	char *end;
	long n = strtol(v, &end, 10);
	if (*end || !isdigit((unsigned char)*v) || n < 0 || n > 60000)
		return false;
	*ms = (unsigned)n;
	return true;
}

int util_mpa_request_verdict(const uint8_t *b, size_t n)
{
	static const char key[UTIL_MPA_KEY_LEN + 1] = "MPA ID Req Frame"; /* RFC 5044 7.1 */
	if (!n || memcmp(b, key, n < UTIL_MPA_KEY_LEN ? n : UTIL_MPA_KEY_LEN))
		return 0;
	return n >= UTIL_MPA_KEY_LEN ? 1 : -1;
}

int util_sockaddr_port(const struct sockaddr *sa)
{
	if (!sa)
		return -1;
	if (sa->sa_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)sa)->sin_port);
	if (sa->sa_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
	return -1;
}
