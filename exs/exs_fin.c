/*
 * exs_fin.c: the ES-API's half-close state machine (exs_fin.h).
 */
#include <errno.h>

#include "exs_fin.h"

void exs_fin_init(struct exs_fin *f)
{
	*f = (struct exs_fin){ .wr = EXS_WR_OPEN, .rd = EXS_RD_OPEN };
}

int exs_fin_shut_wr(struct exs_fin *f)
{
	switch (f->wr) {
	case EXS_WR_OPEN:
		f->wr = EXS_WR_SHUT;
		return 0;
	case EXS_WR_SHUT:
	case EXS_WR_FIN_SENT:
	case EXS_WR_DONE:
		break;
	}
	return -EALREADY;
}

int exs_fin_shut_rd(struct exs_fin *f)
{
	if (f->rd_shut)
		return -EALREADY;
	f->rd_shut = true;
	return 0;
}

enum exs_fin_send exs_fin_next(const struct exs_fin *f, bool all_sent)
{
	if (f->rd == EXS_RD_FIN_ACK_DUE)
		return EXS_FIN_SEND_FIN_ACK;
	switch (f->wr) {
	case EXS_WR_SHUT:
		return all_sent ? EXS_FIN_SEND_FIN : EXS_FIN_SEND_NONE;
	case EXS_WR_OPEN:
	case EXS_WR_FIN_SENT:
	case EXS_WR_DONE:
		break;
	}
	return EXS_FIN_SEND_NONE;
}

void exs_fin_sent(struct exs_fin *f, enum exs_fin_send what)
{
	switch (what) {
	case EXS_FIN_SEND_FIN_ACK:
		if (f->rd == EXS_RD_FIN_ACK_DUE)
			f->rd = EXS_RD_DONE;
		break;
	case EXS_FIN_SEND_FIN:
		if (f->wr == EXS_WR_SHUT)
			f->wr = EXS_WR_FIN_SENT;
		break;
	case EXS_FIN_SEND_NONE:
		break;
	}
}

int exs_fin_on_fin(struct exs_fin *f, uint64_t seq, uint64_t arrived)
{
	/* the FIN follows the last transfer on the same stream: by now every
	 * byte it counts has arrived */
	if (f->rd != EXS_RD_OPEN || seq != arrived)
		return -EPROTO;
	f->rd = EXS_RD_FIN_ACK_DUE;
	f->peer_len = seq;
	return 0;
}

int exs_fin_on_fin_ack(struct exs_fin *f, uint64_t seq, uint64_t sent)
{
	if (f->wr != EXS_WR_FIN_SENT || seq != sent)
		return -EPROTO;
	f->wr = EXS_WR_DONE;
	return 0;
}
