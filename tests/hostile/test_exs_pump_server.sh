#!/bin/bash
# test_exs_pump_server.sh BUILD_DIR: `exs-pump -s --loop` is a server: it
# serves clients at once, a silent client holds up nobody, and a client
# that fails (killed mid-transfer, or a bad CRC) costs one line on stderr,
# not the server. It used to serve one client at a time and to exit when
# any of them failed.
set -u
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
here=$(cd "$(dirname "$0")" && pwd)
pump=$build/bin/exs-pump

start_server "$work/server.log" "$PUMP_LISTENING" "$pump" -s -p 0 --loop

# a client that is not served within a minute is a failure, not a hang
client() { timeout 60 "$pump" -c 127.0.0.1 -p "$port" "$@" >>"$work/clients.log" 2>&1; }

# a silent client: the MPA exchange and the ES-API hello, then nothing
# (held open by a Python peer of our own until the end of the test)
python3 - "$port" "$here" >"$work/silent.log" 2>&1 <<'PY' &
import struct, sys, time
sys.path.insert(0, sys.argv[2])
from rddp_peer import Conn
from stag_walk import exs_hello
c = Conn("127.0.0.1", int(sys.argv[1]), exs_hello())
print("connected", flush=True)
time.sleep(600)
PY
silent=$!
track $silent
for _ in $(seq 200); do grep -q connected "$work/silent.log" && break; sleep 0.1; done
grep -q connected "$work/silent.log" || { cat "$work/silent.log"; bad "the silent client could not connect"; }

# with it connected, ordinary clients are served, one after another and
# two at once
client --mode dynamic --bytes 16M && echo "ok   served beside a silent client" ||
	bad "a client beside a silent one"
client --mode direct --bytes 64M &
a=$!
client --type seqpacket --bytes 16M &
b=$!
wait $a && wait $b && echo "ok   two clients at once" || bad "two clients at once"

# a client killed mid-transfer: the server logs it and goes on
"$pump" -c 127.0.0.1 -p "$port" --mode dynamic --bytes 64G >/dev/null 2>&1 &
k=$!
track $k
# killed once its transfer runs: its connection has carried 64 MiB
for _ in $(seq 300); do
	acked=$(ss -Htni state established "dport = :$port" |
		sed -n 's/.*bytes_acked:\([0-9]*\).*/\1/p' | sort -n | tail -1)
	[ "${acked:-0}" -gt $((64 << 20)) ] && break
	sleep 0.1
done
kill -9 "$k"
wait "$k" 2>/dev/null
client --mode indirect --bytes 16M && echo "ok   served after a client was killed mid-transfer" ||
	bad "a client after one was killed mid-transfer"

# a client whose FPDU has a bad CRC
python3 - "$port" "$here" <<'PY' || bad "the bad-CRC client"
import struct, sys
sys.path.insert(0, sys.argv[2])
from rddp_peer import Conn
from stag_walk import exs_hello
c = Conn("127.0.0.1", int(sys.argv[1]), exs_hello())
f = c._fpdu(c._untagged(3, 0, b"x" * 32))
c.s.sendall(f[:-1] + bytes([f[-1] ^ 0xFF]))
print("ok   a bad CRC:", c.outcome())
PY
client --mode direct --bytes 16M && echo "ok   served after a bad CRC" || bad "a client after a bad CRC"

kill -0 "$srv" 2>/dev/null || bad "the server exited"
n=$(grep -c 'data verified' "$work/server.log")
echo "     the server verified $n transfers; its failures, a line each:"
grep 'exs-pump: server:' "$work/server.log" | sed 's/^/       /'
[ "$n" -ge 5 ] || bad "the server verified $n transfers, want 5"
[ $fail -eq 0 ] || { echo "--- clients"; tail -n 20 "$work/clients.log"; }
exit $fail
