#!/usr/bin/env bash
# test_netfuzz.sh: uwarp-fuzz against uwarp's own server (uwarp-perf -s).
# Every mutated FPDU must end its connection with the Terminate the receive
# rules document (docs/wire-notes.md, "uwarp-fuzz"), a message that stays
# valid may be taken, a cut FPDU ends in a close, nothing crashes, and the
# same server serves a good client afterwards. Usage: test_netfuzz.sh BINDIR
set -uo pipefail
bin=${1:?bindir}
out=$(mktemp -d /tmp/netfuzz.XXXXXX)
trap 'kill $srv 2>/dev/null; rm -rf "$out"' EXIT
"$bin/uwarp-perf" -s -p 0 --loop >"$out/server.log" 2>&1 &
srv=$!
for i in $(seq 50); do
	port=$(grep -oE 'listening on port [0-9]+' "$out/server.log" | grep -oE '[0-9]+$')
	[ -n "$port" ] && break
	sleep 0.1
done
[ -n "$port" ] || { echo "FAIL: uwarp-perf -s did not start"; exit 1; }
failed=0
check() { # DESCRIPTION CONDITION...
	local what=$1
	shift
	if "$@"; then echo "PASS: $what"; else echo "FAIL: $what"; failed=1; fi
}
n=12
# The two runs go at once, against the one server: each case that draws
# silence waits out its 1.5 s, so side by side they take half the time,
# and the server meets two hostile clients together.
declare -A fz_pid
for crc in on off; do
	"$bin/uwarp-fuzz" -c 127.0.0.1 -p "$port" --crc $crc --cases $n --seed 7 --timeout 1500 \
		--watch $srv --json "$out/crc-$crc.json" --quiet >"$out/table-$crc" 2>&1 &
	fz_pid[$crc]=$!
done
for crc in on off; do
	wait "${fz_pid[$crc]}"
	rc=$?
	cat "$out/table-$crc"
	check "uwarp-fuzz ran every case (CRC $crc)" [ $rc -eq 0 ]
	# reactions by class: the table's columns
	col() { awk -v c="$1" -v k="$2" '$1 == "class" {for (i = 1; i <= NF; i++) h[$i] = i} $1 == c {print $h[k]}' "$out/table-$crc"; }
	for cls in qn msn mo stag to length version random opcode; do
		check "$cls: every case drew a Terminate (CRC $crc)" [ "$(col $cls terminate)" = $n ]
	done
	# a Send that only lost its L bit is a valid first segment: it waits
	check "bits: a Terminate, or waiting for the rest (CRC $crc)" \
		[ $(($(col bits terminate) + $(col bits silence))) = $n ]
	for cls in opcode qn msn mo stag to length bits version truncate oversize crc random valid; do
		check "$cls: no crash, reset or stray reply (CRC $crc)" \
			[ "$(col $cls crash)$(col $cls rst)$(col $cls reply)" = 000 ]
	done
	# the codes the receive rules document, exactly
	code() { grep -c "\"class\":\"$1\".*\"layer\":$2,\"etype\":$3,\"ecode\":$4," "$out/crc-$crc.json"; }
	check "qn: DDP untagged invalid QN 1/2/0x01" [ "$(code qn 1 2 1)" = $n ]
	check "msn: DDP untagged MSN range 1/2/0x03" [ "$(code msn 1 2 3)" = $n ]
	check "mo: DDP untagged invalid MO 1/2/0x04" [ "$(code mo 1 2 4)" = $n ]
	check "stag: DDP tagged invalid STag 1/1/0x00" [ "$(code stag 1 1 0)" = $n ]
	check "length: LLP MPA ULPDU too short 2/0/0x03" [ "$(code length 2 0 3)" = $n ]
done
check "crc: LLP MPA CRC error 2/0/0x02 for every bad CRC" [ "$(grep -c '"class":"crc".*"layer":2,"etype":0,"ecode":2,' "$out/crc-on.json")" = $n ]
check "truncate: a cut FPDU under CRC ends in a close" [ "$(awk '$1 == "truncate" {print $3}' "$out/table-on")" = $n ]
# the other way round: uwarp's initiator dials the fuzzer
"$bin/uwarp-fuzz" -s -p 0 --class qn,stag --cases 2 --timeout 1500 >"$out/accept.log" 2>&1 &
fz=$!
for i in $(seq 50); do
	fport=$(grep -oE 'listening on port [0-9]+' "$out/accept.log" | grep -oE '[0-9]+$')
	[ -n "$fport" ] && break
	sleep 0.1
done
for i in 1 2 3 4; do
	timeout 10 "$bin/uwarp-rping" -c -a 127.0.0.1 -p "$fport" -C 1 -S 64 >>"$out/rping.log" 2>&1
done
wait $fz
check "accepting: uwarp's initiator answers qn with 1/2/0x01" \
	[ "$(grep -c 'Terminate sent to the peer: layer 1 type 2 code 0x01' "$out/rping.log")" = 2 ]
check "accepting: uwarp's initiator answers stag with 1/1/0x00" \
	[ "$(grep -c 'Terminate sent to the peer: layer 1 type 1 code 0x00' "$out/rping.log")" = 2 ]
check "the server is still up" kill -0 $srv
"$bin/uwarp-perf" -c 127.0.0.1 -p "$port" --op write --size 65536 --iters 20 >"$out/client.log" 2>&1
check "the same server serves a good client afterwards" [ $? -eq 0 ]
exit $failed
