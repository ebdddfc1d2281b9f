/* hello_send: connect to an iWARP peer and Send it one message. */
#include <stdio.h>
#include <uwarp/ep.h>

int main(int argc, char **argv)
{
	struct uw_ep *ep =
		uw_ep_connect(argc > 1 ? argv[1] : "127.0.0.1", argc > 2 ? argv[2] : "7471", NULL);
	if (!ep)
		return perror("uw_ep_connect"), 1;
	char msg[] = "hello over iWARP";
	struct uw_send_wr wr = { .sg_list = &(struct uw_sge){ (uintptr_t)msg, sizeof(msg), 0 },
				 .num_sge = 1,
				 .opcode = UW_WR_SEND,
				 .send_flags = UW_SEND_SIGNALED | UW_SEND_INLINE };
	struct uw_wc wc = { .status = UW_WC_FATAL_ERR };
	if (!uw_post_send(uw_ep_qp(ep), &wr, NULL) && uw_ep_wait(ep, &wc, 5000) == 1)
		printf("sent %zu bytes: %s\n", sizeof(msg), uw_wc_status_str(wc.status));
	uw_ep_close(ep);
	return wc.status != UW_WC_SUCCESS;
}
