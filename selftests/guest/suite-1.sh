#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# suite-1.sh: the one-guest suite, run inside a guest by selftests/run-suite
# (through selftests/rig/vm-run).  rxe0 is up on eth0 when it starts.
# Loads kxfer.ko, checks the control plane (devices, monitor, pools,
# exports) and the character device, and unloads the module at the end.

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=common.sh
source "$KXFER_TOP/selftests/guest/common.sh"
# shellcheck source=bench-smoke.sh
source "$KXFER_TOP/selftests/guest/bench-smoke.sh"
# shellcheck source=fuzz.sh
source "$KXFER_TOP/selftests/guest/fuzz.sh"

cd "$KXFER_TOP" || exit 1

# --- the machine -----------------------------------------------------------

# The CPU model the rig gives the guest keeps EFLAGS right across
# cmpxchg16b, or has none (vm-run: QEMU 7.2's TCG does not, and SLUB's
# fast path then corrupts a kernel now and then).
t_cpu_flags() {
	selftests/cpu_flags
}

# --- module ----------------------------------------------------------------

t_module_load() {
	kxfer_load
	lsmod | grep -q '^kxfer '
	test -c /dev/kxfer
	dmesg | grep 'kxfer: loaded, API version 1' >/dev/null
	kxferctl dev show rxe0 >/dev/null
}

# A module parameter out of range: the load fails with EINVAL and says
# which, and nothing is left behind.
t_module_bad_param() {
	local out p

	rmmod kxfer
	# loaded again whatever happens, for the tests after this one
	defer kxfer_load
	for p in ack_timeout=7 ack_timeout=25 keepalive_ms=0 \
		keepalive_timeout_ms=0 keepalive_timeout_ms=86400001 \
		qp_inflight_mb=0 qp_inflight_mb=1025 wire_features=64 \
		mr_max_pages=0 mr_max_pages=513 mr_max_page=4097; do
		out=$(insmod "$KXFER_MODULE" "$p" 2>&1) && {
			echo "insmod $p succeeded"
			exit 1
		}
		echo "insmod $p: $out"
		# EINVAL: kmod's insmod says "Invalid parameters", busybox's
		# strerror's "Invalid argument"
		echo "$out" | grep -Eq 'Invalid (parameters|argument)'
		check_fail grep -q '^kxfer ' /proc/modules
		test ! -e /dev/kxfer
	done
	dmesg | grep 'kxfer: ack_timeout must be in 8..24' >/dev/null
	insmod "$KXFER_MODULE" ack_timeout=8
	grep -qx 8 /sys/module/kxfer/parameters/ack_timeout
	rmmod kxfer
	kxfer_load
	kxferctl dev show rxe0 >/dev/null
}

# param_refused P NAME EINVAL_MSG VALUE...: each write fails with EINVAL
# and NAME keeps its value
param_refused() {
	local p=$1 name=$2 einval=$3 v bad out

	shift 3
	v=$(cat "$p/$name")
	for bad in "$@"; do
		out=$( (echo "$bad" >"$p/$name") 2>&1) && {
			echo "$name=$bad accepted"
			return 1
		}
		echo "$name=$bad: $out"
		echo "$out" | grep -q "$einval"
		grep -qx "$v" "$p/$name"
	done
}

# param_takes P NAME VALUE...: each write holds, then the first value is
# back
param_takes() {
	local p=$1 name=$2 v v2

	shift 2
	v=$(cat "$p/$name")
	for v2 in "$@"; do
		echo "$v2" >"$p/$name"
		grep -qx "$((v2))" "$p/$name"
	done
	echo "$v" >"$p/$name"
	grep -qx "$v" "$p/$name"
}

# Parameters written at run time, each with its range: the keepalive
# interval and timeout 1 ms to a day, the data in flight per QP 1 to 1024
# MiB, an export MR's pages 1 to 512, the protocol features only bits
# this kxfer knows (0..4).  A value out of range fails with EINVAL and the
# parameter keeps its value (a keepalive timeout of 0 would end every
# session at once).
t_runtime_params() {
	local p=/sys/module/kxfer/parameters name max einval

	# once: it costs a second or more on TCG
	einval=$(_kx_strerror EINVAL)
	for name in keepalive_ms:86400000 keepalive_timeout_ms:86400000 \
		qp_inflight_mb:1024 mr_max_pages:512; do
		max=${name#*:}
		name=${name%:*}
		param_refused $p "$name" "$einval" 0 $((max + 1)) -1 x
		param_takes $p "$name" 1 "$max"
	done
	param_refused $p wire_features "$einval" 64 0x80000000 -1 x
	param_takes $p wire_features 0 1 2 0x3 4 7 8 15 16 31 32 63
	param_refused $p mr_max_page "$einval" 0 2048 4097 12288 2147483648 -1 x
	param_takes $p mr_max_page 4096 8192 2097152 1073741824
}

t_rmmod_refused_while_open() {
	exec 3<>/dev/kxfer
	! rmmod kxfer 2>/dev/null || { echo "rmmod succeeded with /dev/kxfer open"; exit 1; }
	lsmod | grep -q '^kxfer '
	exec 3>&-
	rmmod kxfer
	check_fail grep -q '^kxfer ' /proc/modules
	test ! -e /dev/kxfer
	kxfer_load
}

t_unload_load_cycles() {
	local i

	for i in 1 2 3; do
		rmmod kxfer
		kxfer_load
	done
	kxferctl dev show rxe0 >/dev/null
}

# --- kxferctl usage ----------------------------------------------------------

t_usage() {
	kxferctl help >/dev/null
	kxferctl dev help >/dev/null
	expect_status 2 kxferctl
	expect_status 2 kxferctl bogus
	expect_status 2 kxferctl dev frob
	expect_status 2 kxferctl pool add p0
	expect_status 2 kxferctl pool add p0 size 12Q
	expect_status 2 kxferctl pool add p0 size
	expect_status 2 kxferctl export add e0 pool p0 access exec
	expect_status 2 kxferctl -Z dev show
	# abbreviations
	kxferctl d s rxe0 >/dev/null
	kxferctl dev sh >/dev/null
}

# --- devices ---------------------------------------------------------------

t_dev_show_json() {
	local j guest raw

	raw=$(kxferctl -j dev show rxe0)
	j=$(kxferctl -j dev show)
	echo "$j" | jq -e 'type == "array" and length >= 1' >/dev/null
	j=$(echo "$j" | jq -e '.[] | select(.name == "rxe0")')
	echo "$j"
	# Every field the issue asks for, with the right type.
	echo "$j" | jq -e '
		(.node_guid | type == "string") and
		(.max_fast_reg_page_list_len | type == "number") and
		(.max_send_sge | type == "number") and
		(.max_qp_wr | type == "number") and
		(.max_mr_size | type == "number") and
		(.ports | length == 1) and
		(.ports[0].port == 1) and
		(.ports[0].state == "ACTIVE") and
		(.ports[0].link_layer == "Ethernet") and
		(.ports[0].active_mtu | type == "number") and
		(.ports[0].gid_tbl_len | type == "number") and
		(.ports[0].netdev == "eth0")' >/dev/null

	# Cross-check against ibv_devinfo and rdma(8).
	guest=$(ibv_devinfo -d rxe0 | awk '/node_guid:/ { print $2 }')
	[ "$(echo "$j" | jq -r .node_guid)" = "$guest" ] ||
		{ echo "node_guid differs from ibv_devinfo ($guest)"; exit 1; }
	rdma -j dev show rxe0 | jq -e --arg g "$guest" '.[0].node_guid == $g' >/dev/null
	devinfo_eq "$raw" max_qp_wr max_qp_wr
	devinfo_eq "$raw" max_mr_size max_mr_size
	devinfo_eq "$raw" gid_tbl_len gid_tbl_len
	[ "$(echo "$j" | jq -r .ports[0].active_mtu)" = \
	  "$(ibv_devinfo -d rxe0 | awk '/active_mtu:/ { print $2 }')" ] ||
		{ echo "active_mtu differs from ibv_devinfo"; exit 1; }
	# rxe's documented limits (GUESTS.md)
	echo "$j" | jq -e '.max_fast_reg_page_list_len == 512 and
			   .max_send_sge == 32 and .max_qp_wr == 1048576' >/dev/null
}

t_dev_show_text() {
	local out

	out=$(kxferctl dev show rxe0)
	echo "$out"
	grep -q 'rxe0' <<<"$out"
	grep -q 'ACTIVE' <<<"$out"
	kxferctl -j -p dev show rxe0 | jq -e '.[0].name == "rxe0"' >/dev/null
}

t_dev_show_unknown() {
	expect_error 'no such RDMA device' kxferctl dev show nosuchdev0
}

t_dev_remove_add_monitor() {
	local mon=/tmp/monitor.$$

	kxferctl -j monitor >"$mon" 2>&1 &
	defer kill $!
	sleep 1
	rdma link delete rxe0
	defer_readd_rxe0
	busywait 10000 grep -q '"dev-del"' "$mon"
	jq -e 'select(.event == "dev-del") | .name == "rxe0"' "$mon" >/dev/null
	expect_status 1 kxferctl dev show rxe0
	[ "$(kxferctl -j dev show | jq 'map(select(.name == "rxe0")) | length')" = 0 ]

	rdma link add rxe0 type rxe netdev "$KXFER_NETDEV"
	busywait 10000 grep -q '"dev-add"' "$mon"
	jq -e 'select(.event == "dev-add") | .name == "rxe0"' "$mon" >/dev/null
	busywait 10000 port_active rxe0
	kxferctl -j dev show rxe0 | jq -e '.[0].ports[0].state == "ACTIVE"' >/dev/null
	cat "$mon"
}

# --- pools and exports through kxferctl -------------------------------------

t_pool_cli() {
	local j

	kxferctl pool add cli0 size 8M owner 1000 group 1000 mode 0640
	defer kxferctl pool del cli0
	j=$(kxferctl -j pool show cli0)
	echo "$j"
	echo "$j" | jq -e '.[0] | .name == "cli0" and .size == 8388608 and
		.owner == 1000 and .group == 1000 and .mode == "0640" and
		.attach_count == 0 and .export_count == 0 and
		([.chunks[] | .size * .count] | add) == 8388608 and
		(.devices | map(.name) | index("rxe0") != null)' >/dev/null
	kxferctl pool show cli0
	expect_error 'pool already exists' kxferctl pool add cli0 size 4K
	kxferctl -j pool show | jq -e 'map(select(.name == "cli0")) | length == 1' >/dev/null
}

t_export_cli() {
	local j

	kxferctl pool add exp0 size 1M
	defer kxferctl pool del exp0
	kxferctl export add kv0 pool exp0 offset 4096 len 65536 peer node-b access read,write
	defer kxferctl export del kv0
	kxferctl export add kv1 pool exp0 access write
	defer kxferctl export del kv1
	j=$(kxferctl -j export show)
	echo "$j"
	echo "$j" | jq -e 'map(select(.name == "kv0"))[0] |
		.pool == "exp0" and .offset == 4096 and .len == 65536 and
		.peer == "node-b" and (.access | index("read") != null) and
		(.access | index("write") != null)' >/dev/null
	echo "$j" | jq -e 'map(select(.name == "kv1"))[0] | .len == 1048576' >/dev/null
	kxferctl -j pool show exp0 | jq -e '.[0].export_count == 2' >/dev/null
	expect_error 'pool is exported' kxferctl pool del exp0
	expect_error 'export range is outside the pool' \
		kxferctl export add kv2 pool exp0 offset 1M access read
	expect_error 'name may hold only' \
		kxferctl export add kv2 pool exp0 access read peer 'a b'
	expect_error 'export already exists' \
		kxferctl export add kv0 pool exp0 access read
	kxferctl export show kv0
}

# The 256 MiB pool of the issue: how long allocation and mapping take.
t_pool_256m_timing() {
	local j

	kxferctl pool add big size 256M
	defer kxferctl pool del big
	j=$(kxferctl -j pool show big)
	echo "$j"
	echo "$j" | jq -e '.[0] | .alloc_ns > 0 and .map_ns >= 0 and
		([.chunks[] | .size * .count] | add) == 268435456' >/dev/null
	echo "$j" | jq -r '.[0] | "256 MiB pool: alloc \(.alloc_ns / 1e6) ms, map \(.map_ns / 1e6) ms, chunks \(.chunks)"' |
		tee "$KXFER_OUT/pool-256m.txt"
}

# A device removal unmaps pools there and leaves them usable elsewhere.
t_pool_survives_device_removal() {
	kxferctl pool add surv size 4M
	defer kxferctl pool del surv
	kxferctl -j pool show surv | jq -e '.[0].devices | map(.name) | index("rxe0") != null' >/dev/null
	rdma link delete rxe0
	defer_readd_rxe0
	kxferctl -j pool show surv | jq -e '.[0].devices | length == 0' >/dev/null
	# Still usable locally: attach, map, write, read (pool_test does it).
	"$KXFER_TOP/selftests/pool_test" -r kxfer.shared_between_processes
}

# --- pools over a process's own memory (upool_test) -------------------------
#
# upool_test reaches its own user pools through a session of this node to
# itself: "uself" (2 QPs), with the kernel pool "usrc" exported as
# "usrc-x" for the other side of each transfer.  kxfer_testbuf (built
# beside kxfer.ko from selftests/kmod) exports the dma-bufs that every
# kernel here lacks: on 6.1 any, on both one with no pages behind it.

UPOOL_TESTBUF=$(dirname "$KXFER_MODULE")/kxfer_testbuf.ko

_upool_peer_up() {
	kxferctl -j peer show uself 2>/dev/null | jq -e '.[0].state == "up" and
		(.[0].remote_exports | map(.name) | index("usrc-x")) != null' >/dev/null
}

_upool_no_peers() {
	[ "$(kxferctl -j peer show | jq length)" = 0 ]
}

t_upool_setup() {
	insmod "$UPOOL_TESTBUF"
	kxferctl pool add usrc size 4M mode 0666
	kxferctl export add usrc-x pool usrc access read,write,atomic
	kxferctl listen "$KXFER_SELF_ADDR" allow "$KXFER_SELF_ADDR/32"
	kxferctl peer add uself "$KXFER_SELF_ADDR" qps 2
	busywait 20000 _upool_peer_up
}

# A second session of the node to itself, "upoll", whose send completions
# its users poll (cq poll): the ring, upool and notify tests run on it
# again (KXFER_TEST_PEER), the ring's "close with jobs in flight" with
# nobody polling, so that only the session's poll work can end them.

_poll_peer_up() {
	kxferctl -j peer show upoll 2>/dev/null | jq -e '.[0].state == "up" and
		(.[0].remote_exports | map(.name) | index("usrc-x")) != null' >/dev/null
}

t_poll_setup() {
	expect_status 2 kxferctl peer add upbad "$KXFER_SELF_ADDR" cq bogus
	expect_status 2 kxferctl peer add upbad "$KXFER_SELF_ADDR" cq
	check_fail kxferctl peer show upbad
	kxferctl peer add upoll "$KXFER_SELF_ADDR" qps 2 cq poll
	busywait 20000 _poll_peer_up
	kxferctl -j peer show upoll | jq -e '.[0].cq == "poll"' >/dev/null
	kxferctl -j peer show uself | jq -e '.[0].cq == "irq"' >/dev/null
	kxferctl peer show upoll | grep -q ' cq poll'
}

_poll_work_count() {
	kxferctl -j stats show upoll | jq -e '.[0].polled_work'
}

# Polled sessions were polled, by users and by the work; the others never.
t_poll_counts() {
	local j w0 w1

	defer kxferctl peer del upoll

	# A sleeping REAP on a polled session polls after a first sleep, while
	# it spins, and between slices of sleep (event.c): of 200 one-at-a-time jobs, the submitter (its
	# SUBMIT and its sleeping REAP) reaps most itself; a reap that only
	# slept would leave those that were not done at the end of SUBMIT to
	# the poll work's tick (counted apart), whatever the machine's speed.
	local u0 u1
	u0=$(kxferctl -j stats show upoll | jq -e '.[0].polled')
	w0=$(_poll_work_count)
	j=$("$KXFER_TOP/tools/kxfer-bench/kxfer-bench" -j -p upoll -P usrc \
		-e usrc-x -o write -s 8 -n 200 -m block lat)
	echo "$j"
	echo "$j" | jq -e '.[0].variant == "block" and .[0].jobs == 200' >/dev/null
	u1=$(kxferctl -j stats show upoll | jq -e '.[0].polled')
	w1=$(_poll_work_count)
	echo "blocking lat: polled $u0 -> $u1, polled_work $w0 -> $w1"
	((u1 - u0 > w1 - w0))

	j=$(kxferctl -j stats show)
	echo "$j" | jq -c '.[] | {name, id, jobs, polled, polled_work}'
	echo "$j" | jq -e '[.[] | select(.name == "upoll")][0] |
		.polled > 0 and .polled_work > 0' >/dev/null
	echo "$j" | jq -e '[.[] | select(.name != "upoll")] |
		map(.polled + .polled_work) | add == 0' >/dev/null
	# Idle, with nobody polling: keepalive's sends still complete (the
	# work reaps them) and the session stays up.
	w0=$(_poll_work_count)
	sleep "$(_kx_slow 3)"
	w1=$(_poll_work_count)
	echo "polled_work $w0 -> $w1 over 3 s idle"
	((w1 > w0))
	kxferctl -j peer show upoll | jq -e '.[0].state == "up"' >/dev/null
}

# post_spread: a SUBMIT of several jobs posts each QP's chain on the QP's
# home CPU, by a work item when the submitter runs elsewhere (handoffs);
# 1 always, 0 never, -1 (the default) on rxe before Linux 6.4, whose QPs
# work on the CPU that posts.  The jobs of every mode all complete (the
# bench stops at the first that fails).  uself has two QPs, whose homes
# are the guest's two CPUs: whichever CPU the submitter is on, the other
# QP's posts are handed off.  Values outside -1..1 are refused.
_spread_param=/sys/module/kxfer/parameters/post_spread

_handoffs() {
	kxferctl -j stats show uself | jq -e '.[0].qp_list | map(.handoffs) | add'
}

# _spread_run MODE WANT: under MODE, a second of 4 KiB WRITEs in SUBMITs
# of 16; WANT "more" or "none" new handoffs
_spread_run() {
	local h0 h1 j

	echo "$1" >"$_spread_param"
	h0=$(_handoffs)
	j=$("$KXFER_TOP/tools/kxfer-bench/kxfer-bench" -j -t 1 -p uself -P usrc \
		-e usrc-x -o write -s 4K -q 64 -b 16 rate)
	h1=$(_handoffs)
	echo "post_spread=$1: $(echo "$j" | jq -c '.[0] | {jobs, bytes}')," \
		"handoffs $h0 -> $h1 (want $2)"
	echo "$j" | jq -e '.[0].jobs > 0 and .[0].bytes == .[0].jobs * 4096' >/dev/null
	if [ "$2" = more ]; then
		((h1 > h0))
	else
		((h1 == h0))
	fi
}

t_post_spread() {
	local auto=none

	[ "$(cat "$_spread_param")" = -1 ]
	defer sh -c "echo -1 >$_spread_param"
	check_fail sh -c "echo 2 >$_spread_param"
	check_fail sh -c "echo -2 >$_spread_param"
	check_fail sh -c "echo x >$_spread_param"
	[ "$(cat "$_spread_param")" = -1 ]
	[ "$(nproc)" -ge 2 ] || { echo "needs two CPUs, has $(nproc)"; return 1; }
	kxferctl -j stats show uself | jq -e '.[0].qp_list | length == 2' >/dev/null
	_spread_run 1 more
	_spread_run 0 none
	case $(uname -r) in
	6.1.*) auto=more ;;
	esac
	_spread_run -1 "$auto"
}

t_upool_cleanup() {
	local j

	kxferctl peer del uself
	busywait 15000 _upool_no_peers
	kxferctl listen del "$KXFER_SELF_ADDR"
	kxferctl export del usrc-x
	kxferctl pool del usrc
	# Nothing of a process's memory is left pinned or exported.
	j=$(kxferctl -j pool show)
	echo "$j" | jq -e 'map(select(.kind != "kernel")) | length == 0' >/dev/null
	kxferctl -j export show | jq -e 'map(select(.pid != null)) | length == 0' >/dev/null
	# Every buffer of the test exporter was released.
	rmmod kxfer_testbuf
}

# upool_test's bigpool fixture: a 256 GiB dma-buf pool of 6 MiB of memory,
# exported whole in memory regions of 2 MiB pages (256 of them), offsets
# far beyond 32 bits, and one of 513 GiB, longer than one export of 4 KiB
# pages can map.  Its budget is above the default pool_mem_max (half
# the guest's memory): kxfer is loaded again with 600 GiB for it, then as
# before, whatever happens.
_upool_big_restore() {
	kxferctl peer del uself 2>/dev/null || true
	busywait 15000 _upool_no_peers
	kxferctl listen del "$KXFER_SELF_ADDR" 2>/dev/null || true
	kxferctl export del usrc-x 2>/dev/null || true
	kxferctl pool del usrc 2>/dev/null || true
	# every buffer of the test exporter released
	! grep -q '^kxfer_testbuf ' /proc/modules || rmmod kxfer_testbuf
	rmmod kxfer
	kxfer_load
}

t_upool_big() {
	local max=$((600 << 30)) gib=256 mrp=512

	# rxe since 6.4: 16 bytes per 4 KiB of every MR, each MR's in one
	# allocation (upool_test.c, bigpool)
	[[ $(uname -r) == 6.1.* ]] || { gib=8; mrp=32; }
	rmmod kxfer
	defer _upool_big_restore
	kxfer_load pool_mem_max=$max mr_max_pages=$mrp
	[ "$(cat /sys/module/kxfer/parameters/pool_mem_max)" = "$max" ]
	t_upool_setup
	KXFER_BIG_GIB=$gib "$KXFER_TOP/selftests/upool_test" -f bigpool
}

t_resources_clean() {
	# No QP, MR, CQ or PD of kxfer's is left behind.
	local r

	rdma resource show
	for r in qp cq mr pd; do
		if rdma resource show "$r" | grep kxfer; then
			echo "kxfer left $r objects behind"
			exit 1
		fi
	done
}

t_module_unload() {
	kxferctl pool add last size 1M
	rmmod kxfer
	check_fail grep -q '^kxfer ' /proc/modules
	dmesg | grep 'kxfer: unloaded' >/dev/null
	test ! -e /dev/kxfer
}

ktest cpu_flags t_cpu_flags
ktest module_load t_module_load
ktest module_bad_param t_module_bad_param
ktest runtime_params t_runtime_params
ktest kxferctl_usage t_usage
ktest dev_show_json t_dev_show_json
ktest dev_show_text t_dev_show_text
ktest dev_show_unknown t_dev_show_unknown
ktap_run "$KXFER_TOP/selftests/pool_test"
ktap_run "$KXFER_TOP/selftests/netlink_test"
ktest pool_cli t_pool_cli
ktest export_cli t_export_cli
ktest pool_256m_timing t_pool_256m_timing
ktest pool_survives_device_removal t_pool_survives_device_removal
ktest dev_remove_add_monitor t_dev_remove_add_monitor
# Sessions on demand, before any other session is here: a session the
# node at an address opened to this one is what a CONNECT there finds.
ktap_run "$KXFER_TOP/selftests/connect_test"
# Hostile input and local security (fuzz.sh); the ioctl fuzzer ends with
# an unload and a load of the module.
ktap_run "$KXFER_TOP/selftests/sec_test"
ktest upool_setup t_upool_setup
ktap_run "$KXFER_TOP/selftests/upool_test" -F bigpool
ktap_run "$KXFER_TOP/selftests/notify_test"
ktap_run "$KXFER_TOP/selftests/ring_test"
ktest poll_setup t_poll_setup
KXFER_TEST_PEER=upoll KXFER_TEST_PEER_OPTS="cq poll" KTAP_NAME=upool_test_poll \
	ktap_run "$KXFER_TOP/selftests/upool_test" -F bigpool
KXFER_TEST_PEER=upoll KXFER_TEST_PEER_OPTS="cq poll" KTAP_NAME=notify_test_poll \
	ktap_run "$KXFER_TOP/selftests/notify_test"
KXFER_TEST_PEER=upoll KXFER_TEST_PEER_OPTS="cq poll" KTAP_NAME=ring_test_poll \
	ktap_run "$KXFER_TOP/selftests/ring_test"
ktest poll_counts t_poll_counts
ktest post_spread t_post_spread
ktest upool_cleanup t_upool_cleanup
ktest upool_big t_upool_big
ktest fuzz_nl t_fuzz_nl
ktest fuzz_ioctl t_fuzz_ioctl
ktest rmmod_refused_while_open t_rmmod_refused_while_open
ktest unload_load_cycles t_unload_load_cycles
ktest bench_smoke t_bench_smoke
ktest resources_clean t_resources_clean
ktest module_unload t_module_unload
exit 0
