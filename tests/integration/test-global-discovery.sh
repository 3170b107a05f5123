#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Modules' crds/ and /global/discovery/apiVersions against the fake API server. The CRDs of newly
# enabled modules go to the cluster before any module runs (labelled, the doc-/_ files skipped, a
# module without a chart too); then the global values get the sorted group/version/Kind of every
# version of every CRD applied, as the Go operator's ModuleEnsureCRDs step sets them. Checked
# exactly as a global afterAll hook, `global values`, `global patches` and helm see them; a module
# enabled later adds its kinds, one disabled keeps them. A global values schema that refuses
# `discovery` gets one warning and unchanged values, and the operator goes on; without a cluster
# nothing is added.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-global-discovery.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api"
m="$work/modules"
mkdir -p "$FAKE_HELM_DIR" "$m/010-things/crds" "$m/010-things/templates" "$m/020-gadgets/crds" "$m/030-widgets/crds"
printf 'global:\n  clusterName: test\nthingsEnabled: true\ngadgetsEnabled: true\nwidgetsEnabled: false\n' >"$m/values.yaml"
printf 'apiVersion: v2\nname: things\nversion: 0.1.0\n' >"$m/010-things/Chart.yaml"
cat >"$m/010-things/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: things
data:
  cluster: "{{ .Values.global.clusterName }}"
EOF
crd() { # crd GROUP KIND PLURAL VERSION...: a CustomResourceDefinition with these versions
        local group=$1 kind=$2 plural=$3 v storage=true
        shift 3
        printf 'apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n'
        printf 'metadata:\n  name: %s.%s\n  labels: {team: infra}\n' "$plural" "$group"
        printf 'spec:\n  group: %s\n  names: {kind: %s, plural: %s}\n  scope: Namespaced\n  versions:\n' \
                "$group" "$kind" "$plural"
        for v in "$@"; do
                printf '  - {name: %s, served: true, storage: %s, schema: {openAPIV3Schema: {type: object}}}\n' \
                        "$v" "$storage"
                storage=false
        done
}
# things: two versions of one kind, and two files the default filter (doc-, _) skips.
crd example.com Thing things v1 v1beta1 >"$m/010-things/crds/things.yaml"
crd example.com Note notes v1 >"$m/010-things/crds/doc-notes.yaml"
crd example.com Draft drafts v1 >"$m/010-things/crds/_drafts.yaml"
# gadgets: no chart, a CRD of another group (sorted first); widgets: enabled later.
crd apps.example.org Gadget gadgets v1alpha1 >"$m/020-gadgets/crds/gadgets.yaml"
crd example.com Widget widgets v2 >"$m/030-widgets/crds/widgets.yaml"

after_all_hook() { # after_all_hook DIR [PATCH]: an afterAll hook logging the global values to DIR/seen
        mkdir -p "$1/hooks"
        cat >"$1/hooks/after.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then echo '{"configVersion":"v1","afterAll":1}'; exit 0; fi
jq -cS .global "\$VALUES_PATH" >>"$1/seen"
${2:+echo '$2' >"\$VALUES_JSON_PATCH_PATH"}
SCRIPT
        chmod +x "$1/hooks/after.sh"
}
after_all_hook "$work/global"
config() { # config YAML: replace the config file as an editor would
        printf '%s\n' "$1" >"$work/config.yaml.new" && mv "$work/config.yaml.new" "$work/config.yaml"
}
config '{}'
debug() { DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" "$@"; }
helm_values() { # the values file of the last upgrade of release things
        jq -sj '[.[] | select(.argv[0]=="upgrade" and .argv[1]=="things")] | last | .values[0]' "$FAKE_HELM_DIR/calls.jsonl"
}
crd_get() { fk GET "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1"; }
crd_status() { curl -s -o /dev/null -w '%{http_code}' "$api/apis/apiextensions.k8s.io/v1/customresourcedefinitions/$1"; }
start() { # start GLOBAL_HOOKS_DIR [ENV...]
        local global=$1
        shift
        op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
                ADDON_OPERATOR_NAMESPACE=ao GLOBAL_HOOKS_DIR="$global" MODULES_DIR="$m" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
                ADDON_OPERATOR_STATE_DIR="$work/state" DEBUG_UNIX_SOCKET="$work/debug.socket" \
                ADDON_OPERATOR_CRD_EXTRA_LABELS=owner=ao,tier=core LOG_NO_TIME=true "$@" -- start
}

# ---- the first converge ---------------------------------------------------------------------------------
start "$work/global"
op_wait_for "first converge done"
ok $? "the operator converges"

is "$(crd_get things.example.com | jq -c '[.spec.versions[].name]')" '["v1","v1beta1"]' \
        "things' CRD is in the cluster, both versions"
is "$(crd_get things.example.com | jq -cS .metadata.labels)" '{"heritage":"addon-operator","owner":"ao","team":"infra","tier":"core"}' \
        "labelled heritage=addon-operator and ADDON_OPERATOR_CRD_EXTRA_LABELS, its own labels kept"
is "$(crd_status notes.example.com) $(crd_status drafts.example.com)" "404 404" \
        "crds/doc-notes.yaml and crds/_drafts.yaml are skipped (prefixes doc- and _)"
is "$(crd_get gadgets.apps.example.org | jq -r .spec.group)" "apps.example.org" \
        "gadgets has no chart: its CRD is applied all the same"
is "$(crd_status widgets.example.com)" 404 "widgets is disabled: its CRD is not"
like "$OP_LOG" "module 'things': crds/ applied \(1 CRDs\)" "the step is logged per module"
# The CRD step is over before the first module run starts its release step.
first_upgrade=$(grep -n "module 'things': upgrading its release" <<<"$OP_LOG" | head -1 | cut -d: -f1)
published=$(grep -n "global values: /global/discovery/apiVersions lists the 3 kinds of the modules' CRDs" <<<"$OP_LOG" | cut -d: -f1)
ok "$([ -n "$published" ] && [ -n "$first_upgrade" ] && [ "$published" -lt "$first_upgrade" ] && echo 0 || echo 1)" \
        "the list is set once the CRDs of every module are applied, before the first release"

kinds='["apps.example.org/v1alpha1/Gadget","example.com/v1/Thing","example.com/v1beta1/Thing"]'
global='{"clusterName":"test","discovery":{"apiVersions":'"$kinds"'}}'
is "$(cat "$work/global/seen")" "$global" "the afterAll hook sees discovery.apiVersions: every version of every CRD, sorted"
is "$(debug global values -o json | jq -cS .)" "$global" "global values: the same"
is "$(debug global patches -o json | jq -c .)" \
        '[{"Operations":[{"op":"add","path":"/global/discovery","value":{}},{"op":"add","path":"/global/discovery/apiVersions","value":'"$kinds"'}]}]' \
        "global patches: a values patch of the global section (discovery made first: there was none)"
is "$(helm_values)" "$(printf 'global:\n  clusterName: test\n  discovery:\n    apiVersions:\n    - apps.example.org/v1alpha1/Gadget\n    - example.com/v1/Thing\n    - example.com/v1beta1/Thing\nthings: {}')" \
        "helm gets the same global section in the first converge"

# ---- a module enabled later adds its kinds; disabled, it keeps them -------------------------------------
config 'widgetsEnabled: true'
op_wait_for "module 'widgets': crds/ applied \(1 CRDs\)"
ok $? "widgets enabled: its CRDs are applied"
op_wait_for '"converge done'
kinds4='["apps.example.org/v1alpha1/Gadget","example.com/v1/Thing","example.com/v1beta1/Thing","example.com/v2/Widget"]'
global4='{"clusterName":"test","discovery":{"apiVersions":'"$kinds4"'}}'
is "$(tail -1 "$work/global/seen")" "$global4" "the afterAll hook sees the list with widgets' kind"
is "$(debug global patches -o json | jq -c .)" \
        '[{"Operations":[{"op":"add","path":"/global/discovery","value":{}},{"op":"add","path":"/global/discovery/apiVersions","value":'"$kinds4"'}]}]' \
        "the new list replaces the stored one"
is "$(helm_values | sed -n '/apiVersions/,$p')" "$(printf '    apiVersions:\n    - apps.example.org/v1alpha1/Gadget\n    - example.com/v1/Thing\n    - example.com/v1beta1/Thing\n    - example.com/v2/Widget\nthings: {}')" \
        "and things' release gets it"

lines=$(wc -l <"$work/global/seen")
config 'widgetsEnabled: false'
op_wait_for "module 'widgets' deleted"
ok $? "widgets disabled and deleted"
op_wait_for '"converge done'
is "$(crd_status widgets.example.com)" 200 "its CRD stays in the cluster"
is "$(tail -n +"$((lines + 1))" "$work/global/seen")" "$global4" "and its kind stays in the list"
is "$(grep -c "lists the 4 kinds" <<<"$OP_LOG")" 1 "no CRD step ran for that converge: the list was set once"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

# ---- a global values schema without discovery ---------------------------------------------------------
# Its keys listed, so additionalProperties is false: the patch would be refused. The afterAll hook
# patches the global values afterwards, which must still work.
mkdir -p "$work/strict/openapi"
printf 'type: object\nproperties:\n  clusterName: {type: string}\n' >"$work/strict/openapi/values.yaml"
after_all_hook "$work/strict" '[{"op":"add","path":"/global/clusterName","value":"strict"}]'
start "$work/strict"
op_wait_for "first converge done"
ok $? "the operator converges"
warning="global values: /global/discovery/apiVersions is not set: the global values schema '$work/strict/openapi/values.yaml' refuses it: values patch makes the values invalid: global: 'discovery' is not allowed (additionalProperties) (declare discovery.apiVersions, a list of strings, to get it)"
is "$(grep -cF "$warning" <<<"$OP_LOG")" 1 "one warning naming the schema file and what it refuses"
is "$(debug global values -o json | jq -cS .)" '{"clusterName":"strict"}' \
        "global values: no discovery; the afterAll hook's own patch applied"
is "$(debug global patches -o json | jq -c .)" '[{"Operations":[{"op":"add","path":"/global/clusterName","value":"strict"}]}]' \
        "global patches: the hook's only"
is "$(helm_values)" "$(printf 'global:\n  clusterName: strict\nthings: {}')" "helm gets the global values without discovery"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

# The same schema, declaring discovery.apiVersions as VALUES.md shows: the list is set.
printf 'type: object\nproperties:\n  clusterName: {type: string}\n  discovery:\n    type: object\n    properties:\n      apiVersions: {type: array, items: {type: string}}\n' \
        >"$work/strict/openapi/values.yaml"
start "$work/strict"
op_wait_for "first converge done"
ok $? "the operator converges"
is "$(debug global values -o json | jq -cS .)" '{"clusterName":"strict","discovery":{"apiVersions":'"$kinds"'}}' \
        "a schema that declares discovery.apiVersions: the list is set; after the restart it lists the enabled modules' CRDs only"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

# ---- without a cluster ------------------------------------------------------------------------------------
rm -f "$work/global/seen"
op_start GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$m" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/local" \
        DEBUG_UNIX_SOCKET="$work/debug.socket" LOG_NO_TIME=true -- start
op_wait_for "first converge done"
ok $? "the operator converges in local mode"
is "$(cat "$work/global/seen")" '{"clusterName":"test"}' "no CRD step, no discovery key"
is "$(debug global values -o json | jq -cS .)" '{"clusterName":"test"}' "global values: the same"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
