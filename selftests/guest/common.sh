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

export PATH="$KXFER_TOP/tools/kxferctl:$KXFER_TOP/selftests:$PATH"

# The module built for this kernel by `make guest-modules`, else the
# in-tree build.
if [ -z "${KXFER_MODULE:-}" ]; then
	KXFER_MODULE=$KXFER_TOP/build/modules/$KXFER_KVER/kxfer.ko
	[ -f "$KXFER_MODULE" ] || KXFER_MODULE=$KXFER_TOP/kmod/kxfer.ko
fi

kxfer_load() {
	lsmod | grep -q '^kxfer ' && return 0
	insmod "$KXFER_MODULE" "$@"
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

on_a() { [ "$KXFER_GUEST" = a ]; }

peer_json() {
	kxferctl -j peer show "$1"
}

# peer_state NAME STATE: the session NAME (first of that name) is in STATE
peer_state() {
	[ "$(peer_json "$1" 2>/dev/null | jq -r '.[0].state')" = "$2" ]
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
	kxferctl | leak_same | *peer* | *session* | hp_only_*)
		peer_explain
		;;
	sh)
		case "$*" in
		*kxferctl*) peer_explain ;;
		esac
		;;
	esac
}
