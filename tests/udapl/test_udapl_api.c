/*
 * test_udapl_api: the DAT calls' promises, through Debian's registry
 * (libdat2) to uwarp's provider (ctest sets DAT_OVERRIDE to the build's
 * dat.conf). Two endpoints of one IA meet over loopback.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <dat2/udat.h>

#define SEC 1000000 /* DAT_TIMEOUT is in microseconds */

struct pair {
	DAT_IA_HANDLE ia;
	DAT_EVD_HANDLE async, cr, conn_a, conn_b, dto_a, dto_b;
	DAT_PZ_HANDLE pz;
	DAT_EP_HANDLE a, b; /* a connects, b accepts */
	DAT_PSP_HANDLE psp;
	DAT_CONN_QUAL qual;
	struct sockaddr_in to;
	char buf[8192];
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lctx;
	DAT_RMR_CONTEXT rctx;
};

#define OK(x) assert_int_equal((x), DAT_SUCCESS)

static int setup(void **state)
{
	static struct pair p;
	memset(&p, 0, sizeof(p));
	p.async = DAT_HANDLE_NULL;
	OK(dat_ia_open("uwarp", 8, &p.async, &p.ia));
	OK(dat_pz_create(p.ia, &p.pz));
	OK(dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CR_FLAG, &p.cr));
	OK(dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p.conn_a));
	OK(dat_evd_create(p.ia, 8, DAT_HANDLE_NULL, DAT_EVD_CONNECTION_FLAG, &p.conn_b));
	OK(dat_evd_create(p.ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &p.dto_a));
	OK(dat_evd_create(p.ia, 32, DAT_HANDLE_NULL, DAT_EVD_DTO_FLAG, &p.dto_b));
	OK(dat_ep_create(p.ia, p.pz, p.dto_a, p.dto_a, p.conn_a, NULL, &p.a));
	OK(dat_ep_create(p.ia, p.pz, p.dto_b, p.dto_b, p.conn_b, NULL, &p.b));
	OK(dat_psp_create_any(p.ia, &p.qual, p.cr, DAT_PSP_CONSUMER_FLAG, &p.psp));
	p.to.sin_family = AF_INET;
	p.to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	DAT_REGION_DESCRIPTION r = { .for_va = p.buf };
	DAT_VLEN got_len;
	DAT_VADDR got_va;
	OK(dat_lmr_create(p.ia, DAT_MEM_TYPE_VIRTUAL, r, sizeof(p.buf), p.pz, DAT_MEM_PRIV_ALL_FLAG,
			  DAT_VA_TYPE_VA, &p.lmr, &p.lctx, &p.rctx, &got_len, &got_va));
	*state = &p;
	return 0;
}

static int teardown(void **state)
{
	struct pair *p = *state;
	DAT_EVENT e;
	DAT_COUNT n;
	DAT_EP_STATE st;
	DAT_BOOLEAN rq, sq;
	/* both ends disconnected before their EPs go */
	for (int i = 0; i < 2; i++) {
		DAT_EP_HANDLE ep = i ? p->b : p->a;
		DAT_EVD_HANDLE ev = i ? p->conn_b : p->conn_a;
		if (dat_ep_get_status(ep, &st, &rq, &sq) == DAT_SUCCESS &&
		    st == DAT_EP_STATE_CONNECTED) {
			dat_ep_disconnect(ep, DAT_CLOSE_ABRUPT_FLAG);
			dat_evd_wait(ev, 2 * SEC, 1, &e, &n);
		}
	}
	OK(dat_psp_free(p->psp));
	OK(dat_ep_free(p->a));
	OK(dat_ep_free(p->b));
	OK(dat_lmr_free(p->lmr));
	DAT_EVD_HANDLE evds[] = { p->cr, p->conn_a, p->conn_b, p->dto_a, p->dto_b };
	for (size_t i = 0; i < sizeof(evds) / sizeof(evds[0]); i++)
		OK(dat_evd_free(evds[i]));
	OK(dat_pz_free(p->pz));
	OK(dat_ia_close(p->ia, DAT_CLOSE_ABRUPT_FLAG));
	return 0;
}

static DAT_EVENT wait_event(DAT_EVD_HANDLE evd)
{
	DAT_EVENT e;
	DAT_COUNT n;
	memset(&e, 0, sizeof(e));
	OK(dat_evd_wait(evd, 10 * SEC, 1, &e, &n));
	return e;
}

/* a connects with @pdata; b's consumer sees the request, and its private
 * data, and holds it */
static DAT_CR_HANDLE request(struct pair *p, const char *pdata)
{
	OK(dat_ep_connect(p->a, (DAT_IA_ADDRESS_PTR)&p->to, p->qual, 10 * SEC,
			  (DAT_COUNT)strlen(pdata) + 1, (DAT_PVOID)pdata, DAT_QOS_BEST_EFFORT,
			  DAT_CONNECT_DEFAULT_FLAG));
	DAT_EVENT e = wait_event(p->cr);
	assert_int_equal(e.event_number, DAT_CONNECTION_REQUEST_EVENT);
	DAT_CR_HANDLE cr = e.event_data.cr_arrival_event_data.cr_handle;
	DAT_CR_PARAM cp;
	OK(dat_cr_query(cr, DAT_CR_FIELD_ALL, &cp));
	assert_int_equal(cp.private_data_size, (DAT_COUNT)strlen(pdata) + 1);
	assert_string_equal((const char *)cp.private_data, pdata);
	return cr;
}

static void connect_pair(struct pair *p)
{
	DAT_CR_HANDLE cr = request(p, "hello");
	OK(dat_cr_accept(cr, p->b, 0, NULL));
	assert_int_equal(wait_event(p->conn_b).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	assert_int_equal(wait_event(p->conn_a).event_number, DAT_CONNECTION_EVENT_ESTABLISHED);
	/* each end names the other's port: a's is the one TCP gave it */
	DAT_EP_PARAM pa, pb;
	OK(dat_ep_query(p->a, DAT_EP_FIELD_ALL, &pa));
	OK(dat_ep_query(p->b, DAT_EP_FIELD_ALL, &pb));
	assert_int_equal(pa.remote_port_qual, p->qual);
	assert_int_equal(pb.local_port_qual, p->qual);
	assert_int_not_equal(pa.local_port_qual, 0);
	assert_int_equal(pb.remote_port_qual, pa.local_port_qual);
}

static DAT_LMR_TRIPLET seg(struct pair *p, size_t off, size_t len)
{
	return (DAT_LMR_TRIPLET){ .lmr_context = p->lctx,
				  .virtual_address = (DAT_VADDR)(uintptr_t)(p->buf + off),
				  .segment_length = len };
}

static void send_one(struct pair *p, size_t off, uint64_t cookie)
{
	DAT_LMR_TRIPLET s = seg(p, off, 16);
	DAT_DTO_COOKIE c = { .as_64 = cookie };
	OK(dat_ep_post_send(p->a, 1, &s, c, DAT_COMPLETION_DEFAULT_FLAG));
	DAT_EVENT e = wait_event(p->dto_a);
	assert_int_equal(e.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
}

/* dat_evd_wait returns once threshold events are queued, not before, and
 * says how many more are waiting */
static void wait_honours_threshold_and_counts_nmore(void **state)
{
	struct pair *p = *state;
	connect_pair(p);
	for (int i = 0; i < 3; i++) {
		DAT_LMR_TRIPLET r = seg(p, 4096 + (size_t)i * 64, 64);
		DAT_DTO_COOKIE c = { .as_64 = 100 + (uint64_t)i };
		OK(dat_ep_post_recv(p->b, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
	}
	send_one(p, 0, 1);
	send_one(p, 16, 2);
	DAT_EVENT e;
	DAT_COUNT nmore = -1;
	/* two receives have completed: a threshold of three is not met */
	assert_int_equal(DAT_GET_TYPE(dat_evd_wait(p->dto_b, SEC / 5, 3, &e, &nmore)),
			 DAT_TIMEOUT_EXPIRED);
	send_one(p, 32, 3);
	OK(dat_evd_wait(p->dto_b, 10 * SEC, 3, &e, &nmore));
	assert_int_equal(e.event_number, DAT_DTO_COMPLETION_EVENT);
	assert_int_equal(e.event_data.dto_completion_event_data.user_cookie.as_64, 100);
	assert_int_equal(nmore, 2);
	for (int i = 1; i < 3; i++) {
		OK(dat_evd_dequeue(p->dto_b, &e));
		assert_int_equal(e.event_data.dto_completion_event_data.user_cookie.as_64,
				 100 + (uint64_t)i);
		assert_int_equal(e.event_data.dto_completion_event_data.transfered_length, 16);
	}
	assert_int_equal(DAT_GET_TYPE(dat_evd_dequeue(p->dto_b, &e)), DAT_QUEUE_EMPTY);
}

/* a reject's private data reaches the active side's consumer */
static void reject_hands_over_its_private_data(void **state)
{
	struct pair *p = *state;
	DAT_CR_HANDLE cr = request(p, "may I?");
	const char no[] = "not today";
	OK(dat_cr_reject(cr, sizeof(no), (DAT_PVOID)no));
	DAT_EVENT e = wait_event(p->conn_a);
	assert_int_equal(e.event_number, DAT_CONNECTION_EVENT_PEER_REJECTED);
	assert_int_equal(e.event_data.connect_event_data.private_data_size, sizeof(no));
	assert_memory_equal(e.event_data.connect_event_data.private_data, no, sizeof(no));
}

/* a listener that never answers the MPA Request: the connect's own
 * timeout ends it */
static void connect_timeout_ends_a_silent_attempt(void **state)
{
	struct pair *p = *state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in at = p->to;
	socklen_t sl = sizeof(at);
	assert_int_equal(bind(fd, (struct sockaddr *)&at, sizeof(at)), 0);
	assert_int_equal(listen(fd, 4), 0); /* the kernel completes TCP's handshake; nobody reads */
	assert_int_equal(getsockname(fd, (struct sockaddr *)&at, &sl), 0);
	OK(dat_ep_connect(p->a, (DAT_IA_ADDRESS_PTR)&p->to, ntohs(at.sin_port), SEC / 4, 0, NULL,
			  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	assert_int_equal(wait_event(p->conn_a).event_number, DAT_CONNECTION_EVENT_TIMED_OUT);
	DAT_EP_STATE st;
	DAT_BOOLEAN rq, sq;
	OK(dat_ep_get_status(p->a, &st, &rq, &sq));
	assert_int_equal(st, DAT_EP_STATE_DISCONNECTED);
	close(fd);
}

/* nobody listening: UNREACHABLE, as DAT asks for every failure to reach
 * the peer */
static void connect_to_nobody_is_unreachable(void **state)
{
	struct pair *p = *state;
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in at = p->to;
	socklen_t sl = sizeof(at);
	assert_int_equal(bind(fd, (struct sockaddr *)&at, sizeof(at)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&at, &sl), 0);
	/* the port stays bound (no one else takes it) but nothing listens */
	OK(dat_ep_connect(p->a, (DAT_IA_ADDRESS_PTR)&p->to, ntohs(at.sin_port), 10 * SEC, 0, NULL,
			  DAT_QOS_BEST_EFFORT, DAT_CONNECT_DEFAULT_FLAG));
	assert_int_equal(wait_event(p->conn_a).event_number, DAT_CONNECTION_EVENT_UNREACHABLE);
	close(fd);
}

/* an RDMA Read into three local segments is one DTO: one completion with
 * the whole length, every byte where it belongs */
static void read_into_several_segments_completes_once(void **state)
{
	struct pair *p = *state;
	connect_pair(p);
	for (int i = 0; i < 3000; i++)
		p->buf[5000 + i] = (char)(i * 7 + 1);
	memset(p->buf, 0, 4096);
	DAT_LMR_TRIPLET l[3] = { seg(p, 0, 1000), seg(p, 1500, 1000), seg(p, 3000, 1000) };
	DAT_RMR_TRIPLET r = { .rmr_context = p->rctx,
			      .virtual_address = (DAT_VADDR)(uintptr_t)(p->buf + 5000),
			      .segment_length = 3000 };
	DAT_DTO_COOKIE c = { .as_64 = 77 };
	OK(dat_ep_post_rdma_read(p->a, 3, l, c, &r, DAT_COMPLETION_DEFAULT_FLAG));
	DAT_EVENT e = wait_event(p->dto_a);
	assert_int_equal(e.event_data.dto_completion_event_data.status, DAT_DTO_SUCCESS);
	assert_int_equal(e.event_data.dto_completion_event_data.user_cookie.as_64, 77);
	assert_int_equal(e.event_data.dto_completion_event_data.transfered_length, 3000);
	assert_memory_equal(p->buf, p->buf + 5000, 1000);
	assert_memory_equal(p->buf + 1500, p->buf + 6000, 1000);
	assert_memory_equal(p->buf + 3000, p->buf + 7000, 1000);
	DAT_EVENT more;
	assert_int_equal(DAT_GET_TYPE(dat_evd_dequeue(p->dto_a, &more)), DAT_QUEUE_EMPTY);
}

/* receives outstanding when the peer disconnects complete, flushed */
static void disconnect_flushes_posted_receives(void **state)
{
	struct pair *p = *state;
	connect_pair(p);
	for (int i = 0; i < 2; i++) {
		DAT_LMR_TRIPLET r = seg(p, (size_t)i * 64, 64);
		DAT_DTO_COOKIE c = { .as_64 = 10 + (uint64_t)i };
		OK(dat_ep_post_recv(p->b, 1, &r, c, DAT_COMPLETION_DEFAULT_FLAG));
	}
	OK(dat_ep_disconnect(p->a, DAT_CLOSE_ABRUPT_FLAG));
	assert_int_equal(wait_event(p->conn_a).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	assert_int_equal(wait_event(p->conn_b).event_number, DAT_CONNECTION_EVENT_DISCONNECTED);
	for (int i = 0; i < 2; i++) {
		DAT_EVENT e = wait_event(p->dto_b);
		assert_int_equal(e.event_data.dto_completion_event_data.status,
				 DAT_DTO_ERR_FLUSHED);
		assert_int_equal(e.event_data.dto_completion_event_data.user_cookie.as_64,
				 10 + (uint64_t)i);
	}
}

/* what is not built says so, and wrong arguments are refused */
static void refusals_name_their_reason(void **state)
{
	struct pair *p = *state;
	DAT_SRQ_ATTR sa = { .max_recv_dtos = 4, .max_recv_iov = 1 };
	DAT_SRQ_HANDLE srq;
	assert_int_equal(DAT_GET_TYPE(dat_srq_create(p->ia, p->pz, &sa, &srq)),
			 DAT_NOT_IMPLEMENTED);
	assert_int_equal(
		DAT_GET_TYPE(dat_ep_dup_connect(p->a, p->b, SEC, 0, NULL, DAT_QOS_BEST_EFFORT)),
		DAT_NOT_IMPLEMENTED);
	/* an EVD where an EP belongs */
	DAT_LMR_TRIPLET s = seg(p, 0, 16);
	DAT_DTO_COOKIE c = { .as_64 = 0 };
	assert_int_equal(DAT_GET_TYPE(dat_ep_post_send((DAT_EP_HANDLE)p->dto_a, 1, &s, c,
						       DAT_COMPLETION_DEFAULT_FLAG)),
			 DAT_INVALID_HANDLE);
	/* a send on an EP that is not connected */
	assert_int_equal(
		DAT_GET_TYPE(dat_ep_post_send(p->a, 1, &s, c, DAT_COMPLETION_DEFAULT_FLAG)),
		DAT_INVALID_STATE);
	/* an empty region */
	DAT_REGION_DESCRIPTION r = { .for_va = p->buf };
	DAT_LMR_HANDLE lmr;
	DAT_LMR_CONTEXT lc;
	DAT_RMR_CONTEXT rc;
	DAT_VLEN len;
	DAT_VADDR va;
	assert_int_equal(DAT_GET_TYPE(dat_lmr_create(p->ia, DAT_MEM_TYPE_VIRTUAL, r, 0, p->pz,
						     DAT_MEM_PRIV_ALL_FLAG, DAT_VA_TYPE_VA, &lmr,
						     &lc, &rc, &len, &va)),
			 DAT_LENGTH_ERROR);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(wait_honours_threshold_and_counts_nmore, setup,
						teardown),
		cmocka_unit_test_setup_teardown(reject_hands_over_its_private_data, setup,
						teardown),
		cmocka_unit_test_setup_teardown(connect_timeout_ends_a_silent_attempt, setup,
						teardown),
		cmocka_unit_test_setup_teardown(connect_to_nobody_is_unreachable, setup, teardown),
		cmocka_unit_test_setup_teardown(read_into_several_segments_completes_once, setup,
						teardown),
		cmocka_unit_test_setup_teardown(disconnect_flushes_posted_receives, setup,
						teardown),
		cmocka_unit_test_setup_teardown(refusals_name_their_reason, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
