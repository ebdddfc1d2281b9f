/*
 * test_manual_wake.c: with manual progress, a program that sleeps in a
 * poll of its own on a channel's descriptor (the connection manager's
 * here) wakes for what the loop's last run set up. libuv applies a new
 * watcher when the loop next runs: a connection the run accepted was not
 * watched yet when the program went to sleep, so its MPA Request went
 * unread until something else woke the program (the ES-API's waits hung
 * so). The runtime rings the loop's async handle for every such change
 * (uw__kick), which the channel's descriptor reports.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <uwarp/verbs.h>

static void a_sleeper_on_the_channel_hears_of_an_accepted_connection(void **state)
{
	(void)state;
	struct uw_context_attr attr = { .progress = UW_PROGRESS_MANUAL };
	struct uw_context *ctx = uw_open(&attr);
	assert_non_null(ctx);
	struct uw_cm_channel *ch = uw_cm_create_channel(ctx);
	assert_non_null(ch);
	assert_int_equal(uw_cm_channel_nonblock(ch, 1), 0);
	struct uw_cm_id *l = uw_cm_create_id(ch, NULL);
	assert_non_null(l);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	assert_int_equal(uw_cm_listen(l, (struct sockaddr *)&a, 4), 0);
	a.sin_port = ((struct sockaddr_in *)&l->local_addr)->sin_port;

	/* A client whose TCP connection is in the listener's queue and
	 * whose MPA Request (RFC 5044 section 7.1: CRC, revision 1, no
	 * private data) is already in it */
	int c = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(c >= 0);
	assert_int_equal(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	static const uint8_t req[20] = { 'M', 'P', 'A', ' ', 'I', 'D', ' ',  'R', 'e', 'q',
					 ' ', 'F', 'r', 'a', 'm', 'e', 0x40, 1,   0,   0 };
	assert_int_equal(send(c, req, sizeof(req), 0), (ssize_t)sizeof(req));

	/* One run of the loop takes the connection (and cannot read it:
	 * its watcher starts with the next run); then the program sleeps
	 * on the channel's descriptor and runs the loop when it wakes, as
	 * a program with manual progress does. */
	struct uw_cm_event *e = NULL;
	assert_int_equal(uw_cm_get_event_timeout(ch, &e, 0), EAGAIN);
	int woke = 0;
	for (;;) {
		struct pollfd p = { ch->fd, POLLIN, 0 };
		int n = poll(&p, 1, 10000); /* (the bound of a hang, not a time to beat) */
		assert_int_equal(n, 1);
		woke++;
		int rc = uw_cm_get_event_timeout(ch, &e, 0);
		if (rc == 0)
			break;
		assert_int_equal(rc, EAGAIN);
		assert_true(woke < 100);
	}
	assert_int_equal(e->event, UW_CM_EVENT_CONNECT_REQUEST);
	struct uw_cm_id *id = e->id;
	assert_int_equal(uw_cm_ack_event(e), 0);
	assert_int_equal(uw_cm_reject(id, NULL, 0), 0);
	close(c);
	assert_int_equal(uw_cm_destroy_id(id), 0);
	assert_int_equal(uw_cm_destroy_id(l), 0);
	assert_int_equal(uw_cm_destroy_channel(ch), 0);
	assert_int_equal(uw_close(ctx), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(a_sleeper_on_the_channel_hears_of_an_accepted_connection),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
