/*
 * rping.h: uwarp-rping, rdma-core's rping spoken over uwarp, so that it
 * meets rping on Linux siw in either role (docs/wire-notes.md).
 *
 * The protocol, per iteration: the client Sends its start buffer's
 * (address, rkey, size) as 16 bytes; the server RDMA Reads that many bytes
 * from it and Sends a 16-byte "go"; the client Sends its sink buffer's
 * (address, rkey, size); the server RDMA Writes what it read (up to and
 * including the first NUL) there and Sends "go" again. The client checks
 * the echo (-V) and starts over; it disconnects after -C iterations.
 */
#ifndef UWARP_RPING_H
#define UWARP_RPING_H

#include <stdbool.h>
#include <stdint.h>

#include <uwarp/verbs.h>

#define RPING_PORT 7174
#define RPING_DEFAULT_SIZE 64
/* rping's own -S range is 23..65536; uwarp-rping takes 1..16 MiB, so a
 * client can ask what stock rping's server makes of other sizes. */
#define RPING_MAX_SIZE (16u << 20)
#define RPING_MSG_FMT "rdma-ping-%d: "

/* The 16 bytes both sides Send: where to read or write. */
struct rping_info {
	uint64_t buf;  /* big-endian */
	uint32_t rkey; /* big-endian */
	uint32_t size; /* big-endian */
};

struct rping_opts {
	bool server, persistent, verbose, validate, quiet, debug;
	const char *addr;
	int port;
	uint32_t size;
	long count; /* 0: until interrupted */
	enum uw_crc_mode crc;
	int markers;
	int mpa_rev;
	/* --fault bad-rkey: a test of the peer's error path. The client
	 * offers its start buffer under a dead STag (the server's Read gets a
	 * Terminate from us); the server Writes the echo to a dead STag (the
	 * client's side sends the Terminate). */
	bool fault_bad_rkey;
};

/* One connection's objects and buffers. */
struct rping_conn {
	const struct rping_opts *o;
	struct uw_context *ctx;
	struct uw_pd *pd;
	struct uw_cq *cq;
	struct uw_cm_channel *ch;
	struct uw_cm_id *id;
	struct uw_qp *qp;
	struct rping_info recv_buf, send_buf;
	struct uw_mr *recv_mr, *send_mr;
	uint8_t *start_buf, *rdma_buf; /* client: what it offers, where the echo lands */
	uint32_t start_len, rdma_len;
	struct uw_mr *start_mr, *rdma_mr;
};

int rping_client(const struct rping_opts *o);
int rping_server(const struct rping_opts *o);

/* shared by both roles (rping_conn.c) */
int rping_conn_buffers(struct rping_conn *c, uint32_t rdma_len, uint32_t start_len);
void rping_conn_free_buffers(struct rping_conn *c);
int rping_post_recv(struct rping_conn *c);
int rping_send_info(struct rping_conn *c, const void *buf, uint32_t rkey, uint32_t size);
/* -d: what MPA negotiated, from the ESTABLISHED event. */
void rping_report_params(const struct rping_opts *o, const struct uw_cm_event *e);
/* After the connection ended: how, from the CM (a Terminate's codes and
 * who sent it), up to 2 s. 1 when a Terminate ended it. */
int rping_report_end(struct rping_conn *c);
/* The next completion (of any kind), up to 30 s; 0 or an errno value:
 * ECONNRESET for a flushed one (the connection ended), EIO for a failed
 * one (reported, with the peer's Terminate codes). */
int rping_next_wc(struct rping_conn *c, struct uw_wc *wc);
struct uw_conn_param rping_param(const struct rping_opts *o);

#endif
