#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-boot.sh: PID 1 of a kxfer guest after switch_root (see init).
#
# It finishes the guest's setup (/lib/modules from the cached kernel, /dev/pts,
# /dev/shm, tracefs, debugfs, eth0 with $KXFER_SELF_ADDR/24, soft-RoCE device
# rxe0 on eth0 with its port ACTIVE, with two NICs (vm-run --nics 2) eth1 with
# $KXFER_SELF_ADDR2/24 and rxe1 on it likewise, and, with two guests, the peer
# answering ping), runs `bash $KXFER_SCRIPT` as root from $KXFER_TOP with its output on
# the console and in /out/script.log, then writes /out/dmesg.txt, the script's
# exit status to /out/status (125 if the setup failed and the script did not
# run), on a debug kernel (KXFER_KMEMLEAK_SCAN=1) what kmemleak finds after the
# script to /out/kmemleak.txt (see kmemleak_scan), creates /shared/done.<guest> (barriers in the other guest stop waiting)
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
	grep -q ACTIVE "/sys/class/infiniband/${1:-$KXFER_RDMA_DEV}/ports/1/state" 2>/dev/null
}

# setup_nic2: the second NIC (vm-run --nics 2), found by its MAC, as eth1
# with its own subnet and soft-RoCE device.
setup_nic2() {
	local dev

	dev=$(ip -o link | awk -v mac="$KXFER_MAC2" '$0 ~ "link/ether " mac {
		sub(":$", "", $2); print $2 }')
	if [[ -z $dev ]]; then
		rig_say "no NIC with MAC $KXFER_MAC2"
		return 1
	fi
	[[ $dev == "$KXFER_NETDEV2" ]] || ip link set "$dev" name "$KXFER_NETDEV2" || return 1
	ip link set "$KXFER_NETDEV2" up &&
		ip addr add "$KXFER_SELF_ADDR2/24" dev "$KXFER_NETDEV2" || return 1
	rdma link add "$KXFER_RDMA_DEV2" type rxe netdev "$KXFER_NETDEV2" || return 1
	if ! busywait 30000 rxe_port_active "$KXFER_RDMA_DEV2"; then
		rig_say "$KXFER_RDMA_DEV2 port not ACTIVE after 30 s"
		return 1
	fi
	if [[ -n ${KXFER_PEER_ADDR2:-} ]] &&
		! slowwait 60 busybox ping -c 1 -W 1 "$KXFER_PEER_ADDR2" >/dev/null; then
		rig_say "warning: $KXFER_PEER_ADDR2 does not answer ping"
	fi
	# as on eth0, below
	if [[ -n ${KXFER_PEER_ADDR2:-} ]]; then
		busybox ping -q -i 0.5 "$KXFER_PEER_ADDR2" >/dev/null 2>&1 &
	fi
	return 0
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
	if [[ ${KXFER_NICS:-1} == 2 ]]; then
		setup_nic2 || return 1
	fi
	return 0
}

# kmemleak_scan: on a debug kernel, after the script, what kmemleak finds,
# into /out/kmemleak.txt: a scan with kxfer still loaded (its frames have
# names), then, after `clear` (those are not reported again), kxfer and
# kxfer_testbuf unloaded (what they did not free is now unreferenced) and
# another scan. Each scan is two (an object is reported once it is 5 s old
# and unreferenced: the second catches what was too young for the first).
# Never fails the guest: the host reads the file (selftests/rig/sanitizers).
kmemleak_scan() {
	local ctl=/sys/kernel/debug/kmemleak out=$KXFER_OUT/kmemleak.txt mod

	[[ ${KXFER_KMEMLEAK_SCAN:-0} == 1 ]] || return 0
	if [[ ! -e $ctl ]]; then
		echo "# kmemleak: no $ctl in this kernel" >"$out"
		return 0
	fi
	rig_say "kmemleak: scanning"
	_kmemleak_twice
	echo "# kmemleak after $KXFER_SCRIPT, boot ${KXFER_BOOT:-1}, kxfer loaded" >"$out"
	cat "$ctl" >>"$out"
	echo clear >"$ctl"
	for mod in kxfer_testbuf kxfer; do
		if grep -q "^$mod " /proc/modules; then
			timeout 120 rmmod "$mod" || rig_say "kmemleak: rmmod $mod failed"
		fi
	done
	_kmemleak_twice
	echo "# kmemleak after kxfer and kxfer_testbuf were unloaded" >>"$out"
	cat "$ctl" >>"$out"
	rig_say "kmemleak: $(grep -c '^unreferenced object' "$out") unreferenced object(s)"
}

_kmemleak_twice() {
	timeout 600 bash -c 'echo scan >/sys/kernel/debug/kmemleak' ||
		rig_say "kmemleak: scan failed"
	sleep 6
	timeout 600 bash -c 'echo scan >/sys/kernel/debug/kmemleak' ||
		rig_say "kmemleak: scan failed"
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
kmemleak_scan
power_off "$status"
