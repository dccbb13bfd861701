#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-only
#
# rails-smoke.sh: make check's part of rails.sh (two guests, two NICs
# each): both rails up, jobs spread over them, one round of the
# notification stream through the loss of a's rxe1 (b's jobs on that
# rail posted again on the other once a fenced it, each notification
# once and after its data), one round through b's eth1 going down and
# up (the rail comes back), and the teardown.  KXFER_SUITES=rails runs
# all of rails.sh.

KXFER_RAILS_SMOKE=1
export KXFER_RAILS_SMOKE
exec bash "$KXFER_TOP/selftests/guest/rails.sh"
