#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-ucx-deps.sh: build UCX 1.22.0, and NIXL with its UCX plugin
# against it, for make bench's KXFER-against-UCX rows, from the offline
# sources in ../shared/third_party, into a cache keyed by their hashes.
#
# Usage: tools/nixl/build-ucx-deps.sh [--print-prefix]
#
# A sibling of build-nixl-deps.sh, whose NIXL (no UCX) make check, make
# demo and the plugin's tests use; this one is for make bench only.
# UCX: ucx-1.22.0.tar.xz, autogen.sh and contrib/configure-release with
# verbs and rdmacm, multi-threading on (NIXL's UCX backend refuses a UCX
# without it), no CUDA, ROCm, Java or Go; make -j2, niced; about 8 min on
# two quiet cores.  NIXL: nixl-src-min.tar.xz, configured as the
# third-party build-nixl.sh configures it, with the UCX and POSIX plugins
# instead of POSIX alone (-Ducx_path); about 150 s.  It leaves
#     CACHE/nixl-ucx-HASH/ucx        UCX's prefix (ucx_info in bin/)
#     CACHE/nixl-ucx-HASH/prefix     the NIXL_PREFIX, plugins UCX and POSIX
#     CACHE/nixl-ucx-HASH/build      the meson build tree (nixl-meta)
#     CACHE/nixl-ucx-HASH/nixl-src   the sources (abseil's headers)
#     CACHE/nixl-ucx-HASH/env        shell assignments: NIXL_PREFIX,
#                                    NIXL_LIBDIR, NIXL_PLUGIN_DIR,
#                                    NIXL_PYTHONPATH, NIXL_ABSL,
#                                    UCX_PREFIX, UCX_LIBDIR
#     CACHE/nixl-ucx-HASH/.done      written last: the cache is complete
# HASH is the first 16 hex digits of the SHA-256 of both tarballs' hashes
# and of the recipe's version below.  A complete cache is used as it is,
# silently; a partial one is removed and built again.  UCX's own build
# tree is removed once installed.  The packages it needs are in
# tools/deps.sh.  Runs under a lock.
#
# Prints the cache folder (with --print-prefix: NIXL's prefix) on stdout,
# progress on stderr; the builds' output goes to CACHE/nixl-ucx-HASH.log.
#
# Environment: KXFER_CACHE (default /var/cache/kxfer), KXFER_THIRD_PARTY
# (default ../shared/third_party beside the project's top folder).

set -euo pipefail

top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
third=${KXFER_THIRD_PARTY:-$(cd "$top/.." && pwd)/shared/third_party}
cache=${KXFER_CACHE:-/var/cache/kxfer}
ucx_tarball=$third/ucx-1.22.0.tar.xz
nixl_tarball=$third/nixl-src-min.tar.xz
# bump when the recipe below changes what is built
recipe_version=1

die() { echo "build-ucx-deps: $*" >&2; exit 1; }

print=dir
case ${1:-} in
'') ;;
--print-prefix) print=prefix ;;
*) sed -n '/^# Usage:/,/^$/{s/^# \{0,1\}//p}' "$0" >&2; exit 2 ;;
esac

[[ -r $ucx_tarball ]] || die "no UCX sources at $ucx_tarball"
[[ -r $nixl_tarball ]] || die "no NIXL sources at $nixl_tarball"

hash=$({
	sha256sum "$ucx_tarball" "$nixl_tarball" | cut -d' ' -f1
	echo "recipe $recipe_version"
} | sha256sum | cut -c1-16)
dir=$cache/nixl-ucx-$hash
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
exec 9>"$cache/.nixl-ucx.lock"
flock 9
[[ -f $dir/.done ]] && { report; exit 0; }

for cmd in autoconf automake libtoolize make meson ninja g++ pkg-config xz; do
	command -v "$cmd" >/dev/null || die "$cmd is missing: run tools/deps.sh (make deps)"
done

# build_ucx: UCX from its tarball into $dir/ucx
build_ucx() {
	local src=$dir/ucx-1.22.0

	tar -C "$dir" -xJf "$ucx_tarball"
	[[ -x $src/autogen.sh ]] || die "$ucx_tarball did not unpack to ucx-1.22.0/"
	(
		cd "$src"
		nice -n 10 ./autogen.sh
		nice -n 10 ./contrib/configure-release --prefix="$dir/ucx" \
			--with-verbs --with-rdmacm --without-cuda --without-rocm \
			--without-java --without-go --disable-doxygen-doc --enable-mt
		nice -n 10 make -j2
		nice -n 10 make install
	)
	rm -rf "$src"
}

# build_nixl: NIXL with the UCX and POSIX plugins into $dir/prefix, as
# build-nixl.sh builds it otherwise (CUDA hidden, Debian's python3,
# no downloads, toml++ from subprojects/)
build_nixl() {
	local native=$dir/native.ini

	tar -C "$dir" -xJf "$nixl_tarball"
	[[ -f $dir/nixl-src/meson.build ]] || die "$nixl_tarball did not unpack to nixl-src/"
	printf "[binaries]\npython3 = '/usr/bin/python3'\npython = '/usr/bin/python3'\n" >"$native"
	(
		cd "$dir/nixl-src"
		export CUDA_HOME=/nonexistent CUDA_PATH=/nonexistent
		PATH=$(tr ':' '\n' <<<"$PATH" | grep -v cuda | paste -sd:)
		nice -n 10 meson setup "$dir/build" --native-file "$native" \
			--wrap-mode=nodownload --force-fallback-for=tomlplusplus \
			--prefix="$dir/prefix" -Dbuildtype=release \
			-Denable_plugins=UCX,POSIX -Ducx_path="$dir/ucx" \
			-Dbuild_tests=false -Dbuild_examples=false
		nice -n 10 ninja -C "$dir/build" -j2
		nice -n 10 meson install -C "$dir/build" >/dev/null
	)
}

t0=$SECONDS
echo "build-ucx-deps: building UCX 1.22.0 and NIXL with its UCX plugin into $dir;" \
	"about 10 min on two cores, output in $log" >&2
rm -rf "$dir"
mkdir -p "$dir"

if ! build_ucx >"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "the UCX build failed after $((SECONDS - t0)) s; its output is in $log"
fi
"$dir/ucx/bin/ucx_info" -b 2>>"$log" | grep -q 'define ENABLE_MT *1' ||
	die "UCX was built without multi-threading (ucx_info -b: no ENABLE_MT 1)"
echo "build-ucx-deps: UCX built in $((SECONDS - t0)) s; now NIXL" >&2

if ! build_nixl >>"$log" 2>&1; then
	tail -n 40 "$log" >&2
	die "the NIXL build failed after $((SECONDS - t0)) s; its output is in $log"
fi

libdir=$dir/prefix/lib/x86_64-linux-gnu
absl=$(find "$dir/nixl-src/subprojects" -maxdepth 1 -type d -name 'abseil-cpp-*' | head -n 1)
[[ -f $libdir/libnixl.so && -f $dir/prefix/include/backend/backend_engine.h ]] ||
	die "the NIXL build left no libnixl.so or backend headers under $dir/prefix"
[[ -f $libdir/plugins/libplugin_UCX.so ]] ||
	die "the NIXL build left no UCX plugin (is UCX in $dir/ucx usable?)"
[[ -d $dir/build/src/bindings/python/nixl-meta ]] ||
	die "the NIXL build left no Python package nixl-meta"
[[ -n $absl ]] || die "no abseil-cpp in $dir/nixl-src/subprojects"

cat >"$dir/env" <<ENV
NIXL_PREFIX=$dir/prefix
NIXL_LIBDIR=$libdir
NIXL_PLUGIN_DIR=$libdir/plugins
NIXL_PYTHONPATH=$dir/build/src/bindings/python/nixl-meta:$dir/prefix/lib/python3/dist-packages
NIXL_ABSL=$absl
UCX_PREFIX=$dir/ucx
UCX_LIBDIR=$dir/ucx/lib
ENV
touch "$dir/.done"
echo "build-ucx-deps: UCX and NIXL built in $((SECONDS - t0)) s: $dir" >&2
report
