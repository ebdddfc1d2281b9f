#!/usr/bin/env bash
# terminate.sh: Terminates both ways between uwarp and siw.
# - uwarp sends one: uwarp-rping's client offers a dead STag, siw's Read
#   of it draws uwarp's Terminate (RDMAP, remote protection, invalid STag:
#   layer 0 type 1 code 0x00); siw must log it and reset its QP.
# - siw sends one: uwarp-rping's server Writes the echo to a dead STag;
#   siw's Terminate (DDP, tagged buffer, invalid STag) must be decoded.
# down.sh records both frames' bytes from the guest's capture.
. "$(dirname "$0")/lib.sh"
RPING=$UWARP_BIN/uwarp-rping

before=$(guest "dmesg | grep -c 'got TERMINATE'")
job=$(guest_bg "rping -s -a $GUEST_IP -p $P_RPING -C 1 -S 64 -V")
if wait_guest_port $P_RPING "$job"; then
	out=$(timeout 30 "$RPING" -c -a 127.0.0.1 -p "$H_RPING" -C 1 -S 64 -V --fault bad-rkey 2>&1)
	rc=$?
	gout=$(guest_wait "$job" 30)
	grc=$?
	after=$(guest "dmesg | grep -c 'got TERMINATE'")
	seen=$(guest "dmesg | grep 'got TERMINATE' | tail -1")
	if [ $rc -ne 0 ] && grep -q "Terminate sent to the peer: layer 0 type 1 code 0x00" <<<"$out" &&
		[ "$after" -gt "$before" ] && grep -q "DISCONNECT" <<<"$gout"; then
		pass "uwarp's Terminate (RDMAP remote protection, invalid STag) resets siw's QP; siw logged:${seen#*]}"
	else
		fail "uwarp's Terminate to siw: uwarp $rc, siw $grc, siw's TERMINATE log lines $before -> $after"
		echo "$out" | sed 's/^/    uwarp: /'
		echo "$gout" | sed 's/^/    siw: /'
		guest_end rping
	fi
else
	fail "rping -s did not start"
fi

host_bg "$DIR/uwarp-rping-terminate.log" "$RPING" -s -p "$G_RPING" -V --fault bad-rkey
srv=$!
if wait_host_listen "$G_RPING"; then
	gout=$(guest "rping -c -a $HOST_IP -p $P_RPING -C 1 -S 64 -V")
	grc=$?
	wait $srv
	rc=$?
	log=$DIR/uwarp-rping-terminate.log
	if [ $rc -ne 0 ] && grep -q "Terminate from the peer: layer 1 type 1 code 0x00 (siw's bit layout)" "$log"; then
		pass "siw's Terminate for a Write to a dead STag decoded: $(grep -o 'layer.*' "$log")"
	else
		fail "siw's Terminate: uwarp $rc, siw $grc"
		echo "$gout" | sed 's/^/    siw: /'
		sed 's/^/    uwarp: /' "$log"
	fi
else
	fail "uwarp-rping -s did not start"
	end_host $srv
fi
finish
