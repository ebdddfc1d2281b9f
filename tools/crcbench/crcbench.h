/* crcbench.h: what the parts of uwarp-crcbench share. */
#ifndef UWARP_CRCBENCH_H
#define UWARP_CRCBENCH_H

#include <stdint.h>
#include "util/clock.h"

/* Keeps the compiler from discarding the CRCs. */
extern volatile uint32_t crcbench_sink;
/* --order: the sender's CRC before or after the kernel's copy. */
int crcbench_order(double seconds);

#endif
