#!/usr/bin/env bash
# up.sh: boot the siw guest the interop suite shares (ctest fixture setup).
. "$(dirname "$0")/lib.sh"

# free host ports for the forwards, away from the ephemeral range
used=$(ss -Hltn 2>/dev/null | awk '{print $4}' | sed 's/.*://')
pick() {
	local p
	while :; do
		p=$((20000 + RANDOM % 12000))
		grep -qx "$p" <<<"$used" || { used+=$'\n'"$p"; echo "$p"; return; }
	done
}
rm -rf "$DIR" && mkdir -p "$DIR"
{
	for t in RPING UCMA PERF FUZZ; do
		echo "H_$t=$(pick)"
		echo "G_$t=$(pick)"
	done
	# the direct link's namespace (uDAPL's dtest tells its peer its own
	# address, which no port forward translates); it takes root
	[ "$(id -u)" = 0 ] && echo "NETNS=uwarp-interop-$$"
} >"$DIR/ports"
. "$DIR/ports"
"$SIWLAB" boot "$DIR" \
	--hostfwd "$H_RPING:$P_RPING" --hostfwd "$H_UCMA:$P_UCMA" --hostfwd "$H_PERF:$P_PERF" \
	--hostfwd "$H_FUZZ:$P_FUZZ" \
	--guestfwd "$P_RPING:$G_RPING" --guestfwd "$P_UCMA:$G_UCMA" --guestfwd "$P_PERF:$G_PERF" \
	--guestfwd "$P_FUZZ:$G_FUZZ" ${NETNS:+--tap "$NETNS"} ||
	exit 1
echo "guest up: $(cat "$DIR/uname"); artefacts in $DIR"

# A guest command that outlives the host's wait must not hold up the next
# (siwlab's guest runs each beside the others): once a siw program stuck
# in its teardown kept every later command, the kill sent for it among
# them, from running, and each case after it failed.
if GUEST_TIMEOUT=1 guest "sleep 60" >/dev/null 2>&1; then
	echo "FAIL: a 60 s command in the guest finished within 1 s"
	exit 1
fi
if [ "$(GUEST_TIMEOUT=20 guest "echo runs" 2>&1)" != runs ]; then
	echo "FAIL: a guest command waited for an earlier one that had outlived its wait"
	exit 1
fi
echo "PASS: a guest command that outlives its wait holds up no other"
