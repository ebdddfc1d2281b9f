/*
 * exs_wire.h: what ES-API sockets say to each other on top of RDMAP, and
 * its encoders and decoders (pure: no sockets; the fuzz harness feeds the
 * decoders anything).
 *
 * Connection: the MPA Request's and Reply's private data carry a HELLO
 * (each side's socket type, the initiator's stream mode, how many control
 * receives it posted, where its hidden ring is, and whether its sends use
 * credit slots and of which size):
 *    0 magic(32)  4 version  5 type  6 mode  7 log2 slot (0: packed ring)
 *    8 credits(32)  12 ring stag(32)  16 ring addr(64)  24 ring size(64)
 *   32 features(32): the control messages this end understands beyond
 *      the first ones (EXS_FEAT_*). A hello of 32 bytes is from a uwarp
 *      before the word (features 0); a longer one from a later version,
 *      whose bytes past the word are ignored, so either end may grow it.
 *
 * Control messages are RDMAP Sends of EXS_CTL_LEN bytes, big-endian:
 *    0 type   1 flags   2 credits(16)   4 phase(32)   8 id(32)   12 len(32)
 *   16 seq(64)   24 addr(64)   32 stag(32)   36 off(32)
 * Every Send and every Immediate Data consumes one of the peer's posted
 * control receives, so each side spends credits; the peer returns them in
 * the credits field of whatever it sends next (or a CREDIT message when it
 * has nothing else to say).
 *
 * A data transfer is an RDMA Write into the peer's advertised receive
 * (direct, or the seqpacket message) or into its ring (indirect), then its
 * notification: Immediate Data (RFC 7306) when both ends offered it, else a
 * DATA control message. Immediate Data has 64 bits, so it is packed (see
 * exs_imm_pack): kind(2) len(30) phase(16) id(16); what does not fit
 * (the receive's offset, the ring offset) the receiver knows already,
 * because the only place a transfer may land is the next byte of the head
 * receive or of the ring.
 */
#ifndef UWARP_EXS_WIRE_H
#define UWARP_EXS_WIRE_H

#include <stdbool.h>
#include <stdint.h>

#define EXS_HELLO_MAGIC 0x45585301u /* "EXS" 1 */
#define EXS_HELLO_LEN 36            /* what this version sends */
#define EXS_HELLO_MIN_LEN 32        /* what every version sends */

/* A sender only says what its peer's hello says it understands. */
enum exs_feature {
	EXS_FEAT_HOLD = 1u << 0, /* HOLD and IDLE (uwarp's hold, EXS_RULE_HOLD) */
};

enum exs_wire_type { EXS_WIRE_STREAM = 1, EXS_WIRE_SEQPACKET = 2 };

struct exs_hello {
	uint8_t version;   /* 1 */
	uint8_t type;      /* enum exs_wire_type */
	uint8_t mode;      /* enum exs_stream_mode, the initiator's */
	uint8_t slot_log2; /* its sends' credit slot, 9..20; 0: a packed ring */
	uint32_t credits;
	uint32_t ring_stag;
	uint64_t ring_addr, ring_size;
	uint32_t features; /* EXS_FEAT_*: 0 from a 32-byte hello */
};

void exs_hello_encode(const struct exs_hello *h, uint8_t out[EXS_HELLO_LEN]);
/* -EPROTO when it is not an ES-API hello we can speak */
int exs_hello_decode(const void *buf, uint32_t len, struct exs_hello *h);

#define EXS_CTL_LEN 40

enum exs_ctl_type {
	EXS_CTL_ADVERT = 1, /* a receive: id, phase, seq (stream), off, len, addr, stag */
	EXS_CTL_ACK,        /* the ring drained to seq (in all) */
	EXS_CTL_PHASE,      /* the sender's phase after discards */
	EXS_CTL_DATA,       /* a transfer's notification without Immediate Data */
	EXS_CTL_CREDIT,     /* credits only */
	EXS_CTL_FIN,        /* the stream ends at seq (bytes sent in all) */
	EXS_CTL_FIN_ACK,    /* every byte up to the FIN has arrived */
	EXS_CTL_HOLD,       /* the sender waits at seq for an advert */
	EXS_CTL_IDLE,       /* all up to seq has arrived, no receive is posted */
	EXS_CTL_MAX_,
};

#define EXS_CTL_F_WAITALL 0x01 /* ADVERT */
#define EXS_CTL_F_CHAIN 0x10   /* ADVERT: begins where the previous receive's ends */
#define EXS_CTL_F_TRUNC 0x02   /* DATA of a seqpacket message cut short */
#define EXS_CTL_F_KIND 0x0c    /* DATA: enum exs_xfer_kind << 2 */

enum exs_xfer_kind { EXS_XFER_DIRECT = 1, EXS_XFER_INDIRECT = 2, EXS_XFER_MESSAGE = 3 };

struct exs_ctl {
	uint8_t type, flags;
	uint16_t credits;
	uint32_t phase, id, len;
	uint64_t seq, addr;
	uint32_t stag, off;
};

void exs_ctl_encode(const struct exs_ctl *m, uint8_t out[EXS_CTL_LEN]);
/* -EPROTO for a message no ES-API peer sends: wrong length, unknown type,
 * unknown flags, an empty advert or transfer, an advert's space beyond
 * 32 bits of offset. */
int exs_ctl_decode(const void *buf, uint32_t len, struct exs_ctl *m);

/* A transfer's notification. */
struct exs_note {
	enum exs_xfer_kind kind;
	bool trunc;     /* MESSAGE: cut to the receive */
	uint32_t len;   /* < 2^30 */
	uint32_t phase; /* DIRECT, INDIRECT (only the low 16 bits in Immediate Data) */
	uint32_t id;    /* DIRECT, MESSAGE (only the low 16 bits in Immediate Data) */
	/* only in a DATA message; with Immediate Data the receiver knows them */
	uint32_t off;      /* DIRECT: where in the receive */
	uint64_t ring_off; /* INDIRECT: where in the ring */
};

#define EXS_XFER_MAX ((1u << 30) - 1)

uint64_t exs_imm_pack(const struct exs_note *n);
/* -EPROTO for kind 0 or a truncated non-message */
int exs_imm_unpack(uint64_t imm, struct exs_note *n);
/* The full phase nearest to @now whose low 16 bits are @low16. */
uint32_t exs_phase_widen(uint32_t now, uint32_t low16);

#endif
