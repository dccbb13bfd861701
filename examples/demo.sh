#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# demo.sh: seed 003's KV push from a prefill node to a decode node, on
# kxfer, between two guests (make demo; examples/run-demo boots them).
#
# Both guests run this script: guest a (10.99.0.1) is the decode node,
# guest b (10.99.0.2) the prefill node.  They meet at a barrier before
# every step; guest a prints the step's title.  The programs are
# kv-decode and kv-prefill (this folder); the set-up is kxferctl.
#
#   1. decode creates its KV pool, exports it to prefill (write only),
#      listens
#   2. prefill creates its pool and inbox, connects, learns the export
#      by name: a length and an access, never an address
#   3. request 1: decode allocates blocks and writes the block list into
#      prefill's inbox (over kxfer, with a notification); prefill pushes
#      the KV layer by layer, one job per layer, the notification on the
#      last; decode checks every byte and shows what landed; prefill
#      shows the work requests against the uncoalesced count: the plan
#      it computed and the kernel's counters (kxferctl stats show)
#   4. a buggy block list names a block past the end of decode's export:
#      the kernel refuses the job (ERANGE), nothing is sent
#   5. decode withdraws its export while prefill holds a handle to it:
#      prefill's push is refused (ESTALE; or EACCES from decode's NIC if
#      the job raced the withdrawal)
#   6. decode exports again; request 4 is pushed and checked: everything
#      kept working
#   7. the administrator's pools and exports go: kv-decode --own-memory
#      keeps its KV cache in memory it allocated itself (posix_memalign),
#      makes the pool of it and exports it under the same names, and so
#      does kv-prefill; request 5 is pushed from prefill's own memory
#      into decode's and checked there, no copy; kxferctl shows decode's
#      pool as a process's (kind user, its pid) while it runs, and
#      nothing once it has ended
#   8. the same into a udmabuf over a memfd (kv-decode --udmabuf, a
#      dma-buf pool), checked through the memfd, from prefill's memfd:
#      request 6; only where the kernel has /dev/udmabuf (6.12: 6.1's
#      Debian kernel has no CONFIG_UDMABUF, the step says so)
#   9. the same push through NIXL (examples/kv-nixl.py): each node runs
#      an inference engine's side of it on NIXL's Python API
#      (nixl_agent) and the KXFER backend plugin: it registers its KV
#      cache (its own memory), the agents exchange metadata through
#      /shared, decode sends the block list in a NIXL notification,
#      prefill posts one WRITE request per layer, the notification on
#      the last, and checks them until done; decode checks every byte:
#      request 7.  make demo builds NIXL and the plugin; without them
#      the step fails, unless KXFER_DEMO_NIXL=0 asked to leave it out
#  10. a peer over two rails (only with two NICs a guest, as run-demo
#      boots them): prefill adds decode again over both of its addresses
#      (rxe0 and rxe1, each its subnet), request 8 goes over both rails;
#      then prefill's rxe1 is deleted, its rail goes down and request 9
#      is pushed and checked on the one left; rxe1 comes back, the rail
#      joins again and request 10 goes over both.  kxferctl peer show
#      lists the rails with their jobs, failovers and fences
#  11. everything is taken down; nothing is left in the RDMA stack
#
# Sourced by selftests/guest/suite-2.sh (t_demo), which runs demo_run
# as a test: every step asserts its outcome.

# shellcheck source-path=SCRIPTDIR source=../selftests/rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source-path=SCRIPTDIR source=../selftests/guest/common.sh
source "$KXFER_TOP/selftests/guest/common.sh"
export PATH="$KXFER_TOP/examples:$PATH"

DEMO_DECODE_ADDR=10.99.0.1
DEMO_PREFILL_ADDR=10.99.0.2
DEMO_DECODE_ADDR2=10.98.0.1	# the second NIC's (step 10)
DEMO_PREFILL_ADDR2=10.98.0.2
DEMO_TMP=/tmp/kxfer-demo
DEMO_QPS=${DEMO_QPS:-1}	# QPs of the session (kv-prefill works with any)

demo_is_decode() { [ "$KXFER_GUEST" = a ]; }

# demo_step N TITLE: both guests finish the step before; the decode
# guest prints the title; both start step N
demo_step() {
	barrier "demo-end-$(($1 - 1))" 60
	demo_is_decode && printf '\n=== step %s: %s\n' "$1" "$2"
	barrier "demo-step-$1" 60
}

# demo_cmd CMD...: show a command, then run it
demo_cmd() {
	echo "# $*"
	"$@"
}

# (grep, not jq: jq's start-up is slow under TCG)
demo_peer_up() {
	kxferctl -j peer show "$1" 2>/dev/null | grep -q '"state":"up"'
}

demo_no_peers() {
	! kxferctl -j peer show | grep -q '"state"'
}

demo_has_rexport() {
	kxferctl -j peer show "$1" 2>/dev/null |
		grep -q "\"remote_exports\":\[.*{\"name\":\"$2\""
}

# demo_no_rexport PEER NAME: the session is up and has no export NAME
demo_no_rexport() {
	demo_peer_up "$1" && ! demo_has_rexport "$@"
}

# What the plan depends on, as kv-prefill -P wants it (see kv-plan.h).
demo_plan_spec() {
	local dev chunks

	dev=$(kxferctl -j dev show)
	chunks=$(kxferctl -j pool show kv-prefill |
		jq -r '[.[0].chunks[] | "\(.size)x\(.count)"] | join(",")')
	echo "$dev" | jq -r --arg c "$chunks" --arg s \
		"$(cat /sys/module/kxfer/parameters/stripe)" '.[0] |
		"max_sge=\([.max_send_sge, 32] | min) stripe=\($s)" +
		" mr=\([.max_fast_reg_page_list_len, 512] | min * 4096) chunks=\($c)"'
}

# demo_counters PEER: jobs, segments in and work requests out of the
# session PEER so far (kxferctl stats show)
demo_counters() {
	kxferctl -j stats show "$1" | jq -r '.[0] | "\(.jobs) \(.segs) \(.wrs)"'
}

# demo_push_counted N ARGS...: demo_prefill N ARGS, then what the kernel
# counted for it, which must be what kv-prefill's plan said
demo_push_counted() {
	local before after jobs segs wrs plan

	read -ra before <<<"$(demo_counters decode)"
	demo_prefill "$@"
	read -ra after <<<"$(demo_counters decode)"
	jobs=$((after[0] - before[0]))
	segs=$((after[1] - before[1]))
	wrs=$((after[2] - before[2]))
	echo "prefill: the kernel counted $jobs jobs, $segs segments in, $wrs work requests out (kxferctl stats show decode)"
	plan=$(sed -n 's/^prefill: work requests: \([0-9]*\) planned.*/\1/p' \
		"$DEMO_TMP/prefill.$1.log")
	[ "$wrs" = "$plan" ] ||
		{ echo "prefill: but the plan said $plan"; return 1; }
}

# demo_prefill N ARGS...: run kv-prefill ARGS, passing the decode guest
# barrier demo-ready-N once it waits for the block list (or failed)
demo_prefill() {
	local n=$1 rc=0 log=$DEMO_TMP/prefill.$1.log

	shift
	rm -f "$DEMO_TMP/ready.$n" "$log"
	{
		kv-prefill -P "$DEMO_PLAN" "$@" && rc=0 || rc=$?
		echo "$rc" >"$DEMO_TMP/rc.$n"
	} | while IFS= read -r line; do
		echo "$line"
		echo "$line" >>"$log"
		if [[ $line == "prefill: ready"* ]]; then
			: >"$DEMO_TMP/ready.$n"
			# what to look at while kv-prefill runs (its own pool)
			[ -z "${DEMO_AT_READY:-}" ] || "$DEMO_AT_READY" "$n" || :
			barrier "demo-ready-$n" 60
		fi
	done
	rc=$(cat "$DEMO_TMP/rc.$n")
	if [ ! -e "$DEMO_TMP/ready.$n" ]; then
		: >"$KXFER_SHARED/demo-prefill-failed.$n"
		barrier "demo-ready-$n" 60 || true
	fi
	return "$rc"
}

# demo_decode N ARGS...: once prefill waits, run kv-decode ARGS
demo_decode() {
	local n=$1

	shift
	barrier "demo-ready-$n" 60
	if [ -e "$KXFER_SHARED/demo-prefill-failed.$n" ]; then
		echo "decode: prefill did not start; see its output"
		return 1
	fi
	kv-decode "$@" | tee "$DEMO_TMP/decode.$n.log"
}

demo_setup() {
	mkdir -p "$DEMO_TMP"
	rm -f "$DEMO_TMP"/*
	if demo_is_decode; then
		demo_step 1 "decode creates its KV pool, exports it to prefill (write only), listens"
		kxfer_load node_name=decode
		demo_cmd kxferctl pool add kv-decode size 2052K
		demo_cmd kxferctl export add kv pool kv-decode len 2M peer prefill access write
		demo_cmd kxferctl listen "$DEMO_DECODE_ADDR" allow "$DEMO_PREFILL_ADDR/32"
		demo_cmd kxferctl pool show kv-decode
		demo_cmd kxferctl export show
	else
		demo_step 1
		kxfer_load node_name=prefill
	fi

	if demo_is_decode; then
		demo_step 2 "prefill creates its pool and inbox, connects, learns the export by name"
		barrier demo-connected 60
		busywait 20000 demo_peer_up prefill
		echo "decode: the session from prefill is up:"
		kxferctl peer show prefill
	else
		demo_step 2
		demo_cmd kxferctl pool add kv-prefill size 2052K
		demo_cmd kxferctl export add kv-inbox pool kv-prefill offset 2M len 4K peer decode access write
		demo_cmd kxferctl peer add decode "$DEMO_DECODE_ADDR" qps "$DEMO_QPS"
		busywait 20000 demo_peer_up decode
		busywait 10000 demo_has_rexport decode kv
		demo_cmd kxferctl peer show decode
		barrier demo-connected 60
		DEMO_PLAN=$(demo_plan_spec)
		echo "prefill: plan parameters: $DEMO_PLAN"
	fi
}

demo_request() {
	local n=$1

	shift
	if demo_is_decode; then
		demo_decode "$n" "$@"
	else
		demo_prefill "$n"
	fi
}

demo_push() {
	if demo_is_decode; then
		demo_step 3 "request 1: block list over kxfer, KV pushed layer by layer, one notification"
		demo_decode 3 -p prefill -r 1 -n 100
		grep -q '^decode: verified 409600 bytes' "$DEMO_TMP/decode.3.log"
	else
		demo_step 3
		demo_push_counted 3 -p decode
		demo_cmd kxferctl stats show decode
		grep -q '^prefill: pushed 8 layers, 409600 bytes, 112 segments in 8 jobs' "$DEMO_TMP/prefill.3.log"
		# rxe: 32 SGEs, 2 MiB MRs; the plan is the same for any chunks
		grep -q '^prefill: work requests: 48 planned' "$DEMO_TMP/prefill.3.log"
	fi
}

demo_refuse_range() {
	if demo_is_decode; then
		demo_step 4 "a block list with a block past the end of decode's export: refused (ERANGE)"
		demo_decode 4 -p prefill -r 2 -n 100 -b
	else
		demo_step 4
		demo_prefill 4 -p decode -x ERANGE
		grep -q '^prefill: layer 0: REFUSED ERANGE' "$DEMO_TMP/prefill.4.log"
		demo_peer_up decode
	fi
}

demo_refuse_stale() {
	if demo_is_decode; then
		demo_step 5 "decode withdraws its export while prefill holds a handle: refused (ESTALE)"
		# prefill has looked the export up, and waits: withdraw it
		barrier demo-ready-5 60
		demo_cmd kxferctl export del kv
		kv-decode -p prefill -r 3 -n 100 -s
	else
		demo_step 5
		# ESTALE when prefill's kernel has heard of the withdrawal;
		# EACCES when the job raced it and decode's NIC refused the
		# invalidated key (the session then reconnects).
		demo_prefill 5 -p decode -x ESTALE -x EACCES
		busywait 30000 demo_peer_up decode
		echo "prefill: the session to decode is up"
	fi
}

demo_push_again() {
	if demo_is_decode; then
		demo_step 6 "decode exports again; request 4 is pushed and checked"
		demo_cmd kxferctl export add kv pool kv-decode len 2M peer prefill access write
		barrier demo-reexported 60
		busywait 30000 demo_peer_up prefill
		demo_decode 6 -p prefill -r 4 -n 100
		grep -q '^decode: verified 409600 bytes' "$DEMO_TMP/decode.6.log"
	else
		demo_step 6
		barrier demo-reexported 60
		busywait 10000 demo_has_rexport decode kv
		demo_push_counted 6 -p decode
		grep -q '^prefill: work requests: 48 planned' "$DEMO_TMP/prefill.6.log"
	fi
}

# --- the KV cache in the programs' own memory (steps 7 and 8) ---

# demo_decode_started N: kv-decode of step N has exported, or has ended
demo_decode_started() {
	grep -q '^decode: exported' "$DEMO_TMP/decode.$1.log" ||
		[ -e "$DEMO_TMP/rc.$1" ]
}

# demo_own_decode N KIND ARGS...: run kv-decode -w ARGS, whose KV cache
# is its own memory: once it has exported, show its pool and check that
# kxferctl sees it as the process's (kind KIND, kv-decode's pid); when
# prefill waits, tell kv-decode to go (a line on its standard input);
# then the pool and its export must be gone with the process
demo_own_decode() {
	local n=$1 kind=$2 log=$DEMO_TMP/decode.$1.log fifo=$DEMO_TMP/go.$1
	local go job pid ok=0 rc

	shift 2
	barrier "demo-clear-$n" 60	# prefill has forgotten the last "kv"
	rm -f "$log" "$DEMO_TMP/rc.$n" "$fifo"
	mkfifo "$fifo"
	echo "# kv-decode $* -w"
	{
		kv-decode "$@" -w <"$fifo" && rc=0 || rc=$?
		echo "$rc" >"$DEMO_TMP/rc.$n"
	} | tee "$log" &
	job=$!
	exec {go}>"$fifo"	# kv-decode starts once this is open
	busywait 30000 demo_decode_started "$n" >/dev/null || :
	pid=$(sed -n 's/^decode: my KV cache is .* (pid \([0-9]*\))$/\1/p' "$log")
	if [ -n "$pid" ] && grep -q '^decode: exported' "$log"; then
		demo_cmd kxferctl pool show kv-decode
		demo_cmd kxferctl export show kv
		kxferctl -j pool show kv-decode | grep -q \
			"\"kind\":\"$kind\",\"pid\":$pid,\"comm\":\"kv-decode\"" &&
			ok=1
		echo "decode: kxferctl shows pool kv-decode as kv-decode's (pid $pid), kind $kind: $( ((ok)) && echo yes || echo NO)"
	fi
	barrier "demo-exported-$n" 60
	barrier "demo-ready-$n" 60
	# No go (end of file) if anything went wrong: kv-decode gives up.
	if ((ok)) && [ ! -e "$KXFER_SHARED/demo-prefill-failed.$n" ]; then
		(echo go >&"$go") 2>/dev/null || :
	fi
	exec {go}>&-
	wait "$job" || :
	rc=$(cat "$DEMO_TMP/rc.$n")
	((ok)) && [ "$rc" = 0 ] || return 1
	grep -q '^decode: verified 409600 bytes' "$log"
	# The pool and its export ended with the process.
	busywait 10000 sh -c '! kxferctl -j pool show | grep -q "\"name\":\"kv-decode\""'
	busywait 10000 sh -c '! kxferctl -j export show | grep -q "\"name\":\"kv\""'
	echo "decode: kv-decode has ended: kxferctl shows no pool kv-decode and no export kv"
}

# For DEMO_AT_READY: kv-prefill's own pool, as kxferctl sees it
demo_prefill_pool() {
	echo "# kxferctl pool show kv-prefill"
	kxferctl pool show kv-prefill </dev/null | tee "$DEMO_TMP/prefill-pool.$1"
}

# demo_own_prefill N ARGS...: once decode's own "kv" is there, push a
# request with kv-prefill ARGS (its own memory too)
demo_own_prefill() {
	local n=$1 log=$DEMO_TMP/prefill.$1.log

	shift
	busywait 30000 demo_no_rexport decode kv
	barrier "demo-clear-$n" 60
	barrier "demo-exported-$n" 60
	busywait 10000 demo_has_rexport decode kv
	DEMO_AT_READY=demo_prefill_pool demo_push_counted "$n" -p decode "$@"
	grep -q '^prefill: pushed 8 layers, 409600 bytes, 112 segments in 8 jobs' "$log"
	# 4 KiB chunks (kv-mem.c): the merged blocks are gathered again
	grep -q '^prefill: work requests: 48 planned (112 gather entries)' "$log"
	grep -q ' kind user pid [0-9]* comm kv-prefill .* chunks 4Kx513 ' \
		"$DEMO_TMP/prefill-pool.$n"
}

demo_own_memory() {
	if demo_is_decode; then
		demo_step 7 "decode's KV cache is its own memory (posix_memalign): request 5, no copy"
		echo "decode: the administrator's pool and export go; kv-decode brings its own memory, under the same names"
		demo_cmd kxferctl export del kv
		demo_cmd kxferctl pool del kv-decode
		demo_own_decode 7 user -p prefill -r 5 -n 100 --own-memory
	else
		demo_step 7
		demo_cmd kxferctl export del kv-inbox
		demo_cmd kxferctl pool del kv-prefill
		demo_own_prefill 7 --own-memory
	fi
}

# Both guests run the same kernel: both see whether it has udmabuf.
demo_udmabuf() {
	if demo_is_decode; then
		demo_step 8 "decode's KV cache is a udmabuf over a memfd, checked through the memfd: request 6"
	else
		demo_step 8
	fi
	if [ ! -e /dev/udmabuf ]; then
		demo_is_decode &&
			echo "decode: this kernel ($(uname -r)) has no /dev/udmabuf (CONFIG_UDMABUF is not set): skipped; make demo KXFER_DEMO_KVER=6.12 shows it"
		[ -z "${DEMO_REQUIRE_UDMABUF:-}" ]
		return
	fi
	if demo_is_decode; then
		demo_own_decode 8 dmabuf -p prefill -r 6 -n 100 --udmabuf
	else
		demo_own_prefill 8 --own-memory=memfd
	fi
}

# --- the same push through NIXL (step 9) ---

DEMO_NIXL_DIR=$KXFER_SHARED/kv-nixl	# where the agents meet

# demo_nixl_prefill: kv-nixl.py prefill, and what the kernel counted for
# it on the session to decode: one job per WRITE request
demo_nixl_prefill() {
	local before after log=$DEMO_TMP/prefill.9.log

	read -ra before <<<"$(demo_counters decode)"
	demo_cmd kv-nixl.py prefill --dir "$DEMO_NIXL_DIR" -t 120 2>&1 | tee "$log"
	read -ra after <<<"$(demo_counters decode)"
	echo "prefill: the kernel counted $((after[0] - before[0])) jobs, $((after[1] - before[1])) segments in, $((after[2] - before[2])) work requests out (kxferctl stats show decode)"
	grep -q '^prefill: pushed 8 layers, 409600 bytes, 112 descriptors in 8 WRITE requests' "$log"
	[ "$((after[0] - before[0]))" = 8 ]
}

# No pool or export of the agents is left once they have ended.
demo_nixl_gone() {
	! kxferctl -j pool show | grep -q '"kind":"user"' &&
		! kxferctl -j export show | grep -q '"name":"nx'
}

demo_nixl() {
	local me=prefill

	if demo_is_decode; then
		me=decode
		demo_step 9 "the same push through NIXL's Python API (nixl_agent) on the KXFER backend: request 7"
	else
		demo_step 9
	fi
	if [ "${KXFER_DEMO_NIXL:-1}" = 0 ]; then
		demo_is_decode && echo "decode: left out, as asked (KXFER_DEMO_NIXL=0)"
		return 0
	fi
	if ! nixl_env; then
		echo "$me: FAILED: no NIXL or no KXFER plugin in build/nixl (make demo builds both; KXFER_DEMO_NIXL=0 leaves this step out)"
		return 1
	fi
	if demo_is_decode; then
		echo "decode: NIXL from ${NIXL_PREFIX%/prefix}, the plugin from $NIXL_PLUGIN_DIR"
		demo_cmd kv-nixl.py decode --dir "$DEMO_NIXL_DIR" -r 7 -n 100 -t 120 2>&1 |
			tee "$DEMO_TMP/decode.9.log"
		grep -q '^decode: verified 409600 bytes' "$DEMO_TMP/decode.9.log"
	else
		demo_nixl_prefill
	fi
	busywait 10000 demo_nixl_gone
	echo "$me: the agent has ended: no pool or export of it is left"
}

# --- a peer over two rails (step 10) ---

demo_two_nics() { [ "${KXFER_NICS:-1}" = 2 ]; }

# demo_rail_is N STATE: prefill's rail N of decode is in STATE
demo_rail_is() {
	[ "$(kxferctl -j peer show decode |
		jq -r --argjson i "$1" '.[0].rails[] | select(.index == $i) | .state')" = "$2" ]
}

demo_rail_lines() {
	kxferctl peer show decode | grep -E '^ *rail ' || :
}

# decode: the sessions from prefill that are up
demo_from_prefill_up() {
	[ "$(kxferctl -j peer show |
		jq '[.[] | select(.name == "prefill" and .state == "up")] | length')" = "$1" ]
}

demo_rails() {
	local n

	if ! demo_two_nics; then
		if demo_is_decode; then
			demo_step 10 "a peer over two rails: skipped, the guests have one NIC (run-demo boots two)"
		else
			demo_step 10
		fi
		return 0
	fi
	if demo_is_decode; then
		demo_step 10 "a peer over two rails: prefill loses one, the pushes go on"
		echo "decode: the administrator's pool and export again, and a listener on the second NIC"
		demo_cmd kxferctl pool add kv-decode size 2052K
		demo_cmd kxferctl export add kv pool kv-decode len 2M peer prefill access write
		demo_cmd kxferctl listen "$DEMO_DECODE_ADDR2" allow "$DEMO_PREFILL_ADDR2/32"
		barrier demo-rails-listen 60
		busywait 30000 demo_from_prefill_up 2
		echo "decode: two sessions from prefill, one per rail:"
		kxferctl peer show | grep '^peer prefill'
		for n in 8 9 10; do
			# request 9: after prefill's rxe1 went; decode writes its
			# block list on a session of prefill's that is still up
			[ "$n" != 9 ] || {
				barrier demo-rail-gone 60
				busywait 30000 demo_from_prefill_up 1
			}
			[ "$n" != 10 ] || barrier demo-rail-back 90
			demo_decode "1$n" -p prefill -r "$n" -n 100
			grep -q '^decode: verified 409600 bytes' "$DEMO_TMP/decode.1$n.log"
		done
		barrier demo-rails-done 60
		demo_cmd kxferctl export del kv
		demo_cmd kxferctl pool del kv-decode
		return 0
	fi
	demo_step 10
	demo_cmd kxferctl pool add kv-prefill size 2052K
	demo_cmd kxferctl export add kv-inbox pool kv-prefill offset 2M len 4K peer decode access write
	barrier demo-rails-listen 60
	demo_cmd kxferctl peer del decode
	demo_cmd kxferctl peer add decode "$DEMO_DECODE_ADDR,$DEMO_DECODE_ADDR2" qps "$DEMO_QPS"
	busywait 30000 demo_rail_is 0 up
	busywait 30000 demo_rail_is 1 up
	busywait 10000 demo_has_rexport decode kv
	demo_rail_lines
	echo "prefill: request 8 over both rails"
	demo_prefill 18 -p decode
	demo_rail_lines
	demo_cmd rdma link delete rxe1
	busywait 30000 check_fail demo_rail_is 1 up
	demo_rail_lines
	barrier demo-rail-gone 60
	echo "prefill: request 9 on the rail that is left"
	demo_prefill 19 -p decode
	demo_cmd rdma link add rxe1 type rxe netdev "$KXFER_NETDEV2"
	busywait 60000 demo_rail_is 1 up
	echo "prefill: rail 1 is back"
	barrier demo-rail-back 90
	echo "prefill: request 10 over both rails again"
	demo_prefill 110 -p decode
	demo_rail_lines
	barrier demo-rails-done 60
	demo_cmd kxferctl export del kv-inbox
	demo_cmd kxferctl pool del kv-prefill
}

demo_teardown() {
	local r

	if demo_is_decode; then
		demo_step 11 "everything goes; nothing is left behind"
		barrier demo-peer-gone 60
		busywait 15000 demo_no_peers
		demo_cmd kxferctl listen del "$DEMO_DECODE_ADDR"
		! demo_two_nics || demo_cmd kxferctl listen del "$DEMO_DECODE_ADDR2"
	else
		demo_step 11
		demo_cmd kxferctl peer del decode
		barrier demo-peer-gone 60
	fi
	# the programs' pools went with them (steps 7, 8 and 9)
	if kxferctl -j pool show | grep -q '"name"'; then
		echo "a pool is left behind"
		return 1
	fi
	for r in qp cq mr pd cm_id; do
		if rdma resource show "$r" | grep kxfer; then
			echo "kxfer left $r objects behind"
			return 1
		fi
	done
	rmmod kxfer
	demo_is_decode && echo "decode: done: module unloaded, no QP, CQ, MR, PD or cm_id left"
	return 0
}

# The whole story; returns non-zero at the first step that fails.
demo_run() {
	demo_setup
	demo_push
	demo_refuse_range
	demo_refuse_stale
	demo_push_again
	demo_own_memory
	demo_udmabuf
	demo_nixl
	demo_rails
	demo_teardown
}

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
	cd "$KXFER_TOP" || exit 1
	set -eE -o pipefail
	trap 'echo "demo: FAILED at line $LINENO: $BASH_COMMAND" >&2' ERR
	demo_run
	echo "demo: guest $KXFER_GUEST done"
fi
