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
