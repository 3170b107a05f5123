#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# What the operator adds to global values with a cluster: nothing under global.discovery. The
# Go operator's file-system module loader (the one a drop-in replaces) never injects
# /global/discovery/apiVersions; only Deckhouse's loader does, with the group/version/Kind of the
# CRDs its modules' crds/ installed. Here a module's crds/ is applied, then a global afterAll hook,
# the debug socket and the values file helm gets show the global values exactly.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-global-discovery.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api"
mkdir -p "$FAKE_HELM_DIR" "$work/global/hooks" "$work/modules/010-things/crds" \
        "$work/modules/010-things/templates"
printf 'global:\n  clusterName: test\nthingsEnabled: true\n' >"$work/modules/values.yaml"
printf 'apiVersion: v2\nname: things\nversion: 0.1.0\n' >"$work/modules/010-things/Chart.yaml"
cat >"$work/modules/010-things/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: things
data:
  cluster: "{{ .Values.global.clusterName }}"
EOF
# Two versions of one kind: the Go operator's Deckhouse loader would list example.com/v1/Thing and
# example.com/v1beta1/Thing.
cat >"$work/modules/010-things/crds/things.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {kind: Thing, plural: things, singular: thing, listKind: ThingList}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
  - {name: v1beta1, served: true, storage: false, schema: {openAPIV3Schema: {type: object}}}
EOF
cat >"$work/global/hooks/after.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then echo '{"configVersion":"v1","afterAll":1}'; exit 0; fi
jq -cS . "\$VALUES_PATH" >>"$work/after-all-values"
SCRIPT
chmod +x "$work/global/hooks/after.sh"

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
        ADDON_OPERATOR_NAMESPACE=ao GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
        DEBUG_UNIX_SOCKET="$work/debug.socket" -- start
op_wait_for "first converge done"
ok $? "the operator converges"
is "$(fk GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/things.example.com | jq -c '[.spec.versions[].name]')" \
        '["v1","v1beta1"]' "the module's CRD is in the cluster"
is "$(cat "$work/after-all-values")" '{"global":{"clusterName":"test"}}' \
        "the afterAll hook sees the global values without a discovery key"
is "$(DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" global values -o json | jq -cS .)" \
        '{"global":{"clusterName":"test"}}' "global values: the same"
is "$(jq -sj '[.[] | select(.argv[0]=="upgrade" and .argv[1]=="things")] | last | .values[0]' "$FAKE_HELM_DIR/calls.jsonl")" \
        "$(printf 'global:\n  clusterName: test\nthings: {}')" "helm gets the same global section"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
