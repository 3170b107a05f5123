#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# ADDON_OPERATOR_ISOLATE_FAILING_MODULES: a module whose run keeps failing retries in a queue of
# its own, the module of the next order still runs, and /readyz and /status/converge name the one
# that holds convergence back until its run succeeds.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-isolation.XXXXXX)

mkdir -p "$work/modules/001-broken/hooks" "$work/modules/002-good/hooks" "$work/global"
printf 'brokenEnabled: true\ngoodEnabled: true\n' >"$work/modules/values.yaml"
# broken's beforeHelm fails until $work/fixed exists.
cat >"$work/modules/001-broken/hooks/fail.sh" <<SCRIPT
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
[ -e "$work/fixed" ] || { echo "not fixed yet" >&2; exit 1; }
SCRIPT
cat >"$work/modules/002-good/hooks/ok.sh" <<'SCRIPT'
#!/bin/sh
if [ "$1" = --config ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
SCRIPT
chmod +x "$work/modules/"*/hooks/*.sh

op_start GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_ISOLATE_FAILING_MODULES=true \
        ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 DEBUG_UNIX_SOCKET="$work/debug.socket" -- --local start
op_wait_for "module 'broken': its run failed; it retries in queue 'isolated-broken' while the others go on"
ok $? "broken's failed run moves to its own queue"
op_wait_for "module 'good' is up to date"
ok $? "good, of the next order, runs meanwhile"
op_wait_for "first converge done"
ok $? "the converge ends"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
readyz() { curl -s -w ' %{http_code}' "http://127.0.0.1:$port/readyz"; }
# readyz_becomes TEXT: /readyz answers TEXT within 10 s (it changes right after the log line).
readyz_becomes() {
        local i
        for i in $(seq 200); do
                [ "$(readyz)" = "$1" ] && return 0
                read -r -t 0.05 <> <(:) || true
        done
        return 1
}
readyz_becomes "Convergence held back by module(s) 'broken': their runs keep failing
 500"
ok $? "/readyz names the module that holds convergence back"
is "$(curl -s "http://127.0.0.1:$port/status/converge")" "STARTUP_CONVERGE_DONE
CONVERGE_WAIT_TASK
CONVERGE_HELD_BACK: 'broken'" "/status/converge names it (its retry is a waiting task)"
is "$(curl -s "http://127.0.0.1:$port/status/converge?output=json" | jq -c .CONVERGE_HELD_BACK)" '["broken"]' \
        "and its JSON"
like "$(DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" queue list -o json | jq -c '[.active[] | .name]')" \
        '"isolated-broken"' "queue list shows its queue"
touch "$work/fixed"
op_wait_for "module 'broken' is up to date"
ok $? "once fixed, its isolated run succeeds"
readyz_becomes "Startup converge done.
 200"
ok $? "and the operator is ready"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

# ---- with a cluster: the failing module's retries do not hold back another module's events ------------
fk_start
rm -f "$work/fixed"
cat >"$work/modules/002-good/hooks/cms.sh" <<SCRIPT
#!/bin/sh
if [ "\$1" = --config ]; then
        echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ao"]}},"executeHookOnEvent":["Added"],"jqFilter":".metadata.name"}]}'
        exit 0
fi
jq -r '.[] | select(.type == "Event") | .filterResult' "\$BINDING_CONTEXT_PATH" >>"$work/good-events"
SCRIPT
chmod +x "$work/modules/002-good/hooks/cms.sh"
op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" KUBE_SERVER="$api" ADDON_OPERATOR_NAMESPACE=ao \
        GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        ADDON_OPERATOR_ISOLATE_FAILING_MODULES=true ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 -- start
op_wait_for "first converge done"
ok $? "with a cluster: the converge ends while broken keeps failing"
for name in one two three; do
        fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"'$name'","namespace":"ao"}}' >/dev/null
done
three_events() { [ "$(cat "$work/good-events" 2>/dev/null)" = "one
two
three" ]; }
wait_for three_events
ok $? "good's kubernetes hook gets each ConfigMap's event, in order, while broken retries in its own queue"
op_wait_for "not fixed yet"
ok $? "broken is still failing meanwhile"
touch "$work/fixed"
op_wait_for "module 'broken' is up to date"
ok $? "once fixed it converges"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
