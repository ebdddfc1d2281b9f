#!/bin/bash
# test_rping_server.sh BUILD_DIR: uwarp-rping -s -P is a server that a
# careless or hostile client cannot hold up for the others, as rping's own
# persistent server serves each client on a thread of its own. While 10
# clients sit silent and 10 send only the MPA key, and one client is
# stopped (SIGSTOP) in the middle of its pings, another client runs 100
# verified pings; after the stopped one is killed, one more does. Before,
# the server served one client at a time: the stopped one held it.
. "$(dirname "$0")/lib.sh"
hostile_begin "$0" "$@"
build=$1
rping=$build/bin/uwarp-rping

start_server "$work/server.log" 'uwarp-rping: listening on port \([0-9]*\).*' \
	"$rping" -s -a 127.0.0.1 -p 0 -P
python3 - "$port" <<'PY' &
import socket, sys, time
held = []
for i in range(20):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    if i % 2:
        s.sendall(b"MPA ID Req Frame")
    held.append(s)
time.sleep(60)
PY
track $!

"$rping" -c -a 127.0.0.1 -p "$port" -C 100000000 -q >"$work/stopped.log" 2>&1 &
stopped=$!
track "$stopped"
# stopped once its pings are under way: the server is in the middle of it
for _ in $(seq 100); do
	ss -Htn "dport = :$port" | grep -q ESTAB && break
	sleep 0.05
done
sleep 0.2
kill -STOP "$stopped"

if timeout 20 "$rping" -c -a 127.0.0.1 -p "$port" -C 100 -V -q; then
	echo "ok   100 verified pings while another client is stopped mid-ping"
else
	bad "a client was not served while another one was stopped (rc $?)"
fi
kill -9 "$stopped"
wait "$stopped" 2>/dev/null
if timeout 20 "$rping" -c -a 127.0.0.1 -p "$port" -C 10 -V -q; then
	echo "ok   10 more after the stopped client was killed"
else
	bad "the server did not serve a client after one was killed (rc $?)"
fi
kill -0 "$srv" 2>/dev/null || bad "the server died"
[ $fail -eq 0 ] && echo "PASS uwarp-rping -s -P serves each client on its own"
exit $fail
