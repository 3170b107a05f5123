#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# End to end against a real kube-apiserver (tests/cluster: Debian's kubernetes 1.20 source, Debian's
# etcd) with the real helm 3.17.2 and kubectl: kubernetes bindings on ConfigMaps, Namespaces, Pods
# and a CRD with exact binding contexts; the ConfigMap config store edited with kubectl, config
# patches written back; object patches visible with kubectl; helm install (the objects labelled by the
# operator's post-renderer), de-duplication,
# auto-healing after `kubectl delete`, uninstall on disable; an apiserver killed and restarted and
# an etcd compaction (410 Gone) without a lost event. The operator runs as the service account
# user with the RBAC below. AO_SKIP_REAL_CLUSTER=1 skips it (no npm registry, no deb-src).
set -uo pipefail
. "$(dirname "$0")/tap.sh"

if [ -n "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_CLUSTER is set"
        exit 0
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/test-real-cluster.XXXXXX)
cleanup() {
        [ -n "${OP_PID:-}" ] && kill -TERM "$OP_PID" 2>/dev/null
        bash "$here/tests/cluster/cluster.sh" stop "$work/c" >/dev/null 2>&1
        rm -rf "$work"
}
trap cleanup EXIT

HELM=$(bash "$here/tests/helpers/get-helm.sh") && KUBECTL=$(bash "$here/tests/cluster/get-kubectl.sh")
ok $? "the real helm and kubectl are there"
# Without the watch cache, watches are served by etcd and no bookmark moves a watch's
# resourceVersion: after the compaction below, 410 Gone is certain, not a matter of timing.
AO_APISERVER_FLAGS=--watch-cache=false bash "$here/tests/cluster/cluster.sh" start "$work/c" >"$work/cluster-start.log" 2>&1
ok $? "etcd and kube-apiserver start" || tail -20 "$work/cluster-start.log" | sed 's/^/# /'
. "$work/c/env"
mkdir -p "$work/home" "$work/logs"
k() { HOME="$work/home" "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }
h() { HOME="$work/home" "$HELM" --kubeconfig "$KUBECONFIG_ADMIN" --namespace ao "$@"; }

# The operator's service account may do what the operator does (deploy/ will ship the same).
k apply -f "$here/tests/cluster/operator-rbac.yaml" >/dev/null
k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
k wait --for=condition=Established crd/widgets.example.com --timeout=30s >/dev/null
ok $? "RBAC and a CRD are in place"
k -n ao create configmap seed --from-literal=k=v >/dev/null
k -n ao label configmap seed e2e=yes >/dev/null
k create -f - >/dev/null <<'EOF'
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: ao}
spec: {size: 1}
EOF

# ---- hooks and a module ----------------------------------------------------------------------------
hook() { # hook PATH CONFIG [BODY]: record each binding context array in logs/<name>.log, then run BODY
        mkdir -p "$(dirname "$work/$1")"
        cat >"$work/$1" <<EOF
#!/bin/bash
if [ "\$1" = --config ]; then echo '$2'; exit 0; fi
cat "\$BINDING_CONTEXT_PATH" >>"$work/logs/\$(basename "\$0").log"
${3:-}
EOF
        chmod +x "$work/$1"
}
hook global/hooks/watch.sh '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ao"]}},"labelSelector":{"matchLabels":{"e2e":"yes"}},"jqFilter":".data","keepFullObjectsInMemory":false},{"name":"widgets","apiVersion":"example.com/v1","kind":"Widget","namespace":{"nameSelector":{"matchNames":["ao"]}},"jqFilter":".spec","keepFullObjectsInMemory":false},{"name":"nss","kind":"Namespace","nameSelector":{"matchNames":["e2e-ns"]},"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}'
# Pods: each new one gets a ConfigMap made by the object patcher.
hook global/hooks/pods.sh '{"configVersion":"v1","kubernetes":[{"name":"pods","kind":"Pod","namespace":{"nameSelector":{"matchNames":["ao"]}},"executeHookOnEvent":["Added"],"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}' \
        'jq -c ".[] | select(.type == \"Event\") | {operation: \"CreateOrUpdate\", object: {apiVersion: \"v1\", kind: \"ConfigMap\", metadata: {name: (\"pod-seen-\" + .filterResult), namespace: \"ao\"}}}" "$BINDING_CONTEXT_PATH" >"$KUBERNETES_PATCH_PATH"'
# A config patch from a hook is written back to the ConfigMap.
hook global/hooks/startup.sh '{"configVersion":"v1","onStartup":1}' \
        'echo "[{\"op\":\"add\",\"path\":\"/global/fromHook\",\"value\":\"yes\"}]" >"$CONFIG_VALUES_JSON_PATCH_PATH"'
m="$work/modules/010-web"
mkdir -p "$m/templates"
printf 'apiVersion: v2\nname: web\nversion: 0.0.1\n' >"$m/Chart.yaml"
printf 'web:\n  greeting: hello\n' >"$m/values.yaml"
cat >"$m/templates/objects.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: {{ .Values.web.greeting | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports: [{port: 80}]
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: web, image: nginx}]}
EOF
# Every helm process the operator starts, one line each (a restart with nothing changed starts none).
printf '#!/bin/sh\necho "$*" >>"%s/helm-calls"\nexec "%s" "$@"\n' "$work" "$HELM" >"$work/helm-counting"
chmod +x "$work/helm-counting"
helm_calls() { grep -cv '^version' "$work/helm-calls" 2>/dev/null; }
# A module hook bound to an object of its own release.
hook modules/010-web/hooks/own.sh '{"configVersion":"v1","kubernetes":[{"name":"own","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ao"]}},"nameSelector":{"matchNames":["web-config"]},"jqFilter":".data.greeting","keepFullObjectsInMemory":false}]}'
k -n ao create configmap addon-operator --from-literal=global='{}' --from-literal=webEnabled=true \
        --from-literal=web='greeting: hi' >/dev/null

# ---- start ------------------------------------------------------------------------------------------------
operator_env=(KUBE_CONFIG="$KUBECONFIG_OPERATOR" ADDON_OPERATOR_NAMESPACE=ao HELM_BIN_PATH="$work/helm-counting"
        HOME="$work/home" MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp"
        ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.05 LOG_NO_TIME=true
        ADDON_OPERATOR_CRD_EXTRA_LABELS=team=e2e)
op_start "${operator_env[@]}" -- start
op_wait_for "first converge done"
ok $? "the operator converges against the real API server" || printf '%s' "$OP_LOG" | tail -20 | sed 's/^/# /'

contexts() { # contexts FILE: one context per line
        [ -f "$1" ] || return 0
        python3 -c 'import json,sys
for l in open(sys.argv[1]):
    for c in json.loads(l): print(json.dumps(c, separators=(",", ":"), sort_keys=True))' "$1"
}
has_line() { grep -qxF -- "$2" <<<"$(contexts "$1")"; }
wait_context() { wait_for has_line "$work/logs/$1" "$2"; } # wait_context HOOK CONTEXT: until it was given
wait_for() { local i; for i in $(seq 600); do "$@" && return 0; read -r -t 0.05 <> <(:) || true; done; return 1; }

wait_context watch.sh.log '{"binding":"cms","objects":[{"filterResult":{"k":"v"}}],"type":"Synchronization"}'
ok $? "Synchronization: the labelled ConfigMap, filtered"
wait_context watch.sh.log '{"binding":"widgets","objects":[{"filterResult":{"size":1}}],"type":"Synchronization"}'
ok $? "Synchronization: the custom resource"
wait_context watch.sh.log '{"binding":"nss","objects":[],"type":"Synchronization"}'
ok $? "Synchronization: no namespace yet"

# ---- events -----------------------------------------------------------------------------------------------
k -n ao create configmap e2e-a --from-literal=a=1 >/dev/null && k -n ao label configmap e2e-a e2e=yes >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"a":"1"},"type":"Event","watchEvent":"Added"}'
ok $? "kubectl create + label: Added (the label selector goes to the server)"
k -n ao patch configmap e2e-a -p '{"data":{"a":"2"}}' >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"a":"2"},"type":"Event","watchEvent":"Modified"}'
ok $? "kubectl patch: Modified with the new filter result"
k -n ao delete configmap e2e-a >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"a":"2"},"type":"Event","watchEvent":"Deleted"}'
ok $? "kubectl delete: Deleted"
k create namespace e2e-ns >/dev/null
wait_context watch.sh.log '{"binding":"nss","filterResult":"e2e-ns","type":"Event","watchEvent":"Added"}'
ok $? "a Namespace by name"
k -n ao patch widget w1 --type merge -p '{"spec":{"size":2}}' >/dev/null
wait_context watch.sh.log '{"binding":"widgets","filterResult":{"size":2},"type":"Event","watchEvent":"Modified"}'
ok $? "a custom resource changed"

# ---- object patches, config patches ---------------------------------------------------------------------
k -n ao run p1 --image=example.invalid/none --restart=Never >/dev/null
cm_exists() { k -n ao get configmap "$1" >/dev/null 2>&1; }
wait_for cm_exists pod-seen-p1
ok $? "a Pod event: the hook's CreateOrUpdate is visible with kubectl"
global_key() { k -n ao get configmap addon-operator -o jsonpath='{.data.global}'; }
has_from_hook() { grep -q 'fromHook: "yes"' <<<"$(global_key)"; }
wait_for has_from_hook
ok $? "the onStartup hook's config patch is written back to the ConfigMap"

# ---- helm ----------------------------------------------------------------------------------------------
release_status() { h history web --max 1 -o json 2>/dev/null | jq -r '.[-1] | "\(.revision) \(.status)"'; }
# Helm records a revision as deployed only after it applied the objects, which the test sees first.
release_is() { [ "$(release_status)" = "$1" ]; }
is "$(release_status)" "1 deployed" "helm installed the module's release"
is "$(k -n ao get configmap web-config -o jsonpath='{.data.greeting}')" "hi" \
        "its objects carry the values from the ConfigMap config"
is "$(h get values web -o json | jq -r '._addonOperatorModuleChecksum | length')" 32 "the checksum is recorded"
is "$(k -n ao get configmap web-config -o json | jq -cS .metadata.labels)" \
        '{"app.kubernetes.io/managed-by":"Helm","heritage":"addon-operator","team":"e2e"}' \
        "helm ran the operator's post-renderer (in helm's sandbox): heritage and the extra labels on its objects"
is "$(k -n ao get deployment web -o json | jq -cS '[.metadata.labels.heritage, .spec.selector, .spec.template.metadata.labels]')" \
        '["addon-operator",{"matchLabels":{"app":"web"}},{"app":"web"}]' "the Deployment too; its selector and pod labels as the chart says"
calls=$(helm_calls)
kill -HUP "$OP_PID"
op_wait_for "module 'web': release unchanged \(same input as its last revision\), upgrade skipped"
ok $? "a reload with the same values: no render, no upgrade"
op_wait_for "converge done"
is "$(helm_calls)" "$calls" "a reload with nothing changed starts no helm process"
is "$(release_status)" "1 deployed" "still revision 1"
is "$(k -n ao get secret sh.helm.release.v1.web.v1 -o json | jq -r '.metadata.labels | "\(.moduleChecksum | length) \(.moduleInputChecksum | length)"')" "32 32" \
        "the release's storage Secret carries moduleChecksum and moduleInputChecksum"

wait_context own.sh.log '{"binding":"own","objects":[],"type":"Synchronization"}'
ok $? "module binding: Synchronization before the release exists"
wait_context own.sh.log '{"binding":"own","filterResult":"hi","type":"Event","watchEvent":"Added"}'
ok $? "module binding: helm's ConfigMap arrives as an event"
k -n ao patch configmap addon-operator -p '{"data":{"web":"greeting: bonjour"}}' >/dev/null
greeting_is() { [ "$(k -n ao get configmap web-config -o jsonpath='{.data.greeting}' 2>/dev/null)" = "$1" ]; }
wait_for greeting_is bonjour
ok $? "kubectl edits the module's section: the module runs and helm upgrades"
wait_context own.sh.log '{"binding":"own","filterResult":"bonjour","type":"Event","watchEvent":"Modified"}'
ok $? "module binding: the upgrade is a Modified event"
wait_for release_is "2 deployed"
is "$(release_status)" "2 deployed" "revision 2"

k -n ao delete configmap web-config >/dev/null
op_wait_for "module 'web': ConfigMap ao/web-config is missing: running it again"
ok $? "auto-healing notices the deleted object from its metadata watch"
wait_for cm_exists web-config
ok $? "and the module run brings it back"
wait_for release_is "3 deployed"
is "$(release_status)" "3 deployed" "with revision 3"
k -n ao delete deployment web >/dev/null
op_wait_for "module 'web': Deployment ao/web is missing: running it again"
ok $? "a deleted Deployment is noticed"
deployment_exists() { k -n ao get deployment web >/dev/null 2>&1; }
wait_for deployment_exists
ok $? "and restored"
wait_for release_is "4 deployed"
is "$(release_status)" "4 deployed" "with revision 4"

# ---- the API server restarted, etcd compacted ----------------------------------------------------------------
bash "$here/tests/cluster/cluster.sh" restart-apiserver "$work/c" >>"$work/cluster-start.log" 2>&1
ok $? "kube-apiserver killed and started again"
k -n ao create configmap e2e-b --from-literal=b=1 >/dev/null && k -n ao label configmap e2e-b e2e=yes >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"b":"1"},"type":"Event","watchEvent":"Added"}'
ok $? "after the restart, events flow again"
k -n ao delete configmap e2e-b >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"b":"1"},"type":"Event","watchEvent":"Deleted"}'
ok $? "and the deletion too"

# Writes no informer sees move etcd's revision on (two: a watch from N starts at N+1); compacted,
# the revision after the one the watches last saw is gone. Then the operator's connections are cut
# (ss -K): its informers resume their watches from resourceVersions the server no longer has. (A
# restart would not do: right after one, RBAC answers 403 for a moment and the informers list
# afresh, as client-go's do, before any watch is resumed.)
k -n default create secret generic rv-bump --from-literal=x=1 >/dev/null
k -n default delete secret rv-bump >/dev/null
bash "$here/tests/cluster/cluster.sh" compact "$work/c" >/dev/null 2>&1
ok $? "etcd compacted"
ss -K dst 127.0.0.1 dport = ":$APISERVER_PORT" >/dev/null 2>&1
op_wait_for "informer .*configmaps.*: resourceVersion [0-9]+ is too old \\(410\\), listing again"
gone=$?
ok $gone "the cut watches resume, get 410 Gone from the real server, and the informers list again"
[ $gone -eq 0 ] || grep -a -i "informer" <<<"$OP_LOG" | tail -12 | sed "s/^/# /"
k -n ao create configmap e2e-c --from-literal=c=1 >/dev/null && k -n ao label configmap e2e-c e2e=yes >/dev/null
wait_context watch.sh.log '{"binding":"cms","filterResult":{"c":"1"},"type":"Event","watchEvent":"Added"}'
ok $? "after the compaction, no event is lost"

# ---- a restart with nothing changed ------------------------------------------------------------------------
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops"
: >"$work/helm-calls"
op_start "${operator_env[@]}" -- start
op_wait_for "first converge done"
ok $? "it starts again and converges"
like "$OP_LOG" "module 'web': release unchanged \(same input as its last revision\), upgrade skipped" \
        "the release is recognised from its storage labels"
is "$(helm_calls)" 0 "a restart with nothing changed starts no helm process (only 'helm version')"
is "$(release_status)" "4 deployed" "still revision 4"

# ---- disable -----------------------------------------------------------------------------------------------
k -n ao patch configmap addon-operator -p '{"data":{"webEnabled":"false"}}' >/dev/null
op_wait_for "release 'web' uninstalled"
ok $? "the module disabled in the ConfigMap: helm uninstall"
is "$(h list -a -o json | jq -r 'map(.name) | join(",")')" "" "no release is left"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
done_testing
