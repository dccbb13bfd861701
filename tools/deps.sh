#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# deps.sh: install the Debian 12 packages kxfer needs to build and test.
#
# Usage: tools/deps.sh        (as root; `make deps` runs it)
#
# Idempotent and silent when everything is installed: it asks dpkg-query
# first and only then runs apt-get update and install. The guest kernel images
# are not installed on the host: selftests/rig/kernel.sh downloads and unpacks
# them into a cache. Exit status: 0 when every package is installed, 1 with a
# message otherwise.

set -euo pipefail

die() { echo "deps.sh: $*" >&2; exit 1; }

packages=(
	# module and tool builds
	gcc make libc6-dev bc flex bison pkg-config sparse
	linux-headers-amd64 linux-headers-6.12-amd64
	libnl-3-dev libnl-genl-3-dev libibverbs-dev librdmacm-dev
	# selftests/hostile makes its authentication proofs with OpenSSL
	libssl-dev
	# kselftest_harness.h for the selftests
	linux-source-6.1
	# guest rig: QEMU, initramfs, module tooling
	qemu-system-x86 busybox-static cpio kmod xz-utils
	# RDMA in the guests (they run the host's binaries)
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils perftest iproute2
	# scripts; perf for tools/bench/run --profile
	jq linux-perf
	python3-yaml
	# make htmldocs: Documentation/ with Sphinx (a host test of make check)
	python3-sphinx
	# tools/bench/scale draws the scale curves (issue 44)
	python3-matplotlib
	# NIXL 1.4.0 for tools/nixl (tools/nixl/build-nixl-deps.sh builds it
	# offline from ../shared/third_party); not libabsl-dev nor
	# libtomlplusplus-dev, which are too old for it and would be found
	# before the copies in its subprojects/
	meson ninja-build cmake g++ libasio-dev pybind11-dev python3-dev
	python3-numpy liburing-dev libaio-dev
	# UCX 1.22.0 for make bench's KXFER-against-UCX rows
	# (tools/nixl/build-ucx-deps.sh builds it offline from
	# ../shared/third_party, and NIXL with its UCX plugin against it)
	autoconf automake libtool
)

missing=()
for pkg in "${packages[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) || status=
	[[ $status == installed ]] || missing+=("$pkg")
done
((${#missing[@]})) || exit 0

((EUID == 0)) || die "run as root to install: ${missing[*]}"
echo "deps.sh: installing ${missing[*]}"
apt-get update -qq || die "apt-get update failed"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" ||
	die "apt-get install failed for: ${missing[*]}"

for pkg in "${missing[@]}"; do
	status=$(dpkg-query -W -f='${db:Status-Status}' "$pkg" 2>/dev/null) || status=
	[[ $status == installed ]] || die "$pkg is still not installed"
done
