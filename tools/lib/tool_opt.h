/*
 * tool_opt.h: reading a tool's command-line values. The whole argument
 * must be the value and in range; otherwise the tool says which option,
 * what it was given and what it takes, and exits with status 2 (as
 * getopt's own complaints do). "--size abc" is not 0 bytes, "--iters -1"
 * is not 2^64 - 1, "-p 99999" is not port 34463.
 */
#ifndef UWARP_TOOL_OPT_H
#define UWARP_TOOL_OPT_H

#include <stdint.h>

/* a whole number in [min, max], decimal or 0x hexadecimal */
uint64_t tool_opt_uint(const char *prog, const char *opt, const char *arg, uint64_t min,
		       uint64_t max);

/* a byte count in [min, max]: a whole number, optionally with K, M or G
 * (binary: 1K = 1024) */
uint64_t tool_opt_size(const char *prog, const char *opt, const char *arg, uint64_t min,
		       uint64_t max);

/* a time in seconds, more than 0 and at most max (a decimal fraction
 * allowed) */
double tool_opt_seconds(const char *prog, const char *opt, const char *arg, double max);

/* a decimal number in [min, max] */
double tool_opt_decimal(const char *prog, const char *opt, const char *arg, double min, double max);

/* one of the words in @words (NULL-terminated): its index */
int tool_opt_word(const char *prog, const char *opt, const char *arg, const char *const *words);

/* what no single value shows (two options that exclude each other, a
 * required one missing): says so, after the tool's name, and exits 2 */
__attribute__((format(printf, 2, 3), noreturn)) void tool_opt_fail(const char *prog,
								   const char *fmt, ...);

/* --version anywhere among the arguments (before a "--"): prints the
 * tool's name and uwarp's version ("uwarp-perf (uwarp) 0.1.0") and exits
 * 0. Called first thing in main. */
void tool_opt_version(int argc, char *const *argv);

/* an argument left after the options (argv[optind] on): refused by name */
void tool_opt_no_more(const char *prog, int argc, char *const *argv, int optind);

#endif
