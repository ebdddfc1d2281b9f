/*
 * test_tshark_mpa.c: our MPA byte streams, as a pcap, decoded by Wireshark's
 * iWARP dissectors (tshark), which we did not write. Every FPDU must decode
 * as DDP/RDMAP with a good CRC, markers must be found where we put them,
 * and one flipped payload byte must be a bad CRC to tshark and LLP/MPA 0x02
 * to our own parser.
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tools/lib/mpa_session.h"

/* Counts per direction: [0] initiator to responder, [1] the reverse. */
struct tshark_counts {
	int request, reply;
	int ddp[2], good_crc[2], bad_crc[2], markers[2], malformed[2];
};

/* Wireshark renamed the RPC-over-RDMA heuristic; disable whichever this
 * tshark has, so random Send payloads are not taken for RPC. */
static const char *heuristics(void)
{
	static char args[256];
	if (!args[0]) {
		FILE *p = popen(
			"tshark -G heuristic-decodes 2>/dev/null; "
			"strings -n 8 $(ldd $(command -v tshark) | awk '/libwireshark/{print $3}') "
			"2>/dev/null | grep -E -x 'rpc(o)?rdma_iwarp|smb_direct_iwarp' | sort -u",
			"r");
		char line[256];
		strcpy(args, " ");
		while (p && fgets(line, sizeof(line), p)) {
			line[strcspn(line, "\n")] = 0;
			if (!strchr(line, '\t') && strlen(line) < 40) {
				strcat(args, " --disable-heuristic ");
				strcat(args, line);
			}
		}
		if (p)
			pclose(p);
	}
	return args;
}

static void run_tshark(const char *pcap, struct tshark_counts *c)
{
	char cmd[1024], line[4096];
	memset(c, 0, sizeof(*c));
	snprintf(cmd, sizeof(cmd), "tshark -n -r %s -V %s 2>/dev/null", pcap, heuristics());
	FILE *p = popen(cmd, "r");
	assert_non_null(p);
	int d = 0;
	while (fgets(line, sizeof(line), p)) {
		const char *src = strstr(line, "Src Port: ");
		if (src)
			d = atoi(src + 10) != 40000; /* the initiator's port */
		c->request += strstr(line, "Request frame header") != NULL;
		c->reply += strstr(line, "Reply frame header") != NULL;
		c->ddp[d] += strncmp(line, "iWARP Direct Data Placement", 27) == 0;
		c->good_crc[d] += strstr(line, "(Good CRC32)") != NULL;
		c->bad_crc[d] += strstr(line, "(Bad CRC32") != NULL;
		c->markers[d] += strstr(line, "FPDU back pointer:") != NULL;
		c->malformed[d] += strstr(line, "Malformed") != NULL;
	}
	assert_int_equal(pclose(p), 0);
}

static size_t markers_in(const struct fpdu_stream *s, bool on)
{
	return on ? (s->len + MPA_MARKER_INTERVAL - 1) / MPA_MARKER_INTERVAL : 0;
}

static char *tmp_pcap(void)
{
	char *path = strdup("/tmp/uwarp-tshark-XXXXXX.pcap");
	int fd = mkstemps(path, 5);
	assert_true(fd >= 0);
	close(fd);
	return path;
}

static const uint32_t sizes[] = { 0, 1, 4, 5, 100, 511, 512, 513, 1500, 3000, 8000, 20000, 2, 77 };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static void session(struct mpa_session *s, bool crc, bool markers0, bool markers1)
{
	mpa_session_init(s);
	s->pol[0].crc = s->pol[1].crc = crc;
	s->pol[0].markers_rx = markers0; /* the initiator wants markers */
	s->pol[1].markers_rx = markers1;
	assert_int_equal(mpa_session_connect(s, (const uint8_t *)"uwarp", 5, NULL, 0), 0);
	/* jumbo and standard frame sizes, so messages span several FPDUs */
	mpa_session_send(s, 0, sizes, NSIZES, fpdu_mulpdu(9000, s->params[0].markers_tx), 11);
	mpa_session_send(s, 1, sizes, NSIZES, fpdu_mulpdu(1460, s->params[1].markers_tx), 12);
	assert_int_equal(mpa_session_check(s, 0, NULL), 0);
	assert_int_equal(mpa_session_check(s, 1, NULL), 0);
}

/* Check the directions in dirs (bit 0: initiator's, bit 1: responder's). */
static void check_mode(bool crc, bool m0, bool m1, int dirs)
{
	struct mpa_session s;
	struct tshark_counts c;
	char *pcap = tmp_pcap();
	session(&s, crc, m0, m1);
	assert_int_equal(mpa_session_write_pcap(&s, pcap), 0);
	run_tshark(pcap, &c);
	assert_int_equal(c.request, 1);
	assert_int_equal(c.reply, 1);
	for (int d = 0; d < 2; d++) {
		if (!(dirs & (1 << d)))
			continue;
		assert_int_equal(c.ddp[d], s.stream[d].n);
		assert_int_equal(c.bad_crc[d], 0);
		assert_int_equal(c.good_crc[d], crc ? s.stream[d].n : 0);
		assert_int_equal(c.markers[d], markers_in(&s.stream[d], s.params[d].markers_tx));
		assert_int_equal(c.malformed[d], 0);
	}
	mpa_session_free(&s);
	unlink(pcap);
	free(pcap);
}

static void tshark_decodes_every_fpdu_crc_on(void **state) { check_mode(true, false, false, 3); }

static void tshark_decodes_every_fpdu_crc_off(void **state) { check_mode(false, false, false, 3); }

static void tshark_finds_markers_both_directions_crc_on(void **state)
{
	check_mode(true, true, true, 3);
}

/* Markers in one direction only (M is per direction, RFC 5044 7.1.2).
 * Wireshark 4.0 assumes markers both ways once either frame has M set, so
 * only the marked direction can be checked against it. */
static void tshark_finds_markers_one_direction_crc_off(void **state)
{
	check_mode(false, true, false, 2);
	check_mode(false, false, true, 1);
}

/* One flipped payload byte: bad CRC to tshark, LLP/MPA 0x02 to us. */
static void flipped_byte_is_bad_crc_to_both(void **state)
{
	for (int markers = 0; markers < 2; markers++) {
		struct mpa_session s;
		struct tshark_counts c;
		struct rddp_error err;
		char *pcap = tmp_pcap();
		session(&s, true, markers, markers);
		const struct sent_fpdu *f = &s.stream[0].fpdus[5];
		assert_true(f->payload_len > 10);
		/* a payload byte, away from any marker */
		size_t pos = f->wire_start + 24;
		if (markers && pos % 512 < 4)
			pos += 4;
		s.stream[0].bytes[pos] ^= 0x01;
		assert_int_not_equal(mpa_session_check(&s, 0, &err), 0);
		assert_int_equal(err.layer, UW_TERM_LAYER_LLP);
		assert_int_equal(err.etype, UW_TERM_LLP_MPA);
		assert_int_equal(err.ecode, UW_MPA_ECODE_CRC);
		assert_int_equal(mpa_session_write_pcap(&s, pcap), 0);
		run_tshark(pcap, &c);
		assert_int_equal(c.bad_crc[0], 1);
		assert_int_equal(c.good_crc[0], s.stream[0].n - 1);
		assert_int_equal(c.bad_crc[1], 0);
		assert_int_equal(c.good_crc[1], s.stream[1].n);
		mpa_session_free(&s);
		unlink(pcap);
		free(pcap);
	}
}

static int have_tshark(void **state)
{
	if (system("command -v tshark >/dev/null 2>&1") != 0) {
		fprintf(stderr, "tshark is not installed: scripts/test installs it (apt-get "
				"install tshark)\n");
		return -1;
	}
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tshark_decodes_every_fpdu_crc_on),
		cmocka_unit_test(tshark_decodes_every_fpdu_crc_off),
		cmocka_unit_test(tshark_finds_markers_both_directions_crc_on),
		cmocka_unit_test(tshark_finds_markers_one_direction_crc_off),
		cmocka_unit_test(flipped_byte_is_bad_crc_to_both),
	};
	return cmocka_run_group_tests(tests, have_tshark, NULL);
}
