/*
 * make_seeds.c: writes the seed corpora of the fuzz harnesses from frames
 * and streams built by uwarp itself (and siw's bytes as seen on the wire).
 *
 *   fuzz-make-seeds DIR   (writes DIR/mpa_frame/ and DIR/fpdu_rx/)
 */
#include <stdio.h>
#include <string.h>

#include "tools/lib/fpdu_stream.h"
#include "mpa/mpa_negotiate.h"
#include "tools/lib/rdmap_sim.h"

static int put(const char *dir, const char *name, uint8_t sel, uint8_t seed, const uint8_t *p,
	       size_t n, int two)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return 1;
	}
	fputc(sel, f);
	if (two)
		fputc(seed, f);
	fwrite(p, 1, n, f);
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	char dir[4096];
	int bad = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
		return 2;
	}

	/* MPA frames */
	snprintf(dir, sizeof(dir), "%s/mpa_frame", argv[1]);
	struct {
		const char *name;
		struct mpa_frame f;
	} frames[] = {
		{ "siw-rping-request",
		  { .type = MPA_FRAME_REQUEST, .rev = 2, .enhanced = true, .ird = 1, .ord = 1 } },
		{ "uwarp-request",
		  { .type = MPA_FRAME_REQUEST,
		    .rev = 2,
		    .crc = true,
		    .enhanced = true,
		    .ird = 16,
		    .ord = 16,
		    .pdata = (const uint8_t *)"private",
		    .pdata_len = 7 } },
		{ "p2p-request",
		  { .type = MPA_FRAME_REQUEST,
		    .rev = 2,
		    .enhanced = true,
		    .p2p = true,
		    .rtr = MPA_RTR_ALL,
		    .ird = 4,
		    .ord = 4 } },
		{ "markers-request-rev1",
		  { .type = MPA_FRAME_REQUEST, .rev = 1, .markers = true, .crc = true } },
		{ "reply",
		  { .type = MPA_FRAME_REPLY,
		    .rev = 2,
		    .crc = true,
		    .enhanced = true,
		    .ird = 2,
		    .ord = 1 } },
		{ "p2p-reply",
		  { .type = MPA_FRAME_REPLY,
		    .rev = 2,
		    .enhanced = true,
		    .p2p = true,
		    .rtr = MPA_RTR_WRITE,
		    .ird = 4,
		    .ord = 4 } },
		{ "reject",
		  { .type = MPA_FRAME_REPLY,
		    .rev = 2,
		    .reject = true,
		    .enhanced = true,
		    .pdata = (const uint8_t *)"no",
		    .pdata_len = 2 } },
	};
	for (size_t i = 0; i < sizeof(frames) / sizeof(frames[0]); i++) {
		uint8_t buf[600];
		ssize_t n = mpa_frame_encode(&frames[i].f, buf, sizeof(buf));
		for (int sel = 0; sel < 2 && n > 0; sel++) {
			char name[128];
			snprintf(name, sizeof(name), "%s-%d", frames[i].name, sel);
			bad |= put(dir, name, (uint8_t)(sel ? 0x85 : 0x04), 0, buf, (size_t)n, 0);
		}
	}

	/* FPDU streams: raw (sel bit 2 clear) in every CRC/marker mode, and
	 * build-mode recipes */
	snprintf(dir, sizeof(dir), "%s/fpdu_rx", argv[1]);
	static const uint32_t sizes[] = { 0, 4, 5, 600, 1500, 3, 9000, 1 };
	for (int mode = 0; mode < 4; mode++) {
		bool crc = mode & 1, markers = mode & 2;
		struct fpdu_stream s;
		char name[128];
		fpdu_stream_build(&s, sizes, 8, fpdu_mulpdu(1460, markers), crc, markers, 7);
		snprintf(name, sizeof(name), "raw-crc%d-markers%d", crc, markers);
		bad |= put(dir, name, (uint8_t)mode, 3, s.bytes, s.len, 1);
		fpdu_stream_free(&s);
		static const uint8_t recipe[] = { 0, 0, 4, 0, 5, 1, 0x40, 0x30, 3, 0, 0xff, 0xff };
		snprintf(name, sizeof(name), "build-crc%d-markers%d", crc, markers);
		bad |= put(dir, name, (uint8_t)(mode | 4), 9, recipe, sizeof(recipe), 1);
		snprintf(name, sizeof(name), "build-flip-crc%d-markers%d", crc, markers);
		bad |= put(dir, name, (uint8_t)(mode | 4 | 32), 21, recipe, sizeof(recipe), 1);
	}
	/* RDMAP streams (CRC off), as fuzz_rdmap_rx's receiver expects: its
	 * region is the first STag of a fresh table, 2 receives of 2 KiB */
	snprintf(dir, sizeof(dir), "%s/rdmap_rx", argv[1]);
	for (int mode = 0; mode < 2; mode++) {
		static struct sim_end a, shadow;
		static uint8_t data[4096], res[8];
		struct sim_cfg cfg = {
			.rfc7306 = mode, .ird = 3, .ord = 4, .mulpdu = 600, .pd = 1, .qp = 1
		};
		struct sim_wire w = { 0 };
		sim_end_init(&a, &cfg);
		sim_end_init(&shadow, &cfg); /* learns the STags the receiver will have */
		uint32_t rw = sim_mem_add(&shadow.mem, NULL, 0, 8192, 0, 1, 0, false);
		uint32_t mw = sim_mem_add(&shadow.mem, NULL, 0x1000, 4096, 0, 1, 0, true);
		struct iovec iov = { data, 1500 };
		for (size_t i = 0; i < sizeof(data); i++)
			data[i] = (uint8_t)i;
		struct rdmap_msg msgs[] = {
			{ .opcode = RDMAP_RDMA_WRITE,
			  .sge = &iov,
			  .nsge = 1,
			  .stag = rw,
			  .to = 100 },
			{ .opcode = RDMAP_SEND, .sge = &iov, .nsge = 1 },
			{ .opcode = RDMAP_RDMA_READ_REQ,
			  .sink_stag = 0x55,
			  .stag = rw,
			  .to = 8,
			  .len = 700 },
			{ .opcode = RDMAP_SEND_INVAL, .sge = &iov, .nsge = 1, .inval_stag = mw },
			{ .opcode = RDMAP_ATOMIC_REQ,
			  .stag = rw,
			  .to = 64,
			  .data = 3,
			  .result = res },
			{ .opcode = RDMAP_IMMEDIATE_SE, .value = 42 },
		};
		for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
			char name[64];
			w.len = 0;
			if (sim_end_send(&a, &msgs[i], &w))
				continue;
			snprintf(name, sizeof(name), "msg%zu-7306-%d", i, mode);
			/* sel: RFC 7306 bit, IRD 3, two receives, whole reads */
			bad |= put(dir, name, (uint8_t)(mode | 3 << 1 | 1 << 3), 0, w.b, w.len, 0);
		}
		sim_wire_free(&w);
		sim_end_fini(&a);
		sim_end_fini(&shadow);
	}
	return bad;
}
