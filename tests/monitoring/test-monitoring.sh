#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The observability pack against the real thing: alert rules checked and unit-tested with
# promtool, the dashboard well-formed, every metric the dashboard and the rules use exported by a
# running operator (local mode, the bundled examples), converge status, progress and the
# redrawing queue view.
set -uo pipefail
. "$(dirname "$0")/../integration/tap.sh"

src=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/test-monitoring.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT

out=$(promtool check rules "$src/deploy/monitoring/alerts.yaml" 2>&1)
ok $? "promtool check rules"
like "$out" "SUCCESS: 9 rules found" "nine alert rules"
out=$(cd "$src/tests/monitoring" && promtool test rules alerts-test.yaml 2>&1)
ok $? "promtool test rules: every alert's unit test passes"
tested=$(grep -o 'alertname: [A-Za-z]*' "$src/tests/monitoring/alerts-test.yaml" | sort -u | cut -d' ' -f2)
defined=$(grep -o 'alert: [A-Za-z]*' "$src/deploy/monitoring/alerts.yaml" | sort -u | cut -d' ' -f2)
is "$tested" "$defined" "every alert has a test"
for a in $defined; do
        anchor=$(printf '%s' "$a" | tr 'A-Z' 'a-z')
        ok "$(grep -q "^### $a\$" "$src/docs/MONITORING.md"; echo $?)" "runbook section for $a"
        ok "$(grep -q "runbook: \"docs/MONITORING.md#$anchor\"\\|runbook: docs/MONITORING.md#$anchor" "$src/deploy/monitoring/alerts.yaml"; echo $?)" \
                "$a links its runbook"
done

dash=$src/deploy/monitoring/dashboard.json
ok "$(jq -e . "$dash" >/dev/null; echo $?)" "dashboard.json is JSON"
is "$(jq -r '[.templating.list[].name] | join(",")' "$dash")" "datasource,prefix,module,hook" \
        "dashboard variables: data source, metric prefix, module, hook"
is "$(jq '[.panels[] | select(.type != "row") | .targets[] | select(.datasource.uid != "${datasource}")] | length' "$dash")" 0 \
        "every query uses the data source variable"

# ---- a running operator exports every metric the pack uses ----------------------------------
cp "$src/examples/config.yaml" "$work/config.yaml"
op_start MODULES_DIR="$src/examples/modules" GLOBAL_HOOKS_DIR="$src/examples/global-hooks" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 DEBUG_UNIX_SOCKET="$work/debug.socket" \
        ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"http: listening on'
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on 127.0.0.1:\([0-9]*\).*/\1/p' | tail -1)
url=http://127.0.0.1:$port
op_wait_for '"msg":"first converge done'
ok $? "the examples converge"
like "$OP_LOG" '"msg":"converge: [0-9]+/[0-9]+ tasks"' "start-up progress is logged"

curl -s "$url/metrics" >"$work/metrics.txt"
# Exported sample names: every TYPE line, with the histogram series names.
exported=$(awk '$1 == "#" && $2 == "TYPE" { print $3; if ($4 == "histogram") { print $3 "_bucket"; print $3 "_sum"; print $3 "_count" } }' \
        "$work/metrics.txt" | sort -u)
used=$( (jq -r '.panels[].targets[]?.expr' "$dash" | sed 's/\${prefix}/addon_operator_/g'; cat "$src/deploy/monitoring/alerts.yaml") |
        grep -o 'addon_operator_[a-z_]*[a-z]' | sort -u)
missing=$(comm -23 <(printf '%s\n' "$used") <(printf '%s\n' "$exported"))
is "$missing" "" "every metric the dashboard and the alerts use is exported"
ok "$([ "$(printf '%s\n' "$used" | wc -l)" -ge 25 ]; echo $?)" "the pack uses $(printf '%s\n' "$used" | wc -l) metric names"

is "$(curl -s "$url/status/converge")" "STARTUP_CONVERGE_DONE" "/status/converge: text"
is "$(curl -s "$url/status/converge?output=json" | jq -cS .)" \
        '{"CONVERGE_IN_PROGRESS":0,"CONVERGE_WAIT_TASK":false,"STARTUP_CONVERGE_DONE":true,"STARTUP_CONVERGE_IN_PROGRESS":0,"STARTUP_CONVERGE_NOT_STARTED":false}' \
        "/status/converge?output=json: the Go operator's keys"

timeout 3 env DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" queue list -w --interval 0.2 >"$work/watch.out" 2>&1
is "$?" 124 "queue list -w runs until stopped"
redraws=$(grep -c "Every 0.2s: addon-operator queue list" "$work/watch.out")
ok "$([ "$redraws" -ge 2 ]; echo $?)" "queue list -w redraws ($redraws times in 3 s)"
ok "$(grep -q $'\e\[H\e\[2J' "$work/watch.out"; echo $?)" "queue list -w clears the screen like watch"
like "$(cat "$work/watch.out")" "Summary:
- 'main' queue: " "queue list -w shows the queues"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
