#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-boot.sh: PID 1 of a kxfer guest after switch_root (see init).
#
# It finishes the guest's setup (/lib/modules from the cached kernel, /dev/pts,
# /dev/shm, tracefs, debugfs, eth0 with $KXFER_SELF_ADDR/24, soft-RoCE device
# rxe0 on eth0 with its port ACTIVE, and, with two guests, the peer answering
# ping), runs `bash $KXFER_SCRIPT` as root from $KXFER_TOP with its output on
# the console and in /out/script.log, then writes /out/dmesg.txt, the script's
# exit status to /out/status (125 if the setup failed and the script did not
# run), creates /shared/done.<guest> (barriers in the other guest stop waiting)
# and powers off. It must never exit: PID 1 exiting panics the guest.
#
# The variables come from the file that vm-run wrote (kxfer_env= on the
# kernel command line, read by init); see lib.sh for the list.

set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/tmp LC_ALL=C.UTF-8
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"

rig_say() {
	echo "kxfer-rig[$KXFER_GUEST]: $*"
}

power_off() {
	dmesg >"$KXFER_OUT/dmesg.txt"
	echo "$1" >"$KXFER_OUT/status"
	: >"$KXFER_SHARED/done.$KXFER_GUEST"
	sync
	busybox poweroff -f
	echo o >/proc/sysrq-trigger
	sleep 60
}

rxe_port_active() {
	grep -q ACTIVE "/sys/class/infiniband/$KXFER_RDMA_DEV/ports/1/state" 2>/dev/null
}

setup_guest() {
	mkdir -p /dev/pts /dev/shm
	mount -t devpts -o mode=0620,ptmxmode=0666 devpts /dev/pts
	mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm
	mount -t tracefs tracefs /sys/kernel/tracing
	mount -t debugfs debugfs /sys/kernel/debug
	mount --bind "$KXFER_MODROOT/lib/modules" /lib/modules || return 1
	hostname "kxfer-$KXFER_GUEST"

	ip link set lo up &&
		ip link set "$KXFER_NETDEV" up &&
		ip addr add "$KXFER_SELF_ADDR/24" dev "$KXFER_NETDEV" || return 1
	rdma link add "$KXFER_RDMA_DEV" type rxe netdev "$KXFER_NETDEV" || return 1
	if ! busywait 30000 rxe_port_active; then
		rig_say "$KXFER_RDMA_DEV port not ACTIVE after 30 s"
		return 1
	fi
	# Not fatal: the socket link comes up when the second QEMU connects;
	# the scripts' barriers decide.
	if [[ -n ${KXFER_PEER_ADDR:-} ]] &&
		! slowwait 60 busybox ping -c 1 -W 1 "$KXFER_PEER_ADDR" >/dev/null; then
		rig_say "warning: $KXFER_PEER_ADDR does not answer ping"
	fi
	# Two pings a second to the peer for as long as the guest runs.
	# Under rxe's storms a guest's virtio transmit queue has stayed
	# stopped for good (NETDEV WATCHDOG), its completion interrupt lost;
	# with transmit NAPI, any packet received reaps the ring and wakes
	# the queue, and the peer's pings keep arriving.
	if [[ -n ${KXFER_PEER_ADDR:-} ]]; then
		busybox ping -q -i 0.5 "$KXFER_PEER_ADDR" >/dev/null 2>&1 &
	fi
	return 0
}

if ! setup_guest; then
	rig_say "guest setup failed; not running $KXFER_SCRIPT"
	power_off 125
fi
read -r uptime _ </proc/uptime
rig_say "boot ${KXFER_BOOT:-1} up after $uptime s of guest time, running $KXFER_SCRIPT"

cd "$KXFER_TOP" || power_off 125
# After a kill (vm-run), the killed boot's output stays in front.
tee_opt=
((${KXFER_BOOT:-1} > 1)) && tee_opt=-a
bash "$KXFER_SCRIPT" </dev/null 2>&1 | tee $tee_opt "$KXFER_OUT/script.log"
status=${PIPESTATUS[0]}
read -r uptime _ </proc/uptime
rig_say "$KXFER_SCRIPT exited with status $status at $uptime s"
power_off "$status"
