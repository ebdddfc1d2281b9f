#!/usr/bin/env bash
# ucmatose.sh: uwarp-ucmatose against the real ucmatose on siw, both ways:
# two connections, 50 messages of 4096 bytes each way on each (its server
# sends first), CRC off and on (uwarp asks for it).
. "$(dirname "$0")/lib.sh"
UCMA=$UWARP_BIN/uwarp-ucmatose
args="-c 2 -C 50 -S 4096"

for crc in off on; do
	job=$(guest_bg "ucmatose -b $GUEST_IP -p $P_UCMA $args")
	if wait_guest_port $P_UCMA "$job"; then
		out=$(timeout 60 "$UCMA" -s 127.0.0.1 -p "$H_UCMA" $args --crc $crc 2>&1)
		rc=$?
		gout=$(guest_wait "$job" 60)
		grc=$?
		if [ $rc -eq 0 ] && [ $grc -eq 0 ] && grep -q "return status 0" <<<"$gout"; then
			pass "uwarp-ucmatose client -> siw ucmatose server: $args, CRC $crc"
		else
			fail "uwarp-ucmatose client -> siw ucmatose server, CRC $crc (uwarp $rc, siw $grc)"
			echo "$out" | sed 's/^/    uwarp: /'
			echo "$gout" | sed 's/^/    siw: /'
			guest_end ucmatose
		fi
	else
		fail "ucmatose server did not start: $(guest_wait "$job" 5)"
		guest_end ucmatose
	fi

	host_bg "$DIR/uwarp-ucmatose-server.log" "$UCMA" -p "$G_UCMA" $args --crc $crc
	srv=$!
	wait_host_listen "$G_UCMA" || { fail "uwarp-ucmatose server did not start"; end_host $srv; continue; }
	gout=$(guest "ucmatose -s $HOST_IP -p $P_UCMA $args")
	grc=$?
	[ $grc -eq 0 ] || end_host $srv
	wait $srv
	rc=$?
	if [ $rc -eq 0 ] && [ $grc -eq 0 ] && grep -q "return status 0" <<<"$gout"; then
		pass "siw ucmatose client -> uwarp-ucmatose server: $args, CRC $crc"
	else
		fail "siw ucmatose client -> uwarp-ucmatose server, CRC $crc (siw $grc, uwarp $rc)"
		echo "$gout" | sed 's/^/    siw: /'
		sed 's/^/    uwarp: /' "$DIR/uwarp-ucmatose-server.log"
	fi
done
finish
