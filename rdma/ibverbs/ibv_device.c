/*
 * ibv_device.c: the device list (one device, uwarp0), opening and closing
 * it.
 *
 * Every ibv_context of the process shares one uwarp context, so objects
 * made through one open of the device work with objects made through
 * another (a program's own CQ with a QP that librdmacm's context made),
 * and one engine thread serves them all.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ibv_internal.h"

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static struct uw_context *shared_ctx;
static unsigned shared_users;

struct uw_context *uwv_shared_get(void)
{
	pthread_mutex_lock(&shared_lock);
	if (!shared_ctx) {
		struct uw_context_attr a = { .progress = UW_PROGRESS_AUTO };
		shared_ctx = uw_open(&a);
	}
	struct uw_context *c = shared_ctx;
	if (c)
		shared_users++;
	pthread_mutex_unlock(&shared_lock);
	return c;
}

void uwv_shared_put(void)
{
	pthread_mutex_lock(&shared_lock);
	if (shared_users && --shared_users == 0) {
		uw_close(shared_ctx);
		shared_ctx = NULL;
	}
	pthread_mutex_unlock(&shared_lock);
}

/* The device is static: its name and paths never change, and a list
 * holds pointers to it that stay valid after ibv_free_device_list, as
 * rdma-core's do while a context is open. */
static struct ibv_device uwv_device = {
	.node_type = IBV_NODE_RNIC,
	.transport_type = IBV_TRANSPORT_IWARP,
	.name = UWV_DEVICE_NAME,
	.dev_name = "uverbs-uwarp0",
	/* no sysfs entry: ibv_read_sysfs_file answers for these paths */
	.dev_path = UWV_SYSFS_DEV,
	.ibdev_path = UWV_SYSFS_IBDEV,
};

struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc(2, sizeof(*list));
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	list[0] = &uwv_device;
	if (num)
		*num = 1;
	return list;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *device) { return device ? device->name : NULL; }

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	return device == &uwv_device ? (__be64)uwv_host_guid() : 0;
}

int ibv_get_device_index(struct ibv_device *device) { return device == &uwv_device ? 0 : -1; }

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	if (device != &uwv_device) {
		errno = ENODEV;
		return NULL;
	}
	struct uwv_context *u = calloc(1, sizeof(*u));
	if (!u) {
		errno = ENOMEM;
		return NULL;
	}
	u->uw = uwv_shared_get();
	if (!u->uw) {
		int e = errno;
		free(u);
		errno = e ? e : ENOMEM;
		return NULL;
	}
	/* this open's own events: what was made through it reports here */
	u->async = uw_create_async_channel(u->uw);
	if (!u->async) {
		int e = errno;
		uwv_shared_put();
		free(u);
		errno = e;
		return NULL;
	}
	struct ibv_context *c = &u->vctx.context;
	c->device = device;
	c->cmd_fd = -1; /* no kernel: there are no commands to write */
	c->async_fd = u->async->fd;
	c->num_comp_vectors = 1;
	pthread_mutex_init(&c->mutex, NULL);
	c->abi_compat = __VERBS_ABI_IS_EXTENDED;
	c->ops.poll_cq = uwv_poll_cq;
	c->ops.req_notify_cq = uwv_req_notify_cq;
	c->ops.post_send = uwv_post_send;
	c->ops.post_recv = uwv_post_recv;
	c->ops.post_srq_recv = uwv_post_srq_recv;
	uwv_mw_ops(c);
	u->vctx.sz = sizeof(u->vctx);
	u->vctx.query_port = uwv_query_port_ex;
	u->vctx.query_device_ex = uwv_query_device_ex;
	u->vctx.create_qp_ex = uwv_create_qp_ex;
	return c;
}

int ibv_close_device(struct ibv_context *c)
{
	if (!c)
		return EINVAL;
	struct uwv_context *u = uwv_ctx(c);
	/* objects the program left behind still report to it: it stays */
	uw_destroy_async_channel(u->async);
	pthread_mutex_destroy(&c->mutex);
	free(u);
	uwv_shared_put();
	return 0;
}

static pthread_once_t debug_once = PTHREAD_ONCE_INIT;
static bool debug_on;

static void debug_read(void)
{
	const char *v = getenv("UWARP_VERBS_DEBUG");
	debug_on = v && *v && strcmp(v, "0") != 0;
}

int uwv_debug(int err, const char *call, const char *why)
{
	pthread_once(&debug_once, debug_read);
	if (debug_on)
		fprintf(stderr, "uwarp-verbs: %s: %s (%s)\n", call, why, strerror(err));
	return err;
}
