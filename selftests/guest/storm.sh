# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# storm.sh: fault storms and load under verified WRITE streams (issue 7),
# sourced by suite-2.sh after its helpers (peer_state, has_rexport, on_a,
# now_ms) are defined.  b runs selftests/storm over its sessions pa (1
# QP) and pa4 (4 QPs) to a's export kvr (6 MiB of a's pool kv); a breaks
# the link, b deletes and re-adds its peer and its RDMA device and kills
# stream processes with thousands of jobs in flight.  Every job must end
# exactly once, every byte whose last writer succeeded must be on a, and
# everything must come back to its baseline.
#
#   KXFER_STORM_SECS   fault window (default 70 s)
#   KXFER_LOAD_SECS    load duration (default 30 s)
#   KXFER_STORM_SEED   bash RANDOM seed of the fault schedule and the
#                      streams' seeds (default: from the clock; printed)
#   KXFER_SLAB_TOLERANCE_KB  SUnreclaim growth allowed (default 16384)
# (vm-run passes them from the host: KXFER_STORM_SECS=600 make check ...
# is a soak run.)
#
# Counts go to the test log and to $KXFER_OUT/storm.txt.

STORM_SECS=${KXFER_STORM_SECS:-70}
LOAD_SECS=${KXFER_LOAD_SECS:-30}
# kvr is 6 MiB: pa's stream, pa4's stream and two halves for the streams
# that are killed, one after the other; each needs 2 * slice + 64 KiB of
# b's pool "local" (source pattern, then readback).
STORM_SLICE=1536K
SLAB_TOLERANCE_KB=${KXFER_SLAB_TOLERANCE_KB:-16384}

storm_say() {
	echo "$*" | tee -a "$KXFER_OUT/storm.txt"
}

# kxfer's rdma objects, one "type count" pair each
kxfer_rdma_res() {
	local r n

	for r in qp cq mr pd cm_id; do
		n=$(rdma resource show "$r" 2>/dev/null | grep -c kxfer || true)
		echo -n "$r $n "
	done
	echo
}

# kxfer's own objects: sessions, pools, exports, attachments
kxfer_objs() {
	echo "peers $(kxferctl -j peer show | jq length)" \
		"pools $(kxferctl -j pool show | jq length)" \
		"exports $(kxferctl -j export show | jq length)" \
		"attached $(kxferctl -j pool show | jq '[.[].attach_count] | add // 0')"
}

slab_kb() {
	awk '$1 == "SUnreclaim:" { print $2 }' /proc/meminfo
}

# acceptors_are N: exactly N sessions here (a's are all accepted from b)
acceptors_are() {
	local n

	n=$(kxferctl -j peer show | jq length)
	echo "sessions: $n, want $1"
	[ "$n" = "$1" ]
}

# leak_snapshot FILE: what must come back after the storm
leak_snapshot() {
	{
		echo "rdma: $(kxfer_rdma_res)"
		echo "objs: $(kxfer_objs)"
	} >"$1"
}

leak_same() {
	local now

	now=$(mktemp)
	leak_snapshot "$now"
	if cmp -s "$1" "$now"; then
		rm -f "$now"
		return 0
	fi
	echo "baseline:"; cat "$1"
	echo "now:"; cat "$now"
	rm -f "$now"
	return 1
}

# leak_check FILE SLAB0: rdma and kxfer objects back to the baseline
# within 60 s; unreclaimable slab within the tolerance
leak_check() {
	local slab1

	busywait 60000 leak_same "$1" || { echo "objects not back to the baseline"; return 1; }
	storm_say "$KXFER_GUEST: back to baseline: $(tr '\n' ' ' <"$1")"
	grep -E 'Slab|SUnreclaim' /proc/meminfo
	slab1=$(slab_kb)
	storm_say "$KXFER_GUEST: SUnreclaim before $2 kB after $slab1 kB" \
		"(+$((slab1 - $2)) kB, tolerance $SLAB_TOLERANCE_KB kB)"
	[ $((slab1 - $2)) -le "$SLAB_TOLERANCE_KB" ] ||
		{ echo "unreclaimable slab grew beyond the tolerance"; return 1; }
}

storm_seed() {
	STORM_SEED=${KXFER_STORM_SEED:-$(($(date +%s) % 100000))}
	RANDOM=$STORM_SEED
	storm_say "$KXFER_GUEST: $1 seed $STORM_SEED"
}

# in-flight jobs of a session: accepted, not ended
session_inflight() {
	kxferctl -j stats show "$1" 2>/dev/null | jq '.[0] | .jobs - .ok -
		.err_flush - .err_access - .err_timeout - .err_remote -
		.err_stale - .err_other' 2>/dev/null || echo "?"
}

# storm_ok FILE: the stream reported no loss, duplicate or corruption
storm_ok() {
	local last

	last=$(grep '^storm: seed .* lost ' "$1" | tail -n 1)
	[ -n "$last" ] || { echo "no final line in $1:"; cat "$1"; return 1; }
	grep -q ' bad_bytes 0 lost 0 dup 0$' <<<"$last" ||
		{ echo "$1: $last"; return 1; }
}

# --- fault storm ----------------------------------------------------------------

# The victims: storm processes on pa killed with -9, each on the other
# half of kvr's last 3 MiB, so that jobs of a killed process that are
# still in the kernel never race with its successor's.
VICTIM=
VICTIM_N=0
victim_start() {
	local half=$((VICTIM_N % 2)) d=${1:-600}

	VICTIM_N=$((VICTIM_N + 1))
	storm -d "$d" -T 4 -m 2 -l 128 -b 256 -q -s "$((STORM_SEED * 100 + VICTIM_N))" \
		-R "$((3072 + half * 1536))K" -S "$STORM_SLICE" \
		-L "$((6400 + half * 3200))K" pa kvr local \
		>"/tmp/st-victim.$VICTIM_N" 2>&1 &
	VICTIM=$!
	busywait 20000 grep -q '^storm: started' "/tmp/st-victim.$VICTIM_N"
}

victim_kill() {
	local inflight

	inflight=$(session_inflight pa)
	kill -9 "$VICTIM"
	wait "$VICTIM" 2>/dev/null || true
	echo "killed storm $VICTIM_N (pid $VICTIM) with $inflight jobs of pa in flight"
	[[ $inflight =~ ^[0-9]+$ ]] && ((inflight > KILL_MAX_INFLIGHT)) &&
		KILL_MAX_INFLIGHT=$inflight
	VICTIM=
}

# victim_reap: no victim outlives the test, whichever way it ends
victim_reap() {
	[ -z "$VICTIM" ] || victim_kill
}

fault_peer_cycle() {
	local i n=$((1 + RANDOM % 3))

	for ((i = 0; i < n; i++)); do
		kxferctl peer del pa4
		sleep "0.$((RANDOM % 10))"
		kxferctl peer add pa4 "$A" qps 4 depth 64
		N_PEER=$((N_PEER + 1))
		sleep "$((RANDOM % 2)).$((RANDOM % 10))"
	done
}

# While rxe0 is gone, pa keeps trying, and says so in peer show: its
# attempts grow (the first retry comes at most reconnect_max_ms, 5 s and
# a quarter, after the last failure), it is not up, and while down it
# says when it tries next.  Then the device is away as long as the
# schedule says, counted from the delete.
fault_rxe() {
	local t0 gone n0 left

	gone=$((1 + RANDOM % 3))
	t0=$(now_ms)
	rdma link delete rxe0
	echo "rdma link delete took $(($(now_ms) - t0)) ms"
	n0=$(peer_attempts pa)
	busywait 15000 attempts_above pa "${n0:-0}" ||
		{ echo "pa made no attempt while rxe0 was gone"; exit 1; }
	echo
	check_fail peer_state pa up
	peer_json pa | jq -c '.[0] | {state, attempts, next_try_ns, last_error}'
	# the next attempt is scheduled whenever pa is down
	peer_json pa | jq -e '.[0] | .state != "down" or .next_try_ns != null' >/dev/null ||
		{ echo "pa is down with no next attempt scheduled"; exit 1; }
	left=$((t0 + gone * 1000 - $(now_ms)))
	((left <= 0)) || sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
	rdma link add rxe0 type rxe netdev "$KXFER_NETDEV"
	busywait 10000 port_active rxe0
	N_RXE=$((N_RXE + 1))
}

# On Debian 6.12 guests, two full suite-2 runs of this session ended in
# a guest kernel crash in rxe's and the network stack's memory (a
# corrupted slab freelist on the exporter during random_1qp; a corrupted
# NAPI poll list on the connector right after a fault storm), never on
# 6.1; slub_debug runs did not catch it.  Until that is understood the
t_fault_storm() {
	local base slab0 end flaps=0 s t0 serve

	storm_seed fault_storm
	kmsg_mark fault_storm
	base=/tmp/st-baseline
	if on_a; then
		defer link_drop off
		# The baseline is b's two sessions (pa, pa4) accepted here.
		# Sessions of b's connections from before (device_delete
		# removed b's device) stay until their keepalive ends them:
		# counted in the baseline they would never come back.
		slowwait 60 acceptors_are 2 ||
			{ echo "a has not settled to b's two sessions"; exit 1; }
		leak_snapshot $base
		slab0=$(slab_kb)
		cat $base
		barrier st-go 120
		end=$((SECONDS + STORM_SECS))
		while ((SECONDS < end)); do
			sleep "$((2 + RANDOM % 6))"
			((SECONDS < end)) || break
			s=$((1 + RANDOM % 6))
			echo "$(date +%T) link down for $s s"
			link_drop on
			sleep "$s"
			link_drop off
			flaps=$((flaps + 1))
		done
		storm_say "a: faults injected: link flaps $flaps"
		barrier st-faults-done 300
		# b asks for a's side if its sessions do not come back (the
		# dump takes about half a minute: let it end); a says it
		# anyway if b never comes
		explain_serve fault_storm 400 &
		serve=$!
		defer stop_process $serve
		barrier st-done 400 || {
			if [ -e "$KXFER_SHARED/explain.fault_storm.b" ]; then
				wait $serve || true
			else
				rdma_explain
			fi
			exit 1
		}
		leak_check $base "$slab0"
		kmsg_clean fault_storm
		return 0
	fi

	# b: max_inflight is read at open: 4096 jobs per file, four files
	# per process
	echo 4096 >/sys/module/kxfer/parameters/max_inflight
	defer sh -c 'echo 1024 >/sys/module/kxfer/parameters/max_inflight'
	defer_readd_rxe0
	leak_snapshot $base
	slab0=$(slab_kb)
	cat $base

	N_PEER=0 N_RXE=0 N_KILL=0 KILL_MAX_INFLIGHT=0
	storm -d "$((STORM_SECS + 20))" -T 4 -C 15 -s "$((STORM_SEED * 100 + 1))" \
		-R 0 -S "$STORM_SLICE" -L 0 pa kvr local >/tmp/st-pa 2>&1 &
	local spa=$!
	storm -d "$((STORM_SECS + 20))" -T 4 -s "$((STORM_SEED * 100 + 2))" \
		-R 1536K -S "$STORM_SLICE" -L 3200K pa4 kvr local >/tmp/st-pa4 2>&1 &
	local spa4=$!
	defer stop_process $spa
	defer stop_process $spa4
	busywait 20000 grep -q '^storm: started' /tmp/st-pa
	busywait 20000 grep -q '^storm: started' /tmp/st-pa4
	defer victim_reap
	victim_start
	barrier st-go 120

	# the kinds take turns, from a random one, at random intervals
	local kind=$((RANDOM % 3))
	t0=$(now_ms)
	end=$((SECONDS + STORM_SECS))
	while ((SECONDS < end)); do
		sleep "$((1 + RANDOM % 4))"
		((SECONDS < end)) || break
		kind=$(((kind + 1) % 3))
		case $kind in
		0)
			echo "$(date +%T) peer del/add pa4"
			fault_peer_cycle
			;;
		1)
			echo "$(date +%T) rxe0 delete/add"
			fault_rxe
			;;
		2)
			echo "$(date +%T) kill -9 a storm process"
			victim_kill
			N_KILL=$((N_KILL + 1))
			victim_start
			;;
		esac
	done
	# at least one of each kind
	((N_PEER)) || fault_peer_cycle
	((N_RXE)) || fault_rxe
	victim_kill
	N_KILL=$((N_KILL + 1))
	storm_say "b: faults injected: peer del/add $N_PEER, rxe0 delete/add $N_RXE," \
		"kill -9 $N_KILL (most jobs in flight at a kill: $KILL_MAX_INFLIGHT)"
	echo "fault window: $(($(now_ms) - t0)) ms"
	barrier st-faults-done 300

	# Sessions come back, then the last stream runs to its end.  If
	# they do not, both sides say what their RDMA stack sees.
	t0=$(now_ms)
	busywait 60000 peer_state pa up || { explain_ask fault_storm; exit 1; }
	busywait 60000 peer_state pa4 up || { explain_ask fault_storm; exit 1; }
	storm_say "b: sessions up $(($(now_ms) - t0)) ms after the last fault"
	busywait 10000 has_rexport pa kvr
	busywait 10000 has_rexport pa4 kvr
	victim_start 10

	local rc=0 f
	wait $spa || rc=1
	wait $spa4 || rc=1
	wait "$VICTIM" || rc=1
	VICTIM=
	for f in /tmp/st-pa /tmp/st-pa4 "/tmp/st-victim.$VICTIM_N"; do
		echo "--- $f"
		cat "$f"
		storm_say "b: $(grep '^storm: seed .* lost ' "$f" | tail -n 1)"
		storm_ok "$f" || rc=1
	done
	[ "$rc" = 0 ] || { echo "a storm stream failed"; exit 1; }
	barrier st-done 400

	kxferctl -j stats show | jq -c '.[] | {name, jobs, ok, err_flush, err_access, err_timeout, err_remote, err_stale, err_other}'
	leak_check $base "$slab0"
	kmsg_clean fault_storm
}

# --- load --------------------------------------------------------------------------

# rxe's counters of RNR NAKs and of transport retries, "name value"
rxe_counters() {
	rdma -j statistic show link rxe0/1 |
		jq -r '.[0] | to_entries[] | select(.key | test("rnr|retry|sent_pkts")) |
			"\(.key) \(.value)"'
}

# rxe_counters_check BEFORE AFTER: no RNR NAK and no retry exhausted;
# retransmissions (completer_retry_err: no ACK within kxfer's ACK timeout,
# 268 ms on Debian's kernels and longer on the slow ones (common.sh's
# KXFER_ACK_TIMEOUT), which a TCG guest on a loaded host misses now and
# then) are
# printed with the qdisc's drops, and bounded by one per 200 packets sent
# (a whole make check with a CPU hog beside the guests counted 1.1 per 1000
# on 6.12, packets never lost whose ACK came late; a storm of them, as from
# a responder overrun, counts far more)
storm_rxe_check() {
	local k v0 v1 sent=0 retr=0 rc=0

	while read -r k v1; do
		v0=$(awk -v k="$k" '$1 == k { print $2 }' <<<"$1")
		case $k in
		sent_pkts) sent=$((v1 - v0)) ;;
		completer_retry_err) retr=$((v1 - v0)) ;;
		*) [ "$v0" = "$v1" ] || { echo "rxe0 $k rose: $v0 -> $v1"; rc=1; } ;;
		esac
	done <<<"$2"
	tc -s qdisc show dev "$KXFER_NETDEV" | grep -E 'qdisc|dropped'
	storm_say "$KXFER_GUEST: load: rxe0 sent_pkts +$sent, retransmissions" \
		"(completer_retry_err) +$retr, RNR and retry-exceeded counters unchanged: $((!rc))"
	[ $((retr * 200)) -le "$sent" ] || { echo "too many retransmissions"; rc=1; }
	return $rc
}

# err_* of every session, as one line per session
kxfer_errs() {
	kxferctl -j stats show | jq -c '.[] | [.name, .err_flush, .err_access,
		.err_timeout, .err_remote, .err_stale, .err_other]' | sort
}

t_load() {
	local c0 c1

	storm_seed load
	kmsg_mark load
	if on_a; then
		barrier ld-ready 120
		c0=$(rxe_counters)
		echo "$c0"
		barrier ld-go
		barrier ld-done 300
		c1=$(rxe_counters)
		echo "$c1"
		storm_rxe_check "$c0" "$c1"
		kmsg_clean load
		return 0
	fi

	kxferctl peer add pa4b "$A" qps 4
	defer kxferctl peer del pa4b
	busywait 30000 peer_state pa4b up
	busywait 10000 has_rexport pa4b kvr
	busywait 30000 peer_state pa up
	busywait 30000 peer_state pa4 up
	barrier ld-ready 120
	local e0 e1 rc=0 f pids=()
	c0=$(rxe_counters)
	echo "$c0"
	e0=$(kxfer_errs)
	barrier ld-go
	storm -d "$LOAD_SECS" -T 4 -s "$((STORM_SEED * 100 + 11))" -w 60 \
		-R 0 -S 2M -L 0 pa kvr local >/tmp/ld-pa 2>&1 &
	pids+=($!)
	storm -d "$LOAD_SECS" -T 6 -s "$((STORM_SEED * 100 + 12))" -w 60 \
		-R 2M -S 2M -L 4160K pa4 kvr local >/tmp/ld-pa4 2>&1 &
	pids+=($!)
	storm -d "$LOAD_SECS" -T 6 -s "$((STORM_SEED * 100 + 13))" -w 60 \
		-R 4M -S 2M -L 8320K pa4b kvr local >/tmp/ld-pa4b 2>&1 &
	pids+=($!)
	for f in "${pids[@]}"; do
		wait "$f" || rc=1
	done
	barrier ld-done 300
	for f in /tmp/ld-pa /tmp/ld-pa4 /tmp/ld-pa4b; do
		echo "--- $f"
		cat "$f"
		storm_say "b: load ${f#/tmp/ld-}: $(grep '^storm: seed .* lost ' "$f" | tail -n 1)"
		storm_ok "$f" || rc=1
		# nothing may fail under load alone
		grep -q ' failed 0 ()' "$f" || { echo "$f: jobs failed"; rc=1; }
	done
	c1=$(rxe_counters)
	echo "$c1"
	e1=$(kxfer_errs)
	storm_rxe_check "$c0" "$c1" || rc=1
	if [ "$e0" != "$e1" ]; then
		echo "kxfer err_* counters changed: before"
		echo "$e0"
		echo "after"
		echo "$e1"
		rc=1
	fi
	storm_say "b: load: kxfer err_* counters unchanged: $([ "$e0" = "$e1" ] && echo yes || echo no)"
	kxferctl stats show
	kmsg_clean load || rc=1
	[ "$rc" = 0 ]
}
