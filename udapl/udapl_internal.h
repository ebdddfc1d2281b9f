/*
 * udapl_internal.h: the uwarp DAT 2.0 provider's objects.
 *
 * The DAT registry (libdat2) loads this library by the name dat.conf
 * gives it and calls dat_provider_init, which registers one provider
 * table per IA name. Every handle the provider gives out points at an
 * object whose first member is that table: DAT_HANDLE_TO_PROVIDER reads
 * it to dispatch a consumer's call here.
 *
 * Mapping onto uwarp's verbs (include/uwarp/verbs.h):
 *   IA   a uwarp context (an engine thread moves data: a peer's RDMA Read
 *        of our memory is served while the consumer computes), one CM
 *        channel and the thread that turns its events into DAT events
 *   PZ   a protection domain
 *   LMR  a memory region; RMR a memory window
 *   EVD  a completion queue (DTO completions) beside a queue of the
 *        events the provider makes itself (connections, requests, binds,
 *        software events, async errors); waiting watches both
 *   EP   a queue pair and its CM id
 *   PSP, RSP  a listening CM id; CR  the CM id of a pending request
 * Connection qualifiers map to TCP ports as the OpenFabrics DAPL provider
 * maps them (up to 0xffff: the port itself), so a uwarp IA and a DAPL
 * iWARP IA over Linux siw find each other.
 */
#ifndef UWARP_UDAPL_INTERNAL_H
#define UWARP_UDAPL_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <dat2/udat.h>
#include <dat2/dat_registry.h>

#include <uwarp/verbs.h>

#include "util/list.h"

#define UD_EXPORT __attribute__((visibility("default")))

/* A DAT error: the class bit, the type, the subtype. */
#define UD_ERR(type, sub) ((DAT_RETURN)(DAT_CLASS_ERROR | (type) | (sub)))
#define UD_NOT_IMPLEMENTED UD_ERR(DAT_NOT_IMPLEMENTED, DAT_NO_SUBTYPE)

/* What the provider promises (dat_ia_query) and holds itself to. */
#define UD_MAX_IOV 16    /* UW_MAX_SGE */
#define UD_MAX_PDATA 252 /* 256 toward siw, less DAPL's reject header */
#define UD_MAX_EVD_QLEN 65536
#define UD_MAX_DTOS 4096    /* per queue of an EP */
#define UD_MAX_RDMA_READ 16 /* IRD and ORD per EP */
#define UD_MAX_MESSAGE (1u << 30)
#define UD_NAME "uwarp"

/* DAPL's reject header: the version of the side that rejected, before
 * the consumer's private data (what the OpenFabrics provider sends). */
#define UD_REJ_HDR 4

enum ud_magic {
	UD_MAGIC_IA = 0x75644941,
	UD_MAGIC_PZ,
	UD_MAGIC_LMR,
	UD_MAGIC_RMR,
	UD_MAGIC_EVD,
	UD_MAGIC_CNO,
	UD_MAGIC_EP,
	UD_MAGIC_PSP,
	UD_MAGIC_RSP,
	UD_MAGIC_CR,
	UD_MAGIC_DEAD = 0x64656164,
};

struct ud_ia;

/* What every handle points at. */
struct ud_obj {
	DAT_PROVIDER *provider; /* first: DAT_HANDLE_TO_PROVIDER */
	uint32_t magic;         /* enum ud_magic */
	DAT_HANDLE_TYPE type;
	DAT_CONTEXT consumer_ctx;
	struct ud_ia *ia;
	struct util_list link; /* on the IA's objs (the IA itself: on none) */
};

struct ud_evd;
struct ud_cno;
struct ud_ep;

/* the provider table of one IA name (dat.conf entry) */
struct ud_prov {
	DAT_PROVIDER table;
	char name[DAT_NAME_MAX_LENGTH];
	char params[128];       /* its ia_params */
	DAT_PROVIDER_INFO info; /* as registered */
	struct util_list link;  /* on the library's providers */
};

struct ud_ia {
	struct ud_obj h;
	struct ud_prov *prov;
	char name[DAT_NAME_MAX_LENGTH];
	struct sockaddr_storage addr; /* the IA address (dat.conf's ia_params) */
	struct uw_context *ctx;
	struct uw_cm_channel *cm;
	pthread_t cm_thread;
	bool stopping; /* (atomic: the CM thread reads it unlocked) */
	struct ud_evd *async_evd;
	bool own_async;
	/* Every object of the IA, one lock for their states and links:
	 * the consumer's threads, the CM thread and the engine meet here. */
	pthread_mutex_t mu;
	struct util_list objs; /* struct ud_obj, newest first */
};

struct ud_pz {
	struct ud_obj h;
	struct uw_pd *pd;
	int users; /* LMRs, RMRs, EPs */
};

struct ud_lmr {
	struct ud_obj h;
	struct ud_pz *pz;
	struct uw_mr *mr;
	DAT_LMR_PARAM param;
	int windows; /* RMRs bound over it */
};

struct ud_rmr {
	struct ud_obj h;
	struct ud_pz *pz;
	struct uw_mw *mw;
	struct ud_lmr *lmr; /* bound over, or NULL */
	DAT_RMR_PARAM param;
	bool ep_scope;
};

/* The events the provider makes itself wait in a ring beside the CQ. */
struct ud_evd {
	struct ud_obj h;
	DAT_EVD_FLAGS flags;
	DAT_COUNT qlen;
	struct uw_cq *cq;           /* DTO: the completions, or NULL */
	struct uw_comp_channel *ch; /* the CQ's notifications */
	int efd;                    /* an eventfd: a provider event was queued */
	DAT_EVENT *ev;              /* ring of provider events */
	int cap, head, count;
	bool enabled, waitable;
	int waiters;
	struct ud_cno *cno;
	int users; /* EPs, PSPs, RSPs naming it */
};

/* A CNO watches the EVDs attached to it: an epoll set holds their wait
 * descriptors (what dat_cno_fd_create hands out) and an eventfd the
 * provider writes when it queues an event on one of them. */
struct ud_cno {
	struct ud_obj h;
	int epfd;
	int kick;
	int waiters;
};

struct ud_sp { /* PSP or RSP */
	struct ud_obj h;
	DAT_CONN_QUAL qual;
	struct ud_evd *evd;
	DAT_PSP_FLAGS flags;
	struct ud_ep *ep; /* RSP: its endpoint (struct ud_ep) */
	struct uw_cm_id *id;
};

/* What a posted DTO's completion needs that the wire does not say: the
 * consumer's cookie, the length posted, the operation. wr_id points at
 * one; a queue's completions come in posting order, so one that comes
 * frees every older slot too (unsignalled sends that succeeded never
 * complete). */
struct ud_cookie {
	DAT_DTO_COOKIE user;
	DAT_SEG_LENGTH len;
	DAT_DTOS op;
	struct ud_ep *ep;
	bool recv;
	/* an RDMA Read into several local segments goes as one Read per
	 * segment (a Read Request names one sink): all but the last are
	 * shadows, whose failure the last one reports (NULL: nothing) */
	bool shadow;
	struct ud_cookie *final;
	DAT_DTO_COMPLETION_STATUS err; /* a shadow's failure, for the last */
};

struct ud_cring {
	struct ud_cookie *c;
	uint32_t cap, head, tail; /* head..tail in use (free running) */
};

enum ud_ep_flags {
	UD_EP_ACTIVE = 1, /* this side connected (not accepted) */
};

struct ud_ep {
	struct ud_obj h;
	DAT_EP_PARAM param;
	struct sockaddr_storage local, remote;
	struct ud_pz *pz;
	struct ud_evd *recv_evd, *req_evd, *conn_evd;
	struct uw_cq *own_cq; /* for a queue the consumer gave no EVD */
	struct uw_qp *qp;
	struct uw_cm_id *id;
	struct ud_cring sq, rq;
	uint64_t deadline_ms; /* an active connect's timeout, or 0 */
	struct ud_sp *rsp;    /* reserved for this RSP */
	int flags;
	/* the private data of the last connection event (the event points
	 * here; valid until the next one) */
	uint8_t pdata[512];
};

struct ud_cr {
	struct ud_obj h;
	struct ud_sp *sp;
	struct ud_ep *ep; /* a PSP_PROVIDER_FLAG service point's: made for it */
	struct uw_cm_id *id;
	struct sockaddr_storage remote;
	DAT_COUNT pdata_len;
	uint8_t pdata[512];
	uint16_t ird, ord;
};

/* udapl_provider.c */
struct ud_prov *ud_prov_find(const char *ia_name);
void ud_obj_init(struct ud_ia *ia, struct ud_obj *o, uint32_t magic, DAT_HANDLE_TYPE type);
void ud_obj_unlink(struct ud_obj *o); /* under ia->mu; marks it dead */
bool ud_valid(const void *h, uint32_t magic);
DAT_RETURN ud_errno(int err); /* an errno as the nearest DAT error */
/* UWARP_DAT_DEBUG set: why a call failed, on stderr */
void ud_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
unsigned short ud_qual_port(DAT_CONN_QUAL q); /* host order */

/* udapl_provider.c: what the registry looks up (DAT_PROVIDER_INIT_FUNC) */
UD_EXPORT void DAT_API dat_provider_init(const DAT_PROVIDER_INFO *info, const char *instance_data);
UD_EXPORT void DAT_API dat_provider_fini(const DAT_PROVIDER_INFO *info);

/* udapl_ia.c */
DAT_RETURN ud_ia_open(const DAT_NAME_PTR name, DAT_COUNT qlen, DAT_EVD_HANDLE *async,
		      DAT_IA_HANDLE *out);
DAT_RETURN ud_ia_query(DAT_IA_HANDLE, DAT_EVD_HANDLE *, DAT_IA_ATTR_MASK, DAT_IA_ATTR *,
		       DAT_PROVIDER_ATTR_MASK, DAT_PROVIDER_ATTR *);
DAT_RETURN ud_ia_close(DAT_IA_HANDLE, DAT_CLOSE_FLAGS);
DAT_RETURN ud_pz_create(DAT_IA_HANDLE, DAT_PZ_HANDLE *);
DAT_RETURN ud_pz_query(DAT_PZ_HANDLE, DAT_PZ_PARAM_MASK, DAT_PZ_PARAM *);
DAT_RETURN ud_pz_free(DAT_PZ_HANDLE);

/* udapl_evd.c */
DAT_RETURN ud_evd_create(DAT_IA_HANDLE, DAT_COUNT, DAT_CNO_HANDLE, DAT_EVD_FLAGS, DAT_EVD_HANDLE *);
DAT_RETURN ud_evd_query(DAT_EVD_HANDLE, DAT_EVD_PARAM_MASK, DAT_EVD_PARAM *);
DAT_RETURN ud_evd_modify_cno(DAT_EVD_HANDLE, DAT_CNO_HANDLE);
DAT_RETURN ud_evd_enable(DAT_EVD_HANDLE);
DAT_RETURN ud_evd_disable(DAT_EVD_HANDLE);
DAT_RETURN ud_evd_wait(DAT_EVD_HANDLE, DAT_TIMEOUT, DAT_COUNT, DAT_EVENT *, DAT_COUNT *);
DAT_RETURN ud_evd_resize(DAT_EVD_HANDLE, DAT_COUNT);
DAT_RETURN ud_evd_post_se(DAT_EVD_HANDLE, const DAT_EVENT *);
DAT_RETURN ud_evd_dequeue(DAT_EVD_HANDLE, DAT_EVENT *);
DAT_RETURN ud_evd_free(DAT_EVD_HANDLE);
DAT_RETURN ud_evd_set_unwaitable(DAT_EVD_HANDLE);
DAT_RETURN ud_evd_clear_unwaitable(DAT_EVD_HANDLE);
/* queue a provider event (under ia->mu); false when the EVD is full */
bool ud_evd_post(struct ud_evd *evd, const DAT_EVENT *ev);
void ud_evd_destroy(struct ud_evd *evd); /* ia_close: no checks */
/* how many events wait (provider's and the CQ's); under ia->mu */
int ud_evd_count(struct ud_evd *evd);
/* arm the CQ's notification: a completion after this makes the wait fds
 * readable */
void ud_evd_arm(struct ud_evd *evd);
void ud_evd_drain_fds(struct ud_evd *evd);
/* an EP goes: move every completion in @evd's CQ to its ring, but the
 * EP's (whose cookies die with it); under ia->mu */
void ud_evd_purge(struct ud_evd *evd, struct ud_ep *ep);

/* udapl_cno.c */
DAT_RETURN ud_cno_create(DAT_IA_HANDLE, DAT_OS_WAIT_PROXY_AGENT, DAT_CNO_HANDLE *);
DAT_RETURN ud_cno_fd_create(DAT_IA_HANDLE, DAT_FD *, DAT_CNO_HANDLE *);
DAT_RETURN ud_cno_modify_agent(DAT_CNO_HANDLE, DAT_OS_WAIT_PROXY_AGENT);
DAT_RETURN ud_cno_query(DAT_CNO_HANDLE, DAT_CNO_PARAM_MASK, DAT_CNO_PARAM *);
DAT_RETURN ud_cno_free(DAT_CNO_HANDLE);
DAT_RETURN ud_cno_wait(DAT_CNO_HANDLE, DAT_TIMEOUT, DAT_EVD_HANDLE *);
DAT_RETURN ud_cno_trigger(DAT_CNO_HANDLE, DAT_EVD_HANDLE *);
void ud_cno_kick(struct ud_cno *cno); /* an attached EVD got an event */
/* @evd joins or leaves @cno's descriptor set (under ia->mu) */
void ud_cno_attach(struct ud_cno *cno, struct ud_evd *evd);
void ud_cno_detach(struct ud_cno *cno, struct ud_evd *evd);

/* udapl_mem.c */
DAT_RETURN ud_lmr_create(DAT_IA_HANDLE, DAT_MEM_TYPE, DAT_REGION_DESCRIPTION, DAT_VLEN,
			 DAT_PZ_HANDLE, DAT_MEM_PRIV_FLAGS, DAT_VA_TYPE, DAT_LMR_HANDLE *,
			 DAT_LMR_CONTEXT *, DAT_RMR_CONTEXT *, DAT_VLEN *, DAT_VADDR *);
DAT_RETURN ud_lmr_query(DAT_LMR_HANDLE, DAT_LMR_PARAM_MASK, DAT_LMR_PARAM *);
DAT_RETURN ud_lmr_free(DAT_LMR_HANDLE);
DAT_RETURN ud_lmr_sync(DAT_IA_HANDLE, const DAT_LMR_TRIPLET *, DAT_VLEN);
DAT_RETURN ud_rmr_create(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
DAT_RETURN ud_rmr_create_for_ep(DAT_PZ_HANDLE, DAT_RMR_HANDLE *);
DAT_RETURN ud_rmr_query(DAT_RMR_HANDLE, DAT_RMR_PARAM_MASK, DAT_RMR_PARAM *);
DAT_RETURN ud_rmr_bind(DAT_RMR_HANDLE, DAT_LMR_HANDLE, const DAT_LMR_TRIPLET *, DAT_MEM_PRIV_FLAGS,
		       DAT_VA_TYPE, DAT_EP_HANDLE, DAT_RMR_COOKIE, DAT_COMPLETION_FLAGS,
		       DAT_RMR_CONTEXT *);
DAT_RETURN ud_rmr_free(DAT_RMR_HANDLE);

/* udapl_ep.c */
DAT_RETURN ud_ep_create(DAT_IA_HANDLE, DAT_PZ_HANDLE, DAT_EVD_HANDLE, DAT_EVD_HANDLE,
			DAT_EVD_HANDLE, const DAT_EP_ATTR *, DAT_EP_HANDLE *);
DAT_RETURN ud_ep_query(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, DAT_EP_PARAM *);
DAT_RETURN ud_ep_modify(DAT_EP_HANDLE, DAT_EP_PARAM_MASK, const DAT_EP_PARAM *);
DAT_RETURN ud_ep_get_status(DAT_EP_HANDLE, DAT_EP_STATE *, DAT_BOOLEAN *, DAT_BOOLEAN *);
DAT_RETURN ud_ep_free(DAT_EP_HANDLE);
DAT_RETURN ud_ep_reset(DAT_EP_HANDLE);
DAT_RETURN ud_ep_post_send(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
			   DAT_COMPLETION_FLAGS);
DAT_RETURN ud_ep_post_send_inv(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
			       DAT_COMPLETION_FLAGS, DAT_BOOLEAN, DAT_RMR_CONTEXT);
DAT_RETURN ud_ep_post_recv(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
			   DAT_COMPLETION_FLAGS);
DAT_RETURN ud_ep_post_rdma_read(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
				const DAT_RMR_TRIPLET *, DAT_COMPLETION_FLAGS);
DAT_RETURN ud_ep_post_rdma_write(DAT_EP_HANDLE, DAT_COUNT, DAT_LMR_TRIPLET *, DAT_DTO_COOKIE,
				 const DAT_RMR_TRIPLET *, DAT_COMPLETION_FLAGS);
/* the QP, made once the EP has a PZ (under ia->mu): 0 or a DAT error */
DAT_RETURN ud_ep_make_qp(struct ud_ep *ep);
/* a completion's cookie: its slot and every older one are free again */
void ud_ep_cookie_done(struct ud_cookie *c);
void ud_ep_destroy(struct ud_ep *ep); /* ia_close: no checks */
/* an EP the provider makes for a request (PSP_PROVIDER_FLAG): no PZ, no
 * EVDs, the IA's default attributes, TENTATIVE; under ia->mu */
struct ud_ep *ud_ep_for_request(struct ud_ia *ia);

/* udapl_cm.c */
DAT_RETURN ud_ep_connect(DAT_EP_HANDLE, DAT_IA_ADDRESS_PTR, DAT_CONN_QUAL, DAT_TIMEOUT, DAT_COUNT,
			 const DAT_PVOID, DAT_QOS, DAT_CONNECT_FLAGS);
DAT_RETURN ud_ep_disconnect(DAT_EP_HANDLE, DAT_CLOSE_FLAGS);
DAT_RETURN ud_psp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EVD_HANDLE, DAT_PSP_FLAGS,
			 DAT_PSP_HANDLE *);
DAT_RETURN ud_psp_create_any(DAT_IA_HANDLE, DAT_CONN_QUAL *, DAT_EVD_HANDLE, DAT_PSP_FLAGS,
			     DAT_PSP_HANDLE *);
DAT_RETURN ud_psp_query(DAT_PSP_HANDLE, DAT_PSP_PARAM_MASK, DAT_PSP_PARAM *);
DAT_RETURN ud_psp_free(DAT_PSP_HANDLE);
DAT_RETURN ud_rsp_create(DAT_IA_HANDLE, DAT_CONN_QUAL, DAT_EP_HANDLE, DAT_EVD_HANDLE,
			 DAT_RSP_HANDLE *);
DAT_RETURN ud_rsp_query(DAT_RSP_HANDLE, DAT_RSP_PARAM_MASK, DAT_RSP_PARAM *);
DAT_RETURN ud_rsp_free(DAT_RSP_HANDLE);
DAT_RETURN ud_cr_query(DAT_CR_HANDLE, DAT_CR_PARAM_MASK, DAT_CR_PARAM *);
DAT_RETURN ud_cr_accept(DAT_CR_HANDLE, DAT_EP_HANDLE, DAT_COUNT, const DAT_PVOID);
DAT_RETURN ud_cr_reject(DAT_CR_HANDLE, DAT_COUNT, const DAT_PVOID);
void *ud_cm_thread(void *arg);
void ud_sp_destroy(struct ud_sp *sp); /* ia_close */
void ud_cr_destroy(struct ud_cr *cr); /* ia_close, reject */

#endif
