#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# bench-guest.sh: the guest half of `make bench` (tools/bench/run boots one
# guest with selftests/rig/vm-run and runs this in it).
#
# One guest, rxe0 looping back to itself: kxfer listens on 10.99.0.1 and
# connects to itself (sessions q1 and q4, with 1 and 4 QPs), and perftest's
# server and client both run on rxe0.  Each repetition runs every group
# (ROWS below): its kxfer-bench invocation and the perftest runs it is
# compared with (each perftest run once per repetition, shared by the
# groups that need it), one side after the other, which side goes first
# alternating from one repetition to the next.  Raw outputs go to
# $KXFER_OUT/raw/REP/: GROUP.kxfer.{json,time} (kxfer-bench -j; it
# samples /proc/stat itself around each measured part), and per perftest
# run pt_NAME.{txt,win,time,cmd}: the client's report, its measured
# window (win: "start|end EPOCH_SECONDS BUSY_TICKS IDLE_TICKS", taken
# when the client prints its result header, before its warm-up and loop,
# and its result line, right after: whole-guest /proc/stat, so the
# server, softirqs and kworkers count), both processes' times and the
# command line.  tools/bench/report turns them into the table: perftest's
# rates and times are taken from that window (wall time: perftest's own
# figures come from the TSC, which this TCG guest marks unstable, and are
# shown only as a cross-check).  Then seed 003 on kxfer alone (group kv:
# kxfer-bench kv; plan), and the demo's KV push on session q1 straight on
# kxfer (kxfer-bench push) and through NIXL and its KXFER backend
# (kv-nixl-bench.py: the push of examples/kv-nixl.py), one after the
# other: REP/kv_push.{kxfer,nixl}.json; without a NIXL build (make bench
# makes one) the NIXL half is left out.  Last, the time a session takes to
# come up, without keys and with the authentication handshake (group
# connect, no perftest counterpart): REP/connect.txt.  Group rails
# (issue 41, no perftest counterpart; the guest needs vm-run --nics 2,
# which tools/bench/run gives it when the group runs): one peer over one
# rail (r1: rxe0) and one over two (r2: rxe0 and rxe1, the guest
# listening on both of its addresses), 1 QP per rail, each running the
# WRITE 1 MiB bandwidth of write_bw_1M_q1, seed 003's paged push of
# kv_paged_q1 and the demo's push of kv push, one peer after the other
# (which first alternates with the repetition):
# REP/rails_WORK_rN.kxfer.{json,time}, and the peer's `peer show` right
# before and after, REP/rails_WORK_rN.peer{0,1}.json, whose rails' jobs
# and bytes tell what each rail carried (a peer of one address lists no
# rails: its `stats show`, REP/rails_WORK_rN.stats{0,1}.json, does).
#
# Settings (tools/bench/run writes them to build/bench/config, which the
# guest reads through the host's file system):
# BENCH_REPS (default 3), BENCH_SECS (seconds per point, default 3),
# BENCH_ROWS (groups to run, default all; see ROWS below), BENCH_PROFILE
# (1: tools/bench/run --profile: every kxfer-bench and perftest client run
# under `perf record -a -e cpu-clock`, the whole guest sampled at about
# 1 kHz, to REP/NAME.perf; at the end, REP/NAME.prof.txt: the symbols and
# the commands that took the samples, from `perf report`).

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
# perftest runs a number of iterations (-n): its duration mode (-D)
# keeps a warm-up margin that, for large messages and a few seconds under
# TCG, leaves nothing measured.  Aim at $SECS seconds at EST_BPS (or
# EST_LAT_US per message for the 8-byte, one-in-flight runs); both tools
# get the same number of messages in flight (perftest -t per QP,
# kxfer-bench -q).  Iterations are a multiple of 64, as post lists (-l)
# want.
EST_BPS=50000000
EST_LAT_US=80
LAT_ITERS=$(((SECS * 1000000 / EST_LAT_US + 63) / 64 * 64))

# iters SIZE QPS: perftest iterations per QP for about $SECS seconds
iters() {
	local n=$((SECS * EST_BPS / $1 / $2))

	n=$(((n + 63) / 64 * 64))
	echo $((n < 128 ? 128 : n))
}

NODE=self		# node_name: sessions to itself connect from and to it

peer_up() {
	kxferctl -j peer show "$1" 2>/dev/null | grep -q '"state":"up"'
}

setup() {
	kxfer_load node_name=$NODE
	kxferctl pool add bench size 32M mode 0666
	kxferctl pool add benchdst size 32M mode 0666
	kxferctl export add bench pool benchdst access read,write
	kxferctl listen "$ADDR" allow "$ADDR/32"
	kxferctl peer add q1 "$ADDR" qps 1
	kxferctl peer add q4 "$ADDR" qps 4
	# the same with polled send CQs (cq poll): the *_cqpoll groups
	kxferctl peer add p1 "$ADDR" qps 1 cq poll
	kxferctl peer add p4 "$ADDR" qps 4 cq poll
	busywait 20000 peer_up q1
	busywait 20000 peer_up q4
	busywait 20000 peer_up p1
	busywait 20000 peer_up p4
	busywait 20000 sh -c "kxferctl -j peer show q4 | grep -q '\"name\":\"bench\"'"
	busywait 20000 sh -c "kxferctl -j peer show q1 | grep -q '\"name\":\"bench\"'"
	busywait 20000 sh -c "kxferctl -j peer show p1 | grep -q '\"name\":\"bench\"'"
	busywait 20000 sh -c "kxferctl -j peer show p4 | grep -q '\"name\":\"bench\"'"
	kxferctl -j pool show bench >"$KXFER_OUT/pool.json"
	kxferctl -j peer show >"$KXFER_OUT/peers.json"
	ibv_devinfo -v -d "$DEV" >"$KXFER_OUT/devinfo.txt"
	uname -r >"$KXFER_OUT/kernel.txt"
	getconf CLK_TCK >"$KXFER_OUT/clk_tck.txt"
	nproc >"$KXFER_OUT/ncpus.txt"
}

PROFILE=${BENCH_PROFILE:-0}
if [ "$PROFILE" = 1 ] && ! command -v perf >/dev/null; then
	echo "--profile needs perf on the host (apt-get install linux-perf)" >&2
	exit 1
fi

# profiled OUT CMD...: CMD, under `perf record` (to OUT.perf) when
# profiling; perf record -q prints nothing and exits with CMD's status
profiled() {
	local out=$1

	shift
	if [ "$PROFILE" = 1 ]; then
		perf record -q -e cpu-clock -F 997 -a -o "$out.perf" -- "$@"
	else
		"$@"
	fi
}

# profile_reports: REP/NAME.prof.txt for every REP/NAME.perf: where the
# samples went by symbol (kernel, modules and user space; 0.5 % and up),
# then by command (ksoftirqd, kworkers, the tools)
profile_reports() {
	local data

	for data in "$RAW"/*/*.perf; do
		[ -e "$data" ] || continue
		{
			echo "# $(basename "${data%.perf}"): samples by symbol"
			perf report -i "$data" --stdio --no-children --sort sym \
				--percent-limit 0.5 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 40
			echo "# by command"
			perf report -i "$data" --stdio --no-children --sort comm \
				--percent-limit 0.5 2>/dev/null | grep -v -e '^#' -e '^$' | head -n 20
		} >"${data%.perf}.prof.txt"
	done
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

# stat_mark: the whole guest's busy and idle ticks so far, all CPUs
# (/proc/stat: user nice system idle iowait irq softirq steal), to
# $MARK_BUSY and $MARK_IDLE; no fork, so that the mark is on time
stat_mark() {
	local _cpu user nice sys idle iowait irq softirq steal _rest

	read -r _cpu user nice sys idle iowait irq softirq steal _rest </proc/stat
	MARK_BUSY=$((user + nice + sys + irq + softirq + steal))
	MARK_IDLE=$((idle + iowait))
}

# pt_stamp OUT: perftest's client output (stdin) to OUT.txt; the measured
# window to OUT.win: "start" when the result header is printed (the
# client prints it right before its warm-up and measured loop) and "end"
# when the result line is, each with the wall clock and stat_mark's ticks
pt_stamp() {
	local out=$1 line state=0

	: >"$out.win"
	while IFS= read -r line; do
		if ((state == 0)) && [[ $line == *'#bytes'* ]]; then
			stat_mark
			echo "start $EPOCHREALTIME $MARK_BUSY $MARK_IDLE" >>"$out.win"
			state=1
		elif ((state == 1)) && [[ $line =~ ^\ *[0-9]+\ +[0-9]+ ]]; then
			stat_mark
			echo "end $EPOCHREALTIME $MARK_BUSY $MARK_IDLE" >>"$out.win"
			state=2
		fi
		printf '%s\n' "$line"
	done >"$out.txt"
}

# pt_client OUT TOOL ARGS...: the client, line buffered into pt_stamp
pt_client() {
	local out=$1

	shift
	profiled "$out" stdbuf -oL timeout 120 "$@" 2>&1 | pt_stamp "$out"
}

# perftest OUT TOOL ARGS... : server in the background, client here; the
# client's report to OUT.txt, its window to OUT.win, both sides' CPU
# times to OUT.time (client line then server line)
perftest() {
	local out=$1 tool=$2 spid rc=0

	shift 2
	echo "$tool $*" >"$out.cmd"
	timed "$out.stime" timeout 120 "$tool" -d "$DEV" -F "$@" >"$out.server" &
	spid=$!
	# The server is slow to start under TCG: connect once it listens.
	busywait 30000 perftest_listening || true
	timed "$out.ctime" pt_client "$out" "$tool" -d "$DEV" -F "$@" "$ADDR" || rc=$?
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
	timed "$out.time" profiled "$out" kxfer-bench -j -t "$SECS" "$@" >"$out.json"
}

# pt_args NAME: perftest run NAME's tool and arguments, to PT
#   lat_w, lat_r  post to completion: 8 B, one WR in flight, every one
#                 signaled; 1/rate is the time a WR takes from ibv_post_send
#                 to its completion, what kxfer-bench lat measures for a job
#   lat_r_pp      ib_read_lat, the same for READ as perftest's latency test
#   lat_w_pp      ib_write_lat: a ping-pong (half a round trip), not the
#                 same thing; shown aside
#   rate_4K_qN, bw_64K_qN, bw_1M_qN: the default (-t in flight, a
#                 completion every 100 WRs or -t), and with :Q (CQ
#                 moderation -Q) or :l (post lists of -l WRs, one
#                 ibv_post_send each, a completion per list)
pt_args() {
	local n4q1 n4q4 n64q1 n64q4

	n4q1=$(iters 4096 1) n4q4=$(iters 4096 4)
	n64q1=$(iters 65536 1) n64q4=$(iters 65536 4)
	case $1 in
	lat_w) PT=(ib_write_bw -s 8 -t 1 -Q 1 -n "$LAT_ITERS") ;;
	lat_r) PT=(ib_read_bw -s 8 -t 1 -Q 1 -n "$LAT_ITERS") ;;
	lat_r_pp) PT=(ib_read_lat -s 8 -n "$LAT_ITERS") ;;
	lat_w_pp) PT=(ib_write_lat -s 8 -n "$LAT_ITERS") ;;
	rate_4K_q1) PT=(ib_write_bw -s 4096 -q 1 -t 128 -n "$n4q1") ;;
	rate_4K_q1:Q) PT=(ib_write_bw -s 4096 -q 1 -t 128 -Q 64 -n "$n4q1") ;;
	rate_4K_q1:l) PT=(ib_write_bw -s 4096 -q 1 -t 128 -l 32 -n "$n4q1") ;;
	rate_4K_q4) PT=(ib_write_bw -s 4096 -q 4 -t 32 -n "$n4q4") ;;
	rate_4K_q4:Q) PT=(ib_write_bw -s 4096 -q 4 -t 32 -Q 16 -n "$n4q4") ;;
	rate_4K_q4:l) PT=(ib_write_bw -s 4096 -q 4 -t 32 -l 16 -n "$n4q4") ;;
	bw_64K_q1) PT=(ib_write_bw -s 65536 -q 1 -t 128 -n "$n64q1") ;;
	bw_64K_q1:Q) PT=(ib_write_bw -s 65536 -q 1 -t 128 -Q 64 -n "$n64q1") ;;
	bw_64K_q1:l) PT=(ib_write_bw -s 65536 -q 1 -t 128 -l 16 -n "$n64q1") ;;
	bw_64K_q4) PT=(ib_write_bw -s 65536 -q 4 -t 32 -n "$n64q4") ;;
	bw_64K_q4:Q) PT=(ib_write_bw -s 65536 -q 4 -t 32 -Q 16 -n "$n64q4") ;;
	bw_64K_q4:l) PT=(ib_write_bw -s 65536 -q 4 -t 32 -l 16 -n "$n64q4") ;;
	write_bw_1M_q1) PT=(ib_write_bw -s 1048576 -q 1 -t 16 -n "$(iters 1048576 1)") ;;
	read_bw_1M_q1) PT=(ib_read_bw -s 1048576 -q 1 -t 16 -n "$(iters 1048576 1)") ;;
	write_bw_1M_q4) PT=(ib_write_bw -s 1048576 -q 4 -t 4 -n "$(iters 1048576 4)") ;;
	read_bw_1M_q4) PT=(ib_read_bw -s 1048576 -q 4 -t 4 -n "$(iters 1048576 4)") ;;
	*)
		echo "unknown perftest run $1" >&2
		return 1 ;;
	esac
}

# group_args GROUP: its kxfer-bench arguments to KX, the perftest runs it
# is compared with to PTS; GROUP_cqpoll is GROUP on the polled sessions
# (p1, p4 for q1, q4), against the same perftest runs
group_args() {
	if [[ $1 == *_cqpoll ]]; then
		local i

		group_args "${1%_cqpoll}"
		# bw and rate reap busy-polling there (-m poll), as perftest
		# polls its CQ; lat measures both kinds of reap, as on q1
		for i in "${!KX[@]}"; do
			[[ ${KX[i]} == q[14] ]] && KX[i]=p${KX[i]#q}
		done
		[[ " ${KX[*]} " == *" -m "* ]] ||
			KX=("${KX[@]:0:${#KX[@]}-1}" -m poll "${KX[-1]}")
		return 0
	fi
	case $1 in
	lat_8)
		KX=(-p q1 -o "write,read" -s 8 -n "$LAT_ITERS" -m "block,poll" lat)
		PTS=(lat_w lat_r lat_r_pp lat_w_pp) ;;
	write_rate_4K_q1)
		KX=(-p q1 -o write -s 4K -q 128 -b 32 rate)
		PTS=(rate_4K_q1 rate_4K_q1:Q rate_4K_q1:l) ;;
	write_rate_4K_q4)
		KX=(-p q4 -o write -s 4K -q 128 -b 32 rate)
		PTS=(rate_4K_q4 rate_4K_q4:Q rate_4K_q4:l) ;;
	write_bw_64K_q1)
		KX=(-p q1 -o write -s 64K -q 128 -b 16 bw)
		PTS=(bw_64K_q1 bw_64K_q1:Q bw_64K_q1:l) ;;
	write_bw_64K_q4)
		KX=(-p q4 -o write -s 64K -q 128 -b 16 bw)
		PTS=(bw_64K_q4 bw_64K_q4:Q bw_64K_q4:l) ;;
	write_bw_1M_q1 | write_bw_1M_q4 | read_bw_1M_q1 | read_bw_1M_q4)
		local op=${1%%_*} qps=${1##*_q}

		KX=(-p "q$qps" -o "$op" -s 1M -q 16 -b 4 bw)
		PTS=("$1") ;;
	# seed 003's paged push: 16-token pages (4 KiB of K, 4 KiB of V per
	# page and layer) scattered over decode's pool, K and V apart, one
	# job per layer, 16 layers in flight; against perftest's 4 KiB WRITEs
	# on as many QPs (the runs of the 4 KiB rate rows)
	kv_paged_q1 | kv_paged_q4)
		KX=(-p "q${1##*_q}" -k p16-scattered-kv-apart kv)
		PTS=("rate_4K_q${1##*_q}" "rate_4K_q${1##*_q}:Q" "rate_4K_q${1##*_q}:l") ;;
	*)
		echo "unknown group $1" >&2
		return 1 ;;
	esac
}

# run_group GROUP ORDER DIR: kxfer-bench and the perftest runs of GROUP
# (each at most once per repetition: PT_DONE), kxfer first when ORDER is 0
run_group() {
	local group=$1 order=$2 dir=$3 name file

	group_args "$group"
	if [ "$order" = 0 ]; then
		kxbench "$dir/$group.kxfer" "${KX[@]}"
	fi
	for name in "${PTS[@]}"; do
		[ -z "${PT_DONE[$name]:-}" ] || continue
		PT_DONE[$name]=1
		pt_args "$name"
		file=$dir/pt_${name/:/_}
		perftest "$file" "${PT[@]}" || echo "perftest $name failed" >&2
	done
	if [ "$order" != 0 ]; then
		kxbench "$dir/$group.kxfer" "${KX[@]}"
	fi
}

# The connect group: CONNECTS pairs of connects of a 1-QP session to this
# node's own listener, one without keys and one with a key, in turn (which
# goes first alternates), so that a slow spell of the host hits both
# kinds alike.  For the keyed one a key kc is bound to this node's name
# (NODE): the listener authenticates the connecting node with the key
# bound to its name, and the connecting peer names it (peer add ... key
# kc), so both sides prove kc (peer show: auth ok).  It is deleted again
# before the next connect without keys, so that no key exists then (with
# a key for the node but none named by the peer, the listener would
# still offer the handshake and the connector decline it: a round trip
# that is neither case).  Each connect: peer add, wait until up, the
# connecting side's up_ns (peer show: from connect to up, export tables
# exchanged, after the handshake if any), peer del, then wait until the
# accepting side's session is gone too.  To REP/connect.txt, one line per
# connect: "nokey|key UP_NS AUTH RECONNECTS".  Every command is a process
# start, slow in a TCG guest (0.2 to 1.5 s each for kxferctl): no jq.
CONNECTS=11
CONNECT_KEY=/tmp/bench-kc.key

# peer_count: the sessions there are, either side's
peer_count() {
	local j n

	j=$(kxferctl -j peer show)
	n=${j//\"role\":/@}
	n=${n//[^@]/}
	echo ${#n}
}

# peers_at_most N: N sessions or fewer
peers_at_most() {
	(($(peer_count) <= $1))
}

# connect_once KIND NAME ARGS...: one connect (peer add NAME ... ARGS),
# its line of connect.txt; CONNECT_BASE: the sessions there before
connect_once() {
	local kind=$1 name=$2 j up auth rec

	shift 2
	kxferctl peer add "$name" "$ADDR" qps 1 "$@"
	busywait 20000 peer_up "$name"
	j=$(kxferctl -j peer show "$name")
	kxferctl peer del "$name"
	busywait 20000 peers_at_most "$CONNECT_BASE" >&2 ||
		echo "connect: the accepted side of $name is still there" >&2
	[[ $j =~ \"up_ns\":([0-9]+) ]] && up=${BASH_REMATCH[1]}
	[[ $j =~ \"auth\":\"([a-z]+)\" ]] && auth=${BASH_REMATCH[1]}
	[[ $j =~ \"reconnects\":([0-9]+) ]] && rec=${BASH_REMATCH[1]}
	echo "$kind ${up:-?} ${auth:-?} ${rec:-?}"
}

connect_key_del() {
	kxferctl key del kc 2>/dev/null
}

# connect_keyed: one connect with the key bound to this node, both sides
# proving it
connect_keyed() {
	kxferctl key add kc secret "$CONNECT_KEY" peer "$NODE"
	connect_once key ckey key kc
	# the peer may hold the key until its session is released
	busywait 20000 connect_key_del >&2
}

# connect_group REP DIR: the connect group of repetition REP
connect_group() {
	local rep=$1 out=$2/connect.txt i t0=$SECONDS

	: >"$out"
	head -c 32 /dev/urandom >"$CONNECT_KEY"
	CONNECT_BASE=$(peer_count)
	for i in $(seq "$CONNECTS"); do
		if (((i + rep) % 2)); then
			connect_once nokey cplain >>"$out"
			connect_keyed >>"$out"
		else
			connect_keyed >>"$out"
			connect_once nokey cplain >>"$out"
		fi
	done
	# a connect that measured something else (report counts it too)
	awk '($1 == "nokey" && $3 != "none") || ($1 == "key" && $3 != "ok") ||
		$4 != 0 { print "connect: unexpected: " $0 }' "$out" >&2
	echo "connect: $CONNECTS pairs in $((SECONDS - t0)) s"
}

# The rails group: r1 over rxe0 alone, r2 over rxe0 and rxe1, 1 QP per
# rail on both, the same kxfer-bench arguments on both
ADDR2=${KXFER_SELF_ADDR2:-}
RAIL_WORKS="bw_1M bw_4M bw_4M_q1 bw_1M_q1s bw_2M_q1s kv_paged push"

# rails_up: both of r2's rails up, the export learned on both peers
rails_up() {
	kxferctl -j peer show r2 2>/dev/null | jq -e '.[0] |
		(.rails | length) == 2 and (.rails | all(.state == "up")) and
		any(.remote_exports[]?; .name == "bench")' >/dev/null &&
		kxferctl -j peer show r1 2>/dev/null | jq -e '.[0] |
			.state == "up" and
			any(.remote_exports[]?; .name == "bench")' >/dev/null
}

STRIPE_PARAM=/sys/module/kxfer/parameters/rail_stripe
RAIL_STRIPE_1M="bw_1M_q1s bw_2M_q1s"

rails_setup() {
	kxferctl listen "$ADDR2" allow "$ADDR2/32"
	kxferctl peer add r1 "$ADDR" qps 1
	kxferctl peer add r2 "$ADDR,$ADDR2" qps 1
	busywait 30000 rails_up || { kxferctl -j peer show; return 1; }
	kxferctl -j peer show r2 >"$KXFER_OUT/rails.json"
}

# rails_args WORK PEER: kxfer-bench's arguments for WORK on PEER, to KX
rails_args() {
	case $1 in
	bw_1M) KX=(-p "$2" -o write -s 1M -q 16 -b 4 bw) ;;
	# striped over r2's rails (rail_stripe, 4 MiB): four, then one, at once
	bw_4M) KX=(-p "$2" -o write -s 4M -q 4 -b 1 bw) ;;
	bw_4M_q1) KX=(-p "$2" -o write -s 4M -q 1 -b 1 bw) ;;
	# where the line lies: 1 and 2 MiB one at a time, striped on r2 with
	# rail_stripe at 1 MiB for these two works only (rails_group)
	bw_1M_q1s) KX=(-p "$2" -o write -s 1M -q 1 -b 1 bw) ;;
	bw_2M_q1s) KX=(-p "$2" -o write -s 2M -q 1 -b 1 bw) ;;
	kv_paged) KX=(-p "$2" -k p16-scattered-kv-apart kv) ;;
	push) KX=(-p "$2" -t 2 push) ;;
	esac
}

# rails_group REP DIR: every WORK on r1 and r2, which first alternating
rails_group() {
	local rep=$1 dir=$2 work peer out stripe

	stripe=$(cat "$STRIPE_PARAM")
	for work in $RAIL_WORKS; do
		if [[ " $RAIL_STRIPE_1M " == *" $work "* ]]; then
			echo $((1 << 20)) >"$STRIPE_PARAM"
		fi
		for peer in $( ((rep % 2)) && echo r1 r2 || echo r2 r1); do
			out=$dir/rails_${work}_$peer
			rails_args "$work" "$peer"
			kxferctl -j peer show "$peer" >"$out.peer0.json"
			kxferctl -j stats show "$peer" >"$out.stats0.json"
			kxbench "$out.kxfer" "${KX[@]}" ||
				echo "rails: $work on $peer failed" >&2
			kxferctl -j peer show "$peer" >"$out.peer1.json"
			kxferctl -j stats show "$peer" >"$out.stats1.json"
		done
		echo "$stripe" >"$STRIPE_PARAM"
	done
}

ROWS="lat_8 lat_8_cqpoll write_rate_4K_q1 write_rate_4K_q1_cqpoll
write_rate_4K_q4 write_rate_4K_q4_cqpoll kv_paged_q1 kv_paged_q4
write_bw_64K_q1 write_bw_64K_q4 write_bw_1M_q1 read_bw_1M_q1 write_bw_1M_q4
read_bw_1M_q4 kv push plan connect rails"

setup
rails=0
for row in ${BENCH_ROWS:-$ROWS}; do
	[ "$row" = rails ] || continue
	if [ "${KXFER_NICS:-1}" != 2 ] || [ -z "$ADDR2" ]; then
		echo "rails: needs a second NIC (vm-run --nics 2): left out" >&2
	elif rails_setup; then
		rails=1
	else
		echo "rails: r1 and r2 did not come up: left out" >&2
	fi
done
nixl=1
nixl_env || { nixl=0; echo "no NIXL build (make bench makes one): kv_push without NIXL"; }
echo "kernel $(uname -r), $(nproc) CPUs, $REPS repetitions of $SECS s"
declare -A PT_DONE
for rep in $(seq 1 "$REPS"); do
	dir=$RAW/$rep
	mkdir -p "$dir"
	PT_DONE=()
	for row in ${BENCH_ROWS:-$ROWS}; do
		echo "rep $rep: $row"
		case $row in
		kv)
			# seed 003, every layout: kxfer only
			kxbench "$dir/kv_q1.kxfer" -p q1 -t 1 kv
			kxbench "$dir/kv_q4.kxfer" -p q4 -t 1 kv ;;
		plan)
			kxbench "$dir/plan.kxfer" -t 1 plan ;;
		connect)
			connect_group "$rep" "$dir" ;;
		rails)
			((!rails)) || rails_group "$rep" "$dir" ;;
		push)
			# the demo's push, straight and through NIXL, on the same session
			if ((rep % 2 || !nixl)); then
				kxbench "$dir/kv_push.kxfer" -p q1 -t 2 push
				((!nixl)) || nixlbench "$dir/kv_push.nixl" --session q1 --secs 2
			else
				nixlbench "$dir/kv_push.nixl" --session q1 --secs 2
				kxbench "$dir/kv_push.kxfer" -p q1 -t 2 push
			fi ;;
		*)
			run_group "$row" $(((rep + 1) % 2)) "$dir" ;;
		esac
	done
done
[ "$PROFILE" != 1 ] || profile_reports
echo "bench done"
