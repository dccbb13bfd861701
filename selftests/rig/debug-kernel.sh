#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-kernel.sh: build (once) and cache a sanitizer kernel for the guests,
# from Debian's own sources, for `make check-debug`.
#
# Usage: selftests/rig/debug-kernel.sh [--no-build] KVER_SERIES   (6.1 or 6.12)
#
# Source: Debian's linux-source-SERIES package (/usr/src/linux-source-SERIES
# .tar.xz), installed with apt-get at the version of the installed
# linux-headers-SERIES.*-amd64 when it is missing (`make check` never
# needs it). Its version must be that of the headers: the config comes
# from them.
#
# Config: Debian's, /usr/src/linux-headers-<release>/.config, trimmed with
# `make localmodconfig` to the modules the guests load ($guest_modules
# below and everything they depend on, as the Debian kernel's modprobe
# resolves them; built-in options stay as Debian has them), then
# $debug_options below: KASAN (generic, inline), PROVE_LOCKING,
# DEBUG_ATOMIC_SLEEP, DEBUG_LIST, DEBUG_KMEMLEAK (no automatic scan: the
# suites scan when they are done), UBSAN (bounds, shift), KFENCE; no
# module signing, no compression, no debug info and no BTF, KALLSYMS kept
# for readable traces. The release is <version>-kxfer-debug.
#
# Cache: KXFER_DEBUG_CACHE (default build/debug-kernel/): src-<version>/
# the unpacked source, config-<version>-<inputs hash> the config made from
# those inputs, <version>-<hash>/ a build (hash: the first 12
# digits of the final .config's sha256), with obj/ (the kernel build tree:
# KDIR for out-of-tree modules), root/ (boot/vmlinuz-<release> and
# lib/modules/<release>, indexed with depmod) and build.log. A finished
# build carries a `.complete` stamp; a second run only prints, and one
# after an interrupted build goes on with it.
#
# The build runs at nice 19 with make -j${KXFER_DEBUG_JOBS:-2}, its output in
# build.log; one progress line (objects compiled, minutes) is printed on
# stderr meanwhile. It takes about an hour per kernel on two idle cores.
#
# Output, like kernel.sh (KEY=VALUE, one per line):
#   KVER=6.1.192-kxfer-debug   PKG=linux-source-6.1=6.1.192-3
#   VMLINUZ=.../root/boot/vmlinuz-<release>   MODROOT=.../root   KDIR=.../obj
# With --no-build nothing is built: VMLINUZ/MODROOT/KDIR are printed only if
# the build is complete (exit status 0 either way).
# Exit status: 0 ok, 1 failure (message on stderr), 2 usage.

set -euo pipefail

die() { echo "debug-kernel.sh: $*" >&2; exit 1; }
say() { echo "debug-kernel.sh: $*" >&2; }
usage() { sed -n '/^# Usage:/,/^# Source:/{/^# Source:/d;s/^# \{0,1\}//p}' "$0" >&2; exit 2; }

build=1
if [[ ${1:-} == --no-build ]]; then
	build=0
	shift
fi
[[ $# -eq 1 ]] || usage
series=$1
[[ $series == 6.1 || $series == 6.12 ]] || usage

rig=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$rig/../.." && pwd)
cache=${KXFER_DEBUG_CACHE:-$top/build/debug-kernel}
jobs=${KXFER_DEBUG_JOBS:-2}

# What the guests load (selftests/rig/initramfs.sh's list, what the suites
# modprobe, kxfer's dependencies); localmodconfig keeps these and their
# dependencies as modules. A module a suite starts to modprobe goes here
# too (sch_ingress, cls_matchall, act_gact: common.sh's link_setup).
guest_modules="virtio_pci virtio_net virtio_blk virtio_console virtio_rng
	9p 9pnet_virtio rdma_rxe rdma_cm ib_uverbs rdma_ucm ib_umad ib_cm iw_cm
	ib_core crc32_generic crc32c_generic crc32c_intel libcrc32c sch_netem
	sch_tbf sch_prio cls_u32 sch_ingress cls_matchall act_gact sha256_ssse3
	udmabuf"

# scripts/config arguments applied after localmodconfig, then olddefconfig.
debug_options=(
	--set-str LOCALVERSION -kxfer-debug --disable LOCALVERSION_AUTO
	# no signing (Debian's keys are not here), no compression, no debug info
	--disable MODULE_SIG --disable MODULE_SIG_ALL --disable MODULE_SIG_FORCE
	--set-str SYSTEM_TRUSTED_KEYS '' --set-str SYSTEM_REVOCATION_KEYS ''
	--disable SECURITY_LOCKDOWN_LSM --disable MODULE_DECOMPRESS
	--enable MODULE_COMPRESS_NONE --disable MODULE_COMPRESS_XZ
	--disable MODULE_COMPRESS_ZSTD --disable MODULE_COMPRESS_GZIP
	# 6.12 has no MODULE_COMPRESS_NONE: a bool over the algorithms, whose
	# choice otherwise falls back to gzip, which Debian 12's kmod cannot
	# read (built without zlib: "Module virtio_net not found")
	--disable MODULE_COMPRESS
	--enable DEBUG_INFO_NONE --disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT
	--disable DEBUG_INFO_DWARF4 --disable DEBUG_INFO_DWARF5
	--disable DEBUG_INFO_BTF --disable DEBUG_INFO_BTF_MODULES
	--enable KALLSYMS --enable KALLSYMS_ALL
	# Less to build (under KASAN, on two cores): what a QEMU guest on a
	# serial console, without disks or a display, has no use for
	--disable XEN --disable SECURITY_SELINUX --disable SECURITY_TOMOYO
	--disable SECURITY_APPARMOR --disable SECURITY_LANDLOCK --disable IMA
	--disable EVM --disable AUDIT --disable HIBERNATION --disable FB
	--disable DRM --disable AMD_IOMMU --disable INTEL_IOMMU --disable SPI
	--disable PINCTRL --disable WATCHDOG --disable CPU_FREQ --disable WLAN
	--disable WIRELESS --disable USB_SUPPORT --disable FUNCTION_TRACER
	--disable SOUND --disable MEDIA_SUPPORT --disable HID --disable MD
	--disable NUMA --disable X86_MCE --disable PERF_EVENTS_INTEL_UNCORE
	--disable ACPI_APEI --disable EFI_VARS_PSTORE --disable PSTORE
	# the sanitizers
	--enable KASAN --enable KASAN_GENERIC --enable KASAN_INLINE
	--disable KASAN_OUTLINE
	--enable PROVE_LOCKING --enable DEBUG_ATOMIC_SLEEP --enable DEBUG_LIST
	--set-val LOCKDEP_BITS 16 --set-val LOCKDEP_CHAINS_BITS 18
	--set-val LOCKDEP_STACK_TRACE_BITS 20
	--enable DEBUG_KMEMLEAK --disable DEBUG_KMEMLEAK_DEFAULT_OFF
	--disable DEBUG_KMEMLEAK_AUTO_SCAN --set-val DEBUG_KMEMLEAK_MEM_POOL_SIZE 32000
	--disable DEBUG_KMEMLEAK_TEST
	--enable UBSAN --enable UBSAN_BOUNDS --enable UBSAN_SHIFT
	--enable UBSAN_SANITIZE_ALL --disable UBSAN_ALIGNMENT --disable UBSAN_TRAP
	--disable TEST_UBSAN
	--enable KFENCE --set-val KFENCE_SAMPLE_INTERVAL 100
	--enable DEBUG_FS --enable DEBUG_FS_ALLOW_ALL
	--set-val FRAME_WARN 0
)
# Each must be y in the final config (olddefconfig may refuse one).
required="KASAN KASAN_GENERIC PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_LIST
	DEBUG_KMEMLEAK UBSAN KFENCE KALLSYMS DEBUG_FS VIRTIO_PCI VIRTIO_NET
	NET_9P_VIRTIO 9P_FS INFINIBAND RDMA_RXE INFINIBAND_USER_ACCESS NET_SCH_NETEM
	NET_SCH_INGRESS NET_CLS_MATCHALL NET_ACT_GACT"
[[ $series == 6.12 ]] && required+=" UDMABUF DMABUF_HEAPS"

headers=
for dir in /usr/src/linux-headers-"$series".*-amd64; do
	[[ -d $dir ]] && headers=$dir && break
done
[[ -n $headers && -f $headers/.config ]] ||
	die "no /usr/src/linux-headers-$series.*-amd64/.config (run tools/deps.sh)"
hdr_pkg=${headers#/usr/src/}
version=$(dpkg-query -W -f='${Version}' "$hdr_pkg") || die "dpkg-query $hdr_pkg failed"
src_pkg=linux-source-$series
tarball=/usr/src/$src_pkg.tar.xz
src_version=$(dpkg-query -W -f='${Status} ${Version}' "$src_pkg" 2>/dev/null |
	awk '$3 == "installed" { print $4 }') || true
if [[ $src_version != "$version" ]]; then
	((build)) || { echo "PKG=$src_pkg=$version"; exit 0; }
	say "installing $src_pkg=$version (the sources of the $hdr_pkg kernel)"
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		"$src_pkg=$version" >&2 || die "apt-get install $src_pkg=$version failed"
fi
[[ -f $tarball ]] || die "$tarball missing"

# What building a kernel needs beyond what tools/deps.sh installs.
build_deps="libelf-dev libssl-dev bc flex bison"
missing=$(for pkg in $build_deps; do
		dpkg-query -W -f='${Status}\n' "$pkg" 2>/dev/null | grep -q 'ok installed' ||
			echo "$pkg"
	done)
if [[ -n $missing ]] && ((build)); then
	say "installing $missing"
	# shellcheck disable=SC2086 # a list of package names
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
		$missing >&2 || die "apt-get install $missing failed"
fi

mkdir -p "$cache"
exec 9>"$cache/.lock-$series"
flock 9

# The source, unpacked once per version.
src=$cache/src-$version
if [[ ! -e $src/.complete ]]; then
	((build)) || { echo "PKG=$src_pkg=$version"; exit 0; }
	say "unpacking $tarball into $src"
	rm -rf "$src" "$src.tmp"
	mkdir -p "$src.tmp"
	tar -xf "$tarball" -C "$src.tmp" --strip-components=1 || die "tar $tarball failed"
	mv "$src.tmp" "$src"
	touch "$src/.complete"
fi

# The config, made in a scratch tree (seconds), then keyed by its hash.
scratch=$(mktemp -d "$cache/config.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
cp "$headers/.config" "$scratch/.config"
modroot_stock=$("$rig/kernel.sh" "$series" | sed -n 's/^MODROOT=//p')
kver_stock=${hdr_pkg#linux-headers-}
{
	echo "Module                  Size  Used by"
	for mod in $guest_modules; do
		modprobe -d "$modroot_stock" -S "$kver_stock" --show-depends "$mod" 2>/dev/null |
			awk '$1 == "insmod" { n = $2; sub(".*/", "", n); sub("[.]ko.*", "", n); print n }' || true
	done | tr - _ | sort -u | sed 's/$/ 16384 0/'
} >"$scratch/lsmod"
# The same inputs (Debian's config, this script, the module list) give the
# same config: it is made once and kept, not at every guest boot.
memo=$cache/config-$version-$(cat "$headers/.config" "$0" "$scratch/lsmod" |
	sha256sum | cut -c1-16)
if [[ -f $memo ]]; then
	cp "$memo" "$scratch/.config"
else
	make -s -C "$src" O="$scratch" LSMOD="$scratch/lsmod" localmodconfig \
		>"$scratch/config.log" 2>&1 </dev/null ||
		{ cat "$scratch/config.log" >&2; die "make localmodconfig failed"; }
	"$src/scripts/config" --file "$scratch/.config" "${debug_options[@]}"
	make -s -C "$src" O="$scratch" olddefconfig >>"$scratch/config.log" 2>&1 </dev/null ||
		{ cat "$scratch/config.log" >&2; die "make olddefconfig failed"; }
	for opt in $required; do
		if ! grep -Eq "^CONFIG_$opt=[ym]$" "$scratch/.config"; then
			cp "$scratch/.config" "$cache/failed-config-$series"
			die "CONFIG_$opt is not set in the debug config ($cache/failed-config-$series)"
		fi
	done
	cp "$scratch/.config" "$memo.tmp" && mv "$memo.tmp" "$memo"
fi
hash=$(grep -v '^#' "$scratch/.config" | sha256sum | cut -c1-12)
dir=$cache/$version-$hash
obj=$dir/obj root=$dir/root

if [[ ! -e $dir/.complete ]]; then
	((build)) || { echo "PKG=$src_pkg=$version"; exit 0; }
	# An unfinished build of this config goes on where it stopped.
	if ! cmp -s "$scratch/.config" "$obj/.config"; then
		rm -rf "$dir"
		mkdir -p "$obj"
		cp "$scratch/.config" "$obj/.config"
	fi
	rm -rf "$root"
	mkdir -p "$root"
	cp "$scratch/lsmod" "$dir/lsmod"
	log=$dir/build.log
	say "building the $series debug kernel ($version, config $hash) at nice 19, make -j$jobs; log: $log"
	t0=$SECONDS
	(nice -n 19 make -C "$src" O="$obj" -j"$jobs" bzImage modules </dev/null &&
		nice -n 19 make -C "$src" O="$obj" INSTALL_MOD_PATH="$root" \
			DEPMOD=/sbin/depmod modules_install </dev/null) >"$log" 2>&1 &
	pid=$!
	tty=0
	[[ -t 2 ]] && tty=1
	last=-1
	while kill -0 "$pid" 2>/dev/null; do
		sleep 10
		n=$(grep -c '^  CC' "$log" 2>/dev/null) || n=0
		mins=$(((SECONDS - t0) / 60))
		if ((tty)); then
			printf '\rdebug-kernel.sh: %s: %d objects compiled, %d min' "$series" "$n" "$mins" >&2
		elif ((mins != last)); then
			say "$series: $n objects compiled, $mins min"
			last=$mins
		fi
	done
	((tty)) && echo >&2
	wait "$pid" || { tail -n 40 "$log" >&2; die "the build failed, see $log"; }
	krel=$(cat "$obj/include/config/kernel.release")
	mkdir -p "$root/boot"
	cp "$obj/arch/x86/boot/bzImage" "$root/boot/vmlinuz-$krel"
	cp "$obj/System.map" "$root/boot/System.map-$krel"
	rm -f "$root/lib/modules/$krel/build" "$root/lib/modules/$krel/source"
	depmod -b "$root" "$krel" || die "depmod -b $root $krel failed"
	touch "$dir/.complete"
	say "built $krel in $(((SECONDS - t0) / 60)) min"
fi
krel=$(cat "$obj/include/config/kernel.release")
echo "KVER=$krel"
echo "PKG=$src_pkg=$version"
echo "VMLINUZ=$root/boot/vmlinuz-$krel"
echo "MODROOT=$root"
echo "KDIR=$obj"
