#!/bin/bash
# test_conn_count.sh BUILD_DIR: a preloaded server takes more DDP clients
# than an ES-API process's completion queue and esock's event queue first
# hold (113 connections once, in each process): redis-server under
# libesock-preload.so serves redis-benchmark, preloaded too, with 150
# clients at once, every request answered; then one more client's SET and
# GET.
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
lib=$build/lib/libesock-preload.so
for p in redis-server redis-cli redis-benchmark; do
	command -v $p >/dev/null ||
		{ echo "FAIL $p missing (apt-get install redis-server redis-tools)"; exit 1; }
done
clients=${UWARP_CONN_COUNT:-150}

port=$(free_port)
ESOCK_DDPMODE=$port LD_PRELOAD=$lib redis-server --port "$port" --bind 127.0.0.1 \
	--save "" --appendonly no --maxclients 10000 >"$work/redis.log" 2>&1 &
rp=$!
track "$rp"
wait_port "$port" "$rp" || { cat "$work/redis.log"; echo "FAIL redis did not start"; exit 1; }

ddp() { ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 120 "$@"; }
out=$(ddp redis-benchmark -p "$port" -c "$clients" -n $((clients * 40)) -t set,get -q 2>&1)
rc=$?
echo "$out" | tr '\r' '\n' | grep -v '^$' | tail -3
[ $rc -eq 0 ] || bad "redis-benchmark with $clients DDP clients: rc $rc"
for t in SET GET; do
	echo "$out" | tr '\r' '\n' | grep -q "^$t: [0-9.]* requests per second" ||
		bad "redis-benchmark with $clients DDP clients: no $t figure"
done
clients_seen=$(ddp redis-cli -p "$port" INFO stats | tr -d '\r' |
	sed -n 's/^total_connections_received:\([0-9]*\)/\1/p')
echo "redis received ${clients_seen:-?} connections"
[ "${clients_seen:-0}" -ge "$clients" ] || bad "redis received ${clients_seen:-?} connections, not $clients"
v=after-$RANDOM
[ "$(ddp redis-cli -p "$port" SET k "$v")" = OK ] && [ "$(ddp redis-cli -p "$port" GET k)" = "$v" ] ||
	bad "a DDP client could not SET and GET afterwards"
kill -0 "$rp" 2>/dev/null || bad "redis died"
[ $fail -eq 0 ] && echo "PASS $clients DDP clients of one preloaded server at once"
exit $fail
