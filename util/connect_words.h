/*
 * connect_words.h: what a connection attempt's failure status means in
 * setting up an iWARP connection (header-only): the runtime's
 * uw_connect_strerror and the tools (which may reach uwarp only through
 * the ES-API's library) say the same.
 */
#ifndef UWARP_UTIL_CONNECT_WORDS_H
#define UWARP_UTIL_CONNECT_WORDS_H

#include <errno.h>

/* the words for @status, or NULL when strerror's say it */
static inline const char *util_connect_words(int status)
{
	switch (status) {
	case ETIME: /* TCP up, the Request sent, no Reply by the MPA timeout */
		return "the peer accepted the TCP connection but sent no MPA Reply in time "
		       "(not an iWARP peer, or its program did not accept)";
	case EPROTO:
		return "the peer answered with bytes that are not an MPA Reply (not an iWARP "
		       "peer?)";
	case ECONNRESET:
	case EPIPE:
		return "the peer closed the connection before its MPA Reply (not an iWARP peer, "
		       "or it refused us)";
	case ECONNREFUSED:
		return "refused: nothing listens on that port, or the peer rejected the connection "
		       "or its MPA parameters";
	case ETIMEDOUT:
		return "the TCP connection did not come up in time (no route, or the host is down)";
	}
	return 0;
}

#endif
