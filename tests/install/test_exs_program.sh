#!/usr/bin/env bash
# test_exs_program.sh SOURCE_DIR BUILD_DIR: ES-API programs written to the
# published interface build against an installed uwarp with nothing but
# `#include <sys/exs.h>` and `pkg-config exs` (-lexs), shared and static,
# and move a stream intact: exs_sender (a ring of 16 outstanding sends, an
# alarm()-timed run that ends on EINTR) to exs_receiver, for message sizes
# 1, 64, 4096, 65536, 65537 and 4 MiB from buffers at odd offsets; the same
# byte count and CRC-32 on both ends. A receiver killed mid-stream ends
# the sender with an error, never a hang. The same programs with -k make
# their sockets with socket(2) and accept(2) and mix the system's calls
# with the ES-API's on them: to and from a plain TCP program (Python), for
# the same sizes, every byte arrives once and in order (CRC-32 on both
# ends), and a TCP peer killed mid-stream ends the sender with an error.
# With -d the sender's socket(2) socket is switched to DDP mode (by
# exs_setsockopt, or by ESOCK_DDPMODE in the environment) and streams to
# the uwarp receiver at the same sizes; a killed receiver ends it too; and
# to exs_receiver -d, whose accept(2) socket is in DDP mode too. Under
# esock's preload exs_sender -k (its own calls mixed with the ES-API's)
# streams over DDP to the uwarp receiver.
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
pids=()
cleanup() {
	local rc=$?
	for p in "${pids[@]}"; do
		kill -9 "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || fail "cmake --install"
for f in include/sys/exs.h include/exs.h; do
	[ -e "$work/prefix/$f" ] || fail "not installed: $f"
done
pc=$(find "$work/prefix" -name exs.pc)
[ -n "$pc" ] || fail "no exs.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in libexs.so libexs.a; do
	[ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
export PKG_CONFIG_PATH=$(dirname "$pc")
cc=${CC:-cc}
for p in exs_sender exs_receiver; do
	# shellcheck disable=SC2046
	$cc -Wall -Wextra -Werror -o "$work/$p" "$src/tests/install/$p.c" \
		$(pkg-config --cflags --libs exs) || fail "$p does not build with pkg-config exs"
done
grep -q "libuwarp-exs.so.0" <(readelf -d "$work/exs_sender") ||
	fail "-lexs did not link the ES-API library"
# shellcheck disable=SC2046
$cc -Wall -Wextra -Werror -o "$work/exs_sender_static" "$src/tests/install/exs_sender.c" \
	$(pkg-config --cflags exs) -Wl,-Bstatic -lexs -luwarp -Wl,-Bdynamic \
	$(pkg-config --static --libs exs | sed 's/-lexs//; s/-luwarp//') ||
	fail "exs_sender does not link statically with -lexs"
readelf -d "$work/exs_sender_static" | grep -q "libuwarp" &&
	fail "the static sender still needs a uwarp shared library"
export LD_LIBRARY_PATH=$libdir

# start_server OUT CMD...: a server that prints "port N"; its port in
# $port, its pid in $rpid
start_server() {
	local out=$1
	shift
	"$@" >"$out" 2>&1 &
	rpid=$!
	pids+=("$rpid")
	port=
	for _ in $(seq 200); do
		port=$(sed -n 's/^port \([0-9]*\)$/\1/p' "$out")
		[ -n "$port" ] && return 0
		kill -0 "$rpid" 2>/dev/null || break
		sleep 0.05
	done
	cat "$out"
	fail "$* did not start"
}

# compare WHAT: the sender's and the receiver's byte count and hash agree
compare() {
	local s r
	s=$(sed -n 's/^sent \([0-9]*\) bytes hash \([0-9a-f]*\).*/\1 \2/p' "$work/send.out")
	r=$(sed -n 's/^received \([0-9]*\) bytes hash \([0-9a-f]*\)$/\1 \2/p' "$work/recv.out")
	echo "$1: sent ${s% *}, received ${r% *}"
	[ -n "$s" ] && [ "${s% *}" != 0 ] || fail "$1: nothing was sent: $(cat "$work/send.out")"
	[ "$s" = "$r" ] || fail "$1: sent '$s' but received '$r' (bytes hash)"
}

# run SENDER SIZE SEND_OFFSET RECV_SIZE RECV_OFFSET: ES-API to ES-API over
# a uwarp connection
run() {
	local sender=$1 size=$2 so=$3 rsize=$4 ro=$5
	start_server "$work/recv.out" "$work/exs_receiver" "$rsize" "$ro"
	timeout 60 "$sender" 127.0.0.1 "$port" "$size" 1 "$so" >"$work/send.out" 2>&1 ||
		{ cat "$work/send.out" "$work/recv.out"; fail "sender of $size-byte messages failed"; }
	wait "$rpid" || { cat "$work/recv.out"; fail "receiver of $size-byte messages failed"; }
	compare "size $size (offset $so) into $rsize (offset $ro)"
}

# run_to_tcp SENDER SIZE OFFSET: ES-API calls on a socket(2) socket, to a
# plain TCP program
run_to_tcp() {
	local sender=$1 size=$2 so=$3
	start_server "$work/recv.out" python3 "$src/tests/install/tcp_peer.py" sink
	timeout 60 "$sender" -k 127.0.0.1 "$port" "$size" 1 "$so" >"$work/send.out" 2>&1 ||
		{ cat "$work/send.out" "$work/recv.out"; fail "-k sender of $size-byte messages failed"; }
	wait "$rpid" || { cat "$work/recv.out"; fail "the TCP sink failed"; }
	compare "size $size (offset $so) on a system socket, to a TCP program"
}

# run_ddp SENDER SIZE SEND_OFFSET RECV_SIZE RECV_OFFSET [env [-d]]: ES-API
# calls on a socket(2) socket switched to DDP mode (exs_setsockopt, or
# "env": ESOCK_DDPMODE naming the server's port), to an ES-API server over
# uwarp; with -d the server's socket is an accept(2) one in DDP mode too
run_ddp() {
	local sender=$1 size=$2 so=$3 rsize=$4 ro=$5 how=${6:-setsockopt} rd=${7:-}
	local renv=()
	# The accepting end waits ESOCK_PEEK_MS (200 ms by default) for the
	# client's first bytes before it takes the socket for plain TCP; this
	# client always speaks MPA first, but a loaded machine (sanitizers, two
	# suites at once) has taken longer than 200 ms to get it there.
	[ -n "$rd" ] && renv=(env ESOCK_PEEK_MS=20000)
	[ -n "$rd" ] && [ "$how" = env ] && renv+=(ESOCK_DDPMODE=all)
	# shellcheck disable=SC2086
	start_server "$work/recv.out" "${renv[@]}" "$work/exs_receiver" $rd "$rsize" "$ro"
	local mode=()
	[ "$how" = env ] && mode=(env ESOCK_DDPMODE="$port")
	timeout 60 "${mode[@]}" "$sender" -d 127.0.0.1 "$port" "$size" 1 "$so" >"$work/send.out" 2>&1 ||
		{ cat "$work/send.out" "$work/recv.out"; fail "-d sender of $size-byte messages failed"; }
	wait "$rpid" || { cat "$work/recv.out"; fail "receiver of $size-byte messages failed"; }
	compare "size $size (offset $so) on a system socket in DDP mode ($how), to a uwarp server${rd:+ on an accept(2) socket}"
}

# run_preloaded SIZE OFFSET: exs_sender -k (its own send(2) first, then
# the ES-API's sends, then its own shutdown/recv/close) under esock's
# preload, ESOCK_DDPMODE naming the server's port, to the uwarp receiver:
# esock carries the socket over DDP and the ES-API's calls go through it
run_preloaded() {
	local size=$1 so=$2
	start_server "$work/recv.out" "$work/exs_receiver" 65536 3
	timeout 60 env LD_PRELOAD="$build/lib/libesock-preload.so" ESOCK_DDPMODE="$port" \
		"$work/exs_sender" -k 127.0.0.1 "$port" "$size" 1 "$so" >"$work/send.out" 2>&1 ||
		{ cat "$work/send.out" "$work/recv.out"; fail "preloaded -k sender of $size-byte messages failed"; }
	wait "$rpid" || { cat "$work/recv.out"; fail "receiver of $size-byte messages failed"; }
	compare "size $size (offset $so) on a system socket esock carries, to a uwarp server"
}

# run_from_tcp SIZE OFFSET BYTES CHUNK: a plain TCP program's stream, read
# with exs_recv on an accept(2) socket
run_from_tcp() {
	local size=$1 ro=$2 bytes=$3 chunk=$4
	start_server "$work/recv.out" "$work/exs_receiver" -k "$size" "$ro"
	timeout 60 python3 "$src/tests/install/tcp_peer.py" source "$port" "$bytes" "$chunk" \
		>"$work/send.out" 2>&1 ||
		{ cat "$work/send.out" "$work/recv.out"; fail "the TCP source failed"; }
	wait "$rpid" || { cat "$work/recv.out"; fail "-k receiver of $size-byte messages failed"; }
	compare "$chunk-byte writes of a TCP program into $size-byte receives (offset $ro)"
}

# README's ES-API program, exactly, against a plain TCP program
sed -n '/^```c exs-example/,/^```$/p' "$src/README.md" | sed '1d;$d' >"$work/exs_hello.c"
diff -u "$src/examples/exs_hello.c" "$work/exs_hello.c" ||
	fail "README's ES-API example differs from examples/exs_hello.c"
# shellcheck disable=SC2046
$cc -Wall -Wextra -Werror -o "$work/exs_hello" "$work/exs_hello.c" \
	$(pkg-config --cflags --libs exs) || fail "README's ES-API example does not build"
start_server "$work/recv.out" python3 "$src/tests/install/tcp_peer.py" sink
"$work/exs_hello" 127.0.0.1 "$port" >"$work/send.out" 2>&1 ||
	{ cat "$work/send.out"; fail "README's ES-API example failed"; }
wait "$rpid"
grep -q "^sent 25 bytes$" "$work/send.out" || fail "exs_hello: $(cat "$work/send.out")"
grep -q "^received 25 bytes " "$work/recv.out" || fail "the TCP peer: $(cat "$work/recv.out")"
echo "README's ES-API example: $(cat "$work/send.out") to a plain TCP program"
# ...and the same program, unchanged, against a DDP peer: ESOCK_DDPMODE
# switches its socket, and the Python sink runs under esock's preload
# (ESOCK_DEBUG: the counters of each DDP connection it closes)
start_server "$work/recv.out" env LD_PRELOAD="$build/lib/libesock-preload.so" ESOCK_DDPMODE=all \
	ESOCK_DEBUG=1 python3 "$src/tests/install/tcp_peer.py" sink
ESOCK_DDPMODE=$port "$work/exs_hello" 127.0.0.1 "$port" >"$work/send.out" 2>&1 ||
	{ cat "$work/send.out"; fail "README's ES-API example failed in DDP mode"; }
wait "$rpid"
grep -q "^sent 25 bytes$" "$work/send.out" || fail "exs_hello: $(cat "$work/send.out")"
grep -q "^received 25 bytes " "$work/recv.out" || fail "the DDP peer: $(cat "$work/recv.out")"
grep -q "^esock [0-9]*: direct" "$work/recv.out" ||
	fail "the peer's connection was plain TCP, not DDP: $(cat "$work/recv.out")"
echo "README's ES-API example: $(cat "$work/send.out") over DDP to a program under esock"

run "$work/exs_sender" 1 1 65536 3
run "$work/exs_sender" 64 3 64 5
run "$work/exs_sender" 4096 7 1000 1
run "$work/exs_sender" 65536 1 65536 7
run "$work/exs_sender" 65537 5 4096 0
run "$work/exs_sender" 4194304 3 65536 1
run "$work/exs_sender_static" 65537 1 65536 3

run_to_tcp "$work/exs_sender" 1 1
run_to_tcp "$work/exs_sender" 64 3
run_to_tcp "$work/exs_sender" 4096 7
run_to_tcp "$work/exs_sender" 65536 1
run_to_tcp "$work/exs_sender" 65537 5
run_to_tcp "$work/exs_sender" 4194304 3
run_to_tcp "$work/exs_sender_static" 65537 1

run_ddp "$work/exs_sender" 1 1 65536 3
run_ddp "$work/exs_sender" 64 3 64 5 env
run_ddp "$work/exs_sender" 4096 7 1000 1
run_ddp "$work/exs_sender" 65536 1 65536 7 env
run_ddp "$work/exs_sender" 65537 5 4096 0
run_ddp "$work/exs_sender" 4194304 3 65536 1
run_ddp "$work/exs_sender_static" 65537 1 65536 3 env
run_ddp "$work/exs_sender" 4096 7 1000 1 setsockopt -d
run_ddp "$work/exs_sender" 65537 5 4096 0 env -d
run_ddp "$work/exs_sender" 4194304 3 65536 1 setsockopt -d

run_preloaded 1 1
run_preloaded 65537 5
run_preloaded 4194304 3

run_from_tcp 1 3 200000 65536
run_from_tcp 64 1 2000000 1000
run_from_tcp 65537 5 30000000 65536
run_from_tcp 4194304 7 30000000 4194304

# killed SENDER_ARGS SERVER...: a receiver killed mid-stream ends the
# sender with an error, never a hang
killed() {
	local how=$1
	shift
	start_server "$work/recv.out" "$@"
	# shellcheck disable=SC2086
	timeout 60 "$work/exs_sender" $how 127.0.0.1 "$port" 65536 30 0 >"$work/send.out" 2>&1 &
	spid=$!
	pids+=("$spid")
	for _ in $(seq 400); do
		grep -q receiving "$work/recv.out" && break
		sleep 0.05
	done
	grep -q receiving "$work/recv.out" || fail "the receiver never got its first MiB"
	kill -9 "$rpid"
	local rc=0
	wait "$spid" || rc=$?
	cat "$work/send.out"
	[ "$rc" -ne 124 ] || fail "the sender hung after its peer was killed"
	[ "$rc" -ne 0 ] || fail "the sender reported success after its peer was killed"
	grep -q "exs_sender: " "$work/send.out" || fail "the sender failed without saying why"
}
killed "" "$work/exs_receiver" 65536 0
killed -k python3 "$src/tests/install/tcp_peer.py" sink
killed -d "$work/exs_receiver" 65536 0
echo "PASS: ES-API programs built with <sys/exs.h> and -lexs (shared and static) move every byte,"
echo "PASS: over uwarp, and on system sockets to and from plain TCP programs and, in DDP mode,"
echo "PASS: to uwarp servers"
