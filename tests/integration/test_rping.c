/*
 * test_rping.c: uwarp-rping against itself over loopback: every size from
 * 1 byte to 1 MiB with the echo checked, CRC on and off, a persistent
 * server taking clients one after another, and a client that asks for
 * markers (the server grants them).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "proc.h"

static const char *rping = UWARP_RPING_BIN;

static int start_server(struct proc *srv, char *crc)
{
	char *argv[] = { (char *)rping, "-s", "-p", "0", "-P", "--crc", crc, NULL };
	if (proc_start(srv, argv))
		return -1;
	const char *l = proc_expect(srv, "listening on port ", 10000);
	return l ? atoi(l + strlen("listening on port ")) : -1;
}

static int client(int port, const char *size, const char *count, const char *crc,
		  const char *markers)
{
	char portbuf[16], out[8192];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	/* the ping text only where it fits the pipe we read */
	bool show = !strcmp(size, "64");
	char *argv[] = { (char *)rping,
			 "-c",
			 "-a",
			 "127.0.0.1",
			 "-p",
			 portbuf,
			 "-S",
			 (char *)size,
			 "-C",
			 (char *)count,
			 "-V",
			 "--crc",
			 (char *)crc,
			 "--markers",
			 (char *)markers,
			 show ? "-v" : NULL,
			 NULL };
	int rc = proc_run(argv, 60000, out, sizeof(out));
	if (rc)
		fprintf(stderr, "size %s crc %s markers %s: exit %d\n%s\n", size, crc, markers, rc,
			out);
	else if (show && !strstr(out, "ping data: rdma-ping-19: TUVWXYZ"))
		rc = -1; /* rping's text, as rping prints it */
	return rc;
}

static void every_size_both_crc_modes(void **state)
{
	static const char *sizes[] = { "1", "23", "64", "4096", "65536", "1048576" };
	for (int crc = 0; crc < 2; crc++) {
		struct proc srv;
		char *mode = crc ? "on" : "off";
		int port = start_server(&srv, mode);
		assert_true(port > 0);
		for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			assert_int_equal(client(port, sizes[i], "20", mode, "off"), 0);
		assert_int_equal(client(port, "4096", "5", mode, "on"), 0);
		proc_end(&srv);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_size_both_crc_modes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
