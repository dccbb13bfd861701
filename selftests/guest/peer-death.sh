#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# peer-death.sh: a peer that dies outright and comes back (issue 7), run by
# run-suite on two guests.  Guest b asks vm-run to kill it (lib.sh's
# kill_me: its QEMU gets SIGKILL, a hears nothing) and boots again, twice:
#
#   boot 1  b connects (4 QPs); verified streams both ways; then b is
#           killed while a pushes a counted stream of WRITEs into b's pool.
#           a: every job ends exactly once, the session is gone within the
#           keepalive bound, and a's objects are back to its baseline.
#   boot 2  b connects again: one session named b on a, verified streams
#           both ways.  a stops probing (keepalive 10 min), then b is
#           killed while the session is idle: a cannot tell.
#   boot 3  b connects again.  a sees node b come back from b's address as
#           a new incarnation and ends the old session at once ("the peer
#           restarted") rather than 10 minutes later; the new session
#           carries verified jobs both ways.  Both modules unload clean.
#
# a runs every step; b runs the steps of its current boot (KXFER_BOOT).

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=common.sh
source "$KXFER_TOP/selftests/guest/common.sh"
# shellcheck source=storm.sh
source "$KXFER_TOP/selftests/guest/storm.sh"

cd "$KXFER_TOP" || exit 1

A=10.99.0.1
KA_TIMEOUT_MS=$KXFER_KA_TIMEOUT_MS	# the keepalive_timeout_ms loaded (common.sh)
PARAMS=/sys/module/kxfer/parameters
BASELINE=/tmp/pd-baseline
# b's reboot, its module load and its connect, under TCG
REBOOT_S=300

# --- helpers -------------------------------------------------------------------

a_setup() {
	kxfer_load node_name=a
	kxferctl pool add pd size 8M mode 0666
	kxferctl export add ka pool pd len 2M access read,write
	kxferctl listen "$A" allow 10.99.0.0/24
	leak_snapshot $BASELINE
	cat $BASELINE
}

b_setup() {
	kxfer_load node_name=b
	kxferctl pool add pd size 8M mode 0666
	kxferctl export add kb pool pd len 2M access read,write
}

b_connect() {
	kxferctl peer add pa "$A" qps 4
	busywait 30000 peer_state pa up
	busywait 10000 has_rexport pa ka
}

# sessions_named NAME: how many sessions have that name
sessions_named() {
	peer_json "$1" 2>/dev/null | jq length
}

# one_session_up NAME: exactly one session NAME, and it is up
one_session_up() {
	[ "$(sessions_named "$1")" = 1 ] && peer_state "$1" up
}

# streams TAG: a verified stream each way for 3 s, b into a's ka and a
# into b's kb, the guests starting together
streams() {
	local peer=pa export=ka log=/tmp/stream.$1 rc=0

	if on_a; then
		peer=b export=kb
		busywait 10000 has_rexport b kb
	fi
	barrier "$1-go"
	storm -d 3 -T 2 -w 60 -q -s "$RANDOM" -R 0 -S 1M -L 2M \
		"$peer" "$export" pd >"$log" 2>&1 || rc=$?
	cat "$log"
	storm_ok "$log"
	[ "$rc" = 0 ]
	barrier "$1-done"
}

# qpn_skip N: make rxe0 hand out N QP numbers (a pingpong server each,
# waiting for a client that never comes)
qpn_skip() {
	local i pids=()

	for ((i = 0; i < $1; i++)); do
		ibv_rc_pingpong -d "$KXFER_RDMA_DEV" -g 0 -p $((18515 + i)) >/dev/null 2>&1 &
		pids+=($!)
	done
	busywait 10000 sh -c "[ \$(rdma resource show qp | grep -c ibv_rc_pingpong) = $1 ]"
	rdma resource show qp | grep ibv_rc_pingpong
	kill "${pids[@]}"
	wait "${pids[@]}" || true
}

# victim: b's part of a kill step; never returns
victim() {
	barrier kill 120
	kill_me
}

# killed N: wait for vm-run to have killed b's boot N; prints the time
killed() {
	slowwait 60 test -e "$KXFER_SHARED/killed.b.$1"
	now_ms
}

# --- steps ---------------------------------------------------------------------

t_setup() {
	if on_a; then
		a_setup
		barrier setup
		barrier setup-up
		busywait 10000 one_session_up b
		return 0
	fi
	b_setup
	barrier setup
	b_connect
	barrier setup-up
}

t_streams() {
	streams s1
}

# b dies with a's stream running into its memory.
t_kill_busy() {
	local t0 dt rc=0 last slab0

	on_a || victim
	slab0=$(slab_kb)
	# Running until a has seen the session end: a is one vCPU, and with
	# the storm's threads and (on 6.12) rxe's kworkers busy on it, this
	# script's own steps to the kill (busywait, barrier, killed) took
	# from 15 s to over 20 s (a clean-clone run on a slow host saw
	# "storm: started" 17 s before the kill, a 40 s stream already
	# over), so no fixed length is safe: the stream gets 600 s and a
	# SIGUSR1 once the session is down.  After the kill the rest of it
	# is refused (ENOTCONN).
	storm -N -d 600 -T 2 -w 60 -s "$RANDOM" -R 0 -S 1M -L 2M b kb pd \
		>/tmp/kb-storm 2>&1 &
	local st=$!
	defer stop_process $st
	busywait 20000 grep -q '^storm: started' /tmp/kb-storm
	echo "$(date +%T.%N) storm started"
	sleep 1
	barrier kill 120
	t0=$(killed 1)
	echo "$(date +%T.%N) b is killed"
	kill -0 $st || { echo "the stream ended before the kill:"; cat /tmp/kb-storm; exit 1; }
	busywait $((KA_TIMEOUT_MS + 60000)) check_fail peer_state b up
	dt=$(($(now_ms) - t0))
	storm_say "a: session b down $dt ms after b was killed"
	dmesg | grep 'kxfer: peer b: down' | tail -n 1
	kill -USR1 $st
	# keepalive_timeout_ms after the last completion, then the teardown
	# (drain, deregistration) and this poll, each seconds under TCG: 13.5
	# s in a clean-clone run beside two other guest runs; and a guest may
	# not run at all for a while as b's QEMU boots again beside it (16 s
	# once, on a quiet host: "clocksource: Long readout interval" in a's
	# log, the session down right after), so 40 s over
	[ "$dt" -le $((KA_TIMEOUT_MS + 40000)) ] ||
		{ echo "slower than the keepalive bound"; exit 1; }
	wait $st || rc=$?
	cat /tmp/kb-storm
	storm_ok /tmp/kb-storm
	[ "$rc" = 0 ]
	last=$(grep '^storm: seed .* lost ' /tmp/kb-storm | tail -n 1)
	storm_say "a: $last"
	# Jobs were in flight at the kill: they ended, with an error.
	grep -Eq ' failed [1-9][0-9]* ' <<<"$last" ||
		{ echo "no job failed: none was in flight at the kill?"; exit 1; }
	# The accepting session is gone with everything it held.
	leak_check $BASELINE "$slab0"
}

# b is back: the same name, a fresh session, data both ways.
t_reconnect() {
	if on_a; then
		barrier b2-boot $REBOOT_S
		barrier b2-up
		busywait 10000 one_session_up b
		peer_json b | jq -e '.[0].role == "acceptor" and .[0].qps == 4' >/dev/null
		streams s2
		return 0
	fi
	b_setup
	barrier b2-boot $REBOOT_S
	b_connect
	barrier b2-up
	streams s2
}

# b dies while the session is idle and a has stopped probing: a cannot
# tell, and its session to b stays up.
t_kill_idle() {
	on_a || victim
	echo 600000 >$PARAMS/keepalive_timeout_ms
	echo 600000 >$PARAMS/keepalive_ms
	# a probe already sent gets its answer
	sleep 2
	barrier kill 120
	killed 2 >/dev/null
	sleep 3
	one_session_up b
}

# b comes back as a new incarnation: a ends the old session at once.
# rxe numbers QPs the same way after every boot, and the IB CM ends a
# connection whose remote QP number a new REQ reuses (a "stale
# connection"); b takes four QP numbers first, as a real NIC's would
# differ anyway, so that only kxfer can tell.
t_supersede() {
	local t0 dt

	if on_a; then
		defer sh -c "echo 1000 >$PARAMS/keepalive_ms; echo $KA_TIMEOUT_MS >$PARAMS/keepalive_timeout_ms"
		barrier b3-boot $REBOOT_S
		t0=$(now_ms)
		barrier b3-up
		busywait 10000 one_session_up b
		dt=$(($(now_ms) - t0))
		storm_say "a: one session b, up, $dt ms after b's connect began (keepalive: 600 s)"
		peer_json b
		dmesg | grep 'kxfer: peer b: down: the peer restarted'
		streams s3
		return 0
	fi
	b_setup
	qpn_skip 4
	barrier b3-boot $REBOOT_S
	b_connect
	barrier b3-up
	streams s3
}

t_teardown() {
	if on_a; then
		barrier td-peers-gone
		busywait 15000 sh -c '[ "$(kxferctl -j peer show | jq length)" = 0 ]'
		kxferctl listen del "$A"
	else
		kxferctl peer del pa
		[ "$(kxferctl -j peer show | jq length)" = 0 ]
		barrier td-peers-gone
	fi
	# the superseded session's cm_ids go after the CM's timeouts
	busywait 60000 sh -c '! rdma resource show | grep kxfer' ||
		{ echo "kxfer left rdma objects behind"; exit 1; }
	rmmod kxfer
	check_fail grep -q '^kxfer ' /proc/modules
}

# step N BOOT NAME FUNC: step N, run by a and by b in its boot BOOT.  Each
# starts with both guests' barrier ranks in step; a kill step has no end
# barrier, b being gone.
KXFER_BARRIER_TIMEOUT=60
step() {
	local n=$1 boot=$2 name=$3

	on_a || [ "$KXFER_BOOT" = "$boot" ] || return 0
	barrier_rank $((n * 100))
	ktest "$name" "$4"
	barrier_rank $((n * 100 + 98))
	case $name in
	kill_*) ;;
	*) barrier "end-$name" 90 || true ;;
	esac
}

step 1 1 death_setup t_setup
step 2 1 death_streams t_streams
step 3 1 kill_busy t_kill_busy
step 4 2 reconnect t_reconnect
step 5 2 kill_idle t_kill_idle
step 6 3 supersede t_supersede
step 7 3 death_teardown t_teardown
