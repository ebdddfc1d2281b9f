/*
 * rdmap_opcode.c: the RDMAP message table (RFC 5040 section 4, RFC 7306).
 */
#include "rdmap_opcode.h"

#include "rdmap_conn.h"
#include "rdmap_rx_ops.h"

#define UNTAGGED (DDP_UNTAGGED_HDR_LEN)
#define TAGGED (DDP_TAGGED_HDR_LEN)
/* Control word of a message's last segment: T, L, DDP version 1, RDMAP
 * version 1, opcode. A non-last segment clears L. */
#define CTRL(t, op)                                                      \
	(uint16_t)((t) | DDP_CTRL_L | DDP_VERSION << DDP_CTRL_DV_SHIFT | \
		   RDMAP_VERSION << RDMAP_CTRL_RV_SHIFT | (op))

static const struct rdmap_op ops[RDMAP_OPCODE_COUNT] = {
	[RDMAP_RDMA_WRITE] = { "RDMA Write", TAGGED, CTRL(DDP_CTRL_T, RDMAP_RDMA_WRITE),
			       RDMAP_QN_TAGGED, false, false, -1, rdmap_rx_write },
	[RDMAP_RDMA_READ_REQ] = { "RDMA Read Request", UNTAGGED + RDMAP_READ_REQ_LEN,
				  CTRL(0, RDMAP_RDMA_READ_REQ), DDP_QN_READ_REQ, false, true, 0,
				  rdmap_rx_read_req },
	[RDMAP_RDMA_READ_RESP] = { "RDMA Read Response", TAGGED,
				   CTRL(DDP_CTRL_T, RDMAP_RDMA_READ_RESP), RDMAP_QN_TAGGED, false,
				   false, -1, rdmap_rx_read_resp },
	[RDMAP_SEND] = { "Send", UNTAGGED, CTRL(0, RDMAP_SEND), DDP_QN_SEND, false, false, -1,
			 rdmap_rx_send },
	[RDMAP_SEND_INVAL] = { "Send with Invalidate", UNTAGGED, CTRL(0, RDMAP_SEND_INVAL),
			       DDP_QN_SEND, false, false, -1, rdmap_rx_send },
	[RDMAP_SEND_SE] = { "Send with SE", UNTAGGED, CTRL(0, RDMAP_SEND_SE), DDP_QN_SEND, false,
			    false, -1, rdmap_rx_send },
	[RDMAP_SEND_SE_INVAL] = { "Send with SE and Invalidate", UNTAGGED,
				  CTRL(0, RDMAP_SEND_SE_INVAL), DDP_QN_SEND, false, false, -1,
				  rdmap_rx_send },
	[RDMAP_TERMINATE] = { "Terminate", UNTAGGED + RDMAP_TERM_CTRL_LEN, CTRL(0, RDMAP_TERMINATE),
			      DDP_QN_TERMINATE, false, true, RDMAP_TERM_MAX_PAYLOAD,
			      rdmap_rx_terminate },
	[RDMAP_ATOMIC_REQ] = { "Atomic Request", UNTAGGED + RDMAP_ATOMIC_REQ_LEN,
			       CTRL(0, RDMAP_ATOMIC_REQ), DDP_QN_ATOMIC_REQ, true, true, 0,
			       rdmap_rx_atomic_req },
	[RDMAP_ATOMIC_RESP] = { "Atomic Response", UNTAGGED + RDMAP_ATOMIC_RESP_LEN,
				CTRL(0, RDMAP_ATOMIC_RESP), DDP_QN_ATOMIC_RESP, true, true, 0,
				rdmap_rx_atomic_resp },
	[RDMAP_IMMEDIATE] = { "Immediate Data", UNTAGGED, CTRL(0, RDMAP_IMMEDIATE), DDP_QN_SEND,
			      true, true, RDMAP_IMMEDIATE_LEN, rdmap_rx_immediate },
	[RDMAP_IMMEDIATE_SE] = { "Immediate Data with SE", UNTAGGED, CTRL(0, RDMAP_IMMEDIATE_SE),
				 DDP_QN_SEND, true, true, RDMAP_IMMEDIATE_LEN, rdmap_rx_immediate },
};

const struct rdmap_op *rdmap_op(unsigned opcode)
{
	if (opcode >= RDMAP_OPCODE_COUNT || !ops[opcode].name)
		return NULL;
	return &ops[opcode];
}

size_t rdmap_hdr_len(void *arg, const uint8_t ctrl[2])
{
	const struct rdmap_conn *c = arg;
	bool tagged = ctrl[0] & (DDP_CTRL_T >> 8);
	const struct rdmap_op *op = rdmap_op(ctrl[1] & RDMAP_CTRL_OPCODE_MASK);

	if (op && (op->qn == RDMAP_QN_TAGGED) == tagged && (!op->rfc7306 || !c || c->cfg.rfc7306))
		return op->hdr_len;
	return tagged ? TAGGED : UNTAGGED;
}
