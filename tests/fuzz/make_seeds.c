/*
 * make_seeds.c: writes the seed corpora of the fuzz harnesses from frames
 * and streams built by uwarp itself (and siw's bytes as seen on the wire).
 *
 *   fuzz-make-seeds DIR   (writes DIR/mpa_frame/ and DIR/fpdu_rx/)
 */
#include <stdio.h>
#include <string.h>

#include "fpdu_stream.h"
#include "mpa_negotiate.h"

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
		{ "siw-rping-request", { .type = MPA_FRAME_REQUEST, .rev = 2, .enhanced = true, .ird = 1, .ord = 1 } },
		{ "uwarp-request", { .type = MPA_FRAME_REQUEST, .rev = 2, .crc = true, .enhanced = true, .ird = 16, .ord = 16,
				     .pdata = (const uint8_t *)"private", .pdata_len = 7 } },
		{ "p2p-request", { .type = MPA_FRAME_REQUEST, .rev = 2, .enhanced = true, .p2p = true,
				   .rtr = MPA_RTR_ALL, .ird = 4, .ord = 4 } },
		{ "markers-request-rev1", { .type = MPA_FRAME_REQUEST, .rev = 1, .markers = true, .crc = true } },
		{ "reply", { .type = MPA_FRAME_REPLY, .rev = 2, .crc = true, .enhanced = true, .ird = 2, .ord = 1 } },
		{ "p2p-reply", { .type = MPA_FRAME_REPLY, .rev = 2, .enhanced = true, .p2p = true,
				 .rtr = MPA_RTR_WRITE, .ird = 4, .ord = 4 } },
		{ "reject", { .type = MPA_FRAME_REPLY, .rev = 2, .reject = true, .enhanced = true,
			      .pdata = (const uint8_t *)"no", .pdata_len = 2 } },
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
	return bad;
}
