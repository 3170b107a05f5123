#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Memory of watched objects: the operator with one global hook bound to COUNT ConfigMaps served by
# the fake API server (jqFilter '.metadata.name', keepFullObjectsInMemory: false), against the same
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
fk_pid=
op_pid=
trap 'kill -9 ${op_pid:-} ${fk_pid:-} 2>/dev/null; rm -rf "$work"' EXIT

rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# run NAMESPACE: start the operator bound to NAMESPACE, wait for the Synchronization run, print "rss_kb ms".
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
                MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_LISTEN_PORT=0 \
                DEBUG_UNIX_SOCKET= KUBE_CLIENT_QPS=1000 KUBE_CLIENT_BURST=1000 "$binary" start \
                >"$work/op-$1.log" 2>&1 &
        op_pid=$!
        until [ -e "$work/log-$1/synced" ]; do
                kill -0 "$op_pid" || { cat "$work/op-$1.log"; exit 1; }
                sleep 0.05
        done
        local ms=$(($(now_ms) - start))
        sleep 0.5 # let the run's temporary allocations settle before reading RSS
        echo "$(rss_kb "$op_pid") $ms"
        kill -TERM "$op_pid"
        wait "$op_pid" || true
        op_pid=
}

printf '%-8s %12s %12s %14s %10s\n' objects "rss KiB" "empty KiB" "bytes/object" "sync ms"
for n in "${counts[@]}"; do
        python3 -c 'import json,sys
n=int(sys.argv[1])
print(json.dumps([{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%06d" % i,"namespace":"bench","labels":{"app":"bench","index":str(i)}},"data":{"key":"value-%d" % i}} for i in range(n)]))' "$n" \
                >"$work/state.json"
        rm -f "$work/fk.port"
        python3 "$here/tests/fakekube/fakekube.py" --port 0 --port-file "$work/fk.port" --state "$work/state.json" \
                2>/dev/null &
        fk_pid=$!
        until [ -s "$work/fk.port" ]; do sleep 0.05; done
        port=$(cat "$work/fk.port")
        read -r full ms < <(run bench)
        read -r empty _ < <(run nothing)
        printf '%-8s %12s %12s %14s %10s\n' "$n" "$full" "$empty" $(((full - empty) * 1024 / n)) "$ms"
        kill -TERM "$fk_pid"
        wait "$fk_pid" || true
        fk_pid=
done
