#!/usr/bin/env bash
# rdma_programs.sh: Debian's own rping and ib_write_bw, unmodified, on the
# host under uwarp-run (uwarp's libibverbs and librdmacm) against the same
# programs on siw in the guest, both ways:
#   rping -V -C 100 at 64 B and 65535 B (rping's largest), CRC asked for
#   ib_write_bw -R -F -n 200 (64 KiB), siw's client against uwarp's server,
#   with UWARP_CRC=off on the host: the
#   guest's capture sees the bulk FPDUs after the port forward has cut them
#   into its own segments, and Wireshark would call them bad CRCs (see
#   perftest.sh); -F as there, for the guest's clock calibration
. "$(dirname "$0")/lib.sh"
RUN=$UWARP_BIN/uwarp-run

for size in 64 65535; do
	job=$(guest_bg "rping -s -a $GUEST_IP -p $P_RPING -C 100 -S $size -V")
	if ! wait_guest_port $P_RPING "$job"; then
		fail "rping -s did not start: $(guest_wait "$job" 5)"
		guest_end rping
		continue
	fi
	out=$(timeout 120 "$RUN" rping -c -a 127.0.0.1 -p "$H_RPING" -C 100 -S "$size" -V 2>&1)
	rc=$?
	gout=$(guest_wait "$job" 60)
	grc=$?
	if [ $rc -eq 0 ] && [ $grc -eq 0 ]; then
		pass "rping -c (uwarp-run) -> siw rping -s: $size B x 100, verified"
	else
		fail "rping -c (uwarp-run) -> siw rping -s: $size B (uwarp $rc, siw $grc)"
		echo "$out" | sed 's/^/    uwarp: /'
		echo "$gout" | sed 's/^/    siw: /'
		guest_end rping
	fi

	host_bg "$DIR/rping-uwarp-server.log" "$RUN" rping -s -a 0.0.0.0 -p "$G_RPING" -C 100 -S "$size" -V
	srv=$!
	wait_host_listen "$G_RPING" || { fail "rping -s (uwarp-run) did not start"; end_host $srv; continue; }
	gout=$(guest "rping -c -a $HOST_IP -p $P_RPING -C 100 -S $size -V")
	grc=$?
	[ $grc -eq 0 ] || end_host $srv
	wait $srv
	rc=$?
	if [ $grc -eq 0 ] && [ $rc -eq 0 ]; then
		pass "siw rping -c -> rping -s (uwarp-run): $size B x 100, verified"
	else
		fail "siw rping -c -> rping -s (uwarp-run): $size B (siw $grc, uwarp $rc)"
		echo "$gout" | sed 's/^/    siw: /'
		sed 's/^/    uwarp: /' "$DIR/rping-uwarp-server.log"
	fi
done

# perftest's result line (the one under its "#bytes" header)
result() { grep -A1 '#bytes' <<<"$1" | grep -qE '^ *[0-9]+ +[0-9]+ +'; }

# (uwarp's ib_write_bw client against siw's server is left out: in one CI
# run of four, siw's server failed its send in perftest's closing
# handshake, "Bad wc status 2", after the whole run had passed; not yet
# understood)
host_bg "$DIR/ib_write_bw-uwarp-server.log" env UWARP_CRC=off "$RUN" ib_write_bw -R -F -n 200 -p "$G_PERF"
srv=$!
if wait_host_listen "$G_PERF"; then
	gout=$(guest "ib_write_bw -R -F -d siw0 -n 200 -p $P_PERF $HOST_IP")
	grc=$?
	[ $grc -eq 0 ] || end_host $srv
	wait $srv
	rc=$?
	if [ $grc -eq 0 ] && [ $rc -eq 0 ] && result "$gout"; then
		pass "siw ib_write_bw -R -> ib_write_bw -R (uwarp-run): 200 x 64 KiB: $(grep -A1 '#bytes' <<<"$gout" | tail -1)"
	else
		fail "siw ib_write_bw -R -> ib_write_bw -R (uwarp-run) (siw $grc, uwarp $rc)"
		echo "$gout" | sed 's/^/    siw: /' | tail -20
		sed 's/^/    uwarp: /' "$DIR/ib_write_bw-uwarp-server.log" | tail -20
	fi
else
	fail "ib_write_bw -R (uwarp-run) server did not start"
	end_host $srv
fi
finish
