/*
 * tool_opt.c: strict command-line values (tool_opt.h).
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tool_opt.h"

static const char *base_name(const char *prog)
{
	const char *base = strrchr(prog, '/');
	return base ? base + 1 : prog;
}

static void bad(const char *prog, const char *opt, const char *arg, const char *what)
{
	fprintf(stderr, "%s: %s '%s': %s\n", base_name(prog), opt, arg, what);
	exit(2);
}

void tool_opt_fail(const char *prog, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", base_name(prog));
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(2);
}

void tool_opt_no_more(const char *prog, int argc, char *const *argv, int optind)
{
	if (optind < argc)
		tool_opt_fail(prog, "'%s': not an option (options begin with -)", argv[optind]);
}

/* the number at the front of @arg; *end after it; false if there is none
 * (or a sign: no value here is negative) */
static bool number(const char *arg, uint64_t *v, char **end)
{
	if (!arg || !*arg || *arg == '-' || *arg == '+' || *arg == ' ')
		return false;
	errno = 0;
	*v = strtoull(arg, end, 0);
	return *end != arg && errno == 0;
}

uint64_t tool_opt_uint(const char *prog, const char *opt, const char *arg, uint64_t min,
		       uint64_t max)
{
	uint64_t v;
	char *end, why[128];
	if (!number(arg, &v, &end) || *end)
		bad(prog, opt, arg, "not a whole number");
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "out of range (%llu to %llu)", (unsigned long long)min,
			 (unsigned long long)max);
		bad(prog, opt, arg, why);
	}
	return v;
}

uint64_t tool_opt_size(const char *prog, const char *opt, const char *arg, uint64_t min,
		       uint64_t max)
{
	uint64_t v;
	char *end, why[128];
	if (!number(arg, &v, &end))
		bad(prog, opt, arg, "not a size (bytes, or a number with K, M or G)");
	unsigned shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 0:
		break;
	default:
		bad(prog, opt, arg, "not a size (bytes, or a number with K, M or G)");
	}
	if (shift && end[1])
		bad(prog, opt, arg, "not a size (bytes, or a number with K, M or G)");
	if (shift && v > (UINT64_MAX >> shift))
		bad(prog, opt, arg, "too large");
	v <<= shift;
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "out of range (%llu to %llu bytes)",
			 (unsigned long long)min, (unsigned long long)max);
		bad(prog, opt, arg, why);
	}
	return v;
}

/* a decimal number at the whole of @arg; false if it is not one */
static bool decimal(const char *arg, double *v)
{
	char *end;
	if (!arg || !*arg || *arg == '-' || *arg == '+' || *arg == ' ')
		return false;
	errno = 0;
	*v = strtod(arg, &end);
	return end != arg && !*end && !errno && isfinite(*v);
}

double tool_opt_seconds(const char *prog, const char *opt, const char *arg, double max)
{
	char why[128];
	double v;
	if (!decimal(arg, &v))
		bad(prog, opt, arg, "not a time in seconds");
	if (v <= 0 || v > max) {
		snprintf(why, sizeof(why), "out of range (more than 0, at most %g s)", max);
		bad(prog, opt, arg, why);
	}
	return v;
}

double tool_opt_decimal(const char *prog, const char *opt, const char *arg, double min, double max)
{
	char why[128];
	double v;
	if (!decimal(arg, &v))
		bad(prog, opt, arg, "not a number");
	if (v < min || v > max) {
		snprintf(why, sizeof(why), "out of range (%g to %g)", min, max);
		bad(prog, opt, arg, why);
	}
	return v;
}

int tool_opt_word(const char *prog, const char *opt, const char *arg, const char *const *words)
{
	char why[256];
	size_t n = 0;
	for (int i = 0; words[i]; i++)
		if (arg && !strcmp(arg, words[i]))
			return i;
	n += (size_t)snprintf(why, sizeof(why), "not one of");
	for (int i = 0; words[i] && n < sizeof(why); i++)
		n += (size_t)snprintf(why + n, sizeof(why) - n, "%s %s", i ? "," : "", words[i]);
	bad(prog, opt, arg ? arg : "", why);
	return -1;
}

void tool_opt_version(int argc, char *const *argv)
{
	for (int i = 1; i < argc && strcmp(argv[i], "--"); i++) {
		if (strcmp(argv[i], "--version"))
			continue;
		const char *slash = strrchr(argv[0], '/');
		printf("%s (uwarp) %s\n", slash ? slash + 1 : argv[0], UWARP_VERSION);
		exit(0);
	}
}
