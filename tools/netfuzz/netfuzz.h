/*
 * netfuzz.h: uwarp-fuzz, a structure-aware network fuzzer for any iWARP
 * peer. Each case is one TCP connection: a real MPA exchange (CRC on or
 * off), then one mutated FPDU, then whatever the peer does about it.
 */
#ifndef UWARP_NETFUZZ_H
#define UWARP_NETFUZZ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* what a case changes in an otherwise valid Send or RDMA Write */
enum nf_class {
	NF_OPCODE,   /* the RDMAP opcode */
	NF_QN,       /* the untagged queue number */
	NF_MSN,      /* the message sequence number */
	NF_MO,       /* the message offset */
	NF_STAG,     /* a tagged segment's STag */
	NF_TO,       /* a tagged segment's tagged offset */
	NF_LENGTH,   /* ULPDU_Length against what follows (CRC kept right) */
	NF_BITS,     /* the T and L bits */
	NF_VERSION,  /* the DDP and RDMAP versions */
	NF_TRUNCATE, /* the FPDU cut short, then the connection closed */
	NF_OVERSIZE, /* a ULPDU longer than any peer's MULPDU */
	NF_CRC,      /* a wrong CRC (with CRC negotiated) */
	NF_RANDOM,   /* several fields at once */
	NF_VALID,    /* nothing changed: the control, how the peer takes a good one */
	NF_CLASSES
};

const char *nf_class_name(enum nf_class c);
int nf_class_parse(const char *name);

/* how the peer reacted */
enum nf_reaction {
	NF_TERMINATE, /* a Terminate (codes below), then the close */
	NF_FIN,       /* it closed without a Terminate */
	NF_RST,       /* it reset the connection */
	NF_SILENCE,   /* nothing within the timeout */
	NF_REPLY,     /* it answered with FPDUs other than a Terminate */
	NF_CRASH,     /* the watched peer process is gone */
	NF_REACTIONS
};

const char *nf_reaction_name(enum nf_reaction r);

struct nf_case {
	uint64_t seed;
	unsigned index;
	enum nf_class cls;
	uint8_t bytes[70000]; /* what goes on the wire after the MPA exchange */
	size_t len;
	bool close_after; /* send a FIN right after (truncation) */
	bool crc;         /* CRC was negotiated */
	/* the reaction */
	enum nf_reaction reaction;
	uint8_t layer, etype, ecode; /* a Terminate's, RFC reading */
	bool siw_layout;             /* the peer's Terminate used siw's bit layout */
	char note[96];
};

struct nf_target {
	bool crc;      /* ask for CRC */
	uint32_t stag; /* a tagged target, if known (0: a made-up one) */
	uint64_t to;
	uint32_t payload; /* bytes in the base message */
};

/* Build case `index` of class cls from seed (the same three numbers give
 * the same bytes). */
void nf_build(struct nf_case *c, const struct nf_target *t, bool crc);

/* One connection: dial host:port (or take the next connection on lfd when
 * lfd >= 0), negotiate MPA (asking for CRC when crc), build the case for
 * what was agreed, send it, watch for timeout_ms. Returns 0
 * with c's reaction filled, or -errno when the MPA exchange itself failed
 * (c->note says how). */
int nf_run(struct nf_case *c, const struct nf_target *t, const char *host, int port, int lfd,
	   bool crc, int timeout_ms, int watch_pid);

#endif
