#!/usr/bin/env bash
# test_tool_args.sh BINDIR: the tools refuse nonsense on their command
# lines (tools/lib/tool_opt.h): each bad value exits with status 2 before
# any connection, and the message names the option and what it takes.
# Before, uwarp-perf's "--size abc" ran 0 bytes and said "data verified",
# "--iters 0" ran 1000, "--iters -1" ran for ever, "--time abc" was ignored
# and "-p 99999" wrapped; exs-pump's "-p 70000" wrapped and "--sends x" and
# "--time abc" were 0, uwarp-rping's "-C abc" was 0 (for ever), and
# uwarp-fuzz's "--seed abc" was seed 0.
set -u
bin=$1
perf=$bin/uwarp-perf
fails=0

# refused_by TOOL EXPECT-IN-MESSAGE ARGS...
refused_by() {
	local tool=$1 want=$2
	shift 2
	local out rc
	out=$(timeout 10 "$bin/$tool" "$@" 2>&1)
	rc=$?
	if [ "$rc" -ne 2 ] || ! grep -qF -- "$want" <<<"$out"; then
		echo "FAIL $tool $*: exit $rc, wanted 2 and '$want'; it said:"
		sed 's/^/    /' <<<"$out" | head -5
		fails=$((fails + 1))
	else
		echo "ok   $tool $*: $(grep -F -- "$want" <<<"$out" | head -1)"
	fi
}
refused() { refused_by uwarp-perf "$@"; }

# port_in LOG: the port a server started with -p 0 says it listens on
# ("... listening on port N ..."), once it says it (empty after 5 s)
port_in() {
	local p
	for _ in $(seq 100); do
		p=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$1" | head -1)
		[ -n "$p" ] && break
		sleep 0.05
	done
	echo "$p"
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
refused "--wait 'nap': not one of poll, adaptive" "${c[@]}" --op send --lat --wait nap --iters 1
refused "--qps '20000': out of range" "${c[@]}" --op write --qps 20000 --iters 1
refused "--depth 'lots'" "${c[@]}" --op write --depth lots --iters 1
refused "--iters and --time exclude each other" "${c[@]}" --op write --iters 5 --time 1
refused "give -s (server) or -c HOST" --op write --iters 1
refused "'stray': not an option" "${c[@]}" --op write --iters 1 stray

# uwarp-perf's perftest mode
refused "--perftest 'foo': not one of write_bw" --perftest foo -c 127.0.0.1 -p 9
refused "--iters '3': out of range (5 to" --perftest write_bw -c 127.0.0.1 -p 9 --iters 3
refused "--size '0': out of range" --perftest write_bw -c 127.0.0.1 -p 9 --size 0
refused "-p '-5': not a whole number" --perftest write_bw -c 127.0.0.1 -p -5

# exs-pump
refused_by exs-pump "-p '70000': out of range (0 to 65534)" -c 127.0.0.1 -p 70000 --bytes 1
refused_by exs-pump "--sends 'x': not a whole number" -c 127.0.0.1 -p 9 --sends x --bytes 1
refused_by exs-pump "--time 'abc': not a time" -c 127.0.0.1 -p 9 --time abc
refused_by exs-pump "--mode 'fast': not one of dynamic, direct, indirect" -c 127.0.0.1 -p 9 --mode fast
refused_by exs-pump "--size exp: MAX '1K': out of range" -c 127.0.0.1 -p 9 --size exp:4K:1K
refused_by exs-pump "--time and --bytes exclude each other" -c 127.0.0.1 -p 9 --time 1 --bytes 1
refused_by exs-pump "--burst N goes with --compute" -c 127.0.0.1 -p 9 --burst 4 --bytes 1
refused_by exs-pump "give -s (server) or -c HOST" --bytes 1
refused_by uwarp-crcbench "--ms 'abc': not a number" --ms abc
refused_by uwarp-iobench "--io 'poll': not one of tcp, epoll, lowat, uring, waitall" --io tcp,poll
refused_by uwarp-iobench "--rounds '0': out of range (1 to 101)" --rounds 0
refused_by uwarp-iobench "--size '0': out of range" --size 0
refused_by uwarp-iobench "'stray': not an option" --time 1 stray
refused_by exs-pump "--credit-size '3000': a power of two" -c 127.0.0.1 -p 9 --credit-size 3000
refused_by exs-pump "--pingpong takes one --size" -c 127.0.0.1 -p 9 --pingpong --size exp:1K:4K
refused_by exs-pump "'stray': not an option" -s stray

# uwarp-rping
refused_by uwarp-rping "-C 'abc': not a whole number" -c -a 127.0.0.1 -p 9 -C abc
refused_by uwarp-rping "-S '0': out of range" -c -a 127.0.0.1 -p 9 -S 0
refused_by uwarp-rping "--crc 'maybe': not one of off, on" -c -a 127.0.0.1 -p 9 --crc maybe
refused_by uwarp-rping "a client needs -a ADDR" -c -p 9

# uwarp-ucmatose
refused_by uwarp-ucmatose "-c '0': out of range (1 to 1024)" -s 127.0.0.1 -p 9 -c 0
refused_by uwarp-ucmatose "-S '1G': out of range" -s 127.0.0.1 -p 9 -S 1G
refused_by uwarp-ucmatose "-p 'nosuchservice': not a whole number" -s 127.0.0.1 -p nosuchservice

# uwarp-fuzz
refused_by uwarp-fuzz "--seed 'abc': not a whole number" -c 127.0.0.1 -p 9 --seed abc
refused_by uwarp-fuzz "--payload '4096': out of range (0 to 1024)" -c 127.0.0.1 -p 9 --payload 4096
refused_by uwarp-fuzz "--class 'nonesuch': no such class" -c 127.0.0.1 -p 9 --class nonesuch
refused_by uwarp-fuzz "-p PORT is needed" -c 127.0.0.1

# uwarp-delayline
refused_by uwarp-delayline "--delay-ms 'soon': not a number" --delay-ms soon tun0 tun1
refused_by uwarp-delayline "--mtu '100': out of range" --mtu 100 tun0 tun1

# uwarp-demo: an --emss below what a DDP header needs corrupted its heap
# (0 to 19) or divided by zero (20 to 24); every value it takes now runs,
# with and without markers
refused_by uwarp-demo "--emss 'abc': not a whole number" --pcap /dev/null --emss abc
refused_by uwarp-demo "--emss '20': out of range (88 to 65535)" --pcap /dev/null --emss 20
refused_by uwarp-demo "'--bogus': not an option" --pcap /dev/null --bogus
for e in 88 89 90 91 100 511 512 513 1460 9000 65535; do
	for m in "" --markers; do
		# shellcheck disable=SC2086
		if ! timeout 10 "$bin/uwarp-demo" --pcap /dev/null --emss "$e" $m >/dev/null 2>&1; then
			echo "FAIL uwarp-demo --emss $e $m did not run"
			fails=$((fails + 1))
		fi
	done
done

# a port in hexadecimal is the port it says (exs-pump read it with atoi:
# "0x1d4c" was port 0, free ports of the kernel's choosing), in a network
# namespace of its own, where every port is free
if unshare -n true 2>/dev/null; then
	out=$(unshare -n bash -c 'ip link set lo up
		"$1/exs-pump" -s -p 0x1d4c >"$2" 2>&1 & pid=$!
		for _ in $(seq 100); do grep -q listening "$2" && break; sleep 0.1; done
		kill $pid; cat "$2"' _ "$bin" "$(mktemp)")
	if grep -q "listening on port 7500 " <<<"$out"; then
		echo "ok   exs-pump -s -p 0x1d4c: $(head -1 <<<"$out")"
	else
		echo "FAIL exs-pump -s -p 0x1d4c did not listen on port 7500: $out"
		fails=$((fails + 1))
	fi
fi

# uwarp-ucmatose -p 0: the server says the port the kernel chose, and a
# client reaches it there (before, it said nothing: the port was unknown)
log=$(mktemp)
timeout 30 "$bin/uwarp-ucmatose" -b 127.0.0.1 -p 0 -C 2 >"$log" 2>&1 &
ucs=$!
port=$(port_in "$log")
if [ -n "$port" ] && [ "$port" != 0 ] &&
	timeout 20 "$bin/uwarp-ucmatose" -s 127.0.0.1 -p "$port" -C 2 >/dev/null 2>&1 &&
	wait "$ucs"; then
	echo "ok   uwarp-ucmatose -p 0: $(grep listening "$log")"
else
	kill "$ucs" 2>/dev/null
	echo "FAIL uwarp-ucmatose -p 0 did not say its port, or no client reached it: $(cat "$log")"
	fails=$((fails + 1))
fi
rm -f "$log"

# A timed run reports each interval (iperf3's way): uwarp-perf and exs-pump
# print a line per second for --time (or per --interval), none with --json
# or --interval 0 (before, nothing came until the end). Servers on ports
# the kernel chose.
refused "--interval 'soon': not a number" "${c[@]}" --op write --time 1 --interval soon
refused_by exs-pump "--interval '-1'" -c 127.0.0.1 -p 9 --time 1 --interval -1
plog=$(mktemp) elog=$(mktemp)
"$perf" -s -p 0 --loop >"$plog" 2>&1 &
psrv=$!
"$bin/exs-pump" -s -p 0 --loop >"$elog" 2>&1 &
esrv=$!
pport=$(port_in "$plog") eport=$(port_in "$elog")
intervals() { grep -cE '^\[ *[0-9.]+- *[0-9.]+ s\] ' <<<"$1"; }
expect_intervals() { # WHAT MIN MAX OUTPUT
	local n
	n=$(intervals "$4")
	if [ "$n" -ge "$2" ] && [ "$n" -le "$3" ]; then
		echo "ok   $1: $n interval lines"
	else
		echo "FAIL $1: $n interval lines, wanted $2 to $3:"
		sed 's/^/    /' <<<"$4" | head -8
		fails=$((fails + 1))
	fi
}
pc=(-c 127.0.0.1 -p "$pport")
ec=(-c 127.0.0.1 -p "$eport")
expect_intervals "uwarp-perf --time 2.5 (bw)" 2 3 "$(timeout 60 "$perf" "${pc[@]}" --op write --time 2.5)"
expect_intervals "uwarp-perf --lat --time 1 --interval 0.25" 3 5 \
	"$(timeout 60 "$perf" "${pc[@]}" --op send --size 64 --lat --time 1 --interval 0.25)"
expect_intervals "uwarp-perf --time 1.5 --json" 0 0 "$(timeout 60 "$perf" "${pc[@]}" --time 1.5 --json)"
expect_intervals "uwarp-perf --time 1.5 --interval 0" 0 0 \
	"$(timeout 60 "$perf" "${pc[@]}" --time 1.5 --interval 0)"
expect_intervals "uwarp-perf --iters 100" 0 0 "$(timeout 60 "$perf" "${pc[@]}" --iters 100)"
expect_intervals "exs-pump --time 2.5" 2 3 "$(timeout 60 "$bin/exs-pump" "${ec[@]}" --time 2.5 --size 64K)"
expect_intervals "exs-pump --pingpong --time 1 --interval 0.25" 3 5 \
	"$(timeout 60 "$bin/exs-pump" "${ec[@]}" --pingpong --size 100 --time 1 --interval 0.25)"
expect_intervals "exs-pump --time 1.5 --json" 0 0 "$(timeout 60 "$bin/exs-pump" "${ec[@]}" --time 1.5 --json)"
# a bandwidth run's latency columns say nothing rather than 0.00
out=$(timeout 60 "$perf" "${pc[@]}" --op write --iters 100)
if grep -q " 0\.00 " <<<"$out" || ! grep -qE '^write +bw .* - +- *$' <<<"$out"; then
	echo "FAIL uwarp-perf bandwidth table: $out"
	fails=$((fails + 1))
else
	echo "ok   uwarp-perf bandwidth table: no latency figures"
fi
# a client's --crc off against a server that wants CRC: MPA runs with CRC
# (either end may ask), and the client says so instead of measuring with
# it silently
out=$(timeout 60 "$perf" "${pc[@]}" --op write --iters 10 --crc off --json 2>&1)
if grep -q "the server asked for CRC, so the connection uses it" <<<"$out" &&
	grep -q '"crc":true' <<<"$out"; then
	echo "ok   uwarp-perf --crc off against a CRC server: said"
else
	echo "FAIL uwarp-perf --crc off against a CRC server did not say it ran with CRC: $out"
	fails=$((fails + 1))
fi
kill "$psrv" "$esrv" 2>/dev/null
wait "$psrv" "$esrv" 2>/dev/null
# A server killed in the middle of a run: the client says the connection
# ended and why, in words (it said only "flushed: failed"), and exits 1.
"$perf" -s -p 0 >"$plog" 2>&1 &
psrv=$!
pport=$(port_in "$plog")
cout=$(mktemp)
timeout 60 "$perf" -c 127.0.0.1 -p "$pport" --op write --time 30 --interval 0.2 >"$cout" 2>&1 &
pcli=$!
for _ in $(seq 200); do grep -q '^\[' "$cout" && break; sleep 0.05; done # running
kill -9 "$psrv"
wait "$psrv" 2>/dev/null
wait "$pcli"
rc=$?
if [ "$rc" -eq 1 ] && grep -q "client: the connection ended before the run did: " "$cout"; then
	echo "ok   uwarp-perf, server killed mid-run: $(grep 'connection ended' "$cout")"
else
	echo "FAIL uwarp-perf, server killed mid-run: exit $rc:"
	sed 's/^/    /' "$cout" | tail -5
	fails=$((fails + 1))
fi
rm -f "$plog" "$elog" "$cout"

# and what is right still runs: --help, and sizes with a suffix
for t in uwarp-perf exs-pump uwarp-rping uwarp-ucmatose uwarp-fuzz uwarp-demo uwarp-delayline \
	uwarp-crcbench uwarp-iobench; do
	if ! timeout 10 "$bin/$t" --help >/dev/null 2>&1; then
		echo "FAIL $t --help did not exit 0"
		fails=$((fails + 1))
	fi
done
# --help explains on stdout, with the defaults a user cannot guess (the
# ports above all): before, uwarp-perf's was a bare synopsis on stderr
for want in "uwarp-perf:default 19515" "uwarp-perf:--max-mem BYTES     buffers over all sessions (default 1G)" \
	"exs-pump:default 7480" "exs-pump:--ring 1M" "uwarp-rping:default 7174" \
	"uwarp-ucmatose:default 7471" "uwarp-fuzz:cases per class (default 20)" \
	"uwarp-delayline:default 24" "uwarp-crcbench:default 300" \
	"uwarp-iobench:(default 1M)"; do
	t=${want%%:*} w=${want#*:}
	if ! timeout 10 "$bin/$t" --help 2>/dev/null | grep -qF -- "$w"; then
		echo "FAIL $t --help does not say '$w' on stdout"
		fails=$((fails + 1))
	fi
done
# --version: every tool says the project's version (CMakeLists.txt) and exits 0
version=$(sed -n 's/^project(uwarp VERSION \([0-9.]*\).*/\1/p' "$(dirname "$0")/../../CMakeLists.txt")
for t in uwarp-perf exs-pump uwarp-rping uwarp-ucmatose uwarp-fuzz uwarp-delayline uwarp-demo \
	uwarp-crcbench uwarp-iobench; do
	out=$(timeout 10 "$bin/$t" --version 2>&1)
	if [ $? -ne 0 ] || [ "$out" != "$t (uwarp) $version" ]; then
		echo "FAIL $t --version: '$out' (wanted '$t (uwarp) $version', exit 0)"
		fails=$((fails + 1))
	fi
done
out=$(timeout 10 "$perf" -c 127.0.0.1 -p 9 --op write --size 64K --iters 1 2>&1)
if grep -q "size" <<<"$out" && grep -qE "not a size|out of range" <<<"$out"; then
	echo "FAIL uwarp-perf --size 64K was refused: $out"
	fails=$((fails + 1))
fi

[ "$fails" -eq 0 ] && echo "every bad value refused, by name" || exit 1
