#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# smoke.sh: TAP checks that the real control plane of cluster.sh is what the integration tests
# expect: a v1.20 kube-apiserver over etcd, token authentication and RBAC, kubectl 1.32 against
# it, CRDs in discovery, watches, 410 Gone after an etcd compaction, and an apiserver restart
# that keeps the data. Needs root the first time (apt-get, and the kube-apiserver build: see
# README.md). AO_APISERVER, AO_APISERVER_CACHE and AO_KUBECTL may point at prepared binaries.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=../integration/tap.sh
. "$here/../integration/tap.sh"
if [ -n "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_CLUSTER is set"
        exit 0
fi

cluster=$here/cluster.sh
work=$(mktemp -d "${TMPDIR:-/tmp}/ao-cluster-smoke.XXXXXX")
wpid=
cleanup() {
        [ -n "$wpid" ] && kill "$wpid" 2>/dev/null
        "$cluster" stop "$work" 2>/dev/null
        rm -rf "$work"
}
trap cleanup EXIT

t_all=$SECONDS
bail() {
        echo "Bail out! $*"
        exit 1
}

# The binaries first, so the start time below is the cluster's own.
t=$SECONDS
if [ -z "${AO_APISERVER:-}" ]; then
        AO_APISERVER=$("$here/get-apiserver.sh" ${AO_APISERVER_CACHE:+"$AO_APISERVER_CACHE"}) ||
                bail "get-apiserver.sh failed"
        export AO_APISERVER
fi
kubectl=${AO_KUBECTL:-}
if [ -z "$kubectl" ]; then
        kubectl=$("$here/get-kubectl.sh") || bail "get-kubectl.sh failed"
fi
echo "# binaries ready in $((SECONDS - t)) s: $AO_APISERVER, $kubectl"

t=$SECONDS
"$cluster" start "$work" 2>"$work/start.err" || {
        sed 's/^/# /' "$work/start.err"
        bail "cluster.sh start failed"
}
echo "# cluster started in $((SECONDS - t)) s"
# shellcheck disable=SC1091
. "$work/env"

k() {
        "$kubectl" --kubeconfig "$KUBECONFIG_ADMIN" --cache-dir "$work/kube-cache" "$@"
}
# api [CURL ARGS...] PATH: an admin request; the body goes to stdout.
api() {
        local path=${*: -1}
        curl -s --max-time 10 --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" "${@:1:$#-1}" "$API$path"
}
gone() { # gone PID: no such process, or only a zombie left (the init process reaps it later)
        local state
        state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 0
        [ "$state" = Z ] || [ "$state" = X ]
}
jget() { # jget PYTHON-EXPR: evaluate on the JSON document j read from stdin
        python3 -c "import json, sys; j = json.load(sys.stdin); print($1)"
}

# show_cluster_logs: the end of cluster.sh's errors and the daemons' logs, as TAP comments, so a
# failed cluster step says why in the test log.
show_cluster_logs() {
        local f
        for f in cluster.err etcd.log apiserver.log; do
                echo "# --- $f"
                tail -n 15 "$work/$f" | cut -c1-300 | sed 's/^/# /'
        done
}

# 1. The server is the v1.20 we built, and the env file says where it is.
like "$(api /version | jget 'j["gitVersion"]')" '^v1\.20\.' "/version says v1.20.x"
like "$API" '^https://127\.0\.0\.1:[0-9]+$' "env: API is https://127.0.0.1:PORT"
is "$(api /api/v1/namespaces/ao | jget 'j["status"]["phase"]')" Active "namespace ao exists"

# 2. Token authentication and RBAC: the operator's token is known but has no rights yet.
out=$(curl -s --max-time 10 --cacert "$CA" -H "Authorization: Bearer $OPERATOR_TOKEN" \
        -w '\n%{http_code}' "$API/api/v1/namespaces/ao/configmaps")
like "$out" 'system:serviceaccount:ao:addon-operator' "operator token authenticates as the service account"
is "$(tail -n 1 <<<"$out")" 403 "operator has no rights before RBAC is applied"
is "$(curl -s -o /dev/null -w '%{http_code}' --max-time 10 --cacert "$CA" -H "Authorization: Bearer nope" \
        "$API/api")" 401 "an unknown token is refused"

# 3. kubectl 1.32 against apiserver 1.20: create, get, apply, delete.
out=$(k -n ao create configmap smoke --from-literal=a=b 2>&1)
ok $? "kubectl create configmap ($out)"
is "$(k -n ao get configmap smoke -o 'jsonpath={.data.a}' 2>&1)" b "kubectl get configmap"
apply_cm() { # apply_cm VALUE
        k apply -f - 2>&1 <<EOF
apiVersion: v1
kind: ConfigMap
metadata: {name: applied, namespace: ao}
data: {v: "$1"}
EOF
}
out=$(apply_cm 1)
ok $? "kubectl apply creates ($out)"
out=$(apply_cm 2)
ok $? "kubectl apply updates ($out)"
is "$(k -n ao get configmap applied -o 'jsonpath={.data.v}' 2>&1)" 2 "applied value is there"
out=$(k -n ao delete configmap applied --wait=false 2>&1)
ok $? "kubectl delete configmap ($out)"
out=$(k -n ao get configmap applied 2>&1)
like "$out" 'NotFound|not found' "deleted configmap is gone"

# RBAC for the operator, applied with kubectl as the tests will do it.
out=$(k apply -f - 2>&1 <<'EOF'
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: addon-operator, namespace: ao}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: addon-operator, namespace: ao}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: addon-operator}
subjects:
- {kind: ServiceAccount, name: addon-operator, namespace: ao}
EOF
)
ok $? "kubectl apply Role and RoleBinding ($(tr '\n' ' ' <<<"$out"))"
out=$("$kubectl" --kubeconfig "$KUBECONFIG_OPERATOR" --cache-dir "$work/kube-cache-op" -n ao get configmap smoke \
        -o 'jsonpath={.data.a}' 2>&1)
is "$out" b "operator kubeconfig reads configmaps once RBAC allows it"

# 4. A CRD: established, then in discovery, then usable.
out=$(k apply -f - 2>&1 <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.smoke.example.com}
spec:
  group: smoke.example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
EOF
)
ok $? "kubectl apply CRD ($out)"
out=$(k wait --for condition=established --timeout=30s crd/widgets.smoke.example.com 2>&1)
ok $? "CRD becomes Established ($out)"
found=1
deadline=$((SECONDS + 30))
while [ "$SECONDS" -lt "$deadline" ]; do
        if api /apis/smoke.example.com/v1 | grep -Eq '"name": ?"widgets"'; then
                found=0
                break
        fi
        sleep 0.2
done
ok $found "CRD resource widgets appears in discovery (/apis/smoke.example.com/v1)"
like "$(api /apis | jget '" ".join(g["name"] for g in j["groups"])')" 'smoke\.example\.com' "group listed in /apis"
out=$(printf '%s\n' 'apiVersion: smoke.example.com/v1' 'kind: Widget' 'metadata: {name: w1, namespace: ao}' \
        'spec: {size: 3}' | k apply -f - 2>&1)
ok $? "kubectl apply a Widget ($out)"
is "$(k -n ao get widgets w1 -o 'jsonpath={.spec.size}' 2>&1)" 3 "kubectl get widgets (discovery of the CRD)"

# 5. A watch from a list's resourceVersion sees the ADDED event of an object created after it.
rv=$(api /api/v1/namespaces/ao/configmaps | jget 'j["metadata"]["resourceVersion"]')
curl -sN --max-time 30 --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" \
        "$API/api/v1/namespaces/ao/configmaps?watch=1&resourceVersion=$rv" >"$work/watch.out" 2>&1 &
wpid=$!
k -n ao create configmap watched --from-literal=x=1 >/dev/null 2>&1
found=1
deadline=$((SECONDS + 15))
while [ "$SECONDS" -lt "$deadline" ]; do
        if grep -q '"type":"ADDED".*"name":"watched"' "$work/watch.out"; then
                found=0
                break
        fi
        sleep 0.1
done
ok $found "watch sees ADDED for a new configmap"
kill "$wpid" 2>/dev/null
wait "$wpid" 2>/dev/null
wpid=

# 6. Compaction: a watch from resourceVersion=1 then gets 410 Gone. Events have no watch cache in
# the 1.20 apiserver, so their watches go to etcd itself: it replays them before the compaction and
# refuses with 410 after it. (Cached resources, such as configmaps, answer from the watch cache,
# whose window began at the apiserver's first list: see the check after the restart below.)
watch_rv1() { # watch_rv1 PATH: the first line of a 2 s watch from resourceVersion=1, and its HTTP status
        curl -sN --max-time 5 --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" -w '\nHTTP %{http_code}\n' \
                "$API$1?watch=1&resourceVersion=1&timeoutSeconds=2" 2>/dev/null | sed -n '1p;$p' | tr '\n' ' '
}
# Give the events watch something to replay.
api -X POST -H 'Content-Type: application/json' -d '{"apiVersion":"v1","kind":"Event",
  "metadata":{"name":"smoke.1","namespace":"ao"},"involvedObject":{"kind":"ConfigMap","namespace":"ao","name":"smoke"},
  "reason":"Smoke","message":"smoke test","type":"Normal"}' /api/v1/namespaces/ao/events >/dev/null
out=$(watch_rv1 /api/v1/namespaces/ao/events)
like "$out" '^\{"type":"ADDED".*"name":"smoke\.1".* HTTP 200 $' "before compaction, an events watch from resourceVersion=1 replays"
rev=$("$cluster" compact "$work" 2>>"$work/cluster.err")
ok $? "cluster.sh compact"
like "$rev" '^[0-9]+$' "compact prints the revision ($rev)"
out=$(watch_rv1 /api/v1/namespaces/ao/events)
like "$out" '"type":"ERROR".*"code":410|HTTP 410' "after compaction, an events watch from resourceVersion=1 gets 410"

# 7. restart-apiserver: SIGKILL and start again on the same port; the data stays.
old_pid=$APISERVER_PID
t=$SECONDS
"$cluster" restart-apiserver "$work" 2>>"$work/cluster.err"
restarted=$?
ok $restarted "cluster.sh restart-apiserver"
[ $restarted -eq 0 ] || show_cluster_logs
echo "# apiserver restarted in $((SECONDS - t)) s"
# shellcheck disable=SC1091
. "$work/env"
ok "$([ "$APISERVER_PID" != "$old_pid" ] && gone "$old_pid"; echo $?)" \
        "env has the new pid, the old process is gone"
is "$(api /readyz)" ok "/readyz after the restart"
is "$(k -n ao get configmap smoke -o 'jsonpath={.data.a}' 2>&1)" b "configmap survives the restart"
is "$(k -n ao get widgets w1 -o 'jsonpath={.spec.size}' 2>&1)" 3 "custom resource survives the restart"
out=$(watch_rv1 /api/v1/namespaces/ao/configmaps)
like "$out" '"type":"ERROR".*"code":410|HTTP 410' "after the restart, a configmaps watch from resourceVersion=1 gets 410"
out=$(k -n ao delete configmap smoke 2>&1)
ok $? "kubectl delete configmap after the restart ($out)"

# 8. The controller manager: a foreground delete completes (the garbage collector removes the
# dependent, then the owner's foregroundDeletion finalizer), and so does a namespace's deletion.
k create namespace smoke-gc >/dev/null
k -n smoke-gc create configmap owner >/dev/null
uid=$(k -n smoke-gc get configmap owner -o 'jsonpath={.metadata.uid}')
k apply -f - >/dev/null <<EOF
apiVersion: v1
kind: ConfigMap
metadata:
  name: dependent
  namespace: smoke-gc
  ownerReferences: [{apiVersion: v1, kind: ConfigMap, name: owner, uid: "$uid", blockOwnerDeletion: true}]
EOF
out=$(k -n smoke-gc delete configmap owner --cascade=foreground --wait=true --timeout=30s 2>&1)
ok $? "a foreground delete completes ($out)"
is "$(k -n smoke-gc get configmaps -o name 2>&1)" "" "the garbage collector deleted the dependent first"
out=$(k delete namespace smoke-gc --wait=true --timeout=60s 2>&1)
ok $? "a namespace deletion completes ($out)"

# 9. The faults the chaos suite injects: a second API server on the same etcd sees the same
# objects; a paused API server answers nothing until resumed; an outage and an etcd restart keep
# the data.
k -n ao create configmap smoke2 --from-literal=a=c >/dev/null
"$cluster" start-apiserver2 "$work" 2>>"$work/cluster.err"
ok $? "cluster.sh start-apiserver2"
# shellcheck disable=SC1091
. "$work/env"
is "$(curl -s --max-time 10 --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" "$API2/api/v1/namespaces/ao/configmaps/smoke2" |
        jget 'j["data"]["a"]')" c "the second API server serves the same objects"
"$cluster" pause-apiserver "$work" 2>>"$work/cluster.err"
is "$(curl -s --max-time 1 -o /dev/null -w '%{http_code}' --cacert "$CA" "$API/readyz")" 000 \
        "a paused API server does not answer"
"$cluster" resume-apiserver "$work" 2>>"$work/cluster.err"
is "$(api /readyz)" ok "resumed, it answers again"
"$cluster" stop-apiserver "$work" 2>>"$work/cluster.err" && "$cluster" restart-etcd "$work" 2>>"$work/cluster.err" &&
        "$cluster" start-apiserver "$work" 2>>"$work/cluster.err"
restarted=$?
ok $restarted "stop-apiserver, restart-etcd, start-apiserver"
[ $restarted -eq 0 ] || show_cluster_logs
# shellcheck disable=SC1091
. "$work/env"
is "$(k -n ao get configmap smoke2 -o 'jsonpath={.data.a}' 2>&1)" c "the data outlives the outage and the etcd restart"

# 10. stop: every process ends, the etcd data is removed, the logs stay.
"$cluster" stop "$work" 2>>"$work/cluster.err"
ok $? "cluster.sh stop"
ok "$(gone "$APISERVER_PID" && gone "$ETCD_PID" && gone "$CONTROLLER_MANAGER_PID" && gone "$APISERVER2_PID"; echo $?)" \
        "both API servers, etcd and the controller manager are gone"
ok "$([ ! -e "$work/etcd-data" ] && [ -s "$work/apiserver.log" ] && [ -s "$work/etcd.log" ]; echo $?)" \
        "etcd data removed, logs kept"

echo "# smoke test took $((SECONDS - t_all)) s"
done_testing
