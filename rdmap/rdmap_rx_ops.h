/*
 * rdmap_rx_ops.h: the per-opcode receive handlers the opcode table points
 * at (internal to rdmap/).
 */
#ifndef UWARP_RDMAP_RX_OPS_H
#define UWARP_RDMAP_RX_OPS_H

#include "rdmap_conn.h"

int rdmap_rx_write(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_read_req(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_read_resp(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_send(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_terminate(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_atomic_req(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_atomic_resp(struct rdmap_conn *c, struct rdmap_place *pl);
int rdmap_rx_immediate(struct rdmap_conn *c, struct rdmap_place *pl);

#endif
