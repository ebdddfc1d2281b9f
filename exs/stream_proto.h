/*
 * stream_proto.h: the dynamic stream protocol of MacArthur and Russell
 * ("An Efficient Method for Stream Semantics over RDMA", IPDPS 2014) as two
 * pure state machines, a sender and a receiver: no sockets, no memory
 * copies, no allocation. The EXS socket layer feeds them what arrives and
 * carries out what they decide; the simulation in tests/exs (sim.c, run by
 * test_exs_stream.c) drives two of them against each other.
 *
 * Two rule sets share this interface: uwarp's own variant, described here
 * (EXS_SP_DYNAMIC and the forced modes), and the paper's rules exactly
 * (EXS_SP_PAPER, stream_paper.h; docs/exs.md compares them).
 *
 * The receiver advertises its posted receives (ADVERT: phase, estimated
 * stream sequence number, where in the receive the space begins, its
 * length, MSG_WAITALL). The sender writes into the advert at the head of
 * its queue only when the advert's phase is at least its own and its
 * sequence number is exactly the sender's stream position (a DIRECT
 * transfer, zero copy); otherwise it discards the advert, moving its phase
 * past the advert's, and when no advert is usable it writes into the
 * receiver's hidden ring (an INDIRECT transfer, copied out by the
 * receiver). Sequence numbers count stream bytes.
 *
 * Phases. The sender increments its phase when it switches from direct to
 * indirect transfers and adopts an advert's phase when it uses one; every
 * transfer carries the sender's phase. The receiver's phase is at least
 * the highest it has heard; it moves one further when an advert it has
 * out becomes wrong (a receive without MSG_WAITALL completed short, so the
 * estimates of the adverts after it count bytes that never came). It
 * sends no advert while its ring holds data or adverts of an earlier phase
 * are outstanding; an advert is dead once the sender's phase has passed
 * it, or once stream bytes beyond its position have arrived (the sender
 * went round it and can never match it again). A sender that discarded
 * adverts and then cannot send says its phase in a PHASE message. After
 * adverts died the receiver advertises one receive at a time until the
 * sender uses one (EXS_SP_RULE_PROBE): a sender that is ahead would only go
 * round the rest; measured, that did not pay, and the ES-API leaves it out
 * by default (docs/exs.md).
 *
 * Chained adverts (ours, not the paper's). An advert's sequence number
 * assumes that every advertised receive before it fills completely; a
 * receive without MSG_WAITALL completes with whatever one transfer brings,
 * so behind one the estimate is a guess that fails whenever a send is
 * shorter than the receive (with exponentially distributed sizes, almost
 * always). Such adverts are sent CHAINED instead: "my space begins where
 * the transfer that consumes the previous receive's advert ends". The
 * sender may use one only if its last transfer was exactly that (direct,
 * into the advert of receive id - 1, consuming it); the receiver fixes its
 * sequence number when that transfer lands. Anything else (an indirect
 * transfer in between, a discard) makes it stale as before.
 *
 * Holding (ours, EXS_SP_RULE_HOLD). A send completes once the transport
 * has its bytes, so a sender with data always runs ahead of the receiver
 * by what the sockets hold: it uses up every advert before the receiver
 * has seen the data of the first, finds none and goes to the ring, and
 * the adverts then on their way arrive stale. Switching to the ring only
 * queues bytes behind that data. So after a direct transfer a sender
 * without a usable advert waits, and says so once (HOLD, its stream
 * position); the receiver, which reposts and advertises as its receives
 * complete, either advertises again or, when every byte has arrived and
 * it has no receive posted, answers IDLE: then the ring is the only way
 * on, and the sender takes it. Liveness: an IDLE is due as soon as the
 * receiver has neither data in flight to it nor a receive to advertise.
 * Only a send of at least hold_min bytes, or any in a stream whose
 * transfers are that long on average, holds (EXS_SP_HOLD_MIN).
 *
 * Safety (the paper's theorem, checked by exs_sp_rx_direct): a direct
 * transfer always lands in the receive at the head of the receiver's
 * queue, at the offset where its next byte belongs.
 */
#ifndef UWARP_EXS_STREAM_PROTO_H
#define UWARP_EXS_STREAM_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#define EXS_SP_MAX_RECVS 64 /* receives a receiver has posted */
/* Adverts a sender holds: a receive has at most one live advert, and the
 * dead ones of a phase go as the first of the next arrives. */
#define EXS_SP_MAX_ADVERTS (2 * EXS_SP_MAX_RECVS)
/* Credit-based flow control (the SDP paper's first scheme): the ring is
 * cut into at most this many fixed slots, one credit each. */
#define EXS_SP_MAX_SLOTS 256

enum exs_sp_mode {
	EXS_SP_DYNAMIC,       /* uwarp's variant of the paper's protocol (above) */
	EXS_SP_DIRECT_ONLY,   /* the sender waits for adverts, never uses the ring */
	EXS_SP_INDIRECT_ONLY, /* the receiver never advertises */
	EXS_SP_PAPER,         /* the paper's algorithm exactly (stream_paper.c) */
};

/* uwarp's departures from the paper that can be turned off one at a time
 * (exs_sp_rx_rules, exs_sp_tx_rules; the ES-API's EXS_SO_RULES), to
 * measure what each buys (docs/exs.md): three on the receiving side, one
 * on the sending side. They change when adverts, ACKs and transfers go,
 * never what a direct transfer may do (exs_sp_rx_direct's check holds
 * with any set). Dynamic mode only; all on here by default (the ES-API's
 * socket default leaves the probe out: docs/exs.md). */
#define EXS_SP_RULE_CHAIN 1u     /* chained adverts behind a receive that may end short */
#define EXS_SP_RULE_PROBE 2u     /* one advert at a time after adverts died */
#define EXS_SP_RULE_ACK_EMPTY 4u /* the ring's room goes back only when it is empty */
#define EXS_SP_RULE_HOLD 8u      /* after a direct transfer, no ring until the receiver is idle */
#define EXS_SP_RULES_ALL 15u
/* The hold is for streams of large sends: a send shorter than this in a
 * stream whose transfers are shorter than this on average goes through
 * the ring, where copies and coalescing beat an advert's round trip per
 * receive (4 KiB sends at 2 sends and 4 receives: 2.2 Gbit/s through the
 * ring, 0.65 held for adverts); a short one among long ones holds with
 * them (docs/exs.md). */
#define EXS_SP_HOLD_MIN (64u << 10)

struct exs_sp_advert {
	uint32_t id; /* the receive's id */
	uint32_t phase;
	uint64_t seq; /* estimated stream offset of the advertised space */
	uint32_t off; /* where in the receive's buffer that space begins */
	uint32_t len;
	bool waitall;  /* consumed only when full */
	bool chain;    /* seq is unknown: it follows the advert of receive id - 1 */
	uint32_t used; /* the sender's: bytes it has written into it */
};

enum exs_sp_kind { EXS_SP_DIRECT = 1, EXS_SP_INDIRECT };

/* A transfer the sender decided on: data of len bytes from its stream
 * position, then its notification (kind, phase, len, and for direct the
 * receive id and offset, for indirect the ring offset). */
struct exs_sp_xfer {
	enum exs_sp_kind kind;
	uint32_t phase;
	uint32_t len;
	uint32_t id, off;  /* direct */
	uint64_t ring_off; /* indirect */
	uint64_t seq;      /* stream offset of its first byte */
};

struct exs_sp_counters {
	uint64_t direct, indirect; /* transfers */
	uint64_t switches;         /* changes between direct and indirect */
	uint64_t copied;           /* bytes copied out of the ring */
	uint64_t discarded;        /* adverts the sender could not use */
	uint64_t ring_used;        /* ring bytes the copied data took (whole slots) */
	uint64_t holds;            /* times the sender held (EXS_SP_RULE_HOLD) */
};

struct exs_sp_tx {
	enum exs_sp_mode mode;
	uint32_t phase;
	uint64_t seq;
	enum exs_sp_kind last; /* 0 before the first transfer */
	bool consumed_last;    /* the last transfer was direct and used up... */
	uint32_t consumed_id;  /* ...the advert of this receive */
	struct exs_sp_advert adv[EXS_SP_MAX_ADVERTS];
	unsigned head, count;
	uint64_t ring_size, ring_written, ring_acked;
	uint32_t slot;   /* credit-based: each indirect transfer takes one slot */
	bool tell_phase; /* discards the receiver has not heard of */
	unsigned rules;  /* EXS_SP_RULE_HOLD is the sender's */
	bool held;       /* holding at seq, the receiver told (a HOLD) or to be */
	bool tell_hold;
	bool idle;         /* the receiver said it is idle at seq (an IDLE) */
	uint32_t hold_min; /* holds only for a send, or a stream, this long */
	uint32_t mean_len; /* the transfers' length, a moving mean */
	struct exs_sp_counters c;
};

void exs_sp_tx_init(struct exs_sp_tx *t, enum exs_sp_mode mode, uint64_t ring_size);
/* The ring as credit slots of at most @slot bytes (0: a packed ring, the
 * default): *eff is the slot both ends use, the return value the part of
 * the ring in use. Sender and receiver compute it from the same two
 * numbers (the receiver's ring size, the sender's slot). */
uint64_t exs_sp_slots(uint64_t ring_size, uint32_t slot, uint32_t *eff);
/* Either side: switch to credit slots (before any data). */
void exs_sp_tx_slots(struct exs_sp_tx *t, uint32_t slot);
/* An ADVERT arrived: -ENOBUFS when the sender holds too many, -EPROTO
 * when it cannot be a real one (empty). */
int exs_sp_tx_advert(struct exs_sp_tx *t, const struct exs_sp_advert *a);
/* Which of uwarp's own rules the sender follows (EXS_SP_RULE_HOLD; at
 * any time; dynamic mode only). */
void exs_sp_tx_rules(struct exs_sp_tx *t, unsigned rules);
/* An IDLE: every byte up to seq has arrived and the receiver has no
 * receive posted. -EPROTO when seq is beyond what was sent. */
int exs_sp_tx_idle(struct exs_sp_tx *t, uint64_t seq);
/* An ACK: the receiver has drained this many ring bytes in all. -EPROTO
 * when it goes back or past what was written. */
int exs_sp_tx_ack(struct exs_sp_tx *t, uint64_t drained);
/* What to do with avail more bytes of the stream: 1 and *x (the sender has
 * moved on by x->len), or 0 when it must wait for an advert or ring space. */
int exs_sp_tx_next(struct exs_sp_tx *t, uint64_t avail, struct exs_sp_xfer *x);
/* When exs_sp_tx_next has nothing to send after discarding adverts: the
 * phase the receiver must be told (a PHASE message), so that it can stop
 * waiting for them and advertise again; true once per need. (Transfers
 * carry the phase themselves; a blocked sender has none to send.) */
bool exs_sp_tx_phase_due(struct exs_sp_tx *t, uint32_t *phase);
/* When exs_sp_tx_next holds (EXS_SP_RULE_HOLD): the stream position to
 * tell the receiver in a HOLD message, so that it answers with an IDLE
 * if it has no receive to advertise; true once per hold. */
bool exs_sp_tx_hold_due(struct exs_sp_tx *t, uint64_t *seq);

enum exs_sp_adv_state { EXS_SP_ADV_NONE, EXS_SP_ADV_LIVE, EXS_SP_ADV_DEAD };

struct exs_sp_recv {
	uint32_t id;
	uint32_t len, filled;
	bool waitall;
	enum exs_sp_adv_state adv;
	uint32_t adv_phase, adv_off, adv_len;
	uint64_t adv_seq;
	bool adv_chain; /* a chained advert: adv_seq is known once the previous
			 * receive's advert has been consumed */
};

struct exs_sp_rx {
	enum exs_sp_mode mode;
	uint32_t phase;
	uint64_t arrived; /* stream bytes that have arrived, direct or ring */
	struct exs_sp_recv q[EXS_SP_MAX_RECVS];
	unsigned head, count;
	bool probing;   /* since adverts died: one at a time until one is used */
	unsigned rules; /* EXS_SP_RULE_*: which of uwarp's rules apply */
	/* ring_in and ring_out count ring bytes, whole slots with credits */
	uint64_t ring_size, ring_in, ring_out, ring_acked;
	uint32_t slot;                       /* credit-based: the slot size */
	uint32_t slot_len[EXS_SP_MAX_SLOTS]; /* data in each full slot, in order */
	unsigned slot_head, slot_count;
	uint32_t slot_off;  /* bytes of the head slot copied out */
	uint64_t slot_data; /* data bytes in the slots, not yet copied */
	uint32_t next_id;
	uint64_t est;    /* EXS_SP_PAPER: S'_r, the next advert's sequence number */
	bool hold_heard; /* a HOLD at hold_at: answer IDLE if idle there */
	uint64_t hold_at;
	struct exs_sp_counters c;
};

void exs_sp_rx_init(struct exs_sp_rx *r, enum exs_sp_mode mode, uint64_t ring_size);
void exs_sp_rx_slots(struct exs_sp_rx *r, uint32_t slot);
/* Which of uwarp's own rules apply (EXS_SP_RULE_*; at any time; dynamic
 * mode only: the others keep all). */
void exs_sp_rx_rules(struct exs_sp_rx *r, unsigned rules);
/* Where the next indirect transfer must land. */
uint64_t exs_sp_rx_ring_next(const struct exs_sp_rx *r);
/* Data bytes in the ring now: arrived, not yet copied out. */
uint64_t exs_sp_rx_held(const struct exs_sp_rx *r);
/* A receive of len bytes (1..2^31) was posted: its id in *id; -ENOBUFS
 * when too many are. */
int exs_sp_rx_post(struct exs_sp_rx *r, uint32_t len, bool waitall, uint32_t *id);
/* The next ADVERT to send, if one may go now: 1 and *a, else 0. */
int exs_sp_rx_advert(struct exs_sp_rx *r, struct exs_sp_advert *a);
/* A direct transfer's notification; -EPROTO for anything but data for the
 * head receive, at its next byte, under a live advert (the safety check:
 * also what stops a lying peer). */
int exs_sp_rx_direct(struct exs_sp_rx *r, uint32_t phase, uint32_t id, uint32_t off, uint32_t len);
/* An indirect transfer's notification: -EPROTO unless it is the next
 * stretch of the ring and fits. */
int exs_sp_rx_indirect(struct exs_sp_rx *r, uint32_t phase, uint64_t ring_off, uint32_t len);
/* A PHASE message (direct-only senders after discards). */
int exs_sp_rx_phase(struct exs_sp_rx *r, uint32_t phase);
/* A HOLD message: the sender waits at seq for an advert. -EPROTO unless
 * seq is exactly what has arrived (it follows the sender's transfers). */
int exs_sp_rx_hold(struct exs_sp_rx *r, uint64_t seq);
/* Whether an IDLE may go: the sender holds where the stream stands and no
 * receive is posted, so no advert will come unless the application posts
 * one. exs_sp_rx_idle_due: the same, once, *seq its value. */
bool exs_sp_rx_idle(const struct exs_sp_rx *r);
bool exs_sp_rx_idle_due(struct exs_sp_rx *r, uint64_t *seq);

/* A copy the receiver must make: len bytes from ring offset ring_off into
 * receive id at offset off. */
struct exs_sp_copy {
	uint32_t id, off, len;
	uint64_t ring_off;
};
/* The next copy out of the ring, if one may be made now: 1 and *cp (the
 * state already counts it done), else 0. */
int exs_sp_rx_drain(struct exs_sp_rx *r, struct exs_sp_copy *cp);
/* The head receive, if complete: 1, its id and byte count; it is gone. */
int exs_sp_rx_complete(struct exs_sp_rx *r, uint32_t *id, uint32_t *bytes);
/* The stream has ended or broken: forget the posted receives (their
 * owner completes them with what they hold). */
void exs_sp_rx_abandon(struct exs_sp_rx *r);
/* Whether any posted receive has a live advert (the sender may still
 * write into it). */
bool exs_sp_rx_live_adverts(const struct exs_sp_rx *r);
/* The head receive's bytes so far (where the next direct byte belongs). */
uint32_t exs_sp_rx_head_filled(const struct exs_sp_rx *r);
/* Whether an ACK should go: the ring drained since the last one, all of
 * it in dynamic mode (so the sender meets the adverts before the room),
 * otherwise at least a quarter or all of it; *drained is its value. */
bool exs_sp_rx_ack_due(struct exs_sp_rx *r, uint64_t *drained);

#endif
