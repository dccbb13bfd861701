#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-nixl-deps.sh: build NIXL, which the KXFER backend plugin builds
# against and its tests run on, from the offline sources in
# ../shared/third_party, into a cache keyed by the tarball's hash.
#
# Usage: tools/nixl/build-nixl-deps.sh [--print-prefix]
#
# Unpacks nixl-src-min.tar.xz into CACHE/nixl-HASH/nixl-src and runs the
# third-party build-nixl.sh there (meson and ninja, -j2, niced; about
# 150 s on two cores), leaving
#     CACHE/nixl-HASH/prefix      the NIXL_PREFIX to build the plugin with
#     CACHE/nixl-HASH/build       the meson build tree (the Python package
#                                 nixl-meta lives only there)
#     CACHE/nixl-HASH/nixl-src    the sources (abseil's headers, which the
#                                 installed headers include)
#     CACHE/nixl-HASH/env         shell assignments for tests: NIXL_PREFIX,
#                                 NIXL_LIBDIR, NIXL_PLUGIN_DIR (NIXL's own
#                                 plugins), NIXL_PYTHONPATH, NIXL_ABSL
#     CACHE/nixl-HASH/.done       written last: the cache is complete
# HASH is the first 16 hex digits of the tarball's SHA-256, so that other
# sources build elsewhere.  A complete cache is used as it is, silently; a
# partial one (a build that was interrupted) is removed and built again.
# The packages it needs are in tools/deps.sh.  Runs under a lock, so
# that two makes do not build the same thing at once.
#
# Prints the cache folder (with --print-prefix: its prefix) on stdout,
# progress on stderr; the build's output goes to CACHE/nixl-HASH.log.
#
# Environment: KXFER_CACHE (default /var/cache/kxfer), KXFER_THIRD_PARTY
# (default ../shared/third_party beside the project's top folder).

set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
third=${KXFER_THIRD_PARTY:-$(cd "$top/.." && pwd)/shared/third_party}
cache=${KXFER_CACHE:-/var/cache/kxfer}
tarball=$third/nixl-src-min.tar.xz
recipe=$third/build-nixl.sh

die() { echo "build-nixl-deps: $*" >&2; exit 1; }

print=dir
case ${1:-} in
'') ;;
--print-prefix) print=prefix ;;
*) sed -n '/^# Usage:/,/^$/{s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
esac

[[ -r $tarball ]] || die "no NIXL sources at $tarball"
[[ -x $recipe ]] || die "no build recipe at $recipe"

hash=$(sha256sum "$tarball" | cut -c1-16)
dir=$cache/nixl-$hash
log=$dir.log

report() {
	if [[ $print == prefix ]]; then
		echo "$dir/prefix"
	else
		echo "$dir"
	fi
}

[[ -f $dir/.done ]] && { report; exit 0; }

mkdir -p "$cache" || die "cannot create $cache"
exec 9>"$cache/.nixl.lock"
flock 9
# Another make may have finished it while this one waited.
[[ -f $dir/.done ]] && { report; exit 0; }

for cmd in meson ninja g++ pkg-config xz; do
	command -v "$cmd" >/dev/null || die "$cmd is missing: run tools/deps.sh (make deps)"
done

t0=$SECONDS
echo "build-nixl-deps: building NIXL ($tarball, sha256 $hash...) into $dir;" \
	"about 150 s on two cores, output in $log" >&2
rm -rf "$dir"
mkdir -p "$dir"
tar -C "$dir" -xJf "$tarball"
[[ -f $dir/nixl-src/meson.build ]] || die "$tarball did not unpack to nixl-src/"

if ! "$recipe" "$dir/nixl-src" "$dir/build" "$dir/prefix" >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "the NIXL build failed after $((SECONDS - t0)) s; its output is in $log"
fi

libdir=$dir/prefix/lib/x86_64-linux-gnu
absl=$(find "$dir/nixl-src/subprojects" -maxdepth 1 -type d -name 'abseil-cpp-*' | head -n 1)
[[ -f $libdir/libnixl.so && -f $dir/prefix/include/backend/backend_engine.h ]] ||
	die "the NIXL build left no libnixl.so or backend headers under $dir/prefix"
[[ -d $dir/build/src/bindings/python/nixl-meta ]] ||
	die "the NIXL build left no Python package nixl-meta"
[[ -n $absl ]] || die "no abseil-cpp in $dir/nixl-src/subprojects"

cat >"$dir/env" <<ENV
NIXL_PREFIX=$dir/prefix
NIXL_LIBDIR=$libdir
NIXL_PLUGIN_DIR=$libdir/plugins
NIXL_PYTHONPATH=$dir/build/src/bindings/python/nixl-meta:$dir/prefix/lib/python3/dist-packages
NIXL_ABSL=$absl
ENV
touch "$dir/.done"
echo "build-nixl-deps: NIXL built in $((SECONDS - t0)) s: $dir" >&2
report
