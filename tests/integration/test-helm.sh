#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The release step with a cluster: the operator runs helm (tests/fakehelm/fake-helm, which records
# every call) against the fake API server. Exact command lines, the values file, CRDs from crds/,
# the generated chart of a module without Chart.yaml, de-duplication by checksum and by missing
# objects, pending and failed releases, purge with HELM_IGNORE_RELEASE, delete on disable,
# failures and retries, version detection, metrics.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-helm.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm"
mkdir -p "$FAKE_HELM_DIR"/{fail,hang,status} "$work/tmp"

calls() { # calls [FILTER]: the recorded command lines (JSON arrays), optionally those matching FILTER
        [ -f "$FAKE_HELM_DIR/calls.jsonl" ] || return 0
        jq -c '.argv' "$FAKE_HELM_DIR/calls.jsonl" | grep -F -- "${1:-}"
}
n_calls() { calls "$1" | wc -l; }
has_calls() { [ "$(n_calls "$1")" -ge "$2" ]; }
wait_calls() { wait_for has_calls "$@"; } # wait_calls FILTER N: until N calls match
last_call() { calls "$1" | tail -1; }
release_json() { cat "$FAKE_HELM_DIR/releases/ao/$1.json" 2>/dev/null; }
revisions() { release_json "$1" | jq '.revisions | length'; }
revisions_are() { [ "$(revisions "$1")" = "$2" ]; }
obj() { curl -s -o /dev/null -w '%{http_code}' "$api$1"; } # obj PATH: the HTTP status of a GET
metrics() { curl -sf "http://127.0.0.1:$port/metrics"; }
log_has() { op_wait_for "$1"; }

# ---- modules -------------------------------------------------------------------------------------
m="$work/modules"
mkdir -p "$m/001-chart-mod/templates" "$m/001-chart-mod/crds" "$m/002-tpl-only/templates/sub" "$m/003-no-chart"
printf 'apiVersion: v2\nname: whatever-name\nversion: 0.1.0\n' >"$m/001-chart-mod/Chart.yaml"
cat >"$m/001-chart-mod/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  replicas: "{{ .Values.chartMod.replicas }}"
EOF
printf 'chartMod:\n  replicas: 1\n' >"$m/001-chart-mod/values.yaml"
cat >"$m/001-chart-mod/crds/widgets.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
  labels: {team: infra}
spec:
  group: example.com
  names: {kind: Widget, plural: widgets, singular: widget, listKind: WidgetList}
  scope: Namespaced
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
EOF
sed 's/widgets/docthings/g; s/Widget/Docthing/g; s/widget/docthing/g' "$m/001-chart-mod/crds/widgets.yaml" \
        >"$m/001-chart-mod/crds/doc-things.yaml"
sed 's/widgets/hiddens/g; s/Widget/Hidden/g; s/widget/hidden/g' "$m/001-chart-mod/crds/widgets.yaml" \
        >"$m/001-chart-mod/crds/_hidden.yaml"
cat >"$m/002-tpl-only/templates/sub/secret.yaml" <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
stringData:
  chart: "{{ .Chart.Name }}"
EOF
printf 'chartModEnabled: true\ntplOnlyEnabled: true\nnoChartEnabled: true\n' >"$m/values.yaml"
printf 'chartMod:\n  replicas: 2\n' >"$work/config.yaml"

# Releases already in the namespace: one without a module (purged), one ignored.
for r in orphan ours; do
        "$FAKE_HELM" upgrade "$r" "$m/001-chart-mod" --install -n ao >/dev/null
done
: >"$FAKE_HELM_DIR/calls.jsonl"

start_op() {
        op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" KUBE_SERVER="$api" \
                ADDON_OPERATOR_NAMESPACE=ao ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 MODULES_DIR="$m" \
                GLOBAL_HOOKS_DIR="$work/none" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
                ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
                ADDON_OPERATOR_RETRY_DELAY_SCALE=0.02 HELM_IGNORE_RELEASE=ours HELM_TIMEOUT=90s \
                ADDON_OPERATOR_CRD_EXTRA_LABELS=owner=ao,tier=core LOG_NO_TIME=true "$@" -- start
}
start_op
log_has "first converge done"
ok $? "the first converge ends"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)

# ---- start-up: version, then the releases ------------------------------------------------------
is "$(calls | head -1)" '["version","--short","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "helm's version is checked first, with the operator's namespace and API server"
like "$OP_LOG" "helm 3\.17\.2 at '$FAKE_HELM'" "the version found is logged"

upgrade=$(last_call '"upgrade","chart-mod"')
values_file=$(jq -r '.[6]' <<<"$upgrade")
values_given() { # values_given RELEASE: the values file text of RELEASE's last upgrade
        jq -sj --arg r "$1" '[.[] | select(.argv[0]=="upgrade" and .argv[1]==$r)] | last | .values[0]' \
                "$FAKE_HELM_DIR/calls.jsonl"
}
# The checksum is the MD5 of what `helm template` printed: render again with the same values.
values_given chart-mod >"$work/values-copy.yaml"
sum=$(FAKE_HELM_DIR="$work/replay" "$FAKE_HELM" template chart-mod "$m/001-chart-mod" --values "$work/values-copy.yaml" -n ao | md5sum | cut -d' ' -f1)
is "$upgrade" '["upgrade","chart-mod","'"$m/001-chart-mod"'","--install","--skip-crds","--values","'"$values_file"'","--history-max","10","--timeout","90s","--set-string","_addonOperatorModuleChecksum='"$sum"'","--labels","moduleChecksum='"$sum"'","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "chart-mod: helm upgrade --install with the module name, its directory and the checksum of the render"
like "$values_file" "^$work/tmp/chart-mod\.module-values\.yaml-.{6}$" "the values file is private to this run"
ok "$([ ! -e "$values_file" ] && echo 0 || echo 1)" "the values file is removed afterwards"
is "$(values_given chart-mod)" "$(printf 'global: {}\nchartMod:\n  replicas: 2')" \
        "helm gets {global, chartMod} with the config merged in"
is "$(calls '"chart-mod"' | jq -r '.[0]' | tr '\n' ' ')" "history template upgrade " \
        "chart-mod: history, template, upgrade, in that order"
is "$(release_json chart-mod | jq -c '.revisions[-1].labels')" "{\"moduleChecksum\":\"$sum\"}" \
        "the checksum is a release label too"

# The generated chart of a module with templates but no Chart.yaml.
tpl_upgrade=$(last_call '"upgrade","tpl-only"')
is "$(jq -r '.[2]' <<<"$tpl_upgrade")" "$work/tmp/charts/tpl-only" "tpl-only: a chart is generated for it"
is "$(cat "$work/tmp/charts/tpl-only/Chart.yaml")" "$(printf 'apiVersion: v2\nname: tpl-only\nversion: 0.2.0')" \
        "the generated Chart.yaml names the module"
is "$(readlink "$work/tmp/charts/tpl-only/templates")" "$m/002-tpl-only/templates" \
        "the generated chart links the module's templates"
is "$(release_json tpl-only | jq -r '.revisions[-1].manifest' | grep -c 'tpl-only-secret')" 1 \
        "helm rendered the module's templates through the generated chart"
is "$(n_calls '"no-chart"')" 0 "no-chart has no chart: helm never runs for it"

# CRDs.
is "$(fk GET /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com | jq -cS '.metadata.labels')" \
        '{"heritage":"addon-operator","owner":"ao","team":"infra","tier":"core"}' \
        "crds/widgets.yaml is applied with heritage and the extra labels, its own labels kept"
is "$(obj /apis/apiextensions.k8s.io/v1/customresourcedefinitions/docthings.example.com)" 404 \
        "crds/doc-things.yaml is skipped (prefix doc-)"
is "$(obj /apis/apiextensions.k8s.io/v1/customresourcedefinitions/hiddens.example.com)" 404 \
        "crds/_hidden.yaml is skipped (prefix _)"

# Purge.
is "$(calls '"uninstall"')" '["uninstall","orphan","--timeout","90s","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "the release without a module is uninstalled, HELM_IGNORE_RELEASE is not"
is "$(last_call '"list"')" '["list","--all","--max","0","--output","json","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "releases are listed with helm list --all"

# ---- de-duplication --------------------------------------------------------------------------------
# The fake helm creates nothing in the cluster: the test creates what the release holds.
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chart-mod-cm","namespace":"ao"}}' >/dev/null
fk POST /fake/objects '{"apiVersion":"v1","kind":"Secret","metadata":{"name":"tpl-only-secret","namespace":"ao"}}' >/dev/null
before=$(n_calls '"upgrade"')
kill -HUP "$OP_PID"
log_has "module 'chart-mod': release unchanged \(checksum $sum\), upgrade skipped"
ok $? "same values, every object there: the upgrade is skipped"
log_has "module 'tpl-only': release unchanged"
is "$(n_calls '"upgrade"')" "$before" "no upgrade ran"
is "$(last_call '"get","values","chart-mod"')" '["get","values","chart-mod","--output","json","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "the recorded checksum is read with helm get values"

curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/chart-mod-cm" >/dev/null
kill -HUP "$OP_PID"
log_has "module 'chart-mod': upgrading its release: ConfigMap ao/chart-mod-cm is missing from the cluster"
ok $? "a deleted object of the release brings the upgrade back"
wait_for revisions_are chart-mod 2
is "$(revisions chart-mod)" 2 "chart-mod: revision 2"
like "$(metrics)" 'modules_absent_resources_total\{module="chart-mod",resource="ConfigMap ao/chart-mod-cm"\} 1' \
        "modules_absent_resources_total counts it"
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"chart-mod-cm","namespace":"ao"}}' >/dev/null

printf 'chartMod:\n  replicas: 3\n' >"$work/config.yaml"
log_has "module 'chart-mod': upgrading its release: checksum [0-9a-f]{32}, was $sum"
ok $? "new values, new render: upgrade"
wait_for revisions_are chart-mod 3
is "$(release_json chart-mod | jq -r '.revisions[-1].manifest' | grep -c 'replicas: "3"')" 1 \
        "the new values reached the chart"

# ---- a pending revision, a failed first revision ----------------------------------------------------
printf 'pending-upgrade\n' >"$FAKE_HELM_DIR/status/chart-mod"
printf 'failed\n' >"$FAKE_HELM_DIR/status/tpl-only"
kill -HUP "$OP_PID"
log_has "module 'chart-mod': the last revision is pending-upgrade: deleting its record"
ok $? "a pending revision is noticed"
wait_for revisions_are chart-mod 4
is "$(fk GET /fake/requests | jq -r '.requests[] | select(.method=="DELETE") | .path' | grep -c '/api/v1/namespaces/ao/secrets/sh.helm.release.v1.chart-mod.v3')" 1 \
        "its storage Secret sh.helm.release.v1.chart-mod.v3 is deleted before the upgrade"
wait_calls '"upgrade","tpl-only"' 2
is "$(calls '"tpl-only"' | jq -r '.[0]' | tail -4 | tr '\n' ' ')" "history template uninstall upgrade " \
        "tpl-only: its only revision failed, so it is uninstalled and installed again"
rm -f "$FAKE_HELM_DIR/status/chart-mod" "$FAKE_HELM_DIR/status/tpl-only"
like "$(metrics)" 'modules_helm_release_redeployed_total\{module="chart-mod"\} 1' \
        "modules_helm_release_redeployed_total counts the pending release"

# ---- failures -----------------------------------------------------------------------------------------
printf 'boom from the test\n' >"$FAKE_HELM_DIR/fail/upgrade.once"
printf 'chartMod:\n  replicas: 4\n' >"$work/config.yaml"
log_has "module 'chart-mod': helm upgrade: exit code 1: Error: UPGRADE FAILED: boom from the test"
ok $? "a failing upgrade fails the module run with helm's own error line"
log_has "module 'chart-mod': release upgraded"
ok $? "the retry upgrades"

# ---- metrics -----------------------------------------------------------------------------------------
out=$(metrics)
for op in template check-upgrade upgrade; do
        like "$out" "helm_operation_seconds_count\\{module=\"chart-mod\",activation=\"[A-Za-z]+\",operation=\"$op\"\\} [1-9]" \
                "helm_operation_seconds{operation=\"$op\"} has observations"
done
like "$out" 'module_helm_seconds_count\{module="chart-mod",activation="OperatorStartup"\} 1' "module_helm_seconds"

# ---- disable: delete the release --------------------------------------------------------------------
printf 'chartModEnabled: false\n' >"$work/config.yaml"
log_has "release 'chart-mod' uninstalled"
ok $? "a disabled module's release is uninstalled"
is "$(last_call '"uninstall","chart-mod"')" '["uninstall","chart-mod","--timeout","90s","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "with helm uninstall"
ok "$([ ! -e "$FAKE_HELM_DIR/releases/ao/chart-mod.json" ] && echo 0 || echo 1)" "the release is gone"
is "$(obj /apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com)" 200 \
        "its CRDs stay"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
is "$(ls "$work/tmp" | grep -c module-values)" 0 "no values file is left behind"

# ---- the binary ---------------------------------------------------------------------------------------
start_op HELM_BIN_PATH=/nonexistent/helm
op_finish
is "$OP_CODE" 1 "a missing helm binary stops the start-up"
like "$OP_LOG" "helm binary '/nonexistent/helm' \(HELM_BIN_PATH\) not found or not executable" "naming the setting"

FAKE_HELM_VERSION=v2.16.9 start_op FAKE_HELM_VERSION=v2.16.9
op_finish
is "$OP_CODE" 1 "helm 2 is refused"
like "$OP_LOG" "helm 2\.16\.9 at '$FAKE_HELM' is not supported: helm 3 is required" "with the version found"

: >"$FAKE_HELM_DIR/calls.jsonl"
start_op HELM3=yes FAKE_HELM_VERSION=v2.16.9
log_has "first converge done"
ok $? "HELM3=yes skips the version check"
is "$(n_calls '"version"')" 0 "helm version never ran"
kill -TERM "$OP_PID"
op_finish

done_testing
