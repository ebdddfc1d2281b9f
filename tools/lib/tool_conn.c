/*
 * tool_conn.c: a failed connection attempt, and a Terminate, in words
 * (tool_conn.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uwarp/verbs.h>

#include "tool_conn.h"
#include "util/connect_words.h"
#include "util/env_ms.h"

void tool_connect_failed(const char *tool, const char *peer, int status)
{
	if (status == ETIME) {
		/* the context took the same value (and said so if it was bad) */
		unsigned ms = UW_MPA_REPLY_MS_DEFAULT;
		util_parse_ms(getenv("UWARP_MPA_REPLY_MS"), 1, UW_MPA_REPLY_MS_MAX, &ms);
		fprintf(stderr,
			"%s: %s: the peer accepted TCP but sent no MPA Reply within %u ms: "
			"not an iWARP peer, or its program did not accept "
			"(UWARP_MPA_REPLY_MS sets the wait)\n",
			tool, peer, ms);
		return;
	}
	const char *w = util_connect_words(status);
	fprintf(stderr, "%s: %s: %s\n", tool, peer, w ? w : strerror(status));
}

bool tool_report_terminate(FILE *f, const char *who, const struct uw_cm_event *e)
{
	if (e->event != UW_CM_EVENT_DISCONNECTED || !e->terminated)
		return false;
	fprintf(f, "%s: Terminate %s: layer %u type %u code 0x%02x%s\n", who,
		e->term_remote ? "from the peer" : "sent to the peer", e->term_layer, e->term_etype,
		e->term_ecode,
		!e->term_remote      ? ""
		: e->term_siw_layout ? " (siw's bit layout)"
				     : " (RFC 5040 layout)");
	return true;
}
