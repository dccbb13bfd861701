#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rails.sh: a peer over two rails (vm-run --guests 2 --nics 2, issue 41).
# Guest a listens on both of its addresses (10.99.0.1 on rxe0, 10.98.0.1
# on rxe1) and exports; guest b adds it as one peer over both ("peer add
# pr A,A2").  A verified stream of WRITE jobs keeps going while b's rxe1
# is deleted and added again, three times: no job fails, none completes
# twice, and every byte is as written.  Streams of notifications go on
# through rxe1 lost on either side, deleted (rdma link) or its link down
# and up (ip link), each notification once and after its data.

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=common.sh
source "$KXFER_TOP/selftests/guest/common.sh"

cd "$KXFER_TOP" || exit 1

A=10.99.0.1
A2=10.98.0.1

# rail_state PEER RAIL STATE: PEER's rail RAIL (0 the first) is in STATE
rail_state() {
	[ "$(peer_json "$1" 2>/dev/null |
		jq -r --argjson i "$2" '.[0].rails[] | select(.index == $i) | .state')" = "$3" ]
}

# rail_sum PEER KEY: KEY summed over PEER's rails
rail_sum() {
	peer_json "$1" | jq --arg k "$2" '[.[0].rails[][$k] // 0] | add'
}

# a's accepting sessions from b that are up (one per rail)
a_rails_up() {
	[ "$(kxferctl -j peer show |
		jq '[.[] | select(.name == "b" and .state == "up")] | length')" = 2 ]
}

_readd_rxe1() {
	ip link set "$KXFER_NETDEV2" up
	rdma link show rxe1/1 >/dev/null 2>&1 && return 0
	rdma link add rxe1 type rxe netdev "$KXFER_NETDEV2"
	busywait 10000 port_active rxe1
}

t_rails_setup() {
	[ "${KXFER_NICS:-1}" = 2 ] || skip "needs vm-run --nics 2"
	kxfer_load node_name="$KXFER_GUEST"
	if on_a; then
		kxferctl pool add kv size 16M mode 0666
		kxferctl export add kvr pool kv offset 2M len 6M access read,write
		kxferctl pool add kvn size 24M mode 0666
		kxferctl export add kvn pool kvn offset 0 len 24M access read,write
		kxferctl listen "$A" allow 10.99.0.0/24
		kxferctl listen "$A2" allow 10.98.0.0/24
	else
		kxferctl pool add local size 16M mode 0666
		kxferctl pool add localn size 24M mode 0666
	fi
	barrier rails-setup
}

# One peer, two rails: the first connection authenticates (here: none to
# make) and gets the token, the second joins with it; a sees two accepting
# sessions of node b, b one peer with its rails listed.
t_rails_up() {
	local j

	if on_a; then
		barrier rails-added
		busywait 30000 a_rails_up
		kxferctl peer show
		barrier rails-up 60
		return 0
	fi
	kxferctl peer add pr "$A,$A2" qps 2
	barrier rails-added
	busywait 30000 rail_state pr 0 up
	busywait 30000 rail_state pr 1 up
	busywait 10000 has_rexport pr kvr
	busywait 10000 has_rexport pr kvn
	kxferctl peer show pr
	j=$(peer_json pr)
	echo "$j" | jq -c '.[0].rails'
	echo "$j" | jq -e '.[0] | .role == "connector" and .rail == 0 and
		(.rails | length) == 2 and
		(.rails | map(.dev) | sort) == ["rxe0", "rxe1"] and
		(.rails | map(.via) | sort) == ["first", "join"]' >/dev/null
	# The other rail is no peer of its own.
	[ "$(kxferctl -j peer show | jq 'length')" = 1 ]
	barrier rails-up 60
}

# Jobs go to both rails (equally near: turns), and the data is right.
t_rails_spread() {
	if on_a; then
		barrier rails-spread 120
		return 0
	fi
	xfer random pr kvr local -s 1 -n 400 -m 4 -l 16K -b 16 -t 120
	kxferctl peer show pr
	peer_json pr | jq -e '.[0].rails | all(.jobs > 0)' >/dev/null
	barrier rails-spread 120
}

# rail_jobs PEER: each rail's jobs, in rail order
rail_jobs() {
	peer_json "$1" | jq -c '[.[0].rails | sort_by(.index)[] | .jobs]'
}

# pci_of_netdev DEV: the PCI function a net device is on
pci_of_netdev() {
	basename "$(dirname "$(readlink -f "/sys/class/net/$1/device")")"
}

# pci_by_id VENDOR DEVICE: the first PCI function of that id
pci_by_id() {
	local d

	for d in /sys/bus/pci/devices/*; do
		if [ "$(cat "$d/vendor")" = "$1" ] && [ "$(cat "$d/device")" = "$2" ]; then
			basename "$d"
			return 0
		fi
	done
	return 1
}

# near_round POOL RAIL: a verified random stream from POOL goes all to
# rail RAIL (0 or 1), none to the other
near_round() {
	local before after

	before=$(rail_jobs pr)
	xfer random pr kvr "$1" -s "$((7 + $2))" -n 60 -m 4 -l 16K -b 8 -t 120
	after=$(rail_jobs pr)
	echo "pool $1: rail jobs $before -> $after"
	jq -n -e --argjson b "$before" --argjson a "$after" --argjson r "$2" \
		'($a[$r] - $b[$r]) >= 60 and $a[1 - $r] == $b[1 - $r]' >/dev/null
}

# Placement by PCIe distance (vm-run --nics 2 puts eth1 behind a PCIe
# switch beside a GPU stand-in, eth0 on the root complex): a pool near
# the stand-in sends its jobs to rxe1 (4 links from it, through the
# switch; rxe0 is 6, through the root complex), a pool near eth0's PCI
# function to rxe0, a pool near an RDMA device to that device's rail.
# A near device that is not there is refused, with why, and makes no
# pool (netlink_test checks each refusal's errno).
t_rails_near() {
	local gpu nic0

	if on_a; then
		barrier rails-near 300
		return 0
	fi
	gpu=$(pci_by_id 0x1b36 0x0005)
	nic0=$(pci_of_netdev "$KXFER_NETDEV")
	echo "GPU stand-in $gpu, $KXFER_NETDEV on $nic0, $KXFER_NETDEV2 on $(pci_of_netdev "$KXFER_NETDEV2")"
	[ -n "$gpu" ] && [ -n "$nic0" ]

	expect_error "near: no such PCI device" kxferctl pool add nb size 1M near 0000:7f:1f.7
	expect_error "near: not a PCI address" kxferctl pool add nb size 1M near 0000:00:20.0
	expect_error "near: no such PCI address or RDMA device" kxferctl pool add nb size 1M near rxe9
	check_fail kxferctl pool show nb

	kxferctl pool add pgpu size 16M mode 0666 near "$gpu"
	kxferctl pool add pnic0 size 16M mode 0666 near "$nic0"
	kxferctl pool add prxe1 size 16M mode 0666 near rxe1
	kxferctl pool show pgpu
	kxferctl -j pool show pgpu | jq -e --arg g "$gpu" '.[0].near == $g' >/dev/null

	near_round pgpu 1
	near_round pnic0 0
	near_round prxe1 1
	kxferctl pool del pgpu
	kxferctl pool del pnic0
	kxferctl pool del prxe1
	barrier rails-near 300
}

# rail_stripe MIB: stripe jobs of MIB MiB or more (0: none)
rail_stripe() {
	echo "$(($1 << 20))" >/sys/module/kxfer/parameters/rail_stripe
}

# rail_shares PEER: each rail's shares of striped jobs, in rail order
rail_shares() {
	peer_json "$1" | jq -c '[.[0].rails | sort_by(.index)[] | .shares]'
}

# Striping: with rail_stripe at 1 MiB, b's WRITEs of 1 MiB or more go in
# a share per rail (both equally near), smaller ones whole to one; the
# data is right (xfer random reads the export back), the peer counts
# them striped and each rail one share of each.  Then NOTIFY jobs of 2 MiB,
# striped: a checks, the moment each notification arrives, that all of
# its job's data is there, on both rails' shares.
t_rails_stripe() {
	local st0 sh0 rc=0 pid

	if on_a; then
		xfer notify-recv -o 0 -n 12 -l 2M -t 300 kvn kvn \
			>/tmp/rs-recv 2>&1 &
		pid=$!
		busywait 10000 grep -q '^subscribed' /tmp/rs-recv
		barrier rs-sub 120
		wait "$pid" || rc=$?
		cat /tmp/rs-recv
		barrier rs-done 300
		return "$rc"
	fi
	defer barrier rs-done 300
	defer rail_stripe 4
	rail_stripe 1
	busywait 90000 rail_state pr 1 up
	st0=$(peer_json pr | jq '.[0].striped')
	sh0=$(rail_shares pr)
	xfer random pr kvr local -s 41 -n 120 -m 6 -l 1M -b 4 -t 300
	kxferctl peer show pr
	echo "striped: $st0 -> $(peer_json pr | jq '.[0].striped')," \
		"shares: $sh0 -> $(rail_shares pr)"
	[ "$(peer_json pr | jq '.[0].striped')" -gt "$st0" ]
	# a share on each rail for every job striped
	jq -n -e --argjson a "$sh0" --argjson b "$(rail_shares pr)" \
		--argjson d "$(($(peer_json pr | jq '.[0].striped') - st0))" \
		'$b[0] - $a[0] == $d and $b[1] - $a[1] == $d' >/dev/null
	st0=$(peer_json pr | jq '.[0].striped')
	barrier rs-sub 120
	xfer notify-send -n 12 -l 2M -k 8 -w 4 -t 300 pr kvn localn
	[ "$(peer_json pr | jq '.[0].striped')" -ge "$((st0 + 12))" ]
}

# rxe1_lose HOW: this guest loses rail 1's link for 3 s.  HOW delete:
# the rxe device goes (rdma link delete) and is made again; flap: its
# netdev goes down and up (ip link set), the device stays.
rxe1_lose() {
	case $1 in
	delete)
		rdma link delete rxe1
		echo "$KXFER_GUEST: rxe1 deleted"
		sleep 3
		rdma link add rxe1 type rxe netdev "$KXFER_NETDEV2"
		;;
	flap)
		ip link set "$KXFER_NETDEV2" down
		echo "$KXFER_GUEST: $KXFER_NETDEV2 down"
		sleep 3
		ip link set "$KXFER_NETDEV2" up
		;;
	esac
	busywait 10000 port_active rxe1
}

# rail1_bounce ROUND [HOW]: b loses rxe1 (rxe1_lose HOW, delete if not
# given), its rail goes down, rxe1 comes back and the rail up again
rail1_bounce() {
	local t0 how=${2:-delete}

	t0=$(now_ms)
	if [ "$how" = delete ]; then
		rdma link delete rxe1
	else
		ip link set "$KXFER_NETDEV2" down
	fi
	echo "round $1: rxe1 lost ($how)"
	busywait 30000 check_fail rail_state pr 1 up
	sleep 2
	if [ "$how" = delete ]; then
		rdma link add rxe1 type rxe netdev "$KXFER_NETDEV2"
	else
		ip link set "$KXFER_NETDEV2" up
	fi
	busywait 10000 port_active rxe1
	busywait 60000 rail_state pr 1 up
	echo "round $1: rail 1 up again after $(($(now_ms) - t0)) ms"
}

# random_rounds STOP BASE ARG...: rounds of a verified random WRITE stream
# to pr's kvr (xfer random ARG..., seed BASE + the round) until file STOP
# exists; the rounds' count, or the round that failed
random_rounds() {
	local stop=$1 base=$2 n=0

	shift 2
	while [ ! -e "$stop" ]; do
		n=$((n + 1))
		xfer random pr kvr local -s "$((base + n))" "$@" -t 300 -q ||
			{ echo "round $n failed"; return 1; }
	done
	echo "rounds: $n"
}

# A verified stream of WRITEs (xfer random: every job's event checked,
# the export read back and compared, no stray event) in rounds while b's
# rxe1 goes and comes back three times.
t_rails_failover() {
	local i rc=0 f0

	if on_a; then
		barrier rails-failover-done 600
		kxferctl peer show
		return 0
	fi
	# a waits for this barrier however b's side ends
	defer barrier rails-failover-done 600
	defer _readd_rxe1
	kxferctl -j monitor >/tmp/rails-monitor 2>/dev/null &
	defer kill $!
	f0=$(rail_sum pr failovers)
	rm -f /tmp/rails-stop
	random_rounds /tmp/rails-stop 0 -n 2000 -m 4 -l 16K -b 32 \
		>/tmp/rails-stream 2>&1 &
	local stream=$!
	for i in 1 2 3; do
		sleep 3
		kill -0 "$stream"
		rail1_bounce "$i"
		kxferctl peer show pr | grep -E '^ *rail' || :
	done
	touch /tmp/rails-stop
	wait "$stream" || rc=$?
	cat /tmp/rails-stream
	kxferctl peer show pr
	echo "failovers: $f0 -> $(rail_sum pr failovers)," \
		"taken: $(rail_sum pr taken), fenced: $(rail_sum pr fenced)"
	dmesg | grep 'kxfer: peer pr: rail' | tail -12 || :
	[ "$rc" = 0 ]
	rail_state pr 0 up
	# a job of a failed rail waits for the peer to fence that rail
	[ "$(rail_sum pr failovers)" = "$f0" ] || [ "$(rail_sum pr fenced)" -gt 0 ]
	# monitor told each loss of rail 1 and each return, as rail 1 of pr
	jq -rR 'fromjson? | select(.event == "peer-state" and .name == "pr" and
		.rail == 1) | .state' /tmp/rails-monitor >/tmp/rails-mon-states
	echo "monitor, rail 1: $(tr '\n' ' ' </tmp/rails-mon-states)"
	[ "$(grep -cx down /tmp/rails-mon-states)" -ge 3 ]
	[ "$(grep -cx up /tmp/rails-mon-states)" -ge 3 ]
}

# Striped jobs through failover: a verified stream of WRITEs of 1 MiB and
# more, each striped (rail_stripe at 1 MiB), in rounds while b's rxe1 is
# deleted and comes back twice: shares of a failed rail are posted again
# on the other, no job fails or completes twice, every byte reads back
# as written.
t_rails_stripe_failover() {
	local i rc=0 f0 st0

	if on_a; then
		barrier rsf-done 600
		return 0
	fi
	defer barrier rsf-done 600
	defer _readd_rxe1
	defer rail_stripe 4
	rail_stripe 1
	busywait 90000 rail_state pr 1 up
	f0=$(rail_sum pr failovers)
	st0=$(peer_json pr | jq '.[0].striped')
	rm -f /tmp/rsf-stop
	random_rounds /tmp/rsf-stop 200 -n 60 -m 6 -l 1M -b 4 \
		>/tmp/rsf-stream 2>&1 &
	local stream=$!
	for i in 1 2; do
		sleep 3
		kill -0 "$stream"
		rail1_bounce "stripe-$i"
	done
	sleep 2
	touch /tmp/rsf-stop
	wait "$stream" || rc=$?
	cat /tmp/rsf-stream
	kxferctl peer show pr
	echo "striped: $st0 -> $(peer_json pr | jq '.[0].striped')," \
		"failovers: $f0 -> $(rail_sum pr failovers)"
	[ "$rc" = 0 ]
	[ "$(peer_json pr | jq '.[0].striped')" -gt "$st0" ]
}

# rail1_fenced: rail 1 of pr has been fenced at least once
rail1_fenced() {
	[ "$(peer_json pr | jq '.[0].rails[] | select(.index == 1) | .fenced')" -gt 0 ]
}

# rnf_round SIDE ROUND HOW: b sends 12288 NOTIFY jobs of 2 KiB (24 MiB)
# on rail 1 (KXFER_JOB_RAIL), 16 in flight (a quiet guest ends a job
# before the next is submitted: with few, the rail may go with none on
# it); a checks each notification the moment it arrives: its data there,
# once, none missing; SIDE loses rxe1 meanwhile (rxe1_lose HOW).
rnf_round() {
	local side=$1 tag="rnf-$1-$2-$3" how=$3 rc=0 pid

	if on_a; then
		xfer notify-recv -o 0 -n 12288 -l 2048 -t 300 kvn kvn \
			>"/tmp/$tag" 2>&1 &
		pid=$!
		busywait 10000 grep -q '^subscribed' "/tmp/$tag"
		barrier "$tag-sub" 120
		if [ "$side" = a ]; then
			sleep 1
			kill -0 "$pid"
			rxe1_lose "$how"
		fi
	else
		busywait 90000 rail_state pr 1 up
		barrier "$tag-sub" 120
		xfer notify-send -n 12288 -l 2048 -k 1 -w 16 -r 1 -t 300 \
			pr kvn localn >"/tmp/$tag" 2>&1 &
		pid=$!
		if [ "$side" = b ]; then
			sleep 1
			kill -0 "$pid"
			rail1_bounce "$tag" "$how"
		fi
	fi
	wait "$pid" || rc=$?
	cat "/tmp/$tag"
	barrier "$tag-done" 600
	return "$rc"
}

# Notifications through failover: three rounds with b's rxe1 lost and
# back, three with a's (whose loss leaves b's jobs on rail 1 without
# answers until the transport gives up: they always fail over).  Every
# notification comes once, after its data, though jobs whose rail failed
# are posted again on the other (RAIL_NOTIFY numbers them; the acceptor
# delivers a number once), and b's jobs of a failed rail wait for a to
# fence it (RAIL_FENCE) before they go again.  KXFER_RAILS_HOW: how
# rxe1 is lost (rxe1_lose), delete if not set.
t_rails_notify_failover() {
	local side round f0=0 fails how=${KXFER_RAILS_HOW:-delete}

	on_a || f0=$(peer_json pr | jq '.[0].rails[] | select(.index == 1) | .failovers')
	defer _readd_rxe1
	for side in ${KXFER_RAILS_SIDES:-b a}; do
		for round in $(seq "${KXFER_RAILS_ROUNDS:-3}"); do
			rnf_round "$side" "$round" "$how"
		done
		if [ "$side" = b ] && on_a; then
			# if b's rxe1 went with jobs on it, a fenced that rail
			# (on a quiet guest the jobs posted finish before the
			# device goes, and the next wait for its lock)
			dmesg | grep "peer b: rail 1 fenced at the peer's request" || :
		fi
	done
	on_a && { dmesg | grep -c 'came again, not delivered' || :; return 0; }
	kxferctl peer show pr
	fails=$(peer_json pr | jq '.[0].rails[] | select(.index == 1) | .failovers')
	echo "rail 1 failovers: $f0 -> $fails"
	[ "$fails" -gt "$f0" ]
	rail1_fenced
	# and rail 1 comes back after the last loss too
	busywait 90000 rail_state pr 1 up
}

# The same with rail 1's link going down and up (ip link set) instead of
# its device going: the device and its cm_ids stay, and neither side may
# send a CM message into the dead link (on rxe that would leave its port
# deaf to every later connection: kxfer_cm_id_reap()).
t_rails_notify_flap() {
	KXFER_RAILS_HOW=flap t_rails_notify_failover
}

# Notifications over rails: every job of b's stream (3072 of 2 KiB, the
# export's 6 MiB) carries one, and a checks, the moment each arrives,
# that its data is there, that it comes once and that none is missing,
# while b's rxe1 goes and comes back.
t_rails_notify() {
	local rc=0

	if on_a; then
		xfer notify-recv -o 2M -n 3072 -l 2048 -t 300 kv kvr \
			>/tmp/rn-recv 2>&1 &
		local recv=$!
		busywait 10000 grep -q '^subscribed' /tmp/rn-recv
		barrier rn-subscribed
		wait "$recv" || rc=$?
		cat /tmp/rn-recv
		barrier rn-done 600
		[ "$rc" = 0 ]
		return 0
	fi
	defer barrier rn-done 600
	defer _readd_rxe1
	barrier rn-subscribed
	xfer notify-send -n 3072 -l 2048 -k 2 -t 300 pr kvr local \
		>/tmp/rn-send 2>&1 &
	local send=$!
	# 6.12 sends 1024 in under 3 s: the loss must come while it runs
	sleep 1
	kill -0 "$send"
	rail1_bounce 1
	wait "$send" || rc=$?
	cat /tmp/rn-send
	kxferctl peer show pr
	[ "$rc" = 0 ]
}

# The same on the far side: a's rxe1 goes and comes back while b's
# stream runs.  b learns it from its rail's failed work requests or its
# keepalive, moves the jobs, and the rail joins again once a's rxe1 and
# its listener on A2 are back.
t_rails_failover_a() {
	local rc=0

	if on_a; then
		defer _readd_rxe1
		barrier ra-go
		sleep 3
		rdma link delete rxe1
		echo "a: rxe1 deleted"
		sleep 3
		rdma link add rxe1 type rxe netdev "$KXFER_NETDEV2"
		busywait 10000 port_active rxe1
		echo "a: rxe1 back"
		kxferctl listen show
		barrier ra-readded 120
		barrier ra-done 600
		kxferctl peer show
		return 0
	fi
	defer barrier ra-done 600
	rm -f /tmp/ra-stop
	random_rounds /tmp/ra-stop 100 -n 2000 -m 4 -l 16K -b 32 \
		>/tmp/ra-stream 2>&1 &
	local stream=$!
	barrier ra-go
	barrier ra-readded 120
	kill -0 "$stream"
	busywait 90000 rail_state pr 1 up
	sleep 3
	touch /tmp/ra-stop
	wait "$stream" || rc=$?
	cat /tmp/ra-stream
	kxferctl peer show pr
	dmesg | grep 'kxfer: peer pr: rail' | tail -6 || :
	[ "$rc" = 0 ]
}

t_rails_teardown() {
	if on_a; then
		barrier rails-gone
		busywait 15000 sh -c '[ "$(kxferctl -j peer show | jq length)" = 0 ]'
		kxferctl listen del "$A"
		kxferctl listen del "$A2"
	else
		kxferctl peer del pr
		[ "$(kxferctl -j peer show | jq length)" = 0 ]
		barrier rails-gone
	fi
	for r in qp cq mr pd cm_id; do
		if rdma resource show "$r" | grep kxfer; then
			echo "kxfer left $r objects behind"
			exit 1
		fi
	done
	rmmod kxfer
	check_fail grep -q '^kxfer ' /proc/modules
}

KXFER_BARRIER_TIMEOUT=60

ktest2 rails_setup t_rails_setup
ktest2 rails_up t_rails_up
KTEST_TIMEOUT=300 ktest2 rails_near t_rails_near
ktest2 rails_spread t_rails_spread
KTEST_TIMEOUT=600 ktest2 rails_stripe t_rails_stripe
if [ -n "${KXFER_RAILS_SMOKE:-}" ]; then
	# make check's: one round of notifications through a's rail loss
	KXFER_RAILS_SIDES=a KXFER_RAILS_ROUNDS=1 KTEST_TIMEOUT=600 \
		ktest2 rails_notify_failover t_rails_notify_failover
	# and through b's link going down and up
	KXFER_RAILS_SIDES=b KXFER_RAILS_ROUNDS=1 KTEST_TIMEOUT=600 \
		ktest2 rails_notify_flap t_rails_notify_flap
else
	KTEST_TIMEOUT=900 ktest2 rails_failover t_rails_failover
	KTEST_TIMEOUT=900 ktest2 rails_stripe_failover t_rails_stripe_failover
	KTEST_TIMEOUT=900 ktest2 rails_notify t_rails_notify
	KTEST_TIMEOUT=900 ktest2 rails_failover_a t_rails_failover_a
	KTEST_TIMEOUT=1200 ktest2 rails_notify_failover t_rails_notify_failover
	KTEST_TIMEOUT=1200 ktest2 rails_notify_flap t_rails_notify_flap
fi
ktest2 rails_teardown t_rails_teardown
exit 0
