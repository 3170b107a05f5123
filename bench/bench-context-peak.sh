#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Peak memory of one hook run whose binding context carries a large snapshot. One global hook with a
# kubernetes binding on COUNT ConfigMaps served by the fake API server (tests/fakekube; tests/fakehelm
# as helm), jqFilter '.metadata.name', keepFullObjectsInMemory KEEP, and a schedule binding every 4 s
# that includes its snapshot. Once the Synchronization run and a first tick are over, the operator's
# peak RSS is reset (/proc/PID/clear_refs: 5) and read again after the next tick: what that run's
# binding context cost on top of the steady state. Each binary runs ROUNDS times, alternating; medians.
#   bench/bench-context-peak.sh [[OLD_BINARY] NEW_BINARY]   (default NEW: build-release/addon-operator)
#   environment: COUNTS="10000 100000" KEEP="false true" ROUNDS=1
# Each binary finds addon-operator-spawner beside itself.
set -euo pipefail
read -r -a counts <<<"${COUNTS:-10000 100000}"
read -r -a keeps <<<"${KEEP:-false true}"
rounds=${ROUNDS:-1}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/fake-cluster.sh
. "$here/bench/fake-cluster.sh"
ab_binaries "$@"
work=$(mktemp -d /tmp/bench-context-peak.XXXXXX)
fk_pid='' op_pid=''
trap 'kill -9 ${op_pid:-} ${fk_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT

status() { awk -v k="$2:" '$1 == k {print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
ticks() { find "$work/log" -name 'done-tick-*' | wc -l; }
# wait_for SECONDS COMMAND...: until COMMAND succeeds; fail when the operator exits or time runs out.
wait_for() {
        local end=$((SECONDS + $1))
        shift
        until "$@"; do
                kill -0 "$op_pid" 2>/dev/null || { tail -20 "$work/op.log" >&2; exit 1; }
                [ $SECONDS -lt $end ] || { echo "bench-context-peak: timed out waiting for $*" >&2; exit 1; }
                sleep 0.05
        done
}
synced() { compgen -G "$work/log/done-cms-*" >/dev/null; }
ticked() { [ "$(ticks)" -gt "$1" ]; }

# run BINARY KEEP: prints "steady_kib peak_kib file_bytes".
run() {
        rm -rf "$work/log" "$work/global"
        mkdir -p "$work/global/hooks" "$work/modules" "$work/log"
        cat >"$work/global/hooks/watch.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
  echo '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"*/4 * * * * *","includeSnapshotsFrom":["cms"]}],"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["bench"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":$2,"executeHookOnEvent":[]}]}'
  exit 0
fi
b=\$(head -c 40 "\$BINDING_CONTEXT_PATH" | sed 's/.*"binding":"\([a-z]*\)".*/\1/')
wc -c <"\$BINDING_CONTEXT_PATH" >"$work/log/size-\$b"
touch "$work/log/done-\$b-\$(date +%s%N)"
EOF
        chmod +x "$work/global/hooks/watch.sh"
        env -i PATH="$PATH" KUBE_SERVER="http://127.0.0.1:$port" GLOBAL_HOOKS_DIR="$work/global" \
                MODULES_DIR="$work/modules" ADDON_OPERATOR_LISTEN_PORT=0 \
                HELM_BIN_PATH="$here/tests/fakehelm/fake-helm" FAKE_HELM_DIR="$work/fakehelm" \
                DEBUG_UNIX_SOCKET= KUBE_CLIENT_QPS=1000 KUBE_CLIENT_BURST=1000 "$1" start >"$work/op.log" 2>&1 &
        op_pid=$!
        wait_for 600 synced
        wait_for 60 ticked 0
        sleep 1.5 # the run's allocations settled (and trimmed)
        local steady seen
        steady=$(status "$op_pid" VmRSS)
        echo 5 >"/proc/$op_pid/clear_refs" # VmHWM := VmRSS
        seen=$(ticks)
        wait_for 60 ticked "$seen"
        sleep 1.5 # the run's task is finished and its contexts freed
        echo "$steady $(status "$op_pid" VmHWM) $(cat "$work/log/size-tick")"
        kill -TERM "$op_pid"
        wait "$op_pid" || true
        op_pid=''
}

printf '%-8s %-6s %-4s %12s %12s %12s %12s\n' objects keep bin "steady KiB" "peak KiB" "+KiB" "file bytes"
for n in "${counts[@]}"; do
        fakekube_with_configmaps "$n"
        for keep in "${keeps[@]}"; do
                for _ in $(seq "$rounds"); do
                        for i in "${!bins[@]}"; do
                                run "${bins[i]}" "$keep" >>"$work/${tags[i]}-$n-$keep"
                        done
                done
                for tag in "${tags[@]}"; do
                        f=$work/$tag-$n-$keep
                        steady=$(awk '{print $1}' "$f" | median)
                        peak=$(awk '{print $2}' "$f" | median)
                        extra=$(awk '{print $2 - $1}' "$f" | median)
                        printf '%-8s %-6s %-4s %12s %12s %12s %12s\n' "$n" "$keep" "$tag" "$steady" "$peak" "$extra" \
                                "$(awk '{print $3}' "$f" | median)"
                done
        done
        kill -TERM "$fk_pid"
        wait "$fk_pid" || true
        fk_pid=''
done
