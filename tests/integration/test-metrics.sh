#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The HTTP side of a running operator: probes, /metrics (checked by promtool),
# hook metrics, the debug socket and the debug commands in every format, and
# scrapes that keep answering while hooks run.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-metrics.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT
sock=$work/debug.socket

hook() { # hook <path> <config JSON> [body]
        mkdir -p "$(dirname "$work/$1")"
        printf '#!/bin/bash\nif [ "${1:-}" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\n%s\n' "$2" "${3:-}" >"$work/$1"
        chmod +x "$work/$1"
}

mkdir -p "$work/modules/010-web"
printf 'global:\n  cluster: test\nwebEnabled: true\n' >"$work/modules/values.yaml"
printf 'web:\n  replicas: 2\n' >"$work/modules/010-web/values.yaml"
printf 'web:\n  replicas: 3\n' >"$work/config.yaml"
hook global/hooks/metrics.sh '{"configVersion":"v1","onStartup":1}' \
        'cat >>"$METRICS_PATH" <<JSON
{"group":"hook1","name":"hook_metric","action":"add","value":1,"labels":{"kind":"pod"}}
{"name":"common_metric","action":"set","value":100,"labels":{"source":"source1"}}
JSON
echo "{\"op\":\"add\",\"path\":\"/global/startedBy\",\"value\":\"metrics.sh\"}" >"$VALUES_JSON_PATCH_PATH"'
hook modules/010-web/hooks/web.sh '{"configVersion":"v1","beforeHelm":1,"schedule":[{"name":"busy","crontab":"* * * * * *","queue":"busy"}]}' \
        'echo "{\"op\":\"add\",\"path\":\"/web/internal\",\"value\":{\"ready\":true}}" >"$VALUES_JSON_PATCH_PATH"'

op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 \
        ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET="$sock" LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"http: listening on'
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on 127.0.0.1:\([0-9]*\).*/\1/p' | tail -1)
url=http://127.0.0.1:$port
op_wait_for '"msg":"first converge done'
ok $? "the operator converges"

is "$(curl -s -o /dev/null -w '%{http_code}' "$url/healthz")" 200 "/healthz answers 200"
is "$(curl -s -w ' %{http_code}' "$url/readyz")" "Startup converge done.
 200" "/readyz is ready after the first converge"

metrics=$(curl -s "$url/metrics")
has() { # has <exact line> <description>
        ok "$(grep -qxF -- "$1" <<<"$metrics"; echo $?)" "$2"
}
has 'addon_operator_global_hook_run_success_total{hook="hooks/metrics.sh",binding="onStartup",activation="OperatorStartup",queue="main"} 1' \
        "/metrics: global hook success, documented name"
has 'addon_operator_global_hook_success_total{hook="hooks/metrics.sh",binding="onStartup",activation="OperatorStartup",queue="main"} 1' \
        "/metrics: global hook success, the Go operator's name too"
has 'addon_operator_module_hook_run_success_total{module="web",hook="hooks/web.sh",binding="beforeHelm",activation="OperatorStartup",queue="main"} 1' \
        "/metrics: module hook success"
has 'addon_operator_convergence_total{activation="OperatorStartup"} 1' "/metrics: one converge at start-up"
has 'addon_operator_binding_count{module="web",hook="hooks/web.sh"} 2' "/metrics: bindings per hook"
has 'addon_operator_module_discover_errors_total 0' "/metrics: discovery errors, documented name"
has 'addon_operator_modules_discover_errors_total 0' "/metrics: discovery errors, the Go operator's name"
has 'addon_operator_config_values_errors_total 0' "/metrics: config errors"
has '# TYPE addon_operator_global_hook_run_seconds histogram' "/metrics: hook run time is a histogram"
like "$metrics" 'addon_operator_global_hook_run_max_rss_bytes\{hook="hooks/metrics.sh",binding="onStartup",activation="OperatorStartup",queue="main"\} [1-9][0-9.]*e\+0[6-9]' \
        "/metrics: max RSS of the hook in bytes"
like "$metrics" 'addon_operator_module_run_seconds_count\{module="web",activation="OperatorStartup"\} 1' \
        "/metrics: module run time"
printf '%s\n' "$metrics" >"$work/metrics.txt"
promtool check metrics <"$work/metrics.txt" >"$work/promtool.out" 2>&1
code=$?
# promtool's lint has naming opinions that the documented names predate: counters without _total
# (live_ticks, convergence_seconds) and a gauge ending in _count (binding_count).
unexpected=$(grep -v -e 'live_ticks counter metrics should have "_total" suffix' \
        -e 'convergence_seconds counter metrics should have "_total" suffix' \
        -e 'binding_count non-histogram and non-summary metrics should not have "_count" suffix' \
        "$work/promtool.out")
is "$unexpected" "" "promtool check metrics: no problem beyond the documented names' style"
ok "$([ "$code" -eq 0 ] || [ -s "$work/promtool.out" ]; echo $?)" "promtool ran"

hooks=$(curl -s "$url/metrics/hooks")
is "$hooks" '# HELP common_metric common_metric
# TYPE common_metric gauge
common_metric{hook="hooks/metrics.sh",source="source1"} 100
# HELP hook_metric hook_metric
# TYPE hook_metric counter
hook_metric{hook="hooks/metrics.sh",kind="pod"} 1' "/metrics/hooks: what the hook wrote, with its hook label"

is "$(curl -s -o /dev/null -w '%{http_code}' "$url/global/values.json")" 404 "the debug API is not served over TCP"
is "$(stat -c %a "$sock")" 600 "the debug socket is mode 0600"

dbg() { env DEBUG_UNIX_SOCKET="$sock" "$AO_BINARY" "$@"; }
is "$(dbg global values -o json | jq -cS .)" \
        '{"cluster":"test","startedBy":"metrics.sh"}' "global values -o json"
is "$(dbg global values)" 'cluster: test
startedBy: metrics.sh' "global values: YAML by default"
is "$(dbg global patches | jq -c .)" '[{"Operations":[{"op":"add","path":"/global/startedBy","value":"metrics.sh"}]}]' \
        "global patches"
is "$(dbg global config -o json | jq -c .)" '{}' "global config"
is "$(dbg module values web -o json | jq -cS .)" '{"internal":{"ready":true},"replicas":3}' \
        "module values NAME"
is "$(dbg module values web -g -o json | jq -c '.global.cluster')" '"test"' "module values NAME -g adds global"
is "$(dbg module config web -o yaml)" 'replicas: 3' "module config NAME -o yaml"
is "$(dbg module patches web | jq -c .)" '[{"Operations":[{"op":"add","path":"/web/internal","value":{"ready":true}}]}]' \
        "module patches NAME"
is "$(dbg module list)" 'enabledModules:
- web' "module list: YAML"
is "$(dbg module list -o text)" 'MODULE                            ORDER  STATE
web                                  10  enabled' "module list -o text: a table"
is "$(dbg module list -o json)" '{"enabledModules":["web"]}' "module list -o json"
like "$(dbg queue list)" "Summary:
- 'main' queue: (empty|[0-9]+ tasks?)\." "queue list: text"
is "$(dbg queue list -o json | jq -r '.summary | keys | join(",")')" mainQueueTasks,otherQueues,totalTasks \
        "queue list -o json"
out=$(dbg module values nope 2>&1)
is "$?:$out" "1:addon-operator: /module/nope/values: no such module" "an unknown module: exit 1 with the reason"
out=$(env DEBUG_UNIX_SOCKET=$work/none.socket "$AO_BINARY" queue list 2>&1)
like "$?:$out" "^1:addon-operator: cannot reach the operator at '$work/none.socket'" "no operator: exit 1 naming the socket"

# Scrapes keep answering while hooks run every second in their own queue.
wrk -t2 -c4 -d3s "$url/metrics" >"$work/wrk.out" 2>&1
requests=$(sed -n 's/^ *\([0-9][0-9]*\) requests in.*/\1/p' "$work/wrk.out")
ok "$([ "${requests:-0}" -gt 10 ]; echo $?)" "wrk: /metrics answered ${requests:-0} requests in 3 s while hooks ran"
ok "$(grep -q 'Non-2xx\|Socket errors' "$work/wrk.out"; [ $? -ne 0 ]; echo $?)" "wrk: no errors"
busy=$(curl -s "$url/metrics" | grep -c 'addon_operator_module_hook_run_success_total{module="web",hook="hooks/web.sh",binding="busy"')
is "$busy" 1 "the schedule hook ran in its own queue meanwhile"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
ok "$([ ! -e "$sock" ]; echo $?)" "the debug socket is removed at exit"
done_testing
