#!/bin/bash
# test_esock_idle.sh BUILD_DIR: ESOCK_IDLE_MS bounds how long a quiet DDP
# peer holds a preloaded server's connection. redis-server runs under
# libesock-preload.so with ESOCK_IDLE_MS=500: a preloaded client that
# connects and says nothing is disconnected (its read ends) within a few
# seconds, while a preloaded redis-cli sending PING every 100 ms for 3 s
# (six times the limit) gets every PONG. A nonsense value is refused with
# a message, not taken silently.
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
lib=$build/lib/libesock-preload.so
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "FAIL redis-server/redis-cli missing (apt-get install redis-server redis-tools)"; exit 1; }

port=$(free_port)
ESOCK_IDLE_MS=500 ESOCK_DDPMODE=$port LD_PRELOAD=$lib redis-server --port "$port" \
	--bind 127.0.0.1 --save "" --appendonly no >"$work/redis.log" 2>&1 &
rp=$!
track "$rp"
wait_port "$port" "$rp" || { cat "$work/redis.log"; echo "FAIL redis did not start"; exit 1; }

out=$(ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 60 python3 - "$port" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
t0 = time.monotonic()
try:
    got = s.recv(16)
    how = "end of stream" if not got else "data %r" % got
except socket.timeout:
    how = "nothing in 20 s"
except OSError as e:
    how = "error %s" % e.strerror
print("silent client: %s after %.1f s" % (how, time.monotonic() - t0))
PY
)
echo "$out"
grep -q "end of stream\|error" <<<"$out" || bad "a silent DDP client was not disconnected by ESOCK_IDLE_MS=500"

pongs=$(ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 60 redis-cli -p "$port" -r 30 -i 0.1 PING | grep -c PONG)
echo "lively client: $pongs of 30 PONGs"
[ "$pongs" = 30 ] || bad "a client sending every 100 ms lost its connection ($pongs of 30 PONGs)"

msg=$(ESOCK_IDLE_MS=abc ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 20 redis-cli -p "$port" PING 2>&1)
grep -q "ESOCK_IDLE_MS=abc ignored" <<<"$msg" || bad "ESOCK_IDLE_MS=abc was taken silently: $msg"
kill -0 "$rp" 2>/dev/null || bad "redis died"
[ $fail -eq 0 ] && echo "PASS ESOCK_IDLE_MS ends a silent DDP connection and spares a lively one"
exit $fail
