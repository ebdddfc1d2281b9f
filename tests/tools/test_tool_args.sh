#!/usr/bin/env bash
# test_tool_args.sh BINDIR: uwarp-perf refuses nonsense on its command line
# (tools/lib/tool_opt.h): each bad value exits with status 2 before any
# connection, and the message names the option and what it takes. Before,
# "--size abc" ran 0 bytes and said "data verified", "--iters 0" ran 1000,
# "--iters -1" ran for ever, "--time abc" was ignored and "-p 99999" wrapped.
set -u
perf=$1/uwarp-perf
fails=0

refused() { # EXPECT-IN-MESSAGE ARGS...
	local want=$1
	shift
	local out rc
	out=$(timeout 10 "$perf" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL uwarp-perf $*: exit $rc, wanted 2 and '$want'; it said:"
		sed 's/^/    /' <<<"$out" | head -5
		fails=$((fails + 1))
	else
		echo "ok   uwarp-perf $*: $(head -1 <<<"$out")"
	fi
}

c=(-c 127.0.0.1 -p 9)
refused "--size 'abc': not a size" "${c[@]}" --op write --size abc --iters 1
refused "--size '4Q'" "${c[@]}" --op write --size 4Q --iters 1
refused "--size '3G': out of range" "${c[@]}" --op write --size 3G --iters 1
refused "--iters '0': out of range" "${c[@]}" --op write --iters 0
refused "--iters '-1': not a whole number" "${c[@]}" --op write --iters -1
refused "--iters '12x': not a whole number" "${c[@]}" --op write --iters 12x
refused "--time 'abc': not a time" "${c[@]}" --op write --time abc
refused "--time '0': out of range" "${c[@]}" --op write --time 0
refused "--op 'foo': not one of send, write, read, imm, atomic" "${c[@]}" --op foo --iters 1
refused "-p '99999': out of range (0 to 65535)" -c 127.0.0.1 -p 99999 --op write --iters 1
refused "--sge '0': out of range" "${c[@]}" --op write --sge 0 --iters 1
refused "--rev '3': out of range (1 to 2)" "${c[@]}" --op write --rev 3 --iters 1
refused "--crc 'maybe': not one of off, on" "${c[@]}" --op write --crc maybe --iters 1
refused "--qps '5000': out of range" "${c[@]}" --op write --qps 5000 --iters 1
refused "--depth 'lots'" "${c[@]}" --op write --depth lots --iters 1
refused "--iters and --time exclude each other" "${c[@]}" --op write --iters 5 --time 1
refused "give -s (server) or -c HOST" --op write --iters 1
refused "'stray': not an option" "${c[@]}" --op write --iters 1 stray

# and what is right still runs: --help, and sizes with a suffix
if ! timeout 10 "$perf" --help >/dev/null 2>&1; then
	echo "FAIL uwarp-perf --help did not exit 0"
	fails=$((fails + 1))
fi
out=$(timeout 10 "$perf" -c 127.0.0.1 -p 9 --op write --size 64K --iters 1 2>&1)
if grep -q "size" <<<"$out" && grep -qE "not a size|out of range" <<<"$out"; then
	echo "FAIL uwarp-perf --size 64K was refused: $out"
	fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] && echo "every bad value refused, by name" || exit 1
