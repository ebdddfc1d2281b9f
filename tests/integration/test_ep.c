/*
 * test_ep.c: endpoints (uwarp/ep.h) over loopback: connect and accept with
 * private data both ways, a Send, an RDMA Write into an advertised buffer,
 * IPv4 and IPv6 to one listener, and each error the header promises:
 * refused, rejected, unresolvable, timed out, busy listener, bad arguments.
 * The server side runs in a thread with its own context.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <uwarp/ep.h>

struct ad { /* what the client tells the server: where to write */
	uint64_t addr;
	uint32_t rkey;
	char text[20];
};

static char port[16];

static void port_of(struct uw_ep *l)
{
	const struct sockaddr_storage *ss = &uw_ep_id(l)->local_addr;
	uint16_t p = ss->ss_family == AF_INET6 ? ((const struct sockaddr_in6 *)ss)->sin6_port
					       : ((const struct sockaddr_in *)ss)->sin_port;
	snprintf(port, sizeof(port), "%u", ntohs(p));
}

/* The server: per connection, check the peer's private data, take its ad,
 * write a word into its buffer, then Send "done". */
struct server {
	struct uw_ep *l;
	int conns;
	int errors;
	char seen[32];
};

static void *serve(void *arg)
{
	struct server *s = arg;
	for (int k = 0; k < s->conns; k++) {
		struct uw_ep *ep = uw_ep_get_request(s->l, 10000);
		if (!ep) {
			s->errors++;
			return NULL;
		}
		uint16_t n;
		const char *pd = uw_ep_peer_data(ep, &n);
		if (!pd || n > sizeof(s->seen) - 1)
			s->errors++;
		else
			memcpy(s->seen, pd, n);
		struct ad ad;
		struct uw_mr *mr = uw_reg_mr(uw_ep_pd(ep), &ad, sizeof(ad), UW_ACCESS_LOCAL_WRITE);
		struct uw_sge sge = { (uintptr_t)&ad, sizeof(ad), mr->lkey };
		struct uw_recv_wr rwr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 };
		struct uw_wc wc;
		if (uw_post_recv(uw_ep_qp(ep), &rwr, NULL) || uw_ep_accept(ep, 10000) ||
		    uw_ep_wait(ep, &wc, 10000) != 1 || wc.status || wc.byte_len != sizeof(ad) ||
		    strcmp(ad.text, "where to write")) {
			s->errors++;
		} else {
			static const char word[] = "written by the server";
			static const char done[] = "done";
			struct uw_send_wr w = { .wr_id = 2,
						.sg_list = &(struct uw_sge){ (uintptr_t)word,
									     sizeof(word), 0 },
						.num_sge = 1,
						.opcode = UW_WR_RDMA_WRITE,
						.send_flags = UW_SEND_INLINE,
						.rdma = { ad.addr, ad.rkey } };
			struct uw_send_wr d = { .wr_id = 3,
						.sg_list = &(struct uw_sge){ (uintptr_t)done,
									     sizeof(done), 0 },
						.num_sge = 1,
						.opcode = UW_WR_SEND,
						.send_flags = UW_SEND_INLINE | UW_SEND_SIGNALED };
			w.next = &d;
			if (uw_post_send(uw_ep_qp(ep), &w, NULL) ||
			    uw_ep_wait(ep, &wc, 10000) != 1 || wc.status || wc.wr_id != 3)
				s->errors++;
			/* the client closes first: wait for its disconnect */
			struct uw_recv_wr last = { .wr_id = 4, .sg_list = &sge, .num_sge = 1 };
			uw_post_recv(uw_ep_qp(ep), &last, NULL);
			if (uw_ep_wait(ep, &wc, 10000) != 1 || wc.status != UW_WC_WR_FLUSH_ERR)
				s->errors++;
		}
		uw_dereg_mr(mr);
		uw_ep_close(ep);
	}
	return NULL;
}

static void client_round(const char *host)
{
	static const char req[] = "client says hi";
	struct uw_conn_param p = { .private_data = req, .private_data_len = sizeof(req) };
	struct uw_ep_attr a = { .param = &p };
	struct uw_ep *ep = uw_ep_connect(host, port, &a);
	assert_non_null(ep);
	uint16_t n;
	const char *rep = uw_ep_peer_data(ep, &n);
	assert_int_equal(n, sizeof("server says hi"));
	assert_string_equal(rep, "server says hi");

	char sink[64] = { 0 }, done[8] = { 0 };
	struct uw_mr *mr = uw_reg_mr(uw_ep_pd(ep), sink, sizeof(sink),
				     UW_ACCESS_LOCAL_WRITE | UW_ACCESS_REMOTE_WRITE);
	struct uw_mr *dmr = uw_reg_mr(uw_ep_pd(ep), done, sizeof(done), UW_ACCESS_LOCAL_WRITE);
	assert_non_null(mr);
	struct uw_recv_wr r = { .wr_id = 7,
				.sg_list = &(struct uw_sge){ (uintptr_t)done, sizeof(done),
							     dmr->lkey },
				.num_sge = 1 };
	assert_int_equal(uw_post_recv(uw_ep_qp(ep), &r, NULL), 0);
	struct ad ad = { (uintptr_t)sink, mr->rkey, "where to write" };
	struct uw_send_wr s = { .wr_id = 8,
				.sg_list = &(struct uw_sge){ (uintptr_t)&ad, sizeof(ad), 0 },
				.num_sge = 1,
				.opcode = UW_WR_SEND,
				.send_flags = UW_SEND_INLINE };
	assert_int_equal(uw_post_send(uw_ep_qp(ep), &s, NULL), 0);
	struct uw_wc wc;
	assert_int_equal(uw_ep_wait(ep, &wc, 10000), 1);
	assert_int_equal(wc.status, UW_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 7);
	assert_string_equal(done, "done");
	/* the Write came before the Send on the same stream */
	assert_string_equal(sink, "written by the server");
	assert_int_equal(uw_dereg_mr(mr), 0);
	assert_int_equal(uw_dereg_mr(dmr), 0);
	assert_int_equal(uw_ep_close(ep), 0);
}

static void connect_accept_send_and_write_over_ipv4_and_ipv6(void **state)
{
	static const char rep[] = "server says hi";
	struct uw_conn_param p = { .private_data = rep, .private_data_len = sizeof(rep) };
	struct uw_ep_attr a = { .param = &p };
	struct server s = { .conns = 2 };
	s.l = uw_ep_listen(NULL, "0", &a); /* every address: IPv6 and IPv4 */
	assert_non_null(s.l);
	port_of(s.l);
	pthread_t t;
	pthread_create(&t, NULL, serve, &s);
	client_round("127.0.0.1");
	client_round("::1");
	pthread_join(t, NULL);
	assert_int_equal(s.errors, 0);
	assert_string_equal(s.seen, "client says hi");
	assert_int_equal(uw_ep_close(s.l), 0);
}

static void *reject_one(void *arg)
{
	struct uw_ep *ep = uw_ep_get_request(arg, 10000);
	if (ep)
		uw_ep_reject(ep, "go away", 7);
	return ep;
}

static void refused_rejected_and_unresolvable(void **state)
{
	struct uw_ep *l = uw_ep_listen("127.0.0.1", "0", NULL);
	assert_non_null(l);
	port_of(l);
	pthread_t t;
	pthread_create(&t, NULL, reject_one, l);
	errno = 0;
	assert_null(uw_ep_connect("127.0.0.1", port, NULL));
	assert_int_equal(errno, ECONNREFUSED);
	void *got;
	pthread_join(t, &got);
	assert_non_null(got);
	/* nothing listens once the listener is closed */
	assert_int_equal(uw_ep_close(l), 0);
	errno = 0;
	assert_null(uw_ep_connect("127.0.0.1", port, NULL));
	assert_int_equal(errno, ECONNREFUSED);
	/* a service name /etc/services does not know: no DNS is asked */
	errno = 0;
	assert_null(uw_ep_connect("127.0.0.1", "no-such-service-here", NULL));
	assert_int_equal(errno, ENOENT);
	errno = 0;
	assert_null(uw_ep_connect(NULL, "1", NULL));
	assert_int_equal(errno, EINVAL);
}

static void *impatient_client(void *arg)
{
	struct uw_ep_attr quick = { .timeout_ms = 300 };
	struct uw_ep *ep = uw_ep_connect("127.0.0.1", port, &quick);
	intptr_t rc = ep ? 0 : errno;
	if (ep)
		uw_ep_close(ep);
	return (void *)rc;
}

static void timeouts_busy_listener_and_bad_arguments(void **state)
{
	struct uw_ep *l = uw_ep_listen("127.0.0.1", "0", NULL);
	assert_non_null(l);
	port_of(l);
	/* two listeners on one port */
	errno = 0;
	assert_null(uw_ep_listen("127.0.0.1", port, NULL));
	assert_int_equal(errno, EADDRINUSE);
	errno = 0;
	assert_null(uw_ep_get_request(l, 50));
	assert_int_equal(errno, ETIMEDOUT);

	/* a request taken but not yet accepted keeps the listener busy; the
	 * client gives up after its own timeout, and accepting it then fails */
	pthread_t t;
	pthread_create(&t, NULL, impatient_client, NULL);
	struct uw_ep *req = uw_ep_get_request(l, 10000);
	assert_non_null(req);
	assert_int_equal(uw_ep_close(l), EBUSY);
	void *rc;
	pthread_join(t, &rc);
	/* TCP up, no MPA Reply: ETIME, not a TCP timeout */
	assert_int_equal((intptr_t)rc, ETIME);
	assert_int_not_equal(uw_ep_accept(req, 2000), 0);
	assert_int_equal(uw_ep_close(req), 0);

	struct uw_wc wc;
	assert_int_equal(uw_ep_wait(NULL, &wc, 0), -EINVAL);
	assert_int_equal(uw_ep_wait(l, &wc, 0), -EINVAL); /* a listener has no CQ */
	assert_int_equal(uw_ep_accept(l, 0), EINVAL);
	assert_int_equal(uw_ep_reject(l, NULL, 0), EINVAL);
	assert_null(uw_ep_get_request(NULL, 0));
	assert_int_equal(uw_ep_close(NULL), EINVAL);
	assert_int_equal(uw_ep_close(l), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(connect_accept_send_and_write_over_ipv4_and_ipv6),
		cmocka_unit_test(refused_rejected_and_unresolvable),
		cmocka_unit_test(timeouts_busy_listener_and_bad_arguments),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
