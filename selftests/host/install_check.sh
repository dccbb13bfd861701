#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# install_check: `make install` into a scratch root, then use what it
# installed: the tool runs, the man page is there, a program built with
# the installed header and pkg-config file links against the installed
# library and runs, and the module is a kxfer module.  KTAP output, one
# test per check; run by run-suite as host test install_test.

top=$(cd "$(dirname "$0")/../.." && pwd)
root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
n=0 failed=0

check() { # NAME CMD...: one KTAP result
	local name=$1 out

	shift
	n=$((n + 1))
	if out=$("$@" 2>&1); then
		echo "ok $n $name"
	else
		failed=$((failed + 1))
		echo "$out" | sed 's/^/# /'
		echo "not ok $n $name"
	fi
}

install_all() {
	make -s -C "$top" install DESTDIR="$root" PREFIX=/usr
}

tool_runs() {
	"$root/usr/sbin/kxferctl" help >/dev/null &&
		test -s "$root/usr/share/man/man8/kxferctl.8"
}

# A program of a service, built as its author would, against the install.
library_links() {
	local flags prog=$root/prog

	flags=$(PKG_CONFIG_SYSROOT_DIR=$root \
		PKG_CONFIG_LIBDIR=$root/usr/lib/pkgconfig \
		pkg-config --cflags --libs libkxfer) || return 1
	cat >"$root/prog.c" <<'PROG'
#include <errno.h>
#include <stdio.h>
#include <kxfer.h>

int main(void)
{
	struct kxfer *kx;
	int ret = kxfer_open(&kx);

	/* No module on the build host: the library says so, as documented. */
	if (ret == 0) {
		kxfer_close(kx);
		return 0;
	}
	printf("kxfer_open: %d\n", ret);
	return ret == -ENOENT ? 0 : 1;
}
PROG
	# shellcheck disable=SC2086
	cc -Wall -Werror -o "$prog" "$root/prog.c" $flags || return 1
	ldd "$prog" | grep -q "$root/usr/lib/libkxfer.so.0" ||
		LD_LIBRARY_PATH=$root/usr/lib ldd "$prog" | grep -q "$root/usr/lib/libkxfer.so.0" ||
		return 1
	LD_LIBRARY_PATH=$root/usr/lib "$prog"
}

module_installed() {
	local ko

	ko=$(find "$root/lib/modules" -name kxfer.ko | head -n 1)
	[ -n "$ko" ] && [ "$(/sbin/modinfo -F name "$ko")" = kxfer ]
}

echo "TAP version 13"
echo "1..4"
check make_install install_all
check tool_and_man_page tool_runs
check library_links_and_runs library_links
check module_installed module_installed
echo "# Totals: pass:$((n - failed)) fail:$failed"
[ "$failed" = 0 ]
