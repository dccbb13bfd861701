# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# lib.sh: helpers for kxfer test scripts; source it, do not run it.
# Used by the guest suites (selftests/guest/*.sh), by guest-boot.sh and, for
# ktap_run, by selftests/run-suite on the host.
#
# Results go to $KXFER_OUT/results, one line per test:
#     PASS NAME | FAIL NAME | SKIP NAME
# NAME has no white space (it is replaced by "_"). Each test's output goes to
# $KXFER_OUT/logs/NAME.log (for ktap_run: logs/BINARY.log, shared by all the
# tests of that binary); a ktest that fails leaves the kernel log's last 40
# lines beside it, in logs/NAME.kernel.log. Skip is exit status 4, as in
# kselftest.
#
#   ktest NAME FUNC [ARGS...]  run FUNC ARGS in a subshell with `set -e -o
#                         pipefail`, stdin from /dev/null, output to its log,
#                         a timeout of $KTEST_TIMEOUT seconds (default 300,
#                         the whole process group is killed) and its own
#                         `defer` stack; status 0 PASS, 4 SKIP, else FAIL.
#                         Always returns 0: one failing test does not stop
#                         the suite.
#   ktap_run BIN [ARGS...] run a kselftest-harness (TAP) binary; one result
#                         per "ok N" / "not ok N" line, named BIN:TEST; a
#                         "# SKIP" directive is SKIP. A binary that exits
#                         non-zero without reporting a failure, or reports
#                         fewer tests than its plan, adds FAIL BIN. Timeout
#                         $KTAP_TIMEOUT seconds (default 600); named
#                         $KTAP_NAME instead of BIN when that is set.
#   skip MSG              end the current test as SKIP
#   require_cmd CMD...    skip the current test unless every CMD exists
#   busywait MS CMD...    retry CMD until it succeeds, at most MS ms; prints
#                         CMD's output, stdout and stderr, once (net/lib.sh's
#                         busywait, but it yields 10 ms between attempts so
#                         that rxe's work is not starved on a single-CPU TCG
#                         guest). On a timeout it also says, on stderr, what
#                         it waited for: the command, how long it waited, its
#                         last status and output, then calls the suite's
#                         wait_explain CMD... if there is one (common.sh:
#                         the state of the peer a peer wait was about)
#   slowwait SEC CMD...   the same, retrying every 100 ms
#   barrier NAME [SEC]    two guests: wait until the other guest reaches the
#                         barrier of the same name and rank (default timeout
#                         $KXFER_BARRIER_TIMEOUT or 120 s); fails at once if
#                         the other guest's script already ended. One guest:
#                         returns 0.
#   barrier_rank N        the next barrier has rank N + 1 (both guests set the
#                         same N to get back in step after a failed test)
#   check_err ENAME CMD...  CMD must fail and its output must name the errno
#                         (ENAME or its strerror text, e.g. EEXIST or
#                         "File exists"); prints the output otherwise.
#   check_fail CMD...     CMD must fail (any status but 0).
#   defer CMD [ARGS...]   run CMD ARGS when the current (sub)shell exits, last
#                         deferred first; sets an EXIT trap (replacing any).
#   stop_process PID      end a background child (TERM) and reap it; quiet if
#                         it has already exited (for `defer stop_process $!`)
#   kill_me               guest b: have vm-run kill this guest outright (no
#                         shutdown) and boot it again with KXFER_BOOT + 1;
#                         never returns
#
# KXFER_SLOW (an integer, default 1; vm-run passes it on from the host):
# every timeout above is multiplied by it: ktest's and ktap_run's, the
# waits of busywait and slowwait, and barrier's (given or default), so
# that a suite keeps its checks on a kernel that is that much slower
# (make check-debug: KASAN and lockdep under TCG). The timeouts printed
# are the scaled ones.
#
# Environment set by vm-run in the guests: KXFER_GUEST (a|b), KXFER_GUESTS
# (1|2), KXFER_BOOT (1, one more after each kill), KXFER_SELF_ADDR,
# KXFER_PEER_ADDR (two guests), KXFER_OUT (/out), KXFER_SHARED (/shared),
# KXFER_TOP, KXFER_KVER, KXFER_RDMA_DEV (rxe0), KXFER_NETDEV (eth0),
# KXFER_NICS (1|2); with two NICs (vm-run --nics 2) KXFER_NETDEV2 (eth1),
# KXFER_RDMA_DEV2 (rxe1), KXFER_SELF_ADDR2, KXFER_PEER_ADDR2 (two guests).

ksft_skip=4
KXFER_DEFER=()

# _kx_slow N: N times KXFER_SLOW.
_kx_slow() {
	local slow=${KXFER_SLOW:-1}

	[[ $slow =~ ^[1-9][0-9]*$ ]] || slow=1
	echo "$(($1 * slow))"
}

_kx_name() {
	local name=${1//[[:space:]]/_}

	echo "${name//\//_}"
}

# Microseconds since the epoch, and "N.N s" elapsed since such a stamp.
_kx_now_us() {
	echo "${EPOCHREALTIME//[!0-9]/}"
}

_kx_since() {
	local ds=$((($(_kx_now_us) - $1) / 100000))

	echo "$((ds / 10)).$((ds % 10)) s"
}

_kx_record() {
	mkdir -p "$KXFER_OUT"
	echo "$1 $2" >>"$KXFER_OUT/results"
	echo "$1 $2${3:+ ($3)}"
}

_kx_defer_run() {
	local i

	for ((i = ${#KXFER_DEFER[@]} - 1; i >= 0; i--)); do
		eval "${KXFER_DEFER[i]}" || echo "defer: '${KXFER_DEFER[i]}' failed" >&2
	done
	KXFER_DEFER=()
}

defer() {
	KXFER_DEFER+=("$(printf '%q ' "$@")")
	trap _kx_defer_run EXIT
}

stop_process() {
	kill -TERM "$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || true
}

skip() {
	echo "SKIP: $*"
	exit "$ksft_skip"
}

require_cmd() {
	local cmd

	for cmd; do
		command -v "$cmd" >/dev/null || skip "$cmd not installed"
	done
}

# The ERR trap of a test: set -e ends a test at the first command that
# fails, often a bare [ ] that says nothing; this names it, with its status
# and where it ran (each function, its file and line, innermost first).
_kx_err() {
	local status=$1 cmd=$2 i where=

	# only where set -e is in force: not in a command substitution (bash
	# does not pass -e into one), where a failure is a result
	[[ $- == *e* ]] || return 0

	for ((i = 1; i < ${#FUNCNAME[@]}; i++)); do
		where+=" ${FUNCNAME[i]}(${BASH_SOURCE[i]##*/}:${BASH_LINENO[i - 1]})"
	done
	echo "failed: '$cmd' returned $status in$where" >&2
}

ktest() {
	local name func log rc=0 finished monitor=+m t0 limit

	t0=$(_kx_now_us)
	limit=$(_kx_slow "${KTEST_TIMEOUT:-300}")

	name=$(_kx_name "$1")
	func=$2
	shift 2
	log=$KXFER_OUT/logs/$name.log
	mkdir -p "$KXFER_OUT/logs"
	echo "# ktest $name: $func $*" >"$log"

	# Job control gives the test its own process group, so that a timeout
	# can kill everything it started.
	[[ $- == *m* ]] && monitor=-m
	set -m
	(
		set -eE -o pipefail
		KXFER_DEFER=()
		trap _kx_defer_run EXIT
		trap '_kx_err $? "$BASH_COMMAND"' ERR
		"$func" "$@"
	) </dev/null >>"$log" 2>&1 &
	local pid=$!
	set "$monitor"
	sleep "$limit" &
	local watchdog=$!

	wait -n -p finished "$pid" "$watchdog" || rc=$?
	# The caller may run with `set -e`: nothing here may fail.
	if [[ $finished == "$pid" ]]; then
		kill "$watchdog" 2>/dev/null || true
		wait "$watchdog" 2>/dev/null || true
	else
		kill -TERM -- "-$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
		kill -KILL -- "-$pid" 2>/dev/null || true
		echo "# ktest $name: timed out after $limit s" >>"$log"
		rc=124
	fi
	# What a test that did not pass started must not run on into the
	# next tests (a stream left running keeps the module busy and the
	# link loaded).
	if [[ $rc != 0 ]] && kill -KILL -- "-$pid" 2>/dev/null; then
		echo "# ktest $name: killed what it left running" >>"$log"
	fi
	# and the kernel's last lines go beside its log (logs/NAME.kernel.log):
	# the guest's whole kernel log comes only when the suite is done
	if [[ $rc != 0 && -r /dev/kmsg ]]; then
		dmesg 2>/dev/null | tail -n 40 >"${log%.log}.kernel.log"
	fi

	local took
	took=$(_kx_since "$t0")
	case $rc in
	0) _kx_record PASS "$name" "$took" ;;
	"$ksft_skip") _kx_record SKIP "$name" "$took" ;;
	*) _kx_record FAIL "$name" "$took, status $rc" ;;
	esac
	return 0
}

ktap_run() {
	local bin=$1 base log rc=0
	shift
	base=$(_kx_name "${KTAP_NAME:-${bin##*/}}")
	log=$KXFER_OUT/logs/$base.log
	mkdir -p "$KXFER_OUT/logs"

	timeout -k 10 "$(_kx_slow "${KTAP_TIMEOUT:-600}")" "$bin" "$@" </dev/null >"$log" 2>&1 || rc=$?

	local line rest name status planned=-1 plan_skip=0 seen=0 failed=0 last_run=
	while IFS= read -r line; do
		if [[ $line =~ ^1\.\.([0-9]+) ]]; then
			planned=${BASH_REMATCH[1]}
			[[ $line == *"# SKIP"* ]] && plan_skip=1
		elif [[ $line =~ ^#[[:space:]]+RUN[[:space:]]+(.*[^[:space:]])[[:space:]]+\.\.\.$ ]]; then
			last_run=${BASH_REMATCH[1]}
		elif [[ $line =~ ^(not )?ok\ [0-9]+(\ (.*))?$ ]]; then
			status=PASS
			[[ -n ${BASH_REMATCH[1]} ]] && status=FAIL
			rest=${BASH_REMATCH[3]}
			# kselftest 6.1 prints "ok N # SKIP reason" without a name;
			# the name is on the "#  RUN  NAME ..." line before it.
			name=${rest%%#*}
			name=${name%"${name##*[![:space:]]}"}
			[[ -n $name ]] || name=${last_run:-test$((seen + 1))}
			[[ $rest == *"# SKIP"* || $rest == *"# skip"* ]] && status=SKIP
			[[ $status == FAIL ]] && failed=$((failed + 1))
			seen=$((seen + 1))
			_kx_record "$status" "$base:$(_kx_name "$name")"
		fi
	done <"$log"

	if ((seen == 0)) && { ((plan_skip)) || ((rc == ksft_skip)); }; then
		_kx_record SKIP "$base"
	elif ((seen < planned)) || ((seen == 0)) || ((rc != 0 && failed == 0)); then
		_kx_record FAIL "$base" "status $rc, $seen of $planned tests reported"
	fi
	return 0
}

# ktap_section LOG TEST: the part of a kselftest-harness log about TEST, from
# its "RUN" line to its "ok"/"not ok" line; the whole log if TEST is not there.
ktap_section() {
	awk -v t="$2" '
		{ all[NR] = $0 }
		$1 == "#" && $2 == "RUN" && $3 == t { on = 1 }
		on { out = out $0 "\n" }
		on && /^(not )?ok [0-9]+/ { on = 0; done = 1 }
		END {
			if (done) { printf "%s", out; exit }
			for (i = 1; i <= NR; i++) print all[i]
		}' "$1"
}

# _kx_wait_failed MS_WAITED TRIES STATUS OUT CMD...: what a wait that timed
# out waited for and what it saw, on stderr.
_kx_wait_failed() {
	local waited=$1 tries=$2 status=$3 out=$4

	shift 4
	{
		echo "wait: gave up after $waited ms and $tries tries: $*"
		echo "wait: last status $status, last output:"
		if [[ -n $out ]]; then
			sed 's/^/wait: | /' <<<"$out"
		else
			echo "wait: | (none)"
		fi
		if declare -F wait_explain >/dev/null; then
			wait_explain "$@" 2>&1 | sed 's/^/wait: /'
		fi
	} >&2
}

_kx_wait() {
	local pause=$1 timeout_ms=$2 out start now rc tries=0
	shift 2
	start=${EPOCHREALTIME//[!0-9]/}
	while true; do
		rc=0
		tries=$((tries + 1))
		# stderr too: a command that fails until it succeeds says why
		# every time, and only the last time matters
		out=$("$@" 2>&1) || rc=$?
		if ((rc == 0)); then
			# a line of its own in a log; $(busywait ...) drops the newline
			[[ -z $out ]] || printf '%s\n' "$out"
			return 0
		fi
		now=${EPOCHREALTIME//[!0-9]/}
		if (((now - start) / 1000 > timeout_ms)); then
			_kx_wait_failed "$(((now - start) / 1000))" "$tries" "$rc" "$out" "$@"
			return 1
		fi
		sleep "$pause"
	done
}

busywait() {
	local timeout_ms

	timeout_ms=$(_kx_slow "$1")
	shift
	_kx_wait 0.01 "$timeout_ms" "$@"
}

slowwait() {
	local timeout_s=$1

	shift
	_kx_wait 0.1 "$(_kx_slow "$((timeout_s * 1000))")" "$@"
}

KXFER_BARRIER_SEQ=${KXFER_OUT:-/tmp}/.barrier.seq

barrier_rank() {
	echo "$1" >"$KXFER_BARRIER_SEQ"
}

barrier() {
	local name=$1 timeout_s=${2:-${KXFER_BARRIER_TIMEOUT:-120}}
	local seq_file=$KXFER_BARRIER_SEQ seq peer mine theirs deadline f n max=0 last=none

	[[ ${KXFER_GUESTS:-1} == 2 ]] || return 0
	peer=a
	[[ $KXFER_GUEST == a ]] && peer=b
	# Barriers are ranked so that a name can be reused; the rank lives in a
	# file because tests run in subshells, in /out so that a guest killed
	# and booted again (vm-run) goes on counting.
	seq=$(($(cat "$seq_file" 2>/dev/null || echo 0) + 1))
	echo "$seq" >"$seq_file"
	mine=$KXFER_SHARED/barrier.$seq.$name.$KXFER_GUEST
	theirs=$KXFER_SHARED/barrier.$seq.$name.$peer
	: >"$mine"

	timeout_s=$(_kx_slow "$timeout_s")
	deadline=$((SECONDS + timeout_s))
	until [[ -e $theirs ]]; do
		if [[ -e $KXFER_SHARED/done.$peer ]]; then
			echo "barrier $name (#$seq): guest $peer has already finished" >&2
			return 1
		fi
		if ((SECONDS >= deadline)); then
			for f in "$KXFER_SHARED"/barrier.*."$peer"; do
				n=${f##*/barrier.}
				n=${n%%.*}
				[[ $n =~ ^[0-9]+$ ]] && ((n > max)) && max=$n last=${f##*/}
			done
			echo "barrier $name (#$seq): no guest $peer after ${timeout_s} s;" \
				"its last barrier: $last" >&2
			return 1
		fi
		sleep 0.05
	done
}

kill_me() {
	[[ $KXFER_GUEST == b ]] || { echo "kill_me: only guest b can be killed" >&2; return 1; }
	# /out and /shared are 9p without a cache: what was written is there
	: >"$KXFER_SHARED/kill.$KXFER_GUEST"
	while :; do
		sleep 60
	done
}

check_fail() {
	local out

	if out=$("$@" 2>&1); then
		echo "check_fail: '$*' succeeded; output:" >&2
		echo "$out" >&2
		return 1
	fi
	return 0
}

# _kx_strerror ENAME: strerror() of an errno name. The number comes from the
# kernel's uapi headers (loading perl's POSIX module costs a second on TCG).
_kx_strerror() {
	local name=$1 num i

	for ((i = 0; i < 3; i++)); do
		num=$(awk -v n="$name" '$1 == "#define" && $2 == n { print $3; exit }' \
			/usr/include/asm-generic/errno-base.h /usr/include/asm-generic/errno.h)
		[[ $num == E* ]] || break
		name=$num
	done
	if [[ $num =~ ^[0-9]+$ ]]; then
		perl -e '$! = shift; print "$!"' "$num"
	else
		perl -MPOSIX -e 'my $f = POSIX->can($ARGV[0]) or exit 1;
			$! = $f->(); print "$!"' "$name"
	fi
}

check_err() {
	local ename=$1 text out rc=0
	shift
	text=$(_kx_strerror "$ename") ||
		{ echo "check_err: unknown errno $ename" >&2; return 1; }

	out=$("$@" 2>&1) || rc=$?
	if ((rc == 0)); then
		echo "check_err: '$*' succeeded, expected $ename; output:" >&2
	elif [[ $out == *"$ename"* || $out == *"$text"* ]]; then
		return 0
	else
		echo "check_err: '$*' failed (status $rc) without $ename ($text); output:" >&2
	fi
	echo "$out" >&2
	return 1
}
