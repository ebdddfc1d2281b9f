#!/bin/bash
# test_listen_backlog.sh BUILD_DIR: uwarp's listeners take the system's
# largest queue of TCP connections (net.core.somaxconn), whatever backlog
# the program asked for: uwarp runs the MPA exchange after taking each
# connection, and a flood of connects to a fresh listener with exs-pump's
# 8 met SYN retransmissions. For a listening socket ss shows the queue's
# size as Send-Q.
set -u
if [ -z "${UWARP_HOSTILE_NETNS:-}" ] && unshare -n true 2>/dev/null; then
	UWARP_HOSTILE_NETNS=1 exec unshare -n bash -c 'ip link set lo up && exec bash "$0" "$@"' \
		"$0" "$@"
fi
build=$1
want=$(cat /proc/sys/net/core/somaxconn)
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
fail=0

# check NAME LOG PATTERN CMD...: start the server, read its port from its
# log, compare its listener's queue with somaxconn
check() {
	local name=$1 log=$work/$1.log pattern=$2 port= q
	shift 2
	"$@" >"$log" 2>&1 &
	pids+=($!)
	for _ in $(seq 200); do
		port=$(sed -n "s/$pattern/\\1/p" "$log" | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	if [ -z "$port" ]; then
		cat "$log"
		echo "FAIL $name did not start"
		fail=1
		return
	fi
	q=$(ss -Hltn "sport = :$port" | awk '{print $3}' | head -1)
	if [ "$q" = "$want" ]; then
		echo "ok   $name: a queue of $q (net.core.somaxconn)"
	else
		echo "FAIL $name: a queue of ${q:-nothing}, want $want"
		fail=1
	fi
}

check uwarp-perf '.*listening on port \([0-9]*\).*' "$build/bin/uwarp-perf" -s -p 0 --loop
check exs-pump '^server: listening on port \([0-9]*\) .*' "$build/bin/exs-pump" -s -p 0 --loop
check uwarp-rping '.*listening on port \([0-9]*\).*' "$build/bin/uwarp-rping" -s -p 0 -P
exit $fail
