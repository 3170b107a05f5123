#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The release step with a cluster: the operator runs helm (tests/fakehelm/fake-helm, which records
# every call and, with FAKE_HELM_KUBE, writes helm's storage Secrets and the release's objects) against
# the fake API server. Exact command lines (with the operator's own post-renderer, whose labels reach the
# objects; other labels re-render), the values file, the generated chart of a module without
# Chart.yaml, the release state from the storage Secrets (no history, list or get values),
# no render when the input is unchanged (converge, restart), a release made by the Go operator,
# de-duplication by checksum and by missing objects, pending and failed releases, purge with
# HELM_IGNORE_RELEASE, delete on disable, failures and retries, HELM3=yes, metrics, and helm
# history, get values and list while the storage Secrets cannot be listed. (crds/, which goes to the
# cluster before the release step, and what it adds to the global values: test-global-discovery.sh.)
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-helm.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api"
mkdir -p "$FAKE_HELM_DIR"/{fail,hang,status} "$work/tmp"

calls() { # calls [FILTER]: the recorded command lines (JSON arrays), optionally those matching FILTER
        [ -f "$FAKE_HELM_DIR/calls.jsonl" ] || return 0
        jq -c '.argv' "$FAKE_HELM_DIR/calls.jsonl" | grep -F -- "${1:-}"
}
n_calls() { calls "$1" | wc -l; }
has_calls() { [ "$(n_calls "$1")" -ge "$2" ]; }
wait_calls() { wait_for has_calls "$@"; } # wait_calls FILTER N: until N calls match
last_call() { calls "$1" | tail -1; }
subcommands() { calls "${1:-}" | jq -r '.[0]' | tr '\n' ' '; } # subcommands [FILTER]: "template upgrade "
clear_calls() { : >"$FAKE_HELM_DIR/calls.jsonl"; }
obj() { curl -s -o /dev/null -w '%{http_code}' "$api$1"; } # obj PATH: the HTTP status of a GET
metrics() { curl -sf "http://127.0.0.1:$port/metrics"; }
log_has() { op_wait_for "$1"; }
mark() { log_mark=${#OP_LOG}; }
since_mark() { printf '%s' "${OP_LOG:$log_mark}"; } # the operator's lines since mark
secrets=/api/v1/namespaces/ao/secrets
storage() { # storage RELEASE: its storage Secrets, "name status" per line, oldest first
        fk GET "$secrets?labelSelector=owner%3Dhelm,name%3D$1" |
                jq -r '.items | sort_by(.metadata.labels.version | tonumber)[] | .metadata.name + " " + .metadata.labels.status'
}
last_storage() { storage "$1" | tail -1 | cut -d' ' -f1; }
labels_of() { # labels_of STORAGE-NAME: its labels, helm's timestamps left out
        fk GET "$secrets/$1" | jq -cS '.metadata.labels | del(.createdAt, .modifiedAt)'
}
label_of() { fk GET "$secrets/$1" | jq -r --arg k "$2" '.metadata.labels[$k] // ""'; }
set_status() { # set_status STORAGE-NAME STATUS: as helm leaves a revision it did not finish
        curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' \
                --data '{"metadata":{"labels":{"status":"'"$2"'"}}}' "$api$secrets/$1" >/dev/null
}
last_status_is() { [ "$(storage "$1" | tail -1 | cut -d' ' -f2)" = "$2" ]; }
deployed_as() { [ "$(storage "$1" | tail -1)" = "sh.helm.release.v1.$1.v$2 deployed" ]; } # deployed_as RELEASE N
requests() { fk GET /fake/requests | jq -c '.requests[]'; }
# The objects of the releases, as the API paths a per-object GET would use.
object_paths='/api/v1/namespaces/ao/configmaps/chart-mod-cm|/api/v1/namespaces/ao/secrets/tpl-only-secret|/api/v1/namespaces/ao/configmaps/go-made-cm'
object_gets() { requests | jq -r 'select(.method=="GET") | .path' | grep -E "^($object_paths)\$"; }
storage_gets() { requests | jq -r 'select(.method=="GET" and (.watch|not)) | .path' | grep -F "$secrets/sh.helm.release.v1." | sort; }

# ---- modules -------------------------------------------------------------------------------------
m="$work/modules"
mkdir -p "$m/001-chart-mod/templates" "$m/002-tpl-only/templates/sub" "$m/003-no-chart" \
        "$m/004-go-made/templates"
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
cat >"$m/002-tpl-only/templates/sub/secret.yaml" <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-secret
stringData:
  chart: "{{ .Chart.Name }}"
EOF
printf 'apiVersion: v2\nname: go-made\nversion: 1.0.0\n' >"$m/004-go-made/Chart.yaml"
printf 'goMade:\n  greeting: hello\n' >"$m/004-go-made/values.yaml"
cat >"$m/004-go-made/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
data:
  greeting: "{{ .Values.goMade.greeting }}"
EOF
printf 'chartModEnabled: true\ntplOnlyEnabled: true\nnoChartEnabled: true\ngoMadeEnabled: true\n' >"$m/values.yaml"
printf 'chartMod:\n  replicas: 2\n' >"$work/config.yaml"

# helm's post-renderer, as the operator gives it: its own binary, with heritage and the extra labels.
labels=heritage=addon-operator,owner=ao,tier=core
post_render=(--post-renderer "$(realpath "$AO_BINARY")" --post-renderer-args tool --post-renderer-args post-render
        --post-renderer-args "$labels")
post_render_json=$(jq -c '.[1:]' <<<"$(jq -cn '$ARGS.positional' --args -- x "${post_render[@]}")")

# Releases already in the namespace: one without a module (purged), one ignored, and go-made as the Go
# operator leaves it: the checksum of its render (with the labels its post-renderer adds) as the
# moduleChecksum label and in the values, no moduleInputChecksum.
for r in orphan ours; do
        "$FAKE_HELM" upgrade "$r" "$m/001-chart-mod" --install -n ao >/dev/null
done
go_values=$(printf 'global: {}\ngoMade:\n  greeting: hello\n')
printf '%s\n' "$go_values" >"$work/go-made-values.yaml"
go_sum=$("$FAKE_HELM" template go-made "$m/004-go-made" --values "$work/go-made-values.yaml" "${post_render[@]}" -n ao |
        md5sum | cut -d' ' -f1)
"$FAKE_HELM" upgrade go-made "$m/004-go-made" --install -n ao --values "$work/go-made-values.yaml" \
        --set-string "_addonOperatorModuleChecksum=$go_sum" --labels "moduleChecksum=$go_sum" >/dev/null
is "$(labels_of sh.helm.release.v1.go-made.v1)" \
        "{\"moduleChecksum\":\"$go_sum\",\"name\":\"go-made\",\"owner\":\"helm\",\"status\":\"deployed\",\"version\":\"1\"}" \
        "go-made: a release of the Go operator, labelled moduleChecksum only"
clear_calls

start_op() {
        op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" KUBE_SERVER="$api" \
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
values_given() { # values_given RELEASE [SUBCOMMAND]: the values file text of RELEASE's last upgrade (or SUBCOMMAND)
        jq -sj --arg r "$1" --arg c "${2:-upgrade}" '[.[] | select(.argv[0]==$c and .argv[1]==$r)] | last | .values[0]' \
                "$FAKE_HELM_DIR/calls.jsonl"
}
# The checksum is the MD5 of what `helm template` printed: render again with the same values.
values_given chart-mod >"$work/values-copy.yaml"
sum=$(FAKE_HELM_DIR="$work/replay" "$FAKE_HELM" template chart-mod "$m/001-chart-mod" --values "$work/values-copy.yaml" \
        "${post_render[@]}" -n ao | md5sum | cut -d' ' -f1)
input=$(label_of sh.helm.release.v1.chart-mod.v1 moduleInputChecksum)
like "$input" '^[0-9a-f]{32}$' "chart-mod: its input checksum is an MD5"
is "$upgrade" '["upgrade","chart-mod","'"$m/001-chart-mod"'","--install","--skip-crds","--values","'"$values_file"'","--history-max","10","--timeout","90s","--set-string","_addonOperatorModuleChecksum='"$sum"'","--labels","moduleChecksum='"$sum"',moduleInputChecksum='"$input"'","--take-ownership",'"${post_render_json:1:-1}"',"--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "chart-mod: helm upgrade --install with the module name, its directory, the checksum of the render and of its input, the post-renderer"
ok "$([ "$input" != "$sum" ] && echo 0 || echo 1)" "the input checksum is not the render's"
like "$values_file" "^$work/tmp/chart-mod\.module-values\.yaml-.{6}$" "the values file is private to this run"
ok "$([ ! -e "$values_file" ] && echo 0 || echo 1)" "the values file is removed afterwards"
is "$(values_given chart-mod)" "$(printf 'global: {}\nchartMod:\n  replicas: 2')" \
        "helm gets {global, chartMod} with the config merged in"
is "$(subcommands '"chart-mod"')" "template upgrade " \
        "chart-mod: template, upgrade, in that order (the last revision comes from the storage Secrets)"
is "$(storage chart-mod)" "sh.helm.release.v1.chart-mod.v1 deployed" "chart-mod: one revision, deployed"
is "$(labels_of sh.helm.release.v1.chart-mod.v1)" \
        "{\"moduleChecksum\":\"$sum\",\"moduleInputChecksum\":\"$input\",\"name\":\"chart-mod\",\"owner\":\"helm\",\"status\":\"deployed\",\"version\":\"1\"}" \
        "both checksums are labels of its storage Secret"
is "$(fk GET /api/v1/namespaces/ao/configmaps/chart-mod-cm | jq -c '[.data, .metadata.annotations["meta.helm.sh/release-name"]]')" \
        '[{"replicas":"2"},"chart-mod"]' "helm made the release's ConfigMap"
template=$(last_call '"template","chart-mod"')
is "$template" '["template","chart-mod","'"$m/001-chart-mod"'","--values","'"$(jq -r '.[4]' <<<"$template")"'",'"${post_render_json:1:-1}"',"--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "chart-mod: helm template with the same post-renderer"
is "$(fk GET /api/v1/namespaces/ao/configmaps/chart-mod-cm | jq -cS .metadata.labels)" \
        '{"app.kubernetes.io/managed-by":"Helm","heritage":"addon-operator","owner":"ao","tier":"core"}' \
        "the release's ConfigMap has heritage and the extra labels: the operator's post-renderer ran"
is "$(calls | jq -r '.[0]' | sort -u | tr '\n' ' ')" "template uninstall upgrade version " \
        "no helm history, list or get: the storage Secrets answer them"

# The generated chart of a module with templates but no Chart.yaml.
tpl_upgrade=$(last_call '"upgrade","tpl-only"')
is "$(jq -r '.[2]' <<<"$tpl_upgrade")" "$work/tmp/charts/tpl-only" "tpl-only: a chart is generated for it"
is "$(cat "$work/tmp/charts/tpl-only/Chart.yaml")" "$(printf 'apiVersion: v2\nname: tpl-only\nversion: 0.2.0')" \
        "the generated Chart.yaml names the module"
is "$(readlink "$work/tmp/charts/tpl-only/templates")" "$m/002-tpl-only/templates" \
        "the generated chart links the module's templates"
is "$(fk GET "$secrets/tpl-only-secret" | jq -r '.data.chart' | base64 -d)" "tpl-only" \
        "helm rendered the module's templates through the generated chart"
is "$(n_calls '"no-chart"')" 0 "no-chart has no chart: helm never runs for it"

# The Go operator's release: rendered once, recognised by its checksum, labelled with its input.
is "$(subcommands '"go-made"')" "template " "go-made: one helm template, no upgrade"
is "$(values_given go-made template)" "$go_values" "with the values the Go operator gave it"
like "$OP_LOG" "module 'go-made': release unchanged \(checksum $go_sum, now labelled with its input\), upgrade skipped" \
        "go-made: same checksum, objects there: labelled, not upgraded"
go_input=$(label_of sh.helm.release.v1.go-made.v1 moduleInputChecksum)
like "$go_input" '^[0-9a-f]{32}$' "its storage Secret carries moduleInputChecksum now"
is "$(storage go-made)" "sh.helm.release.v1.go-made.v1 deployed" "go-made: still revision 1"
is "$(requests | jq -r 'select(.method=="PATCH") | .path' | grep -c "$secrets/sh.helm.release.v1.go-made.v1")" 1 \
        "by one patch of the storage Secret"

# Purge.
is "$(calls '"uninstall"')" '["uninstall","orphan","--timeout","90s","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "the release without a module is uninstalled, HELM_IGNORE_RELEASE is not"
is "$(storage orphan)$(obj /api/v1/namespaces/ao/configmaps/orphan-cm)" "404" "orphan's storage and objects are gone"
is "$(storage ours)" "sh.helm.release.v1.ours.v1 deployed" "ours stays"

# ---- nothing changed: no helm process ----------------------------------------------------------------
unchanged_all() { # unchanged_all TEXT: every module with a chart skipped the render
        local mod
        for mod in chart-mod tpl-only go-made; do
                grep -q "module '$mod': release unchanged (same input as its last revision), upgrade skipped" <<<"$1" ||
                        return 1
        done
}
clear_calls
fk DELETE /fake/requests >/dev/null
mark
kill -HUP "$OP_PID"
log_has "converge done"
ok $? "a reload with nothing changed converges"
unchanged_all "$(since_mark)"
ok $? "every module: release unchanged (same input as its last revision)"
is "$(subcommands)" "" "no helm process ran"
is "$(object_gets)" "" "no GET of a release's object: the watches know them"
is "$(storage_gets)" "" "nor of a storage Secret"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
unlike "$OP_LOG" "sandbox violation" "helm, and the post-renderer it starts, ran in helm's sandbox without a violation"
clear_calls
fk DELETE /fake/requests >/dev/null
start_op
log_has "first converge done"
ok $? "a restart converges"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
is "$(subcommands)" "version " "a restart with nothing changed: helm version only, no template, history, list or upgrade"
unchanged_all "$OP_LOG"
ok $? "every module: release unchanged (same input as its last revision), the Go operator's release too"
is "$(storage_gets | tr '\n' ' ')" \
        "$secrets/sh.helm.release.v1.chart-mod.v1 $secrets/sh.helm.release.v1.go-made.v1 $secrets/sh.helm.release.v1.tpl-only.v1 " \
        "the objects of each release come from its last storage Secret, one GET each"
is "$(object_gets)" "" "no GET of a release's object"
is "$(requests | jq -r 'select(.path=="/api/v1/namespaces/ao/configmaps" and .method=="GET") | [(.watch|tostring), .accept] | join(" ")' | sort -u)" \
        "$(printf '%s\n' 'false application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json' \
                'true application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json')" \
        "the release's ConfigMaps are listed and watched as metadata"
like "$(metrics)" "addon_operator_kubernetes_client_request_result_total\{component=\"helm_monitor\",code=\"200\",method=\"GET\",host=\"$api\"\} [1-9]" \
        "on the release monitor's client"

# ---- changes: an object, the values, a chart file ---------------------------------------------------------
clear_calls
mark
curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/chart-mod-cm" >/dev/null
log_has "module 'chart-mod': ConfigMap ao/chart-mod-cm is missing: running it again"
ok $? "a deleted object of the release is noticed by its watch"
log_has "module 'chart-mod': upgrading its release: ConfigMap ao/chart-mod-cm is missing"
ok $? "and brings the upgrade back"
wait_for deployed_as chart-mod 2
is "$(storage chart-mod | tr '\n' ',')" "sh.helm.release.v1.chart-mod.v1 superseded,sh.helm.release.v1.chart-mod.v2 deployed," \
        "chart-mod: revision 2"
heal_upgrade=$(last_call '"upgrade","chart-mod"')
is "$heal_upgrade" "$(jq -c --arg f "$(jq -r '.[6]' <<<"$heal_upgrade")" '.[6] = $f' <<<"$upgrade")" \
        "the same command line as the first upgrade: the render's checksum, the same input checksum"
wait_for test "$(obj /api/v1/namespaces/ao/configmaps/chart-mod-cm)" = 200
is "$(obj /api/v1/namespaces/ao/configmaps/chart-mod-cm)" 200 "the ConfigMap is back"
is "$(metrics | grep -v '^#' | grep 'modules_absent_resources_total')" 'addon_operator_modules_absent_resources_total{module="chart-mod",resource="ConfigMap ao/chart-mod-cm"} 1' \
        "modules_absent_resources_total counts it, once"

clear_calls
mark
printf 'chartMod:\n  replicas: 3\n' >"$work/config.yaml"
log_has "module 'chart-mod': upgrading its release: checksum [0-9a-f]{32}, was $sum"
ok $? "new values, new render: upgrade"
wait_for deployed_as chart-mod 3
is "$(subcommands)" "template upgrade " "changed values: helm template and helm upgrade, for chart-mod alone"
is "$(storage chart-mod | tail -1)" "sh.helm.release.v1.chart-mod.v3 deployed" "chart-mod: revision 3"
is "$(fk GET /api/v1/namespaces/ao/configmaps/chart-mod-cm | jq -r .data.replicas)" 3 "the new values reached the cluster"
input3=$(label_of sh.helm.release.v1.chart-mod.v3 moduleInputChecksum)
ok "$([ "$input3" != "$input" ] && [ -n "$input3" ] && echo 0 || echo 1)" "with a new input checksum"

clear_calls
mark
cat >>"$m/001-chart-mod/templates/cm.yaml" <<'EOF'
  edited: "yes"
EOF
kill -HUP "$OP_PID"
log_has "module 'chart-mod': upgrading its release: checksum [0-9a-f]{32}, was [0-9a-f]{32}"
ok $? "an edited template: render, new checksum, upgrade"
wait_for deployed_as chart-mod 4
is "$(subcommands)" "template upgrade " "a changed chart file: helm template and helm upgrade, for chart-mod alone"
is "$(fk GET /api/v1/namespaces/ao/configmaps/chart-mod-cm | jq -cS .data)" '{"edited":"yes","replicas":"3"}' \
        "the edited template reached the cluster"
ok "$([ "$(label_of sh.helm.release.v1.chart-mod.v4 moduleInputChecksum)" != "$input3" ] && echo 0 || echo 1)" \
        "with a new input checksum"

# ---- a pending revision, a failed first revision ----------------------------------------------------
clear_calls
fk DELETE /fake/requests >/dev/null
mark
set_status sh.helm.release.v1.chart-mod.v4 pending-upgrade
log_has "module 'chart-mod': the last revision is pending-upgrade: deleting its record"
ok $? "a pending revision is noticed"
wait_calls '"upgrade","chart-mod"' 1
wait_for last_status_is chart-mod deployed
is "$(requests | jq -r 'select(.method=="DELETE") | .path')" "$secrets/sh.helm.release.v1.chart-mod.v4" \
        "its storage Secret sh.helm.release.v1.chart-mod.v4 is deleted before the upgrade"
is "$(subcommands)" "template upgrade " "chart-mod: rendered (the release is not deployed) and upgraded"
is "$(storage chart-mod | tail -2 | tr '\n' ',')" "sh.helm.release.v1.chart-mod.v3 superseded,sh.helm.release.v1.chart-mod.v4 deployed," \
        "revision 4 again, deployed"
is "$(metrics | grep -v '^#' | grep 'modules_helm_release_redeployed_total')" 'addon_operator_modules_helm_release_redeployed_total{module="chart-mod"} 1' \
        "modules_helm_release_redeployed_total counts the pending release, once"

clear_calls
mark
set_status sh.helm.release.v1.tpl-only.v1 failed
log_has "module 'tpl-only': its only revision failed: uninstalling it first"
ok $? "a failed first revision is noticed"
wait_calls '"upgrade","tpl-only"' 1
wait_for last_status_is tpl-only deployed
is "$(subcommands)" "template uninstall upgrade " \
        "tpl-only: its only revision failed, so it is uninstalled and installed again"
is "$(storage tpl-only)" "sh.helm.release.v1.tpl-only.v1 deployed" "tpl-only: revision 1, deployed"

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
clear_calls
mark
printf 'chartModEnabled: false\nnoChartEnabled: false\n' >"$work/config.yaml"
log_has "release 'chart-mod' uninstalled"
ok $? "a disabled module's release is uninstalled"
wait_calls '"history","no-chart"' 1
is "$(calls | sort)" '["history","no-chart","--max","1","--output","json","--namespace","ao","--kube-apiserver","'"$api"'"]
["uninstall","chart-mod","--timeout","90s","--namespace","ao","--kube-apiserver","'"$api"'"]' \
        "with helm uninstall alone (the storage Secrets say there is a release); for no-chart helm history confirms there is none"
is "$(storage chart-mod)$(obj /api/v1/namespaces/ao/configmaps/chart-mod-cm)" "404" "the release is gone, its objects too"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
is "$(ls "$work/tmp" | grep -c module-values)" 0 "no values file is left behind"

# ---- the binary ---------------------------------------------------------------------------------------
# Without a usable helm: test-helm-missing.sh.
clear_calls
start_op HELM3=yes FAKE_HELM_VERSION=v2.16.9
log_has "first converge done"
ok $? "HELM3=yes skips the version check"
is "$(n_calls '"version"')" 0 "helm version never ran"
# helm's version is part of the input: unknown now, so each release is rendered once and labelled again.
is "$(subcommands)" "template template " "each release is rendered once, none upgraded"
like "$OP_LOG" "module 'go-made': release unchanged \(checksum $go_sum, now labelled with its input\)" \
        "and labelled with the new input"
ok "$([ "$(label_of sh.helm.release.v1.go-made.v1 moduleInputChecksum)" != "$go_input" ] && echo 0 || echo 1)" \
        "a new moduleInputChecksum"
kill -TERM "$OP_PID"
op_finish

# ---- before the storage Secrets are listed: helm answers ------------------------------------------------
# The operator's list of Secrets fails (tpl-only, whose object is a Secret, is disabled so that no release
# check waits for that list): after 30 s the release step asks helm history, helm get values and helm list.
fk POST /fake/faults '{"method":"GET","path":"^/api/v1/namespaces/ao/secrets$","watch":false,"agent":"^addon-operator/","action":"status","status":503,"count":-1}' >/dev/null
printf 'chartModEnabled: false\nnoChartEnabled: false\ntplOnlyEnabled: false\n' >"$work/config.yaml"
clear_calls
start_op
log_has "release storage: not listed within 30 s: the release step asks helm meanwhile"
ok $? "the storage Secrets cannot be listed: the release step asks helm"
log_has "first converge done"
ok $? "the first converge ends without them"
helm_args='"--namespace","ao","--kube-apiserver","'"$api"'"]'
is "$(subcommands '"go-made"')" "history template get " "go-made: helm history, helm template, helm get values"
is "$(calls '"history","go-made"')" '["history","go-made","--max","1","--output","json",'"$helm_args" \
        "helm history for the last revision"
is "$(calls '"get"')" '["get","values","go-made","--output","json",'"$helm_args" \
        "helm get values for the checksum the Go operator recorded"
like "$OP_LOG" "module 'go-made': release unchanged \(checksum $go_sum\), upgrade skipped" \
        "go-made: the recorded checksum is the render's, no upgrade"
is "$(calls '"list"')" '["list","--all","--max","0","--output","json",'"$helm_args" "helm list for the purge"
is "$(calls | jq -r '.[0]' | sort | tr '\n' ' ')" "get history list template version " \
        "and nothing else: no upgrade"
fk DELETE /fake/faults >/dev/null
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"

# ---- other labels: every release is rendered again and upgraded --------------------------------------------
clear_calls
start_op ADDON_OPERATOR_CRD_EXTRA_LABELS=tier=edge
log_has "module 'go-made': upgrading its release: checksum [0-9a-f]{32}, was $go_sum"
ok $? "ADDON_OPERATOR_CRD_EXTRA_LABELS changed: go-made's input changed, its render too: upgraded"
log_has "first converge done"
like "$(calls '"upgrade","go-made"' | jq -r 'join(" ")')" " --post-renderer-args post-render --post-renderer-args heritage=addon-operator,tier=edge --namespace " \
        "the post-renderer gets the new labels"
is "$(fk GET /api/v1/namespaces/ao/configmaps/go-made-cm | jq -cS .metadata.labels)" \
        '{"app.kubernetes.io/managed-by":"Helm","heritage":"addon-operator","tier":"edge"}' \
        "go-made's ConfigMap has them, and no longer owner=ao"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"

done_testing
