/*
 * sim.h: two endpoints of the dynamic stream protocol (exs/stream_proto.h)
 * joined by two in-order channels, driven one step at a time. The
 * simulation keeps its own account of every receive and checks the
 * protocol against it: each direct transfer must land in the oldest
 * receive still open, at the byte where that receive's data continues (the
 * paper's safety property), and every receive must complete with exactly
 * the next bytes of the sender's stream. In EXS_SP_PAPER it also checks
 * the paper's lemmas as they go: every advert's phase is even (Lemma 1);
 * adverts between two indirect arrivals share one phase (Lemma 2); a
 * sender in an even phase last sent directly (Lemma 3); a direct transfer
 * goes in an even phase, in the phase of the one before it or, after an
 * indirect one, in a higher phase (a fresh advert); and never into a
 * receive that has taken data from the ring.
 */
#ifndef UWARP_TESTS_EXS_SIM_H
#define UWARP_TESTS_EXS_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "exs/stream_proto.h"

enum sim_msg_type { SIM_DATA, SIM_PHASE, SIM_ADVERT, SIM_ACK, SIM_HOLD, SIM_IDLE };

struct sim_msg {
	enum sim_msg_type type;
	struct exs_sp_xfer x;   /* DATA */
	uint8_t *bytes;         /* DATA: what the Write carries */
	uint32_t phase;         /* PHASE */
	struct exs_sp_advert a; /* ADVERT */
	uint64_t drained;       /* ACK */
	uint64_t seq;           /* HOLD, IDLE */
	struct sim_msg *next;
};

struct sim_chan {
	struct sim_msg *head, *tail;
	unsigned len;
};

struct sim_recv {
	uint32_t id, len, placed;
	uint32_t from_ring; /* bytes copied into it out of the ring */
	uint8_t *buf;
	struct sim_recv *next;
};

struct sim {
	struct exs_sp_tx tx;
	struct exs_sp_rx rx;
	struct sim_chan s2r, r2s;
	uint8_t *ring;
	uint64_t posted;    /* stream bytes the sending application has handed over */
	uint64_t delivered; /* stream bytes completed receives hold */
	struct sim_recv *recvs, **recvs_tail; /* open receives, oldest first */
	unsigned nrecvs;
	uint64_t completions, partial_completions;
	uint64_t back_to_direct; /* direct transfers right after an indirect one */
	/* the paper's lemmas (EXS_SP_PAPER) */
	bool paper;
	enum exs_sp_kind last_kind; /* the sender's last transfer, 0 before one */
	uint32_t last_phase;
	bool adv_phase_set; /* an advert since the last indirect arrival */
	uint32_t adv_phase;
	char failure[256]; /* set when a check failed */
};

/* the sender's stream: byte i */
static inline uint8_t sim_byte(uint64_t i)
{
	uint64_t v = (i + 1) * 0x9E3779B97F4A7C15ull;
	return (uint8_t)(v >> 56);
}

void sim_init(struct sim *s, enum exs_sp_mode mode, uint64_t ring_size);
void sim_free(struct sim *s);
/* the application hands over len more stream bytes */
void sim_send(struct sim *s, uint64_t len);
/* the application posts a receive; false when the receiver has too many */
bool sim_recv(struct sim *s, uint32_t len, bool waitall);
/* One step of each kind; each returns whether it did anything (and sets
 * s->failure when a check failed). */
bool sim_sender_step(struct sim *s);
bool sim_deliver_to_receiver(struct sim *s);
bool sim_receiver_step(struct sim *s);
bool sim_deliver_to_sender(struct sim *s);
/* Stream bytes placed in receives that are still open (a receive with
 * MSG_WAITALL waits for more than the stream may ever hold); checks them. */
uint64_t sim_open_bytes(struct sim *s);

#endif
