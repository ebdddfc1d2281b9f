/*
 * udapl_cno.c: consumer notification objects. A CNO triggers when an
 * enabled EVD attached to it has an event; dat_cno_wait sleeps until one
 * does and names it. Its descriptor (dat_cno_fd_create) is an epoll set
 * of the attached EVDs' wait descriptors, so any event loop can wait on
 * it; dat_cno_trigger then names the EVD. OS wait proxy agents are not
 * supported (the registry's own providers do not support them either).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "udapl_internal.h"
#include "util/clock.h"
#include "util/evfd.h"

static bool agent_is_null(DAT_OS_WAIT_PROXY_AGENT a)
{
	return !a.proxy_agent_func && !a.instance_data;
}

static DAT_RETURN make(struct ud_ia *ia, struct ud_cno **out)
{
	struct ud_cno *c = calloc(1, sizeof(*c));
	if (!c)
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_MEMORY);
	c->epfd = epoll_create1(EPOLL_CLOEXEC);
	c->kick = util_evfd_open();
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	if (c->epfd < 0 || c->kick < 0 || epoll_ctl(c->epfd, EPOLL_CTL_ADD, c->kick, &ev)) {
		if (c->epfd >= 0)
			close(c->epfd);
		if (c->kick >= 0)
			close(c->kick);
		free(c);
		return UD_ERR(DAT_INSUFFICIENT_RESOURCES, DAT_RESOURCE_DEVICE);
	}
	pthread_mutex_lock(&ia->mu);
	ud_obj_init(ia, &c->h, UD_MAGIC_CNO, DAT_HANDLE_TYPE_CNO);
	pthread_mutex_unlock(&ia->mu);
	*out = c;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_cno_create(DAT_IA_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent,
				 DAT_CNO_HANDLE *out)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!agent_is_null(agent))
		return UD_NOT_IMPLEMENTED;
	if (!out)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	struct ud_cno *c;
	DAT_RETURN rc = make(ia, &c);
	if (rc == DAT_SUCCESS)
		*out = c;
	return rc;
}

DAT_RETURN DAT_API ud_cno_fd_create(DAT_IA_HANDLE h, DAT_FD *fd, DAT_CNO_HANDLE *out)
{
	struct ud_ia *ia = h;
	if (!ud_valid(ia, UD_MAGIC_IA))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_IA);
	if (!fd || !out)
		return UD_ERR(DAT_INVALID_PARAMETER, fd ? DAT_INVALID_ARG3 : DAT_INVALID_ARG2);
	struct ud_cno *c;
	DAT_RETURN rc = make(ia, &c);
	if (rc == DAT_SUCCESS) {
		*fd = c->epfd;
		*out = c;
	}
	return rc;
}

DAT_RETURN DAT_API ud_cno_modify_agent(DAT_CNO_HANDLE h, DAT_OS_WAIT_PROXY_AGENT agent)
{
	if (!ud_valid(h, UD_MAGIC_CNO))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	return agent_is_null(agent) ? DAT_SUCCESS : UD_NOT_IMPLEMENTED;
}

DAT_RETURN DAT_API ud_cno_query(DAT_CNO_HANDLE h, DAT_CNO_PARAM_MASK m, DAT_CNO_PARAM *p)
{
	struct ud_cno *c = h;
	if (!ud_valid(c, UD_MAGIC_CNO))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	if (!p)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	(void)m;
	p->ia_handle = c->h.ia;
	p->proxy_type = DAT_PROXY_TYPE_FD;
	p->proxy.fd = c->epfd;
	return DAT_SUCCESS;
}

void ud_cno_attach(struct ud_cno *c, struct ud_evd *e)
{
	e->cno = c;
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = e };
	epoll_ctl(c->epfd, EPOLL_CTL_ADD, e->efd, &ev);
	if (e->ch)
		epoll_ctl(c->epfd, EPOLL_CTL_ADD, e->ch->fd, &ev);
	ud_evd_arm(e);
}

void ud_cno_detach(struct ud_cno *c, struct ud_evd *e)
{
	epoll_ctl(c->epfd, EPOLL_CTL_DEL, e->efd, NULL);
	if (e->ch)
		epoll_ctl(c->epfd, EPOLL_CTL_DEL, e->ch->fd, NULL);
	e->cno = NULL;
}

void ud_cno_kick(struct ud_cno *c) { util_evfd_raise(c->kick); }

/* an enabled attached EVD with an event, or NULL; every attached CQ armed
 * again on the way (under ia->mu) */
static struct ud_evd *ready(struct ud_cno *c)
{
	struct ud_evd *found = NULL;
	struct ud_obj *o;
	util_list_for_each(o, &c->h.ia->objs, link) {
		if (o->magic != UD_MAGIC_EVD)
			continue;
		struct ud_evd *e = (struct ud_evd *)o;
		if (e->cno != c)
			continue;
		if (!found && e->enabled && ud_evd_count(e))
			found = e;
		ud_evd_arm(e);
	}
	return found;
}

static void quiet(struct ud_cno *c)
{
	util_evfd_lower(c->kick);
	struct ud_obj *o;
	util_list_for_each(o, &c->h.ia->objs, link)
		if (o->magic == UD_MAGIC_EVD && ((struct ud_evd *)o)->cno == c) {
			struct ud_evd *e = (struct ud_evd *)o;
			struct uw_cq *fired;
			while (e->ch && !uw_get_cq_event(e->ch, &fired, NULL))
				uw_ack_cq_events(fired, 1);
		}
}

DAT_RETURN DAT_API ud_cno_wait(DAT_CNO_HANDLE h, DAT_TIMEOUT timeout, DAT_EVD_HANDLE *evd)
{
	struct ud_cno *c = h;
	if (!ud_valid(c, UD_MAGIC_CNO))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	if (!evd)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG3);
	struct ud_ia *ia = c->h.ia;
	uint64_t deadline =
		timeout == DAT_TIMEOUT_INFINITE ? 0 : util_now_ms() + (timeout + 999) / 1000;
	pthread_mutex_lock(&ia->mu);
	c->waiters++;
	DAT_RETURN rc;
	for (;;) {
		quiet(c);
		struct ud_evd *e = ready(c);
		if (e) {
			*evd = e;
			rc = DAT_SUCCESS;
			break;
		}
		int left = -1;
		if (timeout != DAT_TIMEOUT_INFINITE) {
			uint64_t now = util_now_ms();
			if (now >= deadline) {
				rc = UD_ERR(DAT_TIMEOUT_EXPIRED, DAT_NO_SUBTYPE);
				break;
			}
			left = (int)(deadline - now);
		}
		struct pollfd p = { c->epfd, POLLIN, 0 };
		pthread_mutex_unlock(&ia->mu);
		poll(&p, 1, left);
		pthread_mutex_lock(&ia->mu);
	}
	c->waiters--;
	pthread_mutex_unlock(&ia->mu);
	return rc;
}

DAT_RETURN DAT_API ud_cno_trigger(DAT_CNO_HANDLE h, DAT_EVD_HANDLE *evd)
{
	struct ud_cno *c = h;
	if (!ud_valid(c, UD_MAGIC_CNO))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	if (!evd)
		return UD_ERR(DAT_INVALID_PARAMETER, DAT_INVALID_ARG2);
	pthread_mutex_lock(&c->h.ia->mu);
	quiet(c);
	struct ud_evd *e = ready(c);
	pthread_mutex_unlock(&c->h.ia->mu);
	if (!e)
		return UD_ERR(DAT_QUEUE_EMPTY, DAT_NO_SUBTYPE);
	*evd = e;
	return DAT_SUCCESS;
}

DAT_RETURN DAT_API ud_cno_free(DAT_CNO_HANDLE h)
{
	struct ud_cno *c = h;
	if (!ud_valid(c, UD_MAGIC_CNO))
		return UD_ERR(DAT_INVALID_HANDLE, DAT_INVALID_HANDLE_CNO);
	struct ud_ia *ia = c->h.ia;
	pthread_mutex_lock(&ia->mu);
	bool used = c->waiters > 0;
	struct ud_obj *o;
	util_list_for_each(o, &ia->objs, link)
		used |= o->magic == UD_MAGIC_EVD && ((struct ud_evd *)o)->cno == c;
	if (used) {
		pthread_mutex_unlock(&ia->mu);
		return UD_ERR(DAT_INVALID_STATE, DAT_INVALID_STATE_CNO_IN_USE);
	}
	ud_obj_unlink(&c->h);
	pthread_mutex_unlock(&ia->mu);
	close(c->epfd);
	close(c->kick);
	free(c);
	return DAT_SUCCESS;
}
