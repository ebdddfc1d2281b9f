/*
 * uwarp-crcbench: CRC32c throughput of each engine built in, at the sizes
 * that matter to MPA (a small header-only FPDU up to a 1 MiB message).
 *
 *   uwarp-crcbench [--ms MILLISECONDS_PER_POINT] [--order]
 *
 * One line per engine and size: engine, size, GB/s (10^9 bytes per second).
 * --order compares computing the sender's CRC before and after the kernel
 * copies the payload (order.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mpa/crc32c.h"
#include "crcbench.h"
#include "tools/lib/tool_opt.h"

typedef uint32_t (*engine_fn)(uint32_t, const void *, size_t);

volatile uint32_t crcbench_sink;

static double measure(engine_fn fn, const uint8_t *buf, size_t size, double seconds)
{
	uint64_t bytes = 0;
	uint32_t acc = 0;
	double t0 = util_now_s(), t;
	size_t reps = size >= 65536 ? 1 : 65536 / size;

	/* warm the tables and the cache */
	acc ^= fn(CRC32C_INIT, buf, size);
	do {
		for (size_t r = 0; r < reps; r++)
			acc ^= fn(acc, buf, size);
		bytes += (uint64_t)reps * size;
		t = util_now_s();
	} while (t - t0 < seconds);
	crcbench_sink = acc;
	return (double)bytes / (t - t0) / 1e9;
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	static const size_t sizes[] = { 64, 1024, 65536, 1048576 };
	static const struct {
		const char *name;
		engine_fn fn;
	} engines[] = {
#if UWARP_HAVE_ISAL
		{ "isa-l", crc32c_update_isal },
#endif
		{ "slicing-by-8", crc32c_update_sb8 },
	};
	double seconds = 0.3;
	bool order = false;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--ms") && i + 1 < argc) {
			seconds = tool_opt_decimal(argv[0], "--ms", argv[++i], 1, 3600000) / 1000.0;
		} else if (!strcmp(argv[i], "--order")) {
			order = true;
		} else if (!strcmp(argv[i], "--help")) {
			printf("usage: %s [--ms MILLISECONDS_PER_POINT] [--order]\n"
			       "CRC32c throughput (GB/s) of each engine built in, at MPA's sizes.\n"
			       "  --ms MS    time per point (default 300)\n"
			       "  --order    the sender's CRC taken before against after the\n"
			       "             kernel's copy of the payload\n",
			       argv[0]);
			return 0;
		} else {
			fprintf(stderr, "usage: %s [--ms MILLISECONDS_PER_POINT] [--order]\n",
				argv[0]);
			return 2;
		}
	}
	if (order)
		return crcbench_order(seconds < 1 ? 2 : seconds);
	uint8_t *buf = aligned_alloc(64, 1048576);
	if (!buf)
		return 1;
	for (size_t i = 0; i < 1048576; i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 24);

	printf("# uwarp-crcbench: CRC32c throughput, default engine: %s\n", crc32c_engine());
	printf("%-14s %10s %10s\n", "engine", "bytes", "GB/s");
	for (size_t e = 0; e < sizeof(engines) / sizeof(engines[0]); e++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
			printf("%-14s %10zu %10.2f\n", engines[e].name, sizes[s],
			       measure(engines[e].fn, buf, sizes[s], seconds));
	free(buf);
	return 0;
}
