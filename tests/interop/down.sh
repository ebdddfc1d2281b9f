#!/usr/bin/env bash
# down.sh: power the guest off and check what the whole suite left
# (ctest fixture cleanup): no kernel warning, BUG or oops in the guest's
# console; the guest's capture decodes in tshark with no bad CRC.
. "$(dirname "$0")/lib.sh"
[ -f "$DIR/qemu.pid" ] || { echo "no guest was running"; exit 1; }
echo "guest kernel: $(cat "$DIR/uname" 2>/dev/null)"
"$SIWLAB" stop "$DIR" && pass "guest console: no kernel warning, BUG or oops" ||
	fail "the guest kernel complained (see $DIR/console.log)"
# check_capture PCAP GUEST_ADDRESS NAME: the capture through Wireshark's
# iWARP dissectors
check_capture() {
	local pcap=$1 gip=$2 name=$3
	if [ ! -s "$pcap" ]; then
		fail "no capture in $pcap"
		return
	fi
	# (MPA frames start every stream: the capture runs from the guest's boot)
	local heur=() h
	for h in rpcrdma_iwarp smb_direct_iwarp; do
		tshark -r "$pcap" -c 1 --disable-heuristic "$h" >/dev/null 2>&1 &&
			heur+=(--disable-heuristic "$h")
	done
	# Wireshark checks an FPDU's CRC where the MPA frames negotiated one.
	# Where the capture itself lost a segment Wireshark loses the framing
	# and reads payload as a header: such streams are left out, and said.
	local lost
	lost=$(tshark -r "$pcap" -Y tcp.analysis.lost_segment -T fields -e tcp.stream 2>/dev/null | sort -u)
	# Verdicts by sender: a bad CRC from uwarp fails the suite; one from
	# siw is siw's (uwarp must have answered it with a Terminate, LLP/MPA
	# 0x02, which the test that ran then reports) and is a finding.
	# (uwarp-fuzz's port is left out: its bad CRCs are the test)
	tshark -r "$pcap" "${heur[@]}" -V -Y "iwarp_mpa.crc_check && !(tcp.port == $P_FUZZ)" 2>/dev/null |
		awk -v lost=" $(echo $lost) " -v g="$gip" '
			/^Internet Protocol Version 4, Src: / { src = $6; sub(/,$/, "", src) }
			/^[ \t]*\[Stream index: / { s = $3; sub(/\]/, "", s) }
			/\((Good|Bad) CRC32/ {
				v = ($0 ~ /Good/) ? "good" : (src == g ? "bad-from-siw" : "bad")
				if (index(lost, " " s " ")) v = v "-in-lossy-stream"
				n[v]++
			}
			END { for (v in n) print v, n[v] }' >"$DIR/crc-verdicts.$name"
	local good bad siwbad frames
	good=$(awk '$1 == "good" {print $2}' "$DIR/crc-verdicts.$name")
	bad=$(awk '$1 == "bad" {print $2}' "$DIR/crc-verdicts.$name")
	siwbad=$(awk '$1 == "bad-from-siw" {print $2}' "$DIR/crc-verdicts.$name")
	frames=$(tshark -r "$pcap" "${heur[@]}" -Y 'iwarp_mpa || iwarp_ddp_rdmap' 2>/dev/null | wc -l)
	[ -n "$lost" ] && log "$name: capture lost segments in TCP stream(s) $(echo $lost): left out of the CRC check"
	# a capture cut short would check only part of the run
	if command -v capinfos >/dev/null && capinfos "$pcap" 2>&1 | grep -q "cut short"; then
		fail "the capture $pcap was cut short: the CRC check saw only part of the run"
	fi
	[ -n "$siwbad" ] && echo "FINDING: siw sent $siwbad FPDU(s) with a bad CRC (see $pcap)"
	if [ "${good:-0}" -gt 0 ] && [ "${bad:-0}" -eq 0 ]; then
		pass "tshark, $name: $frames iWARP frames decoded; ${good} FPDU CRCs checked, none bad from uwarp"
	else
		fail "tshark, $name: ${good:-0} good and ${bad:-0} bad FPDU CRCs from uwarp"
	fi
	# every Terminate on the wire, its bytes as sent (docs/wire-notes.md: siw
	# builds its control word with little-endian bit-fields)
	tshark -r "$pcap" "${heur[@]}" -Y "iwarp_rdma.opcode == 7 && !(tcp.port == $P_FUZZ)" \
		-T fields -e ip.src -e tcp.srcport -e tcp.dstport -e tcp.payload 2>/dev/null |
		awk -v g="$gip" '{
			who = ($1 == g) ? "siw  " : "uwarp"
			p = $4
			printf "%s %s->%s control %s %s %s %s | %s\n", who, $2, $3,
				substr(p, 41, 2), substr(p, 43, 2), substr(p, 45, 2), substr(p, 47, 2), p
		}' >"$DIR/terminates.$name.txt"
	if [ -s "$DIR/terminates.$name.txt" ]; then
		log "Terminates on the wire (sender, control word bytes 0-3 | MPA frame), in $DIR/terminates.$name.txt:"
		cut -c1-60 "$DIR/terminates.$name.txt" | sed 's/^/    /'
	fi
}
# eth0 (the port forwards) and, where the guest has it, eth1 (the direct
# link to the host's namespace: uDAPL)
check_capture "$DIR/guest.pcap" "$GUEST_IP" eth0
if [ -e "$DIR/guest-tap.pcap" ]; then
	check_capture "$DIR/guest-tap.pcap" "$TAP_GUEST_IP" eth1
fi
finish
