/*
 * esock_env.c: reading the preload's environment values (pure).
 */
#include "esock_env.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static bool separator(char c) { return c == ',' || isspace((unsigned char)c); }

bool esock_env_ddpmode(const char *v, struct esock_ddpmode *m, char *why, size_t whylen)
{
	*m = (struct esock_ddpmode){ 0 };
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
			*m = (struct esock_ddpmode){ 0 };
			return false;
		}
		if (m->nports == ESOCK_ENV_PORTS_MAX) {
			snprintf(why, whylen, "more than %d ports", ESOCK_ENV_PORTS_MAX);
			*m = (struct esock_ddpmode){ 0 };
			return false;
		}
		m->ports[m->nports++] = (uint16_t)port;
		p += n;
		while (separator(*p))
			p++;
	}
	return true;
}
