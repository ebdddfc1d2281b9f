/*
 * exs_fin.h: how an ES-API connection's two directions end, as a pure
 * state machine (no sockets, clocks or allocation): the caller feeds it
 * the application's shutdowns and the peer's FIN and FIN_ACK messages,
 * asks it which of those two messages to send next, and reads from it
 * whether reading has ended and whether a close may finish.
 *
 * Each side counts what it sent (bytes on a stream, messages on a message
 * socket). FIN carries our count once every send was handed to a
 * transfer, so it follows the last transfer on the same ordered stream;
 * FIN_ACK repeats the peer's count once every byte it counts has arrived.
 * exs_shutdown(SHUT_WR) completes with the FIN_ACK: the peer then has
 * every byte. A FIN whose count is not what arrived, a second FIN, or a
 * FIN_ACK for a FIN we did not send or with another count breaks the
 * protocol (the caller aborts the connection). docs/exs.md, "Wire".
 */
#ifndef UWARP_EXS_FIN_H
#define UWARP_EXS_FIN_H

#include <stdbool.h>
#include <stdint.h>

/* our direction */
enum exs_wr_end {
	EXS_WR_OPEN,     /* sends go */
	EXS_WR_SHUT,     /* shut down (exs_shutdown or a close): the FIN goes once
			  * every send is handed to a transfer */
	EXS_WR_FIN_SENT, /* the FIN left: the peer's FIN_ACK is awaited */
	EXS_WR_DONE,     /* acknowledged: the peer has every byte we sent */
};

/* the peer's direction */
enum exs_rd_end {
	EXS_RD_OPEN,        /* its data may still come */
	EXS_RD_FIN_ACK_DUE, /* its FIN came; our FIN_ACK is still to go */
	EXS_RD_DONE,        /* its FIN came and was acknowledged */
};

/* what to send next */
enum exs_fin_send {
	EXS_FIN_SEND_NONE,
	EXS_FIN_SEND_FIN_ACK, /* first: it never waits for our own sends */
	EXS_FIN_SEND_FIN,
};

struct exs_fin {
	enum exs_wr_end wr;
	enum exs_rd_end rd;
	bool rd_shut;      /* the application shut reading down */
	uint64_t peer_len; /* the peer's count, from its FIN */
};

void exs_fin_init(struct exs_fin *f);

/* The application shuts writing down (exs_shutdown SHUT_WR or SHUT_RDWR):
 * 0, or -EALREADY when it already was (a close then changes nothing). */
int exs_fin_shut_wr(struct exs_fin *f);
/* The application shuts reading down: 0, or -EALREADY. */
int exs_fin_shut_rd(struct exs_fin *f);

/* The message to send now (@all_sent: every send was handed to a
 * transfer); after it was posted, exs_fin_sent. */
enum exs_fin_send exs_fin_next(const struct exs_fin *f, bool all_sent);
void exs_fin_sent(struct exs_fin *f, enum exs_fin_send what);

/* The peer's FIN with its count @seq, when @arrived were taken: 0, or
 * -EPROTO. */
int exs_fin_on_fin(struct exs_fin *f, uint64_t seq, uint64_t arrived);
/* The peer's FIN_ACK of our count @seq, when we sent @sent in all: 0 (the
 * shutdown is complete), or -EPROTO. */
int exs_fin_on_fin_ack(struct exs_fin *f, uint64_t seq, uint64_t sent);

/* The peer's FIN came: nothing more arrives (more is a breach). */
static inline bool exs_fin_peer_ended(const struct exs_fin *f) { return f->rd != EXS_RD_OPEN; }

/* Reading has ended: by the peer's FIN or the application's shutdown. */
static inline bool exs_fin_rd_ended(const struct exs_fin *f)
{
	return f->rd != EXS_RD_OPEN || f->rd_shut;
}

/* Writing was shut down (sends are refused). */
static inline bool exs_fin_wr_shut(const struct exs_fin *f) { return f->wr != EXS_WR_OPEN; }

/* Our FIN was acknowledged. */
static inline bool exs_fin_wr_done(const struct exs_fin *f) { return f->wr == EXS_WR_DONE; }

/* A lingering close may end (as far as this machine goes): our FIN was
 * acknowledged and we owe the peer no FIN_ACK. */
static inline bool exs_fin_settled(const struct exs_fin *f)
{
	return f->wr == EXS_WR_DONE && f->rd != EXS_RD_FIN_ACK_DUE;
}

#endif
