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

/*
 * ESOCK_PEEK_MS's value: how long a DDP-mode server waits for a client's
 * first bytes, 0 to 60000 ms; NULL or empty: the default. Returns false
 * (and *ms the default) for anything else.
 */
#define UTIL_PEEK_MS_DEFAULT 200
bool util_ddpmode_peek_ms(const char *v, unsigned *ms);

/*
 * What a TCP client's first bytes (peeked, @n of them; 0: the stream
 * ended) say of it: 1 they open an MPA Request (RFC 5044 7.1: its 16-byte
 * key), 0 anything else, -1 a part of the key so far (wait for more).
 */
int util_mpa_request_verdict(const uint8_t *b, size_t n);
#define UTIL_MPA_KEY_LEN 16

/* Does @m select a socket with this port (local or remote; -1: none)? */
bool util_ddpmode_port(const struct util_ddpmode *m, int port);

#endif
