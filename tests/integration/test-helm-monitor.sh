#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Release auto-healing: with HELM_MONITOR_INTERVAL=1s the monitor checks each release's status
# and objects; a deleted object or a release that is not deployed brings a module run back,
# while objects the module's own hooks deleted do not; a module in maintenance is left alone. The
# `module resource-monitor` debug command shows what is watched.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-helm-monitor.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm"
mkdir -p "$FAKE_HELM_DIR"/status
sock="$work/debug.socket"

m="$work/modules/001-app"
mkdir -p "$m/templates" "$m/hooks"
printf 'apiVersion: v2\nname: app\nversion: 0.1.0\n' >"$m/Chart.yaml"
cat >"$m/templates/objects.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-main
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-scratch
EOF
# An afterHelm hook that deletes one object of the release on purpose.
cat >"$m/hooks/cleanup.sh" <<'EOF'
#!/bin/sh
if [ "$1" = --config ]; then echo '{"configVersion":"v1","afterHelm":1}'; exit 0; fi
echo '{"operation":"Delete","kind":"ConfigMap","namespace":"ao","name":"app-scratch"}' >"$KUBERNETES_PATCH_PATH"
EOF
chmod +x "$m/hooks/cleanup.sh"
printf 'appEnabled: true\n' >"$work/modules/values.yaml"
# The fake installs nothing: the objects exist because the test made them.
for name in app-main app-scratch; do
        fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"'$name'","namespace":"ao"}}' >/dev/null
done

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" KUBE_SERVER="$api" ADDON_OPERATOR_NAMESPACE=ao \
        MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/none" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        HELM_MONITOR_INTERVAL=1s DEBUG_UNIX_SOCKET="$sock" LOG_NO_TIME=true -- start
op_wait_for "first converge done"
ok $? "the first converge ends"
dump() { env DEBUG_UNIX_SOCKET="$sock" "$AO_BINARY" module resource-monitor -o json; }
checked() { [ "$(dump | jq '.monitors[0].checks // 0')" -ge "$1" ]; }
revisions() { jq '.revisions | length' "$FAKE_HELM_DIR/releases/ao/app.json"; }
revisions_at_least() { [ "$(revisions)" -ge "$1" ]; }

wait_for checked 2
ok $? "the monitor checks the release again and again"
is "$(dump | jq -c '.monitors[0] | del(.checks, .lastCheckSecondsAgo)')" \
        '{"module":"app","objects":["ConfigMap ao/app-main"],"deletedByHooks":["ConfigMap ao/app-scratch"],"lastResult":"1 objects present"}' \
        "module resource-monitor: the release's objects, minus the one its afterHelm hook deleted"
is "$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v1/namespaces/ao/configmaps/app-scratch")" 404 \
        "the hook did delete it"
is "$(revisions)" 1 "and that deletion brought no module run: still revision 1"

curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/app-main" >/dev/null
op_wait_for "module 'app': ConfigMap ao/app-main of its release is missing: running it again"
ok $? "a deleted object of the release is noticed"
op_wait_for "module 'app': upgrading its release: ConfigMap ao/app-main is missing from the cluster"
ok $? "the module run upgrades the release"
# The fake helm creates nothing, so the monitor keeps healing until the object is back.
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"app-main","namespace":"ao"}}' >/dev/null
wait_for revisions_at_least 2
ok $? "a new revision"

printf 'failed\n' >"$FAKE_HELM_DIR/status/app"
op_wait_for "module 'app': its release is failed: running it again"
ok $? "a release that is not deployed is noticed"
op_wait_for "module 'app': upgrading its release: its last revision is failed"
ok $? "and upgraded"
rm -f "$FAKE_HELM_DIR/status/app"
metrics=$(curl -sf "http://127.0.0.1:$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)/metrics")
like "$metrics" 'modules_absent_resources_total\{module="app",resource="ConfigMap ao/app-main"\} [1-9]' \
        "modules_absent_resources_total"
like "$metrics" 'modules_helm_release_redeployed_total\{module="app"\} [1-9]' "modules_helm_release_redeployed_total"
like "$metrics" 'kubernetes_client_request_result_total\{component="helm_monitor",code="[0-9]+",method="GET"' \
        "the monitor's requests go through its own client (component helm_monitor)"

# Maintenance: the release is neither upgraded nor healed, even when the module's values change.
printf 'app:\n  replicas: 2\nappMaintenance: NoResourceReconciliation\n' >"$work/config.yaml"
op_wait_for "module 'app' is in maintenance \(NoResourceReconciliation\): its release is not reconciled"
ok $? "appMaintenance: NoResourceReconciliation: the module runs without its release step"
# Module runs are serial: whatever upgraded before this run has finished by now.
before=$(revisions)
op_wait_for "module 'app' is up to date"
ok $? "and the run completes"
is "$(revisions)" "$before" "no upgrade, though the module's values changed"
is "$(dump | jq -c '.monitors')" '[]' "no auto-healing: its monitor is stopped"
printf 'app:\n  replicas: 2\n' >"$work/config.yaml"
wait_for revisions_at_least $((before + 1))
ok $? "out of maintenance, the next run upgrades the release"
wait_for checked 1
ok $? "and its monitor is back"

# Disabled: the monitor stops.
printf 'appEnabled: false\n' >"$work/config.yaml"
op_wait_for "module 'app' deleted"
ok $? "the module is disabled"
is "$(dump | jq -c '.monitors')" '[]' "its monitor is gone"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
done_testing
