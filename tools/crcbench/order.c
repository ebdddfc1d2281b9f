/*
 * order.c: uwarp-crcbench --order: where the sender's CRC is cheapest.
 * 64 KiB pieces of a 16 MiB buffer (larger than the caches) go to a TCP
 * loopback socket drained by a thread, with no CRC, with the CRC computed
 * before each write (the payload read cold, then copied by the kernel from
 * cache) and after it (the kernel reads it cold, the CRC from cache). The
 * sender's CPU time per byte says what each order costs. (The engine
 * computes it before: after would end each gather list at its FPDU, and the
 * extra system calls cost more than the order saves; README.md.)
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "mpa/crc32c.h"
#include "crcbench.h"

#define FOOTPRINT (16u << 20)
#define PIECE 65536u

static double thread_cpu(void)
{
	struct rusage ru;
	getrusage(RUSAGE_THREAD, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static void *drain(void *arg)
{
	int fd = accept((int)(intptr_t)arg, NULL, NULL);
	static uint8_t buf[1 << 20];
	while (fd >= 0 && read(fd, buf, sizeof(buf)) > 0)
		;
	if (fd >= 0)
		close(fd);
	return NULL;
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);
		if (k <= 0)
			return -1;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/* One run of a mode: 0 no CRC, 1 before the write, 2 after it. */
static int run(int mode, const uint8_t *buf, double seconds)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof(a);
	int one = 1, lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || bind(lfd, (struct sockaddr *)&a, sizeof(a)) || listen(lfd, 1) ||
	    getsockname(lfd, (struct sockaddr *)&a, &alen))
		return -1;
	pthread_t t;
	if (pthread_create(&t, NULL, drain, (void *)(intptr_t)lfd))
		return -1;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return -1;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	uint64_t bytes = 0;
	uint32_t crc = CRC32C_INIT;
	double t0 = util_now_s(), c0 = thread_cpu();
	while (util_now_s() - t0 < seconds) {
		for (size_t off = 0; off < FOOTPRINT; off += PIECE) {
			if (mode == 1)
				crc = crc32c_update(crc, buf + off, PIECE);
			if (write_all(fd, buf + off, PIECE))
				return -1;
			if (mode == 2)
				crc = crc32c_update(crc, buf + off, PIECE);
		}
		bytes += FOOTPRINT;
	}
	double dt = util_now_s() - t0, cpu = thread_cpu() - c0;
	close(fd);
	pthread_join(t, NULL);
	close(lfd);
	crcbench_sink = crc;
	static const char *names[] = { "no CRC", "CRC before write", "CRC after write" };
	printf("%-18s %8.2f GB/s %8.3f ns/byte of sender CPU\n", names[mode],
	       (double)bytes / dt / 1e9, cpu * 1e9 / (double)bytes);
	return 0;
}

int crcbench_order(double seconds)
{
	uint8_t *buf = aligned_alloc(4096, FOOTPRINT);
	if (!buf)
		return 1;
	for (size_t i = 0; i < FOOTPRINT; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);
	printf("# uwarp-crcbench --order: 64 KiB writes from a 16 MiB buffer to TCP loopback\n");
	for (int mode = 0; mode < 3; mode++)
		if (run(mode, buf, seconds)) {
			perror("order");
			free(buf);
			return 1;
		}
	free(buf);
	return 0;
}
