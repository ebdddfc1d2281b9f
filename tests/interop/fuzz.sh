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

# siw as initiator: one rping -c per case. Each case's line is printed as
# it ends, so a stopped run shows how far it got. An rping that outlives
# its case (uwarp-fuzz closes 2 s after sending it) is ended after 30 s:
# siw's reaction is already recorded by then, and one client that keeps
# waiting must not keep the remaining cases from running; the loop counts
# such clients, and says so.
n=8
HOST_TIMEOUT=400 host_bg "$DIR/siw-fuzz-client.txt" "$FUZZ" -s -p "$G_FUZZ" --class opcode,qn,msn,stag \
	--cases 2 --seed 1 --timeout 2000 --json "$DIR/siw-fuzz-client.json"
fz=$!
wait_host_listen "$G_FUZZ"
hung=$(GUEST_TIMEOUT=360 guest "h=0; for i in \$(seq $n); do timeout 30 rping -c -a $HOST_IP -p $P_FUZZ -C 1 -S 64 \
	>/dev/null 2>&1; case \$? in 124 | 143) h=\$((h + 1)) ;; esac; done; echo \$h" | tail -1)
grc=$?
# a dial that never reached uwarp-fuzz (a client ended before it
# connected) leaves a case waiting: dial again while one does (after
# giving the last case its own end: up to 2 s of waiting, then its report)
for _ in $(seq 100); do kill -0 $fz 2>/dev/null || break; sleep 0.1; done
extra=0
while [ $extra -lt 4 ] && kill -0 $fz 2>/dev/null; do
	extra=$((extra + 1))
	guest "timeout 30 rping -c -a $HOST_IP -p $P_FUZZ -C 1 -S 64 >/dev/null 2>&1" >/dev/null
done
wait $fz
rc=$?
sed 's/^/    /' "$DIR/siw-fuzz-client.txt"
[ $grc -eq 0 ] || log "the guest's rping loop did not finish (exit $grc)"
[ $extra -eq 0 ] || log "uwarp-fuzz was still waiting for a case after the loop: $extra more dial(s)"
[ "${hung:-0}" = 0 ] || log "siw's rping -c outlived its case $hung time(s) and was ended after 30 s"
[ $rc -eq 0 ] && pass "siw rping -c -> uwarp-fuzz: every case ran" ||
	fail "siw rping -c -> uwarp-fuzz stopped (exit $rc)"
finish
