#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# nixl.sh: the KXFER NIXL backend plugin (tools/nixl, issue 13) between two
# guests, through NIXL's own C++ and Python APIs; run by run-suite as its
# own step (vm-run --guests 2).  The module is loaded as nodes "a" and "b";
# the administrator's part is done here with kxferctl (a listens, b adds
# the session "a"; on a, the accepting session is "b"), which is what the
# plugin's default session name, the remote node's name, finds on both
# sides.  Then both guests run
#
#   build/nixl/nixl_test          the C++ API (selftests/nixl/nixl_test.cpp)
#   selftests/nixl/nixl_test.py   the Python API (nixl_agent), VRAM too
#   selftests/nixl/nixl_vllm.py   NIXL driven as vLLM's NixlConnector does:
#                                 a prefill on a, a decode on b reading
#                                 requests from it, 64 regions of VRAM
#                                 where the kernel has udmabuf (6.12),
#                                 else DRAM (6.1)
#   selftests/nixl/nixl_churn.py  an agent on b that comes and goes 100
#                                 times against one on a: the kernel's
#                                 handles, sessions, pools and exports on
#                                 both nodes are what they were before
#
# and then, with the module loaded afresh and no peer add at all (b's
# administrator only allows a's address: kxferctl connect allow),
#
#   selftests/nixl/nixl_vllm.py   again, decode's add_remote_agent making
#                                 the session on demand; it ends once the
#                                 agents are gone and its idle time passed
#
# with the GPU drivers' stand-in (selftests/nixl/gpu_standin.c,
# build/nixl/standin) in LD_LIBRARY_PATH, as libcuda.so.1 and
# libhsa-runtime64.so.1: VRAM is "GPU memory" of that stand-in, whose
# dma-bufs are udmabufs (6.12; 6.1 has no udmabuf, and the tests check
# the refusal there).  The module is loaded with max_pools_per_fd=128:
# an agent of an inference engine registers a buffer per layer or two.
#
# as TAP programs (one result per test, NAME:TEST), which meet in /shared;
# and, last, every pool and export the plugin made is gone with the
# processes that made them, and the module unloads.
#
# NIXL comes from the cache tools/nixl/build-nixl-deps.sh fills (the
# host's /var/cache/kxfer, seen read-only here) that the plugin was built
# against; without it, or without the plugin (make check builds both),
# every test is skipped.

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=common.sh
source "$KXFER_TOP/selftests/guest/common.sh"

cd "$KXFER_TOP" || exit 1

A=10.99.0.1
NIXL_OUT=$KXFER_TOP/build/nixl

require_nixl() {
	[ -n "${NIXL_PLUGIN_DIR:-}" ] ||
		skip "no NIXL or no plugin (make check builds both; make with NIXL_PREFIX the plugin)"
}

t_setup() {
	require_nixl
	kxfer_load node_name="$KXFER_GUEST" max_pools_per_fd=128
	if on_a; then
		kxferctl listen "$A" allow 10.99.0.0/24
		barrier nixl-listening
		barrier nixl-up 60
		busywait 20000 peer_state b up
	else
		barrier nixl-listening
		kxferctl peer add a "$A"
		busywait 20000 peer_state a up
		barrier nixl-up 60
	fi
	cat /sys/module/kxfer/parameters/node_name
}

# ktap_nixl NAME CMD...: run a TAP program of both guests, which meet in
# /shared; a barrier after it, so that a guest whose program failed early
# does not start the next one alone.
ktap_nixl() {
	local name=$1

	shift
	barrier "$name-start" 300 || true
	if [ -z "${NIXL_PLUGIN_DIR:-}" ]; then
		ktest "$name" require_nixl
	else
		ktap_run "$@"
	fi
	barrier "$name-end" 600 || true
}

# Every job of every request, released in flight or not, ended exactly
# once in the plugin's eyes: no completion it did not expect, and no
# request left in flight when an agent ended (the plugin logs both).
t_completions() {
	require_nixl
	local log

	for log in "$KXFER_OUT/logs/nixl_test.log" "$KXFER_OUT/logs/nixl_test.py.log" \
		"$KXFER_OUT/logs/nixl_vllm.py.log" "$KXFER_OUT/logs/nixl_churn.py.log"; do
		[ -f "$log" ] || { echo "no $log"; return 1; }
		if grep -E 'completion of unknown request|requests and [0-9]+ notifications in flight' "$log"; then
			echo "in $log"
			return 1
		fi
	done
}

# Every pool and export of the plugin (named nx<pid>.<agent>.N) ended with
# the process that made it; the module unloads.
t_cleanup() {
	require_nixl
	local left

	left=$(kxferctl -j pool show | jq -r '.[] | select(.kind == "user") | .name')
	if [ -n "$left" ]; then
		echo "user pools left behind: $left"
		return 1
	fi
	left=$(kxferctl -j export show | jq -r '.[] | .name | select(startswith("nx"))')
	if [ -n "$left" ]; then
		echo "exports left behind: $left"
		return 1
	fi
	barrier nixl-clean
	if on_a; then
		barrier nixl-peers-gone 60
		busywait 15000 sh -c '[ "$(kxferctl -j peer show | jq length)" = 0 ]'
		kxferctl listen del "$A"
	else
		kxferctl peer del a
		barrier nixl-peers-gone 60
	fi
	rmmod kxfer
}

# Sessions on demand: the module afresh, a listening, b's administrator
# allowing a's address only, and no session at all.
t_ondemand_setup() {
	require_nixl
	kxfer_load node_name="$KXFER_GUEST" max_pools_per_fd=128
	if on_a; then
		kxferctl listen "$A" allow 10.99.0.0/24
	else
		kxferctl connect allow "$A" idle 5
	fi
	[ "$(kxferctl -j peer show | jq length)" = 0 ]
	barrier nixl-od-ready 60
}

# The session decode's agent had made on demand (b: "10.99.0.1", a: its
# accepting side "b") ended once the agents were gone; nothing of the
# plugin is left; the module unloads.
t_ondemand_cleanup() {
	require_nixl
	local gone='[ "$(kxferctl -j peer show | jq length)" = 0 ]'

	if ! on_a; then
		kxferctl -j connect show | jq -e '.[0].made >= 1' >/dev/null
		dmesg | grep -q "peer $A: made on demand and unused for 5 s: ended" ||
			busywait 30000 sh -c "dmesg | grep -q 'peer $A: made on demand and unused for 5 s: ended'"
	fi
	busywait 30000 sh -c "$gone" || { kxferctl peer show; return 1; }
	[ -z "$(kxferctl -j export show | jq -r '.[] | .name | select(startswith("nx"))')" ]
	barrier nixl-od-gone 60
	if on_a; then
		kxferctl listen del "$A"
	else
		kxferctl connect del "$A"
	fi
	rmmod kxfer
}

# NIXL and the plugin (common.sh), the C++ test and the stand-in: else
# every test skips
if ! nixl_env || [ ! -x "$NIXL_OUT/nixl_test" ] || [ ! -f "$NIXL_OUT/standin/libcuda.so.1" ]; then
	unset NIXL_PLUGIN_DIR
else
	export LD_LIBRARY_PATH=$LD_LIBRARY_PATH:$NIXL_OUT/standin
fi

ktest setup t_setup
ktap_nixl cpp "$NIXL_OUT/nixl_test" --role "$KXFER_GUEST" --dir "$KXFER_SHARED/nixl-cpp" \
	--peer-addr "$A"
ktap_nixl py selftests/nixl/nixl_test.py --role "$KXFER_GUEST" --dir "$KXFER_SHARED/nixl-py" \
	--peer-addr "$KXFER_PEER_ADDR" --session a --standin "$NIXL_OUT/standin"
vllm_mem=DRAM
[ -e /dev/udmabuf ] && vllm_mem=VRAM
vllm_role=prefill
on_a || vllm_role=decode
ktap_nixl vllm selftests/nixl/nixl_vllm.py --role "$vllm_role" --dir "$KXFER_SHARED/nixl-vllm" \
	--mem "$vllm_mem" --cuda-lib "$NIXL_OUT/standin/libcuda.so.1"
churn_role=keeper
on_a || churn_role=churn
ktap_nixl churn selftests/nixl/nixl_churn.py --role "$churn_role" --dir "$KXFER_SHARED/nixl-churn" \
	--rounds "${KXFER_NIXL_ROUNDS:-100}"
ktest completions t_completions
ktest cleanup t_cleanup
ktest ondemand_setup t_ondemand_setup
KTAP_NAME=nixl_vllm_ondemand.py ktap_nixl vllm-od selftests/nixl/nixl_vllm.py \
	--role "$vllm_role" --dir "$KXFER_SHARED/nixl-vllm-od" --mem "$vllm_mem" \
	--cuda-lib "$NIXL_OUT/standin/libcuda.so.1"
ktest ondemand_cleanup t_ondemand_cleanup
exit 0
