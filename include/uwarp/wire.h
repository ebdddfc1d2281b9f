/*
 * uwarp/wire.h: what the bytes on the wire are (RFC 5040, 5041, 5044, 6580,
 * 6581, 7306). Constants and layouts only, no logic, in the spirit of the
 * Linux siw driver's iwarp.h. All multi-byte fields are big-endian on the
 * wire except the MPA CRC, which is the little-endian image of the CRC32c
 * value (RFC 5044 section 4.4, the iSCSI convention).
 *
 * Layouts are given as byte offsets rather than packed structs so that no
 * code ever depends on compiler bit-field order (siw's Terminate encoding
 * shows what that costs: see UW_TERM_SIW_*).
 */
#ifndef UWARP_WIRE_H
#define UWARP_WIRE_H

#include <stdint.h>

/* ---- MPA connection setup frames (RFC 5044 section 7.1, RFC 6581) ---- */

#define MPA_KEY_LEN 16
#define MPA_KEY_REQ "MPA ID Req Frame"
#define MPA_KEY_REP "MPA ID Rep Frame"
#define MPA_FRAME_HDR_LEN 20 /* key(16) flags(1) rev(1) PD_Length(2) */
#define MPA_OFF_FLAGS 16
#define MPA_OFF_REV 17
#define MPA_OFF_PDLEN 18

#define MPA_FLAG_M 0x80   /* sender wants to receive markers */
#define MPA_FLAG_C 0x40   /* CRC */
#define MPA_FLAG_R 0x20   /* reject (Reply only) */
#define MPA_FLAG_E 0x10   /* RFC 6581 enhanced connection establishment */
#define MPA_FLAG_RES 0x0f /* reserved: sent as 0, ignored on receive */

#define MPA_REV_1 1
#define MPA_REV_2 2
#define MPA_PD_MAX_RFC 512 /* RFC 5044: PD_Length never above 512 */
#define MPA_PD_MAX_SIW 256 /* Linux siw drops a frame with more */

/* RFC 6581 IRD/ORD block: the first 4 bytes of private data when E=1. */
#define MPA_V2_BLOCK_LEN 4
#define MPA_V2_A_P2P 0x8000       /* IRD word: peer-to-peer mode */
#define MPA_V2_B_SEND_RTR 0x4000  /* IRD word: zero-length Send RTR */
#define MPA_V2_C_WRITE_RTR 0x8000 /* ORD word: zero-length RDMA Write RTR */
#define MPA_V2_D_READ_RTR 0x4000  /* ORD word: zero-length RDMA Read RTR */
#define MPA_V2_IRD_ORD_MASK 0x3fff

/* ---- MPA FPDU (RFC 5044 section 4) ---- */

#define MPA_ULPDU_LEN_SIZE 2
#define MPA_CRC_SIZE 4
#define MPA_MARKER_SIZE 4
#define MPA_MARKER_INTERVAL 512
#define MPA_ALIGN 4
#define MPA_FPDU_MAX 65536 /* the largest FPDU uwarp sends: 64 KiB */

/* ---- DDP (RFC 5041 section 4) ---- */

/* Control word: the first 16 bits after ULPDU_Length, DDP byte then RDMAP
 * byte. Masks apply to the big-endian 16-bit value. */
#define DDP_CTRL_T 0x8000 /* tagged */
#define DDP_CTRL_L 0x4000 /* last segment of the message */
#define DDP_CTRL_RSVD 0x3c00
#define DDP_CTRL_DV_MASK 0x0300 /* DDP version */
#define DDP_CTRL_DV_SHIFT 8
#define RDMAP_CTRL_RV_MASK 0x00c0 /* RDMAP version */
#define RDMAP_CTRL_RV_SHIFT 6
#define RDMAP_CTRL_RSVD 0x0030
#define RDMAP_CTRL_OPCODE_MASK 0x000f
#define DDP_VERSION 1
#define RDMAP_VERSION 1

#define DDP_TAGGED_HDR_LEN 14   /* ctrl(2) STag(4) TO(8) */
#define DDP_UNTAGGED_HDR_LEN 18 /* ctrl(2) RsvdULP(4) QN(4) MSN(4) MO(4) */
#define DDP_OFF_STAG 2
#define DDP_OFF_TO 6
#define DDP_OFF_RSVDULP 2 /* Invalidate STag for Send with Invalidate */
#define DDP_OFF_QN 6
#define DDP_OFF_MSN 10
#define DDP_OFF_MO 14

/* Untagged queue numbers (RFC 5040 section 5; 3 and 4 from RFC 7306). */
#define DDP_QN_SEND 0 /* Send variants and Immediate Data */
#define DDP_QN_READ_REQ 1
#define DDP_QN_TERMINATE 2
#define DDP_QN_ATOMIC_REQ 3
#define DDP_QN_ATOMIC_RESP 4
#define DDP_QN_COUNT 5

/* ---- RDMAP (RFC 5040 section 4, RFC 7306) ---- */

enum rdmap_opcode {
	RDMAP_RDMA_WRITE = 0x0,
	RDMAP_RDMA_READ_REQ = 0x1,
	RDMAP_RDMA_READ_RESP = 0x2,
	RDMAP_SEND = 0x3,
	RDMAP_SEND_INVAL = 0x4,
	RDMAP_SEND_SE = 0x5,
	RDMAP_SEND_SE_INVAL = 0x6,
	RDMAP_TERMINATE = 0x7,
	/* RFC 7306; 0x8, 0x9, 0xE and 0xF are reserved. Linux siw knows none
	 * of these: uwarp sends them only to peers that are uwarp. */
	RDMAP_ATOMIC_REQ = 0xA,
	RDMAP_ATOMIC_RESP = 0xB,
	RDMAP_IMMEDIATE = 0xC,
	RDMAP_IMMEDIATE_SE = 0xD,
};
#define RDMAP_OPCODE_COUNT 16

/* Read Request header after the untagged DDP header (RFC 5040 4.4). */
#define RDMAP_READ_REQ_LEN 28 /* sink STag(4) sink TO(8) size(4) src STag(4) src TO(8) */
#define RDMAP_RR_OFF_SINK_STAG 0
#define RDMAP_RR_OFF_SINK_TO 4
#define RDMAP_RR_OFF_SIZE 12
#define RDMAP_RR_OFF_SRC_STAG 16
#define RDMAP_RR_OFF_SRC_TO 20

/* Terminate (RFC 5040 4.8): Terminate Control after the untagged DDP
 * header, then the DDP Segment Length and the terminated headers. */
#define RDMAP_TERM_CTRL_LEN 4
#define RDMAP_TERM_HDRCT_M 0x80 /* DDP Segment Length valid */
#define RDMAP_TERM_HDRCT_D 0x40 /* terminated DDP header included */
#define RDMAP_TERM_HDRCT_R 0x20 /* terminated RDMAP header included */
/* Linux siw writes the control word through little-endian bit-fields:
 * byte 0 is (etype << 4) | layer and M/D/R are bits 0/1/2 of byte 2. */
#define RDMAP_TERM_SIW_M 0x01
#define RDMAP_TERM_SIW_D 0x02
#define RDMAP_TERM_SIW_R 0x04
#define RDMAP_TERM_SEGLEN_SIZE 2
#define RDMAP_TERM_RDMAP_HDR_LEN 28 /* a terminated Read Request header */

/* Atomic Request header after the untagged DDP header (RFC 7306 5.2):
 * reserved(28 bits) | atomic opcode(4), Request Identifier, Remote STag,
 * Remote TO, Add or Swap Data, Add or Swap Mask, Compare Data, Compare Mask. */
#define RDMAP_ATOMIC_REQ_LEN 52
#define RDMAP_AREQ_OFF_OPCODE 0
#define RDMAP_AREQ_OFF_ID 4
#define RDMAP_AREQ_OFF_STAG 8
#define RDMAP_AREQ_OFF_TO 12
#define RDMAP_AREQ_OFF_DATA 20
#define RDMAP_AREQ_OFF_DATA_MASK 28
#define RDMAP_AREQ_OFF_CMP 36
#define RDMAP_AREQ_OFF_CMP_MASK 44
enum rdmap_atomic_op {
	RDMAP_ATOMIC_FETCH_ADD = 0x0,
	RDMAP_ATOMIC_SWAP = 0x1,
	RDMAP_ATOMIC_CMP_SWAP = 0x2,
};
/* Atomic Response (RFC 7306 5.3): Original Request Identifier, Original
 * Remote Data Value. */
#define RDMAP_ATOMIC_RESP_LEN 12
#define RDMAP_ARESP_OFF_ID 0
#define RDMAP_ARESP_OFF_VALUE 4
/* Immediate Data (RFC 7306 5.4): 8 bytes of payload in an untagged
 * message on queue 0, consuming a posted receive. */
#define RDMAP_IMMEDIATE_LEN 8

/* ---- RFC 6580 error taxonomy: layer / error type / error code ---- */

/* RDMAP error types and codes (RFC 5040 section 7, RFC 6580). */
enum uw_term_etype_rdmap {
	UW_RDMAP_LOCAL_CATASTROPHIC = 0,
	UW_RDMAP_REMOTE_PROTECTION = 1,
	UW_RDMAP_REMOTE_OPERATION = 2,
};
enum uw_term_ecode_rdmap {
	UW_RDMAP_INVALID_STAG = 0x00,
	UW_RDMAP_BASE_BOUNDS = 0x01,
	UW_RDMAP_ACCESS_RIGHTS = 0x02,
	UW_RDMAP_STAG_NOT_ASSOCIATED = 0x03,
	UW_RDMAP_TO_WRAP = 0x04,
	UW_RDMAP_INVALID_VERSION = 0x05,
	UW_RDMAP_UNEXPECTED_OPCODE = 0x06,
	UW_RDMAP_CATASTROPHIC_STREAM = 0x07,
	UW_RDMAP_CATASTROPHIC_GLOBAL = 0x08,
	UW_RDMAP_CANNOT_INVALIDATE = 0x09,
	UW_RDMAP_UNSPECIFIED = 0xff,
};

/* DDP error types and codes (RFC 5041 section 7, RFC 6580). */
enum uw_term_etype_ddp {
	UW_DDP_CATASTROPHIC = 0,
	UW_DDP_TAGGED = 1,
	UW_DDP_UNTAGGED = 2,
};
enum uw_term_ecode_ddp_tagged {
	UW_DDP_T_INVALID_STAG = 0x00,
	UW_DDP_T_BASE_BOUNDS = 0x01,
	UW_DDP_T_STAG_NOT_ASSOCIATED = 0x02,
	UW_DDP_T_TO_WRAP = 0x03,
	UW_DDP_T_INVALID_VERSION = 0x04,
};
enum uw_term_ecode_ddp_untagged {
	UW_DDP_U_INVALID_QN = 0x01,
	UW_DDP_U_NO_BUFFER = 0x02,
	UW_DDP_U_MSN_RANGE = 0x03,
	UW_DDP_U_INVALID_MO = 0x04,
	UW_DDP_U_TOO_LONG = 0x05,
	UW_DDP_U_INVALID_VERSION = 0x06,
};

enum uw_term_layer {
	UW_TERM_LAYER_RDMAP = 0,
	UW_TERM_LAYER_DDP = 1,
	UW_TERM_LAYER_LLP = 2, /* MPA */
};

enum uw_term_etype_llp {
	UW_TERM_LLP_MPA = 0,
};

enum uw_term_ecode_mpa {
	UW_MPA_ECODE_TCP_LOST = 0x01,
	UW_MPA_ECODE_CRC = 0x02,
	UW_MPA_ECODE_MARKER = 0x03, /* marker and ULPDU_Length mismatch */
	UW_MPA_ECODE_BAD_FRAME = 0x04,
	UW_MPA_ECODE_LOCAL_CATASTROPHIC = 0x05,
	UW_MPA_ECODE_INSUFFICIENT_IRD = 0x06,
	UW_MPA_ECODE_NO_MATCHING_RTR = 0x07,
};

#endif /* UWARP_WIRE_H */
