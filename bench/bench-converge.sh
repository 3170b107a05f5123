#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Start-up convergence: MODULES modules x 3 trivial hooks (onStartup, beforeHelm, afterHelm), no
# cluster, local release step. Prints the operator's time from exec to "first converge done"
# against the same hooks spawned bare by bench-spawn-list (posix_spawn, one after another, each
# once with --config and once for its binding), and the operator's RSS once idle. ROUNDS rounds alternate bare / operator;
# medians are reported. AO_REACTOR=epoll|io_uring|auto sets ADDON_OPERATOR_REACTOR (default epoll, the operator's).
# The local release step (the stand-in for helm, whose releases live in the cluster, not on the
# operator's disk) writes to a state dir under AO_CONVERGE_STATE_BASE: /dev/shm by default; a disk
# directory (say /tmp) measures what writing the stand-in's files there adds.
#   bench/bench-converge.sh [BINARY] [MODULES] [ROUNDS]     (defaults: build/addon-operator, 100, 1)
set -euo pipefail
binary=$(realpath "${1:-build/addon-operator}")
spawn_list=$(dirname "$binary")/bench/bench-spawn-list
modules=${2:-100}
rounds=${3:-1}
reactor=${AO_REACTOR:-epoll}
work=$(mktemp -d /tmp/bench-converge.XXXXXX)
state_base=${AO_CONVERGE_STATE_BASE:-/dev/shm}
state=$(mktemp -d "$state_base/bench-converge-state.XXXXXX")
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work" "$state"; true' EXIT

mkdir -p "$work/modules" "$work/global"
: >"$work/modules/values.yaml"
for i in $(seq -w 1 "$modules"); do
        m=$work/modules/$i-m$i
        mkdir -p "$m/hooks"
        echo "m${i}Enabled: true" >>"$work/modules/values.yaml"
        for b in onStartup:a beforeHelm:b afterHelm:c; do
                printf '#!/bin/sh\n[ "$1" = --config ] && echo '"'"'{"configVersion":"v1","%s":1}'"'"'\nexit 0\n' \
                        "${b%%:*}" >"$m/hooks/${b##*:}.sh"
                chmod +x "$m/hooks/${b##*:}.sh"
        done
done
hooks=$(find "$work/modules" -name '*.sh' | sort)
[ -x "$spawn_list" ] || { echo "bench-converge: $spawn_list is missing (ninja -C $(dirname "$binary"))" >&2; exit 1; }

now_ms() { echo $(($(date +%s%N) / 1000000)); }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# The bare limit: every hook spawned as often as the operator spawns it (--config, then one run).
bare_round() {
        "$spawn_list" <<<"$hooks"
}

# One operator start: sets op_ms, op_cpu_ms and op_rss_kb (not in a subshell, so the trap sees $pid).
operator_round() {
        local log=$work/log start
        rm -rf "$state/releases"
        : >"$log" # before the start: tail must not race the shell that opens it for the operator
        start=$(now_ms)
        # TMP_DIR is left at its default, as deployed: hook files go to /dev/shm when /tmp is not a
        # tmpfs. The releases go to $state (see AO_CONVERGE_STATE_BASE above).
        MODULES_DIR=$work/modules GLOBAL_HOOKS_DIR=$work/global \
                ADDON_OPERATOR_STATE_DIR=$state ADDON_OPERATOR_REACTOR=$reactor \
                ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET=$work/debug.socket LOG_TYPE=json \
                "$binary" start >"$log" 2>&1 &
        pid=$!
        # Woken by the log line itself (tail -f), not by polling.
        if ! timeout 600 grep -q -m1 '"msg":"first converge done' < <(tail -n +1 -f "$log"); then
                cat "$log" >&2
                exit 1
        fi
        op_ms=$(($(now_ms) - start))
        # The operator's own CPU (not its children's) up to the converge: utime + stime in clock ticks.
        read -r -a stat <"/proc/$pid/stat"
        op_cpu_ms=$(((stat[13] + stat[14]) * 1000 / $(getconf CLK_TCK)))
        # Idle: the converge is done; give the loop a moment to free what the start-up used.
        sleep 1
        op_rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
        kill -TERM "$pid"
        wait "$pid" || true
        pid=
}

: >"$work/bare" && : >"$work/op" && : >"$work/ratio"
for _ in $(seq "$rounds"); do
        b=$(bare_round)
        operator_round
        echo "$b" >>"$work/bare"
        echo "$op_ms $op_cpu_ms $op_rss_kb" >>"$work/op"
        awk -v b="$b" -v o="$op_ms" 'BEGIN { printf "%.3f\n", o / b }' >>"$work/ratio"
done
bare=$(median <"$work/bare")
operator=$(awk '{print $1}' "$work/op" | median)
cpu_ms=$(awk '{print $2}' "$work/op" | median)
rss_kb=$(awk '{print $3}' "$work/op" | median)
ratio=$(median <"$work/ratio")
range=$(sort -g "$work/ratio" | awk 'NR == 1 { lo = $1 } { hi = $1 } END { printf "%.2f-%.2f", lo, hi }')

runs=$((modules * 3 * 2))
printf 'modules=%d hooks=%d spawns=%d reactor=%s rounds=%d (medians)\n' "$modules" $((modules * 3)) "$runs" \
        "$reactor" "$rounds"
printf 'bare_ms=%d operator_ms=%d ratio=%.2f (rounds %s; goal <= 1.2)\n' "$bare" "$operator" "$ratio" "$range"
printf 'operator_cpu_ms=%d (%d us per spawn)\n' "$cpu_ms" $((cpu_ms * 1000 / runs))
printf 'operator_idle_rss_kb=%d (after converging %d modules)\n' "$rss_kb" "$modules"
fs=$(stat -f -c %T "$state_base")
printf 'state_dir_fs=%s (%s)\n' "$fs" "$state_base"
awk -v m="$modules" -v r="$reactor, releases on $fs" -v b="$bare" -v o="$operator" -v q="$ratio" -v c="$cpu_ms" -v n="$runs" 'BEGIN {
        printf "row: start-up converge, %d modules x 3 hooks, %s|%d ms|%d ms (bare spawns)|%.2f|<= 1.2|%s\n",
                m, r, o, b, q, (q <= 1.2 ? "yes" : "no")
        printf "row: start-up converge, operator CPU per spawn, %s|%d us|-|-|report|-\n", r, c * 1000 / n }'
