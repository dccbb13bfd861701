#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# race-guest.sh: the two-guest half of `make bench` (tools/bench/run boots
# guests a and b with selftests/rig/vm-run --guests 2 and runs this in
# both): one NIXL client over NIXL's KXFER backend and over its UCX
# backend, alternately, in the same guest pair, the same buffers and
# descriptors (tools/nixl-race: nixl-race, NIXL's C++ API, and
# nixl-race.py, its Python API).
#
# Guest a is node "prefill" (kxfer listens), b is "decode" (kxferctl
# peer add prefill, 1 QP, as UCX's one RC endpoint per worker); the
# plugin's default session name, the other's node name, finds that
# session on both sides.  UCX runs its verbs transports over the same
# soft-RoCE device: UCX_TLS=rc_verbs,ud_verbs,self,sm,
# UCX_NET_DEVICES=rxe0:1 (RDMA data on rc_verbs; ud_verbs for UCX's
# wire-up; sm wants /dev/shm, mounted here); UCX picks rxe0's RoCE v2
# GID of the guest's IPv4 address by itself.  Each client runs once
# (C++, then Python; they meet in /shared/race/CLIENT.1), case by case,
# each case's repetitions one after the other, each repetition both
# backends in turn (which goes first alternates), so that what is
# compared runs close together in time.  Raw output in $KXFER_OUT/raw/:
# race.jsonl (one line per phase this guest timed), 1/race.CLIENT.{log,
# time} (the log has UCX's choice of protocols, UCX_PROTO_INFO).  With
# BENCH_PROFILE=1 each client runs once per backend instead, each run
# under `perf record -a -e cpu-clock`, sampling the measured windows only
# (the clients tell it, NIXL_RACE_PERF_CTL; 1/race.CLIENT.BACKEND.perf;
# 1/race.CLIENT.BACKEND.prof.txt: this
# guest's samples by symbol, by command and by area: rxe, the network
# stack and virtio, kxfer, the rest of the kernel, UCX, NIXL and the
# plugin, Python, the client, idle), so that each backend's profile is
# its own: meant for one case at a time (--rows race_CASE).
# tools/bench/race-report makes the table of both guests' lines.
#
# Settings (build/bench/config, written by tools/bench/run):
# BENCH_REPS, BENCH_SECS, BENCH_RACE_CASES (the clients' case names,
# default all), BENCH_RACE_CLIENTS (cpp, py or both: the default),
# BENCH_RACE_POLL (busy, the default, or sleep:US), BENCH_RACE_CQ (irq,
# the default, or poll: kxfer's session with polled send CQs on both
# sides, listen and peer add ... cq poll), BENCH_RACE_BACKENDS (the
# clients' --backends, default KXFER,UCX; NAME:KEY=VALUE... a backend
# with parameters, e.g. KXFER,UCX,KXFER:poll_us=20), BENCH_RACE_KXFER
# (the kxfer module's parameters, e.g. qp_inflight_mb=1), BENCH_PROFILE.

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

REPS=${BENCH_REPS:-3}
SECS=${BENCH_SECS:-3}
CASES=${BENCH_RACE_CASES:-}
CLIENTS=${BENCH_RACE_CLIENTS:-cpp py}
POLL=${BENCH_RACE_POLL:-busy}
CQ=${BENCH_RACE_CQ:-irq}
BACKENDS=${BENCH_RACE_BACKENDS:-KXFER,UCX}
KXFER_PARAMS=${BENCH_RACE_KXFER:-}
PROFILE=${BENCH_PROFILE:-0}
RAW=$KXFER_OUT/raw
OUT=$KXFER_TOP/build/nixl-ucx
PREFILL=10.99.0.1
# a phase that makes no progress for this long fails the client (and
# its partner, which then waits as long)
PHASE_TIMEOUT=180

if on_a; then
	ROLE=prefill
else
	ROLE=decode
fi

# race_env: NIXL with its UCX plugin, UCX, and the folder with both
# plugins (make nixl-ucx), exported; the UCX settings for soft-RoCE
race_env() {
	local prefix

	prefix=$(cat "$OUT/nixl-prefix" 2>/dev/null) || return 1
	[ -f "${prefix%/prefix}/env" ] && [ -x "$OUT/nixl-race" ] &&
		[ -f "$OUT/libplugin_KXFER.so" ] && [ -e "$OUT/libplugin_UCX.so" ] || return 1
	# shellcheck source=/dev/null
	source "${prefix%/prefix}/env"
	export LD_LIBRARY_PATH=$NIXL_LIBDIR:$UCX_LIBDIR
	export PYTHONPATH=$NIXL_PYTHONPATH
	export NIXL_PLUGIN_DIR=$OUT
	export UCX_TLS=rc_verbs,ud_verbs,self,sm
	export UCX_NET_DEVICES=$KXFER_RDMA_DEV:1
	# the protocols and lanes UCX chose, once per process, into its log
	export UCX_PROTO_INFO=y
	UCX_INFO=$UCX_PREFIX/bin/ucx_info
}

# The session: a listens, b connects, both wait for it to be up.
setup() {
	mountpoint -q /dev/shm || mount -t tmpfs -o size=256m tmpfs /dev/shm
	local cq=()

	[ "$CQ" != poll ] || cq=(cq poll)
	# shellcheck disable=SC2086 # PARAM=VALUE words
	kxfer_load node_name="$ROLE" $KXFER_PARAMS
	# generous waits: on a loaded host one guest booted minutes late
	if on_a; then
		kxferctl listen "$PREFILL" allow 10.99.0.0/24 "${cq[@]}"
		barrier race-listening 600
		barrier race-up 600
		busywait 60000 peer_state decode up
	else
		barrier race-listening 600
		kxferctl peer add prefill "$PREFILL" qps 1 "${cq[@]}"
		busywait 60000 peer_state prefill up
		barrier race-up 600
	fi
	uname -r >"$KXFER_OUT/kernel.txt"
	nproc >"$KXFER_OUT/ncpus.txt"
	getconf CLK_TCK >"$KXFER_OUT/clk_tck.txt"
	kxferctl -j peer show >"$KXFER_OUT/peers.json"
	ibv_devinfo -v -d "$KXFER_RDMA_DEV" >"$KXFER_OUT/devinfo.txt"
	"$UCX_INFO" -v >"$KXFER_OUT/ucx-version.txt" 2>&1
	# the transports UCX finds here
	"$UCX_INFO" -d >"$KXFER_OUT/ucx-devices.txt" 2>&1
	env | grep '^UCX_' | sort >"$KXFER_OUT/ucx-env.txt"
}

# client_cmd CLIENT: the client's command line, to CMD
client_cmd() {
	case $1 in
	cpp) CMD=("$OUT/nixl-race") ;;
	py) CMD=(/usr/bin/python3 "$KXFER_TOP/tools/nixl-race/nixl-race.py") ;;
	*)
		echo "unknown client $1" >&2
		return 1 ;;
	esac
}

# run_once CLIENT REP NAME ARGS...: the client with ARGS, in folder
# /shared/race/NAME.REP, its output to REP/race.NAME.{log,time} (and
# .perf when profiling)
run_once() {
	local client=$1 rep=$2 name=$3 rc=0 TIMEFORMAT='%R %U %S'
	local dir=$KXFER_SHARED/race/$3.$2 base=$RAW/$2/race.$3

	shift 3
	client_cmd "$client"
	mkdir -p "$dir" "$RAW/$rep"
	barrier "race-$name-$rep" 600 || return 1
	if [ "$PROFILE" = 1 ]; then
		# the windows only: the clients enable and disable the events
		# (a FIFO in the guest's own /tmp: /out, 9p, has none)
		local ctl=/tmp/race.$name.ctl
		rm -f "$ctl"
		mkfifo "$ctl"
		{ time NIXL_RACE_PERF_CTL=$ctl perf record -q -e cpu-clock -F 997 -a \
			-D -1 --control "fifo:$ctl" -o "$base.perf" -- \
			"${CMD[@]}" --dir "$dir" "$@" >"$base.log" 2>&1; } 2>"$base.time" || rc=$?
		rm -f "$ctl"
	else
		{ time "${CMD[@]}" --dir "$dir" "$@" >"$base.log" 2>&1; } 2>"$base.time" || rc=$?
	fi
	if ((rc)); then
		echo "race: $name failed ($rc):" >&2
		tail -n 5 "$base.log" >&2
	fi
	barrier "race-$name-$rep-done" $((PHASE_TIMEOUT * 4)) || true
	return "$rc"
}

# run_client CLIENT: the client's schedule (when profiling, once per
# backend)
run_client() {
	local client=$1 rep=1 args b rc=0

	args=(--role "$ROLE" --out "$RAW/race.jsonl" --reps "$REPS"
		--secs "$SECS" --poll "$POLL" --tag "$client" --timeout "$PHASE_TIMEOUT"
		--backends "$BACKENDS")
	[ -z "$CASES" ] || args+=(--cases "${CASES// /,}")
	if [ "$PROFILE" != 1 ]; then
		run_once "$client" "$rep" "$client" "${args[@]}"
		return
	fi
	for b in ${BACKENDS//,/ }; do
		run_once "$client" "$rep" "$client.${b//[^A-Za-z0-9_]/_}" "${args[@]}" \
			--backends "$b" || rc=1
	done
	return "$rc"
}

# areas: perf report's "PCT DSO SYM" lines (--sort dso,sym) summed by
# where the time went
areas() {
	awk '$1 ~ /%$/ {
		pct = $1; sub(/%/, "", pct); dso = $2; sym = $NF
		if (sym ~ /^(native_safe_halt|default_idle|default_idle_call|cpuidle_idle_call|do_idle|acpi_idle)/)
			a = "idle"
		else if (dso ~ /rdma_rxe/ || sym ~ /^(crc32|rxe_)/)
			a = "rxe (its ICRC too)"
		else if (dso ~ /virtio|\[net\]/ || sym ~ /^(vp_|virtnet|virtqueue|vring|__?dev_|net_|__?netif|__?napi|__?skb|kfree_skb|consume_skb|__?ip_|ip6|__?udp|inet|sch_|__?qdisc|eth_|nf_|neigh|fib|__?sock_|__?alloc_skb|__build_skb|validate_xmit|rt_|dst_)/)
			a = "network stack, virtio"
		else if (dso ~ /\[kxfer\]/)
			a = "kxfer module"
		else if (dso ~ /\[(ib_core|ib_uverbs|rdma_cm|ib_cm|iw_cm)\]/)
			a = "ib_core, uverbs, cm"
		else if (dso ~ /^\[/)
			a = "rest of the kernel"
		else if (dso ~ /^lib(uc[pst]|uct_ib)/)
			a = "UCX"
		else if (dso ~ /^lib(nixl|plugin_|ibverbs|rxe)/)
			a = "NIXL, plugins, verbs"
		else if (dso ~ /python/)
			a = "Python"
		else if (dso ~ /^nixl-race/)
			a = "the client"
		else
			a = "libc, libstdc++, other"
		sum[a] += pct
	}
	END { for (a in sum) printf "%8.2f%%  %s\n", sum[a], a }' | sort -rn
}

# profile_reports: REP/NAME.prof.txt for every REP/NAME.perf: samples
# by symbol, by area and by command
profile_reports() {
	local data

	for data in "$RAW"/*/*.perf; do
		[ -e "$data" ] || continue
		{
			echo "# $(basename "${data%.perf}") ($ROLE): samples by symbol"
			perf report -i "$data" --stdio --no-children --sort sym \
				--percent-limit 0.5 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 40
			echo "# by area (every sample)"
			perf report -i "$data" --stdio --no-children --sort dso,sym \
				2>/dev/null | grep -v -e '^#' -e '^$' | areas
			echo "# by command"
			perf report -i "$data" --stdio --no-children --sort comm \
				--percent-limit 0.5 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 20
		} >"${data%.perf}.prof.txt"
	done
}

if ! race_env; then
	echo "race: no NIXL with UCX or no build/nixl-ucx (make nixl-ucx, which make bench runs)" >&2
	exit 1
fi
setup
echo "race: kernel $(uname -r), $ROLE, $REPS repetitions of $SECS s, clients $CLIENTS," \
	"poll $POLL, kxfer's CQs $CQ, backends $BACKENDS"
status=0
for client in $CLIENTS; do
	echo "race: $client"
	run_client "$client" || status=1
done
kxferctl -j stats show >"$KXFER_OUT/stats.json" 2>/dev/null || true
[ "$PROFILE" != 1 ] || profile_reports
echo "race done"
exit "$status"
