#!/bin/bash
# test_ibv_tools.sh BIN_DIR TESTS_DIR: Debian's own ibv_devices and ibv_devinfo
# (ibverbs-utils, unmodified) under uwarp-run see the device uwarp0 and its
# port as rdma-core's tools print them; uwarp-run refuses what it cannot
# do, with a message and an exit status; UWARP_VERBS_DEBUG=1 names a call
# that is not implemented.
set -u
bin=$1
tests=$2
run=$bin/uwarp-run
fail=0
check() { # check WHAT COMMAND...: COMMAND must succeed
	local what=$1
	shift
	if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}
command -v ibv_devinfo >/dev/null || { echo "ibv_devinfo missing (apt-get install ibverbs-utils)"; exit 1; }

out=$("$run" ibv_devices 2>&1)
echo "$out"
check "ibv_devices lists uwarp0 with a GUID" grep -Eq '^\s+uwarp0\s+[0-9a-f]{16}$' <<<"$out"

out=$("$run" ibv_devinfo -v 2>&1)
rc=$?
echo "$out" | head -12
check "ibv_devinfo -v exits 0" test $rc -eq 0
check "ibv_devinfo: transport iWARP" grep -q 'transport:.*iWARP (1)' <<<"$out"
check "ibv_devinfo: the port is active" grep -q 'state:.*PORT_ACTIVE (4)' <<<"$out"
check "ibv_devinfo: link layer Ethernet" grep -q 'link_layer:.*Ethernet' <<<"$out"
check "ibv_devinfo: 127.0.0.1 is a GID" grep -q 'GID\[.*\]:.*ffff:7f00:0001' <<<"$out"
check "ibv_devinfo: the firmware names uwarp" grep -q 'fw_ver:.*uwarp' <<<"$out"
check "ibv_devinfo: board_id from the virtual sysfs" grep -q 'board_id:.*uwarp' <<<"$out"
out=$("$run" ibv_devinfo -d uwarp0 -i 1 2>&1)
check "ibv_devinfo -d uwarp0 -i 1" grep -q 'hca_id:.*uwarp0' <<<"$out"
"$run" ibv_devinfo -d mlx5_0 >/dev/null 2>&1
check "ibv_devinfo -d of another device fails" test $? -ne 0

# uwarp-run's own arguments
"$run" >/dev/null 2>&1
check "uwarp-run with no program: usage, exit 2" test $? -eq 2
err=$("$run" no-such-program-here 2>&1)
rc=$?
check "uwarp-run of a missing program: exit 127" test $rc -eq 127
check "uwarp-run names the missing program" grep -q 'no-such-program-here: no such program' <<<"$err"
check "uwarp-run --version" grep -q '^uwarp-run [0-9]' <<<"$("$run" --version)"
# the library is found through LD_LIBRARY_PATH, kept ahead of the caller's
out=$(LD_LIBRARY_PATH=/nonexistent "$run" sh -c 'echo "$LD_LIBRARY_PATH"')
check "uwarp-run puts its library first and keeps the caller's path" \
	grep -Eq '/rdma:/nonexistent$' <<<"$out"

# UWARP_VERBS_DEBUG=1: a line per refusal, naming the call and why, for
# every call README names as not implemented (the unit tests make each
# once; a refused ibv_wr_* request is named by ibv_wr_complete, which
# fails the batch, once per kind: Immediate, TSO, UD, XRC, atomic write)
err=$(UWARP_VERBS_DEBUG=1 "$run" "$tests/test_ibv_objects" 2>&1 >/dev/null)
check "UWARP_VERBS_DEBUG=1 names ibv_create_ah and why" \
	grep -q '^uwarp-verbs: ibv_create_ah: iWARP has no address handles' <<<"$err"
# said NAME COUNT: COUNT lines name the call NAME, each with a reason and
# its errno's text
said() {
	local n
	n=$(grep -c "^uwarp-verbs: $1: .* (.*)$" <<<"$err")
	check "UWARP_VERBS_DEBUG=1 names $1 $2 time(s)" test "$n" -eq "$2"
}
for c in ibv_create_ah ibv_create_ah_from_wc ibv_init_ah_from_wc ibv_destroy_ah \
	ibv_attach_mcast ibv_detach_mcast ibv_import_device ibv_import_pd ibv_import_mr \
	ibv_import_dm ibv_reg_dmabuf_mr ibv_rereg_mr ibv_query_ece ibv_set_ece ibv_modify_srq; do
	said $c 1
done
if [ -x "$tests/test_rdma_cm" ]; then
	err=$(UWARP_VERBS_DEBUG=1 "$run" "$tests/test_rdma_cm" 2>&1 >/dev/null)
	for c in rdma_join_multicast rdma_join_multicast_ex rdma_leave_multicast rdma_notify \
		rdma_set_local_ece rdma_get_remote_ece ibv_create_qp_ex; do
		said $c 1
	done
	said rdma_set_option 2 # an InfiniBand timeout, a path record
	said ibv_wr_complete 5
fi
if [ -x "$tests/test_rsocket" ]; then
	err=$(UWARP_VERBS_DEBUG=1 "$run" "$tests/test_rsocket" 2>&1 >/dev/null)
	for c in riomap riounmap riowrite rsocket; do
		said $c 1
	done
fi
err=$("$run" "$tests/test_ibv_objects" 2>&1 >/dev/null)
check "without UWARP_VERBS_DEBUG nothing is said" test -z "$(grep uwarp-verbs <<<"$err")"

exit $fail
