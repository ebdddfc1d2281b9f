#!/bin/bash
# test_accept_stall.sh BUILD_DIR: no client stalls a preloaded server's
# accept for the others. redis-server runs under libesock-preload.so with
# its port in DDP mode; while a plain client pings it every 20 ms, 50
# clients connect and stay silent, 3 send only the MPA key, 3 send an MPA
# Request the server rejects and 3 one it drops (accept_stall.py). The
# plain client's worst round trip must stay under 1 s: a generous bound,
# against 10 s per such client when accept waited for each one's MPA
# negotiation (30 s for three). Then an honest DDP client (redis-cli,
# preloaded too) still sets and gets a value, and a plain one too.
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
here=$(cd "$(dirname "$0")" && pwd)
lib=$build/lib/libesock-preload.so
command -v redis-server >/dev/null && command -v redis-cli >/dev/null ||
	{ echo "FAIL redis-server/redis-cli missing (apt-get install redis-server redis-tools)"; exit 1; }
seconds=${UWARP_ACCEPT_STALL_SECONDS:-8}

port=$(free_port)
ESOCK_DDPMODE=$port LD_PRELOAD=$lib redis-server --port "$port" --bind 127.0.0.1 \
	--save "" --appendonly no >"$work/redis.log" 2>&1 &
rp=$!
track "$rp"
wait_port "$port" "$rp" || { cat "$work/redis.log"; echo "FAIL redis did not start"; exit 1; }

ddp_cli() { ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 20 redis-cli -p "$port" "$@"; }
[ "$(ddp_cli SET before 1)" = OK ] || bad "an honest DDP client could not SET before the attack"

out=$(timeout $((seconds + 60)) python3 "$here/accept_stall.py" 127.0.0.1 "$port" "$seconds")
judge_stall $? "$out" redis

v=honest-$RANDOM
[ "$(ddp_cli SET after "$v")" = OK ] && [ "$(ddp_cli GET after)" = "$v" ] ||
	bad "an honest DDP client could not SET and GET after the attack"
[ "$(timeout 20 redis-cli -p "$port" GET after)" = "$v" ] ||
	bad "a plain client could not GET after the attack"
kill -0 "$rp" 2>/dev/null || bad "redis died"
[ $fail -eq 0 ] && echo "PASS accept stall: worst plain round trip ${worst} ms during the attack"
exit $fail
