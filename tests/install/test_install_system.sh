#!/usr/bin/env bash
# test_install_system.sh SOURCE_DIR BUILD_DIR: README's install line,
# verbatim and without --prefix (`sudo cmake --install build && sudo
# ldconfig`, into /usr/local), in a throwaway root (throwaway_root.sh: the
# host's /usr/local is not touched). Then, with no PKG_CONFIG_PATH and no
# LD_LIBRARY_PATH, as README promises: README's example program builds
# with pkg-config and Sends its message to the installed uwarp-perf server,
# pkg-config knows exs and esock, and man finds the pages.
set -euo pipefail
src=$1
build=$2
. "$(dirname "$0")/throwaway_root.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

cat >"$work/inside.sh" <<'IN'
set -eu
src=$1 build=$2
unset PKG_CONFIG_PATH LD_LIBRARY_PATH
cd "$src"
# README's line, the build directory where the test's build is
cmake --install "$build" >/tmp/install.log && ldconfig || { cat /tmp/install.log; exit 1; }
# shellcheck disable=SC2046
cc -Wall -Wextra -Werror -o /tmp/hello examples/hello_send.c $(pkg-config --cflags --libs uwarp)
pkg-config --modversion exs esock >/dev/null
man -w uwarp-perf uwarp-verbs >/dev/null
command -v uwarp-perf
uwarp-perf -s -p 0 --loop >/tmp/server.out 2>&1 &
srv=$!
port=
for _ in $(seq 100); do
	port=$(sed -n 's/.*listening on port \([0-9]*\).*/\1/p' /tmp/server.out)
	[ -n "$port" ] && break
	sleep 0.05
done
[ -n "$port" ] || { cat /tmp/server.out; exit 1; }
/tmp/hello 127.0.0.1 "$port"
for _ in $(seq 100); do
	grep -q 'connection done: 1 receives, 17 bytes, 0 errors' /tmp/server.out && break
	sleep 0.05
done
kill $srv
grep -q 'connection done: 1 receives, 17 bytes, 0 errors' /tmp/server.out ||
	{ cat /tmp/server.out; exit 1; }
IN
rc=0
in_throwaway_root "$work" bash "$work/inside.sh" "$src" "$build" || rc=$?
[ $rc -ne 77 ] || { echo "SKIP: no mount namespace here (not root?)"; exit 77; }
[ $rc -eq 0 ] || { echo "FAIL: README's install without --prefix"; exit 1; }
echo "PASS: cmake --install (no --prefix) and ldconfig; README's example built with pkg-config" \
	"alone and ran against the installed uwarp-perf"
