#!/bin/bash
# test_dat_programs.sh DAT_CONF: Debian's uDAPL test programs (dapl2-utils)
# between two processes over uwarp on loopback, through the DAT registry
# (DAT_OVERRIDE=DAT_CONF names the provider "uwarp").
#
#   dtest      every mode that needs no extension: RDMA Write both ways
#              with a Send after, RDMA Read, Send/Receive ping-pong
#              (the default run), unidirectional (-u), streaming Writes
#              (-w), Write ping-pong with data verification (-W -D) over
#              every size from 1 byte to 64 KiB (-a; 100 round trips a
#              size: both sides spin on memory, and ctest runs another
#              test beside this one on two cores), a CNO (-c),
#              polling (-p), performance times (-t)
#   dapltest   transaction tests with data verification (-V): Send/Recv,
#              RDMA Read and Write, several threads and EPs, polling (-P);
#              performance tests (Write and Read, blocking and polling);
#              the limit test; the FFT tests (hwconn, endpoint, pz, mem,
#              queryinfo, connmgt)
#
# A run passes when every program says so: dtest prints "PASSED" on both
# sides; dapltest's client prints its statistics and neither side prints
# an error (dapltest's exit status is 0 either way); FFT prints no failed
# assertion.
set -u
# DAPL maps connection qualifiers to TCP ports as the OpenFabrics provider
# does, and dapltest's limit test listens on a hundred consecutive ones
# (43414-43513) in the kernel's ephemeral range, where a connection may
# hold one: a parallel ctest job's did in CI, and so did one of this
# script's own earlier clients. Where we may, we run in a network
# namespace of our own (a loopback no one else uses) whose connections
# take their ports from above 50000.
if [ -z "${UWARP_DAT_NETNS:-}" ] && unshare -n true 2>/dev/null; then
	UWARP_DAT_NETNS=1 exec unshare -n bash -c 'ip link set lo up &&
		echo "50000 60999" >/proc/sys/net/ipv4/ip_local_port_range &&
		exec bash "$0" "$@"' "$0" "$@"
fi
export DAT_OVERRIDE=$1
[ -f "$DAT_OVERRIDE" ] || { echo "no $DAT_OVERRIDE"; exit 1; }
command -v dtest >/dev/null && command -v dapltest >/dev/null ||
	{ echo "dtest/dapltest missing (apt-get install dapl2-utils)"; exit 1; }
work=$(mktemp -d)
pids=()
cleanup() {
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	rm -rf "$work"
}
trap cleanup EXIT
fail=0
bad() { echo "FAIL $*"; fail=1; }

# wait_listen PID: until the program PID started (under timeout) listens
# on a TCP port, 20 s at most: a fixed sleep loses to a loaded machine
wait_listen() {
	local i c
	for i in $(seq 200); do
		for c in $(pgrep -P "$1"); do
			ss -Hltnp 2>/dev/null | grep -q "pid=$c," && return 0
		done
		sleep 0.1
	done
	return 1
}

# dtest's server listens only after sending its parameters: in our own
# namespace the first SYN of each run to its port is dropped (the rule's
# file says why)
if [ -n "${UWARP_DAT_NETNS:-}" ] && command -v nft >/dev/null; then
	nft -f "$(dirname "$0")/dtest-first-syn.nft" || echo "(no nftables rule: dtest runs may race)"
fi
dtest_fresh() { nft flush set inet uwarp_dtest tried 2>/dev/null || true; }

# ---- dtest: server and client, both must pass ----
n=0
dtest_pair() {
	n=$((n + 1))
	# the provider's debug trace (connection events and their status) goes
	# into the logs: a failure shows whole below, its logs' folder is gone
	UWARP_DAT_DEBUG=1 timeout 120 dtest -P uwarp -s "$@" >"$work/dts.$n" 2>&1 &
	local s=$!
	pids+=("$s")
	wait_listen "$s"
	dtest_fresh
	UWARP_DAT_DEBUG=1 timeout 120 dtest -P uwarp -h 127.0.0.1 "$@" >"$work/dtc.$n" 2>&1
	local c=$?
	wait "$s"
	local sr=$?
	if [ $c -ne 0 ] || [ $sr -ne 0 ] || ! grep -q "Test Complete. PASSED" "$work/dtc.$n" ||
		! grep -q "Test Complete. PASSED" "$work/dts.$n"; then
		bad "dtest $*: client rc $c, server rc $sr"
		tail -n 300 "$work/dtc.$n" "$work/dts.$n"
		return
	fi
	echo "dtest $*: PASSED both sides ($(grep -Eo '[0-9.]+ MB/s(ec)?' "$work/dtc.$n" | tail -1))"
}
# The default run keeps dtest's 4 MiB messages; the modes after it move
# 64 KiB ones (-b), which still span several FPDUs. dtest posts each of
# its 100 messages into fresh memory of its own, and the first touch of a
# page costs the receiver a page fault (uwarp pins nothing: see
# docs/performance.md, "dtest's Send ping-pong"): at 4 MiB a run took 8 to
# 11 s of the suite's time, at 64 KiB under 2.
dtest_pair
dtest_pair -u -b 65536
dtest_pair -w
dtest_pair -W -D -a -b 65536 -B 100
dtest_pair -c -b 65536
dtest_pair -p -b 65536
dtest_pair -t -b 65536

# ---- dapltest: one server, many clients ----
timeout 600 dapltest -T S -D uwarp >"$work/dps" 2>&1 &
srv=$!
pids+=("$srv")
wait_listen "$srv"
dapl_client() { # what T|P [args...] (dapltest wants -T first)
	local what=$1 type=$2
	shift 2
	n=$((n + 1))
	timeout 180 dapltest -T "$type" -s 127.0.0.1 -D uwarp "$@" >"$work/dpc.$n" 2>&1
	local rc=$?
	if [ $rc -ne 0 ] || ! grep -q "End of Work" "$work/dpc.$n" ||
		grep -Eqi "error|fail" "$work/dpc.$n"; then
		bad "dapltest $what ($*): rc $rc"
		tail -n 8 "$work/dpc.$n"
		return
	fi
	echo "dapltest $what: ok $(grep -E 'Bandwidth|Total WQE' "$work/dpc.$n" | head -1 | tr -s ' ')"
}
dapl_client "Send/Recv, verified" T -i 200 -t 1 -w 1 -V client SR 256 1 server SR 256 1
dapl_client "Send/Recv, RDMA Read and Write, 2 threads x 4 EPs, verified" \
	T -i 200 -t 2 -w 4 -V client SR 4096 2 server SR 4096 2 client RR 65536 server RW 65536 2
dapl_client "Send/Recv, RDMA Write, polling, verified" \
	T -i 200 -t 1 -w 2 -V -P client SR 1024 -f server SR 1536 2 -f client RW 8192 3
dapl_client "performance, RDMA Write" P -i 1000 RW 65536 4
dapl_client "performance, RDMA Read (4 segments)" P -i 1000 RR 65536 4
dapl_client "performance, RDMA Write, polling" P -i 1000 -m p RW 4096 1
timeout 30 dapltest -T Q -s 127.0.0.1 -D uwarp >"$work/dpq" 2>&1 || bad "dapltest quit"
wait "$srv"
if grep -Eqi "error|fail" "$work/dps"; then
	bad "dapltest server"
	grep -Ei -B2 -A2 "error|fail" "$work/dps" | head -20
else
	echo "dapltest server: every test finished without an error"
fi

# the limit test and the FFT tests (no server: their own)
n=$((n + 1))
timeout 300 dapltest -T L -D uwarp -m 100 >"$work/lim" 2>&1
if [ $? -ne 0 ] || grep -Eqi "error|fail" "$work/lim"; then
	bad "dapltest limit test"
	grep -Ei "error|fail" "$work/lim" | head
else
	echo "dapltest limit test: $(grep -c '^Limitation Test' "$work/lim") limits reached"
fi
fft() { # feature [cases...]
	local f=$1
	shift
	timeout 120 stdbuf -oL dapltest -T F -D uwarp -s 127.0.0.1 -f "$f" "$@" >"$work/fft.$f" 2>&1
	local rc=$?
	local ran
	ran=$(grep -c "case:" "$work/fft.$f")
	if [ $rc -ne 0 ] || [ "$ran" -eq 0 ] || grep -q "failed in" "$work/fft.$f"; then
		bad "dapltest FFT $f: rc $rc"
		grep -B4 -A1 "failed in" "$work/fft.$f" | head -20
	else
		echo "dapltest FFT $f: $ran cases, no failed assertion"
	fi
}
fft hwconn
fft endpoint
fft pz
fft mem
# (cases 13 and 15 hand dat_cno_query and dat_evd_query the registry's IA
# handle, which libdat2 itself dereferences as an object: they crash with
# any provider)
fft queryinfo case0 case1 case2 case3 case4 case5 case6 case7 case8 case9 case10 case11 \
	case12 case14 case16 case17
fft connmgt

[ $fail -eq 0 ] && echo "uDAPL: dtest and dapltest passed over uwarp"
exit $fail
