#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Start-up convergence: MODULES modules x 3 trivial hooks (onStartup, beforeHelm, afterHelm), no
# cluster, local release step. Prints the operator's time from exec to "first converge done"
# against the same hooks spawned bare, one after another (each once with --config and once for
# its binding), and the operator's RSS once idle.
#   bench/bench-converge.sh [BINARY] [MODULES]      (defaults: build/addon-operator, 100)
set -euo pipefail
binary=$(realpath "${1:-build/addon-operator}")
modules=${2:-100}
work=$(mktemp -d /tmp/bench-converge.XXXXXX)
trap 'kill -9 "${pid:-0}" 2>/dev/null; rm -rf "$work"' EXIT

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

now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The bare limit: every hook spawned as often as the operator spawns it (--config, then one run).
start=$(now_ms)
for h in $hooks; do
        (cd "${h%/*}" && "$h" --config >/dev/null && "$h")
done
bare=$(($(now_ms) - start))

log=$work/log
start=$(now_ms)
MODULES_DIR=$work/modules GLOBAL_HOOKS_DIR=$work/global ADDON_OPERATOR_TMP_DIR=$work/tmp \
        ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET=$work/debug.socket LOG_TYPE=json \
        "$binary" start >"$log" 2>&1 &
pid=$!
# Woken by the log line itself (tail -f), not by polling.
if ! timeout 600 grep -q -m1 '"msg":"first converge done' < <(tail -n +1 -f "$log"); then
        cat "$log" >&2
        exit 1
fi
operator=$(($(now_ms) - start))
# The operator's own CPU (not its children's) up to the converge: utime + stime in clock ticks.
read -r -a stat <"/proc/$pid/stat"
cpu_ms=$(((stat[13] + stat[14]) * 1000 / $(getconf CLK_TCK)))
# Idle: the converge is done; give the loop a moment to free what the start-up used.
sleep 1
rss_kb=$(awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status")
kill -TERM "$pid"
wait "$pid" || true

runs=$((modules * 3 * 2))
printf 'modules=%d hooks=%d spawns=%d\n' "$modules" $((modules * 3)) "$runs"
awk -v b="$bare" -v o="$operator" 'BEGIN { printf "bare_ms=%d operator_ms=%d ratio=%.2f (goal <= 1.2)\n", b, o, o / b }'
printf 'operator_cpu_ms=%d (%d us per spawn)\n' "$cpu_ms" $((cpu_ms * 1000 / runs))
printf 'operator_idle_rss_kb=%d (after converging %d modules)\n' "$rss_kb" "$modules"
