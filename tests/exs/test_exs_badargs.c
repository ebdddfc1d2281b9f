/*
 * test_exs_badargs.c: bad lengths and bad memory get an errno, never a
 * crash or a hang. Each case runs in a child process of its own (so a
 * SIGSEGV or a hang fails that case alone, by name) with a fresh ES-API
 * runtime and, where it needs one, a connected pair over loopback; the
 * child exits with the call's errno and the parent compares.
 *
 * Memory that is not there: a 1 GiB range mapped and then unmapped, and a
 * buffer whose length runs from the mapped page before it over that hole.
 */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <exs.h>
#include <uwarp/verbs.h>

/* exit statuses besides errno values */
#define RAN_OK 200   /* the call succeeded where it must fail */
#define NO_SETUP 201 /* the case could not be set up */
#define GIB (1ull << 30)

static exs_qhandle_t Q;
static int C, S;      /* the connected pair: client, accepted server end */
static uint8_t *page; /* one mapped page... */
static uint8_t *hole; /* ...and the unmapped page after it */

/* The hole is 1 GiB wide: new mappings (the runtime's, a sanitizer's) go
 * to the top of the highest gap that fits them, so the hole's first pages,
 * at the bottom of this one, stay unmapped; a one-page hole was mapped
 * again under AddressSanitizer before the call that needed it unmapped. */
#define HOLE (1ull << 30)

static void memory(void)
{
	long ps = sysconf(_SC_PAGESIZE);
	page = mmap(NULL, (size_t)ps + HOLE, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (page == MAP_FAILED)
		exit(NO_SETUP);
	hole = page + ps;
	munmap(hole, HOLE);
	memset(page, 'x', (size_t)ps);
}

static void connected(int type)
{
	if (exs_init(EXS_VERSION) || (Q = exs_qcreate(64)) == EXS_QHANDLE_INVALID)
		exit(NO_SETUP);
	int l = exs_socket(AF_INET, type, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	if (l < 0 || exs_bind(l, (struct sockaddr *)&a, sizeof(a)) || exs_listen(l, 4) ||
	    exs_getsockname(l, (struct sockaddr *)&a, &al))
		exit(NO_SETUP);
	C = exs_socket(AF_INET, type, 0);
	if (C < 0 || exs_connect(C, (struct sockaddr *)&a, sizeof(a), EXS_QHANDLE_INVALID, NULL))
		exit(NO_SETUP);
	S = exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
	if (S < 0)
		exit(NO_SETUP);
}

static int result(ssize_t rc) { return rc < 0 ? errno : RAN_OK; }

/* ---- the cases: each returns the errno its call got ---- */

static int mregister_size_max(void)
{
	if (exs_init(EXS_VERSION))
		exit(NO_SETUP);
	return exs_mregister(page, SIZE_MAX, EXS_ACCESS_READ) ? RAN_OK : errno;
}

static int mregister_unmapped(void)
{
	if (exs_init(EXS_VERSION))
		exit(NO_SETUP);
	return exs_mregister(hole, 4096, EXS_ACCESS_READ) ? RAN_OK : errno;
}

static int mregister_past_the_mapping(void)
{
	if (exs_init(EXS_VERSION))
		exit(NO_SETUP);
	return exs_mregister(page, 2 * GIB, EXS_ACCESS_READ | EXS_ACCESS_WRITE) ? RAN_OK : errno;
}

static int reg_mr(void *addr, size_t len)
{
	struct uw_context *ctx = uw_open(NULL);
	struct uw_pd *pd = ctx ? uw_alloc_pd(ctx) : NULL;
	if (!pd)
		exit(NO_SETUP);
	return uw_reg_mr(pd, addr, len, UW_ACCESS_LOCAL_WRITE) ? RAN_OK : errno;
}
static int reg_mr_size_max(void) { return reg_mr(page, SIZE_MAX); }
static int reg_mr_unmapped(void) { return reg_mr(hole, 4096); }
static int reg_mr_past_the_mapping(void) { return reg_mr(page, 1ull << 40); }

static int send_size_max_sync(void)
{
	connected(SOCK_STREAM);
	return result(
		exs_send(C, page, SIZE_MAX, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID));
}

static int send_async(size_t len)
{
	connected(SOCK_STREAM);
	return result(exs_send(C, page, len, 0, Q, NULL, EXS_MHANDLE_INVALID));
}
static int send_async_2gib_past_the_buffer(void) { return send_async(2 * GIB); }
static int send_async_1tib_past_the_buffer(void) { return send_async(1ull << 40); }
static int send_async_size_max(void) { return send_async(SIZE_MAX); }

static int send_from_unmapped(void)
{
	connected(SOCK_STREAM);
	return result(exs_send(C, hole, 64, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID));
}

static int seqpacket_send_from_unmapped(void)
{
	connected(SOCK_SEQPACKET);
	return result(exs_send(C, hole, 64, 0, Q, NULL, EXS_MHANDLE_INVALID));
}

static int send_past_its_handle(void)
{
	connected(SOCK_STREAM);
	exs_mhandle_t m = exs_mregister(page, 4096, EXS_ACCESS_READ);
	if (!m)
		exit(NO_SETUP);
	return result(exs_send(C, page, 2 * GIB, 0, Q, NULL, m));
}

static int sendv_total_past_ssize_max(void)
{
	connected(SOCK_STREAM);
	struct iovec v[2] = { { page, SIZE_MAX / 2 + 1 }, { page, SIZE_MAX / 2 } };
	return result(exs_sendv(C, v, 2, 0, Q, NULL, NULL));
}

static int recv_into_unmapped(void)
{
	connected(SOCK_STREAM);
	return result(exs_recv(S, hole, 64, 0, Q, NULL, EXS_MHANDLE_INVALID));
}

static int recv_1tib_past_the_buffer(void)
{
	connected(SOCK_STREAM);
	return result(exs_recv(S, page, 1ull << 40, 0, Q, NULL, EXS_MHANDLE_INVALID));
}

static int recvv_into_unmapped(void)
{
	connected(SOCK_STREAM);
	struct iovec v[2] = { { page, 16 }, { hole, 16 } };
	return result(exs_recvv(S, v, 2, 0, Q, NULL, NULL));
}

static int seqpacket_recv_into_unmapped(void)
{
	connected(SOCK_SEQPACKET);
	return result(exs_recv(S, hole, 64, 0, Q, NULL, EXS_MHANDLE_INVALID));
}

static const struct bad_case {
	const char *name;
	int (*run)(void);
	int want;
} cases[] = {
	{ "exs_mregister of SIZE_MAX bytes", mregister_size_max, EINVAL },
	{ "exs_mregister of an unmapped page", mregister_unmapped, EFAULT },
	{ "exs_mregister of 2 GiB from a 4 KiB mapping", mregister_past_the_mapping, EFAULT },
	{ "uw_reg_mr of SIZE_MAX bytes", reg_mr_size_max, EINVAL },
	{ "uw_reg_mr of an unmapped page", reg_mr_unmapped, EFAULT },
	{ "uw_reg_mr of 1 TiB from a 4 KiB mapping", reg_mr_past_the_mapping, EFAULT },
	{ "blocking exs_send of SIZE_MAX bytes", send_size_max_sync, EINVAL },
	{ "queued exs_send of 2 GiB from a 4 KiB buffer", send_async_2gib_past_the_buffer, EFAULT },
	{ "queued exs_send of 1 TiB from a 4 KiB buffer", send_async_1tib_past_the_buffer, EFAULT },
	{ "queued exs_send of SIZE_MAX bytes", send_async_size_max, EINVAL },
	{ "exs_send from an unmapped page", send_from_unmapped, EFAULT },
	{ "seqpacket exs_send from an unmapped page", seqpacket_send_from_unmapped, EFAULT },
	{ "exs_send of 2 GiB with a 4 KiB handle", send_past_its_handle, EFAULT },
	{ "exs_sendv totalling more than SSIZE_MAX", sendv_total_past_ssize_max, EINVAL },
	{ "exs_recv into an unmapped page", recv_into_unmapped, EFAULT },
	{ "exs_recv of 1 TiB into a 4 KiB buffer", recv_1tib_past_the_buffer, EFAULT },
	{ "exs_recvv with an unmapped piece", recvv_into_unmapped, EFAULT },
	{ "seqpacket exs_recv into an unmapped page", seqpacket_recv_into_unmapped, EFAULT },
};

static void every_bad_argument_gets_its_errno(void **state)
{
	(void)state;
	int failed = 0;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fflush(NULL);
		pid_t pid = fork();
		assert_true(pid >= 0);
		if (pid == 0) {
			/* cmocka's handlers would turn a crash into a test
			 * failure inside the child: a crash must show as one */
			const int fatal[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };
			for (size_t k = 0; k < sizeof(fatal) / sizeof(fatal[0]); k++)
				signal(fatal[k], SIG_DFL);
			alarm(20); /* a hang is a failure too, not a stuck suite */
			memory();
			_exit(cases[i].run());
		}
		int st;
		assert_int_equal(waitpid(pid, &st, 0), pid);
		if (WIFSIGNALED(st)) {
			fprintf(stderr, "FAIL %s: killed by %s\n", cases[i].name,
				strsignal(WTERMSIG(st)));
			failed++;
		} else if (WEXITSTATUS(st) != cases[i].want) {
			int got = WEXITSTATUS(st);
			fprintf(stderr, "FAIL %s: %s, want %s\n", cases[i].name,
				got == RAN_OK     ? "succeeded"
				: got == NO_SETUP ? "no setup"
						  : strerror(got),
				strerror(cases[i].want));
			failed++;
		} else {
			printf("ok   %s: %s\n", cases[i].name, strerror(cases[i].want));
		}
	}
	assert_int_equal(failed, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_bad_argument_gets_its_errno),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
