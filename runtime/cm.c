/*
 * cm.c: what both sides of the connection manager share: the MPA policy
 * and private data a connection's parameters make, sending a frame of the
 * MPA exchange (RFC 5044 section 7.1, RFC 6581), a Terminate while still
 * in setup, and a program's own TCP socket handed over to uwarp. The
 * events and channels are in cm_event.c, ids in cm_id.c, the passive side
 * in cm_listen.c, the active side in cm_connect.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rdmap/rdmap_offer.h"
#include "rdmap/rdmap_term.h"
#include "uw_internal.h"

static const struct uw_conn_param default_param = { .ird = 16, .ord = 16 };

void uw__cm_policy_from(const struct uw_conn_param *p, bool responder, struct mpa_policy *pol)
{
	mpa_policy_default(pol);
	pol->rev = p->mpa_rev == 1 ? MPA_REV_1 : MPA_REV_2;
	pol->enhanced = pol->rev == MPA_REV_2;
	pol->crc = p->crc != UW_CRC_OFF;
	pol->markers_rx = p->markers;
	/* zero means the default here, as in every field of uw_conn_param */
	pol->ird = p->ird ? p->ird : default_param.ird;
	pol->ord = p->ord ? p->ord : default_param.ord;
	pol->p2p_request = !responder && p->p2p;
	uint8_t rtr = (uint8_t)((p->rtr_types & UW_RTR_SEND ? MPA_RTR_SEND : 0) |
				(p->rtr_types & UW_RTR_WRITE ? MPA_RTR_WRITE : 0) |
				(p->rtr_types & UW_RTR_READ ? MPA_RTR_READ : 0));
	pol->rtr_types = rtr ? rtr : responder ? MPA_RTR_ALL : MPA_RTR_WRITE | MPA_RTR_READ;
}

/* Our private data, with the RFC 7306 offer behind it when it fits. */
size_t uw__cm_pdata_with_offer(const struct uw_conn_param *p, bool offer, uint8_t *out)
{
	size_t len = p->private_data_len;
	if (len)
		memcpy(out, p->private_data, len);
	if (offer && !p->no_extensions &&
	    len + RDMAP_OFFER_LEN + MPA_V2_BLOCK_LEN <= MPA_PD_MAX_RFC)
		len = rdmap_offer_append(out, len);
	return len;
}

int uw__cm_send_frame(struct uw_conn *c, const struct mpa_frame *f)
{
	ssize_t n = mpa_frame_encode(f, c->out, sizeof(c->out));
	if (n < 0)
		return (int)-n;
	c->out_len = (size_t)n;
	c->out_off = 0;
	/* one write for the whole frame: older siw aborts on a split one */
	ssize_t w = uw__sock_write(c->fd, c->out, c->out_len);
	if (w > 0)
		c->out_off = (size_t)w;
	else if (w < 0 && errno != EAGAIN && errno != EINTR)
		return errno;
	if (c->out_off < c->out_len)
		uw__conn_poll(c, UV_READABLE | UV_WRITABLE);
	return 0;
}

/* A Terminate while still in setup (insufficient IRD, no RTR match): the
 * peer already switched to FPDUs with the CRC it negotiated. */
void uw__cm_setup_terminate(struct uw_conn *c, uint8_t ecode, bool crc)
{
	uint8_t t[MPA_ULPDU_LEN_SIZE + RDMAP_TERM_MAX_ULPDU], *p = t + MPA_ULPDU_LEN_SIZE;
	struct rddp_error e = { UW_TERM_LAYER_LLP, UW_TERM_LLP_MPA, ecode, "setup" };
	struct ddp_hdr h = { .last = true,
			     .dv = DDP_VERSION,
			     .ulp_ctrl = (uint8_t)rdmap_op(RDMAP_TERMINATE)->ctrl,
			     .qn = DDP_QN_TERMINATE,
			     .msn = 1 };
	struct iovec iov[4];
	uint8_t scratch[16];
	struct fpdu_batch b;
	struct fpdu_tx tx;
	size_t n = ddp_hdr_encode(&h, p);
	n += rdmap_term_encode(&e, 0, NULL, 0, NULL, p + n);
	fpdu_tx_init(&tx, crc, false);
	fpdu_batch_init(&b, iov, 4, scratch, sizeof(scratch));
	if (fpdu_tx_append(&tx, &b, t, n, NULL, 0) == 0 &&
	    uw__sock_writev(c->fd, b.iov, b.niov) < 0) {
		/* best effort: the connection closes either way */
	}
}

/* The defaults for NULL; NULL when @p's private data cannot be sent or
 * a limit is out of range (keepalive_s: the kernel's TCP_KEEPIDLE takes
 * at most 32767 s, and would refuse more without a word to us). */
const struct uw_conn_param *uw__cm_param_or_default(const struct uw_conn_param *p)
{
	if (!p)
		return &default_param;
	if (p->private_data_len > MPA_PD_MAX_RFC - MPA_V2_BLOCK_LEN ||
	    (p->private_data_len && !p->private_data) || p->keepalive_s > UW_KEEPALIVE_MAX_S)
		return NULL;
	return p;
}

/* Whether @fd is a TCP socket a caller may hand over; nothing changes. */
static int check_fd(int fd)
{
	int type = 0;
	socklen_t tl = sizeof(type);
	if (fd < 0 || util_sys_getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) ||
	    type != SOCK_STREAM)
		return EINVAL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	if (util_sys_getsockname(fd, (struct sockaddr *)&ss, &sl) ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return EINVAL;
	return 0;
}

/* A caller's TCP socket becomes a connection of @id: an initiator's with
 * @param, else a request for the listener @id. uwarp makes it
 * non-blocking and close-on-exec (the engine's way) and owns it on 0; on
 * any error the socket is as the caller gave it. */
int uw__cm_hand_over(struct uw_cm_id_impl *id, int fd, const struct uw_conn_param *param)
{
	int rc = check_fd(fd);
	if (rc)
		return rc;
	struct uw_context *ctx = id->pub.context;
	pthread_mutex_lock(&ctx->lock);
	int fl = util_sys_fcntl(fd, F_GETFL, 0), fdfl = util_sys_fcntl(fd, F_GETFD, 0);
	if (!(param ? uw__cm_can_connect(id) : id->listening))
		rc = EINVAL;
	else if (fl < 0 || fdfl < 0 || util_sys_fcntl(fd, F_SETFL, fl | O_NONBLOCK) ||
		 util_sys_fcntl(fd, F_SETFD, fdfl | FD_CLOEXEC))
		rc = errno;
	else if ((rc = param ? uw__cm_start_connect(id, fd, param)
			     : uw__cm_take_accepted(id, fd))) {
		util_sys_fcntl(fd, F_SETFL, fl);
		util_sys_fcntl(fd, F_SETFD, fdfl);
	}
	if (!rc && param) {
		/* (still connecting: uw__cm_connected reads it again) */
		socklen_t sl = sizeof(id->pub.peer_addr);
		util_sys_getpeername(fd, (struct sockaddr *)&id->pub.peer_addr, &sl);
	}
	if (!rc)
		uw__kick(ctx);
	pthread_mutex_unlock(&ctx->lock);
	return rc;
}
