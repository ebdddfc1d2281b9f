/*
 * uwarp/ep.h - endpoints: the short way to a connected queue pair.
 *
 * One call resolves a host name, makes the context, PD, CQ and QP and
 * connects; another listens, and two more take the next connection on a
 * listener (as librdmacm's rdma_create_ep, rdma_get_request and
 * rdma_accept). What an endpoint holds are ordinary verbs objects: post to
 * uw_ep_qp(), register memory on uw_ep_pd(), poll uw_ep_cq() or call
 * uw_ep_wait(), all with the calls of <uwarp/verbs.h>.
 *
 *     struct uw_ep *ep = uw_ep_connect("server", "7471", NULL);
 *
 * Conventions as in verbs.h: creators return NULL with errno set, other
 * calls 0 or an errno value, uw_ep_wait a count or a negative errno value.
 * An endpoint is used by one thread at a time; its verbs objects follow
 * verbs.h's thread rules.
 */
#ifndef UWARP_EP_H
#define UWARP_EP_H

#include <uwarp/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

struct uw_ep;

struct uw_ep_attr {
	/* Manual progress (0) moves data inside uw_ep_wait and the verbs
	 * calls; auto progress also serves a peer's Reads and Writes of this
	 * process while it does something else. Endpoints accepted on a
	 * listener share its context and so its mode. */
	enum uw_progress progress;
	/* Queue sizes; zeros take 64 sends, 64 receives, 4 SGEs each way and
	 * 64 bytes of inline data. The CQ holds both queues. */
	struct uw_qp_cap cap;
	/* Connection parameters (private data, IRD/ORD, CRC, markers, MPA
	 * revision), or NULL for the defaults. A listener uses its param
	 * when it accepts. */
	const struct uw_conn_param *param;
	/* How long uw_ep_connect waits for the connection, in ms: 0 takes
	 * 15000, -1 waits as long as the MPA timeouts allow. */
	int timeout_ms;
};

/*
 * uw_ep_connect - connect to HOST:PORT (a name or a numeric IPv4 or IPv6
 * address; a service name or number) and return the connected endpoint,
 * with its own context, PD, CQ and QP.
 * @attr: NULL for the defaults.
 *
 * Tries each address the name resolves to in turn. Returns NULL with
 * errno: ENOENT (the name does not resolve), ECONNREFUSED (no listener, or
 * the peer rejected: see uw_ep_peer_data for its reason), ETIMEDOUT (no
 * connection in time), ETIME (TCP connected but no MPA Reply came: not an
 * iWARP peer, or its program did not accept), EPROTO (the peer's answer is
 * not MPA, or the MPA negotiation failed), EINVAL, ENOMEM;
 * uw_connect_strerror says what each means.
 */
UW_EXTERN struct uw_ep *uw_ep_connect(const char *host, const char *port,
				      const struct uw_ep_attr *attr);

/*
 * uw_ep_listen - listen on HOST:PORT (HOST NULL: every address, IPv6 and
 * IPv4; PORT "0" picks a free port, see uw_ep_id(ep)->local_addr).
 * Endpoints taken from it share its context and PD: memory registered on
 * uw_ep_pd(listener) serves every connection. Returns NULL with errno as
 * uw_ep_connect, or EADDRINUSE.
 */
UW_EXTERN struct uw_ep *uw_ep_listen(const char *host, const char *port,
				     const struct uw_ep_attr *attr);

/*
 * uw_ep_get_request - wait up to @timeout_ms (-1: forever) for the next
 * connection request on a listener and return it as an endpoint whose QP
 * can take receives; accept it with uw_ep_accept or refuse it with
 * uw_ep_reject. The peer's private data: uw_ep_peer_data. Returns NULL
 * with errno: ETIMEDOUT, EINVAL (not a listener), ENOMEM.
 */
UW_EXTERN struct uw_ep *uw_ep_get_request(struct uw_ep *listener, int timeout_ms);

/*
 * uw_ep_accept - accept a request taken by uw_ep_get_request (post the
 * receives the peer's first Sends need first) and wait until the
 * connection is established, at most @timeout_ms (-1: as long as the MPA
 * timeouts allow). Returns 0 or an errno value (ECONNRESET when the peer
 * went away, ETIMEDOUT, EINVAL).
 */
UW_EXTERN int uw_ep_accept(struct uw_ep *ep, int timeout_ms);

/*
 * uw_ep_reject - refuse a request with private data (at most 512 bytes)
 * and free the endpoint. Returns 0 or an errno value.
 */
UW_EXTERN int uw_ep_reject(struct uw_ep *ep, const void *private_data, uint16_t len);

/*
 * uw_ep_wait - take one completion from the endpoint's CQ, waiting up to
 * @timeout_ms (-1: forever) and moving data meanwhile. Returns 1 with *wc
 * filled, or -ETIMEDOUT, or -EINVAL. A failed WR still returns 1: check
 * wc->status.
 */
UW_EXTERN int uw_ep_wait(struct uw_ep *ep, struct uw_wc *wc, int timeout_ms);

/*
 * uw_ep_close - disconnect (outstanding WRs complete with FLUSH_ERR and are
 * dropped with the CQ) and free the endpoint and everything it made. A
 * listener can close only after the endpoints taken from it: EBUSY.
 * Returns 0 or an errno value.
 */
UW_EXTERN int uw_ep_close(struct uw_ep *ep);

/* The objects an endpoint holds, for the verbs calls. */
UW_EXTERN struct uw_context *uw_ep_context(const struct uw_ep *ep);
UW_EXTERN struct uw_pd *uw_ep_pd(const struct uw_ep *ep);
UW_EXTERN struct uw_cq *uw_ep_cq(const struct uw_ep *ep);
UW_EXTERN struct uw_qp *uw_ep_qp(const struct uw_ep *ep);
UW_EXTERN struct uw_cm_id *uw_ep_id(const struct uw_ep *ep);

/*
 * uw_ep_peer_data - the peer's private data: from its Request (an endpoint
 * from uw_ep_get_request) or its Reply (after uw_ep_connect). Sets *len
 * (if not NULL); NULL when there was none. (A reject's reason is for the
 * CM calls of verbs.h: uw_ep_connect reports ECONNREFUSED.)
 */
UW_EXTERN const void *uw_ep_peer_data(const struct uw_ep *ep, uint16_t *len);

#ifdef __cplusplus
}
#endif

#endif /* UWARP_EP_H */
