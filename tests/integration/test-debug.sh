#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The debug commands against an operator with a cluster (tests/fakekube) and helm (tests/fakehelm):
# every command's default format and document are the Go operator's (exact outputs), -o text keeps
# our tables, `global list`, `module render` (helm template with the current values, --debug, --diff
# against the release), `config list` / `config set log.level` with a duration that expires on its
# own, the POST /config/set route, `raw`, and the errors with their exit codes.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-debug.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm"
mkdir -p "$FAKE_HELM_DIR" "$work/tmp"
sock=$work/debug.socket

m=$work/modules
mkdir -p "$m/010-chart-mod/templates" "$m/020-no-chart" "$work/global"
printf 'apiVersion: v2\nname: chart-mod\nversion: 0.1.0\n' >"$m/010-chart-mod/Chart.yaml"
cat >"$m/010-chart-mod/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  replicas: "{{ .Values.chartMod.replicas }}"
EOF
printf 'chartMod:\n  replicas: 1\n' >"$m/010-chart-mod/values.yaml"
printf 'chartModEnabled: true\nnoChartEnabled: true\nglobal:\n  cluster: test\n' >"$m/values.yaml"
printf 'chartMod:\n  replicas: 2\n' >"$work/config.yaml"
hook() { # hook NAME CONFIG-JSON [BODY]
        printf '#!/bin/bash\nif [ "${1:-}" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\n%s\n' "$2" "${3:-}" \
                >"$work/global/$1"
        chmod +x "$work/global/$1"
}
hook b.sh '{"configVersion":"v1","onStartup":2}'
hook a.sh '{"configVersion":"v1","onStartup":1}' \
        'echo "{\"op\":\"add\",\"path\":\"/global/startedBy\",\"value\":\"a.sh\"}" >"$VALUES_JSON_PATCH_PATH"'

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
        ADDON_OPERATOR_NAMESPACE=ao MODULES_DIR="$m" GLOBAL_HOOKS_DIR="$work/global" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        DEBUG_UNIX_SOCKET="$sock" LOG_NO_TIME=true -- start
op_wait_for 'first converge done'
ok $? "the operator converges"

dbg() { env DEBUG_UNIX_SOCKET="$sock" "$AO_BINARY" "$@"; }
# exact <expected output> <description> ARGS...: the output and exit code 0
exact() {
        local want=$1 desc=$2 out
        shift 2
        out=$(dbg "$@" 2>&1)
        is "$?:$out" "0:$want" "$desc"
}
# fails <code> <expected stderr> <description> ARGS...: nothing on stdout
fails() {
        local code=$1 want=$2 desc=$3 out err
        shift 3
        err=$(dbg "$@" 2>&1 >"$work/stdout")
        is "$?:$err:$(cat "$work/stdout")" "$code:$want:" "$desc"
}

# ---- each command's default is the Go operator's ---------------------------------------------------
exact "Summary:
- 'main' queue: empty.
- no tasks to handle." "queue list: the Go operator's text (no active queue, the summary)" queue list
exact '{"active":[],"summary":{"mainQueueTasks":0,"otherQueues":{"active":0,"empty":0,"tasks":0},"totalTasks":0}}' \
        "queue list -o json: active, summary" queue list -o json
exact "Summary:
- 'main' queue: empty.
- no tasks to handle." "queue list -e: the lone empty main queue is not listed" queue list -e
exact "Queue 'main': length 0, status: 'idle'" "queue main: text" queue main
exact '{"name":"main","tasksCount":0,"status":"idle"}' "queue main -o json" queue main -o json
exact "globalHooks:
- a.sh
- b.sh" "global list: YAML, the global hooks by name" global list
exact '{"globalHooks":["a.sh","b.sh"]}' "global list -o json" global list -o json
exact "cluster: test
startedBy: a.sh" "global values: YAML, the section itself" global values
exact '{}' "global config: nothing configured" global config -o json
exact '[{"Operations":[{"op":"add","path":"/global/startedBy","value":"a.sh"}]}]' \
        "global patches: JSON, one patch of the stored operations" global patches
exact "enabledModules:
- chart-mod
- no-chart" "module list: YAML, the enabled modules" module list
exact '{"enabledModules":["chart-mod","no-chart"]}' "module list -o json: what scripts parse" module list -o json
exact "MODULE                            ORDER  STATE
chart-mod                            10  enabled
no-chart                             20  enabled" "module list -o text: our table" module list -o text
exact "replicas: 2" "module values: YAML, the section itself" module values chart-mod
exact "chartMod:
  replicas: 2
global:
  cluster: test
  startedBy: a.sh" "module values -g: both sections by key" module values chart-mod -g
exact '{"chartMod":{"replicas":2},"global":{}}' "module config -g -o json" module config chart-mod -g -o json
exact "null" "module patches: none stored" module patches chart-mod
exact "{}" "module snapshots: no kubernetes bindings" module snapshots chart-mod
exact "chart-mod:
- ao/ConfigMap/chart-mod-cm
no-chart: No monitor" "module resource-monitor: each enabled module's objects" module resource-monitor
exact '{"chart-mod":["ao/ConfigMap/chart-mod-cm"]}' "module resource-monitor MODULE -o json: that one" \
        module resource-monitor chart-mod -o json
like "$(dbg module resource-monitor -o text)" "^monitors:
- module: chart-mod
  objects:
  - ConfigMap ao/chart-mod-cm
  missing: \[\]" "module resource-monitor -o text: the monitors' detail"

# ---- module render ----------------------------------------------------------------------------------
calls() { jq -c '.argv' "$FAKE_HELM_DIR/calls.jsonl"; }
rendered='---
# Source: chart-mod/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: chart-mod-cm
  labels:
    heritage: addon-operator
data:
  replicas: "2"'
out=$(dbg module render chart-mod)
is "$?:$(grep -v '^# values-sha256' <<<"$out")" "0:$rendered" "module render: helm template's manifests with the current values"
like "$(calls | grep '"template"' | tail -1)" '^\["template","chart-mod","'"$m"'/010-chart-mod","--values","'"$work"'/tmp/chart-mod\.module-values\.yaml-[A-Za-z0-9]{6}","--post-renderer","'"$AO_BINARY"'","--post-renderer-args","tool","--post-renderer-args","post-render","--post-renderer-args","heritage=addon-operator","--namespace","ao","--kube-apiserver","'"$api"'"\]$' \
        "module render: the release step's command line, its post-renderer included"
is "$(ls "$work/tmp" | grep -c module-values)" 0 "module render: the values file is removed"
dbg module render chart-mod --debug >/dev/null
like "$(calls | grep '"template"' | tail -1)" '"--debug"' "module render --debug: helm template --debug"
exact "No diff found" "module render --diff: the release is what the chart gives now" module render chart-mod --diff
exact "" "module render: a module without a chart renders nothing" module render no-chart
fails 1 "addon-operator: /module/nope/render: no such module" "module render of an unknown module: exit 1" \
        module render nope

# In maintenance the release stays as it was while the values change: the render differs from it.
printf 'chartMod:\n  replicas: 3\nchartModMaintenance: NoResourceReconciliation\n' >"$work/config.yaml"
op_wait_for "module 'chart-mod' is in maintenance"
ok $? "chart-mod in maintenance: its release is left alone"
out=$(dbg module render chart-mod --diff)
# (fake-helm ends each render with a comment of the values' hash: left out.)
is "$?:$(grep -v 'values-sha256' <<<"$out")" '0:--- release/chart-mod
+++ render/chart-mod
@@ -7,5 +7,5 @@
   labels:
     heritage: addon-operator
 data:
-  replicas: "2"
+  replicas: "3"' "module render --diff: diff -u from the release's manifest to the render"
exact "replicas: 3" "module values follow the config" module values chart-mod

# ---- config list / config set -------------------------------------------------------------------------
header="NAME                           VALUE                EXPIRE AT            DESCRIPTION                             "
desc="the log level; debug reverts after 30m0s unless a duration is given"
row() { printf '%-30s %-20s %-20s %-40s' log.level "$1" "$2" "$desc"; }
exact "$header
$(row info '')" "config list: the Go operator's table" config list
exact '[{"default":"info","description":"'"$desc"'","name":"log.level","value":"info"}]' "config list -o json" \
        config list -o json

exact "" "config set log.level debug: no output" config set log.level debug
expire=$(dbg config list -o json | jq -r '.[0].expireAt')
left=$(($(date -d "$expire" +%s) - $(date +%s)))
ok "$([ "$left" -ge 1795 ] && [ "$left" -le 1801 ]; echo $?)" "debug without a duration expires in 30 minutes (${left}s)"
exact "$header
$(row debug "$expire")" "config list: the value and its expiry" config list
op_wait_for 'log level is now debug'
like "$OP_LOG" \
        "level=info msg=\"runtime parameter 'log.level' set to 'debug' until $expire\" parameter=log.level value=debug" \
        "the change is logged"
printf 'chartMod:\n  replicas: 4\nchartModMaintenance: NoResourceReconciliation\n' >"$work/config.yaml"
op_wait_for "level=debug msg=\"queue 'main': starting"
ok $? "at debug level, debug lines are logged"

exact "" "config set log.level info: for good" config set log.level info
exact '[{"default":"info","description":"'"$desc"'","name":"log.level","value":"info"}]' \
        "config set without a duration: no expiry" config list -o json

exact "" "config set log.level debug 1s" config set log.level debug 1s
is "$(dbg config list -o json | jq -r '.[0].value')" debug "the temporary value is in force"
value_is() { [ "$(dbg config list -o json | jq -r '.[0] | .value + "/" + (.expireAt // "")')" = "$1" ]; }
wait_for value_is info/
ok $? "after its duration the value reverts by itself"
op_wait_for "the temporary value 'debug' expired, back to 'info'"
ok $? "the expiry is logged"
op_wait_for 'msg="log level is now info"'
ok $? "the level in force is info again"

fails 1 "addon-operator: /config/set: log.level: unknown log level 'loud' (trace, debug, info, warn, error or fatal)" \
        "config set of a bad value: exit 1 with the reason" config set log.level loud
fails 1 "addon-operator: /config/set: unknown runtime parameter 'log.color' (see \`config list\`)" \
        "config set of an unknown parameter: exit 1" config set log.color red
fails 2 "addon-operator: invalid duration '5x': a Go duration such as 90s, 10m or 1h30m" \
        "config set with a bad duration: exit 2, nothing sent" config set log.level debug 5x
like "$(dbg config set log.level 2>&1)" "^addon-operator: unknown debug command" "config set without a value: usage"

# The Go operator's route: a form POSTed to /config/set.
post() { curl -s -w ' %{http_code}' --unix-socket "$sock" "$@"; }
is "$(post -d name=log.level -d value=WARN -d duration=1h http://x/config/set)" " 200" "POST /config/set: 200, empty"
is "$(dbg config list -o json | jq -r '.[0].value')" WARN "POST /config/set: the value as given"
is "$(post -d name=log.level http://x/config/set)" "'value' parameter is required
 400" "POST /config/set without a value: 400"
is "$(post -d value=info http://x/config/set)" "'name' parameter is required
 400" "POST /config/set without a name: 400"
is "$(post -d name=log.level -d value=info -d duration=soon http://x/config/set)" \
        "invalid duration 'soon': a Go duration such as 90s, 10m or 1h30m
 400" "POST /config/set with a bad duration: 400"
is "$(post http://x/config/set)" "405 method not allowed
 405" "GET /config/set: 405"
is "$(post -d x=1 http://x/config/list.json)" "405 method not allowed
 405" "POST to a GET route: 405"

# ---- raw and errors -------------------------------------------------------------------------------------
exact '{"enabledModules":["chart-mod","no-chart"]}' "raw URLPATH: the socket's answer as it is" raw /module/list.json
fails 2 "addon-operator: raw: 'module/list' is not a path (it starts with '/')" "raw without a leading slash" \
        raw module/list
fails 1 "addon-operator: /module/nope/values: no such module" "an unknown module: exit 1" module values nope
like "$(dbg module frobnicate 2>&1)" "^addon-operator: unknown debug command" "an unknown command: usage"
dbg module frobnicate >/dev/null 2>&1
is "$?" 2 "an unknown command: exit 2"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
