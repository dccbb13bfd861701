#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# debug-smoke.sh: a few minutes' check of make check-debug's machinery on
# a debug kernel, one guest (KXFER_SUITES=debug-smoke): the module loads,
# a pool, two exports and a 2-QP session to this guest itself come up
# and go, a small ioctl fuzz runs on them, and the module is left loaded
# for guest-boot.sh's kmemleak scan, which unloads it. run-suite then
# checks the kernel log and the leaks like the other suites'.

# shellcheck source=../rig/lib.sh
source "$KXFER_TOP/selftests/rig/lib.sh"
# shellcheck source=common.sh
source "$KXFER_TOP/selftests/guest/common.sh"
# shellcheck source=fuzz.sh
source "$KXFER_TOP/selftests/guest/fuzz.sh"

t_smoke_load() {
	kxfer_load
	test -c /dev/kxfer
	kxferctl dev show rxe0
}

t_smoke_session() {
	fuzz_objects_add
	kxferctl peer show self
	fuzz_objects_del
	fuzz_no_peers
}

ktest smoke_load t_smoke_load
ktest smoke_session t_smoke_session
ktest smoke_fuzz_nl t_fuzz_nl
