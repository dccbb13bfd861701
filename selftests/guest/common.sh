# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# common.sh: helpers the kxfer guest suites share; source after lib.sh.
#
#   kxfer_load            insmod the kxfer.ko built for the running kernel
#   expect_status N CMD   CMD must exit with status N
#   expect_error MSG CMD  CMD must be refused (status 1) with "Error: MSG..."
#   port_active DEV       DEV's port 1 is ACTIVE
#   defer_readd_rxe0      at the end of the test, put rxe0 back if it is gone
#   devinfo_eq JSON FIELD KEY  a number in kxferctl's JSON equals ibv_devinfo
#                         -v's KEY (compared as text, since jq's doubles
#                         cannot hold every u64; hex is converted)
#   nixl_env              NIXL's libraries, Python package and the KXFER
#                         plugin in the environment (make nixl's build)
#   kmsg_mark NAME        a line in the kernel log that kmsg_clean starts at
#   kmsg_clean NAME       no problem in the kernel log since NAME's last mark,
#                         as run-suite's dmesg-clean counts them (rig/
#                         sanitizers problems: a known kernel bug's report,
#                         e.g. one of 6.1 rxe's on a KASAN kernel, is none);
#                         else the problem lines, and status 1
# and, for the two-guest suites:
#   on_a                  this is guest a
#   peer_json NAME        `kxferctl -j peer show NAME`
#   peer_state NAME STATE the (first) session NAME is in STATE
#   has_rexport NAME EXP  the session NAME has learned remote export EXP
#   peer_attempts NAME    its connection attempts since it was last up
#   attempts_above NAME N more than N of them
#   kxfer_qps             QPs of kxfer's sessions
#   now_ms                wall clock, ms
#   peer_explain [NAME]   peer show of NAME (or of every session), text and
#                         JSON, and the kernel log's last 20 kxfer lines
#   wait_explain CMD...   what busywait and slowwait (lib.sh) print when
#                         a wait on kxfer's state times out: peer_explain of
#                         the session a peer_state, has_rexport or peer_json
#                         wait (check_fail ... too) was about, of every
#                         session for other waits on sessions (kxferctl,
#                         a *peer* or *session* helper, leak_same ...)
#   rdma_snapshot WHAT    this guest's RDMA state, for a connection that
#                         does not come up: rdma link, cm_ids and QPs,
#                         rxe0's port counters (hw_counters), IB CM
#                         message counters and GIDs, the test netdev's
#                         statistics, neighbours and qdisc, rxe's UDP
#                         socket, kxferctl listen and peer show
#   rdma_explain          two rdma_snapshots, their counters
#                         $RDMA_EXPLAIN_GAP s apart (do packets still
#                         arrive, are they answered), the MAD layer's and
#                         IB CM's tracepoints between them, then an rping
#                         from this guest to itself (does its own CM work
#                         at all); about half a minute under TCG, every
#                         command bounded (5 s, rping 10 s)
#   explain_ask TAG       two guests: ask the other guest for its
#                         rdma_explain (explain_serve), then rdma_explain
#                         here
#   explain_serve TAG SEC in the background, SEC seconds at most: the
#                         rdma_explain the other guest asks for with TAG

export PATH="$KXFER_TOP/tools/kxferctl:$KXFER_TOP/selftests:$PATH"

# The module built for this kernel by `make guest-modules`, else the
# in-tree build.
if [ -z "${KXFER_MODULE:-}" ]; then
	KXFER_MODULE=$KXFER_TOP/build/modules/$KXFER_KVER/kxfer.ko
	[ -f "$KXFER_MODULE" ] || KXFER_MODULE=$KXFER_TOP/kmod/kxfer.ko
fi

# The keepalive timeout the suites run with: the module's default (5 s),
# times KXFER_SLOW on a slow kernel (the sanitizer kernels of make
# check-debug, KXFER_SLOW=4, where a QP busy with 8 MiB of writes
# completes them seconds apart under TCG, and a probe waits behind them).
KXFER_KA_TIMEOUT_MS=$((5000 * ${KXFER_SLOW:-1}))
# And the QPs' ACK timeout: the module's 16 (268 ms) plus log2 KXFER_SLOW,
# so a slow kernel's late ACKs are not taken for lost packets and sent
# again (load bounds the retransmissions).
KXFER_ACK_TIMEOUT=16
for ((_s = ${KXFER_SLOW:-1}; _s > 1; _s /= 2)); do
	KXFER_ACK_TIMEOUT=$((KXFER_ACK_TIMEOUT + 1))
done
unset _s

kxfer_load() {
	lsmod | grep -q '^kxfer ' && return 0
	if [ "${KXFER_SLOW:-1}" -gt 1 ]; then
		insmod "$KXFER_MODULE" keepalive_timeout_ms="$KXFER_KA_TIMEOUT_MS" \
			ack_timeout="$KXFER_ACK_TIMEOUT" "$@"
	else
		insmod "$KXFER_MODULE" "$@"
	fi
}

expect_status() {
	local want=$1 rc=0

	shift
	"$@" || rc=$?
	[ "$rc" -eq "$want" ] && return 0
	echo "expected status $want, got $rc: $*"
	return 1
}

expect_error() {
	local msg=$1 out rc=0

	shift
	out=$("$@" 2>&1) || rc=$?
	echo "$out"
	[ "$rc" -eq 1 ] || { echo "expected status 1, got $rc: $*"; return 1; }
	grep -q "^Error: $msg" <<<"$out" && return 0
	echo "expected 'Error: $msg'"
	return 1
}

# A link that drops everything a guest sends is a matchall filter on the test
# netdev's egress (clsact, added in suite-2's setup before any RDMA
# traffic) whose action, "trap", consumes each packet and tells the
# sender it went: the root qdisc (fq_codel) is never swapped and no
# transmit is refused.  While a root qdisc is swapped (tc qdisc add/del,
# as this used to do with netem) a transmit meets noop_qdisc and gets
# NET_XMIT_CN; "drop" (TC_ACT_SHOT) gives NET_XMIT_DROP.  6.12's rxe (not
# 6.1's) turns either into an error of the sending QP, QP1 included: the
# GSI QP loses its posted receives, the MAD layer moves it back to RTS
# without new ones, and from then on every CM message to the node is
# dropped in silence (rxe_net.c rxe_send(), rxe_req.c, core/mad.c).
link_setup() {
	modprobe -a sch_ingress cls_matchall act_gact &&
		tc qdisc replace dev "$KXFER_NETDEV" clsact
}

# link_drop on|off: this guest's transmits vanish from now on, or go again
link_drop() {
	case $1 in
	on)
		tc filter add dev "$KXFER_NETDEV" egress pref 7 matchall \
			action trap
		;;
	off)
		tc filter del dev "$KXFER_NETDEV" egress pref 7 2>/dev/null || true
		;;
	esac
}

port_active() {
	ibv_devinfo -d "$1" 2>/dev/null | grep -q 'state:.*PORT_ACTIVE'
}

_readd_rxe0() {
	rdma link show rxe0/1 >/dev/null 2>&1 && return 0
	rdma link add rxe0 type rxe netdev "$KXFER_NETDEV"
	busywait 10000 port_active rxe0
}

defer_readd_rxe0() {
	defer _readd_rxe0
}

devinfo_eq() {
	local mine theirs

	mine=$(grep -o "\"$2\": *[0-9]*" <<<"$1" | head -n 1 | sed 's/.*: *//')
	theirs=$(ibv_devinfo -v -d rxe0 | awk -v k="$3:" '$1 == k { print $2; exit }')
	theirs=$(printf '%u' "$theirs")
	[ "$mine" = "$theirs" ] && return 0
	echo "$2 is $mine, ibv_devinfo $3 is $theirs"
	return 1
}

kmsg_mark() {
	echo "kxfer-selftest: $1 starts" >/dev/kmsg
}

# kmsg_since NAME: the kernel log from NAME's last mark on
kmsg_since() {
	# the whole log is read (a reader that stops early, sed's q, makes
	# the writer die of SIGPIPE, a failure under pipefail)
	dmesg | awk -v mark="kxfer-selftest: $1 starts" \
		'index($0, mark) { n = 0 } { line[n++] = $0 }
		 END { for (i = 0; i < n; i++) print line[i] }'
}

kmsg_clean() {
	local log bad rc=0

	log=$(mktemp)
	kmsg_since "$1" >"$log"
	bad=$("$KXFER_TOP/selftests/rig/sanitizers" problems "$log") || rc=$?
	rm -f "$log"
	[ "$rc" = 0 ] && return 0
	echo "the kernel log since $1 started:"
	echo "$bad"
	return 1
}

on_a() { [ "$KXFER_GUEST" = a ]; }

peer_json() {
	kxferctl -j peer show "$1"
}

# peer_state NAME STATE: the session NAME (first of that name) is in STATE
peer_state() {
	[ "$(peer_json "$1" 2>/dev/null | jq -r '.[0].state')" = "$2" ]
}

# peer_sessions NAME: "ID STATE" of every session named NAME, one a line
# (a listener names each accepted session after its remote node, so b's
# sessions to a are all "b" on a, and `peer show NAME` shows the oldest)
peer_sessions() {
	kxferctl -j peer show | jq -r --arg n "$1" '.[] | select(.name == $n) | "\(.id) \(.state)"'
}

# peer_attempts NAME: the connector's connection attempts since it was
# last up ("" if kxferctl does not say)
peer_attempts() {
	peer_json "$1" 2>/dev/null | jq -r '.[0].attempts // empty'
}

# attempts_above NAME N: the connector NAME has made more than N attempts
# since it was last up
attempts_above() {
	local n

	n=$(peer_attempts "$1")
	echo "$1: attempts ${n:-none} (more than $2 wanted)"
	[ -n "$n" ] && [ "$n" -gt "$2" ]
}

# has_rexport NAME EXPORT: the session has learned the remote export
# (grep, not jq: under TCG jq's start-up alone takes a good part of the
# time bounds checked with this)
has_rexport() {
	kxferctl -j peer show "$1" 2>/dev/null |
		grep -q "\"remote_exports\":\[.*{\"name\":\"$2\""
}

# QPs of kxfer's sessions: rdma_cm creates them (its name shows on the QP);
# the cm_id that owns each shows kxfer's name and the QP number.
kxfer_qps() {
	rdma resource show cm_id 2>/dev/null |
		grep 'comm \[kxfer\]' | grep -c 'lqpn [1-9]' || true
}

now_ms() {
	echo $(($(date +%s%N) / 1000000))
}

# peer_explain [NAME]: the state a wait on a session found
peer_explain() {
	echo "kxferctl peer show${1:+ $1}:"
	kxferctl peer show ${1:+"$1"} 2>&1 || true
	kxferctl -j peer show ${1:+"$1"} 2>&1 || true
	echo "kernel log, last 20 kxfer lines:"
	dmesg | grep "kxfer: " | tail -n 20
}

# wait_explain CMD...: called by busywait/slowwait when CMD never succeeded
wait_explain() {
	[ "$1" = check_fail ] && shift
	case $1 in
	peer_state | has_rexport | peer_json)
		peer_explain "$2"
		;;
	kxferctl | leak_same | acceptors_are | *peer* | *session* | hp_only_*)
		peer_explain
		;;
	sh)
		case "$*" in
		*kxferctl*) peer_explain ;;
		esac
		;;
	esac
}

# nixl_env: NIXL's libraries, its Python package and the KXFER plugin
# (LD_LIBRARY_PATH, PYTHONPATH, NIXL_PLUGIN_DIR exported): the plugin
# make nixl built into build/nixl (only KXFER in that folder, so that
# nothing else loads) and the NIXL it was built against, which that
# build wrote to build/nixl/nixl-env (tools/nixl/nixl.mk): a cache of
# tools/nixl/build-nixl-deps.sh (the host's /var/cache/kxfer, seen
# read-only) or the NIXL_PREFIX it was given.  Status 1, and nothing
# exported, when either is missing.
nixl_env() {
	local out=$KXFER_TOP/build/nixl

	[ -f "$out/nixl-env" ] && [ -f "$out/libplugin_KXFER.so" ] || return 1
	# shellcheck source=/dev/null
	source "$out/nixl-env"
	[ -n "${NIXL_LIBDIR:-}" ] || return 1
	export LD_LIBRARY_PATH=$NIXL_LIBDIR
	export PYTHONPATH=${NIXL_PYTHONPATH:-}
	export NIXL_PLUGIN_DIR=$out
}

# --- RDMA state of a connection that does not come up -------------------------

# Seconds between the counters of rdma_explain's two snapshots: a
# connector's attempts last 10 s (kxfer's connect deadline), its CM sends
# the REQ again after ~5 s, and the next attempt comes ~5 s after one
# failed: 8 s see at least one REQ.
RDMA_EXPLAIN_GAP=8

# _rx CMD...: CMD's output, 5 s at most; never fails
_rx() {
	timeout 5 "$@" 2>&1 || echo "($1: status $?)"
}

# _rx_files DIR: "name=value" of each file in DIR, on one line (read,
# not cat: a fork costs a lot under TCG, and these are 60 files)
_rx_files() {
	local f v line=

	for f in "$1"/*; do
		[ -f "$f" ] || continue
		v=
		read -r v 2>/dev/null <"$f" || [ -n "$v" ] || v='?'
		line+="${f##*/}=$v "
	done
	echo "${line:-(none)}"
}

# _rx_stamp: wall clock (ms) and uptime (the kernel log's clock)
_rx_stamp() {
	local up us=${EPOCHREALTIME/./}

	read -r up _ </proc/uptime
	printf '%(%T)T.%03d, uptime %s s' "${us:0:-6}" $((10#${us: -6} / 1000)) "$up"
}

rdma_snapshot() {
	local nd=$KXFER_NETDEV port=/sys/class/infiniband/$KXFER_RDMA_DEV/ports/1 g s

	# counters first, at the time printed
	echo "=== guest $KXFER_GUEST: RDMA state, $1: $(_rx_stamp)"
	read -r s 2>/dev/null <"$port/state" || s='?'
	echo "--- $KXFER_RDMA_DEV port 1: $s"
	echo "hw_counters: $(_rx_files "$port/hw_counters")"
	for g in cm_rx_msgs cm_tx_msgs cm_tx_retries cm_rx_duplicates; do
		echo "$g: $(_rx_files "$port/$g")"
	done
	echo "--- UDP: /proc/net/snmp, rxe's socket (port 4791 = 12B7, drops last)"
	grep -h -e '^Udp:' -e ':12B7 ' /proc/net/snmp /proc/net/udp /proc/net/udp6
	echo "--- rdma link, resource show cm_id, resource show qp"
	_rx rdma link show
	_rx rdma resource show cm_id
	_rx rdma resource show qp
	echo "--- GIDs in use, their types and netdevs"
	grep -sH . "$port"/gids/* "$port"/gid_attrs/types/* "$port"/gid_attrs/ndevs/* |
		grep -v '0000:0000:0000:0000:0000:0000:0000:0000$' | sed "s|^$port/||"
	echo "--- $nd: link, neighbours, route to $KXFER_PEER_ADDR, qdisc"
	_rx ip -s link show dev "$nd"
	_rx ip neigh show dev "$nd"
	_rx ip route get "$KXFER_PEER_ADDR"
	_rx tc -s qdisc show dev "$nd"
	echo "--- kxferctl listen show, peer show"
	_rx kxferctl listen show
	_rx kxferctl peer show
	echo "--- kernel log, last 15 lines"
	dmesg | tail -n 15
}

# _rx_trace 1|0: the MAD layer's (ib_mad) and the IB CM's (ib_cma)
# tracepoints on (trace emptied first) or off
_rx_trace() {
	local t=/sys/kernel/tracing e

	[ -w $t/trace ] || return 0
	[ "$1" = 1 ] && echo >$t/trace
	for e in ib_mad ib_cma; do
		[ -e "$t/events/$e/enable" ] && echo "$1" >"$t/events/$e/enable"
	done
	return 0
}

# _rx_self_ping: rping from this guest's address to itself: its own CM
# and QP1 (rxe loops the packets back, nothing goes on the wire); 10 s
# at most
_rx_self_ping() {
	local port=$((17000 + RANDOM % 1000)) srv rc=0

	command -v rping >/dev/null || { echo "--- (no rping)"; return 0; }
	modprobe rdma_ucm 2>/dev/null || true
	timeout 10 rping -s -a "$KXFER_SELF_ADDR" -p "$port" -C 1 >/tmp/rx-rping-s 2>&1 &
	srv=$!
	sleep 1
	timeout 8 rping -c -a "$KXFER_SELF_ADDR" -p "$port" -C 1 -v \
		>/tmp/rx-rping-c 2>&1 || rc=$?
	kill "$srv" 2>/dev/null || true
	wait "$srv" 2>/dev/null || true
	echo "--- rping $KXFER_SELF_ADDR to itself: status $rc$( ((rc != 124)) || echo ", timed out")"
	tail -n 3 /tmp/rx-rping-c /tmp/rx-rping-s
}

rdma_explain() {
	local t0=${EPOCHREALTIME/./} left

	{
		rdma_snapshot "1 of 2"
		_rx_trace 1
		left=$((RDMA_EXPLAIN_GAP * 1000 - (${EPOCHREALTIME/./} - t0) / 1000))
		((left >= 1000)) || left=1000
		sleep "$((left / 1000)).$(printf %03d $((left % 1000)))"
		_rx_trace 0
		rdma_snapshot "2 of 2, $(((${EPOCHREALTIME/./} - t0) / 100000))00 ms after the first"
		echo "--- MAD and CM tracepoints between the two (the last 40)"
		grep -v '^#' /sys/kernel/tracing/trace 2>/dev/null | tail -n 40
		_rx_self_ping
		echo "=== guest $KXFER_GUEST: end of the RDMA state"
	} 2>&1 || true
}

explain_ask() {
	[ "$KXFER_GUESTS" = 2 ] && : >"$KXFER_SHARED/explain.$1.$KXFER_GUEST"
	rdma_explain
}

explain_serve() {
	local peer=a deadline

	[ "$KXFER_GUESTS" = 2 ] || return 0
	on_a && peer=b
	deadline=$((SECONDS + $(_kx_slow "$2")))
	while ((SECONDS < deadline)); do
		if [ -e "$KXFER_SHARED/explain.$1.$peer" ]; then
			echo "$(printf '%(%T)T') guest $peer asks for this guest's RDMA state ($1):"
			rdma_explain
			return 0
		fi
		[ -e "$KXFER_SHARED/done.$peer" ] && return 0
		sleep 0.5
	done
}

# ktest2 NAME FUNC: a test of two guests (rig/lib.sh's ktest).  Each
# starts with both guests' barrier ranks in step, and both meet after
# it, so that a test failing half-way on one side (and skipping its
# barriers) does not put the next tests out of step.
KXFER_KTEST2_N=0
ktest2() {
	KXFER_KTEST2_N=$((KXFER_KTEST2_N + 1))
	barrier_rank $((KXFER_KTEST2_N * 100))
	ktest "$@"
	barrier_rank $((KXFER_KTEST2_N * 100 + 98))
	barrier "end-$1" 90 || true
}
