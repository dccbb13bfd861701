#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-guest.sh: the guest half of `make bench` (tools/bench/run boots one
# guest with selftests/rig/vm-run and runs this in it).
#
# One guest, rxe0 looping back to itself: kxfer listens on 10.99.0.1 and
# connects to itself (sessions q1 and q4, with 1 and 4 QPs), and perftest's
# server and client both run on rxe0.  For each repetition and each row,
# kxfer-bench and the matching perftest run one after the other (which
# goes first alternates from one repetition to the next).  Raw outputs go
# to $KXFER_OUT/raw/REP/ROW.{kxfer.json,perftest.txt,perftest.time};
# tools/bench/report turns them into the table of medians.  Then, each
# repetition, seed 003 on kxfer alone (kxfer-bench kv, plan), and the
# demo's KV push on session q1 straight on kxfer (kxfer-bench push) and
# through NIXL and its KXFER backend (kv-nixl-bench.py: the push of
# examples/kv-nixl.py), one after the other: REP/kv_push.{kxfer,nixl}.json;
# without a NIXL build (make bench makes one) the NIXL half is left out.
#
# Settings (tools/bench/run writes them to build/bench/config, which the
# guest reads through the host's file system): BENCH_REPS (default 3),
# BENCH_SECS (seconds per point, default 3), BENCH_ROWS (rows to run,
# default all; see ROWS below).

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=../guest/common.sh
source "$KXFER_TOP/selftests/guest/common.sh"

set -euo pipefail
cd "$KXFER_TOP"
if [ -f build/bench/config ]; then
	# shellcheck source=/dev/null
	source build/bench/config
fi

export PATH="$KXFER_TOP/tools/kxfer-bench:$PATH"
REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECS:-3}
ADDR=$KXFER_SELF_ADDR
DEV=$KXFER_RDMA_DEV
RAW=$KXFER_OUT/raw
LAT_ITERS=5000
# perftest's bandwidth tests run a number of iterations (-n): its
# duration mode (-D) keeps a warm-up margin that, for large messages and
# a few seconds under TCG, leaves nothing measured.  Aim at $SECS seconds
# at EST_BPS; both tools get the same number of messages in flight
# (perftest -t per QP, kxfer-bench -q).
EST_BPS=70000000

# iters SIZE QPS: perftest iterations per QP for about $SECS seconds
iters() {
	local n=$((SECS * EST_BPS / $1 / $2))

	echo $((n < 32 ? 32 : n))
}

peer_up() {
	kxferctl -j peer show "$1" 2>/dev/null | grep -q '"state":"up"'
}

setup() {
	kxfer_load node_name=self
	kxferctl pool add bench size 32M mode 0666
	kxferctl pool add benchdst size 32M mode 0666
	kxferctl export add bench pool benchdst access read,write
	kxferctl listen "$ADDR" allow "$ADDR/32"
	kxferctl peer add q1 "$ADDR" qps 1
	kxferctl peer add q4 "$ADDR" qps 4
	busywait 20000 peer_up q1
	busywait 20000 peer_up q4
	busywait 20000 sh -c "kxferctl -j peer show q4 | grep -q '\"name\":\"bench\"'"
	kxferctl -j pool show bench >"$KXFER_OUT/pool.json"
	kxferctl -j peer show >"$KXFER_OUT/peers.json"
	ibv_devinfo -v -d "$DEV" >"$KXFER_OUT/devinfo.txt"
	uname -r >"$KXFER_OUT/kernel.txt"
}

# timed FILE CMD...: run CMD, its "real user sys" seconds to FILE
timed() {
	local file=$1 TIMEFORMAT='%R %U %S'

	shift
	{ time "$@" 2>&1; } 2>"$file"
}

perftest_listening() {
	ss -ltn | grep -q ':18515 '
}

# perftest TOOL OUT ARGS... : server in the background, client here; the
# client's report to $out.txt, both sides' CPU times to $out.time
# (client line then server line).
perftest() {
	local tool=$1 out=$2 spid rc=0

	shift 2
	timed "$out.stime" timeout 120 "$tool" -d "$DEV" -F "$@" >"$out.server" &
	spid=$!
	# The server is slow to start under TCG: connect once it listens.
	busywait 30000 perftest_listening || true
	timed "$out.ctime" timeout 120 "$tool" -d "$DEV" -F "$@" "$ADDR" >"$out.txt" || rc=$?
	wait "$spid" || rc=$?
	cat "$out.ctime" "$out.stime" >"$out.time"
	rm -f "$out.ctime" "$out.stime"
	return "$rc"
}

# nixlbench OUT ARGS...: kv-nixl-bench.py ARGS, its JSON to OUT.json,
# NIXL's log to OUT.log, its times to OUT.time
nixlbench() {
	local out=$1 TIMEFORMAT='%R %U %S'

	shift
	{ time /usr/bin/python3 "$KXFER_TOP/selftests/bench/kv-nixl-bench.py" "$@" \
		>"$out.json" 2>"$out.log"; } 2>"$out.time"
}

kxbench() {
	local out=$1

	shift
	timed "$out.time" kxfer-bench -j -t "$SECS" "$@" >"$out.json"
}

# row NAME: run kxfer and perftest for row NAME; $1 of the kxfer side
# first when $2 is 0
run_row() {
	local row=$1 order=$2 dir=$3
	local -a kx pt

	case $row in
	write_bw_64K_q1)
		kx=(-p q1 -o write -s 64K -q 128 -b 16 bw)
		pt=(ib_write_bw -s 65536 -q 1 -t 128 -n "$(iters 65536 1)") ;;
	write_bw_1M_q1)
		kx=(-p q1 -o write -s 1M -q 16 -b 4 bw)
		pt=(ib_write_bw -s 1048576 -q 1 -t 16 -n "$(iters 1048576 1)") ;;
	read_bw_1M_q1)
		kx=(-p q1 -o read -s 1M -q 16 -b 4 bw)
		pt=(ib_read_bw -s 1048576 -q 1 -t 16 -n "$(iters 1048576 1)") ;;
	write_bw_1M_q4)
		kx=(-p q4 -o write -s 1M -q 16 -b 4 bw)
		pt=(ib_write_bw -s 1048576 -q 4 -t 4 -n "$(iters 1048576 4)") ;;
	read_bw_1M_q4)
		kx=(-p q4 -o read -s 1M -q 16 -b 4 bw)
		pt=(ib_read_bw -s 1048576 -q 4 -t 4 -n "$(iters 1048576 4)") ;;
	write_rate_4K_q1)
		kx=(-p q1 -o write -s 4K -q 128 -b 32 rate)
		pt=(ib_write_bw -s 4096 -q 1 -t 128 -n "$(iters 4096 1)") ;;
	write_lat_8_poll)
		kx=(-p q1 -o write -s 8 -n "$LAT_ITERS" -m poll lat)
		pt=(ib_write_lat -s 8 -n "$LAT_ITERS") ;;
	write_lat_8_block)
		kx=(-p q1 -o write -s 8 -n "$LAT_ITERS" -m block lat)
		pt=(ib_write_lat -s 8 -n "$LAT_ITERS") ;;
	read_lat_8_poll)
		kx=(-p q1 -o read -s 8 -n "$LAT_ITERS" -m poll lat)
		pt=(ib_read_lat -s 8 -n "$LAT_ITERS") ;;
	*)
		echo "unknown row $row" >&2
		return 1 ;;
	esac
	if [ "$order" = 0 ]; then
		kxbench "$dir/$row.kxfer" "${kx[@]}"
		perftest "${pt[@]:0:1}" "$dir/$row.perftest" "${pt[@]:1}"
	else
		perftest "${pt[@]:0:1}" "$dir/$row.perftest" "${pt[@]:1}"
		kxbench "$dir/$row.kxfer" "${kx[@]}"
	fi
}

ROWS="write_bw_64K_q1 write_bw_1M_q1 read_bw_1M_q1 write_bw_1M_q4 read_bw_1M_q4
write_rate_4K_q1 write_lat_8_poll write_lat_8_block read_lat_8_poll"

setup
nixl=1
nixl_env || { nixl=0; echo "no NIXL build (make bench makes one): kv_push without NIXL"; }
echo "kernel $(uname -r), $(nproc) CPUs, $REPS repetitions of $SECS s"
for rep in $(seq 1 "$REPS"); do
	dir=$RAW/$rep
	mkdir -p "$dir"
	for row in ${BENCH_ROWS:-$ROWS}; do
		echo "rep $rep: $row"
		run_row "$row" $(((rep + 1) % 2)) "$dir"
	done
	# seed 003 and the planner: kxfer only
	echo "rep $rep: kv, plan"
	kxbench "$dir/kv_q1.kxfer" -p q1 -t 1 kv
	kxbench "$dir/kv_q4.kxfer" -p q4 -t 1 kv
	kxbench "$dir/plan.kxfer" -t 1 plan
	# the demo's push, straight and through NIXL, on the same session
	echo "rep $rep: kv push, kxfer and NIXL+KXFER"
	if ((rep % 2 || !nixl)); then
		kxbench "$dir/kv_push.kxfer" -p q1 -t 2 push
		((!nixl)) || nixlbench "$dir/kv_push.nixl" --session q1 --secs 2
	else
		nixlbench "$dir/kv_push.nixl" --session q1 --secs 2
		kxbench "$dir/kv_push.kxfer" -p q1 -t 2 push
	fi
done
echo "bench done"
