#!/usr/bin/env bash
# rping.sh: uwarp-rping against the real rping on siw, both ways, 100
# iterations with the echo checked (-V), CRC off and on (uwarp asks for it).
# rping takes -S 23..65535 (RPING_BUFSIZE 65536 less one), so 65535 is the
# largest size the real rping runs: uwarp client -> siw server 1, 64, 4096,
# 65535; siw client -> uwarp server 23, 64, 4096, 65535. Past that (65536
# and 1 MiB, which uwarp-rping itself runs, tests/integration/test_rping.c)
# rping's server cannot take the ping: both ends must fail cleanly, at once.
. "$(dirname "$0")/lib.sh"
RPING=$UWARP_BIN/uwarp-rping

for crc in off on; do
	for size in 1 64 4096 65535; do
		ssize=$((size < 64 ? 64 : size)) # rping's server reads into its own -S
		job=$(guest_bg "rping -s -a $GUEST_IP -p $P_RPING -C 100 -S $ssize -V")
		wait_guest_port $P_RPING "$job" || {
			fail "rping -s did not start: $(guest_wait "$job" 5)"
			guest_end rping
			continue
		}
		out=$(timeout 120 "$RPING" -c -a 127.0.0.1 -p "$H_RPING" -C 100 -S "$size" -V -d --crc "$crc" 2>&1)
		rc=$?
		gout=$(guest_wait "$job" 60)
		grc=$?
		if [ $rc -eq 0 ] && [ $grc -eq 0 ] && grep -q "CRC $crc" <<<"$out"; then
			pass "uwarp-rping client -> siw rping -s: $size B x 100, CRC $crc"
		else
			fail "uwarp-rping client -> siw rping -s: $size B, CRC $crc (uwarp $rc, siw $grc)"
			echo "$out" | sed 's/^/    uwarp: /'
			echo "$gout" | sed 's/^/    siw: /'
			guest_end rping
		fi
	done
	for size in 23 64 4096 65535; do
		host_bg "$DIR/uwarp-rping-server.log" "$RPING" -s -p "$G_RPING" -V -d --crc "$crc"
		srv=$!
		wait_host_listen "$G_RPING" || { fail "uwarp-rping -s did not start"; end_host $srv; continue; }
		gout=$(guest "rping -c -a $HOST_IP -p $P_RPING -C 100 -S $size -V")
		grc=$?
		[ $grc -eq 0 ] || end_host $srv
		wait $srv
		rc=$?
		if [ $grc -eq 0 ] && [ $rc -eq 0 ] && grep -q "CRC $crc" "$DIR/uwarp-rping-server.log"; then
			pass "siw rping -c -> uwarp-rping server: $size B x 100, CRC $crc"
		else
			fail "siw rping -c -> uwarp-rping server: $size B, CRC $crc (siw $grc, uwarp $rc)"
			echo "$gout" | sed 's/^/    siw: /'
			sed 's/^/    uwarp: /' "$DIR/uwarp-rping-server.log"
		fi
	done
done

# Past rping's largest buffer: its server's Read of our ping cannot fit.
for size in 65536 1048576; do
	job=$(guest_bg "rping -s -a $GUEST_IP -p $P_RPING -C 1 -S 65535 -V")
	wait_guest_port $P_RPING "$job"
	out=$(timeout 60 "$RPING" -c -a 127.0.0.1 -p "$H_RPING" -C 1 -S $size -V 2>&1)
	rc=$?
	gout=$(guest_wait "$job" 60)
	grc=$?
	# rping's exit status after a failed completion varies; its output does not
	if [ $rc -ne 0 ] && [ $rc -ne 124 ] && grep -q "completion failed" <<<"$gout"; then
		pass "$size B against rping's 65535 B server: both fail cleanly (siw: $(grep -m1 "completion failed" <<<"$gout"); uwarp: $(tail -1 <<<"$out"))"
	else
		fail "$size B against rping's 65535 B server: uwarp $rc, siw $grc"
		echo "$out" | sed 's/^/    uwarp: /'
		echo "$gout" | sed 's/^/    siw: /'
		guest_end rping
	fi
done
finish
