#!/bin/bash
# test_perf_limits.sh BUILD_DIR: peers ask, the server decides. A
# uwarp-perf server holds at most --max-conns sessions and --max-mem bytes
# of buffers over all of them; a request past either is refused at once
# with an MPA Reject whose private data says why, the client prints it and
# fails, and the server goes on serving. A 40-byte hello asking for 256 MiB
# used to be granted to every connection that sent it.
set -u
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
here=$(cd "$(dirname "$0")" && pwd)
perf=$build/bin/uwarp-perf

# server NAME ARGS...: a uwarp-perf server; sets $srv and $port
server() {
	local name=$1
	shift
	start_server "$work/$name.log" "$PERF_LISTENING" "$perf" -s -p 0 --loop "$@"
}

# refused WHAT PATTERN ARGS...: the client must fail, saying PATTERN
refused() {
	local what=$1 pattern=$2 out
	shift 2
	if out=$("$perf" -c 127.0.0.1 -p "$port" "$@" 2>&1); then
		bad "$what: the client ran"
	elif grep -q "refused the connection: .*$pattern" <<<"$out"; then
		echo "ok   $what: $(grep -o 'refused the connection: .*' <<<"$out")"
	else
		echo "$out"
		bad "$what: not refused with the reason ($pattern)"
	fi
}

served() {
	if "$perf" -c 127.0.0.1 -p "$port" "$@" >"$work/client.log" 2>&1; then
		echo "ok   $1 $2 ...: served"
	else
		cat "$work/client.log"
		bad "a client within the limits was not served: $*"
	fi
}

server conns --max-conns 2
refused "three QPs against --max-conns 2" "--max-conns" --op send --size 64 --iters 10 --qps 3
served --op send --size 64 --iters 10 --qps 2
served --op write --size 65536 --iters 100

server mem --max-mem 16M
refused "1 MiB Writes against --max-mem 16M" "--max-mem" --op write --size 1M --iters 10
served --op write --size 65536 --iters 100
served --op read --size 4096 --iters 100

# crafted hellos, each asking for 256 MiB (64 slots of 4 MiB), held open
# together against a server with 300 MiB: one is granted, the rest refused
server hello --max-mem 300M
python3 - "$port" "$here" "$srv" <<'PY' || bad "crafted hellos"
import struct, sys
sys.path.insert(0, sys.argv[2])
from rddp_peer import Conn, Refused
port, pid = int(sys.argv[1]), sys.argv[3]
# magic "UWPF", version 1, op write, mode bw, verify; size, slots, depth, ...
hello = struct.pack(">IBBBBQIIQII", 0x55575046, 1, 1, 0, 1, 4 << 20, 64, 1, 0, 0, 0)
granted, refused, held = 0, 0, []
for i in range(10):
    try:
        held.append(Conn("127.0.0.1", port, hello))
        granted += 1
    except Refused:
        refused += 1
rss = 0
for line in open("/proc/%s/status" % pid):
    if line.startswith("VmRSS:"):
        rss = int(line.split()[1]) // 1024
print("ok   crafted 256 MiB hellos, 10 held open: %d granted, %d refused; "
      "the server holds %d MiB" % (granted, refused, rss))
sys.exit(0 if granted == 1 and refused == 9 and rss < 300 + 64 else 1)
PY
served --op send --size 64 --iters 10

# idle strangers (no uwarp-perf hello: siw's tools, an attacker) cost a
# connection, not a buffer: what the server offers them is touched only
# where their data lands (each cost 1.05 MiB, its pattern filled at once)
server idle
python3 - "$port" "$here" "$srv" <<'PY' || bad "idle strangers cost too much memory"
import sys
sys.path.insert(0, sys.argv[2])
from rddp_peer import Conn
port, pid = int(sys.argv[1]), sys.argv[3]
def rss_kib():
    for line in open("/proc/%s/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
held = [Conn("127.0.0.1", port) for _ in range(10)]
before = rss_kib()
held += [Conn("127.0.0.1", port) for _ in range(200)]
each = (rss_kib() - before) / 200.0
print("ok   200 idle strangers held open: %.0f KiB each" % each)
sys.exit(0 if each < 256 else 1)
PY
kill -0 "$srv" 2>/dev/null || bad "the server died"
exit $fail
