#!/bin/bash
# uwarp-iobench's I/O models each deliver every byte: a short run of each
# (tcp, epoll, lowat and, when liburing was found at build time, uring and
# waitall) at a message size a 64 KiB FPDU does not divide, and at one
# below the size the receiver reads in place, with every message compared
# with what was sent and every CRC checked. A model that loses, reorders
# or misplaces a byte, or ends the stream inside an FPDU, ends the tool
# with status 1. No figure is judged: speed is for the benchmark.
bin=${1:?usage: test_iobench.sh BIN_DIR}
tool=$bin/uwarp-iobench
fails=0
# (--help names the models built; a model that fails at run time fails here)
if "$tool" --help | grep -q "all built: all five"; then
	models=tcp,epoll,lowat,uring,waitall
else
	models=tcp,epoll,lowat
	echo "note: built without liburing: the io_uring models are not tested"
fi
for size in 1000000 3000 1M; do
	out=$(timeout 120 "$tool" --io "$models" --size "$size" --time 0.3 --rounds 2 --verify 2>&1)
	rc=$?
	if [ "$rc" -ne 0 ]; then
		echo "FAIL at $size bytes: exit $rc:"
		sed 's/^/    /' <<<"$out" | tail -4
		fails=$((fails + 1))
		continue
	fi
	for m in ${models//,/ }; do
		if ! grep -qE "^median +$m +[0-9.]+ Gb/s" <<<"$out"; then
			echo "FAIL $m at $size bytes: no figure:"
			sed 's/^/    /' <<<"$out" | tail -4
			fails=$((fails + 1))
		else
			echo "ok   $m at $size bytes: $(grep -E "^median +$m " <<<"$out" | cut -c1-40)"
		fi
	done
done
out=$(timeout 60 "$tool" --io "$models" --size 100000 --time 0.2 --rounds 1 --verify --no-crc 2>&1)
if [ $? -ne 0 ]; then
	echo "FAIL without CRC:"
	sed 's/^/    /' <<<"$out" | tail -4
	fails=$((fails + 1))
fi
[ "$fails" -eq 0 ] && echo "every model moved every byte intact" || exit 1
