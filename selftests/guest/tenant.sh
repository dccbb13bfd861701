# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# tenant.sh: tenants that come and go (issue 40), sourced by suite-2.sh
# after its helpers.  On a, a service exports its own memory (selftests/
# tenant own); on b two services share one session of 2 QPs: one streams
# into a's administrator's export kvr, the other into the service's.  The
# service then leaves (killed, or it withdraws its export, or ends its
# pool, or the administrator deletes the export): the other stream loses
# no job and is refused none, its export is checked byte for byte at the
# end, the session never goes down, and the departed tenant's stream ends
# with ESTALE at submission, its jobs in flight with one event each.

TN_BOUND_MS=25000	# kxfer_drain_timeout_ms() with the default keepalive

tn_reconnects() {
	peer_json "$1" | jq '.[0].reconnects'
}

t_tenant_setup() {
	if on_a; then
		barrier tn-setup
		return 0
	fi
	kxferctl peer add ptn "$A" qps 2
	kxferctl peer add ptnp "$A" qps 2 cq poll
	busywait 20000 peer_state ptn up
	busywait 20000 peer_state ptnp up
	barrier tn-setup
}

# tn_case ACTION PEER: the service on a leaves by ACTION (kill, del,
# detach, admin-del, del-nowait) while b's two streams run on PEER.
tn_case() {
	local action=$1 peer=$2 own rc=0 rc1=0 rc2=0 s1 s2 rec0 line ms

	if on_a; then
		rm -f /tmp/tn-go
		case $action in
		kill | admin-del) own=wait ;;
		*) own=$action ;;
		esac
		tenant own -a "$own" -g /tmp/tn-go tnx 1M >/tmp/tn-own 2>&1 &
		local pid=$!
		defer sh -c "kill -9 $pid 2>/dev/null || true"
		busywait 10000 grep -q '^ready' /tmp/tn-own
		barrier "tn-$action-ready"
		barrier "tn-$action-streaming"
		case $action in
		kill)
			kill -9 "$pid"
			wait "$pid" || true
			;;
		admin-del)
			kxferctl export del tnx
			;;
		*)
			touch /tmp/tn-go
			wait "$pid" || true
			;;
		esac
		cat /tmp/tn-own
		if [[ $action != kill && $action != admin-del ]]; then
			# The withdrawal waited for b's answer, within the bound.
			line=$(grep "^$own: " /tmp/tn-own)
			[[ $line == "$own: 0 in "* ]] || { echo "expected '$own: 0 in T ms'"; rc=1; }
			ms=${line##* in }
			ms=${ms% ms}
			[ "$ms" -le "$(_kx_slow $TN_BOUND_MS)" ] || { echo "withdrawal took $ms ms"; rc=1; }
		fi
		barrier "tn-$action-done"
		# The administrator took its export; now the service goes too.
		if [ "$action" = admin-del ]; then
			kill -9 "$pid"
			wait "$pid" || true
		fi
		# Nothing of the service is left: its pool ends with the drain.
		busywait 30000 check_fail sh -c 'kxferctl -j pool show | grep -q tnx-pool' || rc=1
		kxferctl -j export show | jq -e 'map(select(.name == "tnx")) == []' >/dev/null || rc=1
		# Every drain answered in time: b's sessions stayed up.
		dmesg | grep -q 'no answer to the withdrawal' && { echo "a drain went unanswered"; rc=1; }
		barrier "tn-$action-checked"
		return $rc
	fi
	barrier "tn-$action-ready"
	busywait 20000 has_rexport "$peer" tnx
	rec0=$(tn_reconnects "$peer")
	tenant stream -s 20 -j 8 -l 64K -o 0 "$peer" kvr local >/tmp/tn-s1 2>&1 &
	s1=$!
	tenant stream -s 120 -j 8 -l 64K -o 12M -x ESTALE "$peer" tnx local >/tmp/tn-s2 2>&1 &
	s2=$!
	sleep 3
	barrier "tn-$action-streaming"
	wait "$s2" || rc2=$?
	wait "$s1" || rc1=$?
	echo "the departed tenant's stream:"
	cat /tmp/tn-s2
	echo "the other tenant's stream:"
	cat /tmp/tn-s1
	[ "$rc2" = 0 ] || { echo "the departed tenant's stream did not end with ESTALE"; rc=1; }
	[ "$rc1" = 0 ] || { echo "the other tenant's stream failed"; rc=1; }
	grep -q '^stream: jobs [1-9][0-9]* ok [1-9][0-9]* failed 0 (0 first) refused 0$' /tmp/tn-s1 ||
		{ echo "the other tenant lost or was refused jobs"; rc=1; }
	grep -q '^stream: export verified$' /tmp/tn-s1 || rc=1
	peer_state "$peer" up || { echo "$peer is not up"; rc=1; }
	[ "$(tn_reconnects "$peer")" = "$rec0" ] ||
		{ echo "$peer reconnected: $rec0 -> $(tn_reconnects "$peer")"; rc=1; }
	barrier "tn-$action-done"
	barrier "tn-$action-checked"
	return $rc
}

t_tenant_kill() { tn_case kill ptn; }
t_tenant_export_del() { tn_case del ptn; }
t_tenant_pool_unregister() { tn_case detach ptn; }
t_tenant_admin_del() { tn_case admin-del ptn; }
t_tenant_nowait() { tn_case detach-nowait ptn; }
t_tenant_kill_poll() { tn_case kill ptnp; }
t_tenant_del_poll() { tn_case del ptnp; }

# A peer that notifies as soon as it sees an export: a service that
# subscribes as it exports (KXFER_EXPORT_SUBSCRIBE) loses none of it, even
# if it does something else for two seconds before it reaps.
t_tenant_subscribe() {
	local rc=0

	if on_a; then
		barrier tn-sub-watching
		tenant own -d 2000 -n 50 -a exit tns 64K >/tmp/tn-sub 2>&1 || rc=1
		cat /tmp/tn-sub
		grep -q '^notes 50$' /tmp/tn-sub || rc=1
		barrier tn-sub-done
		return $rc
	fi
	tenant notify ptn tns 50 >/tmp/tn-notify 2>&1 &
	local pid=$!
	barrier tn-sub-watching
	wait "$pid" || rc=1
	cat /tmp/tn-notify
	barrier tn-sub-done
	return $rc
}

# A peer of the old protocol (wire_features without the drain, as a kxfer
# before it) keeps today's behaviour: the withdrawal does not wait for it,
# its keys die at once, and it learns of the withdrawal from EXPORT_DEL.
t_tenant_old_peer() {
	local rc=0 p=/sys/module/kxfer/parameters

	if on_a; then
		rm -f /tmp/tn-go
		tenant own -a del -g /tmp/tn-go tno 64K >/tmp/tn-old 2>&1 &
		local pid=$!
		busywait 10000 grep -q '^ready' /tmp/tn-old
		barrier tn-old-ready
		barrier tn-old-seen
		touch /tmp/tn-go
		wait "$pid" || rc=1
		cat /tmp/tn-old
		grep -q '^del: 0 in ' /tmp/tn-old || rc=1
		# Nothing was left to drain for the old peer.
		[ "$(kxferctl -j peer show | jq '[.[] | .draining] | add')" = 0 ] || rc=1
		barrier tn-old-done
		return $rc
	fi
	# the connector reads wire_features when it connects, after peer
	# add returns: put it back once the session is up
	echo 3 >$p/wire_features
	defer sh -c "echo 63 >$p/wire_features"
	kxferctl peer add ptold "$A" qps 2
	defer kxferctl peer del ptold
	busywait 20000 peer_state ptold up
	echo 63 >$p/wire_features
	barrier tn-old-ready
	busywait 20000 has_rexport ptold tno || rc=1
	barrier tn-old-seen
	# EXPORT_DEL, after the keys died: b forgets it.
	busywait 20000 check_fail has_rexport ptold tno || rc=1
	barrier tn-old-done
	return $rc
}

# A capability-scoped export (KXFER_EXPORT_TOKEN, issue 45): a service on
# a exports its memory with a random token, which it hands to b through
# /shared, the tests' out-of-band channel.  On b, a process with the token
# finds it and moves bytes both ways (a checks them too); without the
# token, with a wrong one, or for a name that does not exist, lookups fail
# with the same ENOENT; peer show on b counts it and does not list it; no
# kxferctl output nor kernel log on either side holds the token; a
# session from b with the protocol of a kxfer before tokens is not given
# it, nor counts it as withheld.  Once a withdraws it, b's handle is stale
# (ESTALE) and the token finds nothing.
tn_no_token() {
	! { kxferctl -j peer show; kxferctl peer show; kxferctl -j export show
	    kxferctl export show; dmesg; } 2>&1 | grep -qi "$1"
}

t_tenant_scoped() {
	local rc=0 p=/sys/module/kxfer/parameters tok=$KXFER_SHARED/tn-sc-token

	if on_a; then
		rm -f /tmp/tn-sc-go "$tok"
		tenant own -t "$tok" -c 64K -a del -g /tmp/tn-sc-go tsc 1M >/tmp/tn-sc 2>&1 &
		local pid=$!
		defer sh -c "kill -9 $pid 2>/dev/null || true"
		busywait 10000 grep -q '^ready' /tmp/tn-sc || { cat /tmp/tn-sc; return 1; }
		kxferctl export show tsc
		kxferctl -j export show tsc | jq -e '.[0].lookup == "token" and .[0].pid > 0' >/dev/null || rc=1
		kxferctl export show tsc | grep -q ' lookup token' || rc=1
		barrier tn-sc-ready
		barrier tn-sc-moved
		tn_no_token "$(cat "$tok")" || { echo "a shows the token"; rc=1; }
		# b's session of the old protocol (ptsc) was not given it:
		# not registered there, while the others from b have it
		kxferctl -j peer show | jq -e '[.[] | select(.name == "b" and .state == "up") |
			(.local_exports // []) | map(select(.name == "tsc")) | length] |
			(map(select(. == 0)) | length) >= 1 and (map(select(. == 1)) | length) >= 1' >/dev/null ||
			{ kxferctl -j peer show; rc=1; }
		touch /tmp/tn-sc-go
		wait "$pid" || rc=1
		cat /tmp/tn-sc
		grep -q '^check: ok$' /tmp/tn-sc || rc=1
		grep -q '^del: 0 in ' /tmp/tn-sc || rc=1
		barrier tn-sc-del
		barrier tn-sc-done
		rm -f "$tok"
		return $rc
	fi
	barrier tn-sc-ready
	rm -f /tmp/tn-sc-go
	tenant scoped -g /tmp/tn-sc-go ptn tsc local "$tok" 64K >/tmp/tn-sc 2>&1 &
	local pid=$!
	defer sh -c "kill -9 $pid 2>/dev/null || true"
	busywait 30000 grep -q '^ready' /tmp/tn-sc || { cat /tmp/tn-sc; return 1; }
	cat /tmp/tn-sc
	# counted, never listed
	kxferctl peer show ptn
	peer_json ptn | jq -e '.[0].remote_scoped == 1' >/dev/null || rc=1
	check_fail has_rexport ptn tsc || rc=1
	kxferctl peer show ptn | grep -q 'remote_scoped 1' || rc=1
	! kxferctl peer show | grep -q 'tsc' || { echo "peer show names tsc"; rc=1; }
	tn_no_token "$(cat "$tok")" || { echo "b shows the token"; rc=1; }
	# A session of the protocol before tokens: not given it, not withheld.
	# The connector reads wire_features when its connection is accepted,
	# after peer add returns: it is given back once the session is up.
	echo 15 >$p/wire_features
	defer sh -c "echo 63 >$p/wire_features"
	kxferctl peer add ptsc "$A"
	defer kxferctl peer del ptsc
	busywait 20000 peer_state ptsc up || rc=1
	echo 63 >$p/wire_features
	peer_json ptsc | jq -e '.[0] | .remote_scoped == 0 and .exports_withheld == 0' >/dev/null ||
		{ peer_json ptsc; rc=1; }
	check_fail has_rexport ptsc tsc || rc=1
	has_rexport ptsc kvr || rc=1
	barrier tn-sc-moved
	barrier tn-sc-del
	touch /tmp/tn-sc-go
	wait "$pid" || rc=1
	cat /tmp/tn-sc
	grep -q '^write after the withdrawal: ESTALE$' /tmp/tn-sc || rc=1
	grep -q '^token after the withdrawal: ENOENT$' /tmp/tn-sc || rc=1
	peer_json ptn | jq -e '.[0].remote_scoped == 0' >/dev/null || rc=1
	barrier tn-sc-done
	return $rc
}

# The tenant tests' sessions go: the tests after them count b's.
t_tenant_teardown() {
	if on_a; then
		barrier tn-gone
		busywait 20000 sh -c '[ "$(kxferctl -j peer show | jq "[.[] | select(.role == \"acceptor\")] | length")" = 2 ]' ||
			{ kxferctl -j peer show; return 1; }
		return 0
	fi
	kxferctl peer del ptn
	kxferctl peer del ptnp
	barrier tn-gone
}
