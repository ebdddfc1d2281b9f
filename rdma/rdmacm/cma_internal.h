/*
 * cma_internal.h: rdma-core's connection manager objects, each wrapped
 * around uwarp's (uw_cm_channel, uw_cm_id, uw_cm_event).
 *
 * uwarp connects a QP in one step (TCP, then the MPA exchange); rdma-core's
 * address and route resolution steps have nothing to wait for, so their
 * events (ADDR_RESOLVED, ROUTE_RESOLVED, ADDR_ERROR) are made here and
 * queued on the channel beside uwarp's. A channel's descriptor is an epoll
 * set holding uwarp's channel descriptor and an eventfd counting the
 * queued events, so poll() on it sees both.
 *
 * An id made with no channel is synchronous (rdma-core's rule): each call
 * that would raise an event waits for it on a private channel.
 */
#ifndef UWARP_RDMA_CMA_INTERNAL_H
#define UWARP_RDMA_CMA_INTERNAL_H

#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>
#include <stdbool.h>

#include "rdma/ibverbs/ibv_internal.h"

struct ucm_event {
	struct rdma_cm_event ev;
	struct uw_cm_event *uw; /* acknowledged with this event; NULL if ours */
	struct ucm_event *next;
};

struct ucm_channel {
	struct rdma_event_channel ch; /* ch.fd: the epoll set */
	struct uw_cm_channel *uw;
	int queued_fd; /* eventfd (semaphore): readable while ours are queued */
	pthread_mutex_t lock;
	struct ucm_event *head, **tail;
};

struct ucm_id {
	struct rdma_cm_id id;
	struct uw_cm_id *uw;
	bool sync;      /* made without a channel: calls wait for their event */
	bool addr_done; /* resolve_addr (or bind) has set id.verbs */
	bool route_done;
	bool established; /* was connected: a later disconnect is not an error */
	/* rdma_bind_addr's socket, listening from the bind on: a listener's
	 * connections are accepted from it (cma_channel.c) */
	int bound_fd;
	int tos;    /* RDMA_OPTION_ID_TOS, or -1: the listener's socket takes it too */
	int afonly; /* RDMA_OPTION_ID_AFONLY, or -1: the system's default */
	bool listening;
	bool own_cqs; /* rdma_create_qp made the CQs: rdma_destroy_qp ends them */
	/* a QP the program made itself, named by conn_param.qp_num and
	 * attached by rdma_connect or rdma_accept (id.qp stays NULL, as
	 * rdma-core leaves it); kept by number, looked up when needed, as
	 * the program may destroy it first */
	bool ext_qp;
	uint32_t ext_qp_num;
	/* rdma_create_ep on a passive id: what rdma_get_request's ids get */
	bool ep_qp;
	struct ibv_qp_init_attr ep_attr;
};

#define ucm_of(id) ((struct ucm_id *)(void *)(id))
#define ucm_chan(c) ((struct ucm_channel *)(void *)(c))

/* -1 with errno, rdma-core's convention for every int call */
static inline int ucm_err(int e)
{
	errno = e;
	return -1;
}

/* The verbs context every id uses (librdmacm opens the one device once). */
struct ibv_context *ucm_verbs(void);

/* Queue an event made here (its id, type and status) on the id's channel. */
int ucm_queue(struct ucm_id *u, enum rdma_cm_event_type type, int status);

/* A synchronous id's wait for the event its last call raised: 0, or -1
 * with errno (the event's status) when the event says the call failed. */
int ucm_complete(struct ucm_id *u, enum rdma_cm_event_type want);

/* A new channel (for rdma_create_event_channel and synchronous ids). */
struct ucm_channel *ucm_channel_new(void);
void ucm_channel_free(struct ucm_channel *c);

/* A listener's socket in (or out of) its channel's epoll set. */
int ucm_watch_listener(struct ucm_channel *c, struct ucm_id *u, bool on);

/* The addresses of a uwarp id into rdma_cm_id.route.addr. */
void ucm_copy_addrs(struct ucm_id *u);

#endif
