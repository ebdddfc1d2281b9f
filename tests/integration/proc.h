/*
 * proc.h: helper processes for integration tests: start a program with a
 * pipe on its stdout, read lines from it, wait for it with a deadline, and
 * end it (SIGTERM, then SIGKILL) so no test leaves a process behind.
 */
#ifndef UWARP_TEST_PROC_H
#define UWARP_TEST_PROC_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

/* Everything started and not yet ended, so a failing test (cmocka longjmps
 * out of it) leaves nothing running. */
static pid_t proc_live[64];

static inline void proc_kill_all(void)
{
	for (int i = 0; i < 64; i++)
		if (proc_live[i] > 0) {
			kill(proc_live[i], SIGKILL);
			waitpid(proc_live[i], NULL, 0);
			proc_live[i] = 0;
		}
}

static inline void proc_track(pid_t pid, bool add)
{
	static bool registered;
	if (!registered) {
		atexit(proc_kill_all);
		registered = true;
	}
	for (int i = 0; i < 64; i++)
		if (add ? proc_live[i] == 0 : proc_live[i] == pid) {
			proc_live[i] = add ? pid : 0;
			return;
		}
}

struct proc {
	pid_t pid;
	int out; /* its stdout */
	char buf[8192];
	size_t len;
	int status;
	bool reaped;
};

static inline int proc_start(struct proc *p, char *const argv[])
{
	int fds[2];
	memset(p, 0, sizeof(*p));
	if (pipe2(fds, O_CLOEXEC))
		return -errno;
	pid_t parent = getpid();
	p->pid = fork();
	if (p->pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return -errno;
	}
	if (p->pid == 0) {
		/* die with the test, whatever kills it (a ctest timeout too) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(127);
		dup2(fds[1], 1);
		execve(argv[0], argv, environ);
		_exit(127);
	}
	close(fds[1]);
	p->out = fds[0];
	proc_track(p->pid, true);
	return 0;
}

static inline long proc_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait up to ms for its output to contain needle; returns a pointer into
 * the collected output or NULL. */
static inline const char *proc_expect(struct proc *p, const char *needle, int ms)
{
	long end = proc_ms() + ms;
	for (;;) {
		p->buf[p->len] = 0;
		const char *f = strstr(p->buf, needle);
		if (f)
			return f;
		long left = end - proc_ms();
		if (left <= 0 || p->len + 1 >= sizeof(p->buf))
			return NULL;
		struct pollfd pf = { p->out, POLLIN, 0 };
		if (poll(&pf, 1, (int)left) <= 0)
			continue;
		ssize_t n = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			return NULL;
		p->len += (size_t)n;
	}
}

/* Wait for exit up to ms; returns true when it exited (p->status set). */
static inline bool proc_wait(struct proc *p, int ms)
{
	long end = proc_ms() + ms;
	while (!p->reaped) {
		pid_t r = waitpid(p->pid, &p->status, WNOHANG);
		if (r == p->pid) {
			p->reaped = true;
			proc_track(p->pid, false);
			break;
		}
		if (proc_ms() >= end)
			return false;
		/* drain output so the child never blocks on a full pipe */
		struct pollfd pf = { p->out, POLLIN, 0 };
		if (poll(&pf, 1, 20) > 0 && p->len + 1 < sizeof(p->buf)) {
			ssize_t n = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
			if (n > 0)
				p->len += (size_t)n;
		}
	}
	return true;
}

static inline void proc_end(struct proc *p)
{
	if (!p->pid)
		return;
	if (!p->reaped) {
		kill(p->pid, SIGTERM);
		if (!proc_wait(p, 2000)) {
			kill(p->pid, SIGKILL);
			proc_wait(p, 5000);
		}
	}
	close(p->out);
	p->pid = 0;
}

static inline int proc_exit_code(const struct proc *p)
{
	return WIFEXITED(p->status) ? WEXITSTATUS(p->status) : 128 + WTERMSIG(p->status);
}

/* After exit: what is still in the pipe (it may hold all of the output). */
static inline void proc_drain(struct proc *p)
{
	for (;;) {
		struct pollfd pf = { p->out, POLLIN, 0 };
		if (p->len + 1 >= sizeof(p->buf) || poll(&pf, 1, 1000) <= 0)
			return;
		ssize_t n = read(p->out, p->buf + p->len, sizeof(p->buf) - 1 - p->len);
		if (n <= 0)
			return;
		p->len += (size_t)n;
	}
}

/* Run to completion (up to ms); returns the exit code, or -1 on timeout. */
static inline int proc_run(char *const argv[], int ms, char *out, size_t outlen)
{
	struct proc p;
	if (proc_start(&p, argv))
		return -1;
	bool done = proc_wait(&p, ms);
	if (done)
		proc_drain(&p);
	if (out) {
		size_t n = p.len < outlen - 1 ? p.len : outlen - 1;
		memcpy(out, p.buf, n);
		out[n] = 0;
	}
	proc_end(&p);
	return done ? proc_exit_code(&p) : -1;
}

/* Start a uwarp-perf server on a port the system picks; returns it. */
static inline int perf_server_start(struct proc *p, const char *perf, char *const extra[])
{
	char *argv[24] = { (char *)perf, "-s", "-p", "0", "--loop" };
	int n = 5;
	for (int i = 0; extra && extra[i] && n < 23; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	if (proc_start(p, argv))
		return -1;
	const char *l = proc_expect(p, "listening on port ", 10000);
	return l ? atoi(l + strlen("listening on port ")) : -1;
}

#endif
