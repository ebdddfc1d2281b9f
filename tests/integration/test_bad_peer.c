/*
 * test_bad_peer.c: a raw-socket peer that completes a real MPA exchange
 * with a uwarp server and then sends bad input (RFC 5041 and RFC 5040,
 * section 7 of each).
 * The Terminate bytes that come back are checked (RFC 6580 codes), no byte
 * lands outside the server's registered memory, and the same server
 * process goes on serving a good client afterwards.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <dirent.h>
#include <stdlib.h>
#include <poll.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

#include "mpa/be.h"
#include "mpa/crc32c.h"
#include "rdmap/rdmap_opcode.h"
#include "mpa/fpdu.h"
#include "tools/lib/fpdu_watch.h"
#include "mpa/mpa_negotiate.h"
#include "proc.h"
#include "rdmap/rdmap_term.h"
#include "runtime/uw_internal.h"

#define GUARD 1024
#define REGION 4096
#define RECV 256

static struct {
	struct uw_context *ctx;
	struct uw_pd *pd, *pd_other; /* the raw peers' QPs are in pd */
	struct uw_cq *cq;
	struct uw_cm_channel *ch;
	struct uw_cm_id *lid;
	int port;
	uint8_t arena[GUARD + REGION + GUARD + RECV + GUARD];
	uint8_t *region, *recvbuf;
	struct uw_mr *mr_rw, *mr_none, *mr_ro, *mr_wo, *mr_recv, *mr_other;
} S;

struct welcome {
	uint32_t rkey_rw, rkey_none, rkey_ro, rkey_wo, rkey_other;
	uint64_t addr;
};

static int setup(void **state)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	memset(S.arena, 0xEE, sizeof(S.arena));
	S.region = S.arena + GUARD;
	S.recvbuf = S.region + REGION + GUARD;
	memset(S.region, 0x11, REGION);
	memset(S.recvbuf, 0x11, RECV);
	S.ctx = uw_open(&ca);
	S.pd = uw_alloc_pd(S.ctx);
	S.cq = uw_create_cq(S.ctx, 1024, NULL, NULL);
	S.ch = uw_cm_create_channel(S.ctx);
	S.lid = uw_cm_create_id(S.ch, NULL);
	S.mr_rw = uw_reg_mr(S.pd, S.region, REGION,
			    UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ);
	S.mr_none = uw_reg_mr(S.pd, S.region, REGION, UW_ACCESS_LOCAL_WRITE);
	S.mr_ro = uw_reg_mr(S.pd, S.region, REGION, UW_ACCESS_REMOTE_READ);
	S.mr_wo = uw_reg_mr(S.pd, S.region, REGION, UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	/* another connection's memory: open to its own peer, in its own PD */
	S.pd_other = uw_alloc_pd(S.ctx);
	S.mr_other = S.pd_other ? uw_reg_mr(S.pd_other, S.region, REGION,
					    UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE |
						    UW_ACCESS_REMOTE_READ)
				: NULL;
	S.mr_recv = uw_reg_mr(S.pd, S.recvbuf, RECV, UW_ACCESS_LOCAL_WRITE);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (!S.mr_rw || !S.mr_none || !S.mr_ro || !S.mr_wo || !S.mr_recv || !S.mr_other ||
	    uw_cm_listen(S.lid, (struct sockaddr *)&a, 16))
		return -1;
	S.port = ntohs(((struct sockaddr_in *)&S.lid->local_addr)->sin_port);
	return 0;
}

static int teardown(void **state)
{
	uw_cm_destroy_id(S.lid);
	uw_cm_destroy_channel(S.ch);
	uw_dereg_mr(S.mr_rw);
	uw_dereg_mr(S.mr_none);
	uw_dereg_mr(S.mr_ro);
	uw_dereg_mr(S.mr_wo);
	uw_dereg_mr(S.mr_other);
	uw_dealloc_pd(S.pd_other);
	uw_dereg_mr(S.mr_recv);
	uw_destroy_cq(S.cq);
	uw_dealloc_pd(S.pd);
	return uw_close(S.ctx);
}

static bool guards_intact(void)
{
	const uint8_t *g[3] = { S.arena, S.region + REGION, S.recvbuf + RECV };
	for (int k = 0; k < 3; k++)
		for (int i = 0; i < GUARD; i++)
			if (g[k][i] != 0xEE)
				return false;
	return true;
}

static struct uw_cm_event *event(int ms)
{
	struct uw_cm_event *e;
	return uw_cm_get_event_timeout(S.ch, &e, ms) ? NULL : e;
}

/* The raw peer's side of one connection. */
struct raw {
	int fd;
	struct fpdu_tx tx;
	struct welcome w;
	struct uw_cm_id *id; /* the server's end */
	struct uw_qp *qp;
};

/* The raw peer dials @port and sends its Request; then @accept (the
 * in-process server's side, or NULL for a server in another process)
 * runs; then the Reply is read to its end and not a byte further. */
static int dial_rcvbuf; /* the raw peer's SO_RCVBUF, set before it connects (0: default) */

static void raw_dial(struct raw *r, int port, void (*accept)(struct raw *), struct mpa_frame *rep)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	r->fd = socket(AF_INET, SOCK_STREAM, 0);
	int one = 1;
	setsockopt(r->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (dial_rcvbuf)
		setsockopt(r->fd, SOL_SOCKET, SO_RCVBUF, &dial_rcvbuf, sizeof(dial_rcvbuf));
	assert_int_equal(connect(r->fd, (struct sockaddr *)&a, sizeof(a)), 0);
	/* a Request like siw's, but asking for CRC */
	struct mpa_frame req = { .type = MPA_FRAME_REQUEST,
				 .rev = 2,
				 .crc = true,
				 .enhanced = true,
				 .ird = 4,
				 .ord = 4 };
	uint8_t buf[600];
	ssize_t n = mpa_frame_encode(&req, buf, sizeof(buf));
	assert_int_equal(write(r->fd, buf, (size_t)n), n);

	if (accept)
		accept(r);
	size_t got = 0;
	for (;;) {
		ssize_t k = read(r->fd, buf + got, 1);
		assert_int_equal(k, 1);
		got++;
		ssize_t len = mpa_frame_decode(buf, got, 512, rep);
		if (len > 0)
			break;
		assert_int_equal(len, -EAGAIN);
	}
	assert_true(rep->crc && rep->enhanced && !rep->reject);
	fpdu_tx_init(&r->tx, true, false);
}

static unsigned accept_idle_ms;     /* the server's idle_timeout_ms (0: none) */
static unsigned accept_keepalive_s; /* and its keepalive_s */
static struct uw_srq *accept_srq;   /* the server's QP takes receives from it, if set */

/* The in-process server accepts: a receive posted, memory offered. */
static void server_accepts(struct raw *r)
{
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	assert_false(e->rfc7306); /* a stranger: no RFC 7306 */
	r->id = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr qa = {
		.send_cq = S.cq, .recv_cq = S.cq, .srq = accept_srq, .cap = { 8, 8, 1, 1, 0 }
	};
	r->qp = uw_cm_create_qp(r->id, S.pd, &qa);
	assert_non_null(r->qp);
	struct uw_sge s = { (uintptr_t)S.recvbuf, RECV, S.mr_recv->lkey };
	struct uw_recv_wr rw = { .wr_id = 1, .sg_list = &s, .num_sge = 1 };
	if (!accept_srq)
		assert_int_equal(uw_post_recv(r->qp, &rw, NULL), 0);
	struct welcome w = { S.mr_rw->rkey, S.mr_none->rkey,  S.mr_ro->rkey,
			     S.mr_wo->rkey, S.mr_other->rkey, (uintptr_t)S.region };
	struct uw_conn_param p = { .private_data = &w,
				   .private_data_len = sizeof(w),
				   .ird = 16,
				   .ord = 16,
				   .idle_timeout_ms = accept_idle_ms,
				   .keepalive_s = accept_keepalive_s };
	assert_int_equal(uw_cm_accept(r->id, &p), 0);
	e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
	uw_cm_ack_event(e);
}

static void raw_connect(struct raw *r)
{
	struct mpa_frame rep;
	raw_dial(r, S.port, server_accepts, &rep);
	assert_int_equal(rep.pdata_len, sizeof(struct welcome));
	memcpy(&r->w, rep.pdata, sizeof(r->w));
}

/* One ULPDU (header and payload) framed as an FPDU into wire; its length. */
static size_t raw_frame(struct raw *r, const uint8_t *hdr, size_t hl, const void *p, size_t pl,
			uint8_t *wire)
{
	uint8_t h[2 + 128];
	struct iovec iov[16], piov = { (void *)(uintptr_t)p, pl };
	uint8_t scratch[64];
	struct fpdu_batch b;
	memcpy(h + 2, hdr, hl);
	fpdu_batch_init(&b, iov, 16, scratch, sizeof(scratch));
	assert_int_equal(fpdu_tx_append(&r->tx, &b, h, hl, &piov, pl ? 1 : 0), 0);
	size_t n = 0;
	for (int i = 0; i < b.niov; i++) {
		memcpy(wire + n, b.iov[i].iov_base, b.iov[i].iov_len);
		n += b.iov[i].iov_len;
	}
	return n;
}

/* Send one ULPDU as an FPDU; corrupt: flip a byte after the CRC was
 * computed. */
static void raw_send(struct raw *r, const uint8_t *hdr, size_t hl, const void *p, size_t pl,
		     bool corrupt)
{
	uint8_t wire[4096];
	size_t n = raw_frame(r, hdr, hl, p, pl, wire);
	if (corrupt)
		wire[n - 6] ^= 0x01;
	assert_int_equal(write(r->fd, wire, n), (ssize_t)n);
}

/* What the server sent r until it closed (the toolkit's reader: FPDUs
 * parsed as they come, counted by opcode, the first Terminate kept), and
 * how the stream ended: 0, the end of the stream; else the errno. */
struct from_server {
	struct fpdu_watch w;
	int end;
};

static void read_to_end(struct raw *r, int timeout_s, struct from_server *f)
{
	struct timeval tv = { timeout_s, 0 };
	setsockopt(r->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	fpdu_watch_init(&f->w, true);
	static uint8_t in[65536];
	ssize_t k;
	while ((k = read(r->fd, in, sizeof(in))) > 0)
		if (fpdu_watch_feed(&f->w, in, (size_t)k))
			fail_msg("the server's bytes do not parse: %s", f->w.error);
	f->end = k < 0 ? errno : 0;
}

/* The first Terminate f holds, decoded (RFC 5040 section 4.8), on the
 * Terminate queue with MSN 1 (RFC 5041 section 5). */
static void terminate_of(const struct from_server *f, struct rdmap_term *t)
{
	assert_true(f->w.by_op[RDMAP_TERMINATE] > 0);
	assert_false(f->w.term_cut);
	assert_true(f->w.term_len >= DDP_UNTAGGED_HDR_LEN + RDMAP_TERM_CTRL_LEN);
	assert_int_equal(be32_get(f->w.term + DDP_OFF_QN), DDP_QN_TERMINATE);
	assert_int_equal(be32_get(f->w.term + DDP_OFF_MSN), 1);
	assert_int_equal(fpdu_watch_terminate(&f->w, t), 0);
}

/* The one Terminate the server sent r, read to the close: its codes
 * (layer, error type, error code, RFC 6580 reading). */
static void term_codes(struct raw *r, uint8_t got[3])
{
	struct from_server f;
	struct rdmap_term t;
	read_to_end(r, 5, &f);
	assert_int_equal(f.w.fpdus, 1);
	terminate_of(&f, &t);
	got[0] = t.rfc.layer;
	got[1] = t.rfc.etype;
	got[2] = t.rfc.ecode;
	close(r->fd);
}

static void read_terminate(struct raw *r, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	uint8_t t[3];
	term_codes(r, t);
	if (t[0] != layer || t[1] != etype || t[2] != ecode)
		fail_msg("Terminate %u/%u/0x%02x, want %u/%u/0x%02x", t[0], t[1], t[2], layer,
			 etype, ecode);
}

/* the receive the server had posted for a raw peer, flushed */
static void expect_flushed_receive(void)
{
	struct uw_wc wc;
	int got = 0;
	for (int i = 0; i < 100 && !got; i++) {
		got = uw_poll_cq(S.cq, 1, &wc);
		if (!got)
			usleep(10000);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc.status, UW_WC_WR_FLUSH_ERR);
}

/* The server's end of r, terminated with (layer, ecode): its event, the
 * flushed receive, and its objects freed. */
static void server_end_terminated(struct raw *r, uint8_t layer, uint8_t ecode)
{
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->terminated, 1);
	assert_int_equal(e->term_remote, 0); /* uwarp sent it */
	assert_int_equal(e->term_layer, layer);
	assert_int_equal(e->term_ecode, ecode);
	uw_cm_ack_event(e);
	expect_flushed_receive();
	uw_destroy_qp(r->qp);
	uw_cm_destroy_id(r->id);
	assert_true(guards_intact());
}

static void expect_terminate(struct raw *r, uint8_t layer, uint8_t etype, uint8_t ecode)
{
	read_terminate(r, layer, etype, ecode);
	server_end_terminated(r, layer, ecode);
}

/* Whatever Terminate r earns: its codes, the server's end cleaned up. */
static void raw_terminate_codes(struct raw *r, uint8_t got[3])
{
	term_codes(r, got);
	server_end_terminated(r, got[0], got[2]);
}

static size_t untagged(uint8_t *h, uint8_t op, uint32_t qn, uint32_t msn, uint32_t mo, uint32_t w)
{
	h[0] = 0x41;
	h[1] = (uint8_t)(0x40 | op);
	be32_put(h + 2, w);
	be32_put(h + 6, qn);
	be32_put(h + 10, msn);
	be32_put(h + 14, mo);
	return 18;
}

static size_t tagged(uint8_t *h, uint8_t op, uint32_t stag, uint64_t to)
{
	h[0] = 0xc1;
	h[1] = (uint8_t)(0x40 | op);
	be32_put(h + 2, stag);
	be64_put(h + 6, to);
	return 14;
}

static uint8_t data[1024];

static void crc_error_is_llp_0x02(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), data, 40, true);
	expect_terminate(&r, UW_TERM_LAYER_LLP, 0, UW_MPA_ECODE_CRC);
}

/* Found by uwarp-fuzz: a Write to an unknown STag whose CRC is also bad
 * drew the STag's Terminate, judged on a header that may be the damaged
 * part. With CRC negotiated the header's verdict waits for the CRC. */
static void bad_crc_outranks_a_bad_stag(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw ^ 0x3c, r.w.addr), data, 64, true);
	expect_terminate(&r, UW_TERM_LAYER_LLP, 0, UW_MPA_ECODE_CRC);
}

/* ...and a bad opcode with a bad CRC, in a Send whose payload is large
 * enough to arrive in several reads. */
static void bad_crc_outranks_a_bad_opcode(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, 0xF, 0, 1, 0, 0), data, sizeof(data), true);
	expect_terminate(&r, UW_TERM_LAYER_LLP, 0, UW_MPA_ECODE_CRC);
}

static void bad_ddp_version_is_ddp_2_06(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	size_t n = untagged(h, RDMAP_SEND, 0, 1, 0, 0);
	h[0] = 0x40;
	raw_send(&r, h, n, data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_VERSION);
}

static void bad_rdmap_version_is_rdmap_2_05(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	size_t n = untagged(h, RDMAP_SEND, 0, 1, 0, 0);
	h[1] = 0x03;
	raw_send(&r, h, n, data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_OPERATION,
			 UW_RDMAP_INVALID_VERSION);
}

static void rfc7306_opcode_to_a_stranger_is_rdmap_2_06(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_IMMEDIATE, 0, 1, 0, 0), data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_OPERATION,
			 UW_RDMAP_UNEXPECTED_OPCODE);
}

static void send_on_queue_5_is_ddp_2_01(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 5, 1, 0, 0), data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_INVALID_QN);
}

static void send_msn_skip_is_ddp_2_03(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 2, 0, 0), data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_MSN_RANGE);
}

static void send_longer_than_the_receive_is_ddp_2_05(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), data, RECV + 1, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_TOO_LONG);
}

static void write_to_unknown_stag_is_ddp_1_00(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw ^ 0x3c, r.w.addr), data, 64, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG);
}

static void write_past_the_region_is_ddp_1_01(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw, r.w.addr + REGION - 8), data, 64,
		 false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_BASE_BOUNDS);
}

/* rights are reported for a region that grants the peer something else */
static void write_without_rights_is_rdmap_1_02(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_ro, r.w.addr), data, 64, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
			 UW_RDMAP_ACCESS_RIGHTS);
}

/* Read Request number msn for size bytes at (src_stag, src_to) */
static size_t read_req_n(uint8_t *h, uint32_t msn, uint32_t size, uint32_t src_stag,
			 uint64_t src_to)
{
	size_t n = untagged(h, RDMAP_RDMA_READ_REQ, DDP_QN_READ_REQ, msn, 0, 0);
	be32_put(h + n + RDMAP_RR_OFF_SINK_STAG, 0x100);
	be64_put(h + n + RDMAP_RR_OFF_SINK_TO, 0);
	be32_put(h + n + RDMAP_RR_OFF_SIZE, size);
	be32_put(h + n + RDMAP_RR_OFF_SRC_STAG, src_stag);
	be64_put(h + n + RDMAP_RR_OFF_SRC_TO, src_to);
	return n + RDMAP_READ_REQ_LEN;
}

static size_t read_req(uint8_t *h, uint32_t src_stag, uint64_t src_to)
{
	return read_req_n(h, 1, 64, src_stag, src_to);
}

static void read_without_rights_is_rdmap_1_02(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, read_req(h, r.w.rkey_wo, r.w.addr), NULL, 0, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
			 UW_RDMAP_ACCESS_RIGHTS);
}

/* a local key (no remote rights at all) named by a peer is answered as an
 * STag that names nothing: no oracle (docs/wire-notes.md, "STags and
 * isolation") */
static void write_to_a_local_key_is_invalid_stag(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_none, r.w.addr), data, 64, false);
	expect_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_TAGGED, UW_DDP_T_INVALID_STAG);
}

/* An STag valid for another connection (its own PD) is refused here with
 * exactly the Terminate a made-up STag gets, for a Write and for a Read,
 * inside its region's bounds and outside them: nothing tells a peer that it
 * hit another connection's memory. */
static void another_connections_stag_is_refused_as_a_random_one(void **state)
{
	uint8_t h[64];
	const uint32_t made_up = 0x5EED0000u ^ (uint32_t)S.port;
	struct {
		bool read;
		uint64_t off;
	} cases[] = {
		{ false, 0 }, { false, REGION + 4096 }, { true, 0 }, { true, REGION + 4096 }
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct raw r;
		uint8_t got[2][3];
		for (int k = 0; k < 2; k++) {
			raw_connect(&r);
			uint32_t stag = k ? made_up : r.w.rkey_other;
			if (cases[i].read)
				raw_send(&r, h, read_req(h, stag, r.w.addr + cases[i].off), NULL, 0,
					 false);
			else
				raw_send(&r, h,
					 tagged(h, RDMAP_RDMA_WRITE, stag, r.w.addr + cases[i].off),
					 data, 64, false);
			raw_terminate_codes(&r, got[k]);
		}
		assert_memory_equal(got[0], got[1], 3);
		if (cases[i].read) {
			assert_int_equal(got[0][0], UW_TERM_LAYER_RDMAP);
			assert_int_equal(got[0][2], UW_RDMAP_INVALID_STAG);
		} else {
			assert_int_equal(got[0][0], UW_TERM_LAYER_DDP);
			assert_int_equal(got[0][2], UW_DDP_T_INVALID_STAG);
		}
	}
	assert_true(guards_intact());
}

static void read_of_a_local_key_is_invalid_stag(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, read_req(h, r.w.rkey_none, r.w.addr), NULL, 0, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_PROTECTION,
			 UW_RDMAP_INVALID_STAG);
}

static void send_with_invalidate_of_an_mr_is_rdmap_2_09(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND_INVAL, 0, 1, 0, r.w.rkey_rw), data, 8, false);
	expect_terminate(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_REMOTE_OPERATION,
			 UW_RDMAP_CANNOT_INVALIDATE);
}

static void ulpdu_too_short_is_llp_0x03(void **state)
{
	struct raw r;
	raw_connect(&r);
	/* ULPDU_Length 4: not even a DDP header; framed by hand */
	uint8_t f[12] = { 0x00, 0x04, 0x41, 0x43, 0, 0, 0, 0 };
	le32_put(f + 8, crc32c_final(crc32c_update(CRC32C_INIT, f, 8)));
	assert_int_equal(write(r.fd, f, sizeof(f)), (ssize_t)sizeof(f));
	expect_terminate(&r, UW_TERM_LAYER_LLP, 0, UW_MPA_ECODE_MARKER);
}

/* Has the server's end of r's connection paused its input for a receive? */
/* connections of the server's context waiting for a receive */
static unsigned waiting(void)
{
	pthread_mutex_lock(&S.ctx->lock);
	unsigned n = S.ctx->rx_waiting;
	pthread_mutex_unlock(&S.ctx->lock);
	return n;
}

static bool waits_for_a_receive(struct raw *r)
{
	pthread_mutex_lock(&S.ctx->lock);
	struct uw_conn *c = ((struct uw_qp_impl *)r->qp)->conn;
	bool w = c && c->rx_wait;
	pthread_mutex_unlock(&S.ctx->lock);
	return w;
}

/* The receive the server posted for r, filled by a Send of len bytes. */
static void expect_recv(uint32_t len)
{
	struct uw_wc wc;
	assert_int_equal(uw_cq_wait(S.cq, 1, 5000), 1);
	assert_int_equal(uw_poll_cq(S.cq, 1, &wc), 1);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.opcode, UW_WC_RECV);
	assert_int_equal(wc.byte_len, len);
}

/* A Send that finds no receive posted waits for one (UWARP_RECV_WAIT_MS,
 * engine_rx.c) with its connection's input paused, and lands in the
 * receive posted meanwhile: no Terminate (qperf's rc_bw lost its
 * connection this way whenever its receiver fell behind). Meanwhile the
 * server serves another connection. */
static void a_send_with_no_receive_waits_for_one_posted_later(void **state)
{
	struct raw r, o;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), "first", 5, false);
	expect_recv(5);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 2, 0, 0), "the second one", 14, false);
	for (int i = 0; i < 500 && !waits_for_a_receive(&r); i++)
		usleep(10000);
	assert_true(waits_for_a_receive(&r));
	assert_int_equal(waiting(), 1);
	/* another connection goes on meanwhile */
	raw_connect(&o);
	raw_send(&o, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), "other", 5, false);
	expect_recv(5);
	assert_memory_equal(S.recvbuf, "other", 5);
	assert_true(waits_for_a_receive(&r));
	struct uw_sge sg = { (uintptr_t)S.recvbuf, RECV, S.mr_recv->lkey };
	struct uw_recv_wr rw = { .wr_id = 2, .sg_list = &sg, .num_sge = 1 };
	assert_int_equal(uw_post_recv(r.qp, &rw, NULL), 0);
	assert_false(waits_for_a_receive(&r)); /* the post itself let it go on */
	expect_recv(14);
	assert_memory_equal(S.recvbuf, "the second one", 14);
	assert_false(waits_for_a_receive(&r));
	assert_int_equal(waiting(), 0);
	/* and the stream goes on: a third Send, into a receive posted first */
	assert_int_equal(uw_post_recv(r.qp, &rw, NULL), 0);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 3, 0, 0), "third", 5, false);
	expect_recv(5);
	assert_memory_equal(S.recvbuf, "third", 5);
	/* nothing came back: no Terminate */
	struct pollfd p = { r.fd, POLLIN, 0 };
	assert_int_equal(poll(&p, 1, 0), 0);
	close(r.fd);
	close(o.fd);
	struct raw *both[2] = { &r, &o };
	for (int i = 0; i < 2; i++) {
		struct uw_cm_event *e = event(5000);
		assert_non_null(e);
		assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
		assert_int_equal(e->terminated, 0);
		uw_cm_ack_event(e);
	}
	for (int i = 0; i < 2; i++) {
		struct uw_wc wc;
		while (uw_poll_cq(S.cq, 1, &wc) > 0) /* o's receive, flushed */
			;
		uw_destroy_qp(both[i]->qp);
		uw_cm_destroy_id(both[i]->id);
	}
	assert_true(guards_intact());
}

/* A receive that never comes: the wait runs out, and the Send earns the
 * Terminate RFC 5041 section 7.2 names, DDP/untagged/0x02 "no buffer". */
static void a_send_whose_receive_never_comes_is_ddp_2_02(void **state)
{
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), "first", 5, false);
	expect_recv(5);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 2, 0, 0), data, 8, false);
	read_terminate(&r, UW_TERM_LAYER_DDP, UW_DDP_UNTAGGED, UW_DDP_U_NO_BUFFER);
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->terminated, 1);
	assert_int_equal(e->term_remote, 0);
	assert_int_equal(e->term_ecode, UW_DDP_U_NO_BUFFER);
	uw_cm_ack_event(e);
	uw_destroy_qp(r.qp);
	uw_cm_destroy_id(r.id);
	assert_int_equal(waiting(), 0); /* (its wait ended with it) */
	assert_true(guards_intact());
}

/* With a shared receive queue: a Send that finds the SRQ empty waits, and
 * the receive posted to the SRQ meanwhile lets it go on */
static void a_send_waits_for_a_receive_posted_to_its_srq(void **state)
{
	struct uw_srq_init_attr sa = { .max_wr = 4, .max_sge = 1 };
	accept_srq = uw_create_srq(S.pd, &sa);
	assert_non_null(accept_srq);
	struct raw r;
	uint8_t h[64];
	raw_connect(&r);
	raw_send(&r, h, untagged(h, RDMAP_SEND, 0, 1, 0, 0), "via the SRQ", 11, false);
	for (int i = 0; i < 500 && !waits_for_a_receive(&r); i++)
		usleep(10000);
	assert_true(waits_for_a_receive(&r));
	struct uw_sge sg = { (uintptr_t)S.recvbuf, RECV, S.mr_recv->lkey };
	struct uw_recv_wr rw = { .wr_id = 7, .sg_list = &sg, .num_sge = 1 };
	assert_int_equal(uw_post_srq_recv(accept_srq, &rw, NULL), 0);
	assert_false(waits_for_a_receive(&r)); /* the post itself let it go on */
	expect_recv(11);
	assert_memory_equal(S.recvbuf, "via the SRQ", 11);
	assert_int_equal(waiting(), 0);
	close(r.fd);
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->terminated, 0);
	uw_cm_ack_event(e);
	uw_destroy_qp(r.qp);
	uw_cm_destroy_id(r.id);
	assert_int_equal(uw_destroy_srq(accept_srq), 0);
	accept_srq = NULL;
}

/* After all that, the same process serves a well-behaved uwarp client. */
static void the_server_goes_on_serving(void **state)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	struct uw_context *c = uw_open(&ca);
	struct uw_pd *pd = uw_alloc_pd(c);
	struct uw_cq *cq = uw_create_cq(c, 16, NULL, NULL);
	struct uw_cm_channel *ch = uw_cm_create_channel(c);
	struct uw_cm_id *id = uw_cm_create_id(ch, NULL);
	static uint8_t src[64] = "good data";
	struct uw_mr *mr = uw_reg_mr(pd, src, sizeof(src), UW_ACCESS_LOCAL_WRITE);
	struct uw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .cap = { 4, 4, 1, 1, 0 } };
	struct uw_qp *qp = uw_cm_create_qp(id, pd, &qa);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)S.port) };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uw_cm_connect(id, (struct sockaddr *)&a, NULL), 0);

	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	struct uw_cm_id *sid = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr sqa = { .send_cq = S.cq, .recv_cq = S.cq, .cap = { 4, 4, 1, 1, 0 } };
	struct uw_qp *sqp = uw_cm_create_qp(sid, S.pd, &sqa);
	assert_non_null(sqp);
	struct uw_sge rs = { (uintptr_t)S.recvbuf, RECV, S.mr_recv->lkey };
	struct uw_recv_wr rw = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 };
	assert_int_equal(uw_post_recv(sqp, &rw, NULL), 0);
	assert_int_equal(uw_cm_accept(sid, NULL), 0);
	uw_cm_ack_event(event(5000)); /* ESTABLISHED */
	struct uw_cm_event *ce;
	assert_int_equal(uw_cm_get_event_timeout(ch, &ce, 5000), 0);
	assert_int_equal(ce->event, UW_CM_EVENT_ESTABLISHED);
	uw_cm_ack_event(ce);

	/* the Write first, then the Send: the Send's arrival (a completion the
	 * server sees) comes after the Write's data is placed, as the
	 * streams are in order; the Write itself completes only at its sender */
	struct uw_sge s = { (uintptr_t)src, 10, mr->lkey };
	struct uw_send_wr ww = { .wr_id = 2,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = UW_WR_RDMA_WRITE,
				 .send_flags = UW_SEND_SIGNALED,
				 .rdma = { (uintptr_t)S.region + 100, S.mr_rw->rkey } };
	assert_int_equal(uw_post_send(qp, &ww, NULL), 0);
	struct uw_send_wr sw = { .wr_id = 1,
				 .sg_list = &s,
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(qp, &sw, NULL), 0);
	struct uw_wc wc;
	assert_int_equal(uw_cq_wait(S.cq, 1, 5000), 1);
	assert_int_equal(uw_poll_cq(S.cq, 1, &wc), 1);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.byte_len, 10);
	assert_memory_equal(S.recvbuf, "good data", 10);
	assert_true(uw_cq_wait(cq, 2, 5000) >= 2);
	assert_memory_equal(S.region + 100, "good data", 10);
	assert_true(guards_intact());

	uw_cm_disconnect(id);
	uw_cm_ack_event(event(5000)); /* DISCONNECTED */
	while (uw_poll_cq(S.cq, 1, &wc) > 0)
		;
	uw_destroy_qp(sqp);
	uw_cm_destroy_id(sid);
	while (!uw_cm_get_event_timeout(ch, &ce, 100))
		uw_cm_ack_event(ce);
	uw_destroy_qp(qp);
	uw_cm_destroy_id(id);
	uw_dereg_mr(mr);
	uw_destroy_cq(cq);
	uw_cm_destroy_channel(ch);
	uw_dealloc_pd(pd);
	assert_int_equal(uw_close(c), 0);
}

/* uwarp-perf's server (another process, any initiator welcome): a stranger
 * sends an FPDU with a bad CRC and gets the Terminate; the server keeps
 * serving its other clients. */
static void perf_server_ends_only_the_bad_connection(void **state)
{
	struct proc srv;
	char *extra[] = { "--quiet", NULL };
	int port = perf_server_start(&srv, UWARP_PERF_BIN, extra);
	assert_true(port > 0);
	char portbuf[16], out[4096];
	snprintf(portbuf, sizeof(portbuf), "%d", port);
	char *argv[] = { UWARP_PERF_BIN, "-c",     "127.0.0.1", "-p",      portbuf, "--op",
			 "write",        "--size", "65536",     "--iters", "50",    NULL };
	struct proc busy;
	assert_int_equal(proc_start(&busy, argv), 0); /* a good client meanwhile */
	struct raw r;
	struct mpa_frame rep;
	raw_dial(&r, port, NULL, &rep);
	uint8_t h[DDP_UNTAGGED_HDR_LEN];
	size_t hl = untagged(h, RDMAP_SEND, DDP_QN_SEND, 1, 0, 0);
	raw_send(&r, h, hl, "hello", 5, true);
	read_terminate(&r, UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, UW_MPA_ECODE_CRC);
	assert_true(proc_wait(&busy, 30000));
	assert_int_equal(proc_exit_code(&busy), 0);
	assert_int_equal(proc_run(argv, 30000, out, sizeof(out)), 0);
	assert_non_null(strstr(out, "data verified"));
	proc_end(&busy);
	proc_end(&srv);
}

/* r's next Read Request (of the whole region), sent; false if the server
 * is gone */
static bool send_read(struct raw *r, uint32_t msn)
{
	uint8_t h[64], wire[128];
	size_t n =
		raw_frame(r, h, read_req_n(h, msn, REGION, r->w.rkey_rw, r->w.addr), NULL, 0, wire);
	return send(r->fd, wire, n, MSG_NOSIGNAL) == (ssize_t)n;
}

/* The server's end of r has taken every FPDU r sent (@sent) and either
 * owes no Read Response beyond its gather list (*full false) or is stuck
 * in a gather list the socket will not take (*full true). */
static bool server_caught_up(struct raw *r, uint64_t sent, bool *full)
{
	pthread_mutex_lock(&S.ctx->lock);
	struct uw_conn *c = ((struct uw_qp_impl *)r->qp)->conn;
	bool up = false;
	if (c && c->rx_fpdus == sent) {
		*full = c->wr_iov < c->batch.niov && (c->poll_events & UV_WRITABLE);
		up = *full || rdmap_irq_count(&c->rd) == 0;
	}
	pthread_mutex_unlock(&S.ctx->lock);
	return up;
}

/* What the server's end of r holds, once it has taken @fpdus FPDUs and
 * every byte r sent (its socket's queue empty): *bare when it has no
 * receive buffer of its own and no gather list, *irq when its Read queue
 * exists. False while it has not caught up. */
static bool server_holds(struct raw *r, uint64_t fpdus, bool *bare, bool *irq)
{
	pthread_mutex_lock(&S.ctx->lock);
	struct uw_conn *c = ((struct uw_qp_impl *)r->qp)->conn;
	int queued = -1;
	bool up = c && c->rx_fpdus == fpdus && !ioctl(c->fd, FIONREAD, &queued) && !queued;
	if (up) {
		*bare = !c->rxbuf && !c->rx_own && !c->txset;
		*irq = c->rd.irq.e != NULL;
	}
	pthread_mutex_unlock(&S.ctx->lock);
	return up;
}

static void wait_server_holds(struct raw *r, uint64_t fpdus, bool *bare, bool *irq)
{
	long end = proc_ms() + 10000;
	while (!server_holds(r, fpdus, bare, irq)) {
		assert_true(proc_ms() < end);
		poll(NULL, 0, 1);
	}
}

/* An idle connection holds no buffers: it reads through its context's
 * buffer (the FPDU parser keeps a partial FPDU's state, not its bytes),
 * takes a gather list from the context's pool only while one is in flight,
 * and makes its Read queue with the first Read Request. Each idle QP cost
 * 42.7 KiB before, 12.8 now (docs/performance.md, "Idle connections"). */
static void an_idle_connection_holds_no_buffers(void **state)
{
	struct raw r;
	uint8_t h[64], wire[4096];
	bool bare = false, irq = true;
	raw_connect(&r);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 1);
	size_t n = raw_frame(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw, r.w.addr), data, 64,
			     wire);
	assert_int_equal(write(r.fd, wire, n), (ssize_t)n);
	wait_server_holds(&r, 1, &bare, &irq);
	assert_true(bare);
	assert_false(irq);
	/* half an FPDU, taken: nothing held for the rest */
	n = raw_frame(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw, r.w.addr + 64), data, 200,
		      wire);
	assert_int_equal(write(r.fd, wire, n / 2), (ssize_t)(n / 2));
	wait_server_holds(&r, 1, &bare, &irq);
	assert_true(bare);
	assert_int_equal(write(r.fd, wire + n / 2, n - n / 2), (ssize_t)(n - n / 2));
	wait_server_holds(&r, 2, &bare, &irq);
	assert_true(bare);
	assert_memory_equal(S.region, data, 64);
	assert_memory_equal(S.region + 64, data, 200);
	/* a Read: its queue made; the Response's gather list given back */
	assert_true(send_read(&r, 1));
	long end = proc_ms() + 10000;
	do {
		assert_true(proc_ms() < end);
		poll(NULL, 0, 1);
	} while (!server_holds(&r, 3, &bare, &irq) || !bare);
	assert_true(irq);
	close(r.fd);
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	uw_cm_ack_event(e);
	expect_flushed_receive();
	uw_destroy_qp(r.qp);
	uw_cm_destroy_id(r.id);
}

/* Read Requests past the IRD from a peer that reads nothing: the server's
 * send side is full of Read Responses, stopped in a gather list, when the
 * requests that break the limit arrive. The Terminate (RFC 5040 section
 * 7, as for any other error; docs/wire-notes.md, "How a connection ends
 * after an error it found") leaves behind the Responses already begun,
 * then the stream ends; before, the stream ended with no Terminate. */
static void reads_beyond_the_ird_behind_a_full_send_side_get_the_terminate(void **state)
{
	struct raw r;
	dial_rcvbuf = 4096; /* full sooner */
	raw_connect(&r);
	dial_rcvbuf = 0;
	pthread_mutex_lock(&S.ctx->lock);
	uint32_t ird = ((struct uw_qp_impl *)r.qp)->conn->rd.cfg.ird;
	pthread_mutex_unlock(&S.ctx->lock);
	/* Reads four at a time, each group once the server has answered the
	 * last, until its socket and ours are full */
	uint32_t msn = 1;
	bool full = false;
	for (int group = 0; group < 2000 && !full; group++) {
		for (int i = 0; i < 4; i++)
			assert_true(send_read(&r, msn++));
		int t = 0;
		while (!server_caught_up(&r, msn - 1, &full) && t++ < 5000)
			usleep(1000);
		assert_true(t < 5000);
	}
	assert_true(full);
	/* IRD + 1 more at once: the server may owe at most IRD */
	for (uint32_t i = 0; i <= ird; i++)
		if (!send_read(&r, msn++))
			break; /* the server is gone: what came back says how */
	/* everything the server sent: whole Read Responses, then one
	 * Terminate, then the end of the stream */
	struct from_server f;
	struct rdmap_term t;
	read_to_end(&r, 10, &f);
	print_message("%u Reads sent; back: %u Read Response FPDUs, %u Terminates, then %s\n",
		      msn - 1, f.w.by_op[RDMAP_RDMA_READ_RESP], f.w.by_op[RDMAP_TERMINATE],
		      f.end ? strerror(f.end) : "the end of the stream");
	assert_true(f.w.by_op[RDMAP_RDMA_READ_RESP] > 0);
	assert_int_equal(f.w.by_op[RDMAP_TERMINATE], 1);
	assert_false(f.w.after_terminate);
	assert_int_equal(f.end, 0);
	terminate_of(&f, &t);
	assert_int_equal(t.rfc.layer, UW_TERM_LAYER_RDMAP);
	assert_int_equal(t.rfc.etype, UW_RDMAP_REMOTE_OPERATION);
	assert_int_equal(t.rfc.ecode, UW_RDMAP_CATASTROPHIC_STREAM);
	close(r.fd);
	server_end_terminated(&r, UW_TERM_LAYER_RDMAP, UW_RDMAP_CATASTROPHIC_STREAM);
}

static volatile sig_atomic_t sigpipes;
static void on_sigpipe(int sig)
{
	(void)sig;
	sigpipes++;
}

/* A connection whose socket can no longer send (as after a peer's reset
 * that a partial write did not report): the next write is an error on that
 * connection, never SIGPIPE, which would end the whole program (a server
 * died so when a client was killed mid-transfer). */
static void a_socket_that_cannot_send_costs_an_error_not_sigpipe(void **state)
{
	struct sigaction sa = { .sa_handler = on_sigpipe }, old;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPIPE, &sa, &old);
	sigpipes = 0;
	struct raw r;
	raw_connect(&r);
	pthread_mutex_lock(&S.ctx->lock);
	int fd = ((struct uw_qp_impl *)r.qp)->conn->fd;
	pthread_mutex_unlock(&S.ctx->lock);
	assert_int_equal(shutdown(fd, SHUT_WR), 0); /* every send is EPIPE now */
	struct uw_send_wr wr = { .wr_id = 77,
				 .opcode = UW_WR_SEND,
				 .sg_list =
					 &(struct uw_sge){ (uintptr_t)S.region, 64, S.mr_rw->lkey },
				 .num_sge = 1,
				 .send_flags = UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(r.qp, &wr, NULL), 0);
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	uw_cm_ack_event(e);
	/* the Send and the posted receive complete, with errors */
	struct uw_wc wc[4];
	int got = 0;
	for (int i = 0; i < 100 && got < 2; i++) {
		int n = uw_poll_cq(S.cq, 4 - got, wc + got);
		got += n > 0 ? n : 0;
		if (got < 2)
			usleep(10000);
	}
	assert_int_equal(got, 2);
	for (int i = 0; i < 2; i++)
		assert_int_not_equal(wc[i].status, UW_WC_SUCCESS);
	assert_int_equal(sigpipes, 0);
	close(r.fd);
	uw_destroy_qp(r.qp);
	uw_cm_destroy_id(r.id);
	sigaction(SIGPIPE, &old, NULL);
}

/* A P2P initiator whose RTR never comes: the responder's application
 * accepted, and gets CONNECT_ERROR (ETIMEDOUT) after the context's MPA
 * request timeout, and the connection is closed, not held for ever. */
/* keepalive_s: the server's socket for r (found among this process's
 * descriptors by its peer's port) has SO_KEEPALIVE, TCP_KEEPIDLE,
 * TCP_KEEPINTVL and TCP_KEEPCNT as asked */
static void server_socket_keepalive(struct raw *r, int ka[4])
{
	struct sockaddr_in me, peer;
	socklen_t l = sizeof(me);
	assert_int_equal(getsockname(r->fd, (struct sockaddr *)&me, &l), 0);
	DIR *d = opendir("/proc/self/fd");
	assert_non_null(d);
	bool found = false;
	for (struct dirent *de; !found && (de = readdir(d));) {
		int fd = atoi(de->d_name);
		l = sizeof(peer);
		if (fd == r->fd || getpeername(fd, (struct sockaddr *)&peer, &l) ||
		    peer.sin_family != AF_INET || peer.sin_port != me.sin_port)
			continue;
		static const int lv[4] = { SOL_SOCKET, IPPROTO_TCP, IPPROTO_TCP, IPPROTO_TCP };
		static const int nm[4] = { SO_KEEPALIVE, TCP_KEEPIDLE, TCP_KEEPINTVL, TCP_KEEPCNT };
		for (int i = 0; i < 4; i++) {
			socklen_t n = sizeof(int);
			assert_int_equal(getsockopt(fd, lv[i], nm[i], &ka[i], &n), 0);
		}
		found = true;
	}
	closedir(d);
	assert_true(found);
}

/* idle_timeout_ms: a peer that keeps sending whole FPDUs stays, however
 * long; one that stops in the middle of an FPDU (which holds the
 * connection's receive side for ever) is ended with ETIMEDOUT */
static void an_idle_limit_ends_a_peer_stuck_in_an_fpdu(void **state)
{
	struct raw r;
	uint8_t h[64];
	accept_idle_ms = 400;
	accept_keepalive_s = 9;
	raw_connect(&r);
	accept_idle_ms = 0;
	accept_keepalive_s = 0;
	int ka[4];
	server_socket_keepalive(&r, ka);
	assert_int_equal(ka[0], 1); /* on, first probe after 9 s, every 3 s, 3 of them */
	assert_int_equal(ka[1], 9);
	assert_int_equal(ka[2], 3);
	assert_int_equal(ka[3], 3);
	/* three times the limit, a whole Write every 50 ms: still connected */
	for (int i = 0; i < 24; i++) {
		raw_send(&r, h, tagged(h, RDMAP_RDMA_WRITE, r.w.rkey_rw, r.w.addr), data, 8, false);
		usleep(50000);
		assert_null(event(0));
	}
	/* the first 10 bytes of the next FPDU, and nothing more */
	uint8_t part[10] = { 0, 22 };
	assert_int_equal(write(r.fd, part, sizeof(part)), (ssize_t)sizeof(part));
	struct uw_cm_event *e = event(5000);
	assert_non_null(e);
	assert_int_equal(e->event, UW_CM_EVENT_DISCONNECTED);
	assert_int_equal(e->status, ETIMEDOUT);
	uw_cm_ack_event(e);
	uint8_t b[64];
	struct timeval tv = { 5, 0 };
	setsockopt(r.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t k;
	while ((k = read(r.fd, b, sizeof(b))) > 0)
		;
	assert_true(k == 0 || (k < 0 && errno == ECONNRESET)); /* the connection is gone */
	close(r.fd);
	expect_flushed_receive(); /* the posted receive */
	uw_destroy_qp(r.qp);
	uw_cm_destroy_id(r.id);
}

static void a_p2p_rtr_that_never_comes_times_out(void **state)
{
	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO, .mpa_request_timeout_ms = 300 };
	struct uw_context *c = uw_open(&ca);
	struct uw_pd *pd = uw_alloc_pd(c);
	struct uw_cq *cq = uw_create_cq(c, 16, NULL, NULL);
	struct uw_cm_channel *ch = uw_cm_create_channel(c);
	struct uw_cm_id *lid = uw_cm_create_id(ch, NULL);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	assert_int_equal(uw_cm_listen(lid, (struct sockaddr *)&a, 4), 0);
	a.sin_port = ((struct sockaddr_in *)&lid->local_addr)->sin_port;

	int fd = socket(AF_INET, SOCK_STREAM, 0);
	assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	struct mpa_frame req = { .type = MPA_FRAME_REQUEST,
				 .rev = 2,
				 .crc = true,
				 .enhanced = true,
				 .p2p = true,
				 .rtr = MPA_RTR_WRITE,
				 .ird = 4,
				 .ord = 4 };
	uint8_t buf[600];
	ssize_t n = mpa_frame_encode(&req, buf, sizeof(buf));
	assert_true(n > 0);
	assert_int_equal(write(fd, buf, (size_t)n), n);

	struct uw_cm_event *e;
	assert_int_equal(uw_cm_get_event_timeout(ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	struct uw_cm_id *id = e->id;
	uw_cm_ack_event(e);
	struct uw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .cap = { 4, 4, 1, 1, 0 } };
	struct uw_qp *qp = uw_cm_create_qp(id, pd, &qa);
	assert_non_null(qp);
	struct uw_conn_param p = { .ird = 4, .ord = 4 };
	assert_int_equal(uw_cm_accept(id, &p), 0);
	/* the Reply comes; the RTR does not */
	assert_int_equal(uw_cm_get_event_timeout(ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_ERROR);
	assert_int_equal(e->status, ETIMEDOUT);
	uw_cm_ack_event(e);
	/* and the connection is gone: the peer reads the Reply, then the end */
	struct timeval tv = { 5, 0 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ssize_t k;
	while ((k = read(fd, buf, sizeof(buf))) > 0)
		;
	assert_true(k == 0 || (k < 0 && errno == ECONNRESET));
	close(fd);
	uw_destroy_qp(qp);
	uw_cm_destroy_id(id);
	uw_cm_destroy_id(lid);
	uw_cm_destroy_channel(ch);
	uw_destroy_cq(cq);
	uw_dealloc_pd(pd);
	assert_int_equal(uw_close(c), 0);
}

/* siw's responder race (docs/wire-notes.md): a responder that is not
 * uwarp says nothing after its Reply and reads nothing for a while. The
 * uwarp initiator, once its Send is acknowledged, adds one zero-length
 * RDMA Write to STag 1 to wake it, and nothing else. */
static void initiator_nudges_a_silent_responder_once(void **state)
{
	int lfd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET };
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	socklen_t al = sizeof(a);
	assert_int_equal(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(listen(lfd, 1), 0);
	assert_int_equal(getsockname(lfd, (struct sockaddr *)&a, &al), 0);

	struct uw_context_attr ca = { .progress = UW_PROGRESS_AUTO };
	struct uw_context *c = uw_open(&ca);
	struct uw_pd *pd = uw_alloc_pd(c);
	struct uw_cq *cq = uw_create_cq(c, 16, NULL, NULL);
	struct uw_cm_channel *ch = uw_cm_create_channel(c);
	struct uw_cm_id *id = uw_cm_create_id(ch, NULL);
	struct uw_qp_init_attr qa = { .send_cq = cq, .recv_cq = cq, .cap = { 4, 4, 1, 1, 64 } };
	struct uw_qp *qp = uw_cm_create_qp(id, pd, &qa);
	assert_int_equal(uw_cm_connect(id, (struct sockaddr *)&a, NULL), 0);
	int fd = accept(lfd, NULL, NULL);
	assert_true(fd >= 0);

	/* the Request, then a Reply as siw makes it (no uwarp offer) */
	uint8_t buf[4096];
	struct mpa_frame req, rep = {
		.type = MPA_FRAME_REPLY, .rev = 2, .crc = true, .enhanced = true, .ird = 1, .ord = 1
	};
	size_t got = 0;
	for (;;) {
		ssize_t k = read(fd, buf + got, 1);
		assert_int_equal(k, 1);
		got++;
		ssize_t len = mpa_frame_decode(buf, got, 512, &req);
		if (len > 0)
			break;
		assert_int_equal(len, -EAGAIN);
	}
	ssize_t n = mpa_frame_encode(&rep, buf, sizeof(buf));
	assert_int_equal(write(fd, buf, (size_t)n), n);
	struct uw_cm_event *e;
	assert_int_equal(uw_cm_get_event_timeout(ch, &e, 5000), 0);
	assert_int_equal(e->event, UW_CM_EVENT_ESTABLISHED);
	uw_cm_ack_event(e);
	struct uw_send_wr wr = { .wr_id = 1,
				 .opcode = UW_WR_SEND,
				 .sg_list = &(struct uw_sge){ (uintptr_t)"wake up", 8, 0 },
				 .num_sge = 1,
				 .send_flags = UW_SEND_INLINE | UW_SEND_SIGNALED };
	assert_int_equal(uw_post_send(qp, &wr, NULL), 0);

	/* sit on it, then see what came */
	usleep(1500 * 1000);
	struct timeval tv = { 0, 300 * 1000 };
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	size_t total = 0;
	for (;;) {
		ssize_t k = read(fd, buf + total, sizeof(buf) - total);
		if (k <= 0)
			break;
		total += (size_t)k;
	}
	struct fpdu_rx rx;
	struct fpdu_rx_cfg cfg = { .crc = true, .hdr_len = rdmap_hdr_len };
	fpdu_rx_init(&rx, &cfg);
	size_t off = 0, used;
	int sends = 0, nudges = 0, other = 0;
	while (off < total) {
		struct fpdu_rx_out out;
		enum fpdu_rx_event ev = fpdu_rx_step(&rx, buf + off, total - off, &used, &out);
		off += used;
		assert_int_not_equal(ev, FPDU_RX_ERROR);
		if (ev != FPDU_RX_HDR)
			continue;
		uint8_t op = rx.hdr[1] & 0x0f;
		if (op == RDMAP_SEND && rx.payload_len == 8)
			sends++;
		else if (op == RDMAP_RDMA_WRITE && rx.payload_len == 0 &&
			 be32_get(rx.hdr + DDP_OFF_STAG) == 1)
			nudges++;
		else
			other++;
	}
	assert_int_equal(sends, 1);
	assert_int_equal(nudges, 1);
	assert_int_equal(other, 0);

	close(fd);
	close(lfd);
	uw_cm_destroy_id(id);
	uw_destroy_qp(qp);
	struct uw_wc wc;
	while (uw_poll_cq(cq, 1, &wc) > 0)
		;
	while (!uw_cm_get_event_timeout(ch, &e, 0))
		uw_cm_ack_event(e);
	uw_destroy_cq(cq);
	uw_cm_destroy_channel(ch);
	uw_dealloc_pd(pd);
	assert_int_equal(uw_close(c), 0);
}

int main(void)
{
	/* a Send's wait for a receive, shorter than the default (read by
	 * uw_open: a_send_whose_receive_never_comes_is_ddp_2_02 waits it) */
	setenv("UWARP_RECV_WAIT_MS", "300", 1);
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(crc_error_is_llp_0x02),
		cmocka_unit_test(an_idle_limit_ends_a_peer_stuck_in_an_fpdu),
		cmocka_unit_test(bad_crc_outranks_a_bad_stag),
		cmocka_unit_test(bad_crc_outranks_a_bad_opcode),
		cmocka_unit_test(bad_ddp_version_is_ddp_2_06),
		cmocka_unit_test(bad_rdmap_version_is_rdmap_2_05),
		cmocka_unit_test(rfc7306_opcode_to_a_stranger_is_rdmap_2_06),
		cmocka_unit_test(send_on_queue_5_is_ddp_2_01),
		cmocka_unit_test(send_msn_skip_is_ddp_2_03),
		cmocka_unit_test(send_longer_than_the_receive_is_ddp_2_05),
		cmocka_unit_test(a_send_with_no_receive_waits_for_one_posted_later),
		cmocka_unit_test(a_send_whose_receive_never_comes_is_ddp_2_02),
		cmocka_unit_test(a_send_waits_for_a_receive_posted_to_its_srq),
		cmocka_unit_test(write_to_unknown_stag_is_ddp_1_00),
		cmocka_unit_test(write_past_the_region_is_ddp_1_01),
		cmocka_unit_test(an_idle_connection_holds_no_buffers),
		cmocka_unit_test(write_without_rights_is_rdmap_1_02),
		cmocka_unit_test(read_without_rights_is_rdmap_1_02),
		cmocka_unit_test(write_to_a_local_key_is_invalid_stag),
		cmocka_unit_test(read_of_a_local_key_is_invalid_stag),
		cmocka_unit_test(another_connections_stag_is_refused_as_a_random_one),
		cmocka_unit_test(send_with_invalidate_of_an_mr_is_rdmap_2_09),
		cmocka_unit_test(ulpdu_too_short_is_llp_0x03),
		cmocka_unit_test(the_server_goes_on_serving),
		cmocka_unit_test(perf_server_ends_only_the_bad_connection),
		cmocka_unit_test(initiator_nudges_a_silent_responder_once),
		cmocka_unit_test(a_p2p_rtr_that_never_comes_times_out),
		cmocka_unit_test(a_socket_that_cannot_send_costs_an_error_not_sigpipe),
		cmocka_unit_test(reads_beyond_the_ird_behind_a_full_send_side_get_the_terminate),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
