#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# scale-guest.sh: the guest half of tools/bench/scale (make bench's scale
# table, issue 44): one kxfer node (guest a) against N simulated peers
# (selftests/peersim on guest b) of 2 QPs each, for N in SCALE_PEERS.
#
# a makes one pool of SCALE_EXPORTS exports of 64 KiB (e000, e001, ...:
# every session registers all of them) and listens.  For each N, the two
# guests meet, b starts peersim, and a measures, on its own clock and in
# its own kernel:
#   up_ms       peersim's: from its start until every session is up (on
#               b's clock; a then checks that it counts N sessions up)
#   slab_kb, vmalloc_kb   kernel memory per session: /proc/meminfo's Slab
#               and VmallocUsed after minus before, over N; the slab
#               caches that grew most, from /proc/slabinfo
#   mrs         MRs on rxe0 (`rdma resource show`), and per session
#   advert_ms   from `kxferctl export add` of a new export until peersim
#               says every node has it (its file in /shared, polled every
#               100 ms, so as not to take the CPU from the kernel: that
#               much is the figure's resolution; peersim's own spread from
#               the first node to the last is sim.adverts)
#   jobs_per_s  peersim's: verified one-sided WRITEs and READs of 4 KiB
#               into the nodes' slices, 2 in flight per node, SCALE_SECS
#   idle_cpu    the whole guest's busy time over SCALE_IDLE seconds once
#               the traffic is over, sessions up and only keepalives
#               flowing (/proc/stat: softirqs and kworkers count), in %
#               of one CPU; meanwhile `perf stat` counts the work items
#               run (idle_works, per second) and the packets sent
#               (idle_xmits); with SCALE_PROFILE=1 another SCALE_IDLE
#               seconds are sampled by perf, into raw/N/idle.prof.txt
#   dead_ms     from asking peersim to kill its last node (its QPs gone
#               without a word, as a host that died) until a's monitor
#               reports that session down
#   del_ms      `kxferctl export del` of the new export, every session up:
#               its keys invalidated on each session and each told
# Results: $KXFER_OUT/scale.jsonl (a line per N, a's and peersim's
# figures), raw files in $KXFER_OUT/raw/N/.  Settings come from
# build/bench/scale/config (tools/bench/scale writes it).

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=../guest/common.sh
source "$KXFER_TOP/selftests/guest/common.sh"

set -euo pipefail
cd "$KXFER_TOP"
if [ -f build/bench/scale/config ]; then
	# shellcheck source=/dev/null
	source build/bench/scale/config
fi
PEERS=${SCALE_PEERS:-1 16 64 256}
EXPORTS=${SCALE_EXPORTS:-160}
SECS=${SCALE_SECS:-10}
IDLE=${SCALE_IDLE:-10}
PROFILE=${SCALE_PROFILE:-0}
SLICE=32768
SEED=4402
A=10.99.0.1
RAW=$KXFER_OUT/raw
KXFER_BARRIER_TIMEOUT=1800

# meminfo KEY: its value in kB
meminfo() {
	awk -v k="$1:" '$1 == k { print $2 }' /proc/meminfo
}

# slab_bytes: "cache bytes" of every slab cache (active objects x size)
slab_bytes() {
	awk 'NR > 2 { print $1, $2 * $4 }' /proc/slabinfo | sort
}

# rdma_count KIND: rxe0's objects of a kind (pd, cq, qp, cm_id, mr)
rdma_count() {
	rdma resource show | awk -v k="$1" '{ for (i = 1; i < NF; i++) if ($i == k) print $(i + 1) }'
}

busy_ticks() {
	awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9, $2 + $3 + $4 + $5 + $6 + $7 + $8 + $9 }' /proc/stat
}

sessions_up() {
	kxferctl -j peer show | jq '[.[] | select(.state == "up")] | length'
}

sessions_none() {
	[ "$(kxferctl -j peer show | jq length)" = 0 ]
}

has() {
	[ -e "$1" ]
}

# slab_growth BEFORE AFTER N: the five caches that grew most, per session
slab_growth() {
	join "$1" "$2" | awk -v n="$3" '{ d = $3 - $2; if (d > 0) printf "%s %.1f\n", $1, d / n / 1024 }' |
		sort -k2 -n -r | head -n 5 | awk '{ printf "%s\"%s\": %s", (NR>1 ? ", " : ""), $1, $2 }'
}

a_round() {
	local n=$1 dir=$KXFER_SHARED/s$1 raw=$RAW/$1 t0 adv_ms dead_ms
	local slab0 vm0 slab1 vm1 mrs cqs qps b0 b1 idle mon last monpid up works xmits
	local del_ms

	mkdir -p "$raw"
	slab_bytes >"$raw/slab.before"
	slab0=$(meminfo Slab) vm0=$(meminfo VmallocUsed)
	barrier "go-$n"
	# (not a's own polling: a peer show of 256 sessions takes the CPU)
	slowwait 1800 has "$dir/peersim.up"
	up=$(sessions_up)
	[ "$up" = "$n" ] || { echo "a counts $up sessions up, not $n"; return 1; }
	sleep 2
	slab1=$(meminfo Slab) vm1=$(meminfo VmallocUsed)
	slab_bytes >"$raw/slab.after"
	cat /proc/meminfo >"$raw/meminfo.after"
	rdma resource show >"$raw/rdma.after"
	mrs=$(rdma_count mr) cqs=$(rdma_count cq) qps=$(rdma_count qp)

	# a new export reaches every node
	t0=$(now_ms)
	kxferctl export add "adv$n" pool scale offset 0 len 64K access read
	slowwait 600 has "$dir/peersim.advert.adv$n"
	adv_ms=$(($(now_ms) - t0))

	slowwait $((SECS + 600)) has "$dir/peersim.filled"
	xfer check scale 0 $((n * SLICE)) seed:$SEED

	# idle: sessions up, keepalives only
	sleep 2
	read -r b0 t0 <<<"$(busy_ticks)"
	perf stat -a -x, -o "$raw/idle.stat" \
		-e workqueue:workqueue_execute_start,net:net_dev_xmit \
		sleep "$IDLE" 2>/dev/null || sleep "$IDLE"
	read -r b1 last <<<"$(busy_ticks)"
	idle=$(awk -v b=$((b1 - b0)) -v t=$((last - t0)) -v c="$(nproc)" \
		'BEGIN { printf "%.1f", t ? 100 * b * c / t : 0 }')
	works=$(awk -F, -v s="$IDLE" '$3 ~ /workqueue_execute_start/ { printf "%d", $1 / s }' "$raw/idle.stat" 2>/dev/null || true)
	xmits=$(awk -F, -v s="$IDLE" '$3 ~ /net_dev_xmit/ { printf "%d", $1 / s }' "$raw/idle.stat" 2>/dev/null || true)
	if ((PROFILE)); then
		perf record -q -a -g -e cpu-clock -o "$raw/idle.perf" sleep "$IDLE" 2>/dev/null
		perf report -q -i "$raw/idle.perf" --no-children --sort sym --stdio \
			-g none 2>/dev/null | head -n 40 >"$raw/idle.prof.txt" || true
	fi

	# a dead node among n
	mon=/tmp/scale-mon.$n
	kxferctl -j monitor >"$mon" 2>&1 &
	monpid=$!
	sleep 1
	t0=$(now_ms)
	: >"$dir/kill.$((n - 1))"
	slowwait 120 sh -c "grep '$(printf 'sim-%03d' $((n - 1)))' '$mon' | grep -q 'down\\|del'"
	dead_ms=$(($(now_ms) - t0))
	stop_process "$monpid"

	t0=$(now_ms)
	kxferctl export del "adv$n"
	del_ms=$(($(now_ms) - t0))
	: >"$dir/stop"
	barrier "done-$n"
	slowwait 300 sessions_none
	printf '{"peers": %s, "a_up": %s, "slab_kb": %s, "vmalloc_kb": %s, "mrs": %s, "cqs": %s, "qps": %s, "advert_ms": %s, "idle_cpu": %s, "idle_works": %s, "idle_xmits": %s, "dead_ms": %s, "del_ms": %s, "slab_top_kb": {%s}, "sim": %s}\n' \
		"$n" "$up" "$(((slab1 - slab0) / n))" "$(((vm1 - vm0) / n))" "$mrs" \
		"$cqs" "$qps" "$adv_ms" "$idle" "${works:-null}" "${xmits:-null}" "$dead_ms" "$del_ms" \
		"$(slab_growth "$raw/slab.before" "$raw/slab.after" "$n")" \
		"$(cat "$KXFER_SHARED/peersim-$n.json")" | jq -c . >>"$KXFER_OUT/scale.jsonl"
	tail -n 1 "$KXFER_OUT/scale.jsonl"
}

b_round() {
	local n=$1 dir=$KXFER_SHARED/s$1 rc=0

	mkdir -p "$dir"
	barrier "go-$n"
	peersim -a "$A" -n "$n" -q 2 -E e -S "$SLICE" -B 4K -D 2 -t "$SECS" \
		-k 64 -m e000 -F "$SEED" -W "adv$n" -C "$dir" -U 1800 -T 1800 \
		-j "$KXFER_SHARED/peersim-$n.json" >"$RAW/peersim-$n.txt" 2>&1 || rc=$?
	cat "$RAW/peersim-$n.txt"
	barrier "done-$n"
	return $rc
}

mkdir -p "$RAW"
kxfer_load node_name="$KXFER_GUEST"
uname -r >"$KXFER_OUT/kernel.txt"
if on_a; then
	kxferctl pool add scale size $((EXPORTS * 64))K mode 0666
	for ((i = 0; i < EXPORTS; i++)); do
		kxferctl export add "$(printf 'e%03d' "$i")" pool scale \
			offset $((i * 64))K len 64K access read,write
	done
	kxferctl listen "$A" allow 10.99.0.0/24
	: >"$KXFER_OUT/scale.jsonl"
fi
barrier setup
for n in $PEERS; do
	# set -e: a round that fails ends the run (the other side's
	# barrier sees it), the rounds before it are reported
	if on_a; then
		a_round "$n"
	else
		b_round "$n"
	fi
done
barrier end || true
