#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel.sh: fetch and unpack the Debian kernel the guests boot, into a cache.
#
# Usage: selftests/rig/kernel.sh [--no-fetch] KVER_SERIES
#
#   KVER_SERIES  6.1  (linux-image-amd64, Debian 12's kernel, main target)
#                6.12 (linux-image-6.12-amd64, the compatibility target;
#                      the -unsigned image package is preferred when it exists)
#                6.1-debug, 6.12-debug: the sanitizer kernels built from
#                      Debian's sources by debug-kernel.sh (make check-debug),
#                      which prints the same lines; --no-fetch: --no-build
#
# The exact image package is resolved through the metapackage every time
# (`apt-cache depends`, local and cheap) because versions move. The package is
# `apt-get download`ed into the cache, unpacked with `dpkg-deb -x` into
# CACHE/ROOT-<kver> and indexed with `depmod -b`. A finished root carries a
# `.complete` stamp: a second run only resolves the name and prints.
#
# Output, one KEY=VALUE per line, no spaces in values (safe to read with
# `while IFS== read -r key value`):
#   KVER=6.1.0-57-amd64                      kernel release (uname -r)
#   PKG=linux-image-6.1.0-57-amd64           image package used
#   VMLINUZ=CACHE/ROOT-<kver>/boot/vmlinuz-<kver>
#   MODROOT=CACHE/ROOT-<kver>                root for `modprobe -d` / `depmod -b`;
#                                            modules are in MODROOT/lib/modules/<kver>
#   KDIR=/usr/src/linux-headers-<kver>       build tree that matches this kernel
# With --no-fetch nothing is downloaded: KVER, PKG and KDIR are printed, and
# VMLINUZ/MODROOT only if the root is already cached.
#
# Environment: KXFER_CACHE (default /var/cache/kxfer).
# Exit status: 0 ok, 1 failure (message on stderr), 2 usage.

set -euo pipefail

die() { echo "kernel.sh: $*" >&2; exit 1; }
usage() { sed -n '/^# Usage:/,/^# Exit status/s/^# \{0,1\}//p' "$0" >&2; exit 2; }

fetch=1
if [[ ${1:-} == --no-fetch ]]; then
	fetch=0
	shift
fi
[[ $# -eq 1 ]] || usage
series=$1
cache=${KXFER_CACHE:-/var/cache/kxfer}

case $series in
6.1-debug | 6.12-debug)
	if ((fetch)); then
		exec "$(dirname "${BASH_SOURCE[0]}")/debug-kernel.sh" "${series%-debug}"
	fi
	exec "$(dirname "${BASH_SOURCE[0]}")/debug-kernel.sh" --no-build "${series%-debug}" ;;
6.1)  meta=linux-image-amd64 ;;
6.12) meta=linux-image-6.12-amd64 ;;
*)    usage ;;
esac

# The metapackage depends on exactly one versioned image package.
pkg=$(apt-cache depends "$meta" 2>/dev/null |
	awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
[[ -n $pkg ]] || die "cannot resolve $meta with apt-cache depends (run tools/deps.sh, apt-get update?)"
if [[ $series == 6.12 ]] && apt-cache show "$pkg-unsigned" >/dev/null 2>&1; then
	pkg=$pkg-unsigned
fi
kver=${pkg#linux-image-}
kver=${kver%-unsigned}

root=$cache/ROOT-$kver
kdir=/usr/src/linux-headers-$kver

print_result() {
	echo "KVER=$kver"
	echo "PKG=$pkg"
	if [[ -e $root/.complete ]]; then
		echo "VMLINUZ=$root/boot/vmlinuz-$kver"
		echo "MODROOT=$root"
	fi
	echo "KDIR=$kdir"
	[[ -d $kdir ]] || echo "kernel.sh: warning: $kdir missing (install linux-headers-$kver)" >&2
}

if [[ -e $root/.complete || $fetch -eq 0 ]]; then
	print_result
	exit 0
fi

mkdir -p "$cache" || die "cannot create cache $cache"
# One fetcher at a time; a second caller waits and then finds the stamp.
exec 9>"$cache/.lock"
flock 9
if [[ ! -e $root/.complete ]]; then
	echo "kernel.sh: fetching $pkg into $cache" >&2
	deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*_amd64.deb" -print -quit)
	if [[ -z $deb ]]; then
		# Download as root into a root-owned folder: no _apt sandbox.
		(cd "$cache" && apt-get download -qq -o APT::Sandbox::User=root "$pkg") ||
			die "apt-get download $pkg failed"
		deb=$(find "$cache" -maxdepth 1 -name "${pkg}_*_amd64.deb" -print -quit)
		[[ -n $deb ]] || die "downloaded $pkg but no .deb in $cache"
	fi
	rm -rf "$root.tmp"
	dpkg-deb -x "$deb" "$root.tmp" || die "dpkg-deb -x $deb failed"
	# Merged-/usr packages put modules under usr/lib; keep one path.
	if [[ ! -d $root.tmp/lib/modules && -d $root.tmp/usr/lib/modules ]]; then
		ln -s usr/lib "$root.tmp/lib"
	fi
	[[ -f $root.tmp/boot/vmlinuz-$kver ]] || die "$deb has no boot/vmlinuz-$kver"
	[[ -d $root.tmp/lib/modules/$kver ]] || die "$deb has no lib/modules/$kver"
	depmod -b "$root.tmp" "$kver" || die "depmod -b $root.tmp $kver failed"
	rm -rf "$root"
	mv "$root.tmp" "$root"
	touch "$root/.complete"
fi
flock -u 9
print_result
