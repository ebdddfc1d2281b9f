/*
 * perf_pt.h: uwarp-perf --perftest, Linux perftest's protocol for
 * ib_{write,read,send}_{bw,lat} run with -R (rdma_cm for everything), so
 * uwarp-perf can be either end against the real tools.
 *
 * perftest uses two connections to the same port. The first, the
 * "communication" connection, carries small binary Sends in lock step: in
 * every exchange the client sends first and the server answers. The test
 * connection is made between two of those exchanges. The reference is
 * perftest 6.06 (Debian 12's perftest 4.5+0.17): perftest_communication.c
 * and each test's main().
 */
#ifndef UWARP_PERF_PT_H
#define UWARP_PERF_PT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <uwarp/verbs.h>

#define PT_DEFAULT_PORT 18515
/* what we tell the peer we are: perftest refuses anything below 5.70, and
 * picks the report's field sizes by the version (8-byte counts from 5.33) */
#define PT_VERSION "6.06"
#define PT_VERSION_LEN 16
/* every message on the communication connection fits one pingpong_dest */
#define PT_MSG_MAX 56
/* perftest's defaults: the page size it cycles small messages through, its
 * cache line, the receive depth of Send tests, the send depth of bandwidth
 * tests, and the Reads in flight of the Read tests (IRD = ORD: perftest
 * takes the device's maximum, 128 on siw) */
#define PT_CYCLE_BUFFER 4096u
#define PT_CACHE_LINE 64u
#define PT_RX_DEPTH_SEND 512u
#define PT_TX_DEPTH_BW 128u
#define PT_OUT_READS 128u
/* how long one step may wait for the peer before we give up */
#define PT_STEP_MS 120000
/* how long a data loop may go without a completion */
#define PT_STALL_MS 60000

enum pt_verb { PT_WRITE, PT_READ, PT_SEND };
enum pt_kind { PT_BW, PT_LAT };

struct pt_test {
	const char *name; /* "write_bw": perftest's ib_write_bw */
	enum pt_verb verb;
	enum pt_kind kind;
};

struct pt_opts {
	const struct pt_test *test;
	const char *host; /* NULL: server */
	int port;
	uint64_t size, iters;
	enum uw_crc_mode crc;
	bool json;
};

/* perftest's struct pingpong_dest, in host order; on the wire each field
 * is big-endian and the whole is 56 bytes (see pt_handshake) */
struct pt_dest {
	uint32_t lid, out_reads, qpn, psn, rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn, gid_index;
};

/* perftest's bandwidth report, as the client sends it to the server */
struct pt_bw_report {
	uint64_t size, iters;
	double bw_peak, bw_avg, msg_rate; /* MiB/s, MiB/s, millions per second */
};

struct pt_lat_report {
	uint64_t size, iters;
	double t_min, t_max, t_typical, t_avg, t_stdev, t_p99, t_p999; /* microseconds */
};

/* One connection: its own event channel and CQ, an id and a QP. */
struct pt_link {
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	struct uw_cq *cq;
	struct uw_qp *qp;
	struct uw_qp_cap cap;
	bool down;       /* its DISCONNECTED has been taken */
	bool peer_uwarp; /* RFC 7306 was negotiated: only uwarp offers it */
};

/* Called once the QP exists and before the connection is made or
 * accepted: post what the peer may need at once. 0 or -errno. */
typedef int (*pt_ready_fn)(void *arg);

/* perf_pt_link.c (like everything here: 0 or a negative errno value) */
int pt_link_open(struct pt_link *l, struct uw_context *ctx, int cqe, const struct uw_qp_cap *cap);
int pt_link_connect(struct pt_link *l, struct uw_pd *pd, const struct sockaddr *addr,
		    const struct uw_conn_param *p, pt_ready_fn ready, void *arg, int retry_ms);
int pt_link_accept(struct pt_link *l, struct uw_pd *pd, struct uw_cm_channel *listen_ch,
		   const struct uw_conn_param *p, pt_ready_fn ready, void *arg, int timeout_ms);
/* Take one completion, waiting up to timeout_ms; a failed WR is -EIO. */
int pt_link_wc(struct pt_link *l, struct uw_wc *wc, int timeout_ms);
/* After a failed WR: say why the connection ended, if a Terminate did it. */
void pt_link_explain(struct pt_link *l);
/* Give the peer grace_ms to disconnect first, then disconnect, wait for
 * DISCONNECTED and free it all: 0, or -ETIMEDOUT when the disconnect did
 * not complete. */
int pt_link_close(struct pt_link *l, int grace_ms);

/* The communication connection: one receive always posted. */
struct pt_comm {
	struct pt_link link;
	struct uw_mr *mr;
	bool client;
	int timeout_ms;         /* per wait; -1 while the peer runs its test */
	bool rx_ready, tx_done; /* completions taken but not yet consumed */
	uint32_t rx_len;
	uint8_t msg[2 * PT_MSG_MAX]; /* [receive | send] */
};

/* perf_pt_comm.c */
int pt_comm_open(struct pt_comm *c, struct uw_context *ctx, struct uw_pd *pd, bool client);
int pt_comm_post_recv(void *comm);
/* One lock-step exchange of len bytes: the client sends first. */
int pt_xchg(struct pt_comm *c, const void *mine, void *theirs, size_t len);
int pt_comm_close(struct pt_comm *c, int grace_ms);

/* perf_pt_msg.c: what the exchanges carry */
int pt_prologue(struct pt_comm *c, uint32_t *cycle_buffer, uint32_t *cache_line);
int pt_handshake(struct pt_comm *c, const struct pt_dest *mine, struct pt_dest *theirs);
int pt_xchg_report(struct pt_comm *c, const struct pt_bw_report *mine, struct pt_bw_report *theirs);

/* A whole run: the two connections and the test's memory. */
struct pt_run {
	const struct pt_opts *o;
	bool client;
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cm_channel *listen_ch; /* server: one listener serves both connections */
	struct uw_cm_id *listener;
	struct sockaddr_storage peer; /* client */
	struct pt_comm comm;
	struct pt_link test;
	/* perftest's buffer: [local area | remote area], each `area` bytes;
	 * the peer reaches the remote area (vaddr in our pt_dest) */
	uint8_t *buf;
	uint64_t area;
	struct uw_mr *mr;
	/* Send bandwidth credits: [0] what we write to the peer, [1] where
	 * the peer writes its count of our messages it has received */
	uint32_t *credit;
	struct uw_mr *credit_mr;
	uint32_t cycle_buffer, cache_line;
	uint32_t tx_depth, rx_depth;
	struct pt_dest mine, theirs;
	uint64_t recv_posted;
};

/* perf_pt_bw.c; wr_ids are message numbers, receives' tagged */
#define PT_RECV_TAG (1ull << 63)
#define PT_CREDIT_TAG (1ull << 62)
/* Post message wr_id of the test's verb, off bytes into both areas. */
int pt_post_op(struct pt_run *r, uint64_t wr_id, uint64_t off);
int pt_bw_client(struct pt_run *r, struct pt_bw_report *rep);
int pt_send_bw_server(struct pt_run *r, struct pt_bw_report *rep);
int pt_post_recvs(struct pt_run *r, uint64_t n);

/* perf_pt_lat.c: each fills t[0..iters) with the time of every post */
int pt_write_lat(struct pt_run *r, double *t);
int pt_read_lat(struct pt_run *r, double *t);
int pt_send_lat(struct pt_run *r, double *t);

/* perf_pt_report.c */
/* Byte offset of message i in a cycled area (perftest's INC/cycle rule). */
uint64_t pt_cycle_offset(const struct pt_run *r, uint64_t i);
uint64_t pt_area_size(uint64_t size, uint32_t cycle_buffer, uint32_t cache_line);
void pt_bw_stats(uint64_t size, uint64_t iters, const double *posted, const double *completed,
		 struct pt_bw_report *rep);
/* rtt_factor 2 for ping-pongs, whose posts are a round trip apart */
int pt_lat_stats(uint64_t size, uint64_t iters, const double *t, int rtt_factor,
		 struct pt_lat_report *rep);
void pt_print_bw(const struct pt_opts *o, bool client, const struct pt_bw_report *rep);
void pt_print_lat(const struct pt_opts *o, bool client, const struct pt_lat_report *rep);
/* read_lat's server only serves the client's Reads: no figures of its own */
void pt_print_served(const struct pt_opts *o);

/* perf_pt_run.c */
int pt_run(const struct pt_opts *o);

/* perf_pt_cli.c: uwarp-perf --perftest TEST ...; perf_main.c hands over */
int perf_pt_main(int argc, char **argv);

#endif
