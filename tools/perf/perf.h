/*
 * perf.h: uwarp-perf, shared between its client, server and TCP baseline.
 */
#ifndef UWARP_PERF_H
#define UWARP_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uwarp/verbs.h>
#include "util/clock.h"

#define PERF_MAGIC 0x55575046u /* "UWPF" */
#define PERF_VERSION 1
#define PERF_MAX_BUF (256u << 20)

enum perf_op { OP_SEND, OP_WRITE, OP_READ, OP_IMM, OP_ATOMIC, OP_COUNT };
enum perf_mode { MODE_BW, MODE_LAT };

/* What the client tells the server in its MPA private data. */
struct perf_hello {
	uint32_t magic;
	uint8_t version, op, mode, verify;
	uint64_t size;
	uint32_t slots;
	uint32_t depth;
	uint64_t client_addr; /* write latency: where the server writes back */
	uint32_t client_rkey;
	uint32_t flags; /* PERF_HELLO_* */
};

/* The client wants markers both ways: the server asks for them too. */
#define PERF_HELLO_MARKERS 1u
/* --wait adaptive: the server waits for this client's messages so too */
#define PERF_HELLO_WAIT_ADAPTIVE 2u

/* What the server answers in its accept private data. */
struct perf_welcome {
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint64_t len;
	uint32_t slots;
	uint32_t pad;
};

struct perf_opts {
	bool server, loop;
	const char *host;
	const char *bind;
	int port;
	enum perf_op op;
	uint64_t size;
	uint64_t iters;
	double seconds;
	double interval; /* reports every so many seconds (0: none); -1: the default */
	enum perf_mode mode;
	enum uw_crc_mode crc;
	int markers;
	enum uw_progress progress;
	int qps;
	int depth;
	int sge;
	int rev;
	bool tcp;
	bool json;
	bool verify;
	bool quiet;
	bool wait_adaptive; /* latency: sleep while the CPU is busy (--wait adaptive) */
	/* server: peers ask, the server decides */
	int max_conns;    /* sessions at once; more are refused */
	uint64_t max_mem; /* bytes of buffers over all sessions */
};

#define PERF_DEFAULT_MAX_CONNS 16384 /* four clients at the client's largest --qps */
#define PERF_DEFAULT_MAX_MEM (1ull << 30)

const char *perf_op_name(enum perf_op op);
/* Slot s's pattern is a window of one pseudo-random reference buffer,
 * starting s % PERF_PATTERN_SHIFTS bytes in: filling is a memcpy and
 * checking a memcmp, so verification costs little even at 64 MiB. */
#define PERF_PATTERN_SHIFTS 4093
/* Make the reference long enough for messages of len bytes. */
int perf_pattern_init(uint64_t len);
void perf_fill(uint8_t *p, uint64_t len, uint64_t slot);
/* Index of the first byte that differs from the pattern, or len. */
uint64_t perf_check(const uint8_t *p, uint64_t len, uint64_t slot);

/* One wait of a latency loop (perf_wait.c): each turn that found nothing
 * asks perf_wait_spin whether to poll again (true) or to sleep now (the
 * CPU is busy); perf_wait_end when what it waited for came. @busy: always
 * poll (--wait poll). Zero it before its first use. */
struct perf_wait {
	bool busy, begun;
	uint64_t last; /* ns: the last turn */
};
bool perf_wait_spin(struct perf_wait *w);
void perf_wait_end(struct perf_wait *w);
/* Sleep until network input waits (manual progress; with automatic
 * progress, where nothing says a Write was placed, it only yields). */
void perf_wait_net(struct uw_context *ctx, enum uw_progress progress);

int perf_server(const struct perf_opts *o);
int perf_client(const struct perf_opts *o);

/* The TCP baseline: the same pattern over a plain socket pair. */
struct perf_result {
	double gbps;
	double lat_p50_us, lat_p99_us;
	uint64_t iters, bytes;
	uint64_t errors;
	double cpu_s;
};
/* The baseline's listener, on tcp_port (the uwarp port + 1). */
int perf_tcp_server_start(const struct perf_opts *o, int tcp_port);
int perf_tcp_client(const struct perf_opts *o, struct perf_result *r);

#endif
