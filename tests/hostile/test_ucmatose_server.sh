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

# A client whose FPDU carries a bad CRC gets a Terminate (layer LLP, type
# MPA, code 0x02: RFC 6580 section 4) and the server's run fails, naming
# the Terminate it sent: interop/ucmatose.sh tells siw's bad CRCs from
# uwarp's own failures by that line.
port=$(free_port)
"$ucm" -b 127.0.0.1 -p "$port" -c 1 -C 10 >"$work/crc-server.log" 2>&1 &
srv=$!
track "$srv"
wait_port "$port" "$srv" || { cat "$work/crc-server.log"; bad "the server did not listen"; exit 1; }
got=$(PYTHONPATH="$(dirname "$0")" timeout 20 python3 - "$port" <<'PY'
import sys
from rddp_peer import Conn
c = Conn("127.0.0.1", int(sys.argv[1]))
f = bytearray(c._fpdu(c._untagged(3, 0, b"\0" * 64)))  # a Send
f[-1] ^= 0x01
c.s.sendall(bytes(f))
print(*c.outcome())
PY
)
[ "$got" = "terminate (2, 0, 2)" ] && echo "ok   a bad CRC is answered with a Terminate 2/0/0x02" ||
	bad "a bad CRC got: $got"
if timeout 20 tail --pid="$srv" -f /dev/null && ! wait "$srv" &&
	grep -q "Terminate sent to the peer: layer 2 type 0 code 0x02" "$work/crc-server.log"; then
	echo "ok   the server's run failed and named the Terminate it sent"
else
	cat "$work/crc-server.log"
	bad "the server did not fail naming its Terminate"
fi
[ $fail -eq 0 ] && echo "PASS uwarp-ucmatose's server is not held by clients that never connect," \
	"and says which Terminate ended a connection"
exit $fail
