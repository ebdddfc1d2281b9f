#!/usr/bin/env bash
# test_not_iwarp.sh BINDIR: each client tool pointed at a TCP server that
# does not speak iWARP fails at once, exit 1, and says what happened
# (tools/lib/tool_conn.h): a silent server ("no MPA Reply within N ms",
# after UWARP_MPA_REPLY_MS, not a bare "Connection timed out" after 10 s),
# one that answers with other bytes, and one that hangs up. A bad
# UWARP_MPA_REPLY_MS, UWARP_SPIN_US or UWARP_RECV_WAIT_MS is named on
# stderr and the default holds.
set -u
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@" # (a network namespace of its own where it may)
bin=$1
here=$(cd "$(dirname "$0")" && pwd)
fails=0

# start MODE: a plain_server.py; sets $port
start() { start_server "$work/$1.log" 'listening on port \([0-9]*\)' python3 "$here/plain_server.py" "$1"; }

# said WANT TOOL ARGS...: the tool exits 1 and its output has WANT
said() {
	local want=$1
	shift
	local out rc
	out=$(UWARP_MPA_REPLY_MS=${ms:-300} timeout 20 "$bin/$1" "${@:2}" 2>&1)
	rc=$?
	if [ "$rc" -ne 1 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL $*: exit $rc, wanted 1 and '$want'; it said:"
		sed 's/^/    /' <<<"$out" | head -6
		fails=$((fails + 1))
	else
		echo "ok   $1: $(grep -F -- "$want" <<<"$out" | head -1)"
	fi
}

clients() { # WANT: every client tool against 127.0.0.1:$port
	said "$1" uwarp-perf -c 127.0.0.1 -p "$port" --op write --iters 1
	said "$1" exs-pump -c 127.0.0.1 -p "$port" --sends 1
	said "$1" uwarp-rping -c -a 127.0.0.1 -p "$port" -C 1
	said "$1" uwarp-ucmatose -s 127.0.0.1 -p "$port"
}

start silent
t0=$(date +%s%N)
clients "port $port: the peer accepted TCP but sent no MPA Reply within 300 ms: not an iWARP peer"
took=$((($(date +%s%N) - t0) / 1000000))
echo "     (four tools against the silent server: $took ms)"
ms=abc said "UWARP_MPA_REPLY_MS='abc' ignored: milliseconds, 1 to 3600000 (default 3000)" \
	uwarp-perf -c 127.0.0.1 -p "$port" --op write --iters 1
UWARP_SPIN_US=fast said "UWARP_SPIN_US='fast' ignored: microseconds, 0 to 1000000 (default 20)" \
	uwarp-perf -c 127.0.0.1 -p "$port" --op write --iters 1
UWARP_RECV_WAIT_MS=-5 said "UWARP_RECV_WAIT_MS='-5' ignored: milliseconds, 0 to 600000 (default 1000)" \
	uwarp-perf -c 127.0.0.1 -p "$port" --op write --iters 1
start talk
clients "port $port: the peer answered with bytes that are not an MPA Reply"
start close
clients "port $port: the peer closed the connection before its MPA Reply"

[ "$fails" -eq 0 ] && echo "all passed" || echo "$fails failed"
exit $((fails > 0))
