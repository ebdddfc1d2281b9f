#!/bin/bash
# test_ddpmode_env.sh BUILD_DIR: the preload selects the sockets the
# environment names, however a user writes it, and says so when it cannot
# read it. A plain TCP server (python) records the first bytes of each
# client: a client the preload selected sends the MPA Request key ("MPA ID
# Req Frame"), any other its own bytes. ESOCK_DDPMODE=ALL and a port list
# separated by spaces select the client (before: neither did, silently);
# ESOCK_DDPMODE=bogus selects nothing and says so on stderr; ESOCK_VERBOSE=1
# says in one line what is selected.
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@"
build=$1
lib=$build/lib/libesock-preload.so

cat >"$work/server.py" <<'PY'
import socket, sys
l = socket.socket()
l.bind(("127.0.0.1", 0))
l.listen(8)
print("listening on port %d" % l.getsockname()[1], flush=True)
while True:
    c, _ = l.accept()
    c.settimeout(10)
    try:
        b = c.recv(16)
    except OSError:
        b = b"(nothing)"
    print("got %r" % b, flush=True)
    c.close()
PY
start_server "$work/server.log" 'listening on port \([0-9]*\)' python3 "$work/server.py"

n=0
# client ENV-VALUE VERBOSE: its stderr in $work/client.err, the bytes the
# server got from it in $got
client() {
	n=$((n + 1))
	# (strict: a selected client of this plain server would otherwise
	# connect again, plainly, after the MPA Request: esock_fallback.c)
	ESOCK_FALLBACK=off ESOCK_DDPMODE=$1 ESOCK_VERBOSE=$2 LD_PRELOAD=$lib timeout 30 python3 -c '
import socket, sys
s = socket.socket()
s.settimeout(10)
try:
    s.connect(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"hello-plain-tcp!")
except OSError:
    pass
s.close()' "$port" 2>"$work/client.err"
	for _ in $(seq 200); do
		[ "$(grep -c '^got' "$work/server.log")" -ge "$n" ] && break
		sleep 0.05
	done
	got=$(grep '^got' "$work/server.log" | sed -n "${n}p")
}

selected() {
	client "$1" 0
	if grep -q "MPA ID Req Frame" <<<"$got"; then
		echo "ok   ESOCK_DDPMODE='$1' selects the client: $got"
	else
		bad "ESOCK_DDPMODE='$1' did not select the client: $got $(cat "$work/client.err")"
	fi
}
selected ALL
selected "9 $port"
selected " 9, $port "

client bogus 0
if grep -q "hello-plain-tcp" <<<"$got" && grep -q "ESOCK_DDPMODE='bogus' ignored" "$work/client.err"; then
	echo "ok   ESOCK_DDPMODE=bogus: plain TCP, and said: $(cat "$work/client.err")"
else
	bad "ESOCK_DDPMODE=bogus: server got $got; the client said: $(cat "$work/client.err")"
fi

client "$port" 1
if grep -q "DDP for TCP sockets with local or remote port $port" "$work/client.err"; then
	echo "ok   ESOCK_VERBOSE=1: $(cat "$work/client.err")"
else
	bad "ESOCK_VERBOSE=1 did not say what is selected: $(cat "$work/client.err")"
fi
[ $fail -eq 0 ] && echo "PASS ESOCK_DDPMODE is read as written, and what it cannot read is said"
exit $fail
