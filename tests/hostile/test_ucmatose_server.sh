#!/bin/bash
# test_ucmatose_server.sh BUILD_DIR: uwarp-ucmatose, like rdma-core's
# ucmatose, is a one-shot tool: its server takes the first -c connections
# that complete the MPA exchange, moves its messages and exits. What never
# completes the exchange must not take one of those places or hold the
# server: while 20 clients sit silent, 10 send only the MPA key and 3 send
# an MPA Request of a revision that does not exist, an honest client is
# served and both sides exit 0. (A client that completes the exchange does
# take a place, as in ucmatose; then the run is that client's to fail.)
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
ucm=$build/bin/uwarp-ucmatose

port=$(free_port)
"$ucm" -b 127.0.0.1 -p "$port" -c 1 -C 10 >"$work/server.log" 2>&1 &
srv=$!
track "$srv"
wait_port "$port" "$srv" || { cat "$work/server.log"; bad "the server did not listen"; exit 1; }

python3 - "$port" >"$work/junk.log" 2>&1 <<'PY' &
import socket, sys, time
held = []
for i in range(33):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    if 20 <= i < 30:
        s.sendall(b"MPA ID Req Frame")
    elif i >= 30:  # flags C, revision 9, no private data
        s.sendall(b"MPA ID Req Frame" + bytes([0x40, 9, 0, 0]))
    held.append(s)
print("held", flush=True)
time.sleep(60)
PY
junk=$!
track "$junk"
# every junk client connected and said its piece before the honest one
for _ in $(seq 200); do
	grep -q held "$work/junk.log" && break
	sleep 0.05
done
grep -q held "$work/junk.log" || bad "the junk clients did not connect"

if timeout 20 "$ucm" -s 127.0.0.1 -p "$port" -c 1 -C 10 >"$work/client.log" 2>&1; then
	echo "ok   an honest client served beside 33 that never completed the MPA exchange"
else
	cat "$work/client.log"
	bad "the honest client was not served (rc $?)"
fi
for _ in $(seq 200); do
	kill -0 "$srv" 2>/dev/null || break
	sleep 0.1
done
if kill -0 "$srv" 2>/dev/null; then
	bad "the server did not finish its run"
elif wait "$srv"; then
	echo "ok   the server finished its run (exit 0)"
else
	cat "$work/server.log"
	bad "the server failed"
fi
[ $fail -eq 0 ] && echo "PASS uwarp-ucmatose's server is not held by clients that never connect"
exit $fail
