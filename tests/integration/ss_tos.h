/*
 * ss_tos.h: the kernel's view of a TCP socket's type of service, as
 * iproute2's ss reports it (`ss --tos`), for the tests of uw_cm_set_tos and
 * RDMA_OPTION_ID_TOS: something uwarp did not write says what the socket
 * carries.
 */
#ifndef UWARP_TESTS_SS_TOS_H
#define UWARP_TESTS_SS_TOS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Does an established TCP socket whose @side ("sport" or "dport") is
 * @port carry @want ("tos:0x28")? */
static inline bool ss_tos(const char *side, uint16_t port, const char *want)
{
	char cmd[160], line[512];
	snprintf(cmd, sizeof(cmd), "ss -tnH --tos state established '( %s = :%u )' 2>/dev/null",
		 side, port);
	FILE *f = popen(cmd, "r");
	bool found = false;
	while (f && fgets(line, sizeof(line), f))
		found |= strstr(line, want) != NULL;
	if (f)
		pclose(f);
	return found;
}

#endif
