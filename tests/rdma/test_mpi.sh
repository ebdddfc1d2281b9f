#!/bin/bash
# test_mpi.sh BIN_DIR SOURCE: Debian's Open MPI, unmodified, over uwarp:
# its ofi MTL on libfabric's verbs;ofi_rxm, whose verbs provider runs on
# uwarp's libibverbs and librdmacm (every rank under uwarp-run). SOURCE is
# mpi_check.c (ping-pong with data check up to 4 MiB, allreduce,
# alltoall), built here with mpicc.
#   2 ranks in one network namespace (the traffic goes over lo)
#   4 ranks across two namespaces joined by a veth pair, 2 in each (by
#     node: ranks 0 and 1, the ping-pong pair, apart): mpirun
#     reaches the second namespace's daemon through a launch agent that
#     enters it (nsenter), as ssh would reach another host; the veth's
#     traffic is captured, and must hold RDMAP Sends, Read Requests and
#     Responses (ofi_rxm's rendezvous of its large messages) in MPA FPDUs,
#     every CRC good
# Needs namespaces and veth (root): without them it says so and skips.
. "$(dirname "$0")/../hostile/lib.sh"
hostile_begin "$0" "$@"
. "$(dirname "$0")/capture.sh"
bin=$1
src=$2
run=$bin/uwarp-run
[ -n "${UWARP_HOSTILE_NETNS:-}" ] || { echo "SKIP: no network namespace of our own (root needed)"; exit 77; }
for p in mpicc mpirun tshark nsenter; do
	command -v $p >/dev/null || { echo "$p missing (scripts/test installs it)"; exit 1; }
done
mpicc -O2 -Wall -o "$work/mpi_check" "$src" || { echo "FAIL mpicc"; exit 1; }

# the second namespace: a process of its own holds it
unshare -n -- sleep 3600 &
ns2=$!
track $ns2
for _ in $(seq 100); do
	[ "$(readlink /proc/$ns2/ns/net)" != "$(readlink /proc/$$/ns/net)" ] && break
	sleep 0.05
done
ip link add uwmpi0 type veth peer name uwmpi1 &&
	ip link set uwmpi1 netns $ns2 &&
	ip addr add 10.204.0.1/24 dev uwmpi0 && ip link set uwmpi0 up &&
	nsenter -t $ns2 -n sh -c 'ip link set lo up && ip addr add 10.204.0.2/24 dev uwmpi1 &&
		ip link set uwmpi1 up' || { echo "FAIL no veth pair between the namespaces"; exit 1; }

# mpirun's launch agent: "AGENT HOST COMMAND..." runs COMMAND in the
# second namespace, the only host it is asked to reach
cat >"$work/agent" <<EOF
#!/bin/sh
shift
exec nsenter -t $ns2 -n sh -c "\$*"
EOF
chmod +x "$work/agent"

root=()
[ "$(id -u)" = 0 ] && root=(--allow-run-as-root)
# libfabric's verbs provider offers the addresses of interfaces other
# than loopback: FI_VERBS_IFACE picks the veth in both namespaces.
# FI_PROVIDER limits libfabric itself to verbs under ofi_rxm, so no rank
# can fall back to its tcp or shm providers; Open MPI's include list
# says the same on its side.
mpi=(mpirun "${root[@]}" --oversubscribe --mca pml cm --mca mtl ofi
	--mca mtl_ofi_provider_include "verbs;ofi_rxm" --mca btl self --mca mtl_base_verbose 100
	--mca oob_tcp_if_include 10.204.0.0/24 -x FI_VERBS_IFACE=uwmpi -x "FI_PROVIDER=verbs;ofi_rxm")

# mpi NAME RANKS ARGS...: mpirun of RANKS ranks with ARGS, each running
# mpi_check on uwarp; passes when it exits 0, rank 0 says ok and every
# rank chose uwarp0
mpi() {
	local name=$1 ranks=$2 n
	shift 2
	timeout 120 "${mpi[@]}" -np "$ranks" "$@" "$run" "$work/mpi_check" >"$work/$name.log" 2>&1 </dev/null
	local rc=$?
	n=$(grep -c "mtl:ofi:provider: uwarp0" "$work/$name.log")
	if [ $rc -eq 0 ] && grep -q "^ok: " "$work/$name.log" && [ "$n" -eq "$ranks" ]; then
		echo "ok: $name: $(grep '^ok: ' "$work/$name.log"), every rank on uwarp0"
	else
		bad "$name: mpirun exit $rc, $n ranks on uwarp0"
		grep -v "<warn>\|mca: base\|mca:base\|select:" "$work/$name.log" | tail -n 40
	fi
}
mpi two-ranks 2

capture_start uwmpi0 "$work/mpi.pcap"
mpi four-ranks-two-namespaces 4 --host 10.204.0.1:2,10.204.0.2:2 --map-by node \
	--mca plm_rsh_agent "$work/agent"
capture_stop
capture_judge mpi 1 2 3
exit $fail
