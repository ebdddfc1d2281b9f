/*
 * exs-pump: a blast tool for ES-API sockets. A client sends as fast as it
 * can, keeping --sends operations outstanding; the server keeps --recvs
 * receives outstanding (the client tells it how many in a job message,
 * and starts only on the server's "ok" once they are all posted, as the
 * EXS papers' pumpexs does), checks every byte and reports. Both ends print throughput, time per message, CPU use and
 * the transfer counts of the dynamic stream protocol.
 *
 *   exs-pump -s [-p PORT] [--loop] [--ring BYTES] [--crc on|off]
 *   exs-pump -c HOST [-p PORT] [--type stream|seqpacket]
 *            [--mode dynamic|direct|indirect|paper] [--size BYTES|exp:MEAN:MAX]
 *            [--sends N] [--recvs N] [--rsize BYTES]
 *            (--time SECONDS | --bytes N) [--flow credit|rdma|rdma-auto]
 *            [--burst N (--compute USEC | --idle USEC)] [--json]
 *
 * --burst: the SDP paper's progress test. The client posts N sends, then
 * computes for USEC microseconds outside the library (--idle: sleeps
 * instead, the application busy elsewhere than this CPU), then waits for
 * the N sends to complete; it reports the time per round. With a flow
 * control that makes progress by itself the waiting sends move during the
 * computation; without it they wait for the next call.
 *
 * The server listens on PORT for SOCK_STREAM and PORT+1 for SOCK_SEQPACKET
 * (default 7480; 0 picks a free pair and prints it).
 */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <exs.h>

#include "pump_pattern.h"
#include "pump_pingpong.h"
#include "tools/lib/tool_conn.h"
#include "tools/lib/tool_interval.h"
#include "tools/lib/tool_opt.h"
#include "util/clock.h"

/* "PUM3": the job, then the server's "ok" (an older exs-pump fails at once) */
#define JOB_MAGIC 0x50554d33u
#define HDR_LEN 128

#define JOB_NO_VERIFY 1u /* job flags */
#define JOB_PINGPONG 2u  /* echo messages of rsize bytes (pump_pingpong.c) */
#define JOB_SAMPLE 4u    /* sample the ring's occupancy while receiving */
#define JOB_WAITALL 8u   /* receives with MSG_WAITALL */
/* bits 8-11 carry the rules (EXS_SO_RULES, --rules) for the server's
 * socket, the client's own take them too; without JOB_RULES both keep the
 * default */
#define JOB_RULES 16u
#define JOB_RULES_SHIFT 8

struct job {
	uint32_t magic, recvs, rsize, flags;
	uint64_t seed, bytes; /* bytes: 0 when sending for a time */
};

struct result {
	uint32_t magic, ok;
	uint64_t bytes, msgs, bad_at;
	double cpu, secs;
	uint64_t copied, ring_used; /* the server's ring: data and room it took */
	double occupancy;           /* JOB_SAMPLE: mean data held / ring size */
};
_Static_assert(sizeof(struct result) <= HDR_LEN, "a result fits its header");

struct opts {
	bool server, loop, json, no_imm, no_verify;
	int crc;
	const char *host;
	int port;
	int type, mode, sends, recvs;
	size_t size, mean, max;
	bool exp;
	double time;
	uint64_t bytes;
	int flow;           /* -1: the library's default */
	size_t rsize;       /* the server's receives (0: the largest message) */
	size_t ring;        /* server: its ring (0: the default) */
	int burst;          /* progress test: sends per round (0: off) */
	double compute_us;  /* ...and the computation between rounds */
	bool idle;          /* ...spent asleep, not spinning */
	bool pingpong;      /* latency: one message each way per round */
	bool occupancy;     /* sample the server's ring occupancy */
	bool waitall;       /* the server\'s receives wait to be full */
	size_t credit_size; /* EXS_SO_CREDIT_SIZE (0: the default) */
	int rules;          /* EXS_RULE_* of the server's receiving side (-1: default) */
	double interval;    /* reports every so many seconds (0: none; -1: default) */
};

static double cpu(void)
{
	struct rusage r;
	getrusage(RUSAGE_SELF, &r);
	return (double)r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6 + (double)r.ru_stime.tv_sec +
	       r.ru_stime.tv_usec / 1e6;
}

static void die(const char *what)
{
	fprintf(stderr, "exs-pump: %s: %s\n", what, strerror(errno));
	exit(1);
}

/* one event, waiting for it */
static exs_event_t next_event(exs_qhandle_t q)
{
	exs_event_t ev;
	if (exs_qdequeue(q, &ev, -1, NULL) != 1)
		die("exs_qdequeue");
	return ev;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (double)(rng_state >> 11) / 9007199254740992.0;
}

static size_t next_size(const struct opts *o)
{
	if (!o->exp)
		return o->size;
	double v = -log(1.0 - uniform()) * (double)o->mean;
	size_t n = (size_t)v;
	return n < 1 ? 1 : n > o->max ? o->max : n;
}

/* ---- server ---- */

/* One connection's run. A failure ends this connection alone, in one line
 * on stderr: a --loop server serves others meanwhile and goes on after.
 * Returns 0, or 1 when the connection failed. */
/* The server's side of --pingpong: "ok", echo until the client's end of
 * stream, then the result. 0, or -1 with errno. */
static int serve_pingpong(int fd, const struct job *j, uint8_t *hdr)
{
	if (exs_send(fd, "ok", 2, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) != 2)
		return -1;
	double t0 = util_now_s(), c0 = cpu();
	int64_t rounds = pingpong_serve(fd, j->rsize);
	if (rounds < 0)
		return -1;
	struct result r = { .magic = JOB_MAGIC,
			    .ok = 1,
			    .bytes = (uint64_t)rounds * j->rsize,
			    .msgs = (uint64_t)rounds,
			    .bad_at = UINT64_MAX,
			    .cpu = cpu() - c0,
			    .secs = util_now_s() - t0 };
	printf("server: ping-pong, %lld rounds of %u bytes, %.3f s\n", (long long)rounds, j->rsize,
	       r.secs);
	fflush(stdout);
	memset(hdr, 0, HDR_LEN);
	memcpy(hdr, &r, sizeof(r));
	if (exs_send(fd, hdr, HDR_LEN, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) !=
	    HDR_LEN)
		return -1;
	return 0;
}

static int serve(int fd, int type)
{
	exs_qhandle_t q = exs_qcreate(EXS_MAX_RECVS + 4);
	uint8_t hdr[HDR_LEN];
	uint8_t *buf = NULL;
	exs_mhandle_t mh = EXS_MHANDLE_INVALID;
	const char *failed = NULL;
	int out = 0;
	struct ring_sampler rs;
	bool sampling = false;
	if (q == EXS_QHANDLE_INVALID) {
		failed = "exs_qcreate";
		goto end;
	}
	if (exs_recv(fd, hdr, HDR_LEN, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL,
		     EXS_MHANDLE_INVALID) != HDR_LEN) {
		failed = "reading the job";
		goto end;
	}
	struct job j;
	memcpy(&j, hdr, sizeof(j));
	if (j.magic != JOB_MAGIC || !j.recvs || j.recvs > EXS_MAX_RECVS || !j.rsize) {
		errno = EPROTO;
		failed = "not a job";
		goto end;
	}
	if (j.flags & JOB_PINGPONG) {
		out = serve_pingpong(fd, &j, hdr);
		failed = out ? "ping-pong" : NULL;
		goto end;
	}
	size_t slab = (size_t)j.recvs * j.rsize;
	buf = aligned_alloc(4096, (slab + 4095) / 4096 * 4096);
	mh = buf ? exs_mregister(buf, slab, EXS_ACCESS_WRITE) : EXS_MHANDLE_INVALID;
	if (!mh) {
		failed = "buffers";
		goto end;
	}
	int rflags = j.flags & JOB_WAITALL ? MSG_WAITALL : 0;
	int rules = (int)(j.flags >> JOB_RULES_SHIFT) & EXS_RULES_ALL;
	if ((j.flags & JOB_RULES) && type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_RULES, &rules, sizeof(rules))) {
		failed = "EXS_SO_RULES";
		goto end;
	}
	double t0 = util_now_s(), c0 = cpu();
	sampling = (j.flags & JOB_SAMPLE) && type == SOCK_STREAM && !ring_sampler_start(&rs, fd);
	for (uint32_t i = 0; i < j.recvs; i++, out++)
		if (exs_recv(fd, buf + (size_t)i * j.rsize, j.rsize, rflags, q,
			     (void *)(uintptr_t)i, mh)) {
			failed = "exs_recv";
			goto end;
		}
	/* "ok": every receive is posted (and advertised); the client starts
	 * now, as the UNH EXS papers' pumpexs does */
	if (exs_send(fd, "ok", 2, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) != 2) {
		failed = "sending ok";
		goto end;
	}
	uint64_t off = 0, msgs = 0, bad = UINT64_MAX;
	bool eof = false;
	while (out) {
		exs_event_t ev = next_event(q);
		out--;
		if (ev.exs_evt_errno) {
			errno = ev.exs_evt_errno;
			failed = "receive";
			goto end;
		}
		ssize_t n = ev.exs_evt_union.xfer.bytes;
		if (n == 0) {
			eof = true;
			continue;
		}
		uint32_t i = (uint32_t)(uintptr_t)ev.exs_evt_ahandle;
		uint64_t b = j.flags & JOB_NO_VERIFY ? UINT64_MAX
						     : pump_check(buf + (size_t)i * j.rsize,
								  (size_t)n, off, j.seed);
		if (b != UINT64_MAX && bad == UINT64_MAX)
			bad = b;
		off += (uint64_t)n;
		msgs++;
		if (!eof) {
			if (exs_recv(fd, buf + (size_t)i * j.rsize, j.rsize, rflags, q,
				     ev.exs_evt_ahandle, mh)) {
				failed = "exs_recv";
				goto end;
			}
			out++;
		}
	}
	double held = sampling ? ring_sampler_stop(&rs) : 0;
	sampling = false;
	struct exs_stream_counters c = { 0 };
	socklen_t cl = sizeof(c);
	int ring = 0;
	socklen_t rl = sizeof(ring);
	if (type == SOCK_STREAM) {
		exs_getsockopt(fd, SOL_EXS, EXS_SO_COUNTERS, &c, &cl);
		exs_getsockopt(fd, SOL_EXS, EXS_SO_RING_SIZE, &ring, &rl);
	}
	struct result r = { JOB_MAGIC,
			    bad == UINT64_MAX && (!j.bytes || off == j.bytes),
			    off,
			    msgs,
			    bad,
			    cpu() - c0,
			    util_now_s() - t0,
			    c.copied,
			    c.ring_used,
			    ring > 0 ? held / ring : 0 };
	/* said before the client hears it: a client that has its result
	 * finds the server's line already there (test_exs_pump_server counts
	 * them once its clients are done, and once counted one short) */
	printf("server: %s %llu bytes in %llu receives, %s, %.3f s, cpu %.3f s\n",
	       type == SOCK_STREAM ? "stream" : "seqpacket", (unsigned long long)off,
	       (unsigned long long)msgs,
	       !r.ok                     ? "DATA WRONG"
	       : j.flags & JOB_NO_VERIFY ? "data not checked"
					 : "data verified",
	       r.secs, r.cpu);
	fflush(stdout);
	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, &r, sizeof(r));
	if (exs_send(fd, hdr, HDR_LEN, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) !=
	    HDR_LEN) {
		failed = "sending the result";
		goto end;
	}
end:
	if (sampling)
		ring_sampler_stop(&rs);
	if (failed)
		fprintf(stderr, "exs-pump: server: a connection failed: %s: %s\n", failed,
			strerror(errno));
	/* the close cancels what is still posted; its events go with the queue */
	exs_close(fd, EXS_QHANDLE_INVALID, NULL);
	if (mh)
		exs_mderegister(&mh);
	free(buf);
	if (q != EXS_QHANDLE_INVALID)
		exs_qdelete(q);
	return failed ? 1 : 0;
}

struct conn_arg {
	int fd, type;
};

static void *serve_thread(void *arg)
{
	struct conn_arg a = *(struct conn_arg *)arg;
	free(arg);
	serve(a.fd, a.type);
	return NULL;
}

static size_t server_ring;
static int server_crc = 1;
/* the flow control of the server's own sends (ping-pong replies), and
 * the credit slots of either end's (0: the defaults) */
static int server_flow = -1;
static int credit_size;
/* --sockets system: the stream's sockets are the system's (socket(2),
 * accept(2), connect(2)) and the ES-API's calls on them run in plain TCP;
 * --sockets ddp: the same sockets switched to DDP mode at both ends
 * (exs_setsockopt(SOL_ESOCK, ESOCK_DDPMODE)) */
static bool system_sockets, ddp_sockets;
static const int ddp_on = 1;

/* a system listener on port (0: any), or -1 when the port is taken */
static int listen_system(int port)
{
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)))
		die("socket");
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || listen(fd, SOMAXCONN)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* a listener on port (0: any), or -1 when the port is taken */
static int listen_try(int type, int port)
{
	if (system_sockets && type == SOCK_STREAM)
		return listen_system(port);
	int fd = exs_socket(AF_INET, type, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (fd < 0 || exs_bind(fd, (struct sockaddr *)&a, sizeof(a)))
		die("socket");
	if (exs_setsockopt(fd, SOL_EXS, EXS_SO_CRC, &server_crc, sizeof(server_crc)))
		die("EXS_SO_CRC");
	int ring = (int)server_ring;
	if (ring && type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_RING_SIZE, &ring, sizeof(ring)))
		die("EXS_SO_RING_SIZE");
	if (server_flow >= 0 && type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_FLOW, &server_flow, sizeof(server_flow)))
		die("EXS_SO_FLOW");
	if (credit_size && type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_CREDIT_SIZE, &credit_size, sizeof(credit_size)))
		die("EXS_SO_CREDIT_SIZE");
	/* as many waiting clients as the system allows a listener */
	if (exs_listen(fd, SOMAXCONN)) {
		exs_close(fd, EXS_QHANDLE_INVALID, NULL);
		return -1;
	}
	return fd;
}

static int listen_on(int type, int port)
{
	int fd = listen_try(type, port);
	if (fd < 0)
		die("listen");
	return fd;
}

static int run_server(const struct opts *o)
{
	int port = o->port, ls, lq, rc = 0;
	if (port) {
		ls = listen_on(SOCK_STREAM, port);
		lq = listen_on(SOCK_SEQPACKET, port + 1);
	} else {
		/* -p 0: a free pair of ports */
		for (;;) {
			ls = listen_try(SOCK_STREAM, 0);
			if (ls < 0)
				die("listen");
			struct sockaddr_in a;
			socklen_t al = sizeof(a);
			exs_getsockname(ls, (struct sockaddr *)&a, &al);
			port = ntohs(a.sin_port);
			if (port < 65535 && (lq = listen_try(SOCK_SEQPACKET, port + 1)) >= 0)
				break;
			exs_close(ls, EXS_QHANDLE_INVALID, NULL);
		}
	}
	printf("server: listening on port %d (stream) and %d (seqpacket)\n", port, port + 1);
	fflush(stdout);
	do {
		struct pollfd pf[2] = { { ls, POLLIN, 0 }, { lq, POLLIN, 0 } };
		if (exs_poll(pf, 2, -1) < 0)
			die("exs_poll");
		int l = pf[0].revents ? ls : lq;
		int fd = system_sockets && l == ls
				 ? accept4(l, NULL, NULL, SOCK_CLOEXEC)
				 : exs_accept(l, NULL, NULL, EXS_QHANDLE_INVALID, NULL);
		/* (returns at once: the client's first bytes decide) */
		if (fd >= 0 && ddp_sockets && l == ls &&
		    exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &ddp_on, sizeof(ddp_on)))
			die("ESOCK_DDPMODE");
		if (fd < 0) {
			/* a client that failed its negotiation: others may come */
			if (!o->loop)
				die("exs_accept");
			fprintf(stderr, "exs-pump: server: exs_accept: %s\n", strerror(errno));
			continue;
		}
		int type = l == ls ? SOCK_STREAM : SOCK_SEQPACKET;
		if (!o->loop) {
			rc = serve(fd, type);
			break;
		}
		/* --loop: each client in a thread of its own, so that a slow,
		 * silent or failing one holds up nobody else */
		struct conn_arg *a = malloc(sizeof(*a));
		pthread_t t;
		pthread_attr_t at;
		pthread_attr_init(&at);
		pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
		if (a) {
			*a = (struct conn_arg){ fd, type };
			if (pthread_create(&t, &at, serve_thread, a)) {
				free(a);
				a = NULL;
			}
		}
		pthread_attr_destroy(&at);
		if (!a) {
			fprintf(stderr, "exs-pump: server: no thread for a connection\n");
			exs_close(fd, EXS_QHANDLE_INVALID, NULL);
		}
	} while (o->loop);
	exs_close(ls, EXS_QHANDLE_INVALID, NULL);
	exs_close(lq, EXS_QHANDLE_INVALID, NULL);
	return rc;
}

/* ---- client ---- */

static void compute(double us, bool idle)
{
	if (idle) {
		struct timespec ts = { (time_t)(us / 1e6), (long)(fmod(us, 1e6) * 1e3) };
		while (nanosleep(&ts, &ts) && errno == EINTR) {
		}
		return;
	}
	double end = util_now_s() + us / 1e6;
	while (util_now_s() < end) {
		/* the application's work: no ES-API call */
	}
}

/* the client's sending side */
struct sender {
	const struct opts *o;
	int fd;
	exs_qhandle_t q;
	uint8_t *buf; /* one slot of the largest message per outstanding send */
	size_t max;
	exs_mhandle_t mh;
	uint64_t seed, off, msgs;
};

/* The next message, from buffer slot @slot (its ahandle): its size drawn
 * and cut to --bytes, its pattern written (unless --no-verify), posted. */
static void send_next(struct sender *t, size_t slot)
{
	const struct opts *o = t->o;
	size_t n = next_size(o);
	if (o->bytes && t->off + n > o->bytes)
		n = (size_t)(o->bytes - t->off);
	uint8_t *b = t->buf + slot * t->max;
	if (!o->no_verify)
		pump_fill(b, n, t->off, t->seed);
	if (exs_send(t->fd, b, n, 0, t->q, (void *)(uintptr_t)slot, t->mh))
		die("exs_send");
	t->off += n;
	t->msgs++;
}

/* The progress test's rounds until the time or the bytes are done;
 * returns how many. */
static uint64_t burst_rounds(struct sender *t, double until)
{
	const struct opts *o = t->o;
	uint64_t rounds = 0;
	for (bool more = true; more; rounds++) {
		int posted = 0;
		for (int i = 0; i < o->burst && more; i++) {
			send_next(t, (size_t)i);
			posted++;
			more = !o->bytes || t->off < o->bytes;
		}
		compute(o->compute_us, o->idle);
		exs_event_t ev[EXS_MAX_SENDS];
		if (exs_qdequeue(t->q, ev, -posted, NULL) != posted)
			die("exs_qdequeue");
		for (int i = 0; i < posted; i++)
			if (ev[i].exs_evt_errno) {
				errno = ev[i].exs_evt_errno;
				die("send");
			}
		if (!o->bytes && util_now_s() >= until)
			more = false;
	}
	return rounds;
}

static const char *const mode_names[] = { "dynamic", "direct", "indirect", "paper", "tcp" };
static const char *const flow_names[] = { "rdma-auto", "rdma", "credit", "none" };

/* --pingpong: rounds until --time (or --bytes' worth), then the server's
 * result; half round trips as the SDP paper reports them. */
static int client_pingpong(const struct opts *o, int fd, uint8_t *hdr)
{
	struct pingpong_result pr;
	uint64_t rounds = o->bytes ? (o->bytes + o->size - 1) / o->size : 0;
	if (pingpong_run(fd, o->size, o->time, rounds, !o->no_verify, o->interval, &pr))
		die("ping-pong");
	if (exs_shutdown(fd, SHUT_WR, EXS_QHANDLE_INVALID, NULL))
		die("exs_shutdown");
	if (exs_recv(fd, hdr, HDR_LEN, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL,
		     EXS_MHANDLE_INVALID) != HDR_LEN)
		die("result");
	struct result r;
	memcpy(&r, hdr, sizeof(r));
	bool ok = r.magic == JOB_MAGIC && r.ok && r.msgs == pr.rounds && pr.echoed;
	int flow = 3, mode = system_sockets && !ddp_sockets ? 4 : o->mode;
	socklen_t fl = sizeof(flow);
	if (o->type == SOCK_STREAM && (!system_sockets || ddp_sockets))
		exs_getsockopt(fd, SOL_EXS, EXS_SO_FLOW, &flow, &fl);
	if (o->json)
		printf("{\"type\":\"%s\",\"mode\":\"%s\",\"flow\":\"%s\",\"pingpong\":true,"
		       "\"size\":%zu,\"rounds\":%llu,\"seconds\":%.6f,\"half_rtt_mean_us\":%.3f,"
		       "\"half_rtt_p50_us\":%.3f,\"half_rtt_p99_us\":%.3f,\"checked\":%s,"
		       "\"verified\":%s}\n",
		       o->type == SOCK_STREAM ? "stream" : "seqpacket", mode_names[mode],
		       flow_names[flow], o->size, (unsigned long long)pr.rounds, pr.secs,
		       pr.half_rtt_mean_us, pr.half_rtt_p50_us, pr.half_rtt_p99_us,
		       o->no_verify ? "false" : "true", ok && !o->no_verify ? "true" : "false");
	else
		printf("client: ping-pong %s %s, flow %s, %zu bytes: %llu rounds, half round "
		       "trip mean %.2f us, p50 %.2f, p99 %.2f; replies %s\n",
		       o->type == SOCK_STREAM ? "stream" : "seqpacket", mode_names[mode],
		       flow_names[flow], o->size, (unsigned long long)pr.rounds,
		       pr.half_rtt_mean_us, pr.half_rtt_p50_us, pr.half_rtt_p99_us,
		       !ok            ? "WRONG"
		       : o->no_verify ? "not checked"
				      : "equal to their messages");
	exs_close(fd, EXS_QHANDLE_INVALID, NULL);
	return ok ? 0 : 2;
}

static int run_client(const struct opts *o)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai;
	char port[16];
	snprintf(port, sizeof(port), "%d", o->port + (o->type == SOCK_SEQPACKET));
	if (getaddrinfo(o->host, port, &hints, &ai)) {
		fprintf(stderr, "exs-pump: cannot resolve %s\n", o->host);
		return 1;
	}
	int fd;
	if (system_sockets) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen))
			die("connect");
		if (ddp_sockets &&
		    exs_setsockopt(fd, SOL_ESOCK, ESOCK_DDPMODE, &ddp_on, sizeof(ddp_on)))
			die("ESOCK_DDPMODE");
		goto connected;
	}
	fd = exs_socket(AF_INET, o->type, 0);
	if (fd < 0)
		die("exs_socket");
	if (o->type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_STREAM_MODE, &o->mode, sizeof(o->mode)))
		die("EXS_SO_STREAM_MODE");
	int crc = o->crc;
	if (exs_setsockopt(fd, SOL_EXS, EXS_SO_CRC, &crc, sizeof(crc)))
		die("EXS_SO_CRC");
	int no_imm = o->no_imm;
	if (exs_setsockopt(fd, SOL_EXS, EXS_SO_NO_IMMEDIATE, &no_imm, sizeof(no_imm)))
		die("EXS_SO_NO_IMMEDIATE");
	if (o->flow >= 0 && exs_setsockopt(fd, SOL_EXS, EXS_SO_FLOW, &o->flow, sizeof(o->flow)))
		die("EXS_SO_FLOW");
	if (credit_size && o->type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_CREDIT_SIZE, &credit_size, sizeof(credit_size)))
		die("EXS_SO_CREDIT_SIZE");
	/* the sending side's rule (hold) is this socket's */
	if (o->rules >= 0 && o->type == SOCK_STREAM &&
	    exs_setsockopt(fd, SOL_EXS, EXS_SO_RULES, &o->rules, sizeof(o->rules)))
		die("EXS_SO_RULES");
	if (exs_connect(fd, ai->ai_addr, ai->ai_addrlen, EXS_QHANDLE_INVALID, NULL)) {
		char peer[300];
		snprintf(peer, sizeof(peer), "%s port %d", o->host, o->port);
		tool_connect_failed("exs-pump", peer, errno);
		exit(1);
	}
connected:
	freeaddrinfo(ai);
	size_t max = o->exp ? o->max : o->size;
	struct job j = { JOB_MAGIC,
			 (uint32_t)o->recvs,
			 (uint32_t)(o->pingpong ? max
				    : o->rsize  ? o->rsize
						: max),
			 (o->no_verify ? JOB_NO_VERIFY : 0) | (o->pingpong ? JOB_PINGPONG : 0) |
				 (o->occupancy ? JOB_SAMPLE : 0) | (o->waitall ? JOB_WAITALL : 0) |
				 (o->rules >= 0 ? JOB_RULES | (uint32_t)o->rules << JOB_RULES_SHIFT
						: 0),
			 (uint64_t)time(NULL),
			 o->bytes };
	uint8_t hdr[HDR_LEN] = { 0 };
	memcpy(hdr, &j, sizeof(j));
	if (exs_send(fd, hdr, HDR_LEN, 0, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) !=
	    HDR_LEN)
		die("job");
	char go[2];
	if (exs_recv(fd, go, 2, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL, EXS_MHANDLE_INVALID) != 2 ||
	    memcmp(go, "ok", 2))
		die("waiting for the server's ok");
	if (o->pingpong)
		return client_pingpong(o, fd, hdr);
	size_t slab = (size_t)o->sends * max;
	uint8_t *buf = aligned_alloc(4096, (slab + 4095) / 4096 * 4096);
	exs_mhandle_t mh = buf ? exs_mregister(buf, slab, EXS_ACCESS_READ) : EXS_MHANDLE_INVALID;
	if (!mh)
		die("buffers");
	exs_qhandle_t q = exs_qcreate(o->sends + 4);
	double t0 = util_now_s(), c0 = cpu(), until = t0 + o->time;
	struct sender t = { o, fd, q, buf, max, mh, j.seed, 0, 0 };
	int out = 0;
	bool more = true;
	uint64_t rounds = 0, done_msgs = 0, done_bytes = 0;
	struct tool_interval iv;
	tool_interval_start(&iv, o->burst ? 0 : o->interval, t0, stdout);
	if (o->burst)
		rounds = burst_rounds(&t, until);
	/* (the progress test has done its sends) */
	for (int i = o->burst ? o->sends : 0; i < o->sends || out;) {
		if (more && i < o->sends) {
			send_next(&t, (size_t)i);
			out++;
			i++;
			more = o->bytes ? t.off < o->bytes : util_now_s() < until;
			continue;
		}
		exs_event_t ev = next_event(q);
		out--;
		if (ev.exs_evt_errno) {
			errno = ev.exs_evt_errno;
			die("send");
		}
		done_msgs++;
		done_bytes += (uint64_t)ev.exs_evt_union.xfer.bytes;
		double now = util_now_s();
		tool_interval_tick(&iv, now, done_msgs, done_bytes, -1);
		more = o->bytes ? t.off < o->bytes : now < until;
		if (!more) {
			i = o->sends; /* drain */
			continue;
		}
		send_next(&t, (uintptr_t)ev.exs_evt_ahandle);
		out++;
	}
	tool_interval_finish(&iv, util_now_s(), done_msgs, done_bytes, -1);
	uint64_t off = t.off, msgs = t.msgs;
	/* the peer has every byte when the shutdown completes */
	if (exs_shutdown(fd, SHUT_WR, EXS_QHANDLE_INVALID, NULL))
		die("exs_shutdown");
	double secs = util_now_s() - t0, ccpu = cpu() - c0;
	struct exs_stream_counters c = { 0 };
	socklen_t cl = sizeof(c);
	exs_getsockopt(fd, SOL_EXS, EXS_SO_COUNTERS, &c, &cl); /* (none: system sockets) */
	if (exs_recv(fd, hdr, HDR_LEN, MSG_WAITALL, EXS_QHANDLE_INVALID, NULL,
		     EXS_MHANDLE_INVALID) != HDR_LEN)
		die("result");
	struct result r;
	memcpy(&r, hdr, sizeof(r));
	bool ok = r.magic == JOB_MAGIC && r.ok && r.bytes == off;
	double gbps = (double)off * 8 / secs / 1e9;
	double ratio =
		c.direct + c.indirect ? (double)c.direct / (double)(c.direct + c.indirect) : 0;
	double util = r.ring_used ? (double)r.copied / (double)r.ring_used : 0;
	double us_round = rounds ? secs * 1e6 / (double)rounds : 0;
	const char *const *modes = mode_names, *const *flows = flow_names;
	int flow = 3; /* messages have no indirect path, nor plain TCP */
	socklen_t fl = sizeof(flow);
	int mode = system_sockets && !ddp_sockets ? 4 : o->mode;
	if (o->type == SOCK_STREAM && (!system_sockets || ddp_sockets))
		exs_getsockopt(fd, SOL_EXS, EXS_SO_FLOW, &flow, &fl);
	if (o->json) {
		printf("{\"type\":\"%s\",\"mode\":\"%s\",\"bytes\":%llu,\"messages\":%llu,"
		       "\"seconds\":%.6f,\"throughput_gbps\":%.4f,\"usec_per_msg\":%.3f,"
		       "\"direct\":%llu,\"indirect\":%llu,\"direct_ratio\":%.4f,\"switches\":%llu,"
		       "\"holds\":%llu,\"discarded\":%llu,\"cpu_client\":%.4f,\"cpu_server\":%.4f,"
		       "\"sends\":%d,\"recvs\":%d,\"flow\":\"%s\",\"coalesced\":%llu,"
		       "\"flushes\":%llu,\"ring_utilisation\":%.4f,\"ring_occupancy\":%.4f,"
		       "\"sendbuf\":%llu,\"rounds\":%llu,\"rules\":%d,"
		       "\"usec_per_round\":%.2f,\"checked\":%s,\"verified\":%s}\n",
		       o->type == SOCK_STREAM ? "stream" : "seqpacket", modes[mode],
		       (unsigned long long)off, (unsigned long long)msgs, secs, gbps,
		       secs * 1e6 / (double)(msgs ? msgs : 1), (unsigned long long)c.direct,
		       (unsigned long long)c.indirect, ratio, (unsigned long long)c.switches,
		       (unsigned long long)c.holds, (unsigned long long)c.discarded, ccpu / secs,
		       r.cpu / (r.secs > 0 ? r.secs : 1), o->sends, o->recvs, flows[flow],
		       (unsigned long long)c.coalesced, (unsigned long long)c.flushes, util,
		       r.occupancy, (unsigned long long)c.sendbuf, (unsigned long long)rounds,
		       o->rules >= 0 ? o->rules : EXS_RULES_DEFAULT, us_round,
		       o->no_verify ? "false" : "true", ok && !o->no_verify ? "true" : "false");
	} else {
		printf("client: %s %s, %llu bytes in %llu sends: %.3f Gbit/s, %.2f us/message\n",
		       o->type == SOCK_STREAM ? "stream" : "seqpacket", modes[mode],
		       (unsigned long long)off, (unsigned long long)msgs, gbps,
		       secs * 1e6 / (double)(msgs ? msgs : 1));
		printf("client: direct %llu, indirect %llu (direct ratio %.3f), switches %llu, "
		       "holds %llu, adverts discarded %llu\n",
		       (unsigned long long)c.direct, (unsigned long long)c.indirect, ratio,
		       (unsigned long long)c.switches, (unsigned long long)c.holds,
		       (unsigned long long)c.discarded);
		printf("client: flow %s: %llu sends coalesced into %llu flushes; the server's "
		       "ring held %.1f%% data\n",
		       flows[flow], (unsigned long long)c.coalesced, (unsigned long long)c.flushes,
		       100 * util);
		if (o->occupancy)
			printf("client: the server's ring held %.1f%% of its size on average "
			       "(sampled each ms)\n",
			       100 * r.occupancy);
		if (rounds)
			printf("client: %llu rounds of %d sends and %.0f us %s: %.1f us per "
			       "round\n",
			       (unsigned long long)rounds, o->burst, o->compute_us,
			       o->idle ? "asleep" : "computing", us_round);
		printf("client: cpu %.0f%% client, %.0f%% server; data %s\n", 100 * ccpu / secs,
		       100 * r.cpu / (r.secs > 0 ? r.secs : 1),
		       !ok            ? "WRONG"
		       : o->no_verify ? "not checked"
				      : "verified by the server");
	}
	exs_close(fd, EXS_QHANDLE_INVALID, NULL);
	exs_mderegister(&mh);
	free(buf);
	exs_qdelete(q);
	return ok ? 0 : 2;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: exs-pump -s [-p PORT] [--loop] [--ring BYTES] [--crc on|off]\n"
		"                [--flow F] [--credit-size BYTES]  (the server's own sends)\n"
		"       exs-pump -c HOST [-p PORT] [--type stream|seqpacket]\n"
		"                [--mode dynamic|direct|indirect|paper] [--size "
		"BYTES|exp:MEAN:MAX]\n"
		"                [--sends N] [--recvs N] [--rsize BYTES]\n"
		"                (--time SECONDS | --bytes N) [--json]\n"
		"                [--flow credit|rdma|rdma-auto]  (indirect flow control)\n"
		"                [--burst N (--compute USEC | --idle USEC)]  (progress test: N\n"
		"                 sends, then compute or sleep, then wait for them)\n"
		"                [--no-imm]  (Write + Send instead of Immediate Data)\n"
		"                [--no-verify]  (neither write nor check the data pattern)\n"
		"                [--pingpong]  (latency: one --size message each way per\n"
		"                 round; half the round trip, mean, p50 and p99)\n"
		"                [--occupancy]  (the server samples its ring's data each ms:\n"
		"                 the SDP paper's buffer utilisation)\n"
		"                [--credit-size BYTES]  (credit flow's slot, default 8 KiB)\n"
		"                [--interval SECONDS]  (a report per interval; default 1 with\n"
		"                 --time, none with --json; 0: none)\n"
		"                [--waitall]  (the server's receives use MSG_WAITALL: each\n"
		"                 fills to --rsize before it completes)\n"
		"                [--crc on|off]  (ask for MPA CRC; default on; CRC is off\n"
		"                 only when both ends ask for that)\n"
		"                [--rules none|LIST]  (both ends follow these of uwarp's\n"
		"                 own rules, LIST of chain, probe, ack-empty (receiving)\n"
		"                 and hold (sending); EXS_SO_RULES, default\n"
		"                 chain,ack-empty,hold)\n"
		"  --sockets system (both ends): the stream's sockets are made by socket(2),\n"
		"                 accept(2) and connect(2), and the ES-API's calls on them\n"
		"                 run on plain TCP; --sockets ddp: the same sockets in DDP\n"
		"                 mode (SOL_ESOCK); default --sockets exs (uwarp's DDP)\n"
		"  -p PORT: the stream's port (default 7480; seqpacket on PORT+1); -p 0 on\n"
		"  the server picks free ports and prints them\n"
		"  defaults: --sends 8 --recvs 8 --size 1M --time 5 --mode dynamic, --flow\n"
		"  rdma-auto, --rsize the largest message, --ring 1M (the server's)\n");
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	struct opts o = { .port = 7480,
			  .type = SOCK_STREAM,
			  .sends = 8,
			  .recvs = 8,
			  .crc = 1,
			  .size = 1 << 20,
			  .time = 5,
			  .flow = -1,
			  .rules = -1,
			  .interval = -1 };
	static const struct option lo[] = { { "loop", no_argument, 0, 'L' },
					    { "type", required_argument, 0, 't' },
					    { "mode", required_argument, 0, 'm' },
					    { "size", required_argument, 0, 'z' },
					    { "sends", required_argument, 0, 'S' },
					    { "recvs", required_argument, 0, 'R' },
					    { "time", required_argument, 0, 'T' },
					    { "bytes", required_argument, 0, 'B' },
					    { "json", no_argument, 0, 'j' },
					    { "help", no_argument, 0, 'h' },
					    { "no-imm", no_argument, 0, 'I' },
					    { "crc", required_argument, 0, 'C' },
					    { "flow", required_argument, 0, 'F' },
					    { "rsize", required_argument, 0, 'r' },
					    { "ring", required_argument, 0, 'g' },
					    { "burst", required_argument, 0, 'b' },
					    { "compute", required_argument, 0, 'u' },
					    { "idle", required_argument, 0, 'i' },
					    { "no-verify", no_argument, 0, 'V' },
					    { "sockets", required_argument, 0, 'k' },
					    { "pingpong", no_argument, 0, 'P' },
					    { "occupancy", no_argument, 0, 'O' },
					    { "waitall", no_argument, 0, 'W' },
					    { "interval", required_argument, 0, 'v' },
					    { "credit-size", required_argument, 0, 'Z' },
					    { "rules", required_argument, 0, 'X' },
					    { 0, 0, 0, 0 } };
	static const char *const types[] = { "stream", "seqpacket", NULL };
	static const int type_of[] = { SOCK_STREAM, SOCK_SEQPACKET };
	static const char *const modes[] = { "dynamic", "direct", "indirect", "paper", NULL };
	static const int mode_of[] = { EXS_MODE_DYNAMIC, EXS_MODE_DIRECT, EXS_MODE_INDIRECT,
				       EXS_MODE_PAPER };
	static const char *const flows[] = { "credit", "rdma", "rdma-auto", NULL };
	static const int flow_of[] = { EXS_FLOW_CREDIT, EXS_FLOW_RDMA, EXS_FLOW_RDMA_AUTO };
	static const char *const off_on[] = { "off", "on", NULL };
	static const char *const sockets[] = { "exs", "system", "ddp", NULL };
	const char *p = "exs-pump";
	bool timed = false, counted = false, paced = false;
	int c;
	while ((c = getopt_long(argc, argv, "sc:p:h", lo, NULL)) != -1) {
		switch (c) {
		case 's':
			o.server = true;
			break;
		case 'c':
			o.host = optarg;
			break;
		case 'p':
			/* the SOCK_SEQPACKET port is the next one */
			o.port = (int)tool_opt_uint(p, "-p", optarg, 0, 65534);
			break;
		case 'L':
			o.loop = true;
			break;
		case 'j':
			o.json = true;
			break;
		case 'I':
			o.no_imm = true;
			break;
		case 'V':
			o.no_verify = true;
			break;
		case 'P':
			o.pingpong = true;
			break;
		case 'O':
			o.occupancy = true;
			break;
		case 'W':
			o.waitall = true;
			break;
		case 'v':
			/* 0 turns the reports off */
			o.interval = tool_opt_decimal(p, "--interval", optarg, 0, 86400);
			break;
		case 'X': {
			/* none, or a list of chain, probe, ack-empty, hold (EXS_SO_RULES) */
			static const char *const rules[] = { "chain", "probe", "ack-empty", "hold",
							     NULL };
			o.rules = 0;
			if (strcmp(optarg, "none"))
				for (char *save = NULL, *w = strtok_r(optarg, ",", &save); w;
				     w = strtok_r(NULL, ",", &save))
					o.rules |= 1 << tool_opt_word(p, "--rules", w, rules);
			break;
		}
		case 'Z':
			/* a power of two from 512 to 1 MiB (EXS_SO_CREDIT_SIZE) */
			credit_size = (int)tool_opt_size(p, "--credit-size", optarg, 512, 1u << 20);
			if (credit_size & (credit_size - 1))
				tool_opt_fail(p, "--credit-size '%s': a power of two", optarg);
			break;
		case 'k':
			system_sockets = tool_opt_word(p, "--sockets", optarg, sockets) >= 1;
			ddp_sockets = tool_opt_word(p, "--sockets", optarg, sockets) == 2;
			break;
		case 'C':
			o.crc = tool_opt_word(p, "--crc", optarg, off_on);
			break;
		case 't':
			o.type = type_of[tool_opt_word(p, "--type", optarg, types)];
			break;
		case 'm':
			o.mode = mode_of[tool_opt_word(p, "--mode", optarg, modes)];
			break;
		case 'z':
			if (!strncmp(optarg, "exp:", 4)) {
				char *colon = strchr(optarg + 4, ':');
				if (!colon)
					tool_opt_fail(p, "--size '%s': exp:MEAN:MAX, two sizes",
						      optarg);
				*colon = 0;
				o.exp = true;
				o.mean = tool_opt_size(p, "--size exp: MEAN", optarg + 4, 1,
						       1u << 30);
				o.max = tool_opt_size(p, "--size exp: MAX", colon + 1, o.mean,
						      1u << 30);
			} else {
				o.size = tool_opt_size(p, "--size", optarg, 1, 1u << 30);
			}
			break;
		case 'F':
			o.flow = flow_of[tool_opt_word(p, "--flow", optarg, flows)];
			break;
		case 'r':
			o.rsize = tool_opt_size(p, "--rsize", optarg, 1, 1u << 30);
			break;
		case 'g':
			o.ring = tool_opt_size(p, "--ring", optarg, 4096, 1u << 28);
			break;
		case 'b':
			o.burst = (int)tool_opt_uint(p, "--burst", optarg, 1, EXS_MAX_SENDS);
			break;
		case 'u':
		case 'i':
			o.compute_us = (double)tool_opt_uint(p, c == 'u' ? "--compute" : "--idle",
							     optarg, 0, 60000000);
			o.idle = c == 'i';
			paced = true;
			break;
		case 'S':
			o.sends = (int)tool_opt_uint(p, "--sends", optarg, 1, EXS_MAX_SENDS);
			break;
		case 'R':
			o.recvs = (int)tool_opt_uint(p, "--recvs", optarg, 1, EXS_MAX_RECVS);
			break;
		case 'T':
			o.time = tool_opt_seconds(p, "--time", optarg, 86400);
			timed = true;
			break;
		case 'B':
			o.bytes = tool_opt_size(p, "--bytes", optarg, 1, UINT64_MAX >> 1);
			counted = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	tool_opt_no_more(p, argc, argv, optind);
	if (o.server == !!o.host) {
		usage(stderr);
		tool_opt_fail(p, "give -s (server) or -c HOST (client), one of them");
	}
	if (timed && counted)
		tool_opt_fail(p, "--time and --bytes exclude each other");
	if (system_sockets && o.type != SOCK_STREAM)
		tool_opt_fail(p, "--sockets system and ddp carry --type stream only");
	if (!!o.burst != paced)
		tool_opt_fail(p, "--burst N goes with --compute USEC or --idle USEC");
	if (o.burst && o.sends < o.burst)
		o.sends = o.burst; /* a round's sends are all outstanding */
	if (o.pingpong && (o.exp || o.burst || system_sockets))
		tool_opt_fail(p, "--pingpong takes one --size, without --burst, on ES-API sockets");
	server_flow = o.server ? o.flow : -1;
	/* a timed run reports each second, as iperf3 does; JSON stays one line */
	if (o.interval < 0)
		o.interval = timed && !o.json ? 1 : 0;
	server_ring = o.ring;
	server_crc = o.crc;
	if (exs_init(EXS_VERSION))
		die("exs_init");
	return o.server ? run_server(&o) : run_client(&o);
}
