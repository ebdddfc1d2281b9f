/*
 * perf_server.c: the uwarp-perf server. It accepts any iWARP initiator:
 * a uwarp-perf client describes its test in the MPA private data, anyone
 * else gets a 1 MiB buffer open for remote read and write and 16 posted
 * receives of 64 KiB. Receives are posted and the buffer registered before
 * the accept, because the peer may send at once. A malformed message on
 * one connection terminates only that connection. Each session has a
 * protection domain of its own: its buffer is open to its peer and to no
 * other (docs/wire-notes.md, "STags and isolation").
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>

#include "perf.h"

static double cpu_now(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

struct session {
	struct session *next;
	struct uw_cm_id *id;
	struct uw_pd *pd; /* this session's alone */
	struct uw_qp *qp;
	struct uw_cq *cq;
	struct uw_mr *mr, *ctl_mr;
	uint8_t *buf;  /* [slots: the RDMA target | nrecv: receive buffers] */
	uint8_t *rbuf; /* the receive part: a buffer per posted receive, so
			* none is overwritten before its completion is checked */
	uint64_t size, len;
	uint32_t slots, depth, nrecv;
	struct perf_hello h;
	bool ours, active;
	uint8_t ctl[64];
	uint64_t recvs, posted, errors, bytes;
	uint32_t since_ack;
	uint8_t last_mark;
	double t0, cpu0;
	uint64_t mem; /* bytes of buffer it holds, against --max-mem */
};

/* how long a latency session's server keeps spinning after its last
 * message before it sleeps (a round trip resumed later pays one wake-up) */
#define PERF_SPIN_WINDOW_S 0.2

static struct uw_context *ctx;
static struct uw_cq *cq;
/* what the sessions hold, against --max-conns and --max-mem */
static int nsessions;
static uint64_t mem_used; /* every session completes here */
static const struct perf_opts *opts;

static int post_recv(struct session *s)
{
	uint64_t slot = s->posted % s->nrecv;
	struct uw_sge sge = { (uintptr_t)(s->rbuf + slot * s->size), (uint32_t)s->size,
			      s->mr->lkey };
	struct uw_recv_wr wr = { .wr_id = s->posted, .sg_list = &sge, .num_sge = s->size ? 1 : 0 };
	int rc = uw_post_recv(s->qp, &wr, NULL);
	if (!rc)
		s->posted++;
	return rc;
}

static int send_ctl(struct session *s, uint64_t wr_id, const void *data, uint32_t len, int flags)
{
	if (len)
		memcpy(s->ctl, data, len);
	struct uw_sge sge = { (uintptr_t)s->ctl, len, s->ctl_mr->lkey };
	struct uw_send_wr wr = { .wr_id = wr_id,
				 .sg_list = &sge,
				 .num_sge = len ? 1 : 0,
				 .opcode = UW_WR_SEND,
				 .send_flags = flags };
	return uw_post_send(s->qp, &wr, NULL);
}

static void session_free(struct session *s)
{
	if (s->qp)
		uw_destroy_qp(s->qp);
	if (s->id)
		uw_cm_destroy_id(s->id);
	if (s->mr)
		uw_dereg_mr(s->mr);
	if (s->ctl_mr)
		uw_dereg_mr(s->ctl_mr);
	if (s->pd)
		uw_dealloc_pd(s->pd);
	free(s->buf);
	nsessions--;
	mem_used -= s->mem;
	free(s);
}

/* A session for a connection request, or NULL with why it was refused in
 * why (a sentence the client prints). The client asks for its buffers in
 * its hello; the server decides: within --max-conns sessions and --max-mem
 * bytes over all of them, or the request is refused at once. */
static struct session *session_new(struct uw_cm_event *e, char *why, size_t whylen)
{
	if (nsessions >= opts->max_conns) {
		snprintf(why, whylen,
			 "uwarp-perf server: at its limit of %d connections (--max-conns)",
			 opts->max_conns);
		return NULL;
	}
	snprintf(why, whylen, "uwarp-perf server: out of memory");
	struct session *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	nsessions++;
	s->id = e->id;
	if (e->private_data_len >= sizeof(struct perf_hello)) {
		memcpy(&s->h, e->private_data, sizeof(s->h));
		s->ours = ntohl(s->h.magic) == PERF_MAGIC;
	}
	if (s->ours) {
		s->size = be64toh(s->h.size);
		s->slots = ntohl(s->h.slots);
		s->depth = ntohl(s->h.depth);
		if (s->slots == 0 || s->size * s->slots > PERF_MAX_BUF || s->depth == 0 ||
		    s->depth > 4096 || s->size * 2 * s->depth > PERF_MAX_BUF)
			s->ours = false;
	}
	if (!s->ours) {
		s->size = 65536;
		s->slots = 16;
		s->depth = 16;
	}
	s->len = s->size * s->slots;
	if (perf_pattern_init(s->size)) {
		s->id = NULL;
		session_free(s);
		return NULL;
	}
	s->nrecv = 2 * s->depth;
	uint64_t need = s->size * (s->slots + s->nrecv) + 1;
	if (need > opts->max_mem - mem_used) {
		snprintf(why, whylen,
			 "uwarp-perf server: the test needs %llu MiB of buffers, %llu MiB of its "
			 "%llu MiB are free (--max-mem)",
			 (unsigned long long)(need >> 20),
			 (unsigned long long)((opts->max_mem - mem_used) >> 20),
			 (unsigned long long)(opts->max_mem >> 20));
		s->id = NULL; /* the caller rejects it */
		session_free(s);
		return NULL;
	}
	s->mem = need;
	mem_used += need;
	s->buf = malloc(need);
	s->rbuf = s->buf + s->len;
	s->cq = cq;
	s->pd = uw_alloc_pd(ctx);
	if (!s->buf || !s->pd)
		goto fail;
	/* Only a test that reads our slots needs the pattern in them; the
	 * rest of the buffer is touched only where a peer's data lands, so a
	 * stranger or an idle session costs its pages only when used. */
	if (s->ours && s->h.op == OP_READ)
		for (uint32_t i = 0; i < s->slots; i++)
			perf_fill(s->buf + (uint64_t)i * s->size, s->size, i);
	s->mr = uw_reg_mr(s->pd, s->buf, s->size * (s->slots + s->nrecv) + 1,
			  UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE | UW_ACCESS_REMOTE_READ |
				  UW_ACCESS_REMOTE_ATOMIC);
	s->ctl_mr = uw_reg_mr(s->pd, s->ctl, sizeof(s->ctl), UW_ACCESS_LOCAL_WRITE);
	struct uw_qp_init_attr qa = { .qp_context = s,
				      .send_cq = s->cq,
				      .recv_cq = s->cq,
				      .cap = { 2 * s->depth + 8, s->nrecv + 4, 1, 1, 64 } };
	if (!s->mr || !s->ctl_mr || !(s->qp = uw_cm_create_qp(s->id, s->pd, &qa)))
		goto fail;
	for (uint32_t i = 0; i < s->nrecv; i++)
		if (post_recv(s))
			goto fail;
	return s;
fail:
	s->id = NULL; /* the caller rejects it */
	session_free(s);
	return NULL;
}

/* A completion on a session: verify, repost, answer. */
static void session_wc(struct session *s, const struct uw_wc *wc)
{
	if (wc->status != UW_WC_SUCCESS) {
		if (wc->status != UW_WC_WR_FLUSH_ERR && !opts->quiet)
			fprintf(stderr, "server: completion error: %s\n",
				uw_wc_status_str(wc->status));
		return;
	}
	if (wc->opcode != UW_WC_RECV && wc->opcode != UW_WC_RECV_IMM)
		return;
	bool fin =
		(wc->wc_flags & UW_WC_SOLICITED) && wc->opcode == UW_WC_RECV && wc->byte_len == 0;
	uint64_t n = s->recvs;
	if (fin) {
		/* the report: how many messages, how many wrong */
		uint64_t rep[2] = { htobe64(s->recvs), htobe64(s->errors) };
		int rc = post_recv(s);
		if (rc || (rc = send_ctl(s, 1, rep, sizeof(rep), UW_SEND_SOLICITED)))
			/* the client waits for it: say why it will not come,
			 * even when quiet (a thousand-QP run lost some once) */
			fprintf(stderr, "server: no report for a connection: %s\n", strerror(rc));
		return;
	}
	s->recvs++;
	s->bytes += wc->byte_len;
	if (s->ours && s->h.verify) {
		uint8_t op = s->h.op;
		if (op == OP_SEND && (wc->byte_len != s->size ||
				      perf_check(s->rbuf + (wc->wr_id % s->nrecv) * s->size,
						 s->size, n % s->slots) != s->size))
			s->errors++;
		if (op == OP_IMM && wc->imm_data != n)
			s->errors++;
	}
	post_recv(s);
	if (s->ours && s->h.mode == MODE_LAT) {
		/* echo: the same bytes back, or the same Immediate Data */
		uint64_t slot = wc->wr_id % s->nrecv;
		struct uw_sge sge = { (uintptr_t)(s->rbuf + slot * s->size), (uint32_t)s->size,
				      s->mr->lkey };
		struct uw_send_wr wr = { .wr_id = 2,
					 .sg_list = &sge,
					 .num_sge = s->size ? 1 : 0,
					 .opcode = wc->opcode == UW_WC_RECV_IMM ? UW_WR_IMM
										: UW_WR_SEND,
					 .imm_data = wc->imm_data };
		uw_post_send(s->qp, &wr, NULL);
	} else if (s->ours && ++s->since_ack == s->depth) {
		/* credits: the client may send depth more */
		s->since_ack = 0;
		send_ctl(s, 3, NULL, 0, 0);
	}
}

/* Write latency: the client writes a mark into our buffer's last byte; we
 * answer with a Write of our buffer into its. */
/* Write latency: the client's Write landed (its last byte changed), so
 * Write back. True when it did. */
static bool session_poll_memory(struct session *s)
{
	if (!s->ours || s->h.mode != MODE_LAT || s->h.op != OP_WRITE || !s->size)
		return false;
	uint8_t m = __atomic_load_n(&s->buf[s->size - 1], __ATOMIC_ACQUIRE);
	if (m == s->last_mark || m == 0)
		return false;
	s->last_mark = m;
	struct uw_sge sge = { (uintptr_t)s->buf, (uint32_t)s->size, s->mr->lkey };
	struct uw_send_wr wr = { .wr_id = 4,
				 .sg_list = &sge,
				 .num_sge = 1,
				 .opcode = UW_WR_RDMA_WRITE,
				 .rdma = { be64toh(s->h.client_addr), ntohl(s->h.client_rkey) } };
	uw_post_send(s->qp, &wr, NULL);
	return true;
}

static void report(struct session *s)
{
	if (opts->quiet)
		return;
	double dt = util_now_s() - s->t0;
	printf("server: connection done: %llu receives, %llu bytes, %llu errors, %.3f s, cpu %.3f "
	       "s\n",
	       (unsigned long long)s->recvs, (unsigned long long)s->bytes,
	       (unsigned long long)s->errors, dt, cpu_now() - s->cpu0);
	fflush(stdout);
}

int perf_server(const struct perf_opts *o)
{
	struct uw_context_attr ca = { .progress = o->progress };
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE },
			*ai;
	char port[16];
	struct session *sessions = NULL;
	int served = 0;

	opts = o;
	snprintf(port, sizeof(port), "%d", o->port);
	if (getaddrinfo(o->bind, port, &hints, &ai)) {
		fprintf(stderr, "server: cannot resolve %s\n", o->bind ? o->bind : "*");
		return 2;
	}
	ctx = uw_open(&ca);
	struct uw_cm_channel *ch = ctx ? uw_cm_create_channel(ctx) : NULL;
	struct uw_cm_id *lid = ch ? uw_cm_create_id(ch, NULL) : NULL;
	struct uw_comp_channel *cc = lid ? uw_create_comp_channel(ctx) : NULL;
	cq = cc ? uw_create_cq(ctx, 1 << 20, NULL, cc) : NULL;
	if (!cq)
		lid = NULL;
	else
		uw_comp_channel_nonblock(cc, 1);
	/* no address given: the IPv6 wildcard, which takes IPv4 too */
	struct addrinfo *pick = ai;
	for (struct addrinfo *a = ai; a && !o->bind; a = a->ai_next)
		if (a->ai_family == AF_INET6)
			pick = a;
	int rc = lid ? uw_cm_listen(lid, pick->ai_addr, 128) : errno;
	int bound = rc ? 0 : ntohs(((struct sockaddr_in *)&lid->local_addr)->sin_port);
	/* The TCP baseline takes the next port. With -p 0 another program may
	 * hold that one (seen in CI): then both listen again on another pair. */
	for (int again = 0; !rc && o->tcp && perf_tcp_server_start(o, bound + 1); again++) {
		if (o->port || again == 20) {
			fprintf(stderr, "server: TCP baseline listener on port %d: %s\n", bound + 1,
				strerror(errno));
			freeaddrinfo(ai);
			return 1;
		}
		uw_cm_destroy_id(lid);
		lid = uw_cm_create_id(ch, NULL);
		rc = lid ? uw_cm_listen(lid, pick->ai_addr, 128) : errno;
		bound = rc ? 0 : ntohs(((struct sockaddr_in *)&lid->local_addr)->sin_port);
	}
	freeaddrinfo(ai);
	if (rc) {
		fprintf(stderr, "server: listen on port %d: %s\n", o->port, strerror(rc));
		return 1;
	}
	/* with -p 0 the system picked the port: say which (tests read it) */
	printf("server: listening on port %d (TCP baseline on %d), progress %s\n", bound, bound + 1,
	       o->progress == UW_PROGRESS_AUTO ? "auto" : "manual");
	fflush(stdout);
	double last_work = util_now_s();
	struct perf_wait idle = { 0 };
	for (;;) {
		struct uw_cm_event *e;
		bool spin = false, busy = false, work = false;
		for (struct session *s = sessions; s; s = s->next) {
			bool lat = s->active && s->ours && s->h.mode == MODE_LAT;
			spin |= lat;
			/* as its client waits (--wait), except a Write session
			 * with automatic progress, whose placement wakes nothing */
			busy |= lat && (!(ntohl(s->h.flags) & PERF_HELLO_WAIT_ADAPTIVE) ||
					(s->h.op == OP_WRITE && o->progress == UW_PROGRESS_AUTO));
		}
		while (!uw_cm_get_event_timeout(ch, &e, 0)) {
			struct session *s = NULL;
			char why[160]; /* a refused request's reason */
			work = true;
			switch (e->event) {
			case UW_CM_EVENT_CONNECT_REQUEST:
				s = session_new(e, why, sizeof(why));
				if (!s) {
					/* the reason goes to the client, which prints it */
					uw_cm_reject(e->id, why, (uint16_t)strlen(why));
					uw_cm_destroy_id(e->id);
					if (!o->quiet)
						printf("server: refused a connection: %s\n", why);
					break;
				}
				struct perf_welcome w = { htonl(PERF_MAGIC),
							  htonl(s->mr->rkey),
							  htobe64((uintptr_t)s->buf),
							  htobe64(s->len),
							  htonl(s->slots),
							  0 };
				struct uw_conn_param p = { .private_data = &w,
							   .private_data_len = sizeof(w),
							   .ird = 128,
							   .ord = 128,
							   .crc = o->crc,
							   /* markers both ways if the client
							    * wants them (--markers on) */
							   .markers = s->ours &&
								      (ntohl(s->h.flags) &
								       PERF_HELLO_MARKERS) };
				if (uw_cm_accept(s->id, &p)) {
					session_free(s);
					break;
				}
				s->t0 = util_now_s();
				s->cpu0 = cpu_now();
				s->next = sessions;
				sessions = s;
				break;
			case UW_CM_EVENT_ESTABLISHED:
				for (s = sessions; s && s->id != e->id; s = s->next)
					;
				if (s)
					s->active = true;
				break;
			case UW_CM_EVENT_DISCONNECTED:
			case UW_CM_EVENT_CONNECT_ERROR:
				for (struct session **pp = &sessions; *pp; pp = &(*pp)->next) {
					if ((*pp)->id != e->id)
						continue;
					s = *pp;
					*pp = s->next;
					break;
				}
				if (s) {
					/* completions naming s must not outlive
					 * it; its last messages count too */
					struct uw_wc wc[16];
					int n;
					while ((n = uw_poll_cq(cq, 16, wc)) > 0)
						for (int i = 0; i < n; i++)
							if (wc[i].qp)
								session_wc(wc[i].qp->qp_context,
									   &wc[i]);
					report(s);
					uw_cm_ack_event(e);
					e = NULL;
					session_free(s);
					served++;
				}
				break;
			default:
				break;
			}
			if (e)
				uw_cm_ack_event(e);
		}
		if (!o->loop && served > 0 && !sessions)
			break;
		struct uw_wc wc[64];
		int n = uw_poll_cq(cq, 64, wc);
		work |= n > 0;
		/* a session freed after a failed accept leaves its flushed
		 * receives behind, naming no QP */
		for (int i = 0; i < n; i++)
			if (wc[i].qp)
				session_wc(wc[i].qp->qp_context, &wc[i]);
		for (struct session *s = sessions; s; s = s->next)
			work |= session_poll_memory(s);
		if (work) {
			last_work = util_now_s();
			perf_wait_end(&idle);
			continue;
		}
		/* Nothing to do: sleep until the network, a completion or a
		 * connection event needs us. Latency sessions poll instead,
		 * within PERF_SPIN_WINDOW_S of their last message (an idle
		 * latency client must not cost the server a core), and with
		 * --wait adaptive only while no other task needs the CPU
		 * (perf_wait.c). Bandwidth ones leave the CPU to the TCP
		 * stack. */
		idle.busy = busy;
		if (spin && util_now_s() - last_work < PERF_SPIN_WINDOW_S && perf_wait_spin(&idle))
			continue;
		uw_req_notify_cq(cq, 0);
		if (uw_poll_cq(cq, 0, NULL) < 0)
			break;
		struct pollfd pf[2] = { { ch->fd, POLLIN, 0 }, { cc->fd, POLLIN, 0 } };
		poll(pf, 2, 100);
		struct uw_cq *fired;
		while (!uw_get_cq_event(cc, &fired, NULL))
			uw_ack_cq_events(fired, 1);
	}
	uw_destroy_cq(cq);
	uw_destroy_comp_channel(cc);
	uw_cm_destroy_id(lid);
	uw_cm_destroy_channel(ch);
	uw_close(ctx);
	return 0;
}
