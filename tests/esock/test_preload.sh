#!/bin/bash
# test_preload.sh LIBDIR: real programs, unmodified, over DDP through
# libesock-preload.so at both ends: iperf3, redis-server with
# redis-benchmark, nginx serving a file to curl and to wrk, socat piping
# 100 MiB (UWARP_PRELOAD_SOCAT_MIB). Each DDP run is captured on loopback
# and decoded by tshark: it passes only with MPA FPDUs whose CRCs are good
# and none bad. Each program then runs again with the preload at the server
# only: the DDP-mode server must serve the plain client as plain TCP.
set -u
lib=$1/libesock-preload.so
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
say() { echo "$*"; }
bad() { echo "FAIL $*"; fail=1; }

free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		ss -Htan "sport = :$p or dport = :$p" 2>/dev/null | grep -q . || { echo "$p"; return; }
	done
}

wait_port() { # port: until something listens there (10 s)
	for _ in $(seq 100); do
		ss -Hltn "sport = :$1" | grep -q . && return 0
		sleep 0.1
	done
	return 1
}

# the preload with this run's port selected (an array, not a function: a
# background server's $! must be the server itself, which the test kills)
# The accepting end waits ESOCK_PEEK_MS (200 ms by default) for a client's
# first bytes before it takes the connection for plain TCP; these clients
# always speak MPA first, but a loaded machine can take longer than that
# to get it there (test_exs_program saw it). Only accepting ends read it.
ddp_env() { ddp=(env LD_PRELOAD="$lib" ESOCK_DDPMODE="$port" ESOCK_PEEK_MS=20000); }

# The captures (tests/rdma/capture.sh): tshark on loopback for the run
# that follows, its first 3000 packets (the MPA negotiation and plenty of
# FPDUs), with a 64 MiB buffer: Wireshark finds MPA by a connection's
# Request and Reply, so a capture that dropped a connection's first
# packets would show none of its FPDUs.
track() { pids+=("$@"); }
. "$(dirname "$0")/../rdma/capture.sh"
capture() { capture_start lo "$work/$2.pcap" "tcp port $1" -c 3000; }

# verdict NAME: the capture's FPDU CRC verdicts; DDP runs need good ones
# only
verdict() {
	capture_stop
	local v good bad_ frames packets starts
	v=$(tshark -r "$work/$1.pcap" -V -Y iwarp_mpa.crc_check 2>/dev/null |
		grep -o '(\(Good\|Bad\) CRC32)' | sort | uniq -c)
	good=$(echo "$v" | awk '/Good/ {print $1}')
	bad_=$(echo "$v" | awk '/Bad/ {print $1}')
	frames=$(tshark -r "$work/$1.pcap" -Y iwarp_ddp_rdmap 2>/dev/null | wc -l)
	say "  $1: tshark: ${good:-0} good FPDU CRCs, ${bad_:-0} bad, $frames DDP/RDMAP segments"
	[ "${good:-0}" -gt 0 ] && [ -z "$bad_" ] && [ "$frames" -gt 0 ] && return
	bad "$1: the capture does not show good MPA FPDUs"
	# what the capture holds, for the one reading this failure
	packets=$(tshark -r "$work/$1.pcap" 2>/dev/null | wc -l)
	starts=$(tshark -r "$work/$1.pcap" -Y "iwarp_mpa.req or iwarp_mpa.rep" 2>/dev/null | wc -l)
	say "  $1: $packets packets captured, $starts MPA Requests and Replies; tshark said:"
	sed 's/^/    /' "$cap_log"
	mkdir -p preload-failed && cp "$work/$1.pcap" "$work"/*.log preload-failed/ 2>/dev/null &&
		say "  $1: the capture and the logs are in $PWD/preload-failed"
}

# start NAME cmd...: a server in the background, its log in $work/NAME.log
start() {
	local name=$1
	shift
	"$@" >"$work/$name.log" 2>&1 &
	srv=$!
	pids+=("$srv")
}

stop() { kill "$srv" 2>/dev/null; wait "$srv" 2>/dev/null; }

# ---- iperf3 ----
for mode in ddp fallback; do
	port=$(free_port)
	ddp_env
	start iperf3-$mode "${ddp[@]}" timeout 60 iperf3 -s -p "$port" -1
	wait_port "$port" || bad "iperf3 server did not listen"
	[ $mode = ddp ] && capture "$port" iperf3
	if [ $mode = ddp ]; then
		out=$("${ddp[@]}" timeout 60 iperf3 -c 127.0.0.1 -p "$port" -t 2 -J)
	else
		out=$(timeout 60 iperf3 -c 127.0.0.1 -p "$port" -t 2 -J)
	fi
	rc=$?
	rate=$(echo "$out" | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/1e9, 2))' 2>/dev/null)
	if [ $rc -ne 0 ] || [ -z "$rate" ]; then
		bad "iperf3 $mode: rc $rc"
		echo "$out" | tail -5
	else
		say "iperf3 $mode: $rate Gbit/s"
	fi
	[ $mode = ddp ] && verdict iperf3
	wait "$srv" || bad "iperf3 $mode server exit"
done

# ---- redis ----
for mode in ddp fallback; do
	port=$(free_port)
	ddp_env
	start redis-$mode "${ddp[@]}" redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
		--daemonize no --dir "$work"
	wait_port "$port" || bad "redis-server did not listen"
	c=(timeout 60)
	[ $mode = ddp ] && { capture "$port" redis; c=("${ddp[@]}" timeout 60); }
	"${c[@]}" redis-cli -p "$port" set uwarp-key "value over $mode" >/dev/null
	got=$("${c[@]}" redis-cli -p "$port" get uwarp-key)
	[ "$got" = "value over $mode" ] || bad "redis $mode: get returned '$got'"
	out=$("${c[@]}" redis-benchmark -p "$port" -n 5000 -c 10 -t set,get -q 2>&1 | tr '\r' '\n' |
		grep "requests per second")
	if [ "$(echo "$out" | grep -c 'requests per second')" -ne 2 ]; then
		bad "redis $mode: redis-benchmark: $out"
	else
		say "redis $mode: $(echo "$out" | sed 's/, p50.*//' | tr '\n' ' ')"
	fi
	[ $mode = ddp ] && verdict redis
	stop
done

# ---- nginx, curl and wrk ----
. "$(dirname "$0")/nginx_conf.sh"
mkdir -p "$work/www" "$work/ngx"
head -c 5M /dev/urandom >"$work/www/f.bin"
for mode in ddp fallback; do
	port=$(free_port)
	nginx_conf "$work/ngx" "$port" 1
	ddp_env
	start nginx-$mode "${ddp[@]}" nginx -e "$work/ngx/error.log" -p "$work/ngx" -c "$work/ngx/nginx.conf"
	wait_port "$port" || bad "nginx did not listen"
	c=(timeout 60)
	[ $mode = ddp ] && { capture "$port" nginx; c=("${ddp[@]}" timeout 60); }
	rm -f "$work/got.bin"
	"${c[@]}" curl -s -o "$work/got.bin" "http://127.0.0.1:$port/f.bin" ||
		bad "nginx $mode: curl failed"
	cmp -s "$work/got.bin" "$work/www/f.bin" && say "nginx $mode: curl got the 5 MiB file intact" ||
		bad "nginx $mode: curl's copy differs"
	out=$("${c[@]}" wrk -t1 -c4 -d1s "http://127.0.0.1:$port/f.bin" 2>&1)
	reqs=$(echo "$out" | awk '/requests in/ {print $1}')
	if [ "${reqs:-0}" -gt 0 ] && ! echo "$out" | grep -q "Socket errors: connect [1-9]\|Non-2xx"; then
		say "nginx $mode: wrk $reqs requests ($(echo "$out" | awk '/Transfer\/sec/ {print $2}')/s)"
	else
		bad "nginx $mode: wrk: $out"
	fi
	[ $mode = ddp ] && verdict nginx
	stop
done

# ---- socat, poll(2), a 100 MiB file with its checksum ----
mib=${UWARP_PRELOAD_SOCAT_MIB:-100}
head -c "${mib}M" /dev/urandom >"$work/in.bin"
want=$(sha256sum <"$work/in.bin" | cut -d' ' -f1)
for mode in ddp fallback; do
	port=$(free_port)
	rm -f "$work/out.bin"
	ddp_env
	start socat-$mode "${ddp[@]}" timeout 120 socat -u "TCP-LISTEN:$port,reuseaddr" "OPEN:$work/out.bin,creat,trunc"
	wait_port "$port" || bad "socat did not listen"
	c=(timeout 120)
	[ $mode = ddp ] && { capture "$port" socat; c=("${ddp[@]}" timeout 120); }
	"${c[@]}" socat -u "OPEN:$work/in.bin" "TCP:127.0.0.1:$port" || bad "socat $mode client failed"
	wait "$srv" || bad "socat $mode server failed"
	got=$(sha256sum <"$work/out.bin" | cut -d' ' -f1)
	[ "$got" = "$want" ] && say "socat $mode: $mib MiB, sha256 matches" ||
		bad "socat $mode: sha256 $got, sent $want"
	[ $mode = ddp ] && verdict socat
done

[ $fail -eq 0 ] && echo "preload: all programs ran over DDP and fell back to TCP"
exit $fail
