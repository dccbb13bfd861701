# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# bench-smoke.sh: t_bench_smoke, every kxfer-bench mode run briefly over a
# kxfer session of this guest to itself (rxe loopback), so that the
# benchmark cannot rot; and the NIXL half of make bench's kv push row
# (selftests/bench/kv-nixl-bench.py), when NIXL and the plugin are built
# (make check builds them).  Source it from a suite after lib.sh and common.sh
# and run `ktest bench_smoke t_bench_smoke` with the module loaded; it
# leaves no pool, export, listener or session behind.  About 10-20 s of
# guest time.

BENCH_SMOKE_PEER=bsmoke

_bench_smoke_peer_up() {
	kxferctl -j peer show "$BENCH_SMOKE_PEER" 2>/dev/null |
		grep -q '"state":"up".*"remote_exports":\[{"name":"bsmoke"'
}

_bench_smoke_no_peers() {
	[ "$(kxferctl -j peer show | jq length)" = 0 ]
}

_bench_smoke_cleanup() {
	kxferctl peer del "$BENCH_SMOKE_PEER" 2>/dev/null || true
	busywait 15000 _bench_smoke_no_peers || true
	kxferctl listen del "$KXFER_SELF_ADDR" 2>/dev/null || true
	kxferctl export del bsmoke 2>/dev/null || true
	kxferctl pool del bsmoke-src 2>/dev/null || true
	kxferctl pool del bsmoke-dst 2>/dev/null || true
}

# _bench_smoke_check JSON FILTER: jq FILTER must hold on kxfer-bench's JSON
_bench_smoke_check() {
	if ! jq -e "$2" <<<"$1" >/dev/null; then
		echo "check failed: $2"
		echo "$1"
		return 1
	fi
}

t_bench_smoke() {
	local bench=$KXFER_TOP/tools/kxfer-bench/kxfer-bench j
	local -a common=(-j -p "$BENCH_SMOKE_PEER" -P bsmoke-src -e bsmoke)

	[ -x "$bench" ] || { echo "$bench is not built"; return 1; }
	expect_status 2 "$bench"
	expect_status 2 "$bench" frob
	expect_status 2 "$bench" -s 0 bw
	expect_status 2 "$bench" -k nosuch-layout kv

	# The planner needs no device.
	j=$("$bench" -j -t 0.1 -n 65536 plan)
	echo "$j"
	_bench_smoke_check "$j" 'length == 2 and
		(map(.variant) == ["count", "build"]) and
		all(.[]; .segs == 65536 and .wrs >= 1 and .wrs <= 65536 and
		    .jobs >= 2 and .segs_per_sec > 0)'

	defer _bench_smoke_cleanup
	kxferctl pool add bsmoke-src size 4M mode 0600
	kxferctl pool add bsmoke-dst size 4M mode 0600
	kxferctl export add bsmoke pool bsmoke-dst access read,write
	kxferctl listen "$KXFER_SELF_ADDR" allow "$KXFER_SELF_ADDR/32"
	kxferctl peer add "$BENCH_SMOKE_PEER" "$KXFER_SELF_ADDR" qps 2
	busywait 20000 _bench_smoke_peer_up

	# A missing peer or export is an error, not an empty result.
	expect_status 1 "$bench" -j -p nosuchpeer -P bsmoke-src -e bsmoke lat
	expect_status 1 "$bench" -j -p "$BENCH_SMOKE_PEER" -P bsmoke-src \
		-e nosuch lat

	j=$("$bench" "${common[@]}" -t 0.3 -o write,read -s 4K,1M -q 8 -b 4 bw)
	echo "$j"
	_bench_smoke_check "$j" 'length == 4 and
		(map(.op) == ["write", "write", "read", "read"]) and
		(map(.size) == [4096, 1048576, 4096, 1048576]) and
		all(.[]; .mode == "bw" and .qps == 2 and .jobs > 0 and
		    .bytes == .jobs * .size and .mb_per_sec > 0 and
		    .cpu_secs >= 0 and .msgs == .jobs and .reap_min == 4 and
		    .sys_busy_secs >= 0 and .sys_idle_secs >= 0 and
		    .sys_busy_secs + .sys_idle_secs > 0)'

	# rate: a REAP per batch by default, -w 1 reaps whatever is there
	j=$("$bench" "${common[@]}" -t 0.3 -s 64 -q 32 -b 8 rate)
	echo "$j"
	_bench_smoke_check "$j" 'length == 1 and .[0].mode == "rate" and
		.[0].size == 64 and .[0].jobs > 0 and .[0].jobs_per_sec > 0 and
		.[0].batch == 8 and .[0].reap_min == 8 and
		.[0].sys_busy_secs >= 0'
	j=$("$bench" "${common[@]}" -t 0.3 -s 4K -q 32 -b 8 -w 1 rate)
	echo "$j"
	_bench_smoke_check "$j" 'length == 1 and .[0].reap_min == 1 and
		.[0].jobs > 0 and .[0].bytes == .[0].jobs * 4096'

	j=$("$bench" "${common[@]}" -n 50 -o write,read lat)
	echo "$j"
	_bench_smoke_check "$j" 'length == 4 and
		(map(.variant) == ["block", "poll", "block", "poll"]) and
		all(.[]; .jobs == 50 and .min_us > 0 and
		    .min_us <= .p50_us and .p50_us <= .p99_us and
		    .avg_us >= .min_us and .sys_busy_secs >= 0)'

	# seed 003, small: 4 layers x 64 tokens x 256 bytes of K and of V;
	# a layer's K+V (32 KiB) is one WR when both sides are contiguous.
	j=$("$bench" "${common[@]}" -t 0.1 -L 4 -T 64 -B 256 kv)
	echo "$j"
	_bench_smoke_check "$j" 'length == 9 and
		all(.[]; .mode == "kv" and .bytes == 131072 and .secs > 0 and
		    .big_secs > 0 and .vs_big > 0 and .wrs >= 1 and
		    .wrs <= .segs)'
	_bench_smoke_check "$j" 'map({(.variant): [.segs, .wrs]}) | add |
		.["one-big-write"] == [1, 1] and
		.["p1-contig-kv-together"] == [256, 4] and
		.["p1-contig-kv-apart"] == [512, 8] and
		.["p16-contig-kv-together"] == [16, 4] and
		.["p16-contig-kv-apart"] == [32, 8] and
		.["p1-scattered-kv-apart"][0] == 512 and
		.["p16-scattered-kv-together"][0] == 16'
	_bench_smoke_check "$j" 'all(.[]; .avg_secs >= .secs and
		.avg_mb_per_sec > 0 and .msgs == .segs and .sys_busy_secs >= 0)'
	# -k: make bench's paged push row, one layout (no big write to compare)
	j=$("$bench" "${common[@]}" -t 0.1 -L 4 -T 64 -B 256 \
		-k p16-scattered-kv-apart kv)
	echo "$j"
	_bench_smoke_check "$j" 'length == 1 and
		.[0].variant == "p16-scattered-kv-apart" and .[0].segs == 32 and
		.[0].bytes == 131072 and .[0].avg_mb_per_sec > 0'

	# the demo's push (make bench's kv push row): 8 jobs, 112 segments
	j=$("$bench" "${common[@]}" -t 0.1 push)
	echo "$j"
	_bench_smoke_check "$j" 'length == 1 and .[0].mode == "push" and
		.[0].variant == "kxfer" and .[0].bytes == 409600 and
		.[0].layers == 8 and .[0].segs == 112 and .[0].jobs >= 3 and
		.[0].min_us > 0 and .[0].min_us <= .[0].p50_us and
		.[0].msgs == .[0].jobs * 8 and .[0].avg_us >= .[0].min_us'
	if ! (nixl_env); then
		echo "no NIXL build: the NIXL half of the kv push row is not run"
		return 0
	fi
	j=$(nixl_env && /usr/bin/python3 "$KXFER_TOP/selftests/bench/kv-nixl-bench.py" \
		--session "$BENCH_SMOKE_PEER" --secs 0.1)
	echo "$j"
	_bench_smoke_check "$j" 'length == 1 and .[0].mode == "push" and
		.[0].variant == "nixl" and .[0].bytes == 409600 and .[0].segs == 112 and
		.[0].layers == 8 and .[0].jobs >= 3 and .[0].min_us > 0 and
		.[0].min_us <= .[0].p50_us'
}
