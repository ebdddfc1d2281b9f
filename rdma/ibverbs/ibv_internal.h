/*
 * ibv_internal.h: rdma-core's verbs objects, each wrapped around the uwarp
 * verbs object that does the work.
 *
 * The public structures come from rdma-core's own <infiniband/verbs.h>
 * (libibverbs-dev), so the layout a program compiled against Debian's
 * libibverbs sees is the layout this library fills: rdma-core's inline
 * functions (ibv_post_send, ibv_poll_cq, ibv_req_notify_cq, ...) reach
 * into context->ops and into the verbs_context that sits in front of the
 * ibv_context, and find our functions there.
 *
 * Every ibv object is the first member of its wrapper, so a pointer the
 * program hands back converts with uwv_from(); the uwarp object keeps a
 * pointer to the wrapper in its user-context field (cq_context,
 * qp_context), so a completion or an event finds the program's object.
 */
#ifndef UWARP_RDMA_IBV_INTERNAL_H
#define UWARP_RDMA_IBV_INTERNAL_H

#include <infiniband/verbs.h>
#include <stdbool.h>

#include <uwarp/verbs.h>

#define uwv_from(ptr, type) ((type *)(void *)(ptr))

/* The one device: a software RNIC whose port is every address of the host. */
#define UWV_DEVICE_NAME "uwarp0"
#define UWV_SYSFS_DEV "uwarp:/class/infiniband_verbs/uverbs-uwarp0"
#define UWV_SYSFS_IBDEV "uwarp:/class/infiniband/uwarp0"
#define UWV_VENDOR_ID 0x626d74 /* siw's vendor id: software iWARP */
#define UWV_VENDOR_PART 0x75770001
#define UWV_MAX_QP_WR (1u << 20)
#define UWV_MAX_RD_ATOM 128
#define UWV_MAX_CQE (1 << 24)

struct uwv_context {
	struct uw_context *uw;          /* the process's shared uwarp context */
	struct uw_async_channel *async; /* its descriptor is context.async_fd */
	/* rdma-core finds the verbs_context in front of the ibv_context:
	 * it must be the last member */
	struct verbs_context vctx;
};

static inline struct uwv_context *uwv_ctx(struct ibv_context *c)
{
	return (struct uwv_context *)(void *)((char *)c -
					      offsetof(struct uwv_context, vctx.context));
}

struct uwv_pd {
	struct ibv_pd ibv;
	struct uw_pd *uw;
};

struct uwv_mr {
	struct ibv_mr ibv;
	struct uw_mr *uw;
	int access;
};

struct uwv_mw {
	struct ibv_mw ibv;
	struct uw_mw *uw;
};

struct uwv_channel {
	struct ibv_comp_channel ibv;
	struct uw_comp_channel *uw;
};

struct uwv_cq {
	struct ibv_cq ibv;
	struct uw_cq *uw;
};

struct uwv_srq {
	struct ibv_srq ibv;
	struct uw_srq *uw;
	struct ibv_srq_attr attr;
};

/* An extended QP's ibv_wr_* batch (ibv_qp_ex.c) */
struct uwv_wr_batch {
	struct ibv_send_wr *wr; /* the requests, as ibv_post_send takes them */
	size_t n, wr_cap;
	size_t *sge_at; /* each request's first SGE in sge */
	size_t at_cap;
	bool *inl_at; /* its SGE is inline data copied into inl */
	size_t inl_at_cap;
	struct ibv_sge *sge;
	size_t nsge, sge_cap;
	uint8_t *inl;
	size_t inl_len, inl_cap;
	int err; /* a request uwarp cannot carry: the batch fails */
};

struct uwv_qp {
	/* an ibv_qp_ex begins with its ibv_qp: ibv_qp_to_qp_ex is &qpx */
	union {
		struct ibv_qp ibv;
		struct ibv_qp_ex qpx;
	};
	bool ex; /* made with send_ops_flags: the ibv_wr_* calls are set */
	struct uwv_wr_batch batch;
	struct uw_qp *uw;
	struct ibv_qp_cap cap;
	int sq_sig_all;
	unsigned access; /* qp_access_flags as last set */
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	struct uwv_qp *table_next; /* ibv_qp_table.c */
};

/* Exported calls rdma-core declares in its driver.h, which libibverbs-dev
 * does not ship. */
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index, int *type);

/* The shared uwarp context: the first device open makes it (auto
 * progress: a passive peer makes no calls), the last close ends it. */
struct uw_context *uwv_shared_get(void);
void uwv_shared_put(void);

/* UWARP_VERBS_DEBUG=1: one line on stderr naming a call that is not
 * implemented, or an argument uwarp refuses. Returns err. */
int uwv_debug(int err, const char *call, const char *why);

/* The host's addresses as GIDs and its first MAC as an EUI-64 GUID
 * (ibv_host.c). Index 0 is the MAC-based GID, as siw reports. */
int uwv_host_gid(unsigned index, union ibv_gid *gid);
int uwv_host_gid_count(void);
uint64_t uwv_host_guid(void); /* network byte order, as ibv_device_attr holds it */

/* The QPs by number (ibv_qp_table.c); uwv_qp_by_num is librdmacm's, in
 * the private version node. */
void uwv_qp_table_add(struct uwv_qp *q);
void uwv_qp_table_remove(struct uwv_qp *q);
struct ibv_qp *uwv_qp_by_num(uint32_t qp_num);

/* The context's ops (ibv_cq.c, ibv_post.c). */
int uwv_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int uwv_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int uwv_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int uwv_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int uwv_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int uwv_query_port_ex(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
		      size_t attr_len);
int uwv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t attr_size);

/* Wait until fd is readable (ibv_cq.c): 0, EAGAIN when the program set
 * O_NONBLOCK on it, EINTR when a signal came. */
int uwv_wait_readable(int fd);

/* Asynchronous events (ibv_async.c): an object made through c reports to
 * c's channel. */
void uwv_async_report(struct ibv_context *c, struct uw_qp *qp, struct uw_cq *cq,
		      struct uw_srq *srq);

/* Memory windows (ibv_mw.c): the context's ops, and a bind as uwarp's
 * send request (rkey 0: uwarp picks the key). 0 or an errno. */
void uwv_mw_ops(struct ibv_context *c);
int uwv_bind_to_uw(struct ibv_mw *mw, uint32_t rkey, const struct ibv_mw_bind_info *b,
		   struct uw_send_wr *u, const char *call);

/* The extended QP (ibv_qp_ex.c): the context's create_qp_ex, the ibv_wr_*
 * calls set on a QP (0 or EOPNOTSUPP for send_ops_flags uwarp has not),
 * and its batch freed with it. */
struct ibv_qp *uwv_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a);
int uwv_qp_ex_init(struct uwv_qp *q, uint64_t send_ops);
void uwv_qp_ex_free(struct uwv_qp *q);

/* State names both ways (ibv_qp.c). */
enum ibv_qp_state uwv_state_to_ibv(enum uw_qp_state s);

#endif
