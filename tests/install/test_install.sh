#!/usr/bin/env bash
# test_install.sh SOURCE_DIR BUILD_DIR: what a user of an installed uwarp
# does. `cmake --install` into a fresh prefix, where every file README names
# must be; the example program shown in README.md (the same as
# examples/hello_send.c) built with pkg-config, against the shared and the
# static library; both run against the installed uwarp-perf server, which
# must count each message: 17 bytes received. Then an esock program built
# with pkg-config esock, and a DAT program that opens the installed uDAPL
# provider through Debian's registry and the installed dat.conf.
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
# every file README names (the libraries, headers, tools, pkg-config files)
for f in include/uwarp/verbs.h include/uwarp/ep.h include/uwarp/wire.h include/exs.h \
	include/sys/exs.h include/esock.h bin/uwarp-perf bin/exs-pump bin/uwarp-rping \
	bin/uwarp-ucmatose bin/uwarp-fuzz bin/uwarp-delayline bin/uwarp-demo bin/uwarp-crcbench \
	bin/uwarp-iobench; do
	[ -e "$work/prefix/$f" ] || fail "not installed: $f"
done
# a manual page per tool and per public header, found by man(1) in the
# prefix and rendered without a warning
for page in uwarp-perf exs-pump uwarp-rping uwarp-ucmatose uwarp-fuzz uwarp-delayline uwarp-demo \
	uwarp-crcbench uwarp-iobench uwarp-verbs.3 uwarp-ep.3 uwarp-wire.3 exs.3 esock.3; do
	sec=1 name=$page
	case $page in *.3) sec=3 name=${page%.3} ;; esac
	f=$(man -M "$work/prefix/share/man" -w "$sec" "$name" 2>/dev/null) ||
		fail "man -M PREFIX/share/man $sec $name finds no page"
	w=$(groff -ww -man -z "$f" 2>&1)
	[ -z "$w" ] || fail "$f: groff warns: $w"
done
pc=$(find "$work/prefix" -name uwarp.pc)
[ -n "$pc" ] || fail "no uwarp.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in libuwarp.so.0 libuwarp.a libuwarp-exs.so.0 libexs.so libexs.a libesock.so \
	libesock-preload.so pkgconfig/uwarp.pc pkgconfig/exs.pc pkgconfig/esock.pc; do
	[ -e "$libdir/$f" ] || fail "not installed: $libdir/$f"
done
dapl=
if [ -e "$build/lib/libuwarp-dapl.so.2" ]; then # (built when libdapl-dev is there)
	dapl=$work/prefix/share/uwarp/dat.conf
	[ -e "$libdir/libuwarp-dapl.so.2" ] || fail "not installed: libuwarp-dapl.so.2"
	grep -q "^uwarp u2.0 .* $libdir/libuwarp-dapl.so.2 " "$dapl" ||
		fail "the installed dat.conf does not name the installed provider: $(cat "$dapl")"
fi

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

# one program per library besides: esock (linked with pkg-config esock), the
# preload on an installed tool, and the uDAPL provider through Debian's
# registry with the installed dat.conf
# shellcheck disable=SC2046
$cc -Wall -Wextra -Werror -o "$work/esock_pair" "$src/tests/install/esock_pair.c" \
	$(pkg-config --cflags --libs esock) || fail "esock_pair does not build with pkg-config esock"
LD_LIBRARY_PATH=$libdir "$work/esock_pair" || fail "esock_pair failed"
preload=$(pkg-config --variable=preload esock)
[ -e "$preload" ] || fail "esock.pc names no preload library: '$preload'"
if [ -n "$dapl" ]; then
	$cc -Wall -Wextra -Werror -o "$work/dat_open" "$src/tests/install/dat_open.c" -ldat2 ||
		fail "dat_open does not build against libdat2"
	DAT_OVERRIDE=$dapl "$work/dat_open" || fail "the installed uDAPL provider does not open"
fi
# rdma-core's libraries (built where libibverbs-dev is): the installed
# uwarp-run puts the installed ones under Debian's ibv_devices
if [ -e "$build/lib/rdma/libibverbs.so.1" ]; then
	[ -x "$work/prefix/bin/uwarp-run" ] || fail "not installed: bin/uwarp-run"
	f=$(man -M "$work/prefix/share/man" -w 1 uwarp-run 2>/dev/null) || fail "no manual page for uwarp-run"
	w=$(groff -ww -man -z "$f" 2>&1)
	[ -z "$w" ] || fail "$f: groff warns: $w"
	for f in libibverbs.so.1 libmlx5.so.1 libefa.so.1; do
		[ -e "$libdir/uwarp/rdma/$f" ] || fail "not installed: $libdir/uwarp/rdma/$f"
	done
	if command -v ibv_devices >/dev/null; then
		out=$("$work/prefix/bin/uwarp-run" sh -c 'echo "$LD_LIBRARY_PATH"; ibv_devices')
		grep -q "^$libdir/uwarp/rdma" <<<"$out" || fail "the installed uwarp-run names another directory: $out"
		grep -q "uwarp0" <<<"$out" || fail "ibv_devices under the installed uwarp-run: $out"
	fi
fi
echo "PASS: installed, built with pkg-config (shared and static), ran against uwarp-perf;" \
	"esock, uDAPL and rdma-core programs ran from the installed tree"
