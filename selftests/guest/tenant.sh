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
	defer sh -c "echo 31 >$p/wire_features"
	kxferctl peer add ptold "$A" qps 2
	defer kxferctl peer del ptold
	busywait 20000 peer_state ptold up
	echo 31 >$p/wire_features
	barrier tn-old-ready
	busywait 20000 has_rexport ptold tno || rc=1
	barrier tn-old-seen
	# EXPORT_DEL, after the keys died: b forgets it.
	busywait 20000 check_fail has_rexport ptold tno || rc=1
	barrier tn-old-done
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
