#!/bin/bash
# test_exs_xfer.sh BIN: 1 GiB (UWARP_EXS_XFER_BYTES) between two exs-pump
# processes over loopback, every byte checked by the receiving process:
# SOCK_STREAM in the dynamic, direct and indirect modes, with Immediate
# Data and with Write + Send notifications, with fixed and exponentially
# distributed sizes; the three flow controls of the indirect path (credit
# slots filled from the sender's copies, alone and between direct transfers;
# coalescing with and without asynchronous progress); SOCK_SEQPACKET. A run fails unless the server says
# the data was verified and the transfer counters fit the mode. Then many
# short connections to the same server.
set -u
bin=$1
bytes=${UWARP_EXS_XFER_BYTES:-1G}
log=$(mktemp -d)
trap 'kill $spid 2>/dev/null; wait $spid 2>/dev/null; rm -rf "$log"' EXIT

"$bin/exs-pump" -s -p 0 --loop >"$log/server" 2>&1 &
spid=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/^server: listening on port \([0-9]*\) .*/\1/p' "$log/server")
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "server did not start"; cat "$log/server"; exit 1; }

fail=0
run() { # name expectation args...
	local name=$1 expect=$2
	shift 2
	if ! out=$(timeout 300 "$bin/exs-pump" -c 127.0.0.1 -p "$port" --bytes "$bytes" --json "$@"); then
		echo "FAIL $name: exs-pump exited non-zero: $out"
		fail=1
		return
	fi
	echo "$name: $out"
	if ! python3 - "$expect" "$out" <<'PY'
import json, sys
expect, r = sys.argv[1], json.loads(sys.argv[2])
ok = r["verified"] and r["bytes"] > 0
if expect == "direct":
    ok = ok and r["indirect"] == 0 and r["direct"] > 0
elif expect == "indirect":
    ok = ok and r["direct"] == 0 and r["indirect"] > 0 and r["switches"] == 0
elif expect == "credit":  # slots partly filled: the ring holds less data than room
    ok = ok and r["indirect"] > 0 and r["coalesced"] == 0 and 0 < r["ring_utilisation"] < 1
    ok = ok and r["sendbuf"] > 0  # copied into the sender's buffers
elif expect == "coalesced":
    ok = ok and r["coalesced"] > 0 and r["flushes"] > 0
else:
    ok = ok and r["direct"] + r["indirect"] > 0
sys.exit(0 if ok else 1)
PY
	then
		echo "FAIL $name: expected $expect"
		fail=1
	fi
}

run stream-dynamic any --mode dynamic --size 1M --sends 8 --recvs 8
run stream-direct direct --mode direct --size 1M --sends 8 --recvs 8
run stream-indirect indirect --mode indirect --size 1M --sends 8 --recvs 8
run stream-dynamic-no-imm any --mode dynamic --size 1M --sends 4 --recvs 8 --no-imm
run stream-dynamic-exp any --mode dynamic --size exp:256K:1M --sends 4 --recvs 8
# the three flow controls of the indirect path (fewer bytes: small sends)
run stream-credit credit --mode indirect --flow credit --size exp:3000:20000 --sends 16 \
	--rsize 64K --bytes 64M
# direct transfers from the application's memory between copied ones
run stream-credit-dynamic credit --mode dynamic --flow credit --size exp:3000:60000 --sends 16 \
	--recvs 8 --rsize 64K --bytes 64M
run stream-rdma-auto coalesced --mode dynamic --flow rdma-auto --size exp:700:8000 --sends 32 \
	--bytes 64M
run stream-rdma coalesced --mode indirect --flow rdma --size 2000 --sends 64 --bytes 32M
run seqpacket direct --type seqpacket --size 1M --sends 8 --recvs 8
run seqpacket-no-imm direct --type seqpacket --size 64K --sends 8 --recvs 16 --no-imm
# Ping-pong (the SDP paper's latency test) with each flow control: every
# reply equal to its message, each round's message different.
for flow in credit rdma rdma-auto; do
	if ! out=$(timeout 120 "$bin/exs-pump" -c 127.0.0.1 -p "$port" --pingpong --size 3000 \
		--bytes 600000 --mode indirect --flow "$flow" --json) ||
		! grep -q '"rounds":200,.*"verified":true' <<<"$out"; then
		echo "FAIL pingpong-$flow: $out"
		fail=1
	else
		echo "pingpong-$flow: $out"
	fi
done
# Thirty short connections back to back against the same server, each
# closing while its last messages are still being handled (a socket freed
# in the middle of a batch of completions once corrupted the server's heap).
for i in $(seq 30); do
	if ! timeout 120 "$bin/exs-pump" -c 127.0.0.1 -p "$port" --bytes 32M --size 1M --sends 4 \
		--recvs 8 >"$log/short" 2>&1; then
		echo "FAIL short connection $i:"
		cat "$log/short"
		fail=1
		break
	fi
done
kill -0 $spid 2>/dev/null || { echo "FAIL: the server died"; fail=1; }
cat "$log/server"
grep -q "DATA WRONG" "$log/server" && fail=1
exit $fail
