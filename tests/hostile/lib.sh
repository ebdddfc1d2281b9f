# tests/hostile/lib.sh: what the hostile-peer scripts share. A script
# begins
#
#   . "$(dirname "$0")/lib.sh"
#   hostile_begin "$0" "$@"
#
# and then has $work (a scratch folder), track PID (ended at exit), bad
# MESSAGE (the script fails at its end: exit $fail), start_server LOG
# PATTERN CMD... (sets $srv and $port) and free_port.

# hostile_begin SCRIPT ARGS...: run SCRIPT again in a network namespace of
# its own where we may (a loopback nobody else uses: no port taken between
# choosing it and listening on it, no other test's connections), then set
# up the scratch folder and the cleanup
hostile_begin() {
	if [ -z "${UWARP_HOSTILE_NETNS:-}" ] && unshare -n true 2>/dev/null; then
		UWARP_HOSTILE_NETNS=1 exec unshare -n bash -c 'ip link set lo up && exec bash "$0" "$@"' "$@"
	fi
	work=$(mktemp -d)
	pids=()
	fail=0
	trap hostile_cleanup EXIT
}

hostile_cleanup() {
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}

track() { pids+=("$@"); }
bad() {
	echo "FAIL $*"
	fail=1
}

# start_server LOG PATTERN CMD...: start a server writing to LOG and wait
# (20 s at most) for its port, the first match of the sed PATTERN's group
# in LOG; sets $srv and $port, or says why and exits
start_server() {
	local log=$1 pattern=$2
	shift 2
	"$@" >"$log" 2>&1 &
	srv=$!
	track "$srv"
	port=
	for _ in $(seq 200); do
		port=$(sed -n "s/$pattern/\\1/p" "$log" | head -1)
		[ -n "$port" ] && return 0
		kill -0 "$srv" 2>/dev/null || break
		sleep 0.1
	done
	cat "$log"
	echo "FAIL $1 did not start"
	exit 1
}

# the patterns of uwarp's servers' "listening" lines
PERF_LISTENING='.*listening on port \([0-9]*\).*'
PUMP_LISTENING='^server: listening on port \([0-9]*\) .*'

# free_port: a port the kernel says is free now (for programs that must be
# told their port, as redis must)
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_port PORT PID: until PID's server listens on PORT (20 s at most)
wait_port() {
	local i
	for i in $(seq 200); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# judge_stall STATUS OUTPUT SERVER: accept_stall.py's exit STATUS and OUTPUT
# judged: every request answered, the worst round trip under 1 s (a
# generous bound, against 10 s per attacker when accept waited for each
# one's MPA negotiation); sets $worst
judge_stall() {
	local rc=$1 out=$2
	echo "$out"
	[ "$rc" -eq 0 ] || bad "the plain client's requests to $3 failed (rc $rc)"
	worst=$(echo "$out" | sed -n 's/.*worst_rtt_ms \([0-9.]*\).*/\1/p')
	[ -n "$worst" ] || bad "no figure from accept_stall.py"
	[ -n "$worst" ] && awk -v w="$worst" 'BEGIN { exit !(w < 1000) }' ||
		bad "a plain client waited ${worst:-?} ms for $3 while others attacked accept (bound 1000 ms)"
}
