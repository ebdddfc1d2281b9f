#!/usr/bin/env bash
# test_deb.sh BUILD_DIR: the Debian package a user makes with
# `cpack -G DEB` in the build directory. Its Depends come from the binaries
# (libuv1, libisal2, libdapl2, libc6), and `apt-get install ./uwarp_*.deb`
# installs it: here into a throwaway root, an overlay over / in a mount
# namespace of the test's own (the host's packages are not touched), where
# the installed tools run (uwarp-perf over loopback, data verified),
# pkg-config finds the three libraries, man finds the pages and the DAT
# registry file names the installed provider.
set -euo pipefail
build=$1
. "$(dirname "$0")/throwaway_root.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() {
	echo "FAIL: $*"
	exit 1
}

(cd "$build" && cpack -G DEB -B "$work/pkg") >"$work/cpack.log" 2>&1 ||
	{ cat "$work/cpack.log"; fail "cpack -G DEB"; }
deb=$(ls "$work/pkg"/uwarp_*_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
echo "package: $(basename "$deb"), Depends: $depends"
for d in libuv1 libc6; do
	grep -q "$d" <<<"$depends" || fail "Depends lacks $d"
done

cat >"$work/inside.sh" <<'IN'
set -eu
deb=$1
# the host's package lists: everything the package needs is installed, so
# nothing is downloaded
DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb" >/tmp/apt.log 2>&1 ||
	{ cat /tmp/apt.log; exit 1; }
dpkg -s uwarp | grep -q "Status: install ok installed"
uwarp-perf --version
pkg-config --modversion uwarp exs esock
man -w uwarp-perf exs
grep -q " /usr/lib/libuwarp-dapl.so.2 " /usr/share/uwarp/dat.conf
uwarp-perf -s -p 0 >/tmp/server.log 2>&1 &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' /tmp/server.log)
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat /tmp/server.log; exit 1; }
uwarp-perf -c 127.0.0.1 -p "$port" --op write --iters 100 | grep -q "data verified"
wait $srv
IN
rc=0
in_throwaway_root "$work" bash "$work/inside.sh" "$deb" || rc=$?
[ $rc -ne 77 ] || { echo "SKIP: no mount namespace here (not root?)"; exit 77; }
[ $rc -eq 0 ] || fail "installing the package into a throwaway root"
echo "ok: apt-get install ./$(basename "$deb") in a throwaway root; its uwarp-perf verified data"
dpkg -s uwarp >/dev/null 2>&1 && fail "the host now has the package: the install leaked" || true
