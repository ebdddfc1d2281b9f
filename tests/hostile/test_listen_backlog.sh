#!/bin/bash
# test_listen_backlog.sh BUILD_DIR: uwarp's listeners take the system's
# largest queue of TCP connections (net.core.somaxconn), whatever backlog
# the program asked for: uwarp runs the MPA exchange after taking each
# connection, and a flood of connects to a fresh listener with exs-pump's
# 8 met SYN retransmissions. For a listening socket ss shows the queue's
# size as Send-Q.
set -u
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
want=$(cat /proc/sys/net/core/somaxconn)

# check NAME PATTERN CMD...: start the server, compare its listener's
# queue with somaxconn
check() {
	local name=$1 q
	shift
	start_server "$work/$name.log" "$@"
	q=$(ss -Hltn "sport = :$port" | awk '{print $3}' | head -1)
	if [ "$q" = "$want" ]; then
		echo "ok   $name: a queue of $q (net.core.somaxconn)"
	else
		bad "$name: a queue of ${q:-nothing}, want $want"
	fi
}

check uwarp-perf "$PERF_LISTENING" "$build/bin/uwarp-perf" -s -p 0 --loop
check exs-pump "$PUMP_LISTENING" "$build/bin/exs-pump" -s -p 0 --loop
check uwarp-rping "$PERF_LISTENING" "$build/bin/uwarp-rping" -s -p 0 -P
exit $fail
