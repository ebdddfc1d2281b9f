/*
 * ibv_query.c: what the device, its one port, its GIDs and P_Keys are,
 * and the sysfs reads rdma-core's tools make about them.
 *
 * The limits are uwarp's own (uwarp/verbs.h: UW_MAX_SGE, UW_MAX_INLINE,
 * queue depths up to 2^20, CQs up to 2^24 entries, IRD/ORD up to 128 as
 * siw has); a limit uwarp does not have (QPs, MRs, PDs) is reported as
 * what an int holds, since only memory bounds them.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ibv_internal.h"

#ifndef UWARP_VERSION_STRING
#define UWARP_VERSION_STRING "0"
#endif

static void fill_device_attr(struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "uwarp %s", UWARP_VERSION_STRING);
	a->node_guid = uwv_host_guid();
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = (uint64_t)sysconf(_SC_PAGESIZE);
	a->vendor_id = UWV_VENDOR_ID;
	a->vendor_part_id = UWV_VENDOR_PART;
	a->hw_ver = 0;
	a->max_qp = INT_MAX;
	a->max_qp_wr = (int)UWV_MAX_QP_WR;
	/* windows of both types; a type 2 window is tied to its QP and PD */
	a->device_cap_flags = IBV_DEVICE_MEM_WINDOW | IBV_DEVICE_MEM_WINDOW_TYPE_2B;
	a->max_mw = INT_MAX;
	a->max_sge = UW_MAX_SGE;
	a->max_sge_rd = UW_MAX_SGE;
	a->max_cq = INT_MAX;
	a->max_cqe = UWV_MAX_CQE;
	a->max_mr = INT_MAX;
	a->max_pd = INT_MAX;
	a->max_qp_rd_atom = UWV_MAX_RD_ATOM;
	a->max_qp_init_rd_atom = UWV_MAX_RD_ATOM;
	a->max_res_rd_atom = INT_MAX;
	/* RFC 7306 atomics, carried out by the responder's own process:
	 * atomic with respect to every other RDMA operation on the device */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_srq = INT_MAX;
	a->max_srq_wr = (int)UWV_MAX_QP_WR;
	a->max_srq_sge = UW_MAX_SGE;
	a->max_pkeys = 1;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *attr)
{
	if (!c || !attr)
		return EINVAL;
	fill_device_attr(attr);
	return 0;
}

int uwv_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *attr, size_t attr_size)
{
	if (!c || !attr || attr_size < sizeof(attr->orig_attr))
		return EINVAL;
	if (in && in->comp_mask)
		return EINVAL;
	memset(attr, 0, attr_size);
	fill_device_attr(&attr->orig_attr);
	if (attr_size >=
	    offsetof(struct ibv_device_attr_ex, phys_port_cnt_ex) + sizeof(attr->phys_port_cnt_ex))
		attr->phys_port_cnt_ex = 1;
	return 0;
}

static int fill_port_attr(uint8_t port, struct ibv_port_attr *a, size_t len)
{
	if (port != 1)
		return EINVAL;
	struct ibv_port_attr p = {
		.state = IBV_PORT_ACTIVE,
		/* TCP segments the stream: any message size fits any MTU,
		 * and 4096 is what siw reports over a large-MTU interface */
		.max_mtu = IBV_MTU_4096,
		.active_mtu = IBV_MTU_4096,
		.gid_tbl_len = uwv_host_gid_count(),
		.port_cap_flags = IBV_PORT_CM_SUP,
		.max_msg_sz = 0x80000000u,
		.pkey_tbl_len = 1,
		.max_vl_num = 1,
		.active_width = 2, /* 4X */
		.active_speed = 8, /* 10 Gb/s a lane: 40 Gb/s, about loopback TCP's rate */
		.phys_state = 5,   /* LinkUp */
		.link_layer = IBV_LINK_LAYER_ETHERNET,
	};
	memset(a, 0, len);
	memcpy(a, &p, len < sizeof(p) ? len : sizeof(p));
	return 0;
}

#undef ibv_query_port
/* The exported one is rdma-core's oldest: its struct may be shorter than
 * today's ibv_port_attr (a program built before link_layer existed). */
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *attr)
{
	if (!c || !attr)
		return EINVAL;
	return fill_port_attr(port, (struct ibv_port_attr *)(void *)attr,
			      offsetof(struct ibv_port_attr, link_layer));
}

int uwv_query_port_ex(struct ibv_context *c, uint8_t port, struct ibv_port_attr *attr,
		      size_t attr_len)
{
	if (!c || !attr)
		return EINVAL;
	return fill_port_attr(port, attr, attr_len);
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	if (!c || !gid || port != 1 || index < 0)
		return -1;
	return uwv_host_gid((unsigned)index, gid) ? -1 : 0;
}

int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index,
		      struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	if (!c || !entry || flags || port != 1 || entry_size < sizeof(*entry))
		return EINVAL;
	union ibv_gid g;
	if (uwv_host_gid(index, &g))
		return ENODATA;
	memset(entry, 0, entry_size);
	entry->gid = g;
	entry->gid_index = index;
	entry->port_num = port;
	entry->gid_type = IBV_GID_TYPE_IB; /* what iWARP devices report */
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *entries,
			     size_t max_entries, uint32_t flags, size_t entry_size)
{
	if (!c || (!entries && max_entries) || flags || entry_size < sizeof(*entries))
		return -EINVAL;
	int n = uwv_host_gid_count();
	if ((size_t)n > max_entries)
		return -EINVAL;
	for (int i = 0; i < n; i++) {
		struct ibv_gid_entry *e =
			(struct ibv_gid_entry *)(void *)((char *)entries + (size_t)i * entry_size);
		if (_ibv_query_gid_ex(c, 1, (uint32_t)i, e, 0, entry_size))
			return i;
	}
	return n;
}

/* rdma-core's private call (IBVERBS_PRIVATE_34) that ibv_devinfo makes;
 * its enum is internal to rdma-core, 0 meaning "IB/RoCE v1". */
int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index, int *type)
{
	union ibv_gid g;
	if (!c || !type || port != 1 || uwv_host_gid(index, &g)) {
		errno = EINVAL;
		return -1;
	}
	*type = 0;
	return 0;
}

int ibv_query_pkey(struct ibv_context *c, uint8_t port, int index, __be16 *pkey)
{
	if (!c || !pkey || port != 1 || index != 0)
		return -1;
	*pkey = 0xffff; /* the default P_Key, the same in either byte order */
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey)
{
	if (!c || port != 1 || pkey != 0xffff)
		return -1;
	return 0;
}

const char *ibv_get_sysfs_path(void) { return "/sys"; }

/* The files rdma-core's tools read about a device, for our paths. */
static const char *virtual_file(const char *dir, const char *file, char *tmp, size_t len)
{
	if (strcmp(dir, UWV_SYSFS_IBDEV) == 0) {
		if (strcmp(file, "board_id") == 0)
			return "uwarp software iWARP";
		if (strcmp(file, "node_type") == 0)
			return "4: RNIC";
		if (strcmp(file, "fw_ver") == 0) {
			snprintf(tmp, len, "uwarp %s", UWARP_VERSION_STRING);
			return tmp;
		}
		if (strcmp(file, "node_desc") == 0)
			return UWV_DEVICE_NAME;
	}
	if (strcmp(dir, UWV_SYSFS_DEV) == 0) {
		if (strcmp(file, "ibdev") == 0)
			return UWV_DEVICE_NAME;
		if (strcmp(file, "abi_version") == 0)
			return "1";
	}
	return NULL;
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	if (!dir || !file || !buf || !size) {
		errno = EINVAL;
		return -1;
	}
	if (strncmp(dir, "uwarp:/", 7) == 0) {
		char tmp[80];
		const char *v = virtual_file(dir, file, tmp, sizeof(tmp));
		if (!v) {
			errno = ENOENT;
			return -1;
		}
		snprintf(buf, size, "%s", v);
		return (int)strlen(buf);
	}
	char path[PATH_MAX];
	if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, size);
	close(fd);
	if (n < 0)
		return -1;
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if ((size_t)n >= size) {
		errno = EOVERFLOW;
		return -1;
	}
	buf[n] = '\0';
	return (int)n;
}
