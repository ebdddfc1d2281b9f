#!/bin/bash
# test_prefork_stall.sh BUILD_DIR: no client stalls a preloaded prefork
# server's accept for the others. nginx listens in its master process and
# accepts in the workers it forks (the listener is shared across fork:
# each process that waits on it sorts its clients in the background with
# a gate of its own). nginx runs under libesock-preload.so with its port in
# DDP mode and one worker, so that the attackers and the plain client meet
# in the same process; while the plain client asks for /ping every 20 ms on
# one keep-alive connection, 50 clients connect and stay silent, 3 send
# only the MPA key, 3 an MPA Request the server rejects and 3 one it drops
# (accept_stall.py). The plain client's worst round trip must stay under
# 1 s: a generous bound, against 10 s per such client when the worker's
# accept waited for each one's MPA negotiation. Then, with two workers,
# 20 honest DDP clients (curl, preloaded) and 20 plain ones at once each
# get the file intact.
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../esock/nginx_conf.sh"
lib=$build/lib/libesock-preload.so
for p in nginx curl; do
	command -v $p >/dev/null || { echo "FAIL $p missing (apt-get install nginx curl)"; exit 1; }
done
seconds=${UWARP_ACCEPT_STALL_SECONDS:-8}
mkdir -p "$work/www" "$work/ngx"
printf pong >"$work/www/ping"
head -c 300K /dev/urandom >"$work/www/f.bin"

# nginx_start WORKERS: nginx under the preload on a fresh $port, $ngx its pid
nginx_start() {
	port=$(free_port)
	nginx_conf "$work/ngx" "$port" "$1"
	ESOCK_DDPMODE=$port LD_PRELOAD=$lib nginx -e "$work/ngx/error.log" -p "$work/ngx" \
		-c "$work/ngx/nginx.conf" >"$work/ngx/out.log" 2>&1 &
	ngx=$!
	track "$ngx"
	wait_port "$port" "$ngx" || { cat "$work/ngx/error.log"; echo "FAIL nginx did not start"; exit 1; }
}
nginx_stop() {
	kill "$ngx" 2>/dev/null
	wait "$ngx" 2>/dev/null
}
ddp_curl() { ESOCK_DDPMODE=$port LD_PRELOAD=$lib timeout 30 curl -sf "$@"; }

nginx_start 1
[ "$(ddp_curl "http://127.0.0.1:$port/ping")" = pong ] ||
	bad "an honest DDP client got no pong before the attack"
out=$(timeout $((seconds + 60)) python3 "$here/accept_stall.py" 127.0.0.1 "$port" "$seconds" http)
judge_stall $? "$out" nginx
[ "$(ddp_curl "http://127.0.0.1:$port/ping")" = pong ] ||
	bad "an honest DDP client got no pong after the attack"
kill -0 "$ngx" 2>/dev/null || bad "nginx died"
nginx_stop

# two workers, each with its own gate on the shared listener
nginx_start 2
cpids=()
for i in $(seq 20); do
	ddp_curl -o "$work/ddp.$i" "http://127.0.0.1:$port/f.bin" & cpids+=($!)
	timeout 30 curl -sf -o "$work/tcp.$i" "http://127.0.0.1:$port/f.bin" & cpids+=($!)
done
for p in "${cpids[@]}"; do wait "$p" || bad "a curl failed (rc $?)"; done
for i in $(seq 20); do
	cmp -s "$work/ddp.$i" "$work/www/f.bin" || bad "DDP client $i's copy differs"
	cmp -s "$work/tcp.$i" "$work/www/f.bin" || bad "plain client $i's copy differs"
done
nginx_stop
[ $fail -eq 0 ] && echo "PASS prefork accept stall: worst plain round trip ${worst} ms during the attack; 40 clients of two workers served"
exit $fail
