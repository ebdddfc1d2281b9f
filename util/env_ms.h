/*
 * env_ms.h: a duration in milliseconds (or another whole number) from
 * the environment, read strictly (header-only). A value that is not a
 * whole number in range is named in one line on stderr and the default
 * holds: a typo must not silently turn a timer off or make it huge.
 */
#ifndef UWARP_UTIL_ENV_MS_H
#define UWARP_UTIL_ENV_MS_H

#include <ctype.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

/* @s as milliseconds in [lo, hi]: true and *ms, or false */
static inline bool util_parse_ms(const char *s, unsigned lo, unsigned hi, unsigned *ms)
{
	if (!s || !isdigit((unsigned char)*s))
		return false;
	char *end;
	unsigned long long n = strtoull(s, &end, 10);
	if (*end || n < lo || n > hi)
		return false;
	*ms = (unsigned)n;
	return true;
}

/* getenv(@name) as a whole number of @unit (a word for the line on
 * stderr) in [lo, hi], @def when unset, empty or unreadable (@who
 * prefixes the line that says so) */
static inline unsigned util_env_uint(const char *who, const char *name, const char *unit,
				     unsigned def, unsigned lo, unsigned hi)
{
	const char *v = getenv(name);
	unsigned n;
	if (!v || !*v)
		return def;
	if (util_parse_ms(v, lo, hi, &n))
		return n;
	fprintf(stderr, "%s: %s='%s' ignored: %s, %u to %u (default %u)\n", who, name, v, unit, lo,
		hi, def);
	return def;
}

/* getenv(@name) as milliseconds, @def when unset, empty or unreadable
 * (@who prefixes the line that says so) */
static inline unsigned util_env_ms(const char *who, const char *name, unsigned def, unsigned lo,
				   unsigned hi)
{
	return util_env_uint(who, name, "milliseconds", def, lo, hi);
}

#endif
