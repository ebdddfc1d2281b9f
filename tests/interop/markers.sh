#!/usr/bin/env bash
# markers.sh: siw does not do MPA markers. uwarp asking for them must end
# in a clean refusal that the application hears about, in either role.
. "$(dirname "$0")/lib.sh"
RPING=$UWARP_BIN/uwarp-rping

# uwarp initiator asks: siw's responder answers with an MPA Reject (M clear)
job=$(guest_bg "rping -s -a $GUEST_IP -p $P_RPING -C 1 -S 64 -V")
if wait_guest_port $P_RPING "$job"; then
	out=$(timeout 30 "$RPING" -c -a 127.0.0.1 -p "$H_RPING" -C 1 -S 64 -V --markers on 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "REJECTED by the server.*M 0; we asked for markers: yes" <<<"$out"; then
		pass "uwarp asks siw for markers: $(grep REJECTED <<<"$out" | sed 's/^uwarp-rping: //')"
	else
		fail "uwarp asking siw for markers: exit $rc"
		echo "$out" | sed 's/^/    uwarp: /'
	fi
	# siw never passed the request up: its rping is still waiting
	guest_end rping
	guest_wait "$job" 10 >/dev/null
else
	fail "rping -s did not start"
fi

# uwarp responder asks (M in its Reply): siw's initiator refuses the Reply
# and closes; its rping hears REJECTED, uwarp's server sees the end
host_bg "$DIR/uwarp-rping-markers.log" "$RPING" -s -p "$G_RPING" -V -d --markers on
srv=$!
if wait_host_listen "$G_RPING"; then
	gout=$(guest "rping -c -a $HOST_IP -p $P_RPING -C 1 -S 64 -V")
	grc=$?
	HOST_WAIT=$(($(date +%s) + 20))
	while kill -0 $srv 2>/dev/null && [ "$(date +%s)" -lt $HOST_WAIT ]; do sleep 0.2; done
	ended=$(kill -0 $srv 2>/dev/null && echo no || echo yes)
	end_host $srv
	if [ $grc -ne 0 ] && grep -q "RDMA_CM_EVENT_REJECTED" <<<"$gout" && [ "$ended" = yes ]; then
		pass "uwarp's Reply asks siw for markers: siw's rping gets REJECTED, uwarp's server sees the connection end"
	else
		fail "uwarp's Reply asking siw for markers: siw $grc, uwarp ended: $ended"
		echo "$gout" | sed 's/^/    siw: /'
		sed 's/^/    uwarp: /' "$DIR/uwarp-rping-markers.log"
	fi
else
	fail "uwarp-rping -s did not start"
	end_host $srv
fi
finish
