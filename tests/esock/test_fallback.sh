#!/bin/bash
# test_fallback.sh LIBDIR: a preloaded client switched to DDP against a
# server that does not speak iWARP keeps working, over plain TCP
# (esock/esock_fallback.c), and ESOCK_FALLBACK=off keeps the strict
# behaviour (refused, at once). Debian's own programs at both ends: curl
# against python3's http.server (silent until a whole request line comes:
# the MPA Reply's timer decides), iperf3 against plain iperf3 (it answers
# the MPA Request with bytes of its own), a server that resets the second
# connection by closing its listener with it queued; then the DDP-mode
# server side with plain clients, and both ends preloaded, where
# ESOCK_VERBOSE says which connections went DDP. In a network namespace of its own where it
# may (tests/hostile/lib.sh).
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@"
lib=$1/libesock-preload.so
[ -f "$lib" ] || { echo "no $lib"; exit 1; }
ok() { echo "ok   $*"; }
# has FILE TEXT: FILE says TEXT (else the test fails, showing FILE)
has() {
	if grep -qF -- "$2" "$1"; then ok "$(grep -F -- "$2" "$1" | head -1)"; else
		bad "wanted '$2' in:"; sed 's/^/    /' "$1" | head -8; fi
}
pre() { env LD_PRELOAD="$lib" ESOCK_DDPMODE="$port" ESOCK_VERBOSE=1 "$@"; }
HTTP_LISTENING='.*port \([0-9]*\).*'
echo "the page" >"$work/index.html"

# 1. curl over the preload, plain http.server (port 0: the kernel's): the
#    page, twice; the first connection waited for the Reply, the second
#    went plain at once
cd "$work" || exit 1
start_server "$work/plain.out" "$HTTP_LISTENING" python3 -u -m http.server 0 --bind 127.0.0.1
url=http://127.0.0.1:$port/index.html
if pre curl -sS "$url" "$url" >"$work/curl.out" 2>"$work/curl.err" &&
	[ "$(cat "$work/curl.out")" = "the page
the page" ]; then ok "curl, preloaded, plain http.server: the page twice"; else
	bad "curl against plain http.server:"; cat "$work/curl.out" "$work/curl.err"; fi
# (python waits for a line: "no MPA Reply in time", unless the Request's
# private data holds a newline byte, when it answers "400": "bytes that are
# not an MPA Reply"; either is a fallback)
has "$work/curl.err" "to 127.0.0.1:$port: plain TCP: the peer "
has "$work/curl.err" "to 127.0.0.1:$port: plain TCP (not iWARP"

# 2. the strict behaviour: refused after ESOCK_REPLY_MS; bad values said
pre env ESOCK_FALLBACK=off ESOCK_REPLY_MS=300 curl -sS "$url" >/dev/null 2>"$work/strict.err"
rc=$?
[ "$rc" -eq 7 ] && ok "ESOCK_FALLBACK=off: curl exit 7 (could not connect)" ||
	bad "ESOCK_FALLBACK=off: curl exit $rc, wanted 7"
has "$work/strict.err" "to 127.0.0.1:$port: failed: the peer "
has "$work/strict.err" "(ESOCK_FALLBACK=off)"
pre env ESOCK_FALLBACK=maybe ESOCK_REPLY_MS=2x curl -sS "$url" >/dev/null 2>"$work/badenv.err"
has "$work/badenv.err" "esock: ESOCK_FALLBACK='maybe' ignored: on or off"
has "$work/badenv.err" "esock: ESOCK_REPLY_MS='2x' ignored: milliseconds"

# 3. iperf3 over the preload against plain iperf3, and plain iperf3
#    against a preloaded one (the server side's own fallback)
gbits() { python3 -c 'import json,sys; print(round(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]/1e9,1))' "$1" 2>/dev/null; }
port=$(free_port)
iperf3 -s -p "$port" >"$work/iperf-plain.out" 2>&1 &
track $!
wait_port "$port" $! || bad "iperf3 -s did not listen"
pre iperf3 -c 127.0.0.1 -p "$port" -t 1 -J >"$work/ic.json" 2>"$work/ic.err"
rate=$(gbits "$work/ic.json")
[ -n "$rate" ] && ok "iperf3, preloaded, against plain iperf3: $rate Gbit/s over plain TCP" ||
	{ bad "iperf3 against plain iperf3:"; tail -n 5 "$work/ic.json" "$work/ic.err"; }
has "$work/ic.err" "to 127.0.0.1:$port: plain TCP: "
port=$(free_port)
# (not through pre: a function run in the background is a subshell, and
# $! would name it, not iperf3, which then outlived the test)
env LD_PRELOAD="$lib" ESOCK_DDPMODE="$port" ESOCK_VERBOSE=1 \
	iperf3 -s -p "$port" >"$work/iperf-ddp.out" 2>"$work/iperf-ddp.err" &
track $!
wait_port "$port" $! || bad "preloaded iperf3 -s did not listen"
iperf3 -c 127.0.0.1 -p "$port" -t 1 -J >"$work/ic2.json" 2>&1
rate=$(gbits "$work/ic2.json")
[ -n "$rate" ] && ok "plain iperf3 against a preloaded iperf3 server: $rate Gbit/s" ||
	{ bad "plain iperf3 against preloaded server:"; tail -n 5 "$work/ic2.json"; }
has "$work/iperf-ddp.err" "plain TCP (its first bytes are not an MPA Request"

# 3b. a server that opens its listener anew after each client, with the
#     fallback's connection queued on the old one when it goes (as iperf3
#     may, when it is slow between its two closes): the kernel resets that
#     connection, and the fallback must try again, not hand the program a
#     dead socket (curl said "Couldn't connect to server")
start_server "$work/recycle.out" 'port \([0-9]*\)' python3 -u "$(dirname "$0")/recycling_server.py"
if [ "$(pre curl -sS "http://127.0.0.1:$port/" 2>"$work/recycle.err")" = "the page" ]; then
	ok "curl, preloaded, against a server that recycles its listener: the page"; else
	bad "curl against a server that recycles its listener:"; cat "$work/recycle.err"; fi

# 4. plain curl against a preloaded http.server, then curl preloaded too:
#    DDP, and both ends say so
start_server "$work/ddp.out" "$HTTP_LISTENING" env LD_PRELOAD="$lib" ESOCK_DDPMODE=all \
	ESOCK_VERBOSE=1 python3 -u -m http.server 0 --bind 127.0.0.1
url=http://127.0.0.1:$port/index.html
[ "$(curl -sS "$url")" = "the page" ] && ok "plain curl, preloaded http.server: the page" ||
	bad "plain curl against preloaded http.server"
if [ "$(pre curl -sS "$url" 2>"$work/ddp.err")" = "the page" ]; then
	ok "curl and http.server both preloaded: the page"; else bad "both preloaded"; cat "$work/ddp.err"; fi
has "$work/ddp.err" "to 127.0.0.1:$port: DDP"
has "$work/ddp.out" ": DDP (it sent the MPA Request)"

[ "$fail" -eq 0 ] && echo "PASS a client of a server that is not iWARP falls back to plain TCP"
exit "$fail"
