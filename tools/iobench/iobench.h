/*
 * iobench.h: uwarp-iobench, the engine's data path under two I/O models.
 *
 * A stream of RDMA Write messages, cut into FPDUs by the real transmit
 * builder (mpa/fpdu_tx.c, CRC on) and read back by the real parser
 * (mpa/fpdu_rx.c) with the engine's reading plan (runtime/engine_rx.c: a
 * large payload read by the kernel straight into its place, a small read
 * for what follows it), moved over loopback TCP by:
 *   tcp    raw TCP, blocking write and read of whole messages (the yardstick)
 *   epoll  readiness, as libuv gives it to the engine: non-blocking sendmsg
 *          and readv, epoll_wait when the socket says EAGAIN
 *   uring  completions (io_uring): the same sendmsg and readv submitted to
 *          the kernel, which finishes each when the socket can take it
 *   waitall  io_uring, each large payload one MSG_WAITALL receive into its
 *          place linked to a small read of what follows: one submission
 *          per FPDU, however the bytes arrive
 * Only the I/O differs; the framing, the CRCs and the placement are the
 * same code for every model, so the figures say what the model costs.
 */
#ifndef UWARP_IOBENCH_H
#define UWARP_IOBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "ddp/ddp_segment.h"
#include "mpa/fpdu.h"

enum iob_io { IOB_TCP, IOB_EPOLL, IOB_LOWAT, IOB_URING, IOB_WAITALL, IOB_NIO };

struct iob_cfg {
	size_t msg;  /* bytes per message */
	double secs; /* how long the sender sends */
	bool crc;    /* MPA CRC on the FPDUs */
	bool verify; /* every message's bytes compared with what was sent */
	size_t list; /* a gather list's bytes (the engine's: IOB_LIST_BYTES) */
};

/* What one side did in one run. */
struct iob_stats {
	uint64_t bytes;    /* payload bytes moved */
	uint64_t syscalls; /* system calls on the data path */
	uint64_t sleeps;   /* voluntary context switches (the thread slept) */
	double cpu;        /* the thread's CPU seconds */
	double secs;       /* wall time */
	int err;           /* 0, or the errno that ended the run (EBADMSG: bad data) */
	/* iob_stats_begin's readings, for iob_stats_end and iob_tx_over */
	double t0, cpu0;
	uint64_t sleeps0;
};

/* ---- sender: a message stream, one gather list at a time ---- */
#define IOB_LIST_BYTES (256u << 10) /* the engine's UW_TX_BATCH_BYTES */
#define IOB_LIST_MAX (4u << 20)
#define IOB_LIST_HDRS 64
struct iob_list {
	struct fpdu_batch_max bm;
	uint8_t hdr[IOB_LIST_HDRS][MPA_ULPDU_LEN_SIZE + DDP_TAGGED_HDR_LEN];
	int wr_iov; /* the first piece not yet written (cut down as it goes) */
};
struct iob_src {
	const struct iob_cfg *cfg;
	const uint8_t *buf;       /* one message's bytes, sent again and again */
	struct ddp_segmenter seg; /* the current message (its STag: its number) */
	struct ddp_hdr h;         /* a segment cut and not yet in a list */
	uint64_t off;             /* ... its place in the message */
	uint32_t n;               /* ... and length */
	bool have;
	struct fpdu_tx tx;
};
void iob_src_init(struct iob_src *s, const struct iob_cfg *cfg, const uint8_t *buf);
/* The next gather list of about cfg->list bytes: the messages' tagged DDP
 * segments (ddp_segmenter, RDMA Write's RDMAP control) as FPDUs. */
void iob_src_fill(struct iob_src *s, struct iob_list *l);
/* n bytes of the list have left; true when all of it has. */
bool iob_list_wrote(struct iob_list *l, size_t n);
static inline const struct iovec *iob_list_rest(const struct iob_list *l, int *niov)
{
	*niov = l->bm.b.niov - l->wr_iov;
	return l->bm.b.iov + l->wr_iov;
}

/* ---- receiver: the parser, the plan of the next read ---- */
#define IOB_DIRECT_MIN 4096 /* the engine's UW_DIRECT_MIN */
#define IOB_TAIL 256        /* the engine's UW_DIRECT_TAIL */
#define IOB_RXBUF (256u << 10)
struct iob_sink {
	const struct iob_cfg *cfg;
	struct fpdu_rx rx;
	uint8_t *dst;       /* where each message lands */
	const uint8_t *ref; /* with verify: what it must hold */
	uint8_t *buf;       /* bytes read ahead, parsed from off to len */
	size_t off, len;
	uint64_t to; /* the current FPDU's tagged offset */
	bool last;   /* ... and its L flag */
	uint64_t msgs;
	uint64_t bytes; /* payload placed */
	int err;
};
/* The next read: iov[0..*niov) and how many bytes a short read of the
 * buffer would leave unread (0 when it reads into the payload's place). */
struct iob_plan {
	struct iovec iov[2];
	int niov;
	size_t span; /* bytes of iov[0] that are payload read in place */
	size_t want; /* a buffered read's size */
};
int iob_sink_init(struct iob_sink *k, const struct iob_cfg *cfg, const uint8_t *ref);
void iob_sink_free(struct iob_sink *k);
/* Parse everything buffered; -1 when the stream is bad (k->err). */
int iob_sink_parse(struct iob_sink *k);
void iob_sink_plan(struct iob_sink *k, struct iob_plan *p);
/* The stream ended: -1 (k->err EPIPE) when it ended inside an FPDU. */
int iob_sink_end(struct iob_sink *k);
/* n bytes came in by the plan. */
void iob_sink_got(struct iob_sink *k, const struct iob_plan *p, size_t n);

/* ---- the models (iob_tcp.c, iob_epoll.c, iob_uring.c) ---- */
typedef void (*iob_tx_fn)(int fd, const struct iob_cfg *cfg, const uint8_t *buf,
			  struct iob_stats *st);
typedef void (*iob_rx_fn)(int fd, const struct iob_cfg *cfg, const uint8_t *ref,
			  struct iob_stats *st);
struct iob_model {
	const char *name;
	iob_tx_fn tx;
	iob_rx_fn rx;
};
extern const struct iob_model iob_tcp, iob_epoll, iob_lowat;
/* NULL members when uwarp was built without liburing */
extern const struct iob_model iob_uring, iob_waitall;

/* a run's deadline reached: the sender ends after its current list */
bool iob_tx_over(const struct iob_stats *st, const struct iob_cfg *cfg);
/* a side's run begins and ends on the calling thread: its wall time, CPU
 * and sleeps in between */
void iob_stats_begin(struct iob_stats *st);
void iob_stats_end(struct iob_stats *st);
/* payload byte i of every message (never IOB_POISON) */
uint8_t iob_pattern(size_t i);
#define IOB_POISON 0xa5

#endif
