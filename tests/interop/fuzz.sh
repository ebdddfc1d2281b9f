#!/usr/bin/env bash
# fuzz.sh: uwarp-fuzz against siw, both ways. siw's rping server (-P, a
# connection per case) takes every class of mutated FPDU; then siw's rping
# client dials uwarp-fuzz, which answers its MPA Request and sends the
# case. The reactions by class go to $DIR/siw-fuzz-*.txt and .json (the
# table in docs/wire-notes.md comes from here). It passes when every case
# ran (siw kept accepting and dialling); a kernel warning or oops from any
# of it fails down.sh, as a finding.
. "$(dirname "$0")/lib.sh"
FUZZ=$UWARP_BIN/uwarp-fuzz

job=$(guest_bg "rping -s -P -a $GUEST_IP -p $P_FUZZ -S 1024")
if wait_guest_port $P_FUZZ "$job"; then
	"$FUZZ" -c 127.0.0.1 -p "$H_FUZZ" --cases 6 --seed 1 --timeout 2000 \
		--json "$DIR/siw-fuzz-server.json" --quiet >"$DIR/siw-fuzz-server.txt" 2>&1
	rc=$?
	sed 's/^/    /' "$DIR/siw-fuzz-server.txt"
	[ $rc -eq 0 ] && pass "uwarp-fuzz -> siw rping -s: every case ran" ||
		fail "uwarp-fuzz -> siw rping -s stopped (exit $rc)"
else
	fail "rping -s -P did not start"
fi
guest_end rping

# siw as initiator: one rping -c per case
n=8
host_bg "$DIR/siw-fuzz-client.txt" "$FUZZ" -s -p "$G_FUZZ" --class opcode,qn,msn,stag --cases 2 \
	--seed 1 --timeout 2000 --json "$DIR/siw-fuzz-client.json" --quiet
fz=$!
wait_host_listen "$G_FUZZ"
guest "for i in \$(seq $n); do rping -c -a $HOST_IP -p $P_FUZZ -C 1 -S 64 >/dev/null 2>&1; done" >/dev/null
wait $fz
rc=$?
sed 's/^/    /' "$DIR/siw-fuzz-client.txt"
[ $rc -eq 0 ] && pass "siw rping -c -> uwarp-fuzz: every case ran" ||
	fail "siw rping -c -> uwarp-fuzz stopped (exit $rc)"
finish
