/*
 * exs_teardown.c: how an ES-API connection ends so that every operation
 * completes once: failing or cancelling what is outstanding, receives
 * after the end of the stream, an abort, and the end of a lingering close.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "exs_internal.h"

static void complete_list(struct util_list *l, int err)
{
	struct exs_op *op;
	while ((op = exs__op_pop(l)))
		exs__op_complete(op, err, -1);
}

void exs__fail_ops(struct exs_sock *s, int err)
{
	for (unsigned i = 0; i < s->fl_count; i++)
		s->fl[(s->fl_head + i) % EXS_SQ_DEPTH].op = NULL;
	struct exs_op *op;
	while ((op = exs__op_pop(&s->sends)))
		exs__send_finished(s, op, err, -1);
	s->nsends = 0;
	complete_list(&s->accepts, err);
	if (s->connect_op) {
		exs__op_complete(s->connect_op, err, 0);
		s->connect_op = NULL;
	}
	if (s->shut_op) {
		exs__op_complete(s->shut_op, err, 0);
		s->shut_op = NULL;
	}
}

/* Every outstanding receive completes: with @err, or, when @keep is set,
 * with the bytes it already holds (0 at the end of the stream) if it holds
 * any or the stream has ended. */
void exs__end_recvs(struct exs_sock *s, int err, bool keep)
{
	struct exs_op *op;
	bool eof = exs_fin_rd_ended(&s->fin);
	while ((op = exs__op_pop(&s->recvs))) {
		if (keep && (op->done || eof))
			exs__op_complete(op, 0, (ssize_t)op->done);
		else
			exs__op_complete(op, err, -1);
	}
	s->adv_next = NULL;
	s->nrecvs = 0;
	if (s->type == SOCK_STREAM)
		exs_sp_rx_abandon(&s->rx);
}

/* SHUT_RD or close: receives complete with ECANCELED, except those the
 * peer may still be writing into. A stream's receives stay, all of them,
 * while any has a live advert (the protocol's queue is in order); a
 * message socket's advertised receives stay. Those complete with what
 * they get, or when the connection ends: their memory must not be handed
 * back to the application while the peer holds a key to it. */
void exs__cancel_recvs(struct exs_sock *s)
{
	if (s->st != S_CONNECTED) {
		exs__end_recvs(s, ECANCELED, true);
		return;
	}
	if (s->type == SOCK_STREAM) {
		if (!exs_sp_rx_live_adverts(&s->rx))
			exs__end_recvs(s, ECANCELED, false);
		return;
	}
	/* the advertised ones are a prefix of the list: the rest go */
	for (struct exs_op *op = s->adv_next, *next; op; op = next) {
		next = exs__op_after(&s->recvs, op);
		util_list_del(&op->link);
		s->nrecvs--;
		exs__op_complete(op, ECANCELED, -1);
	}
	s->adv_next = NULL;
}

/* Receives after the connection is gone: what arrived still counts; the
 * end of the stream (a FIN with every byte here) reads as 0 bytes. */
void exs__finish_recvs(struct exs_sock *s, int err) { exs__end_recvs(s, err, true); }

void exs__recvs_after_close(struct exs_sock *s)
{
	if (s->type == SOCK_STREAM)
		exs__stream_pump(s);
	exs__finish_recvs(s, s->error ? s->error : ECONNRESET);
}

void exs__connection_gone(struct exs_sock *s, int err)
{
	if (s->st == S_CLOSED)
		return;
	s->st = S_CLOSED;
	if (err && !s->error && !exs_fin_peer_ended(&s->fin))
		s->error = err;
	if (s->type == SOCK_STREAM)
		exs__stream_pump(s); /* the ring's data to the receives first */
	exs__fail_ops(s, err ? err : ECONNRESET);
	exs__finish_recvs(s, err ? err : ECONNRESET);
	exs__changed();
}

void exs__abort(struct exs_sock *s, int err)
{
	if (s->closing && s->st == S_CONNECTED && !util_list_empty(&s->sends))
		s->close_err = err; /* sends posted before the close were lost */
	if (s->id && s->st == S_CONNECTED)
		uw_cm_disconnect(s->id);
	if (s->st == S_CONNECTING || s->st == S_CONNECTED)
		exs__connection_gone(s, err);
	else
		s->st = S_CLOSED;
	if (!s->error)
		s->error = err; /* the first cause stays */
	exs__maybe_finish_close(s);
}

void exs__maybe_finish_close(struct exs_sock *s)
{
	if (!s->closing)
		return;
	if (s->st == S_CONNECTED) {
		/* still lingering: sends to finish, the peer's confirmation to
		 * come, a FIN_ACK we owe it, or WRs not yet written (the
		 * disconnection closes the TCP socket at once) */
		if (!util_list_empty(&s->sends) || !exs_fin_settled(&s->fin) || s->sq_out)
			return;
		uw_cm_disconnect(s->id);
		s->st = S_CLOSED;
	}
	/* receives kept while the peer could write into them end now */
	exs__end_recvs(s, ECANCELED, true);
	if (s->close_op) {
		exs__op_complete(s->close_op, s->close_err, 0);
		s->close_op = NULL;
	}
	exs__sock_free(s);
}
