# Shared by scripts/test, scripts/demo and scripts/fuzz: find the tree,
# install what a fresh Debian machine lacks, configure and build.

UWARP_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
UWARP_JOBS=$(nproc 2>/dev/null || echo 2)

# The Debian packages the build, the tests and the demo need.
UWARP_PACKAGES=(cmake make gcc clang pkg-config binutils libuv1-dev libisal-dev libcmocka-dev tshark python3
	iproute2 iperf3 redis-server redis-tools memcached libmemcached-tools nginx wrk curl socat libdapl-dev dapl2-utils nftables clang-format-19
	man-db groff-base dpkg-dev libibverbs-dev librdmacm-dev ibverbs-utils rdmacm-utils perftest libfabric-bin
	openmpi-bin libopenmpi-dev qperf liburing-dev)

uwarp_missing() {
	local p
	for p in "$@"; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
	done
}

# Install the named packages that are missing, and nothing else.
uwarp_ensure_packages() {
	local missing sudo=""
	missing=$(uwarp_missing "$@")
	[ -z "$missing" ] && return 0
	[ "$(id -u)" -ne 0 ] && sudo=sudo
	echo "== installing missing Debian packages:" $missing
	export DEBIAN_FRONTEND=noninteractive
	# tshark's package asks whether ordinary users may capture: no.
	echo "wireshark-common wireshark-common/install-setuid boolean false" |
		$sudo debconf-set-selections
	# The servers the preload tests run (redis, nginx) are started by the
	# tests themselves: installing them must not start them as services.
	local policy=/usr/sbin/policy-rc.d made_policy=0
	if [ ! -e $policy ]; then
		printf '#!/bin/sh\nexit 101\n' | $sudo tee $policy >/dev/null &&
			$sudo chmod +x $policy && made_policy=1
	fi
	# A freshly booted machine may be running unattended upgrades: wait for
	# dpkg's lock (up to 10 minutes) as apt-get itself can, instead of failing.
	local lock=(-o DPkg::Lock::Timeout=600)
	$sudo apt-get "${lock[@]}" update -qq
	# shellcheck disable=SC2086
	$sudo apt-get "${lock[@]}" install -y -qq --no-install-recommends $missing
	local rc=$?
	[ $made_policy = 1 ] && $sudo rm -f $policy
	return $rc
}

# Everything, including the sanitizer and libFuzzer runtime of the clang
# that is installed (Debian ships it separately from clang itself).
uwarp_ensure_all_packages() {
	uwarp_ensure_packages "${UWARP_PACKAGES[@]}"
	local v
	v=$(clang -dumpversion 2>/dev/null | cut -d. -f1)
	[ -n "$v" ] && uwarp_ensure_packages "libclang-rt-$v-dev"
	return 0
}

# uwarp_build DIR [cmake args...]: configure (once) and build.
uwarp_build() {
	local dir=$1
	shift
	cmake -S "$UWARP_ROOT" -B "$dir" "$@" >"$dir.configure.log" 2>&1 ||
		{ mkdir -p "$dir"; cat "$dir.configure.log"; return 1; }
	cmake --build "$dir" -j "$UWARP_JOBS"
}

# uwarp_build_quiet DIR LOGNAME [cmake args...]: uwarp_build with its output
# in DIR/LOGNAME, shown only when the build fails. DIR is made first: on a
# fresh clone it does not exist yet, and the log lives in it.
uwarp_build_quiet() {
	local dir=$1 log=$1/$2
	shift 2
	mkdir -p "$dir" || return 1
	uwarp_build "$dir" "$@" >"$log" 2>&1 && return 0
	cat "$log"
	echo "the build of $dir/ failed (log: $log)"
	return 1
}
