/*
 * thread_wakes.h: what the other threads of this process do, from the
 * kernel's /proc/self/task: how often they woke, and whether one is in a
 * given system call, for tests that prove a progress thread stays asleep
 * while the program's own thread waits (util/progress_lease.h) and that
 * catch a thread (or every thread of a name) asleep in a given call.
 */
#ifndef UWARP_TEST_THREAD_WAKES_H
#define UWARP_TEST_THREAD_WAKES_H

#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* The voluntary context switches so far of every thread of this process
 * but the caller (the kernel's /proc/self/task/<tid>/status); -1 when
 * /proc cannot be read. */
static inline long thread_wakes_of_others(void)
{
	pid_t me = (pid_t)syscall(SYS_gettid);
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return -1;
	long sum = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0 || tid == me)
			continue;
		char path[96], line[128];
		snprintf(path, sizeof(path), "/proc/self/task/%d/status", tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* (it ended meanwhile) */
		while (fgets(line, sizeof(line), f))
			if (!strncmp(line, "voluntary_ctxt_switches:", 24))
				sum += strtol(line + 24, NULL, 10);
		fclose(f);
	}
	closedir(d);
	return sum;
}

/* Whether thread @tid of this process is in system call @nr now. */
static inline bool thread_in_syscall(pid_t tid, long nr)
{
	char path[64], line[64] = "";
	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	FILE *f = fopen(path, "r");
	if (!f)
		return false;
	bool yes = fgets(line, sizeof(line), f) && strtol(line, NULL, 10) == nr;
	fclose(f);
	return yes;
}

/* Whether every thread named @name (its comm) is in system call @nr now;
 * false when there is none. */
static inline bool threads_named_in_syscall(const char *name, long nr)
{
	DIR *d = opendir("/proc/self/task");
	if (!d)
		return false;
	int found = 0, in = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int tid = atoi(e->d_name);
		if (tid <= 0)
			continue;
		char path[96], comm[32] = "";
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		FILE *f = fopen(path, "r");
		if (!f)
			continue;
		bool named = fgets(comm, sizeof(comm), f) && !strncmp(comm, name, strlen(name)) &&
			     (comm[strlen(name)] == '\n' || !comm[strlen(name)]);
		fclose(f);
		if (named) {
			found++;
			in += thread_in_syscall(tid, nr);
		}
	}
	closedir(d);
	return found && in == found;
}

#endif
