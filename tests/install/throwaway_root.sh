# tests/install/throwaway_root.sh, sourced: in_throwaway_root WORK CMD...
# runs CMD as root in a throwaway copy of this system: an overlay over /
# whose changes go to a tmpfs under WORK and vanish with the mount
# namespace the command runs in (/proc and /dev mounted; every host path,
# WORK's too, reads the same inside). What an install writes into /usr,
# /usr/local or dpkg's database never reaches the host. Returns CMD's
# status, or 77 where no mount namespace can be made (not root).
in_throwaway_root() {
	local work=$1
	shift
	unshare -m --propagation private true 2>/dev/null || return 77
	mkdir -p "$work/ov"
	unshare -m --propagation private bash -c '
		set -e
		ov=$1
		shift
		mount -t tmpfs none "$ov"
		mkdir -p "$ov/up" "$ov/work" "$ov/root"
		mount -t overlay overlay -o "lowerdir=/,upperdir=$ov/up,workdir=$ov/work" "$ov/root"
		mount -t proc proc "$ov/root/proc"
		mount --rbind /dev "$ov/root/dev"
		exec chroot "$ov/root" "$@"' _ "$work/ov" "$@"
}
