#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# binding_monitor_missing_total against the fake API server: a hook run that reads the snapshot of
# a kubernetes binding whose monitor is not running gets an empty list; the operator logs it and
# counts it per binding. Two ways to get there: an event run queued in its own queue that starts
# after its module was disabled and deleted (the monitors stopped), and the afterDeleteHelm hook of
# a module whose first run never got as far as starting its monitors. Runs with live monitors
# count nothing.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-kube-metrics.XXXXXX)
fk_start
mkdir -p "$work/logs" "$work/global" "$work/modules/010-watcher/hooks" "$work/modules/020-broken/hooks"
printf 'watcherEnabled: true\nbrokenEnabled: true\n' >"$work/modules/values.yaml"
# watcher: every ConfigMap of namespace "test", grouped (each run gets the group's snapshot), in
# queue "side"; a run waits while $work/hold exists.
cat >"$work/modules/010-watcher/hooks/watch.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then
        echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","group":"g","queue":"side","executeHookOnSynchronization":false,"namespace":{"nameSelector":{"matchNames":["test"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}'
        exit 0
fi
jq -c '[.[] | {binding, type, snapshots}]' "\$BINDING_CONTEXT_PATH" >>"$work/logs/watcher"
if [ -e "$work/hold" ]; then
        touch "$work/held"
        while [ -e "$work/hold" ]; do read -r -t 0.02 <> <(:) || true; done
fi
SCRIPT
# broken: its onStartup fails, so its run never reaches the monitors; afterDeleteHelm reads them.
cat >"$work/modules/020-broken/hooks/fail.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
echo "broken on purpose" >&2
exit 1
SCRIPT
cat >"$work/modules/020-broken/hooks/cleanup.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then
        echo '{"configVersion":"v1","afterDeleteHelm":1,"kubernetes":[{"name":"secrets","kind":"Secret","namespace":{"nameSelector":{"matchNames":["test"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}'
        exit 0
fi
jq -c '[.[] | {binding, snapshots}]' "\$BINDING_CONTEXT_PATH" >>"$work/logs/broken"
SCRIPT
chmod +x "$work/modules/"*/hooks/*.sh
fk POST /fake/objects '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"test"}}' >/dev/null
fk POST /fake/objects '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1","namespace":"test"}}' >/dev/null
config() { # config YAML: replace the config file as an editor would
        printf '%s\n' "$1" >"$work/config.yaml.new" && mv "$work/config.yaml.new" "$work/config.yaml"
}
config 'watcher: {}'
cm() { fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"'"$1"'","namespace":"test"}}' >/dev/null; }
wait_file() { # wait_file PATH: up to 20 s
        for _ in $(seq 1000); do [ -e "$1" ] && return 0; read -r -t 0.02 <> <(:) || true; done
        return 1
}
missing() { curl -s "$url/metrics" | grep '^addon_operator_binding_monitor_missing_total[{ ]'; }
missing_is() { [ "$(missing)" = "$1" ]; }

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" KUBE_SERVER="$api" ADDON_OPERATOR_NAMESPACE=ao \
        GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 ADDON_OPERATOR_ISOLATE_FAILING_MODULES=true \
        ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"http: listening on'
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on 127.0.0.1:\([0-9]*\).*/\1/p' | tail -1)
url=http://127.0.0.1:$port
op_wait_for '"msg":"first converge done'
ok $? "the operator converges while broken fails in its own queue"
like "$OP_LOG" "module 'watcher' is up to date" "watcher ran: its monitor runs"
like "$(curl -s "$url/metrics")" '# TYPE addon_operator_binding_monitor_missing_total counter' \
        "binding_monitor_missing_total is listed"
is "$(missing)" "" "no run has read a binding without a monitor"

# An event run held in queue "side", another queued behind it.
touch "$work/hold"
cm cm-a
wait_file "$work/held"
ok $? "the first event run is held"
cm cm-b
# Disable both modules: watcher's monitors stop; broken is deleted with its monitors never started.
config 'watcher: {}
watcherEnabled: false
brokenEnabled: false'
op_wait_for "module 'watcher' deleted"
ok $? "watcher is deleted while its event run holds queue side"
wait_for missing_is 'addon_operator_binding_monitor_missing_total{binding="secrets"} 1'
is "$(missing)" 'addon_operator_binding_monitor_missing_total{binding="secrets"} 1' \
        "broken's afterDeleteHelm read a binding whose monitor never started: counted"
is "$(cat "$work/logs/broken")" '[{"binding":"afterDeleteHelm","snapshots":{"secrets":[]}}]' \
        "and it got an empty list, though Secret s1 exists"

rm -f "$work/hold"
wait_for missing_is 'addon_operator_binding_monitor_missing_total{binding="cms"} 1
addon_operator_binding_monitor_missing_total{binding="secrets"} 1'
is "$(missing)" 'addon_operator_binding_monitor_missing_total{binding="cms"} 1
addon_operator_binding_monitor_missing_total{binding="secrets"} 1' \
        "the event run that started after the delete read cms without a monitor: counted"
two_runs() { [ "$(wc -l <"$work/logs/watcher")" -ge 2 ]; }
wait_for two_runs
is "$(cat "$work/logs/watcher")" '[{"binding":"cms","type":"Group","snapshots":{"cms":[{"filterResult":"cm-a"}]}}]
[{"binding":"cms","type":"Group","snapshots":{"cms":[]}}]' \
        "the held run saw cm-a; the late one got an empty list"
op_wait_for "kubernetes binding 'cms' has no running monitor"
is "$(grep -F "kubernetes binding 'cms' has no running monitor" <<<"$OP_LOG")" \
        '{"level":"error","msg":"hook '"'hooks/watch.sh'"': kubernetes binding '"'cms'"' has no running monitor: the run gets an empty snapshot","module":"watcher","hook":"hooks/watch.sh","hook.type":"module","binding":"cms","event":"kubernetes","queue":"side","task":"ModuleHookRun","event.type":"Kubernetes"}' \
        "the late run is logged as an error naming module, hook and binding"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
