#!/usr/bin/env bash
# ucmatose.sh: uwarp-ucmatose against the real ucmatose on siw, both ways:
# two connections, 50 messages of 4096 bytes each way on each (its server
# sends first), CRC off and on (uwarp asks for it).
#
# Now and then siw puts an FPDU on the wire whose CRC its bytes do not
# match (docs/wire-notes.md, "siw's bad CRCs"). uwarp must then send a
# Terminate (LLP, MPA, CRC error) and close, and the case fails as it
# should. A case that failed so runs once more, and only when both show
# it: uwarp-ucmatose names the Terminate it sent, and fpdu_crc.py, which
# reassembles siw's byte stream from the guest's capture and computes each
# CRC itself, finds an FPDU from siw with a bad one.
. "$(dirname "$0")/lib.sh"
UCMA=$UWARP_BIN/uwarp-ucmatose
args="-c 2 -C 50 -S 4096"

# again_for_siw TRY N0 UWARP_OUTPUT CASE: on the first try, whether the
# failed CASE was uwarp's answer to a bad CRC from siw in the capture's
# frames after N0 (then it says so, and the case runs once more)
again_for_siw() {
	[ "$1" = 1 ] && grep -q "Terminate sent to the peer: layer 2 type 0 code 0x02" <<<"$3" &&
		siw_sent_bad_crc "$DIR/guest.pcap" "$2" "$P_UCMA" "$GUEST_IP" || return 1
	echo "FINDING: $4: siw sent an FPDU with a bad CRC, and uwarp answered with a" \
		"Terminate (LLP, CRC error). Once more:"
}

# twice CASE CRC: CASE, and once more when it returns 2
twice() {
	"$1" "$2" 1
	[ $? -eq 2 ] && "$1" "$2" 2
}

# to_siw CRC TRY: uwarp-ucmatose client -> siw's ucmatose server; returns
# 2 when the case is to run once more
to_siw() {
	local crc=$1 try=$2 job out rc gout grc n0
	n0=$(guest_frames)
	job=$(guest_bg "ucmatose -b $GUEST_IP -p $P_UCMA $args")
	if ! wait_guest_port $P_UCMA "$job"; then
		fail "ucmatose server did not start: $(guest_wait "$job" 5)"
		guest_end ucmatose
		return 1
	fi
	out=$(timeout 60 "$UCMA" -s 127.0.0.1 -p "$H_UCMA" $args --crc $crc 2>&1)
	rc=$?
	gout=$(guest_wait "$job" 60)
	grc=$?
	if [ $rc -eq 0 ] && [ $grc -eq 0 ] && grep -q "return status 0" <<<"$gout"; then
		pass "uwarp-ucmatose client -> siw ucmatose server: $args, CRC $crc"
		return 0
	fi
	guest_end ucmatose
	again_for_siw "$try" "$n0" "$out" "uwarp-ucmatose client -> siw ucmatose server, CRC $crc" &&
		return 2
	fail "uwarp-ucmatose client -> siw ucmatose server, CRC $crc (uwarp $rc, siw $grc)"
	echo "$out" | sed 's/^/    uwarp: /'
	echo "$gout" | sed 's/^/    siw: /'
	return 1
}

# from_siw CRC TRY: siw's ucmatose client -> uwarp-ucmatose server; as
# to_siw
from_siw() {
	local crc=$1 try=$2 srv rc gout grc n0 log=$DIR/uwarp-ucmatose-server.log
	n0=$(guest_frames)
	host_bg "$log" "$UCMA" -p "$G_UCMA" $args --crc $crc
	srv=$!
	if ! wait_host_listen "$G_UCMA"; then
		fail "uwarp-ucmatose server did not start"
		end_host $srv
		return 1
	fi
	gout=$(guest "ucmatose -s $HOST_IP -p $P_UCMA $args")
	grc=$?
	[ $grc -eq 0 ] || end_host $srv
	wait $srv
	rc=$?
	if [ $rc -eq 0 ] && [ $grc -eq 0 ] && grep -q "return status 0" <<<"$gout"; then
		pass "siw ucmatose client -> uwarp-ucmatose server: $args, CRC $crc"
		return 0
	fi
	guest_end ucmatose
	again_for_siw "$try" "$n0" "$(cat "$log")" \
		"siw ucmatose client -> uwarp-ucmatose server, CRC $crc" && return 2
	fail "siw ucmatose client -> uwarp-ucmatose server, CRC $crc (siw $grc, uwarp $rc)"
	echo "$gout" | sed 's/^/    siw: /'
	sed 's/^/    uwarp: /' "$log"
	return 1
}

for crc in off on; do
	twice to_siw $crc
	twice from_siw $crc
done
finish
