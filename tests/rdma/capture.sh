# tests/rdma/capture.sh: a tshark capture of a test's traffic, and its
# verdict: the RDMAP opcodes it must hold inside MPA FPDUs, every CRC good.
# Sourced after tests/hostile/lib.sh ($work, track, bad):
#
#   capture_start IFACE FILE [FILTER [ARG...]]
#                                start capturing on IFACE (FILTER: all TCP
#                                unless given; ARGs go to tshark, -c say),
#                                wait until it captures
#   capture_stop                 wait until FILE stops growing (or tshark
#                                has ended itself), then end it
#   capture_judge NAME OPCODE... the opcodes (RFC 5040 4.3: 0 Write,
#                                1 Read Request, 2 Read Response, 3 Send)
#                                must each appear; every CRC Wireshark
#                                checks must be good

capture_start() {
	local iface=$1
	cap_file=$2
	cap_log=$work/tshark.$(basename "$2").log
	shift 2
	local filter=${1:-tcp}
	shift $(($# > 0 ? 1 : 0))
	rm -f "$cap_file" # (a file left from before is no sign)
	tshark -i "$iface" -B 64 -f "$filter" "$@" -w "$cap_file" >"$cap_log" 2>&1 &
	cap_pid=$!
	track $cap_pid
	# Live once the file has its header: dumpcap writes it after its
	# socket is bound and filtered. (tshark says "Capturing on" sooner,
	# when it starts dumpcap: a connection made then was caught only
	# mid-stream, without the MPA Request and Reply Wireshark needs.)
	for _ in $(seq 300); do
		[ -s "$cap_file" ] && return 0
		kill -0 $cap_pid 2>/dev/null || break
		sleep 0.1
	done
	bad "tshark did not start on $iface: $(cat "$cap_log")"
}

capture_stop() {
	local last=-1 n
	# (the capture lags the traffic: ending it sooner loses what it has
	# not written yet)
	for _ in $(seq 150); do
		kill -0 $cap_pid 2>/dev/null || break
		n=$(stat -c %s "$cap_file" 2>/dev/null || echo 0)
		[ "$n" = "$last" ] && break
		last=$n
		sleep 0.2
	done
	kill -INT $cap_pid 2>/dev/null
	wait $cap_pid 2>/dev/null
}

capture_judge() {
	local name=$1 op heur=() h ops good badcrc dropped lost
	shift
	# (Wireshark finds MPA by its start frames; the RPC-over-RDMA
	# heuristic, whichever name this Wireshark gives it, is kept off the
	# payloads)
	for h in rpcrdma_iwarp rpcordma_iwarp smb_direct_iwarp; do
		tshark -r "$cap_file" -c 1 --disable-heuristic "$h" >/dev/null 2>&1 &&
			heur+=(--disable-heuristic "$h")
	done
	ops=$(tshark -r "$cap_file" "${heur[@]}" -Y iwarp_ddp_rdmap -T fields \
		-e iwarp_rdma.opcode 2>/dev/null | tr ',' '\n' | sort | uniq -c)
	echo "$name: RDMAP opcodes in the capture (count, opcode):"
	echo "$ops"
	for op in "$@"; do
		grep -Eq " 0x0*$op$" <<<"$ops" || bad "$name: the capture has no RDMAP opcode $op in MPA FPDUs"
	done
	tshark -r "$cap_file" "${heur[@]}" -V -Y iwarp_mpa.crc_check 2>/dev/null >"$work/crc.txt"
	good=$(grep -c 'Good CRC32' "$work/crc.txt")
	badcrc=$(grep -c 'Bad CRC32' "$work/crc.txt")
	echo "$name: FPDU CRCs Wireshark checked: $good good, $badcrc bad"
	# A capture that missed packets (tshark's own count, or a gap
	# Wireshark sees in a stream) leaves Wireshark's reassembly out of
	# step, reading payload as headers: then only the opcodes are judged.
	dropped=$(grep -o '[0-9][0-9]* packets\{0,1\} dropped' "$cap_log" | grep -o '^[0-9]*' | tail -1)
	lost=$(tshark -r "$cap_file" -Y tcp.analysis.lost_segment 2>/dev/null | wc -l)
	if [ "${dropped:-0}" -gt 0 ] || [ "$lost" -gt 0 ]; then
		echo "$name: the capture missed packets (${dropped:-0} dropped, $lost gaps): the CRC verdict is left out"
	else
		[ "$good" -gt 0 ] && [ "$badcrc" -eq 0 ] || bad "$name: FPDU CRCs: $good good, $badcrc bad"
	fi
}
