#!/bin/bash
# test_preload_own.sh BUILD_DIR: uwarp's own programs run under the esock
# preload with every TCP socket selected (ESOCK_DDPMODE=all), both ends.
# Their DDP connections are made by the runtime on TCP sockets of its own;
# those must stay the plain TCP sockets under the connection, never be
# taken for the program's and carried over DDP in turn (util/sys.h: the
# layers below esock reach the C library directly). Before, the first
# connection of an ES-API program so run hung until killed, and
# uwarp-perf ran its DDP connection inside another one: its listener had
# become an esock listener (an AF_UNIX socket, esock's sorting) and its
# connections esock's DDP sockets.
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@"
build=$1
pre=(env ESOCK_DDPMODE=all LD_PRELOAD="$build/lib/libesock-preload.so")

# plain_sockets NAME PID: PID's sockets are all the kernel's TCP ones (no
# AF_UNIX socket: those are what esock puts in the place of a program's
# TCP socket or listener)
plain_sockets() {
	local n=0 ino
	for ino in $(ls -l "/proc/$2/fd" 2>/dev/null | sed -n 's/.*socket:\[\([0-9]*\)\]$/\1/p'); do
		awk -v i="$ino" '$7 == i { f = 1 } END { exit !f }' /proc/net/unix && n=$((n + 1))
	done
	[ "$n" -eq 0 ] && echo "ok   $1: every socket of it is plain TCP" ||
		bad "$1: $n of its sockets are esock's AF_UNIX ones: its own sockets went through esock"
}

# exs-pump: SOCK_STREAM in the dynamic mode and SOCK_SEQPACKET
start_server "$work/pump.log" "$PUMP_LISTENING" "${pre[@]}" "$build/bin/exs-pump" -s -p 0 --loop
plain_sockets "exs-pump -s" "$srv"
for args in "--mode dynamic" "--type seqpacket"; do
	# shellcheck disable=SC2086
	out=$(timeout 60 "${pre[@]}" "$build/bin/exs-pump" -c 127.0.0.1 -p "$port" --bytes 8M $args 2>&1)
	if grep -q "data verified by the server" <<<"$out"; then
		echo "ok   exs-pump $args, both ends preloaded: 8 MiB verified"
	else
		bad "exs-pump $args under the preload (exit $?): $(tail -2 <<<"$out")"
	fi
done

# uwarp-perf: the verbs API, a Write and a Read test
for op in write read; do
	start_server "$work/perf-$op.log" "$PERF_LISTENING" "${pre[@]}" "$build/bin/uwarp-perf" -s -p 0
	plain_sockets "uwarp-perf -s ($op)" "$srv"
	out=$(timeout 60 "${pre[@]}" "$build/bin/uwarp-perf" -c 127.0.0.1 -p "$port" --op $op \
		--iters 200 2>&1)
	if grep -q "data verified" <<<"$out"; then
		echo "ok   uwarp-perf --op $op, both ends preloaded: data verified"
	else
		bad "uwarp-perf --op $op under the preload: $(tail -2 <<<"$out")"
	fi
done
[ $fail -eq 0 ] && echo "PASS uwarp's own programs run under the preload with ESOCK_DDPMODE=all"
exit $fail
