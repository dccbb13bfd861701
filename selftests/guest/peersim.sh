# SPDX-License-Identifier: GPL-2.0-only
# shellcheck shell=bash
#
# peersim.sh: many simulated peers against a's listener (issue 44), sourced
# by suite-2.sh after its helpers; also by selftests/bench/scale-guest.sh.
# selftests/peersim (on b) plays PS_PEERS kxfer nodes of 2 QPs each, from
# one process: every session comes up, each node writes and reads back its
# own slice of a's exports (every byte compared), notifies one of them
# (by message and by WRITE_WITH_IMM), learns an export added while they
# are up, and fills its slice with a pattern a checks in its own pool.
# The two sides talk through files in /shared (peersim -C).

PS_PEERS=${PS_PEERS:-16}
PS_EXPORTS=${PS_EXPORTS:-32}	# traffic targets pse000..., 64 KiB each
PS_SLICE=32768			# bytes of them each node owns
PS_SEED=4401

# ps_file STEP: peersim's file for a step it finished
ps_file() {
	echo "$KXFER_SHARED/peersim.$1"
}

ps_has() {
	[ -e "$(ps_file "$1")" ]
}

# ps_sessions_up PREFIX: sessions of a named PREFIX-* that are up
ps_sessions_up() {
	kxferctl -j peer show | jq --arg p "$1-" \
		'[.[] | select((.name | startswith($p)) and .state == "up")] | length'
}

ps_sessions_none() {
	[ "$(kxferctl -j peer show | jq --arg p "$1-" \
		'[.[] | select(.name | startswith($p))] | length')" = 0 ]
}

ps_up_is() {
	[ "$(ps_sessions_up "$1")" = "$2" ]
}

# ps_pool_add POOL COUNT PREFIX: a pool of COUNT 64 KiB exports PREFIX000...
ps_pool_add() {
	local pool=$1 n=$2 pfx=$3 i

	kxferctl pool add "$pool" size $((n * 64))K mode 0666
	for ((i = 0; i < n; i++)); do
		kxferctl export add "$(printf '%s%03d' "$pfx" "$i")" pool "$pool" \
			offset $((i * 64))K len 64K access read,write
	done
}

ps_pool_del() {
	local pool=$1 n=$2 pfx=$3 i

	for ((i = 0; i < n; i++)); do
		kxferctl export del "$(printf '%s%03d' "$pfx" "$i")" || true
	done
	kxferctl pool del "$pool"
}

# ps_session_state NODE: the state of a's session from NODE ("" if none)
ps_session_state() {
	kxferctl -j peer show "$1" 2>/dev/null | jq -r '.[0].state // empty'
}

ps_session_not_up() {
	[ "$(ps_session_state "$1")" != up ]
}

t_peersim() {
	local t0 ms rc=0 n

	if on_a; then
		rm -f "$KXFER_SHARED"/peersim.* "$KXFER_SHARED"/stop "$KXFER_SHARED"/kill.*
		ps_pool_add ps "$PS_EXPORTS" pse
		defer ps_pool_del ps "$PS_EXPORTS" pse
		kmsg_mark peersim
		xfer notify-wait -n 1000000 -t 600 pse000 >/tmp/ps-notify 2>&1 &
		defer stop_process $!
		busywait 10000 grep -q '^subscribed' /tmp/ps-notify
		barrier ps-ready

		# every session comes up, as a counts them
		slowwait 300 ps_has up
		echo "peersim: $(cat "$(ps_file up)")"
		busywait 20000 ps_up_is sim "$PS_PEERS"
		# an export added now reaches every node
		t0=$(now_ms)
		kxferctl export add psnew pool ps offset 0 len 64K access read
		defer kxferctl export del psnew
		slowwait 120 ps_has advert.psnew
		echo "psnew: at every node $(($(now_ms) - t0)) ms after export add"
		# the traffic and the final fill; a checks the bytes itself
		slowwait 300 ps_has filled
		cat "$(ps_file traffic)"
		xfer check ps 0 $((PS_PEERS * PS_SLICE)) seed:$PS_SEED
		# every notification peersim sent came, exactly once
		read -r _ _ _ _ _ _ _ _ _ n <"$(ps_file traffic)"
		busywait 20000 sh -c "[ \$(grep -c '^notify ' /tmp/ps-notify) -ge $n ]"
		[ "$(grep -c '^notify ' /tmp/ps-notify)" = "$n" ] || {
			echo "$(grep -c '^notify ' /tmp/ps-notify) notifications, peersim sent $n"
			rc=1
		}
		[ "$n" -gt 0 ] || rc=1
		# a node whose host dies: a ends its session on the keepalive
		t0=$(now_ms)
		: >"$KXFER_SHARED/kill.3"
		slowwait 60 ps_has killed
		slowwait $((KXFER_KA_TIMEOUT_MS / 1000 + 30)) ps_session_not_up sim-003
		ms=$(($(now_ms) - t0))
		echo "sim-003's death noticed in $ms ms (keepalive timeout $KXFER_KA_TIMEOUT_MS ms)"
		# the others are unharmed
		ps_up_is sim $((PS_PEERS - 1)) || rc=1
		: >"$KXFER_SHARED/stop"
		barrier ps-done 300
		busywait 30000 ps_sessions_none sim
		kmsg_clean peersim || rc=1
		return $rc
	fi
	barrier ps-ready
	peersim -a "$A" -n "$PS_PEERS" -q 2 -E pse -S "$PS_SLICE" -B 4K -D 2 \
		-t 10 -k 4 -m pse000 -i -F "$PS_SEED" -W psnew -C "$KXFER_SHARED" -T 600 \
		-j "$KXFER_OUT/peersim.json" || rc=$?
	cat "$KXFER_OUT/peersim.json" || true
	barrier ps-done 300
	return $rc
}

# One process of a registers 256 regions of its own memory (as a NIXL agent
# of an 80-layer model registers 160), each a pool of its file and an
# export, with the module's defaults; 16 simulated peers move data into
# every one of them and the process finds every byte where it belongs.
t_peersim_regs() {
	local rc=0 dir=$KXFER_SHARED/psr pid

	if on_a; then
		rm -rf "$dir"
		mkdir -p "$dir"
		kmsg_mark peersim_regs
		xfer regs -n 256 -l 64K -w "$dir/peersim.filled" -s 4403 rg \
			>/tmp/psr-regs 2>&1 &
		pid=$!
		busywait 120000 grep -q '^ready' /tmp/psr-regs
		barrier psr-ready
		wait "$pid" || rc=1
		cat /tmp/psr-regs
		grep -q '^regs: every byte of the 256 pools as written' /tmp/psr-regs || rc=1
		: >"$dir/stop"
		barrier psr-done 300
		busywait 30000 ps_sessions_none rg
		kmsg_clean peersim_regs || rc=1
		return $rc
	fi
	barrier psr-ready
	peersim -a "$A" -n 16 -q 2 -N rg -E rg -S 1M -B 4K -D 2 -t 5 \
		-F 4403 -C "$dir" -T 600 -j "$KXFER_OUT/peersim-regs.json" || rc=$?
	barrier psr-done 300
	return $rc
}
