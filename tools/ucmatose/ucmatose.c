/*
 * uwarp-ucmatose: rdma-core's ucmatose (cmatose.c) over uwarp, to meet it
 * on Linux siw in either role.
 *
 *   server: uwarp-ucmatose [-b ADDR] [-p PORT] [-c CONNS] [-C COUNT] [-S SIZE]
 *   client: uwarp-ucmatose -s SERVER [-p PORT] [-c CONNS] [-C COUNT] [-S SIZE]
 *   both:   [--crc on|off] [--markers on|off]
 *
 * As ucmatose: port 7471, 1 connection, 10 messages of 100 bytes. Both
 * sides post COUNT receives before connecting or accepting (IRD = ORD = 1).
 * Once every connection is up, the server Sends COUNT messages on each,
 * then waits for COUNT replies; the client takes the COUNT messages, then
 * Sends its COUNT replies. The server disconnects; the client answers.
 * Exit status 0 when every message went and came.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uwarp/verbs.h>

#include "tools/lib/tool_conn.h"
#include "tools/lib/tool_opt.h"

struct node {
	struct uw_cm_id *id;
	struct uw_qp *qp;
	uint8_t *mem;
	struct uw_mr *mr;
	bool connected;
	int recvd, sent;
};

static struct {
	const char *dst, *src, *port;
	int connections, count, size;
	enum uw_crc_mode crc;
	int markers;
} o = { .port = "7471", .connections = 1, .count = 10, .size = 100, .crc = UW_CRC_DEFAULT };

static struct uw_context *ctx;
static struct uw_pd *pd;
static struct uw_cq *cq;
static struct uw_cm_channel *ch;
static struct node *nodes;
static int nnodes;

static int init_node(struct node *n, struct uw_cm_id *id)
{
	n->id = id;
	struct uw_qp_init_attr qa = { .qp_context = n,
				      .send_cq = cq,
				      .recv_cq = cq,
				      .sq_sig_all = 1,
				      .cap = { (uint32_t)o.count + 1, (uint32_t)o.count + 1, 1, 1,
					       0 } };
	if (!(n->qp = uw_cm_create_qp(id, pd, &qa)))
		return errno;
	n->mem = calloc(1, (size_t)o.size + 1);
	n->mr = n->mem ? uw_reg_mr(pd, n->mem, (size_t)o.size + 1, UW_ACCESS_LOCAL_WRITE) : NULL;
	if (!n->mr)
		return ENOMEM;
	/* every message and every receive use the one buffer, as ucmatose's */
	for (int i = 0; i < o.count; i++) {
		struct uw_sge s = { (uintptr_t)n->mem, (uint32_t)o.size, n->mr->lkey };
		struct uw_recv_wr r = { .wr_id = (uintptr_t)n, .sg_list = &s, .num_sge = 1 };
		int rc = uw_post_recv(n->qp, &r, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static int post_sends(struct node *n)
{
	for (int i = 0; i < o.count; i++) {
		struct uw_sge s = { (uintptr_t)n->mem, (uint32_t)o.size, n->mr->lkey };
		struct uw_send_wr w = {
			.wr_id = (uintptr_t)n, .sg_list = &s, .num_sge = 1, .opcode = UW_WR_SEND
		};
		int rc = uw_post_send(n->qp, &w, NULL);
		if (rc)
			return rc;
	}
	return 0;
}

static struct uw_conn_param param(void)
{
	struct uw_conn_param p = { .ird = 1, .ord = 1, .crc = o.crc, .markers = o.markers };
	return p;
}

/* Take CM events until every connection is up (or failed). */
static int connect_events(bool server)
{
	int left = o.connections, failed = 0;
	while (left > 0) {
		struct uw_cm_event *e;
		int rc = uw_cm_get_event_timeout(ch, &e, 30000);
		if (rc) {
			fprintf(stderr, "uwarp-ucmatose: waiting for connections: %s\n",
				strerror(rc));
			return rc;
		}
		if (e->event == UW_CM_EVENT_CONNECT_REQUEST && server) {
			struct uw_cm_id *id = e->id;
			uw_cm_ack_event(e);
			struct uw_conn_param p = param();
			p.ird = p.ord = 0; /* ucmatose accepts with NULL: the default */
			if (nnodes == o.connections || init_node(&nodes[nnodes], id) ||
			    uw_cm_accept(id, &p)) {
				printf("cmatose: failing connection request\n");
				uw_cm_reject(id, NULL, 0);
				left--, failed++;
				continue;
			}
			nnodes++;
			continue;
		}
		for (int i = 0; i < nnodes; i++)
			if (nodes[i].id == e->id && e->event == UW_CM_EVENT_ESTABLISHED)
				nodes[i].connected = true;
		if (e->event == UW_CM_EVENT_ESTABLISHED) {
			left--;
		} else if (e->event != UW_CM_EVENT_DISCONNECTED) {
			printf("cmatose: event: %s, error: %d\n", uw_cm_event_str(e->event),
			       e->status);
			if (!server && (e->event == UW_CM_EVENT_CONNECT_ERROR ||
					e->event == UW_CM_EVENT_REJECTED)) {
				char peer[300];
				snprintf(peer, sizeof(peer), "%s port %s", o.dst, o.port);
				tool_connect_failed("uwarp-ucmatose", peer,
						    e->event == UW_CM_EVENT_REJECTED ? ECONNREFUSED
										     : e->status);
			}
			left--, failed++;
		}
		uw_cm_ack_event(e);
	}
	return failed ? ECONNREFUSED : 0;
}

/* Completions until each connected node has COUNT of the kind. */
static int drain(bool recvs)
{
	for (;;) {
		bool done = true;
		for (int i = 0; i < nnodes; i++)
			if (nodes[i].connected &&
			    (recvs ? nodes[i].recvd : nodes[i].sent) < o.count)
				done = false;
		if (done)
			return 0;
		struct uw_wc wc[16];
		int n = uw_poll_cq(cq, 16, wc);
		if (n == 0 && uw_cq_wait(cq, 1, 30000) < 0) {
			fprintf(stderr, "uwarp-ucmatose: no completion in 30 s\n");
			return ETIMEDOUT;
		}
		for (int k = 0; k < n; k++) {
			struct node *nd = (struct node *)(uintptr_t)wc[k].wr_id;
			if (wc[k].status != UW_WC_SUCCESS) {
				fprintf(stderr, "uwarp-ucmatose: connection %d: completion: %s\n",
					(int)(nd - nodes), uw_wc_status_str(wc[k].status));
				return EIO;
			}
			if (wc[k].opcode == UW_WC_RECV)
				nd->recvd++;
			else
				nd->sent++;
		}
	}
}

/* A connection a Terminate ended says so, and which it was */
static void report_terminate(const struct uw_cm_event *e)
{
	int i = 0;
	while (i < nnodes && nodes[i].id != e->id)
		i++;
	char who[64];
	snprintf(who, sizeof(who), "uwarp-ucmatose: connection %d", i);
	tool_report_terminate(stdout, who, e);
}

/* Waits for EXPECT disconnections; with FAILED (the transfers failed), also
 * reports what else comes within 1 s: a connection a Terminate ended may
 * be one this side could no longer disconnect, and not among EXPECT. */
static int disconnect_events(int expect, bool failed)
{
	while (expect > 0 || failed) {
		struct uw_cm_event *e;
		if (uw_cm_get_event_timeout(ch, &e, expect > 0 ? 30000 : 1000))
			return expect > 0 ? ETIMEDOUT : 0;
		report_terminate(e);
		if (e->event == UW_CM_EVENT_DISCONNECTED) {
			uw_cm_disconnect(e->id);
			expect--;
		}
		uw_cm_ack_event(e);
	}
	return 0;
}

static struct addrinfo *resolve(const char *host, bool passive)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = passive ? AI_PASSIVE : 0 },
			*ai;
	if (getaddrinfo(host, o.port, &hints, &ai)) {
		fprintf(stderr, "uwarp-ucmatose: cannot resolve %s\n", host ? host : "*");
		return NULL;
	}
	return ai;
}

static int run_server(void)
{
	printf("cmatose: starting server\n");
	struct addrinfo *ai = resolve(o.src, true), *pick = ai;
	if (!ai)
		return ENOENT;
	for (struct addrinfo *a = ai; a && !o.src; a = a->ai_next)
		if (a->ai_family == AF_INET6) /* the IPv6 wildcard takes IPv4 too */
			pick = a;
	struct uw_cm_id *lid = uw_cm_create_id(ch, NULL);
	int rc = lid ? uw_cm_listen(lid, pick->ai_addr, 64) : ENOMEM;
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "uwarp-ucmatose: listen: %s\n", strerror(rc));
		return rc;
	}
	if (!strcmp(o.port, "0")) { /* the kernel chose: say which */
		const struct sockaddr_storage *la = &lid->local_addr;
		unsigned port = la->ss_family == AF_INET6
					? ntohs(((const struct sockaddr_in6 *)la)->sin6_port)
					: ntohs(((const struct sockaddr_in *)la)->sin_port);
		printf("cmatose: listening on port %u\n", port);
	}
	fflush(stdout);
	rc = connect_events(true);
	if (!rc && o.count) {
		printf("initiating data transfers\n");
		for (int i = 0; i < nnodes && !rc; i++)
			rc = post_sends(&nodes[i]);
		printf("completing sends\n");
		if (!rc)
			rc = drain(false);
		printf("receiving data transfers\n");
		if (!rc)
			rc = drain(true);
		if (!rc)
			printf("data transfers complete\n");
	}
	printf("cmatose: disconnecting\n");
	int expect = 0;
	for (int i = 0; i < nnodes; i++)
		if (nodes[i].connected && !uw_cm_disconnect(nodes[i].id))
			expect++;
	int rc2 = disconnect_events(expect, rc != 0);
	printf("disconnected\n");
	uw_cm_destroy_id(lid);
	return rc ? rc : rc2;
}

static int run_client(void)
{
	printf("cmatose: starting client\n");
	struct addrinfo *ai = resolve(o.dst, false);
	if (!ai)
		return ENOENT;
	printf("cmatose: connecting\n");
	int rc = 0;
	for (int i = 0; i < o.connections && !rc; i++) {
		struct uw_cm_id *id = uw_cm_create_id(ch, NULL);
		struct uw_conn_param p = param();
		rc = id ? init_node(&nodes[i], id) : ENOMEM;
		if (!rc)
			rc = uw_cm_connect(id, ai->ai_addr, &p);
		nnodes++;
	}
	freeaddrinfo(ai);
	if (!rc)
		rc = connect_events(false);
	if (!rc && o.count) {
		printf("receiving data transfers\n");
		rc = drain(true);
		printf("sending replies\n");
		for (int i = 0; i < nnodes && !rc; i++)
			rc = post_sends(&nodes[i]);
		if (!rc)
			rc = drain(false);
		if (!rc)
			printf("data transfers complete\n");
	}
	int expect = 0;
	for (int i = 0; i < nnodes; i++)
		expect += nodes[i].connected;
	int rc2 = disconnect_events(rc ? 0 : expect, rc != 0);
	return rc ? rc : rc2;
}

int main(int argc, char **argv)
{
	tool_opt_version(argc, argv);
	static const struct option longopts[] = {
		{ "crc", required_argument, 0, 'R' },
		{ "markers", required_argument, 0, 'M' },
		{ "help", no_argument, 0, 'h' },
		{ 0, 0, 0, 0 },
	};
	static const char *const off_on[] = { "off", "on", NULL };
	const char *p = argv[0];
	static char portbuf[8];
	int c;
	while ((c = getopt_long(argc, argv, "s:b:c:C:S:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o.dst = optarg;
			break;
		case 'b':
			o.src = optarg;
			break;
		case 'c':
			o.connections = (int)tool_opt_uint(p, "-c", optarg, 1, 1024);
			break;
		case 'C':
			o.count = (int)tool_opt_uint(p, "-C", optarg, 0, INT_MAX);
			break;
		case 'S':
			o.size = (int)tool_opt_size(p, "-S", optarg, 0, 64 << 20);
			break;
		case 'p':
			/* a number (written out in decimal for getaddrinfo, which
			 * takes no 0x), or a service name as ucmatose's takes */
			if (getservbyname(optarg, "tcp")) {
				o.port = optarg;
			} else {
				snprintf(portbuf, sizeof(portbuf), "%u",
					 (unsigned)tool_opt_uint(p, "-p", optarg, 0, 65535));
				o.port = portbuf;
			}
			break;
		case 'R':
			o.crc = tool_opt_word(p, "--crc", optarg, off_on) ? UW_CRC_ON : UW_CRC_OFF;
			break;
		case 'M':
			o.markers = tool_opt_word(p, "--markers", optarg, off_on);
			break;
		default:
			fprintf(c == 'h' ? stdout : stderr,
				"usage: %s [-s server_address] [-b bind_address] [-c connections]\n"
				"\t[-C message_count] [-S message_size] [-p port_number]\n"
				"\t[--crc on|off] [--markers on|off]\n",
				argv[0]);
			if (c == 'h')
				printf("librdmacm's cmatose test over uwarp: without -s a server.\n"
				       "  -s ADDR   be the client of the server at ADDR\n"
				       "  -b ADDR   the address to listen on or connect from\n"
				       "  -c N      connections (default 1, at most 1024)\n"
				       "  -C N      messages each way on each connection (default "
				       "10)\n"
				       "  -S BYTES  per message (default 100)\n"
				       "  -p PORT   a number or a service name (default 7471; -p 0 "
				       "on\n"
				       "            the server: one the kernel picks, printed)\n"
				       "  --crc on|off, --markers on|off   ask for MPA CRC "
				       "(default on)\n"
				       "            and markers (default off)\n");
			return c == 'h' ? 0 : 2;
		}
	}
	tool_opt_no_more(p, argc, argv, optind);
	if (!o.size)
		o.count = 0;
	struct uw_context_attr ca = { .progress = UW_PROGRESS_MANUAL };
	ctx = uw_open(&ca);
	pd = ctx ? uw_alloc_pd(ctx) : NULL;
	cq = pd ? uw_create_cq(ctx, o.connections * (2 * o.count + 2) + 16, NULL, NULL) : NULL;
	ch = cq ? uw_cm_create_channel(ctx) : NULL;
	nodes = calloc((size_t)o.connections, sizeof(*nodes));
	if (!ch || !nodes) {
		fprintf(stderr, "uwarp-ucmatose: %s\n", strerror(errno));
		return 1;
	}
	int rc = o.dst ? run_client() : run_server();
	printf("test complete\n");
	for (int i = 0; i < nnodes; i++) {
		if (nodes[i].id)
			uw_cm_destroy_id(nodes[i].id);
		if (nodes[i].qp)
			uw_destroy_qp(nodes[i].qp);
		if (nodes[i].mr)
			uw_dereg_mr(nodes[i].mr);
		free(nodes[i].mem);
	}
	struct uw_wc wc;
	while (uw_poll_cq(cq, 1, &wc) > 0)
		;
	uw_destroy_cq(cq);
	uw_cm_destroy_channel(ch);
	uw_dealloc_pd(pd);
	uw_close(ctx);
	printf("return status %d\n", rc);
	return rc ? 1 : 0;
}
