#!/bin/bash
# test_idle_cpu.sh BUILD_DIR [preload]: a server that has served a client
# and now has nothing to do uses no CPU. After each kind of client has
# finished (or sits idle, connected), the server's CPU time (utime + stime
# from /proc/PID/stat) may grow by at most 0.5 s over the next 2 s; a
# server that spins a core grows by about 2 s (1 s with the other core's
# work competing), and a latency server's spin window after its last
# message (0.2 s) fits in the bound. Each case runs twice: the spin seen
# before the fix (a CM channel's descriptor left readable after
# uw_cm_destroy_id dropped an id's last events) came in about half of the
# trials, so one case misses it one time in four, and the dozen cases
# together all but never. (Three times each took 100 s of CI's 20 min.)
#
#   uwarp-perf -s, manual and auto progress: a bandwidth Write client, a
#   Send and a Write latency client; and a latency client left connected
#   and idle (the server may spin only within its short window after the
#   last message)
#   exs-pump -s --loop: stream clients in each mode, and a seqpacket one
#   with "preload": redis-server under libesock-preload.so after DDP
#   clients in each ES-API mode
set -u
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
with_preload=${2:-}
hz=$(getconf CLK_TCK)

# cpu_ticks PID: the process's user and system time so far, in clock ticks
# (fields 14 and 15 of /proc/PID/stat, counted after the parenthesised name)
cpu_ticks() {
	local s
	s=$(cat "/proc/$1/stat") || return 1
	s=${s##*) }
	set -- $s
	echo $((${12} + ${13}))
}

# idle_check NAME PID: the server PID is idle now; its CPU over 2 s
idle_check() {
	local name=$1 pid=$2 a b used
	a=$(cpu_ticks "$pid") || { echo "FAIL $name: the server is gone"; fail=1; return; }
	sleep 2 # the measurement window itself, not a wait for readiness
	b=$(cpu_ticks "$pid") || { echo "FAIL $name: the server is gone"; fail=1; return; }
	used=$(((b - a) * 1000 / hz))
	if [ $used -gt 500 ]; then
		echo "FAIL $name: the idle server used ${used} ms of CPU in 2 s"
		fail=1
	else
		echo "ok   $name: ${used} ms of CPU in 2 s idle"
	fi
}

# start_perf_server PROGRESS: sets $srv and $port
start_perf_server() {
	start_server "$work/perf-$1.log" "$PERF_LISTENING" "$build/bin/uwarp-perf" -s -p 0 --loop \
		--progress "$1"
}

perf_c() { "$build/bin/uwarp-perf" -c 127.0.0.1 -p "$port" "$@" >>"$work/clients.log" 2>&1; }

# perf_group PROGRESS: uwarp-perf's server after each kind of client
perf_group() {
	local progress=$1 c sent
	start_perf_server "$progress"
	for round in 1 2; do
		perf_c --op write --size 1M --iters 200 || { echo "FAIL a Write bandwidth client"; fail=1; }
		idle_check "uwarp-perf ($progress) after a Write bandwidth client, round $round" "$srv"
		perf_c --op send --size 64 --lat --iters 2000 || { echo "FAIL a Send latency client"; fail=1; }
		idle_check "uwarp-perf ($progress) after a Send latency client, round $round" "$srv"
		perf_c --op write --size 64 --lat --iters 2000 || { echo "FAIL a Write latency client"; fail=1; }
		idle_check "uwarp-perf ($progress) after a Write latency client, round $round" "$srv"
	done
	# a latency client that connects and then says nothing: the server
	# may spin only within its short window after the last message.
	# A hello that promises a long run (--time) keeps the session open;
	# SIGSTOP keeps the client connected and silent.
	"$build/bin/uwarp-perf" -c 127.0.0.1 -p "$port" --op send --size 64 --lat --time 60 \
		>"$work/idle-client-$progress.log" 2>&1 &
	c=$!
	track $c
	# stopped once its round trips run: its connection has carried 2 KiB
	# (the MPA exchange is under 200 bytes; a round trip's Send is 90)
	for _ in $(seq 200); do
		sent=$(ss -Htni state established "dport = :$port" |
			sed -n 's/.*bytes_acked:\([0-9]*\).*/\1/p' | sort -n | tail -1)
		[ "${sent:-0}" -gt 2048 ] && break
		sleep 0.1
	done
	kill -STOP "$c"
	idle_check "uwarp-perf ($progress) with a latency client connected and silent" "$srv"
	kill -KILL "$c"
	wait "$c" 2>/dev/null
	kill "$srv"
	wait "$srv" 2>/dev/null
}

# exs_group: exs-pump's server after stream clients in each mode and a
# seqpacket one
exs_group() {
	start_server "$work/exs.log" "$PUMP_LISTENING" "$build/bin/exs-pump" -s -p 0 --loop
	for round in 1 2; do
		for mode in dynamic direct indirect; do
			"$build/bin/exs-pump" -c 127.0.0.1 -p "$port" --mode "$mode" --bytes 4M >>"$work/clients.log" 2>&1 ||
				{ echo "FAIL an exs-pump $mode client"; fail=1; }
			idle_check "exs-pump after a $mode stream client, round $round" "$srv"
		done
		"$build/bin/exs-pump" -c 127.0.0.1 -p "$port" --type seqpacket --bytes 4M >>"$work/clients.log" 2>&1 ||
			{ echo "FAIL an exs-pump seqpacket client"; fail=1; }
		idle_check "exs-pump after a seqpacket client, round $round" "$srv"
	done
}

# preload_group: redis-server under the preload after redis-benchmark in
# each ES-API mode
preload_group() {
	local lib=$build/lib/libesock-preload.so mode round
	for mode in direct dynamic indirect; do
		port=$(free_port)
		ESOCK_MODE=$mode ESOCK_DDPMODE=$port LD_PRELOAD=$lib redis-server --port "$port" \
			--bind 127.0.0.1 --save "" --appendonly no --hz 1 >"$work/redis-$mode.log" 2>&1 &
		srv=$!
		track $srv
		wait_port "$port" "$srv" || { cat "$work/redis-$mode.log"; fail=1; continue; }
		for round in 1 2; do
			ESOCK_MODE=$mode ESOCK_DDPMODE=$port LD_PRELOAD=$lib \
				redis-benchmark -p "$port" -n 2000 -c 4 -t set,get -q >>"$work/clients.log" 2>&1 ||
				{ echo "FAIL redis-benchmark ($mode)"; fail=1; }
			idle_check "redis under the preload ($mode) after redis-benchmark, round $round" "$srv"
		done
	done
}

# The groups run side by side, each with its own servers and log: one
# after another they took 68 s of the suite's time, together 18. Each
# server's CPU is its own, so another group's work adds nothing to an
# idle one's; a spinning one shares the two cores and still passes the
# bound by far (a busy loop checked beside the four groups: 1.2 to 1.9 s
# of CPU in its 2 s).
gpids=()
gnames=()
# group NAME FUNCTION ARGS...: FUNCTION in the background, its processes
# its own (killed when it ends), its output in $work/NAME.out
group() {
	local name=$1
	shift
	(
		pids=()
		fail=0
		trap 'for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
		"$@"
		exit $fail
	) >"$work/$name.out" 2>&1 &
	gpids+=($!)
	gnames+=("$name")
}
group perf-manual perf_group manual
group perf-auto perf_group auto
group exs exs_group
[ "$with_preload" = preload ] && group preload preload_group
for i in "${!gpids[@]}"; do
	wait "${gpids[$i]}" || fail=1
	cat "$work/${gnames[$i]}.out"
done
[ $fail -eq 0 ] || { echo "--- clients' output"; tail -n 30 "$work/clients.log"; }
exit $fail
