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
# GID of the guest's IPv4 address by itself.  Each repetition runs both
# clients (which goes first alternates), each its whole schedule of
# cases, each case on both backends (which goes first alternates with
# the repetition); the clients meet in /shared/race/CLIENT.REP.  Raw
# output in $KXFER_OUT/raw/: race.jsonl (one line per phase this guest
# timed), REP/race.CLIENT.{log,time}; and, with BENCH_PROFILE=1, each
# client run under `perf record -a -e cpu-clock` (REP/race.CLIENT.perf,
# REP/race.CLIENT.prof.txt: symbols and commands, this guest's).
# tools/bench/race-report makes the table of both guests' lines.
#
# Settings (build/bench/config, written by tools/bench/run):
# BENCH_REPS, BENCH_SECS, BENCH_RACE_CASES (the clients' case names,
# default all), BENCH_RACE_CLIENTS (cpp, py or both: the default),
# BENCH_RACE_POLL (busy, the default, or sleep:US), BENCH_PROFILE.

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
	kxfer_load node_name="$ROLE"
	if on_a; then
		kxferctl listen "$PREFILL" allow 10.99.0.0/24
		barrier race-listening
		barrier race-up 120
		busywait 20000 peer_state decode up
	else
		barrier race-listening
		kxferctl peer add prefill "$PREFILL" qps 1
		busywait 20000 peer_state prefill up
		barrier race-up 120
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

# run_client CLIENT REP: one client's schedule in repetition REP
run_client() {
	local client=$1 rep=$2 dir=$KXFER_SHARED/race/$1.$2 base=$RAW/$2/race.$1 rc=0
	local TIMEFORMAT='%R %U %S' args

	client_cmd "$client"
	args=(--role "$ROLE" --dir "$dir" --out "$RAW/race.jsonl" --reps 1
		--rep-base "$rep" --secs "$SECS" --poll "$POLL" --tag "$client"
		--timeout "$PHASE_TIMEOUT")
	[ -z "$CASES" ] || args+=(--cases "${CASES// /,}")
	mkdir -p "$dir" "$RAW/$rep"
	barrier "race-$client-$rep" 600 || return 1
	if [ "$PROFILE" = 1 ]; then
		{ time perf record -q -e cpu-clock -F 997 -a -o "$base.perf" -- \
			"${CMD[@]}" "${args[@]}" >"$base.log" 2>&1; } 2>"$base.time" || rc=$?
	else
		{ time "${CMD[@]}" "${args[@]}" >"$base.log" 2>&1; } 2>"$base.time" || rc=$?
	fi
	if ((rc)); then
		echo "race: $client, repetition $rep, failed ($rc):" >&2
		tail -n 5 "$base.log" >&2
	fi
	barrier "race-$client-$rep-done" $((PHASE_TIMEOUT * 4)) || true
	return "$rc"
}

# profile_reports: REP/NAME.prof.txt for every REP/NAME.perf (as
# bench-guest.sh's)
profile_reports() {
	local data

	for data in "$RAW"/*/*.perf; do
		[ -e "$data" ] || continue
		{
			echo "# $(basename "${data%.perf}") ($ROLE): samples by symbol"
			perf report -i "$data" --stdio --no-children --sort sym \
				--percent-limit 0.5 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 40
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
echo "race: kernel $(uname -r), $ROLE, $REPS repetitions of $SECS s, clients $CLIENTS, poll $POLL"
status=0
read -r -a clients <<<"$CLIENTS"
for rep in $(seq 1 "$REPS"); do
	order=("${clients[@]}")
	if ((rep % 2 == 0)); then
		order=()
		for ((i = ${#clients[@]} - 1; i >= 0; i--)); do
			order+=("${clients[i]}")
		done
	fi
	for client in "${order[@]}"; do
		echo "race: repetition $rep, $client"
		run_client "$client" "$rep" || status=1
	done
done
kxferctl -j stats show >"$KXFER_OUT/stats.json" 2>/dev/null || true
[ "$PROFILE" != 1 ] || profile_reports
echo "race done"
exit "$status"
