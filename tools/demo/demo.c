/*
 * uwarp-demo: what uwarp can do today, in one process. Two endpoints
 * negotiate MPA (RFC 5044 with the RFC 6581 enhancements) through real
 * encoded frames, exchange FPDUs built by the transmit path and checked by
 * the receive machine, and the conversation is written to a pcap that
 * Wireshark's iWARP dissectors decode.
 *
 *   uwarp-demo [--pcap PATH] [--markers] [--no-crc] [--emss N]
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mpa/crc32c.h"
#include "tools/lib/mpa_session.h"
#include "tools/lib/tool_opt.h"

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--pcap PATH] [--markers] [--no-crc] [--emss N]\n"
		"  --pcap PATH  where the capture goes (default uwarp-demo.pcap)\n"
		"  --markers    both ends ask for MPA markers\n"
		"  --no-crc     both ends ask for no CRC32c\n"
		"  --emss N     TCP's effective MSS the FPDUs are cut for, 88 to 65535\n"
		"               (default 1460)\n",
		prog);
}

static void hexdump(const char *what, const uint8_t *p, size_t n)
{
	printf("  %s (%zu bytes):", what, n);
	for (size_t i = 0; i < n; i++)
		printf("%s%02x", i % 24 == 0 ? "\n    " : " ", p[i]);
	printf("\n");
}

static void show_params(const char *who, const struct mpa_params *p)
{
	printf("  %-9s rev %u%s, CRC %s, markers out %s / in %s, IRD %u, ORD %u%s\n", who, p->rev,
	       p->enhanced ? " enhanced" : "", p->crc ? "on" : "off", p->markers_tx ? "yes" : "no",
	       p->markers_rx ? "yes" : "no", p->ird, p->ord, p->p2p ? ", peer-to-peer" : "");
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	const char *pcap = "uwarp-demo.pcap";
	bool markers = false, crc = true;
	uint32_t emss = 1460;
	struct mpa_session s;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pcap") && i + 1 < argc) {
			pcap = argv[++i];
		} else if (!strcmp(argv[i], "--markers")) {
			markers = true;
		} else if (!strcmp(argv[i], "--no-crc")) {
			crc = false;
		} else if (!strcmp(argv[i], "--emss") && i + 1 < argc) {
			/* TCP's effective MSS: Linux's least is 88 (its
			 * TCP_MIN_MSS), and an FPDU is at most 64 KiB; below
			 * some 30 bytes not even a DDP header fits */
			emss = (uint32_t)tool_opt_uint(argv[0], "--emss", argv[++i], 88, 65535);
		} else if (!strcmp(argv[i], "--help")) {
			usage(stdout, argv[0]);
			return 0;
		} else {
			const char *prog =
				strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
			fprintf(stderr, "%s: '%s': not an option, or its value is missing\n", prog,
				argv[i]);
			usage(stderr, prog);
			return 2;
		}
	}

	mpa_session_init(&s);
	s.pol[0].crc = s.pol[1].crc = crc;
	s.pol[0].markers_rx = s.pol[1].markers_rx = markers;
	s.pol[0].ird = 4;
	s.pol[0].ord = 8;
	s.pol[1].ird = 2;
	s.pol[1].ord = 16;

	printf("uwarp demo: MPA between two in-process endpoints (CRC32c engine: %s)\n\n",
	       crc32c_engine());
	printf("1. Connection setup\n");
	int rc = mpa_session_connect(&s, (const uint8_t *)"hello from uwarp", 16,
				     (const uint8_t *)"welcome", 7);
	hexdump("MPA Request", s.req, s.req_len);
	hexdump("MPA Reply", s.rep, s.rep_len);
	if (rc) {
		printf("  refused by the %s: %s\n", s.refused_by ? "responder" : "initiator",
		       mpa_refusal_str(s.verdict.reason));
		return 1;
	}
	show_params("initiator", &s.params[0]);
	show_params("responder", &s.params[1]);

	printf("\n2. Full operation: FPDUs both ways (EMSS %u)\n", emss);
	static const uint32_t sizes[] = { 0, 4, 5, 64, 1000, 4096, 9000, 20000, 1 };
	size_t n = sizeof(sizes) / sizeof(sizes[0]);
	for (int d = 0; d < 2; d++) {
		struct rddp_error err;
		mpa_session_send(&s, d, sizes, n, fpdu_mulpdu(emss, s.params[d].markers_tx),
				 (uint32_t)d + 1);
		size_t bad = mpa_session_check(&s, d, &err);
		printf("  %s -> %s: %zu messages, %zu FPDUs, %zu bytes on the wire: %s\n",
		       d ? "responder" : "initiator", d ? "initiator" : "responder", n,
		       s.stream[d].n, s.stream[d].len, bad ? "MISMATCH" : "received intact");
		if (bad) {
			printf("  receive error: %s\n", err.what ? err.what : "payload differs");
			return 1;
		}
	}

	printf("\n3. A corrupted byte is caught\n");
	struct fpdu_stream *st = &s.stream[0];
	size_t pos = st->fpdus[2].wire_start + 20;
	st->bytes[pos] ^= 0x01;
	struct rddp_error err;
	if (!mpa_session_check(&s, 0, &err) || !crc) {
		printf("  %s\n", crc ? "NOT DETECTED" : "CRC is off: nothing to detect it with");
	} else {
		printf("  receiver stops with Terminate layer %u etype %u ecode 0x%02x (%s)\n",
		       err.layer, err.etype, err.ecode, err.what);
	}
	st->bytes[pos] ^= 0x01;

	rc = mpa_session_write_pcap(&s, pcap);
	if (rc) {
		fprintf(stderr, "writing %s: %s\n", pcap, strerror(-rc));
		return 1;
	}
	printf("\n4. Capture written to %s (decode it with tshark -r %s -V)\n", pcap, pcap);
	mpa_session_free(&s);
	return 0;
}
