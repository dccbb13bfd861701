# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# fuzz.sh: the fuzzers and the local security checks, as ktest functions;
# sourced by suite-1.sh (one guest) after lib.sh and common.sh.
#
#   t_fuzz_ioctl     kxferctl -j shows no kernel address; selftests/
#                    fuzz_ioctl against a session to this guest itself
#                    (rxe loopback), with pools of its own memory and
#                    dma-bufs (udmabuf, dma-heap: 6.12) and their exports,
#                    then a normal job, no pool or export of a process
#                    left, an unload and a clean kernel log
#   t_fuzz_nl        selftests/fuzz_nl, root and uid 65534; the objects
#                    are back to what they were
#   (selftests/sec_test, run by ktap_run, checks local security: pool
#   access, guessed handles, EPERM, kernel addresses in replies;
#   t_fuzz_ioctl checks kxferctl -j output while the session is up)
#
# Bounds: KXFER_FUZZ_SEED (default: fixed, so that a run replays),
# KXFER_SOAK=1 for long runs (minutes instead of ~40 s).

FUZZ_SEED=${KXFER_FUZZ_SEED:-20250101}

fuzz_peer_up() {
	kxferctl -j peer show self 2>/dev/null |
		grep -q '"state":"up".*"remote_exports":\[.*"name":"fze".*"name":"fzro"'
}

fuzz_no_peers() {
	[ "$(kxferctl -j peer show)" = "[]" ]
}

# The objects the ioctl fuzzer works on: a pool, two exports of it, and a
# session to this guest through a listener on its own address.
fuzz_objects_add() {
	kxferctl pool add fz0 size 4M mode 0666
	kxferctl export add fze pool fz0 access read,write
	kxferctl export add fzro pool fz0 offset 1M len 64K access read
	kxferctl listen "$KXFER_SELF_ADDR"
	kxferctl peer add self "$KXFER_SELF_ADDR" qps 2
	# CONNECT to this address finds the session "self" (makes none)
	kxferctl connect allow "$KXFER_SELF_ADDR"
	busywait 20000 fuzz_peer_up
}

fuzz_objects_del() {
	lsmod | grep -q '^kxfer ' || return 0
	kxferctl -j pool show fz0 >/dev/null 2>&1 || return 0
	local n t0=$SECONDS

	kxferctl peer del self || true
	# the accepting side of the loopback: delete it too, not to wait
	for n in $(kxferctl -j peer show | grep -o '{"name":"[^"]*","role"' |
		   cut -d'"' -f4); do
		kxferctl peer del "$n" || true
	done
	slowwait 20 fuzz_no_peers || kxferctl -j peer show
	echo "sessions deleted in $((SECONDS - t0)) s"
	kxferctl listen del "$KXFER_SELF_ADDR" || true
	kxferctl connect del "$KXFER_SELF_ADDR" || true
	kxferctl export del fze || true
	kxferctl export del fzro || true
	kxferctl pool del fz0 || true
}

t_fuzz_ioctl() {
	# (the fuzzer keeps to --time now; it used to run on for as long again)
	local secs=20 iters=100000 threads=4 left n

	if [ "${KXFER_SOAK:-0}" = 1 ]; then
		secs=600 iters=100000000 threads=6
	fi
	kxfer_load
	kmsg_mark fuzz_ioctl
	fuzz_objects_add
	defer fuzz_objects_del
	# What the tool shows, with a session, its QPs and remote exports.
	fuzz_kaddr_json
	fuzz_ioctl --seed "$FUZZ_SEED" --threads "$threads" \
		--iterations "$iters" --time "$secs" --peer self \
		--pool fz0 --export fze --export-ro fzro --connect "$KXFER_SELF_ADDR"
	# Its exports come and go under jobs in flight, its files close under
	# them: withdrawals drain, so the session never went down (before
	# the drain, 7 to 29 resets a run, each costing every job on it).
	n=$(kxferctl -j peer show self | jq '.[0].reconnects')
	echo "session resets under the fuzzer: $n"
	[ "$n" = 0 ] || { kxferctl -j peer show self; return 1; }
	# The module still works: a normal job, read back.
	busywait 30000 fuzz_peer_up
	xfer fill fz0 0 4096 char:Z
	xfer job self fze fz0 write 0:2097152:4096
	xfer check fz0 2097152 4096 char:Z
	fuzz_objects_del
	slowwait 20 fuzz_no_peers
	# No object is left: the pools and exports are those before, and
	# none of a process's (the fuzzer's user pools and their exports).
	left=$(kxferctl -j pool show | jq -c 'map(select(.name == "fz0" or .kind != "kernel"))')
	[ "$left" = "[]" ] || { echo "pools left: $left"; return 1; }
	left=$(kxferctl -j export show | jq -c 'map(select((.name | startswith("fz")) or .pid != null))')
	[ "$left" = "[]" ] || { echo "exports left: $left"; return 1; }
	# It unloads, and the kernel said nothing bad.
	rmmod kxfer
	check_fail grep -q '^kxfer ' /proc/modules
	# loaded again before the check, so that a report it finds fails
	# this test only, not every test after it
	kxfer_load
	kmsg_clean fuzz_ioctl
}

t_fuzz_nl() {
	local secs=8 iters=100000 pools exports

	if [ "${KXFER_SOAK:-0}" = 1 ]; then
		secs=300 iters=100000000
	fi
	kxfer_load
	kmsg_mark fuzz_nl
	pools=$(kxferctl -j pool show | jq -c 'map(.name) | sort')
	exports=$(kxferctl -j export show | jq -c 'map(.name) | sort')
	# root, then uid 65534; it removes what it made and compares
	fuzz_nl -s "$FUZZ_SEED" -i "$iters" -T "$secs" -u
	[ "$(kxferctl -j pool show | jq -c 'map(.name) | sort')" = "$pools" ]
	[ "$(kxferctl -j export show | jq -c 'map(.name) | sort')" = "$exports" ]
	slowwait 20 fuzz_no_peers
	# The module still works.
	kxferctl pool add nzok size 64K
	kxferctl export add nzoke pool nzok access read
	kxferctl export del nzoke
	kxferctl pool del nzok
	kmsg_clean fuzz_nl
}

# kxferctl -j shows no kernel address: no number at or above
# 0xffff800000000000 (but ~0 and -errno), no 0xffff... text.
fuzz_no_kaddr_json() {
	local what=$1 out

	out=$(kxferctl -j "$what" show)
	# (no jq here: its start-up alone takes seconds under TCG)
	[[ $out == \[* ]]
	if grep -Eio '0x?ffff[89a-f][0-9a-f]{11}' <<<"$out"; then
		echo "kxferctl -j $what show prints a kernel address"
		return 1
	fi
	if grep -Eo '[0-9]{19,20}' <<<"$out" |
		awk '$1 >= 18446603336221196288 && $1 < 18446744073708503040 { bad = 1; print } END { exit !bad }'; then
		echo "kxferctl -j $what show prints a kernel address (decimal)"
		return 1
	fi
}

# The kxferctl -j output of every object kind; the objects of
# fuzz_objects_add exist.
fuzz_kaddr_json() {
	local w

	for w in dev pool export listen peer; do
		fuzz_no_kaddr_json "$w"
	done
	kxferctl -j peer show self | grep -q '"qp_list":\[{"index":0,.*{"index":1,'
}
