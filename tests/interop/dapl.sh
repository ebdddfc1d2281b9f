#!/usr/bin/env bash
# dapl.sh: Debian's dtest between uwarp's DAT provider on the host and
# Debian's DAPL iWARP provider (libdaplofa over rdma_cm) on siw in the
# guest, both ways, on the direct link (siwlab boot --tap): dtest tells
# its peer its own address and port, which no port forward translates.
#
# dtest's client takes the provider name the server sends it, so each
# side's dat.conf names its own library under both names. A run passes
# when both sides print "PASSED" (dtest's exit status is 0 either way).
. "$(dirname "$0")/lib.sh"
# (ctest counts exit status 77 as skipped)
[ -n "${NETNS:-}" ] || { echo "SKIPPED: the guest has no direct link (siwlab boot --tap takes root)"; exit 77; }
[ -x "$UWARP_BIN/../lib/libuwarp-dapl.so.2" ] || [ -f "$UWARP_BIN/../lib/libuwarp-dapl.so.2" ] ||
	{ echo "libuwarp-dapl.so.2 was not built (no libdapl-dev)"; exit 1; }
command -v dtest >/dev/null || { echo "dtest missing (apt-get install dapl2-utils)"; exit 1; }
command -v nft >/dev/null || { echo "nft missing (apt-get install nftables)"; exit 1; }
LIB=$(cd "$UWARP_BIN/../lib" && pwd)/libuwarp-dapl.so.2
INFO_PORT=15828 # where dtest's server hands its parameters to the client
ARGS="-b 4096 -B 10"

cat >"$DIR/dat-host.conf" <<CONF
uwarp u2.0 nonthreadsafe default $LIB dapl.2.0 "$TAP_HOST_IP 0" ""
ofa-v2-iwarp u2.0 nonthreadsafe default $LIB dapl.2.0 "$TAP_HOST_IP 0" ""
CONF
cat >"$DIR/dat-guest.conf" <<CONF
ofa-v2-iwarp u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "eth1 0" ""
uwarp u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 "eth1 0" ""
CONF

# dtest's server listens only after sending its parameters: the first SYN
# of each run to its port is dropped (the rule's file says why)
in_netns nft -f "$ROOT/tests/udapl/dtest-first-syn.nft" ||
	{ echo "cannot load the nftables rule"; exit 1; }
trap 'in_netns nft delete table inet uwarp_dtest 2>/dev/null' EXIT

guest_dtest_end() { guest 'for p in $(pidof dtest); do kill $p; done; true' >/dev/null 2>&1; }
passed() { grep -q "DAPL Test Complete. PASSED" "$1"; }
show() { # label file
	grep -E "Error|ERROR|unexpected|PASSED|FAILED" "$2" | head -6 | sed "s/^/    $1: /"
}

# keep_logs WHAT UWARP_LOG SIW_LOG WHY: the next case writes the same
# logs: keep this one's whole
keep_logs() {
	local keep="$DIR/$4-dtest${1// /_}"
	cp "$2" "$keep.uwarp.log"
	cp "$3" "$keep.siw.log"
	echo "    whole logs: $keep.{uwarp,siw}.log"
}

# closed_both_ways UWARP_CLIENT_LOG: the guest link's capture shows the
# client's connection (its port from dtest's "Query EP: LOCAL") closed by
# a FIN from each end and never reset
closed_both_ways() {
	local hex port pcap="$DIR/guest-tap.pcap" flags
	hex=$(sed -n 's/.*Query EP: LOCAL addr [0-9.]* port \([0-9a-f]*\).*/\1/p' "$1" | head -1)
	[ -n "$hex" ] && [ -s "$pcap" ] || return 1
	port=$((16#$hex))
	flags=$(tshark -r "$pcap" -Y "tcp.port == $port && (tcp.flags.fin == 1 || tcp.flags.reset == 1)" \
		-T fields -e ip.src -e tcp.flags.fin -e tcp.flags.reset 2>/dev/null | sort -u)
	grep -q "^$TAP_HOST_IP[[:space:]]1[[:space:]]0" <<<"$flags" &&
		grep -q "^$TAP_GUEST_IP[[:space:]]1[[:space:]]0" <<<"$flags" &&
		! grep -q "[[:space:]]1$" <<<"$flags"
}

# judge WHAT DIRECTION UWARP_LOG SIW_LOG LATENCY_LOG TRY N0: one run of
# a case, judged; returns 1 when it is settled (passed or failed), 0 when
# it is to run once more: uwarp's debug trace shows the Terminate it
# answered a bad CRC from siw with (LLP, CRC error), and the link's
# capture after frame N0 shows that bad CRC from siw, on the first try only
judge() {
	local what=$1 dir=$2 ulog=$3 slog=$4 llog=$5 try=$6 n0=$7
	if passed "$ulog" && passed "$slog"; then
		pass "dtest $what: $dir, PASSED both sides" \
			"($(grep -Eo 'latency [0-9.]+ us' "$llog" | head -1))"
		return 1
	fi
	guest_dtest_end
	if [ "$try" = 1 ] && grep -Eq "Terminate 2/[0-9]+/0x02 from uwarp" "$ulog" &&
		siw_sent_bad_crc "$DIR/guest-tap.pcap" "$n0" 0 "$TAP_GUEST_IP"; then
		echo "FINDING: dtest $what: siw sent an FPDU with a bad CRC (uwarp answered with" \
			"a Terminate: LLP, CRC error). Once more:"
		return 0
	fi
	# Seen in two of five runs of one day with -c (dtest waiting on a CNO),
	# and in a later CI run twice in a row without it: uwarp's client
	# PASSED every transfer and disconnected, siw's kernel closed the
	# connection too (its FIN answered uwarp's within 10 ms in the
	# capture), and siw's dtest server never returned (what it printed
	# then was lost; siwlab now keeps it). Kept: both sides' logs; the case runs once
	# more. A second such run passes as a finding only when the capture
	# shows that close, FIN both ways and no reset: what hangs then is
	# siw's program after its teardown, not anything on the wire.
	if passed "$ulog" && grep -q "did not finish" "$slog"; then
		keep_logs "$what" "$ulog" "$slog" hung
		if [ "$try" = 1 ]; then
			echo "FINDING: dtest $what: siw's server did not finish though uwarp's" \
				"client PASSED (logs kept). Once more:"
			return 0
		fi
		if closed_both_ways "$ulog"; then
			echo "FINDING: dtest $what: siw's server again did not return after uwarp's" \
				"client PASSED and both ends closed the connection (FIN both ways, no reset)"
			pass "dtest $what: $dir, PASSED on uwarp's side; the connection closed cleanly"
			return 1
		fi
	fi
	fail "dtest $what: $dir"
	show uwarp "$ulog"
	show siw "$slog"
	keep_logs "$what" "$ulog" "$slog" failed
	return 1
}

# uwarp client -> siw server. Now and then siw sends an FPDU whose CRC its
# bytes do not match (docs/wire-notes.md; here a Read Response, in a CI
# run): uwarp answers with a Terminate (LLP, CRC error) and both Reads
# fail, as they should. The case runs again once when uwarp's debug trace
# shows exactly that and the capture proves siw's CRC bad (fpdu_crc.py).
to_siw() {
	local what="$*" try n0
	for try in 1 2; do
		n0=$(guest_frames "$DIR/guest-tap.pcap")
		in_netns nft flush set inet uwarp_dtest tried
		local job
		job=$(guest_bg "DAT_OVERRIDE=/mnt/host/dat-guest.conf dtest -P ofa-v2-iwarp -s $what")
		wait_guest_port $INFO_PORT "$job"
		HOST_TIMEOUT=120 host_bg "$DIR/dtest-uwarp-client.log" \
			ip netns exec "$NETNS" env DAT_OVERRIDE="$DIR/dat-host.conf" UWARP_DAT_DEBUG=1 \
			dtest -P uwarp -h "$TAP_GUEST_IP" $what
		wait $!
		guest_wait "$job" 60 >"$DIR/dtest-siw-server.log" 2>&1
		judge "$what" "uwarp client -> siw server" "$DIR/dtest-uwarp-client.log" \
			"$DIR/dtest-siw-server.log" "$DIR/dtest-uwarp-client.log" $try "$n0" || return 0
	done
}

# siw client -> uwarp server. siw's bad CRC comes this way too (seen in
# CI runs: its Read Response to a -p client; and to the default run's
# Reads, of a buffer dtest's client was rewriting meanwhile: siw sends
# Read Responses from the program's pages, their CRC taken before TCP
# sends them; uwarp's Terminate, LLP CRC error, then both sides FAILED,
# and that time siw's client never returned, which held up every guest
# command after it until siwlab's guest ran each beside the others): the
# case runs again once when uwarp's debug trace and the capture show
# exactly that, as to_siw does.
from_siw() {
	local what="$*" try n0
	for try in 1 2; do
		n0=$(guest_frames "$DIR/guest-tap.pcap")
		HOST_TIMEOUT=120 host_bg "$DIR/dtest-uwarp-server.log" \
			ip netns exec "$NETNS" env DAT_OVERRIDE="$DIR/dat-host.conf" UWARP_DAT_DEBUG=1 \
			dtest -P uwarp -s $what
		local srv=$!
		local i
		for i in $(seq 100); do
			in_netns ss -Hltn "sport = :$INFO_PORT" | grep -q . && break
			sleep 0.1
		done
		guest "DAT_OVERRIDE=/mnt/host/dat-guest.conf dtest -P ofa-v2-iwarp -h $TAP_HOST_IP $what" \
			>"$DIR/dtest-siw-client.log" 2>&1
		passed "$DIR/dtest-siw-client.log" || end_host $srv
		wait $srv
		judge "$what" "siw client -> uwarp server" "$DIR/dtest-uwarp-server.log" \
			"$DIR/dtest-siw-client.log" "$DIR/dtest-siw-client.log" $try "$n0" || return 0
	done
}

# the default run (RDMA Writes both ways with a Send after, an RDMA Read,
# Send/Receive ping-pong), unidirectional, a CNO
for m in "" "-u" "-c"; do
	to_siw $m $ARGS
	from_siw $m $ARGS
done
# polling (-p): a guest server that polls, under emulation, seldom ends
# within a minute, though its uwarp client passes; run here as the client
from_siw -p $ARGS
# Write ping-pong with every byte checked (-W -D): with siw as the
# server the uwarp client passes, but siw completes its own last Write
# with an error (DAT_DTO_ERR_LOCAL_EP) when the client's FIN follows
# that Write's data closely, so its side fails; run here as the client
from_siw -W -D -b 4096
finish
