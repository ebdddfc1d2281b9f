#!/usr/bin/env bash
# test_install.sh SOURCE_DIR BUILD_DIR: what a user of an installed uwarp
# does. `cmake --install` into a fresh prefix; the example program shown in
# README.md (the same as examples/hello_send.c) built with pkg-config,
# against the shared and the static library; both run against the installed
# uwarp-perf server, which must count each message: 17 bytes received.
set -euo pipefail
src=$1
build=$2
work=$(mktemp -d)
server=
cleanup() {
	local rc=$?
	if [ -n "$server" ]; then
		kill "$server" 2>/dev/null || true
		wait "$server" 2>/dev/null || true
	fi
	rm -rf "$work"
	exit "$rc"
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*"
	exit 1
}

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || fail "cmake --install"
for f in include/uwarp/verbs.h include/uwarp/ep.h include/uwarp/wire.h bin/uwarp-perf \
	lib/libuwarp.a; do
	[ -e "$work/prefix/$f" ] || fail "not installed: $f"
done
pc=$(find "$work/prefix" -name uwarp.pc)
[ -n "$pc" ] || fail "no uwarp.pc installed"
libdir=$(dirname "$(dirname "$pc")")
ls "$libdir"/libuwarp.so.0 >/dev/null || fail "no libuwarp.so.0 in $libdir"

# the program in README.md, exactly
sed -n '/^```c example/,/^```$/p' "$src/README.md" | sed '1d;$d' >"$work/hello.c"
[ -s "$work/hello.c" ] || fail "README.md has no \`\`\`c example block"
diff -u "$src/examples/hello_send.c" "$work/hello.c" || fail "README's example differs from examples/hello_send.c"
lines=$(sed -n '/^int main/,/^}/p' "$work/hello.c" | wc -l)
echo "README example: main() is $lines lines"

export PKG_CONFIG_PATH=$(dirname "$pc")
cc=${CC:-cc}
# shellcheck disable=SC2046
$cc -Wall -Wextra -Werror -o "$work/hello" "$work/hello.c" $(pkg-config --cflags --libs uwarp) ||
	fail "the example does not build against the installed library"
# shellcheck disable=SC2046
$cc -Wall -Wextra -Werror -o "$work/hello-static" "$work/hello.c" $(pkg-config --cflags uwarp) \
	-Wl,-Bstatic -luwarp -Wl,-Bdynamic -L"$libdir" $(pkg-config --static --libs uwarp | sed 's/-luwarp//') ||
	fail "the example does not link statically"

"$work/prefix/bin/uwarp-perf" -s -p 0 --loop >"$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do
	grep -q "listening on port" "$work/server.out" && break
	sleep 0.05
done
port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' "$work/server.out")
[ -n "$port" ] || fail "the installed uwarp-perf server did not start: $(cat "$work/server.out")"

LD_LIBRARY_PATH=$libdir "$work/hello" 127.0.0.1 "$port" || fail "hello (shared) failed"
"$work/hello-static" ::1 "$port" || fail "hello (static, IPv6) failed"
for _ in $(seq 100); do
	[ "$(grep -c 'connection done: 1 receives, 17 bytes, 0 errors' "$work/server.out")" -ge 2 ] && break
	sleep 0.05
done
cat "$work/server.out"
[ "$(grep -c 'connection done: 1 receives, 17 bytes, 0 errors' "$work/server.out")" -eq 2 ] ||
	fail "the server did not receive both messages"
echo "PASS: installed, built with pkg-config (shared and static), ran against uwarp-perf"
