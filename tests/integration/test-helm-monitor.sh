#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Release auto-healing by watch. fake-helm writes the release's objects and helm's storage Secrets
# to the fake API server (FAKE_HELM_KUBE), as helm does. The operator watches the objects
# metadata-only and the storage by label: a deleted ConfigMap or Deployment, an object taken by
# another release, or a release no longer "deployed" brings a module run back at once, while
# objects the module's own hooks deleted do not; no object is ever fetched one by one; a module
# in maintenance is left alone. `module resource-monitor` shows what is watched.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-helm-monitor.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api"
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
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: app-web
spec:
  replicas: 0
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: web
        image: nginx
EOF
# An afterHelm hook that deletes one object of the release on purpose.
cat >"$m/hooks/cleanup.sh" <<'EOF'
#!/bin/sh
if [ "$1" = --config ]; then echo '{"configVersion":"v1","afterHelm":1}'; exit 0; fi
echo '{"operation":"Delete","kind":"ConfigMap","namespace":"ao","name":"app-scratch"}' >"$KUBERNETES_PATCH_PATH"
EOF
chmod +x "$m/hooks/cleanup.sh"
printf 'appEnabled: true\n' >"$work/modules/values.yaml"

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
        ADDON_OPERATOR_NAMESPACE=ao MODULES_DIR="$m/.." GLOBAL_HOOKS_DIR="$work/none" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        DEBUG_UNIX_SOCKET="$sock" LOG_NO_TIME=true -- start
op_wait_for "first converge done"
ok $? "the first converge ends"
# The monitors' detail: what `module resource-monitor -o text` shows, as JSON.
dump() { curl -sf --unix-socket "$sock" 'http://x/module/resource-monitor.json?detail=true'; }
revisions() { jq '.revisions | length' "$FAKE_HELM_DIR/releases/ao/app.json"; }
revisions_at_least() { [ "$(revisions)" -ge "$1" ]; }
exists() { [ "$(curl -s -o /dev/null -w '%{http_code}' "$api$1")" = 200 ]; }
heals() { dump | jq '.monitors[0].heals'; }
monitor_idle() { [ "$(dump | jq -r '.monitors[0].lastResult // ""')" = "2 objects present" ]; }

wait_for monitor_idle
ok $? "after the run the monitor looks at the objects: all there"
is "$(dump | jq -c '.monitors[0] | del(.checks, .lastCheckSecondsAgo, .lastResult)')" \
        '{"module":"app","objects":["ConfigMap ao/app-main","Deployment ao/app-web"],"missing":[],"watches":["v1/configmaps ao","apps/v1/deployments ao"],"deletedByHooks":["ConfigMap ao/app-scratch"],"heals":0}' \
        "module resource-monitor: the release's objects minus the one its afterHelm hook deleted, one watch per resource"
is "$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v1/namespaces/ao/configmaps/app-scratch")" 404 \
        "the hook did delete it"
is "$(revisions)" 1 "and that deletion brought no module run: still revision 1"
watches=$(fk GET /fake/requests | jq -c '[.requests[] | select(.watch and (.agent | startswith("addon-operator/")) and (.path | test("/(configmaps|deployments|secrets)$"))) | {path, labelSelector: .query.labelSelector, accept: (.accept // "" | test("as=PartialObjectMetadata;"))}] | unique | sort_by(.path)')
is "$watches" '[{"path":"/api/v1/namespaces/ao/configmaps","labelSelector":null,"accept":true},{"path":"/api/v1/namespaces/ao/secrets","labelSelector":"owner=helm","accept":true},{"path":"/apis/apps/v1/namespaces/ao/deployments","labelSelector":null,"accept":true}]' \
        "metadata-only watches: the release's resources in its namespace, and helm's storage by label"

# ---- a deleted ConfigMap, then a deleted Deployment, come back by the watch ----------------------
fk DELETE /fake/requests >/dev/null
curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/app-main" >/dev/null
op_wait_for "module 'app': ConfigMap ao/app-main is missing: running it again"
ok $? "a deleted object of the release is noticed from its watch"
op_wait_for "module 'app': upgrading its release: ConfigMap ao/app-main is missing"
ok $? "the module run upgrades the release"
wait_for exists /api/v1/namespaces/ao/configmaps/app-main
ok $? "the ConfigMap is back"
is "$(revisions)" 2 "revision 2"
curl -sf -X DELETE "$api/apis/apps/v1/namespaces/ao/deployments/app-web" >/dev/null
op_wait_for "module 'app': Deployment ao/app-web is missing: running it again"
ok $? "a deleted Deployment is noticed"
wait_for exists /apis/apps/v1/namespaces/ao/deployments/app-web
ok $? "and restored"
wait_for revisions_at_least 3
ok $? "revision 3"
gets=$(fk GET /fake/requests | jq -r '[.requests[] | select(.method == "GET" and (.agent | startswith("addon-operator/")) and (.path | test("/(configmaps/app-main|deployments/app-web)$")))] | length')
is "$gets" 0 "no release object was fetched one by one by the operator (fake-helm's own requests aside)"

# ---- an object another release takes over ---------------------------------------------------------
wait_for monitor_idle
curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' \
        -d '{"metadata":{"annotations":{"meta.helm.sh/release-name":"other"}}}' \
        "$api/api/v1/namespaces/ao/configmaps/app-main" >/dev/null
op_wait_for "module 'app': ConfigMap ao/app-main belongs to release 'other' now: running it again"
ok $? "an object whose meta.helm.sh/release-name names another release is noticed"
owner() { curl -sf "$api/api/v1/namespaces/ao/configmaps/app-main" | jq -r '.metadata.annotations["meta.helm.sh/release-name"]'; }
owned_again() { [ "$(owner)" = app ]; }
wait_for owned_again
ok $? "the upgrade takes it back (--take-ownership)"

# ---- the release itself is no longer deployed ------------------------------------------------------
wait_for monitor_idle
before=$(revisions)
printf 'failed\n' >"$FAKE_HELM_DIR/status/app"
"$FAKE_HELM" history app -n ao >/dev/null # fake-helm writes the status into the storage Secret
rm -f "$FAKE_HELM_DIR/status/app"
op_wait_for "module 'app': its release is failed: running it again"
ok $? "a release whose storage says it is not deployed is noticed from the storage watch"
op_wait_for "module 'app': upgrading its release: its last revision is failed"
ok $? "and upgraded"
wait_for revisions_at_least $((before + 1))
ok $? "a new revision"

metrics=$(curl -sf "http://127.0.0.1:$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)/metrics")
like "$metrics" 'modules_absent_resources_total\{module="app",resource="ConfigMap ao/app-main"\} [1-9]' \
        "modules_absent_resources_total names the object"
like "$metrics" 'modules_absent_resources_total\{module="app",resource="Deployment ao/app-web"\} [1-9]' \
        "modules_absent_resources_total for the Deployment"
like "$metrics" 'modules_helm_release_redeployed_total\{module="app"\} [1-9]' "modules_helm_release_redeployed_total"
like "$metrics" 'kubernetes_client_request_result_total\{component="helm_monitor",code="200",method="GET"' \
        "the watches' lists go through the monitor's own client (component helm_monitor)"

# ---- maintenance: neither upgraded nor healed --------------------------------------------------------
wait_for monitor_idle
printf 'app:\n  replicas: 2\nappMaintenance: NoResourceReconciliation\n' >"$work/config.yaml"
op_wait_for "module 'app' is in maintenance \(NoResourceReconciliation\): its release is not reconciled"
ok $? "appMaintenance: NoResourceReconciliation: the module runs without its release step"
before=$(revisions)
op_wait_for "module 'app' is up to date"
ok $? "and the run completes"
is "$(revisions)" "$before" "no upgrade, though the module's values changed"
is "$(dump | jq -c '.monitors')" '[]' "no auto-healing: its monitor is stopped"
curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/app-main" >/dev/null
printf 'app:\n  replicas: 3\nappMaintenance: NoResourceReconciliation\n' >"$work/config.yaml"
op_wait_for "module 'app' is up to date"
ok $? "another run in maintenance"
is "$(curl -s -o /dev/null -w '%{http_code}' "$api/api/v1/namespaces/ao/configmaps/app-main")" 404 \
        "an object deleted in maintenance stays deleted"
printf 'app:\n  replicas: 2\n' >"$work/config.yaml"
wait_for exists /api/v1/namespaces/ao/configmaps/app-main
ok $? "out of maintenance, the next run upgrades the release and the object is back"
wait_for monitor_idle
ok $? "and its monitor is back"

# ---- disabled: the monitor and its watches stop ------------------------------------------------------
printf 'appEnabled: false\n' >"$work/config.yaml"
op_wait_for "module 'app' deleted"
ok $? "the module is disabled"
is "$(dump | jq -c '.monitors')" '[]' "its monitor is gone"
object_watches() { fk GET /fake/watches | jq '[.watches[] | select(.path | test("/(configmaps|deployments)$"))] | length'; }
no_object_watches() { [ "$(object_watches)" = 0 ]; }
wait_for no_object_watches
ok $? "and so are the watches of its objects"

# ---- a kind the operator may not list: the release step does not wait for ever ----------------------
fk POST /fake/faults '{"method":"GET","path":"/namespaces/ao/deployments$","watch":false,"agent":"^addon-operator/","action":"status","status":403,"count":-1}' >/dev/null
printf 'appEnabled: true\n' >"$work/config.yaml"
op_wait_for "module 'app' is up to date"
ok $? "enabled again: installed (no release, nothing to check)"
kill -HUP "$OP_PID" # a reload with nothing changed checks the objects
op_wait_for "module 'app': cannot check the release's objects: the watch of apps/v1/deployments ao did not list within 15 s \(does RBAC allow list and watch\?\)"
ok $? "a watch that cannot list: after 15 s the release step says which and why"
op_wait_for "module 'app': upgrading its release: its objects could not be checked"
ok $? "and upgrades, as when the objects cannot be looked up"
op_wait_for "module 'app' is up to date"
ok $? "the module run completes"
fk DELETE /fake/faults >/dev/null
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
done_testing
