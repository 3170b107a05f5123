#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Two operators in HA mode against the real control plane (tests/cluster), with no helm binary:
# the Lease on the real kube-apiserver elects one, which starts without helm (one warning), runs
# its global hook (a kubernetes binding on a real ConfigMap) and a module without a chart, whose
# crds/ goes to the real API server and into global.discovery.apiVersions, and converges; the follower's /readyz asks the leader's and answers as the Go operator's does; the
# leader stopped with SIGTERM releases the Lease and the follower takes over and converges.
# test-kube-ha.sh covers every /readyz case on the fake API server, test-helm-missing.sh helm's.
# AO_SKIP_REAL_CLUSTER=1 skips it.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/ha.sh"

if [ -n "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_CLUSTER is set"
        exit 0
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/test-ha-real.XXXXXX)
pids=()
cleanup() {
        local p
        for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null; done
        wait
        bash "$here/tests/cluster/cluster.sh" stop "$work/c" >/dev/null 2>&1
        rm -rf "$work"
}
trap cleanup EXIT

KUBECTL=$(bash "$here/tests/cluster/get-kubectl.sh")
ok $? "kubectl is there"
bash "$here/tests/cluster/cluster.sh" start "$work/c" >"$work/cluster-start.log" 2>&1
ok $? "etcd, kube-apiserver and kube-controller-manager start" || tail -20 "$work/cluster-start.log" | sed 's/^/# /'
. "$work/c/env"
mkdir -p "$work/home"
k() { HOME="$work/home" "$KUBECTL" --kubeconfig "$KUBECONFIG_ADMIN" "$@"; }

k apply -f "$here/tests/cluster/operator-rbac.yaml" >/dev/null
ok $? "the operator's RBAC is in place"
k -n ao create configmap seed --from-literal=k=v >/dev/null && k -n ao label configmap seed ha=yes >/dev/null
ok $? "a labelled ConfigMap exists"

# A global hook: its Synchronization lands in sync-POD; a module without a chart: its run in module-POD.
mkdir -p "$work/global/hooks" "$work/modules/010-plain/hooks"
cat >"$work/global/hooks/watch.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
        echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["ao"]}},"labelSelector":{"matchLabels":{"ha":"yes"}},"jqFilter":".data"}]}'
        exit 0
fi
jq -c '.[] | select(.type == "Synchronization") | [.binding, [.objects[].filterResult]]' "\$BINDING_CONTEXT_PATH" >>"$work/sync-\$ADDON_OPERATOR_POD"
EOF
cat >"$work/modules/010-plain/hooks/run.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; fi
echo ran >>"$work/module-\$ADDON_OPERATOR_POD"
EOF
cat >"$work/global/hooks/after.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","afterAll":1}'; exit 0; fi
jq -c '.global.discovery.apiVersions' "\$VALUES_PATH" >>"$work/api-versions-\$ADDON_OPERATOR_POD"
EOF
chmod +x "$work/global/hooks/watch.sh" "$work/global/hooks/after.sh" "$work/modules/010-plain/hooks/run.sh"
mkdir -p "$work/modules/010-plain/crds"
cat >"$work/modules/010-plain/crds/gadgets.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets, singular: gadget, listKind: GadgetList}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
EOF
printf 'plainEnabled: true\n' >"$work/modules/values.yaml"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() { # start POD: an operator in the background, its output in POD.log, its pid in pid_POD
        : >"$work/$1.log"
        env -i PATH="$PATH" HOME="$work/home" ADDON_OPERATOR_POD="$1" KUBE_CONFIG="$KUBECONFIG_OPERATOR" \
                ADDON_OPERATOR_HA=true ADDON_OPERATOR_NAMESPACE=ao HELM_BIN_PATH="$work/no-such-helm" \
                ADDON_OPERATOR_LISTEN_ADDRESS="$(address_of "$1")" ADDON_OPERATOR_LISTEN_PORT="$port" \
                DEBUG_UNIX_SOCKET= GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" \
                ADDON_OPERATOR_TMP_DIR="$work/tmp-$1" ADDON_OPERATOR_STATE_DIR="$work/state-$1" \
                ADDON_OPERATOR_RETRY_DELAY_SCALE=0.1 LOG_NO_TIME=true \
                "$AO_BINARY" start >>"$work/$1.log" 2>&1 &
        eval "pid_$1=$!"
        pids+=("$!")
}
readyz_is() { [ "$(readyz "$1")" = "$2" ]; }
holder() { k -n ao get lease addon-operator-leader-election -o jsonpath='{.spec.holderIdentity}' 2>/dev/null; }
holder_is() { [ "$(holder)" = "$1" ]; }
wait_for() { local i; for i in $(seq 600); do "$@" && return 0; read -r -t 0.05 <> <(:) || true; done; return 1; }
show_logs() { local p; for p in a b; do echo "# --- $p"; tail -15 "$work/$p.log" | sed 's/^/# /'; done; }

start a
wait_for holder_is a.127-0-0-1.ao.pod
ok $? "a holds the real Lease, as <pod>.<address>.<namespace>.pod" || show_logs
wait_for readyz_is a '200 Startup converge done.\n'
ok $? "a converges without helm: /readyz 200" || show_logs
is "$(grep -c 'helm cannot be used' "$work/a.log")" 1 "a warns once that helm cannot be used"
is "$(cat "$work/sync-a")" '["cms",[{"k":"v"}]]' "a's global hook got the real ConfigMap in its Synchronization"
is "$(cat "$work/module-a")" ran "a ran the module without a chart"
is "$(k get crd gadgets.example.com -o json | jq -c '[.metadata.labels.heritage, [.spec.versions[].name]]')" \
        '["addon-operator",["v1","v1beta1"]]' "the module's crds/ is in the real API server, labelled"
is "$(tail -1 "$work/api-versions-a")" '["example.com/v1/Gadget","example.com/v1beta1/Gadget"]' \
        "the afterAll hook sees global.discovery.apiVersions: the kinds of that CRD"

start b
wait_for readyz_is b '200 HA mode is enabled and waiting for acquiring the lock.\n'
ok $? "b follows: its /readyz asks a's and answers 200" || show_logs
is "$(holder)" a.127-0-0-1.ao.pod "a still holds the Lease"
[ ! -e "$work/sync-b" ] && [ ! -e "$work/module-b" ]
ok $? "b runs no hook while it follows"

kill -TERM "$pid_a"
wait "$pid_a"
is "$?" 0 "a stops cleanly on SIGTERM"
wait_for holder_is b.127-0-0-2.ao.pod
ok $? "b takes the released Lease" || show_logs
wait_for readyz_is b '200 Startup converge done.\n'
ok $? "b converges as the leader" || show_logs
is "$(cat "$work/sync-b")" '["cms",[{"k":"v"}]]' "b's global hook got the ConfigMap"
is "$(grep -c 'helm cannot be used' "$work/b.log")" 1 "b warned once too"

kill -TERM "$pid_b"
wait "$pid_b"
is "$?" 0 "b stops cleanly"
! grep -q 'ERROR: AddressSanitizer\|runtime error:' "$work/a.log" "$work/b.log"
ok $? "no sanitizer findings" || grep -h -A5 'ERROR: AddressSanitizer\|runtime error:' "$work/a.log" "$work/b.log" | sed 's/^/# /'
done_testing
