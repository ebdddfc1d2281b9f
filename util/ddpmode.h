/*
 * ddpmode.h: which TCP sockets ESOCK_DDPMODE puts in DDP mode, read by
 * pure functions (no getenv, no output). Both libraries that read the
 * variable use it: the preload (esock/esock_policy.c) and the ES-API on
 * sockets the system made (exs/exs_ddp.c); each feeds in the value and
 * says what was refused.
 */
#ifndef UWARP_UTIL_DDPMODE_H
#define UWARP_UTIL_DDPMODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define UTIL_DDPMODE_PORTS_MAX 64

struct util_ddpmode {
	bool all;   /* every TCP socket */
	int nports; /* else the sockets with one of these ports */
	uint16_t ports[UTIL_DDPMODE_PORTS_MAX];
};

/*
 * ESOCK_DDPMODE's value: "all" (any case), or ports (1 to 65535) separated
 * by commas and/or white space; NULL, empty or only separators: none.
 * Returns true with *m filled, or false with *m selecting nothing and @why
 * (@whylen bytes) saying what could not be read: the whole value is refused
 * rather than a part of it taken.
 */
bool util_ddpmode_parse(const char *v, struct util_ddpmode *m, char *why, size_t whylen);

/* an IPv4 or IPv6 address's port; -1 for NULL or another family */
int util_sockaddr_port(const struct sockaddr *sa);

/* Does @m select a socket with this port (local or remote; -1: none)? */
bool util_ddpmode_port(const struct util_ddpmode *m, int port);

#endif
