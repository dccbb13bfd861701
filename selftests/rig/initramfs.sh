#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# initramfs.sh: build (or reuse) the guest initramfs for one kernel series.
#
# Usage: selftests/rig/initramfs.sh KVER_SERIES        (6.1 or 6.12)
#
# The initramfs holds busybox-static, selftests/rig/init (PID 1 before
# switch_root) and the modules the guest needs before it can reach the host
# root file system or run RDMA: what `modprobe -d ROOT -S KVER --show-depends`
# lists for the modules in $modules below, in that order, deduplicated. Modules
# are stored decompressed (6.12 ships .ko.xz; busybox insmod does not read xz).
# crc32_generic is added explicitly: rdma_rxe asks for the "crc32" shash only
# at `rdma link add` time and no dependency list names it.
#
# Cached as CACHE/initramfs-<kver>.cpio; it is rebuilt when its key changes
# (this script, init, busybox, the module list or the kernel's modules.dep).
#
# Output: the lines of kernel.sh (KVER=, PKG=, VMLINUZ=, MODROOT=, KDIR=) then
#   INITRD=CACHE/initramfs-<kver>.cpio
# Environment: KXFER_CACHE (default /var/cache/kxfer).

set -euo pipefail

die() { echo "initramfs.sh: $*" >&2; exit 1; }

[[ $# -eq 1 ]] || { echo "usage: $0 KVER_SERIES" >&2; exit 2; }
rig=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${KXFER_CACHE:-/var/cache/kxfer}
modules="virtio_pci virtio_net 9p 9pnet_virtio rdma_rxe rdma_cm ib_uverbs rdma_ucm crc32_generic"
busybox=/bin/busybox

kernel_info=$("$rig/kernel.sh" "$1") || exit 1
kver='' modroot=''
while IFS='=' read -r key value; do
	case $key in
	KVER) kver=$value ;;
	MODROOT) modroot=$value ;;
	esac
done <<<"$kernel_info"
[[ -n $kver && -n $modroot ]] || die "kernel.sh gave no KVER/MODROOT"
[[ -x $busybox ]] || die "$busybox missing (install busybox-static)"

# Module files in load order, as paths under MODROOT/lib/modules/KVER.
moddir=$modroot/lib/modules/$kver
mod_list=$(for mod in $modules; do
		modprobe -d "$modroot" -S "$kver" --show-depends "$mod" ||
			die "modprobe --show-depends $mod failed for $kver"
	done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }')
[[ -n $mod_list ]] || die "no modules resolved for $kver"

initrd=$cache/initramfs-$kver.cpio
key=$( {
	cat "$0" "$rig/init"
	sha256sum "$busybox"
	echo "$mod_list"
	sha256sum "$moddir/modules.dep"
} | sha256sum | cut -d' ' -f1)

exec 9>"$cache/.lock-initramfs"
flock 9
if [[ ! -f $initrd || $(cat "$initrd.key" 2>/dev/null) != "$key" ]]; then
	echo "initramfs.sh: building $initrd" >&2
	stage=$(mktemp -d "$cache/initramfs-stage.XXXXXX")
	trap 'rm -rf "$stage"' EXIT
	mkdir -p "$stage"/{bin,dev,proc,sys,newroot,modules}
	cp "$busybox" "$stage/bin/busybox"
	ln -s busybox "$stage/bin/sh"
	cp "$rig/init" "$stage/init"
	chmod 755 "$stage/init"
	# The kernel opens /dev/console for PID 1 before devtmpfs is mounted.
	mknod -m 600 "$stage/dev/console" c 5 1
	while read -r path; do
		name=${path##*/}
		case $name in
		*.ko.xz) xz -dc "$path" >"$stage/modules/${name%.xz}" ;;
		*.ko.zst) zstd -qdc "$path" >"$stage/modules/${name%.zst}" ;;
		*.ko) cp "$path" "$stage/modules/$name" ;;
		*) die "unexpected module file $path" ;;
		esac
		echo "${name%.ko*}.ko" >>"$stage/modules/load.list"
	done <<<"$mod_list"
	(cd "$stage" && find . -mindepth 1 | LC_ALL=C sort |
		cpio --quiet -o -H newc -R 0:0) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	echo "$key" >"$initrd.key"
fi
flock -u 9

echo "$kernel_info"
echo "INITRD=$initrd"
