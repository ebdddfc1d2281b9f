#!/bin/bash
# test_rdma_programs.sh BIN_DIR: Debian's own RDMA programs, unmodified,
# between two processes over uwarp, each end under uwarp-run (no kernel
# module, no root needed by the programs):
#   rping       -V (data verified) -C 100 at 64 B, 1 KiB, 16 KiB and 65535 B
#               (rping's largest), over a tshark capture that must hold
#               iWARP RDMAP Sends, Reads and Writes inside MPA FPDUs, every
#               CRC good; once more with UWARP_CRC=off, whose MPA frames
#               must say no CRC; and with -q (QPs the programs make
#               themselves, named by number)
#   ucmatose    2 connections, 10 messages each
#   perftest    ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat,
#               ib_read_lat, ib_send_lat with -R (rdma_cm), each against
#               itself, and against uwarp-perf --perftest both ways (uwarp's
#               own verbs on the other end)
#   qperf       -cm1 (rdma_cm): rc_bw, rc_lat, rc_rdma_write_bw,
#               rc_rdma_read_bw, rc_rdma_write_lat, rc_rdma_read_lat; rc_bw's
#               sender runs ahead of its receiver's receives (no credits, as
#               on InfiniBand), which holds only because a Send that finds
#               no receive waits for one (UWARP_RECV_WAIT_MS)
#   rsockets    rstream (-T v: data verified, 64 KiB x 200) and rcopy (a
#               20 MB file, compared), whose rsocket calls uwarp's librdmacm
#               carries with esock, over a capture that must hold RDMAP
#               Writes and Sends in MPA FPDUs, every CRC good
# A run passes when both ends exit 0 and say what the program says on
# success. Runs in a network namespace of its own where it may.
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@"
. "$(dirname "$0")/capture.sh"
bin=$1
run=$bin/uwarp-run
for p in rping ucmatose ib_write_bw qperf rstream rcopy tshark; do
	command -v $p >/dev/null || { echo "$p missing (scripts/test installs it)"; exit 1; }
done

# pair NAME SERVER_CMD... -- CLIENT_CMD...: the server started and its
# port waited for (PORT in the commands is replaced), then the client;
# both must exit 0 within a minute; leaves their output in $work/NAME.{s,c}
#
# One known fault of perftest 4.5's own is retried, once, and said: its
# client retries a connection that met no listener yet (its server makes
# its data listener after the handshake, and uwarp resolves addresses at
# once, so the client can be first), and that retry uses the ids it has
# just destroyed; the freed array then holds what rdma_getaddrinfo
# allocated next, and the client dies of SIGSEGV in rdma_resolve_addr.
pair() {
	local name=$1 try
	for try in 1 2; do
		pair_once "$@"
		case $? in
		0) echo "ok: $name"; return 0 ;;
		139) [ $try = 1 ] && [[ $client == ib_* ]] &&
			echo "retried: $name: perftest's client crashed in its own connection retry" && continue ;;
		esac
		bad "$name: client exit $crc, server exit $src"
		tail -5 "$work/$name.c" "$work/$name.s"
		return 1
	done
}
# pair_once NAME ...: one run; 0, the client's exit status if the server's
# was 0 or timed out, or 1; sets $crc and $src
pair_once() {
	local name=$1
	shift
	local s=() c=() side=s
	for a in "$@"; do
		[ "$a" = -- ] && { side=c; continue; }
		a=${a//PORT/$port}
		if [ $side = s ]; then s+=("$a"); else c+=("$a"); fi
	done
	timeout 60 "$run" "${s[@]}" >"$work/$name.s" 2>&1 &
	local sp=$!
	track $sp
	crc= src= client=${c[0]}
	if ! wait_port "$port" $sp; then
		bad "$name: the server did not listen on $port"
		cat "$work/$name.s"
		return 2
	fi
	timeout 60 "$run" "${c[@]}" >"$work/$name.c" 2>&1
	crc=$?
	# a crashed client leaves its server waiting: end it
	[ $crc -eq 139 ] && kill $sp 2>/dev/null
	wait $sp
	src=$?
	[ $crc -eq 0 ] && [ $src -eq 0 ] && return 0
	[ $crc -eq 139 ] && return 139
	return 1
}

# rping, under a capture
port=$(free_port)
capture_start lo "$work/rping.pcap"
for size in 64 1024 16384 65535; do
	pair "rping-$size" rping -s -a 127.0.0.1 -p PORT -V -C 100 -S $size -- \
		rping -c -a 127.0.0.1 -p PORT -V -C 100 -S $size
done
# UWARP_CRC=off at both ends: the MPA Request and Reply say no CRC
export UWARP_CRC=off
pair "rping-nocrc" rping -s -a 127.0.0.1 -p PORT -V -C 10 -S 64 -- \
	rping -c -a 127.0.0.1 -p PORT -V -C 10 -S 64
unset UWARP_CRC
# (the capture lags: wait until it holds those frames before ending it)
nocrc=0
for _ in $(seq 100); do
	nocrc=$(tshark -r "$work/rping.pcap" -Y 'iwarp_mpa.crc_flag == 0' 2>/dev/null | wc -l)
	[ "$nocrc" -ge 2 ] && break
	sleep 0.1
done
capture_stop
capture_judge rping 0 1 2 3
[ "$nocrc" -ge 2 ] || bad "UWARP_CRC=off: no MPA Request and Reply without CRC in the capture"
err=$(UWARP_CRC=maybe "$run" rping -c -a 127.0.0.1 -p 1 -C 1 2>&1)
grep -q "UWARP_CRC=maybe: not on or off" <<<"$err" || bad "a bad UWARP_CRC is not named: $err"

# rping -q: each end makes its QP itself (ibv_create_qp), moves it with
# rdma_init_qp_attr, names it to the connection manager by number
# (conn_param.qp_num), and the client ends with rdma_establish
port=$(free_port)
pair "rping-own-qp" rping -s -q -a 127.0.0.1 -p PORT -V -C 20 -S 1024 -- \
	rping -c -q -a 127.0.0.1 -p PORT -V -C 20 -S 1024

port=$(free_port)
pair ucmatose ucmatose -p PORT -c 2 -C 10 -- ucmatose -s 127.0.0.1 -p PORT -c 2 -C 10
grep -q "return status 0" "$work/ucmatose.c" || bad "ucmatose client: no 'return status 0'"

# qperf: its server serves until it is ended; the client runs every test
port=$(free_port)
"$run" qperf -lp "$port" >"$work/qperf.s" 2>&1 &
qs=$!
track $qs
if wait_port "$port" $qs; then
	qtests="rc_bw rc_lat rc_rdma_write_bw rc_rdma_read_bw rc_rdma_write_lat rc_rdma_read_lat"
	# shellcheck disable=SC2086 # (the list is the tests' names)
	timeout 120 "$run" qperf -lp "$port" -cm1 127.0.0.1 -t 1 $qtests >"$work/qperf.c" 2>&1
	rc=$?
	n=$(grep -Ec '^ +(bw|latency) += +[0-9.]+ ' "$work/qperf.c")
	if [ $rc -eq 0 ] && [ "$n" -eq 6 ] && ! grep -q failed "$work/qperf.c" "$work/qperf.s"; then
		echo "ok: qperf -cm1 $qtests"
	else
		bad "qperf -cm1: exit $rc, $n results of 6"
		tail -8 "$work/qperf.c" "$work/qperf.s"
	fi
else
	bad "qperf's server did not listen"
	cat "$work/qperf.s"
fi
kill $qs 2>/dev/null

# rsockets: rstream's server takes its sizes from its own options, so
# both ends get the same; rcopy's server serves until it is ended
port=$(free_port)
capture_start lo "$work/rsocket.pcap"
pair rstream rstream -p PORT -S 65536 -C 200 -T v -- rstream -s 127.0.0.1 -p PORT -S 65536 -C 200 -T v
grep -Eq "^custom +64k +200 " "$work/rstream.c" || bad "rstream: no result line"
head -c 20000000 /dev/urandom >"$work/rcopy.src"
port=$(free_port)
"$run" rcopy -p "$port" >"$work/rcopy.s" 2>&1 &
rs=$!
track $rs
if wait_port "$port" $rs; then
	if timeout 60 "$run" rcopy "$work/rcopy.src" "127.0.0.1:$work/rcopy.dst" -p "$port" \
		>"$work/rcopy.c" 2>&1 && cmp -s "$work/rcopy.src" "$work/rcopy.dst"; then
		echo "ok: rcopy, 20 MB, the copy the same"
	else
		bad "rcopy: the copy failed or differs"
		tail -3 "$work/rcopy.c" "$work/rcopy.s"
	fi
else
	bad "rcopy's server did not listen"
fi
kill $rs 2>/dev/null
capture_stop
capture_judge rsockets 0 3

for t in ib_write_bw ib_read_bw ib_send_bw ib_write_lat ib_read_lat ib_send_lat; do
	port=$(free_port)
	pair "$t" "$t" -R -p PORT -n 500 -- "$t" -R -p PORT -n 500 127.0.0.1
	grep -q "Transport type : IW" "$work/$t.c" || bad "$t: not over the iWARP device"
	grep -Eq "^ +[0-9]+ +500 " "$work/$t.c" || bad "$t: no result line"
	test=${t#ib_}
	port=$(free_port)
	pair "uwarp-perf-$test-server" "$bin/uwarp-perf" --perftest "$test" -p PORT --iters 500 -- \
		"$t" -R -p PORT -n 500 127.0.0.1
	port=$(free_port)
	pair "$t-server" "$t" -R -p PORT -n 500 -- \
		"$bin/uwarp-perf" --perftest "$test" -c 127.0.0.1 -p PORT --iters 500
done
exit $fail
