/*
 * esock_env.h: what the preload's environment variables say, read by pure
 * functions (no getenv, no output): esock_policy.c feeds them the values
 * and says what they refused.
 */
#ifndef UWARP_ESOCK_ENV_H
#define UWARP_ESOCK_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ESOCK_ENV_PORTS_MAX 64

struct esock_ddpmode {
	bool all;   /* every TCP socket */
	int nports; /* else the sockets with one of these ports */
	uint16_t ports[ESOCK_ENV_PORTS_MAX];
};

/*
 * ESOCK_DDPMODE's value: "all" (any case), or ports (1 to 65535) separated
 * by commas and/or white space; NULL, empty or only separators: none.
 * Returns true with *m filled, or false with *m selecting nothing and @why
 * (@whylen bytes) saying what could not be read: the whole value is refused
 * rather than a part of it taken.
 */
bool esock_env_ddpmode(const char *v, struct esock_ddpmode *m, char *why, size_t whylen);

#endif
