#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Memory of watched objects: the operator with one global hook bound to COUNT ConfigMaps served by
# the fake API server (jqFilter '.metadata.name', keepFullObjectsInMemory: false; tests/fakehelm as
# helm, which start-up requires with a cluster and which no module calls here), against the same
# operator with the binding on an empty namespace. Prints both RSS values once the Synchronization
# run has happened, the difference per object, and the time from start to that run.
#   bench/bench-kube-memory.sh [BINARY] [COUNT...]      (defaults: build-release/addon-operator, 1000 10000 100000)
set -euo pipefail
binary=$(realpath "${1:-build-release/addon-operator}")
shift || true
counts=("${@:-1000}")
[ $# -eq 0 ] && counts=(1000 10000 100000)
here=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/bench-kube-memory.XXXXXX)
# shellcheck source=bench/fake-cluster.sh
. "$here/bench/fake-cluster.sh"
fk_pid=
op_pid=
trap 'kill -9 ${op_pid:-} ${fk_pid:-} 2>/dev/null || true; rm -rf "$work"' EXIT

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
peak_kb() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# The reference per object: its compact JSON, as a watch event or a LIST item carries it.
object_bytes=0

# run NAMESPACE: start the operator bound to NAMESPACE, wait for the Synchronization run, print
# "rss_kb ms peak_kb" (the peak: the most RSS the process had until then, the list included).
run() {
        rm -rf "$work/log-$1"
        mkdir -p "$work/global/hooks" "$work/modules" "$work/log-$1"
        cat >"$work/global/hooks/watch.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["$1"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false,"executeHookOnEvent":[]}]}'
  exit 0
fi
touch "$work/log-$1/synced"
EOF
        chmod +x "$work/global/hooks/watch.sh"
        local start
        start=$(now_ms)
        env -i PATH="$PATH" KUBE_SERVER="http://127.0.0.1:$port" GLOBAL_HOOKS_DIR="$work/global" \
                MODULES_DIR="$work/modules" ADDON_OPERATOR_LISTEN_PORT=0 \
                HELM_BIN_PATH="$here/tests/fakehelm/fake-helm" FAKE_HELM_DIR="$work/fakehelm" \
                DEBUG_UNIX_SOCKET= KUBE_CLIENT_QPS=1000 KUBE_CLIENT_BURST=1000 "$binary" start \
                >"$work/op-$1.log" 2>&1 &
        op_pid=$!
        until [ -e "$work/log-$1/synced" ]; do
                kill -0 "$op_pid" || { cat "$work/op-$1.log" >&2; exit 1; }
                sleep 0.05
        done
        local ms=$(($(now_ms) - start))
        sleep 0.5 # let the run's temporary allocations settle before reading RSS
        echo "$(rss_kb "$op_pid") $ms $(peak_kb "$op_pid")"
        kill -TERM "$op_pid"
        wait "$op_pid" || true
        op_pid=
}

printf '%-8s %12s %12s %12s %14s %10s\n' objects "rss KiB" "peak KiB" "empty KiB" "bytes/object" "sync ms"
: >"$work/rows"
for n in "${counts[@]}"; do
        fakekube_with_configmaps "$n"
        # What the server sends per object (with the uid, resourceVersion, ... it adds), compact.
        object_bytes=$(curl -s "http://127.0.0.1:$port/api/v1/namespaces/bench/configmaps?limit=100" |
                python3 -c 'import json,sys
items=json.load(sys.stdin)["items"]
print(sum(len(json.dumps(o, separators=(",", ":"))) for o in items) // max(len(items), 1))')
        read -r full ms peak < <(run bench)
        read -r empty _ < <(run nothing)
        per=$(((full - empty) * 1024 / n))
        printf '%-8s %12s %12s %12s %14s %10s\n' "$n" "$full" "$peak" "$empty" "$per" "$ms"
        echo "$n $full $per $empty $peak" >>"$work/rows"
        kill -TERM "$fk_pid"
        wait "$fk_pid" || true
        fk_pid=
done
# Rows for bench/run: RSS against the 64 MB goal (at 100,000 objects; the reference is the same
# operator with its binding on an empty namespace), bytes per object against the object's own JSON
# (what the server sent for it), and whether growth is linear: no super-linear term, i.e. the bytes
# per object at the largest count at most 1.25 times those at the next smaller one (past 1,000
# objects, where the fixed costs stop dominating; fewer bytes per object at more objects is the
# fixed part amortised).
awk -v ob="$object_bytes" '{ n[NR] = $1; rss[NR] = $2; per[NR] = $3; empty[NR] = $4; peak[NR] = $5 } END {
        for (i = 1; i <= NR; i++) {
                goal = n[i] == 100000 ? "<= 64 MB" : "report"
                met = n[i] == 100000 ? (rss[i] <= 64 * 1024 ? "yes" : "no") : "-"
                printf "row: RSS with %d watched objects (jqFilter, keepFullObjectsInMemory=false)|%.1f MB|%.1f MB (no objects)|%.2f|%s|%s\n",
                        n[i], rss[i] / 1024, empty[i] / 1024, rss[i] / empty[i], goal, met
                printf "row: bytes per watched object, %d objects|%d B|%d B (the object JSON)|%.1f|report|-\n", n[i], per[i], ob, per[i] / ob
                printf "row: peak RSS until the Synchronization ran, %d objects|%.1f MB|%.1f MB (RSS after it)|%.2f|<= 1.25|%s\n",
                        n[i], peak[i] / 1024, rss[i] / 1024, peak[i] / rss[i], (peak[i] <= 1.25 * rss[i] ? "yes" : "no")
        }
        if (NR >= 2 && n[NR - 1] > 1000) {
                d = per[NR] / per[NR - 1]
                printf "row: memory growth %d -> %d objects (bytes per object, larger / smaller)|%d -> %d B|linear|%.2f|linear (<= 1.25)|%s\n",
                        n[NR - 1], n[NR], per[NR - 1], per[NR], d, (d <= 1.25 ? "yes" : "no")
        }
}' "$work/rows"
