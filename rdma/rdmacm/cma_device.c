/*
 * cma_device.c: the verbs context every id uses, and the device list
 * rdma_get_devices gives. Like rdma-core's librdmacm, the device is
 * opened once, on first use, and stays open for the process's life.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>

#include "cma_internal.h"

static pthread_once_t verbs_once = PTHREAD_ONCE_INIT;
static struct ibv_context *verbs;
static int verbs_errno;

static void verbs_open(void)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	if (l && l[0])
		verbs = ibv_open_device(l[0]);
	verbs_errno = verbs ? 0 : errno ? errno : ENODEV;
	ibv_free_device_list(l);
}

struct ibv_context *ucm_verbs(void)
{
	pthread_once(&verbs_once, verbs_open);
	if (!verbs)
		errno = verbs_errno;
	return verbs;
}

struct ibv_context **rdma_get_devices(int *num_devices)
{
	struct ibv_context *v = ucm_verbs();
	struct ibv_context **l = calloc(2, sizeof(*l));
	if (!l) {
		errno = ENOMEM;
		return NULL;
	}
	l[0] = v;
	if (num_devices)
		*num_devices = v ? 1 : 0;
	return l;
}

void rdma_free_devices(struct ibv_context **list) { free(list); }
