/*
 * tool_conn.h: a tool's connection in words. Why an attempt failed, in
 * one line with the likely cause: a user pointed at a server that is not
 * iWARP hears so, and how long the tool waited for it, instead of
 * "Connection timed out". And the Terminate that ended one.
 */
#ifndef UWARP_TOOL_CONN_H
#define UWARP_TOOL_CONN_H

#include <stdbool.h>
#include <stdio.h>

/* "@tool: @peer: <what @status means in setting up a connection>" on
 * stderr (uw_connect_strerror's words; an MPA Reply that never came says
 * the wait and that UWARP_MPA_REPLY_MS sets it) */
void tool_connect_failed(const char *tool, const char *peer, int status);

struct uw_cm_event;
/* When @e is a disconnection a Terminate caused: "@who: Terminate sent to
 * the peer: layer L type T code 0xCC" (RFC 5040 section 7.2's fields), or
 * "from the peer" and the bit layout it came in, on @f; returns whether it
 * was one. Tests tell uwarp's answer to a bad FPDU by this line. */
bool tool_report_terminate(FILE *f, const char *who, const struct uw_cm_event *e);

#endif
