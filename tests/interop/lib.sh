# tests/interop/lib.sh: what the interop tests share (sourced).
#
# One siw guest serves the whole suite (ctest fixture "siwguest": up.sh
# boots it, down.sh powers it off and checks what it left). Its folder is
# $UWARP_INTEROP_DIR (the build tree's interop/), which holds the guest's
# console log, its capture of every connection, and the ports:
#   H_<TOOL>: host 127.0.0.1 port that reaches the guest's tool port
#   G_<TOOL>: host port the guest reaches as 10.0.2.100:<tool port>
set -uo pipefail

: "${UWARP_INTEROP_DIR:?}"
: "${UWARP_BIN:?}" # the build tree's bin/
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIWLAB=$ROOT/tools/siwlab/siwlab
DIR=$UWARP_INTEROP_DIR
GUEST_IP=10.0.2.15
HOST_IP=10.0.2.100 # the host, as the guest sees it

# the guest's tool ports
P_RPING=7174
P_UCMA=7471
P_PERF=18515
P_FUZZ=7175 # rping on its own port for uwarp-fuzz: its bad CRCs are on purpose

[ -f "$DIR/ports" ] && . "$DIR/ports"

failures=0
log() { echo "  $*"; }
pass() { echo "PASS: $*"; }
fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}
finish() {
	[ "$failures" -eq 0 ] || {
		echo "$failures case(s) failed; artefacts in $DIR"
		exit 1
	}
	exit 0
}

# guest CMD...: run in the guest, its output on stdout, its status returned
guest() { "$SIWLAB" exec "$DIR" --timeout "${GUEST_TIMEOUT:-120}" -- "$@"; }
# guest_bg CMD...: start in the guest; prints the job number
guest_bg() { "$SIWLAB" exec "$DIR" --bg -- "$@"; }
guest_wait() { "$SIWLAB" wait "$DIR" "$1" --timeout "${2:-120}"; }

# wait_guest_port PORT [JOB]: until a guest program listens on PORT (up to
# 20 s); gives up at once when background JOB has already ended
wait_guest_port() {
	local i
	for i in $(seq 100); do
		[ -n "${2:-}" ] && [ -e "$DIR/rc.$2" ] && return 1
		guest "ss -ltn | grep -q ':$1 '" >/dev/null 2>&1 && return 0
		sleep 0.2
	done
	return 1
}

# host_bg OUT CMD...: a host program in the background, its pid in $!;
# it is ended after HOST_TIMEOUT seconds (120) so that a peer that never
# comes cannot hang the suite
host_bg() {
	local out=$1
	shift
	timeout "${HOST_TIMEOUT:-120}" "$@" >"$out" 2>&1 &
}

# wait_host_listen PORT: until a host program listens on 127.0.0.1:PORT
wait_host_listen() {
	local i
	for i in $(seq 100); do
		ss -ltn | grep -qE "(127\.0\.0\.1|\*|\[::\]|0\.0\.0\.0):$1 " && return 0
		sleep 0.1
	done
	return 1
}

# end_host PID: stop a host program we started
end_host() {
	kill "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

# guest_frames [PCAP]: frames in the guest's capture (guest.pcap unless
# named) so far: what a case adds comes after
guest_frames() { capinfos -c -M "${1:-$DIR/guest.pcap}" 2>/dev/null | awk '/Number of packets/ {print $NF}'; }

# siw_sent_bad_crc PCAP N0 PORT SIW_IP: in the capture's frames after N0,
# on the connections with PORT at one end (0: all), siw (at SIW_IP) sent
# an FPDU whose CRC its bytes do not match, as fpdu_crc.py computes them
# from the reassembled stream; what it found is printed
siw_sent_bad_crc() {
	local check rc
	check=$(python3 "$ROOT/tests/interop/fpdu_crc.py" "$@")
	rc=$?
	echo "$check" | sed 's/^/    capture: /'
	[ $rc -eq 1 ]
}

# guest_end NAME: end a guest program left running (after a failed case),
# so that it does not hold its port for the next one
guest_end() { guest "killall $1 2>/dev/null; sleep 0.2; killall -9 $1 2>/dev/null; true" >/dev/null 2>&1; }

# the direct link (siwlab boot --tap): the guest's eth1 and siw1, and the
# host's end in network namespace $NETNS
TAP_GUEST_IP=10.0.3.15
TAP_HOST_IP=10.0.3.100
# in_netns CMD...: run a host program on the direct link
in_netns() { ip netns exec "$NETNS" "$@"; }
