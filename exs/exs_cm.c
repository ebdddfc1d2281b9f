/*
 * exs_cm.c: the connection manager's events for ES-API sockets: a request
 * (a socket on the listener's backlog), established, rejected, failed or
 * disconnected.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

static struct exs_sock *accepted_socket(struct exs_sock *l, struct uw_cm_event *e,
					const struct exs_hello *h)
{
	struct exs_sock *s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	exs__sock_init(s);
	s->fd = exs__eventfd();
	if (s->fd < 0) {
		free(s);
		return NULL;
	}
	s->type = l->type;
	s->domain = l->domain;
	s->mode = h->mode;
	s->ring_size = l->ring_size;
	s->crc = l->crc;
	s->no_imm = l->no_imm;
	s->flow = l->flow;
	s->rules = l->rules;
	s->credit_size = l->credit_size;
	s->idle_ms = l->idle_ms;
	s->keepalive_s = l->keepalive_s;
	s->st = S_PENDING;
	s->listener = l;
	memcpy(&s->local, &e->id->local_addr, sizeof(s->local));
	memcpy(&s->peer, &e->id->peer_addr, sizeof(s->peer));
	util_list_add_head(&exs_rt.socks, &s->link);
	if (s->type == SOCK_STREAM)
		exs__stream_init(s, s->mode);
	exs__take_hello(s, h);
	return s;
}

static void on_request(struct uw_cm_event *e)
{
	struct exs_sock *l = e->listen_id ? e->listen_id->context_ptr : NULL;
	if (l && l->dead)
		l = NULL; /* closed: its id lives on only for this request */
	struct exs_hello h;
	int want = l && l->type == SOCK_STREAM ? EXS_WIRE_STREAM : EXS_WIRE_SEQPACKET;
	/* an accepted system socket in DDP mode (exs_ddp.c): its socket waits */
	bool alias = l && l == exs_rt.ddp_handoff;
	if (!l || l->st != S_LISTENING ||
	    exs_hello_decode(e->private_data, e->private_data_len, &h) || h.type != want ||
	    (!alias && l->nready + l->nhalf >= l->backlog)) {
		uw_cm_reject(e->id, "EXS", 3);
		uw_cm_destroy_id(e->id);
		return;
	}
	struct exs_sock *s = alias ? exs__ddp_request(e) : accepted_socket(l, e, &h);
	if (!s) {
		uw_cm_reject(e->id, NULL, 0);
		uw_cm_destroy_id(e->id);
		return;
	}
	if (alias) {
		s->mode = h.mode;
		s->st = S_PENDING;
		exs__stream_init(s, s->mode);
		exs__take_hello(s, &h);
	}
	uint8_t hello[EXS_HELLO_LEN];
	int rc = exs__qp_setup(s, e->id);
	if (!rc) {
		exs__hello_of(s, hello);
		struct uw_conn_param p = exs__conn_param(s, hello);
		rc = uw_cm_accept(e->id, &p);
	}
	if (rc) {
		/* refused at once, not left to the peer's MPA timeout */
		uw_cm_reject(e->id, "EXS", 3);
		if (alias)
			exs__plain_sorted(s->alias - 1, NULL, -rc > 0 ? -rc : rc);
		exs__sock_free(s);
		return;
	}
	if (!alias)
		l->nhalf++;
}

socklen_t exs__addr_len(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

void exs__complete_accept(struct exs_op *op, const struct exs_sock *s)
{
	exs_event_t ev = { .exs_evt_type = EXS_EVT_ACCEPT };
	ev.exs_evt_union.accept.fd = s->fd;
	ev.exs_evt_union.accept.addr = s->peer;
	ev.exs_evt_union.accept.addrlen = exs__addr_len(&s->peer);
	exs__op_complete_ev(op, &ev);
}

static void on_established(struct exs_sock *s, struct uw_cm_event *e)
{
	s->imm = e->rfc7306 && !s->no_imm;
	if (s->st == S_CONNECTING) {
		struct exs_hello h;
		int want = s->type == SOCK_STREAM ? EXS_WIRE_STREAM : EXS_WIRE_SEQPACKET;
		if (exs_hello_decode(e->private_data, e->private_data_len, &h) || h.type != want) {
			s->st = S_CONNECTED;
			exs__abort(s, EPROTO);
			return;
		}
		exs__take_hello(s, &h);
		s->st = S_CONNECTED;
		memcpy(&s->local, &s->id->local_addr, sizeof(s->local));
		memcpy(&s->peer, &s->id->peer_addr, sizeof(s->peer));
		if (s->connect_op) {
			exs__op_complete(s->connect_op, 0, 0);
			s->connect_op = NULL;
		}
		exs__progress(s);
		return;
	}
	if (s->st != S_PENDING)
		return;
	if (s->alias) {
		/* an accepted system socket: the operations it held move here */
		s->st = S_CONNECTED;
		exs__plain_sorted(s->alias - 1, s, 0);
		exs__progress(s);
		exs__changed();
		return;
	}
	struct exs_sock *l = s->listener;
	l->nhalf--;
	s->st = S_CONNECTED;
	s->listener = NULL;
	struct exs_op *op = exs__op_pop(&l->accepts);
	if (op) {
		exs__complete_accept(op, s);
	} else {
		/* waits for exs_accept, in arrival order */
		util_list_add_tail(&l->ready, &s->ready_link);
		s->listener = l;
		l->nready++;
	}
	exs__progress(s);
	exs__changed();
}

static void on_failed(struct exs_sock *s, struct uw_cm_event *e)
{
	int err = e->event == UW_CM_EVENT_REJECTED ? ECONNREFUSED
		  : e->status                      ? e->status
						   : ECONNRESET;
	if (s->st == S_PENDING) {
		if (s->listener)
			s->listener->nhalf--;
		if (s->alias)
			exs__plain_sorted(s->alias - 1, NULL, err);
		s->st = S_CLOSED;
		exs__sock_free(s);
		return;
	}
	if (s->st == S_CONNECTING) {
		/* a peer that hung up on our MPA Request (EPIPE writing it):
		 * reset, as connect(2) says of a peer that did */
		if (err == EPIPE)
			err = ECONNRESET;
		s->st = S_CLOSED;
		s->error = err;
		if (s->connect_op) {
			exs__op_complete(s->connect_op, err, 0);
			s->connect_op = NULL;
		}
		exs__maybe_finish_close(s);
		return;
	}
	if (s->closing && !util_list_empty(&s->sends))
		s->close_err = err;
	exs__connection_gone(s, err);
	exs__maybe_finish_close(s);
}

void exs__on_cm(struct uw_cm_event *e)
{
	if (e->event == UW_CM_EVENT_CONNECT_REQUEST) {
		on_request(e);
		uw_cm_ack_event(e);
		return;
	}
	/* a copy: acknowledging frees the event, and the handlers may free
	 * the socket (and destroy the id) */
	struct uw_cm_event ev = *e;
	uint8_t pd[512];
	if (ev.private_data_len > sizeof(pd))
		ev.private_data_len = sizeof(pd);
	if (ev.private_data_len)
		memcpy(pd, e->private_data, ev.private_data_len);
	ev.private_data = pd;
	uw_cm_ack_event(e);
	/* The completions that came before the event count first: a send
	 * that finished is not failed by the disconnection behind it. They
	 * may free sockets, so the event's is looked up afterwards. */
	if (ev.event != UW_CM_EVENT_ESTABLISHED) {
		exs__drain_cq();
		exs__progress_pending();
	}
	struct exs_sock *s = NULL, *o;
	util_list_for_each(o, &exs_rt.socks, link)
		if (o->id && o->id == ev.id) {
			s = o;
			break;
		}
	if (!s)
		return;
	if (exs__tracing() && ev.event != UW_CM_EVENT_ESTABLISHED)
		fprintf(stderr, "exs %d: %s (%s)%s layer %u type %u code %u%s\n", s->fd,
			uw_cm_event_str(ev.event), strerror(ev.status),
			ev.terminated ? " by a Terminate" : "", ev.term_layer, ev.term_etype,
			ev.term_ecode, ev.term_remote ? " from the peer" : "");
	switch (ev.event) {
	case UW_CM_EVENT_ESTABLISHED:
		on_established(s, &ev);
		break;
	case UW_CM_EVENT_REJECTED:
	case UW_CM_EVENT_CONNECT_ERROR:
	case UW_CM_EVENT_DISCONNECTED:
		on_failed(s, &ev);
		break;
	default:
		break;
	}
}
