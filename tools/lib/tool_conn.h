/*
 * tool_conn.h: why a tool's connection attempt failed, in one line with
 * the likely cause: a user pointed at a server that is not iWARP hears so,
 * and how long the tool waited for it, instead of "Connection timed out".
 */
#ifndef UWARP_TOOL_CONN_H
#define UWARP_TOOL_CONN_H

/* "@tool: @peer: <what @status means in setting up a connection>" on
 * stderr (uw_connect_strerror's words; an MPA Reply that never came says
 * the wait and that UWARP_MPA_REPLY_MS sets it) */
void tool_connect_failed(const char *tool, const char *peer, int status);

#endif
