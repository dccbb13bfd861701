# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# auth.sh: authenticated peers (issue 14), sourced by suite-2.sh after its
# helpers.  a listens on port 7100 (auth required, its own key kl) and 7101
# (optional, kl); a key kb is bound to node b on a, and b holds the same
# secret as ka.  b's sessions prove keys or fail to; hostile (on b) plays a
# peer that breaks the handshake, replays proofs and claims to be b.  All
# along, every kxfer tracepoint is on, and at the end no secret may show
# in a trace, a log line or a netlink reply.
#
#   t_auth_setup     keys, listeners and exports of the tests below
#   t_auth_keys      the key commands: refusals, write-only, who uses a key
#   t_auth_sessions  right key, wrong key, no key (required, optional), an
#                    older peer, exports and jobs gated
#   t_auth_rotation  a new secret on both sides while a session is up
#   t_auth_hostile   hostile's handshake cases, and a supersede attempt
#                    without the key (the old session stays) and with it
#   t_auth_slow_keepalive  a stalled handshake ends after its 10 s while a
#                    probes only every 600 s
#   t_auth_leaks     no secret in traces, logs or netlink replies; cleanup

AU_PORT=7100		# auth required, listener key kl
AU_OPT=7101		# optional, listener key kl
# Secrets: printable, so that a leak shows in text as well as in hex
AU_KB=kxfer-test-secret-node-b-0123456789	# kb on a, ka on b
AU_KB2=kxfer-test-secret-node-b-rotated-01	# kb and ka after rotation
AU_KL=kxfer-test-secret-listener-7100-abc	# kl on a, khl for hostile
AU_KW=kxfer-test-secret-wrong-0000000000	# kw on b: a wrong key

au_secret() {
	printf '%s' "$2" >"$KXFER_SHARED/auth-$1"
}

# The session of b's NAME on a, by its authentication: up to one per port
au_a_sessions() {
	kxferctl -j peer show | jq -c "[.[] | select(.name == \"b\") |
		{id: .id, auth: .auth, key: .key, state: .state}]"
}

# a_auth_count AUTH: a's sessions from b in that authentication state
au_a_count() {
	kxferctl -j peer show | jq "[.[] | select(.name == \"b\" and
		.auth == \"$1\" and .state == \"up\")] | length"
}

au_listen() {
	kxferctl -j listen show | jq ".[] | select(.port == $1) | .$2"
}

au_peer() {
	kxferctl -j peer show "$1" | jq -r ".[0].$2"
}

# au_is NAME FILTER: jq FILTER holds for the session NAME (one reading)
au_is() {
	local j

	j=$(kxferctl -j peer show "$1") || return
	jq -e ".[0] | $2" <<<"$j" >/dev/null || { echo "$j"; return 1; }
}

# au_failed NAME: the connecting session NAME failed a handshake
au_failed() {
	[ "$(au_peer "$1" auth_failures)" -ge 1 ] 2>/dev/null
}

# au_logged TEXT: the kernel log has TEXT (grep reads it all: with
# pipefail, "dmesg | grep -q" fails when grep stops reading first)
au_logged() {
	dmesg | grep -F -- "$1" >/dev/null
}

au_a_has_ok() {
	[ "$(au_a_count ok)" -ge 1 ]
}

t_auth_setup() {
	echo 1 >/sys/kernel/tracing/events/kxfer/enable
	au_secret kb "$AU_KB"
	au_secret kb2 "$AU_KB2"
	au_secret kl "$AU_KL"
	au_secret kw "$AU_KW"
	if on_a; then
		kxferctl key add kb secret "$KXFER_SHARED/auth-kb" peer b
		kxferctl key add kl secret - <"$KXFER_SHARED/auth-kl"
		kxferctl listen "$A" port $AU_PORT key kl auth required
		kxferctl listen "$A" port $AU_OPT key kl
		# b's own: authenticated, and b's name proven
		kxferctl export add ax pool kv offset 15M len 64K peer b \
			access read,write auth required
		# any authenticated session
		kxferctl export add ay pool kv offset 15616K len 64K \
			access read,write auth required
		# the name ha-right is claimed, not proven, with the shared key
		kxferctl export add ah pool kv offset 15680K len 64K peer ha-right \
			access read auth required
		kxferctl export show ax | grep -q ' auth required'
		kxferctl -j listen show | jq -e ".[] | select(.port == $AU_PORT) |
			.auth == \"required\" and .key == \"kl\"" >/dev/null
		barrier au-setup
		return 0
	fi
	kxferctl key add ka secret "$KXFER_SHARED/auth-kb"
	kxferctl key add kw secret "$KXFER_SHARED/auth-kw"
	barrier au-setup
}

# Netlink: keys are written, never read; refusals say why.
t_auth_keys() {
	local out

	on_a || return 0
	out=$(kxferctl -j key show)
	echo "$out"
	echo "$out" | jq -e 'map(.name) | sort == ["kb", "kl"]' >/dev/null
	echo "$out" | jq -e '.[] | select(.name == "kb") | .peer == "b" and .gen == 1' >/dev/null
	echo "$out" | jq -e ".[] | select(.name == \"kl\") |
		(.listeners | map(.port) | sort) == [$AU_PORT, $AU_OPT]" >/dev/null
	# no field but these, ever
	echo "$out" | jq -e '[.[] | keys[]] | unique |
		. - ["gen", "listeners", "name", "peer", "users"] | length == 0' >/dev/null
	kxferctl key show kl
	printf 'short' >/tmp/short
	expect_error "the secret in" kxferctl key add ks secret /tmp/short
	head -c 65 /dev/zero >/tmp/long
	expect_error "the secret in" kxferctl key add ks secret /tmp/long
	expect_error "key already exists" kxferctl key add kb secret "$KXFER_SHARED/auth-kl"
	expect_error "another key is bound to that peer" \
		kxferctl key add kb-again secret "$KXFER_SHARED/auth-kl" peer b
	expect_error "key is used by a listener or a peer" kxferctl key del kl
	expect_error "no such key" kxferctl key del nosuch
	expect_error "no such key" kxferctl key set nosuch secret "$KXFER_SHARED/auth-kl"
	expect_error "no such key" kxferctl listen "$A" port 7102 key nosuch
	expect_error "no such key" kxferctl peer add pnk "$A" key nosuch
	expect_error "no such key" kxferctl key show nosuch
	check_fail kxferctl peer show pnk
	# nothing was left using a key that was refused
	kxferctl -j key show kl | jq -e '.[0].users == []' >/dev/null
	# an unprivileged user reads names, changes nothing
	check_err EPERM setpriv --reuid=65534 --regid=65534 --clear-groups \
		kxferctl key add kx secret "$KXFER_SHARED/auth-kl"
	check_err EPERM setpriv --reuid=65534 --regid=65534 --clear-groups \
		kxferctl key del kb
	setpriv --reuid=65534 --regid=65534 --clear-groups kxferctl key show kb
	# a key nothing uses goes, and comes back
	kxferctl key add ktmp secret "$KXFER_SHARED/auth-kw"
	kxferctl key set ktmp secret - <"$KXFER_SHARED/auth-kl"
	kxferctl -j key show ktmp | jq -e '.[0].gen == 2' >/dev/null
	kxferctl key del ktmp
	check_fail kxferctl key show ktmp
}

# The sessions: right key, wrong key, no key on one side, an older peer.
t_auth_sessions() {
	local f0 n n1 j t0 ms

	if on_a; then
		f0=$(au_listen $AU_PORT auth_failed)
		barrier as-right
		busywait 20000 au_a_has_ok
		au_a_sessions
		kxferctl -j peer show | jq -e '[.[] | select(.name == "b" and .auth == "ok" and
			.key == "kb" and .role == "acceptor")] | length == 1' >/dev/null
		[ "$(au_listen $AU_PORT auth_ok)" -ge 1 ]
		barrier as-wrong 60
		n=$(au_listen $AU_PORT auth_failed)
		echo "listener $AU_PORT: authentication failures $f0 -> $n"
		[ "$n" -gt "$f0" ]
		au_logged "kxfer: peer b: authentication failed: peer's proof does not match our key"
		barrier as-nokey 60
		au_logged 'kxfer: peer b: authentication failed: peer holds no key, and the listener requires one'
		barrier as-optional 60
		# b without a key on the optional listener: up, not authenticated
		kxferctl -j peer show | jq -e '[.[] | select(.name == "b" and .auth == "none" and
			.state == "up")] | length >= 3' >/dev/null
		barrier as-optional-checked
		barrier as-nokey-a 60
		# b's requirement with a's key gone: the listeners offer nothing
		kxferctl key del kb
		barrier as-kb-gone
		barrier as-nokey-a-done 60
		kxferctl key add kb secret "$KXFER_SHARED/auth-kb" peer b
		barrier as-older 60
		au_logged 'kxfer: peer b: authentication failed: peer does not authenticate, and the listener requires it'
		barrier as-done 60
		return 0
	fi
	barrier as-right
	# The right key: up, authenticated, b's exports meant for authenticated
	# sessions learned, jobs run.
	kxferctl peer add pauth "$A" port $AU_PORT key ka
	busywait 20000 peer_state pauth up
	j=$(peer_json pauth)
	echo "$j"
	echo "$j" | jq -e '.[0] | .auth == "ok" and .key == "ka" and
		.auth_failures == 0 and .remote_node == "a"' >/dev/null
	busywait 5000 has_rexport pauth ax
	busywait 5000 has_rexport pauth ay
	check_fail has_rexport pauth ah
	# sessions that are not authenticated never learn them
	check_fail has_rexport pa ax
	check_fail has_rexport pa4 ay
	xfer fill local 0 64K seed:141
	xfer job pauth ax local write 0:0:64K
	xfer job pauth ay local read 64K:0:4K
	kxferctl -j key show ka | jq -e '.[0].users == ["pauth"]' >/dev/null

	# A wrong key: never up, the failure counted and said, long backoff,
	# and its jobs refused (ENOTCONN) as on any session that is not up.
	kxferctl peer add pwrong "$A" port $AU_PORT key kw
	busywait 15000 au_failed pwrong
	peer_json pwrong
	check_fail peer_state pwrong up
	# auth and last_error from one reading, between two attempts: the
	# next one (reconnect_max_ms on) shows its own handshake under way,
	# and two reads 2.5 s apart on a fast guest saw "failed", then that.
	busywait 15000 au_is pwrong '.state != "up" and .auth == "failed" and
		.last_error == "peer refused our proof: the keys differ"'
	au_logged 'kxfer: peer pwrong: authentication failed: peer refused our proof: the keys differ'
	# no job: not one export is known before the handshake succeeded
	check_err ENOENT xfer job pwrong kvw local write 0:0:8
	# backoff: reconnect_max_ms (5 s, less its 25 % jitter: 3.75 s at
	# the least) after each failure, not 100 ms doubling; counted over
	# the time between the two readings, which a slow kernel stretches
	t0=$(now_ms)
	n=$(au_peer pwrong reconnects)
	sleep 6
	n1=$(au_peer pwrong reconnects)
	ms=$(($(now_ms) - t0))
	echo "reconnects in $ms ms after a failed handshake: $((n1 - n)), at most $((1 + ms / 3750))"
	[ $((n1 - n)) -le $((1 + ms / 3750)) ]
	kxferctl peer del pwrong
	barrier as-wrong

	# No key on b, a requires one: a says so, b says why.
	kxferctl peer add pnokey "$A" port $AU_PORT
	busywait 15000 au_failed pnokey
	peer_json pnokey
	peer_json pnokey | jq -e '.[0] | .auth == "failed" and .state != "up"' >/dev/null
	au_logged 'kxfer: peer pnokey: authentication failed: peer requires a key, we hold none'
	kxferctl peer del pnokey
	barrier as-nokey

	# No key on b, a's listener optional: up, not authenticated, and
	# without the exports that require authentication.
	kxferctl peer add popt "$A" port $AU_OPT
	busywait 20000 peer_state popt up
	[ "$(au_peer popt auth)" = none ]
	busywait 5000 has_rexport popt kvw
	check_fail has_rexport popt ax
	check_fail has_rexport popt ay
	barrier as-optional
	barrier as-optional-checked
	kxferctl peer del popt

	# A key on b, none for it on a (a's key kb deleted): a offers no
	# handshake, and b, which holds a key, does not take that.
	barrier as-nokey-a
	barrier as-kb-gone
	kxferctl peer add pkey "$A" key ka
	busywait 15000 au_failed pkey
	peer_json pkey | jq -e '.[0].state != "up" and
		(.[0].last_error | test("peer does not authenticate"))' >/dev/null
	kxferctl peer del pkey
	barrier as-nokey-a-done

	# An older peer (wire_features without authentication): refused where
	# required, up where optional.
	echo 1 >/sys/module/kxfer/parameters/wire_features
	defer sh -c 'echo 63 >/sys/module/kxfer/parameters/wire_features'
	kxferctl peer add pold "$A" port $AU_PORT
	busywait 15000 au_logged 'kxfer: peer pold: disconnected by the peer'
	check_fail peer_state pold up
	kxferctl peer del pold
	kxferctl peer add pold "$A" port $AU_OPT
	busywait 20000 peer_state pold up
	[ "$(au_peer pold auth)" = none ]
	check_fail has_rexport pold ay
	kxferctl peer del pold
	echo 63 >/sys/module/kxfer/parameters/wire_features
	barrier as-older
	# pauth never noticed any of it
	peer_state pauth up
	[ "$(au_peer pauth reconnects)" = 0 ]
	barrier as-done
}

# A new secret on both sides while pauth is up: it stays up and works;
# a session started after one side changed fails; once both changed, it
# comes up with the new secret.
t_auth_rotation() {
	if on_a; then
		local id

		id=$(kxferctl -j peer show | jq '.[] | select(.name == "b" and .auth == "ok") | .id')
		kxferctl key set kb secret "$KXFER_SHARED/auth-kb2"
		kxferctl -j key show kb | jq -e '.[0].gen == 2' >/dev/null
		barrier ar-a-set
		barrier ar-b-reconnected 60
		# the session that authenticated with the old secret is still there
		kxferctl -j peer show | jq -e ".[] | select(.id == $id) | .auth == \"ok\" and
			.state == \"up\"" >/dev/null
		barrier ar-done 90
		return 0
	fi
	barrier ar-a-set
	# up across the change, jobs flow
	peer_state pauth up
	xfer job pauth ax local write 0:0:4K
	# a new session of b with the old secret fails
	kxferctl peer add prot "$A" port $AU_PORT key ka
	busywait 15000 au_failed prot
	check_fail peer_state prot up
	# b's turn: the next attempt (within reconnect_max_ms) succeeds
	kxferctl key set ka secret "$KXFER_SHARED/auth-kb2"
	busywait 15000 peer_state prot up
	[ "$(au_peer prot auth)" = ok ]
	kxferctl peer del prot
	# pauth, authenticated with the old secret, never went down
	peer_state pauth up
	[ "$(au_peer pauth reconnects)" = 0 ]
	xfer job pauth ax local read 4K:0:4K
	barrier ar-b-reconnected
	barrier ar-done
}

# hostile: the handshake broken every way; then a claim to be b, with a
# new incarnation, from b's address, without the key (a keeps b's
# sessions) and with it (a takes it for b restarted).
t_auth_hostile() {
	local rc=0

	if on_a; then
		local n0 line missing=0 idb f0 f1 cases

		: >"$KXFER_SHARED/au-expect"
		n0=$(dmesg | wc -l)
		kmsg_mark auth_hostile
		f0=$(au_listen $AU_PORT auth_failed)
		barrier ah-ready
		barrier ah-attacked 180
		# Every case but "right" fails a handshake, out of turn or not,
		# and each counts once (design §10).
		cases=$(grep -c '^case ' "$KXFER_SHARED/au-hostile.txt")
		f1=$(au_listen $AU_PORT auth_failed)
		echo "$cases cases, auth_failed $f0 -> $f1"
		[ "$((f1 - f0))" = "$((cases - 1))" ] ||
			{ echo "expected $((cases - 1)) failed handshakes counted"; rc=1; }
		dmesg | tail -n +$((n0 + 1)) >/tmp/ah-dmesg
		kmsg_clean auth_hostile || rc=1
		while IFS= read -r line; do
			grep -qF -- "$line" /tmp/ah-dmesg && continue
			echo "not logged: $line"
			missing=$((missing + 1))
		done <"$KXFER_SHARED/au-expect"
		echo "$(wc -l <"$KXFER_SHARED/au-expect") expected log lines, $missing missing"
		[ "$missing" = 0 ] || rc=1
		echo "listener $AU_PORT: auth_ok $(au_listen $AU_PORT auth_ok)" \
			"auth_failed $(au_listen $AU_PORT auth_failed)"
		busywait 15000 sh -c "[ \"\$(kxferctl -j peer show | jq '[.[] | select(.name | startswith(\"ha-\"))] | length')\" = 0 ]" ||
			{ kxferctl -j peer show; rc=1; }
		# The claim to be b without the key: b's sessions stay, untouched.
		idb=$(kxferctl -j peer show | jq -c '[.[] | select(.name == "b") | .id] | sort')
		barrier ah-claim-ready
		barrier ah-claimed 60
		if [ "$(kxferctl -j peer show | jq -c '[.[] | select(.name == "b") | .id] | sort')" != "$idb" ]; then
			echo "a claim to be b without the key changed b's sessions"
			kxferctl -j peer show | jq -c '.[] | {name, id, auth, state}'
			rc=1
		fi
		dmesg | tail -n +$((n0 + 1)) | grep -c 'the peer restarted' && rc=1
		# With the key, the claim is b's word: its older sessions end.
		barrier ah-claim-key
		barrier ah-claimed-key 60
		dmesg | tail -n +$((n0 + 1)) | grep 'peer b: down: the peer restarted' || rc=1
		barrier ah-done 120
		return $rc
	fi
	barrier ah-ready
	hostile -p $AU_PORT -K "$KXFER_SHARED/auth-kl" -L "$KXFER_SHARED/au-expect" \
		-e ay,kvblocks,kvr,kvro,kvw auth >"$KXFER_OUT/au-hostile.txt" 2>&1 || rc=1
	cat "$KXFER_OUT/au-hostile.txt"
	cp "$KXFER_OUT/au-hostile.txt" "$KXFER_SHARED/au-hostile.txt"
	barrier ah-attacked
	barrier ah-claim-ready
	hostile -p $AU_PORT -I 0x5eed1 supersede b || rc=1
	hostile -p $AU_PORT -I 0x5eed2 -K "$KXFER_SHARED/auth-kw" supersede b || rc=1
	hostile -p $AU_OPT -I 0x5eed3 -K "$KXFER_SHARED/auth-kl" supersede b || rc=1
	peer_state pauth up
	[ "$(au_peer pauth reconnects)" = 0 ]
	barrier ah-claimed
	barrier ah-claim-key
	hostile -p $AU_PORT -I 0x5eed4 -K "$KXFER_SHARED/auth-kb2" supersede b || rc=1
	barrier ah-claimed-key
	# b's sessions come back (b is b: its incarnation ends the claimant's)
	busywait 30000 peer_state pauth up
	busywait 30000 peer_state pa up
	busywait 30000 peer_state pa4 up
	barrier ah-done
	return $rc
}

# A neighbour cannot keep a node out (issue 40).  An unprivileged process
# on b (rdma_cm is open to every user) holds the 16 half-open slots of b's
# address (max_half_open) with handshakes it never finishes, renewing
# them as a ends them, and claims to be b.  b's real, keyed session still
# comes up within one reconnect interval: a evicts the oldest unproven
# session of the address for a node whose name has a key.  Then a
# neighbour claiming a name without a key is slowed down: b's address
# failed handshakes in a row, so it gets one half-open session at a time.
au_hold_count() {
	kxferctl -j peer show | jq "[.[] | select(.name == \"$1\" and .state == \"connecting\")] | length"
}

au_hold_at_most() {
	[ "$(au_hold_count "$1")" -le "$2" ]
}

# au_nobody CMD... &: CMD as user nobody, with room to register memory, in
# the background job itself (so that $! is CMD's process)
au_nobody() {
	ulimit -l unlimited
	exec setpriv --reuid=65534 --regid=65534 --clear-groups "$@"
}

t_auth_half_open() {
	local rc=0 t0 dt bound

	if on_a; then
		local ev0 ev1 n

		ev0=$(au_listen $AU_PORT evicted)
		barrier hh-ready
		barrier hh-holding 90
		n=$(au_hold_count b)
		echo "half-open sessions claiming b while held: $n"
		[ "$n" -ge 15 ] || { echo "the neighbour did not hold the slots"; rc=1; }
		barrier hh-reconnected 90
		ev1=$(au_listen $AU_PORT evicted)
		echo "evicted: $ev0 -> $ev1"
		[ "$ev1" -gt "$ev0" ] || rc=1
		barrier hh-slow-holding 90
		# One at a time, however many it asks for.
		for n in 1 2 3 4 5; do
			au_hold_at_most hh-x 1 ||
				{ echo "$(au_hold_count hh-x) half-open sessions of hh-x"; rc=1; }
			sleep 1
		done
		barrier hh-done 90
		return $rc
	fi
	barrier hh-ready
	au_nobody hostile -p $AU_PORT -H 60 hold 16 b >"$KXFER_OUT/hh-hold.txt" 2>&1 &
	local hp=$!
	busywait 60000 grep -q '^holding 16' "$KXFER_OUT/hh-hold.txt" ||
		{ cat "$KXFER_OUT/hh-hold.txt"; rc=1; }
	barrier hh-holding
	# b's real node, anew: a fresh attempt at once
	kxferctl peer del pauth
	t0=$(now_ms)
	kxferctl peer add pauth "$A" port $AU_PORT key ka
	busywait 30000 peer_state pauth up || rc=1
	dt=$(($(now_ms) - t0))
	bound=$(_kx_slow 5000)
	echo "pauth up $dt ms after it was added, the neighbour holding 16 (bound $bound ms)"
	[ "$dt" -le "$bound" ] || rc=1
	au_is pauth '.auth == "ok" and .reconnects == 0' || rc=1
	barrier hh-reconnected
	stop_process "$hp"
	wait "$hp" 2>/dev/null || true
	cat "$KXFER_OUT/hh-hold.txt"
	au_nobody hostile -p $AU_PORT -H 20 hold 16 hh-x >"$KXFER_OUT/hh-slow.txt" 2>&1 &
	hp=$!
	sleep 5
	barrier hh-slow-holding
	barrier hh-done
	wait "$hp" || rc=1
	cat "$KXFER_OUT/hh-slow.txt"
	grep -Eq '^case hold: ok, [0-9]+ sessions accepted, [1-9][0-9]* refused busy' \
		"$KXFER_OUT/hh-slow.txt" || { echo "hh-x was not slowed down"; rc=1; }
	busywait 30000 peer_state pauth up || rc=1
	return $rc
}

# A stalled handshake ends after its 10 s however long a's keepalive
# interval is: the session timer wakes for the handshake's deadline, not
# only to probe.  hostile's "silent" case (HELLO, then nothing) asserts
# 9 to 25 s; with a probing every 600 s, the attempt's own 40 s deadline
# would come first otherwise.
t_auth_slow_keepalive() {
	local rc=0 p=/sys/module/kxfer/parameters

	if on_a; then
		echo 600000 >$p/keepalive_timeout_ms
		echo 600000 >$p/keepalive_ms
		defer sh -c "echo 1000 >$p/keepalive_ms; echo $KXFER_KA_TIMEOUT_MS >$p/keepalive_timeout_ms"
		barrier ak-ready
		barrier ak-done 60
		return 0
	fi
	barrier ak-ready
	hostile -p $AU_PORT -K "$KXFER_SHARED/auth-kl" auth silent || rc=1
	barrier ak-done
	return $rc
}

# No secret anywhere it could be read back: the trace buffer (every kxfer
# event was on since t_auth_setup), the kernel log, and every netlink
# reply kxferctl gets; then everything the tests made goes.
t_auth_leaks() {
	local rc=0 s hex where

	echo 0 >/sys/kernel/tracing/events/kxfer/enable
	cat /sys/kernel/tracing/trace >/tmp/au-trace
	echo "$(grep -vc '^#' /tmp/au-trace) trace lines"
	dmesg >/tmp/au-dmesg
	{
		for c in "key show" "peer show" "listen show" "export show" \
			"stats show" "pool show" "dev show"; do
			# shellcheck disable=SC2086
			kxferctl -j $c
			# shellcheck disable=SC2086
			kxferctl -d $c
		done
	} >/tmp/au-nl 2>&1
	for s in "$AU_KB" "$AU_KB2" "$AU_KL" "$AU_KW"; do
		hex=$(printf '%s' "$s" | od -An -tx1 | tr -d ' \n')
		for where in /tmp/au-trace /tmp/au-dmesg /tmp/au-nl; do
			if grep -qF -- "${s:0:16}" "$where" ||
				tr -d ' \n' <"$where" | grep -qiF -- "${hex:0:32}"; then
				echo "a secret shows in $where"
				rc=1
			fi
		done
	done
	if on_a; then
		barrier al-checked
		kxferctl export del ax
		kxferctl export del ay
		kxferctl export del ah
		kxferctl listen del "$A" port $AU_PORT
		kxferctl listen del "$A" port $AU_OPT
		kxferctl key del kl
		barrier al-peers-gone 60
		kxferctl key del kb
		[ "$(kxferctl -j key show)" = "[]" ]
		return $rc
	fi
	barrier al-checked
	kxferctl peer del pauth
	kxferctl key del ka
	kxferctl key del kw
	[ "$(kxferctl -j key show)" = "[]" ]
	barrier al-peers-gone
	peer_state pa up
	peer_state pa4 up
	return $rc
}
