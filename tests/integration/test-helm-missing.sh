#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A cluster but no usable helm: the operator starts, says so once, runs the global hooks (onStartup
# and a kubernetes binding), a module without a chart and its deletion, and fails only the release
# step of the module with a chart, naming HELM_BIN_PATH; the purge of an orphaned release waits for
# helm instead of failing. Helm put in place later is found by the next retry, without a restart.
# The same with a helm 2 binary (and a version that cannot be read): the version is asked again at
# each retry, and helm 3 in its place heals the module.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-helm-missing.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api"
mkdir -p "$FAKE_HELM_DIR" "$work/bin" "$work/marks"

m="$work/modules"
mkdir -p "$work/global" "$m/001-plain/hooks" "$m/002-web/templates"
printf 'plainEnabled: true\nwebEnabled: true\n' >"$m/values.yaml"
cat >"$work/global/hooks.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
        echo '{"configVersion":"v1","onStartup":1,"kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ao"]}},"jqFilter":".metadata.name"}]}'
        exit 0
fi
jq -r '.[] | .binding + (if .type then " " + .type else "" end)' "\$BINDING_CONTEXT_PATH" >>"$work/marks/global"
EOF
cat >"$m/001-plain/hooks/before.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
echo beforeHelm >>"$work/marks/plain"
EOF
chmod +x "$work/global/hooks.sh" "$m/001-plain/hooks/before.sh"
printf 'apiVersion: v2\nname: web\nversion: 0.1.0\n' >"$m/002-web/Chart.yaml"
printf 'web:\n  greeting: hi\n' >"$m/002-web/values.yaml"
cat >"$m/002-web/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-cm
data:
  greeting: "{{ .Values.web.greeting }}"
EOF
: >"$work/config.yaml"
# A release whose module is gone: the purge needs helm uninstall.
"$FAKE_HELM" upgrade orphan "$m/002-web" --install -n ao >/dev/null
rm "$FAKE_HELM_DIR/calls.jsonl"

metrics() { curl -sf "http://127.0.0.1:$port/metrics"; }
readyz() { curl -s -w ' %{http_code}' "http://127.0.0.1:$port/readyz"; }
readyz_becomes() { # readyz_becomes TEXT: /readyz answers TEXT within 10 s
        local i
        for i in $(seq 200); do
                [ "$(readyz)" = "$1" ] && return 0
                read -r -t 0.05 <> <(:) || true
        done
        return 1
}
helm_calls() { [ -f "$FAKE_HELM_DIR/calls.jsonl" ] && jq -r '.argv[0]' "$FAKE_HELM_DIR/calls.jsonl" | tr '\n' ' '; }
start_op() {
        op_start HELM_BIN_PATH="$work/bin/helm" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
                ADDON_OPERATOR_NAMESPACE=ao ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 MODULES_DIR="$m" \
                GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.02 LOG_NO_TIME=true DEBUG_UNIX_SOCKET="$work/debug.socket" "$@" \
                -- start
}

# ---- no helm binary at all -------------------------------------------------------------------------
missing="helm binary '$work/bin/helm' \\(HELM_BIN_PATH\\) not found" # a regex
start_op ADDON_OPERATOR_ISOLATE_FAILING_MODULES=true
op_wait_for "helm cannot be used"
ok $? "the operator starts without helm"
like "$OP_LOG" "level=warn msg=\"helm cannot be used: $missing\\. Hooks and modules without a chart run as usual; the release step of a module with a chart fails until helm 3 is there \(it looks again each time\)\"" \
        "a warning says so once, naming HELM_BIN_PATH and what it means"
op_wait_for "first converge done"
ok $? "the first converge ends (web retries in its own queue)"
like "$OP_LOG" "module 'web': its chart needs helm: $missing" "web's release step fails, naming the path tried"
like "$OP_LOG" "module 'web': its run failed; it retries in queue 'isolated-web'" "and is retried"
like "$OP_LOG" "module 'plain' is up to date" "plain, without a chart, runs"
like "$OP_LOG" "release 'orphan' is not purged: $missing; the next reload of all modules tries again" \
        "the purge of the orphaned release waits for helm"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
is "$(sort -u "$work/marks/global" | tr '\n' ',')" "cms Synchronization,onStartup," \
        "the global hooks ran: onStartup and the kubernetes binding's Synchronization"
is "$(cat "$work/marks/plain")" "beforeHelm" "plain's hook ran"
op_wait_for "module 'web': its chart needs helm: $missing"
ok $? "web's run is retried, and fails the same way"
is "$(grep -c "helm cannot be used" <<<"$OP_LOG")" 1 "the warning came once"
like "$(metrics)" 'addon_operator_module_run_errors_total\{module="web"\} ([2-9]|[1-9][0-9]+)$' "module_run_errors_total counts web's failures"
unlike "$(metrics)" 'addon_operator_module_run_errors_total\{module="plain"\}' "and none of plain's"
readyz_becomes "Convergence held back by module(s) 'web': their runs keep failing
 500"
ok $? "/readyz names web"
out=$(DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" module render web 2>&1)
like "$?:$out" "^1:addon-operator: /module/web/render: helm cannot be used: $missing$" \
        "module render without helm: exit 1, with the reason"
is "$(helm_calls)" "" "no helm process ran"
printf 'plainEnabled: false\n' >"$work/config.yaml"
op_wait_for "module 'plain' deleted"
ok $? "plain is disabled and deleted: the release state says it has no release, no helm needed"

# helm appears: the next retry finds it.
ln -s "$FAKE_HELM" "$work/bin/helm"
op_wait_for "helm 3\.17\.2 at '$work/bin/helm'"
ok $? "the next retry finds helm 3.17.2, without a restart"
op_wait_for "module 'web' is up to date"
ok $? "and web's release step succeeds"
is "$(fk GET /api/v1/namespaces/ao/configmaps/web-cm | jq -r .data.greeting)" "hi" "its ConfigMap is in the cluster"
readyz_becomes "Startup converge done.
 200"
ok $? "/readyz: ready"
is "$(helm_calls)" "version template upgrade " "helm ran: version, then web's template and upgrade"
kill -HUP "$OP_PID"
op_wait_for "release 'orphan' uninstalled"
ok $? "the next reload of all modules purges the orphaned release"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
[ "$OP_CODE" = 0 ] || printf '%s' "$OP_LOG" | tail -150 | sed 's/^/# /'

# ---- helm 2, then a version that cannot be read -------------------------------------------------------
# A helm whose `version` prints what $work/version holds; everything else goes to the fake.
cat >"$work/bin/helm-v" <<EOF
#!/bin/sh
if [ "\$1" = version ]; then echo version >>"$work/version-calls"; cat "$work/version"; exit 0; fi
exec "$FAKE_HELM" "\$@"
EOF
chmod +x "$work/bin/helm-v"
printf 'Client: v2.17.0+ga690bad\n' >"$work/version"
printf 'web:\n  greeting: hello\n' >"$work/config.yaml"
start_op HELM_BIN_PATH="$work/bin/helm-v"
helm2="helm 2\.17\.0 at '$work/bin/helm-v' \(HELM_BIN_PATH\) is not supported: helm 3 is required"
op_wait_for "helm cannot be used: $helm2\. Hooks"
ok $? "helm 2: the operator starts and warns"
op_wait_for "module 'web': its chart needs helm: $helm2"
ok $? "web's release step fails with the version found"
op_wait_for "module 'web': its chart needs helm: $helm2"
ok $? "and again at the retry"
like "$(wc -l <"$work/version-calls")" '^([3-9]|[1-9][0-9]+)$' "the version was asked at start and at each run"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
readyz_becomes "Startup converge in progress
 500"
ok $? "/readyz: not ready, the first converge waits for web"
printf 'garbage\n' >"$work/version"
op_wait_for "module 'web': its chart needs helm: helm at '$work/bin/helm-v' \(HELM_BIN_PATH\): cannot read its version: "
ok $? "a version that cannot be read fails it too, naming the binary"
printf 'v3.17.2+gabcdef0\n' >"$work/version"
op_wait_for "helm 3\.17\.2 at '$work/bin/helm-v'"
ok $? "helm 3 in its place is taken at the next retry"
op_wait_for "module 'web' is up to date"
ok $? "and web runs: its release is upgraded with the new values"
is "$(fk GET /api/v1/namespaces/ao/configmaps/web-cm | jq -r .data.greeting)" "hello" "the new values are in the cluster"
op_wait_for "first converge done"
ok $? "the first converge ends"
readyz_becomes "Startup converge done.
 200"
ok $? "/readyz: ready"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
[ "$OP_CODE" = 0 ] || printf '%s' "$OP_LOG" | tail -150 | sed 's/^/# /'
done_testing
