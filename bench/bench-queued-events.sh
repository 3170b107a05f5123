#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Memory per queued kubernetes event whose binding includes a large snapshot. One global hook, two
# bindings on ConfigMaps served by the fake API server (tests/fakekube; tests/fakehelm as helm):
# "big" (namespace "big", N objects of BYTES data bytes, jqFilter .data, runs nothing: no
# Synchronization run, no events) and "events" (namespace "ev", includeSnapshotsFrom: [big], queue
# "slow"). The first "events" run blocks until the round ends; RSS is read then, again once M more
# objects created in "ev" are all waiting in "slow" as binding contexts (`queue list`, summed over
# its tasks, so merged or compacted runs still count), and (after - before) / M is the memory one
# queued event costs. Each binary runs ROUNDS times, alternating; medians. With OLD_BINARY the
# ratio is new / old; without, against the included snapshot's own JSON (what a copy of it weighs).
#   bench/bench-queued-events.sh [[OLD_BINARY] NEW_BINARY]   (default NEW: build-release/addon-operator)
#   environment: N=2000 M=200 ROUNDS=3 BYTES=500
# Each binary finds addon-operator-spawner beside itself.
set -euo pipefail
n=${N:-2000} m=${M:-200} rounds=${ROUNDS:-3} bytes=${BYTES:-500}
here=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=bench/fake-cluster.sh
. "$here/bench/fake-cluster.sh"
ab_binaries "$@"
work=$(mktemp -d /tmp/bench-queued-events.XXXXXX)
fk_pid='' op_pid='' op_log=''
cleanup() { # a killed operator leaves its blocked hook polling for its hold file, which rm -rf removes
        set +e
        [ -n "$op_pid" ] && kill -9 "$op_pid" 2>/dev/null
        [ -n "$fk_pid" ] && kill -TERM "$fk_pid" 2>/dev/null && wait "$fk_pid"
        rm -rf "$work"
}
trap cleanup EXIT

die() {
        echo "bench-queued-events: $*" >&2
        [ -n "$op_pid" ] && alive "$op_pid" && { echo "--- queue list:" >&2; "$bin" queue list --debug-unix-socket "$dir/debug.socket" >&2; }
        [ -n "$op_log" ] && { echo "--- last lines of the operator's log ($op_log):" >&2; tail -20 "$op_log" >&2; }
        exit 1
}
alive() { [ -e "/proc/$1" ] && ! grep -q '^State:.*zombie' "/proc/$1/status" 2>/dev/null; }
# wait_until SECONDS WHAT COMMAND...: run COMMAND every 50 ms until it succeeds; fail naming WHAT.
wait_until() {
        local limit=$1 end=$((SECONDS + $1)) what=$2
        shift 2
        until "$@"; do
                [ -z "$op_pid" ] || alive "$op_pid" || die "the operator exited while waiting for $what"
                [ $SECONDS -lt $end ] || die "no $what after ${limit} s"
                sleep 0.05
        done
}
fk() { curl -sf -X "$1" -H 'Content-Type: application/json' ${3:+--data "@$3"} "$api$2"; }
rss_kb() { awk '/^VmRSS/ {print $2}' "/proc/$1/status"; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
configmaps() { # configmaps NAMESPACE FIRST COUNT DATA_BYTES: a JSON list of ConfigMaps
        python3 -c 'import json,sys
ns, first, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
print(json.dumps([{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%06d" % i, "namespace": ns},
                   "data": {"payload": ("%06d" % i * (size // 6 + 1))[:size]}} for i in range(first, first + count)]))' "$@"
}

configmaps big 0 "$n" "$bytes" >"$work/state.json"
python3 "$here/tests/fakekube/fakekube.py" --port 0 --port-file "$work/fk.port" --state "$work/state.json" \
        2>"$work/fk.log" &
fk_pid=$!
wait_until 30 "fake API server port file" test -s "$work/fk.port"
api="http://127.0.0.1:$(cat "$work/fk.port")"
configmaps ev 1 "$m" 0 >"$work/events.json"
snapshot_kb=

# Observable states, from the fake server and the operator's debug socket.
watching() { # the operator watches both namespaces, so their lists are done: later writes are events
        fk GET /fake/watches | python3 -c 'import json,sys
p={w["path"] for w in json.load(sys.stdin)["watches"]}
sys.exit(not {"/api/v1/namespaces/big/configmaps","/api/v1/namespaces/ev/configmaps"} <= p)'
}
no_watches() { fk GET /fake/watches | python3 -c 'import json,sys; sys.exit(len(json.load(sys.stdin)["watches"]) > 0)'; }
queues() { # prints "MAIN_LENGTH SLOW_STATUS SLOW_CONTEXTS"
        local out # the socket may not be up yet: then fail quietly
        out=$("$bin" queue list -o json --debug-unix-socket "$dir/debug.socket" 2>/dev/null) || return 1
        # The Go operator's document ({"active": [...]}, empty queues left out), or older binaries' list.
        python3 -c 'import json,sys
d=json.load(sys.stdin)
q={x["name"]: x for x in (d if isinstance(d, list) else d["active"])}
s=q.get("slow", {"status": "absent", "tasks": []})
m=q.get("main", {})
print(m.get("length", m.get("tasksCount", 0)), s["status"].split()[0], sum(t["contexts"] for t in s.get("tasks", [])))' <<<"$out"
}
blocked() { [ -e "$dir/started" ] && read -r main status _ < <(queues) && [ "$main" = 0 ] && [ "$status" = running ]; }
queued() { read -r _ _ contexts < <(queues) && [ "$contexts" -ge "$1" ]; }

# run BINARY TAG: one operator; appends "rss_before rss_after" (KiB) to $work/TAG.
run() {
        bin=$1 dir=$work/run-$2-$round
        mkdir -p "$dir/global/hooks" "$dir/modules"
        touch "$dir/hold"
        cat >"$dir/global/hooks/queued.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
  echo '{"configVersion":"v1","kubernetes":[{"name":"big","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["big"]}},"jqFilter":".data","keepFullObjectsInMemory":false,"executeHookOnSynchronization":false,"executeHookOnEvent":[]},{"name":"events","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ev"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false,"executeHookOnSynchronization":false,"includeSnapshotsFrom":["big"],"queue":"slow"}]}'
  exit 0
fi
touch "$dir/started"
while [ -e "$dir/hold" ]; do sleep 0.1; done
EOF
        chmod +x "$dir/global/hooks/queued.sh"
        curl -sf -X DELETE "$api/api/v1/namespaces/ev/configmaps" >/dev/null
        # The previous operator's watches must be gone, or they would pass for this one's.
        wait_until 30 "end of the previous operator's watches" no_watches
        op_log=$dir/operator.log
        env -i PATH="$PATH" KUBE_SERVER="$api" GLOBAL_HOOKS_DIR="$dir/global" MODULES_DIR="$dir/modules" \
                ADDON_OPERATOR_TMP_DIR="$dir/tmp" ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET="$dir/debug.socket" \
                HELM_BIN_PATH="$here/tests/fakehelm/fake-helm" FAKE_HELM_DIR="$dir/fakehelm" \
                KUBE_CLIENT_QPS=1000 KUBE_CLIENT_BURST=1000 "$bin" start >"$op_log" 2>&1 &
        op_pid=$!
        wait_until 120 "watches on namespaces big and ev" watching
        echo '[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-000000","namespace":"ev"}}]' >"$dir/first.json"
        fk POST /fake/objects "$dir/first.json" >/dev/null
        wait_until 60 "blocked first \"events\" run (main queue idle, \"slow\" running)" blocked
        local before contexts after
        before=$(rss_kb "$op_pid")
        read -r _ _ contexts < <(queues)
        fk POST /fake/objects "$work/events.json" >/dev/null
        wait_until 300 "$m more binding contexts in queue \"slow\"" queued $((contexts + m))
        after=$(rss_kb "$op_pid")
        echo "$before $after" >>"$work/$2"
        [ -n "$snapshot_kb" ] || snapshot_kb=$("$bin" global snapshots -o json --debug-unix-socket "$dir/debug.socket" |
                python3 -c 'import json,sys
b=json.load(sys.stdin)["hooks/queued.sh"]["big"]
b=b["snapshot"] if isinstance(b, dict) else b  # {"snapshot": [...]}, or the list of older binaries
print(round(len(json.dumps(b, separators=(",", ":"))) / 1024))')
        rm "$dir/hold" # the hook returns, the queued runs go (merged, not blocking), then a clean stop
        kill -TERM "$op_pid"
        local end=$((SECONDS + 60))
        while alive "$op_pid" && [ $SECONDS -lt $end ]; do sleep 0.05; done
        alive "$op_pid" && kill -9 "$op_pid" && echo "bench-queued-events: $2 did not stop within 60 s of SIGTERM; killed" >&2
        wait "$op_pid" 2>/dev/null || true
        op_pid='' op_log=''
}

for round in $(seq "$rounds"); do
        for i in "${!bins[@]}"; do run "${bins[i]}" "${tags[i]}"; done
done

echo "included snapshot: $n objects with $bytes data bytes, $snapshot_kb KiB as JSON; $m queued events; medians of $rounds rounds"
declare -A per
for tag in "${tags[@]}"; do
        before=$(awk '{print $1}' "$work/$tag" | median)
        after=$(awk '{print $2}' "$work/$tag" | median)
        per[$tag]=$(awk -v m="$m" '{printf "%.2f\n", ($2 - $1) / m}' "$work/$tag" | median)
        ratio=
        if [ "$tag" = new ] && [ ${#tags[@]} -eq 2 ]; then
                ratio=$(awk -v a="${per[new]}" -v b="${per[old]}" 'BEGIN {printf "  new/old %.3g", (b > 0 ? a / b : 0)}')
        fi
        printf '%-4s rss before %8s KiB  after %8s KiB  per queued event %8s KiB%s\n' "$tag" "$before" "$after" "${per[$tag]}" "$ratio"
done
if [ ${#tags[@]} -eq 2 ]; then
        ref="${per[old]} KiB (the binary before)" ref_kb=${per[old]}
else
        ref="$snapshot_kb KiB (the included snapshot's JSON)" ref_kb=$snapshot_kb
fi
awk -v n="$n" -v m="$m" -v s="$snapshot_kb" -v per="${per[new]}" -v ref="$ref" -v r="$ref_kb" 'BEGIN {
        printf "row: memory per queued kubernetes event, includeSnapshotsFrom %d objects (%d KiB JSON), %d queued|%.2f KiB|%s|%.3g|report|-\n",
                n, s, m, per, ref, (r > 0 ? per / r : 0) }'
