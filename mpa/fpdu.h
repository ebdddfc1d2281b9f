/*
 * fpdu.h: MPA full operation (RFC 5044 section 4): FPDU transmit builder,
 * incremental receive parser, and FPDU sizing.
 *
 * Both directions count stream bytes from the start of full operation (the
 * first byte after the sender's MPA Request or Reply), because markers sit
 * at every 512th octet of that stream.
 *
 * Markers (RFC 5044 section 4.3), as uwarp writes and checks them: a marker
 * is [reserved 16 bits = 0][FPDUPTR 16 bits]. FPDUPTR is the distance from
 * the first octet of the containing FPDU's ULPDU_Length field to the first
 * octet of the marker. A marker that falls exactly on an FPDU boundary
 * precedes that FPDU, carries FPDUPTR 0 and is covered by its CRC, as every
 * marker inside an FPDU is (that is also how Wireshark checks the CRC).
 */
#ifndef UWARP_MPA_FPDU_H
#define UWARP_MPA_FPDU_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <uwarp/wire.h>

#include "rddp_error.h"

/* ---- sizing ---- */

/* Pad bytes after a ULPDU of this length (RFC 5044 4.2). */
static inline unsigned fpdu_pad(size_t ulpdu_len)
{
	return (unsigned)((MPA_ALIGN - (MPA_ULPDU_LEN_SIZE + ulpdu_len) % MPA_ALIGN) % MPA_ALIGN);
}

/*
 * MULPDU for an EMSS (RFC 5044 section 4.6 and 8.2):
 *   no markers:  EMSS - 6 - (EMSS mod 4)
 *   markers:     EMSS - (6 + 4 * ceil(EMSS / 512) + EMSS mod 4)
 * EMSS above 64 KiB is treated as 64 KiB, the largest FPDU uwarp builds.
 */
uint32_t fpdu_mulpdu(uint32_t emss, bool markers);

enum fpdu_size_policy {
	FPDU_SIZE_RFC,   /* MULPDU from the TCP MSS: right for hardware RNICs */
	FPDU_SIZE_LARGE, /* FPDUs up to 64 KiB: siw and uwarp accept them */
};

/* The ULPDU limit a connection uses under a policy. */
uint32_t fpdu_ulpdu_max(enum fpdu_size_policy policy, uint32_t emss, bool markers);

/* ---- transmit ---- */

/* A writev(2) never takes more than IOV_MAX pieces. */
#define FPDU_BATCH_IOV IOV_MAX
#define FPDU_BATCH_SCRATCH 8192

struct fpdu_tx {
	bool crc;
	bool markers;
	uint32_t mpos; /* stream offset since full operation began, mod 512 */
	uint64_t fpdus;
	uint64_t bytes;
};

/*
 * One gather list of many FPDUs, ready for writev. Payload is referenced,
 * never copied; pad, markers and CRCs live in scratch. The owner supplies
 * the storage, so a connection can keep a small batch and a benchmark a
 * large one.
 */
struct fpdu_batch {
	int niov;
	int cap; /* at most FPDU_BATCH_IOV */
	size_t bytes;
	size_t scratch_used;
	size_t scratch_cap;
	struct iovec *iov;
	uint8_t *scratch;
	/* With markers: each FPDU copied whole into scratch, markers, pad and
	 * CRC in place, its CRC taken in one pass, one iovec for all of it
	 * (consecutive FPDUs share one). Without, a marker stream's FPDU is
	 * two pieces per 512 bytes, each a CRC call and an iovec the kernel
	 * pays for. Scratch must then hold whole FPDUs. Off by default. */
	bool flat;
};

/* A batch with the largest storage. */
struct fpdu_batch_max {
	struct fpdu_batch b;
	struct iovec iov[FPDU_BATCH_IOV];
	uint8_t scratch[FPDU_BATCH_SCRATCH];
};

void fpdu_tx_init(struct fpdu_tx *tx, bool crc, bool markers);
void fpdu_batch_init(struct fpdu_batch *b, struct iovec *iov, int cap, uint8_t *scratch,
		     size_t scratch_cap);
void fpdu_batch_reset(struct fpdu_batch *b);

static inline struct fpdu_batch *fpdu_batch_max_init(struct fpdu_batch_max *m)
{
	fpdu_batch_init(&m->b, m->iov, FPDU_BATCH_IOV, m->scratch, FPDU_BATCH_SCRATCH);
	return &m->b;
}

/*
 * Append one FPDU to a batch. hdr holds MPA_ULPDU_LEN_SIZE bytes for the
 * ULPDU_Length, which this function fills in, followed by hdr_len bytes of
 * DDP/RDMAP header; it and the payload must stay untouched until the batch
 * has been written. The ULPDU is hdr_len + the payload's total length.
 *
 * Returns 0, or:
 *   -EMSGSIZE  the ULPDU exceeds 65535 bytes, or with markers the FPDU would
 *              exceed 64 KiB (FPDUPTR is 16 bits)
 *   -ENOBUFS   the batch cannot take the FPDU: write the batch out, reset
 *              it and append again. Nothing was appended and tx is unchanged.
 *   -EMSGSIZE  also when the FPDU needs more pieces than even an empty batch
 *              of this size holds
 */
int fpdu_tx_append(struct fpdu_tx *tx, struct fpdu_batch *b, uint8_t *hdr, size_t hdr_len,
		   const struct iovec *payload, int npayload);

/* ---- receive ---- */

/* Largest ULPDU header the parser collects for the layer above: enough for
 * an untagged DDP header plus any RDMAP header (Terminate, Atomic Request). */
#define FPDU_RX_HDR_MAX 128

struct fpdu_rx_cfg {
	bool crc;     /* check the CRC of every FPDU */
	bool markers; /* the peer inserts markers */
	/* Smallest ULPDU_Length accepted; a ULPDU that cannot hold a DDP
	 * header is LLP/MPA 0x03. Defaults to DDP_TAGGED_HDR_LEN when 0. */
	uint16_t min_ulpdu;
	/* The layer above names its header length from the first two ULPDU
	 * bytes (the DDP/RDMAP control word); at most FPDU_RX_HDR_MAX. NULL
	 * makes the header min_ulpdu bytes. */
	size_t (*hdr_len)(void *arg, const uint8_t ctrl[2]);
	void *arg;
	/* With markers, one FPDU_RX_DATA may carry the payload of several
	 * 508-byte runs, the markers between them checked and skipped
	 * (out->n pieces): one event per run otherwise. */
	bool pieces;
};

enum fpdu_rx_event {
	FPDU_RX_MORE = 0, /* every input byte consumed; feed more */
	FPDU_RX_HDR,      /* a ULPDU header is complete: the decision point */
	FPDU_RX_DATA,     /* payload bytes in out->data (pointing into the input) */
	FPDU_RX_END,      /* the FPDU is complete and its CRC (if on) is good */
	FPDU_RX_ERROR,    /* fatal: rx->err says which Terminate; stop parsing */
};

#define FPDU_RX_PIECES 32

struct fpdu_rx_piece {
	const uint8_t *data;
	uint32_t len;
};

struct fpdu_rx_out {
	const uint8_t *data; /* the first (with cfg.pieces off, the only) piece */
	size_t len;
	uint32_t off; /* offset of data within the FPDU's payload */
	/* all of them, payload bytes [off, off + their total) in order */
	int n;
	struct fpdu_rx_piece piece[FPDU_RX_PIECES];
};

enum fpdu_rx_state {
	FPDU_RX_S_LEN,
	FPDU_RX_S_HDR,
	FPDU_RX_S_DATA,
	FPDU_RX_S_PAD,
	FPDU_RX_S_CRC,
	FPDU_RX_S_DEAD,
};

struct fpdu_rx {
	struct fpdu_rx_cfg cfg;
	enum fpdu_rx_state st;
	uint32_t mpos; /* stream offset mod 512 */
	uint8_t mbuf[MPA_MARKER_SIZE];
	uint8_t mgot;      /* marker bytes collected; nonzero while inside one */
	uint32_t fpdu_off; /* stream bytes since this FPDU's ULPDU_Length field */
	uint8_t lenbuf[2];
	uint8_t got; /* bytes of the current small field (len, pad, crc) */
	uint16_t ulpdu_len;
	uint16_t hdr_len;
	uint16_t hdr_got;
	uint32_t payload_len;
	uint32_t payload_off;
	uint8_t pad;
	uint8_t crcbuf[MPA_CRC_SIZE];
	uint32_t crc;
	uint8_t hdr[FPDU_RX_HDR_MAX];
	struct rddp_error err;
	uint64_t fpdus;
	uint64_t bytes;
};

void fpdu_rx_init(struct fpdu_rx *rx, const struct fpdu_rx_cfg *cfg);

/*
 * Consume bytes until something happens. *used is set to the bytes taken
 * from in; call again with the rest. After FPDU_RX_HDR, rx->hdr holds
 * rx->hdr_len header bytes, rx->ulpdu_len and rx->payload_len are set.
 * After FPDU_RX_ERROR every later call returns FPDU_RX_ERROR again.
 */
enum fpdu_rx_event fpdu_rx_step(struct fpdu_rx *rx, const uint8_t *in, size_t len, size_t *used,
				struct fpdu_rx_out *out);

/*
 * Direct placement: after FPDU_RX_HDR the caller may read payload straight
 * from the socket into its destination. fpdu_rx_direct_span() says how many
 * bytes may be read that way now (up to the next marker or the payload's
 * end; 0 when not inside payload). Once n <= span bytes have landed at
 * placed, fpdu_rx_direct_done() folds them into the CRC and advances.
 */
size_t fpdu_rx_direct_span(const struct fpdu_rx *rx);
void fpdu_rx_direct_done(struct fpdu_rx *rx, const void *placed, size_t n);

#endif
