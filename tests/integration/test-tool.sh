#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Black-box tests of `addon-operator tool ...`: exact stdout, stderr and exit codes.
set -u
. "$(dirname "$0")/tap.sh"
: "${AO_BINARY:?AO_BINARY must point at build/addon-operator}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

run() { # run <stdin-file> args... ; sets OUT ERR CODE
        local input=$1; shift
        OUT=$("$AO_BINARY" tool "$@" <"$input" 2>"$dir/err"); CODE=$?
        ERR=$(cat "$dir/err")
}

# yaml2json
cat >"$dir/v.yaml" <<'YAML'
b: [1, 2.5, "3"]
a:
  yes: on
  text: |
    two
    lines
YAML
run /dev/null yaml2json "$dir/v.yaml"
is "$CODE" 0 "yaml2json: exit 0"
is "$OUT" '{"a":{"text":"two\nlines\n","true":true},"b":[1,2.5,"3"]}' "yaml2json: canonical JSON"
run "$dir/v.yaml" yaml2json -
is "$OUT" '{"a":{"text":"two\nlines\n","true":true},"b":[1,2.5,"3"]}' "yaml2json: - reads stdin"
printf 'a: 1\na: 2\n' >"$dir/dup.yaml"
run /dev/null yaml2json "$dir/dup.yaml"
is "$CODE" 1 "yaml2json: duplicate key exits 1"
is "$OUT" "" "yaml2json: nothing on stdout on error"
like "$ERR" "^$dir/dup.yaml:2:1: duplicate key 'a'" "yaml2json: error names file, line and column"
run /dev/null yaml2json "$dir/missing.yaml"
is "$CODE" 1 "yaml2json: missing file exits 1"
run /dev/null yaml2json
is "$CODE" 2 "yaml2json: no argument is a usage error"
is "$ERR" "usage: addon-operator tool yaml2json FILE|-" "yaml2json: usage line"
run /dev/null frobnicate
is "$CODE" 2 "unknown tool command exits 2"

# json-patch
printf '{"a": {"b": 1}, "list": [1, 2]}' >"$dir/doc.json"
printf '[{"op": "add", "path": "/a/c", "value": 2}]\n{"op": "remove", "path": "/list/0"}\n' >"$dir/p1"
run /dev/null json-patch "$dir/doc.json" "$dir/p1"
is "$CODE" 0 "json-patch: exit 0"
is "$OUT" '{"a":{"b":1,"c":2},"list":[2]}' "json-patch: array and single-object stream applied in order"
printf '{"op": "replace", "path": "/a/b", "value": [true]}\n{"op": "test", "path": "/a/b/0", "value": true}\n' >"$dir/p2"
run /dev/null json-patch "$dir/doc.json" "$dir/p2"
is "$OUT" '{"a":{"b":[true]},"list":[1,2]}' "json-patch: replace and test"
printf '[{"op": "add", "path": "/x", "value": 1}, {"op": "remove", "path": "/nope"}]' >"$dir/bad"
run /dev/null json-patch "$dir/doc.json" "$dir/bad"
is "$CODE" 1 "json-patch: failing op exits 1"
is "$OUT" "" "json-patch: nothing on stdout on error"
like "$ERR" "operation 1 \(remove /nope\)" "json-patch: error names the op index and path"
run /dev/null json-patch "$dir/doc.json"
is "$CODE" 2 "json-patch: missing argument is a usage error"

# validate
cat >"$dir/schema.yaml" <<'YAML'
type: object
required: [replicas]
x-required-for-helm: [image]
properties:
  replicas: {type: integer, minimum: 1}
  image: {type: string}
YAML
printf 'replicas: 2\n' >"$dir/ok.yaml"
run /dev/null validate "$dir/schema.yaml" "$dir/ok.yaml"
is "$CODE" 0 "validate: valid values exit 0"
is "$ERR" "" "validate: no output when valid"
run /dev/null validate "$dir/schema.yaml" "$dir/ok.yaml" --for-helm
is "$CODE" 1 "validate --for-helm: x-required-for-helm enforced"
like "$ERR" "image" "validate --for-helm: the missing field is named"
printf 'replicas: 0\nextra: 1\n' >"$dir/bad.yaml"
run /dev/null validate "$dir/schema.yaml" "$dir/bad.yaml"
is "$CODE" 1 "validate: invalid values exit 1"
is "$(printf '%s\n' "$ERR" | wc -l)" 2 "validate: one line per error (minimum, additionalProperties)"
printf 'type: object\nproperties:\n  pair: {type: array, items: [{type: string}, {type: integer}], additionalItems: false}\n' \
        >"$dir/tuple.yaml"
printf 'pair: [a, 1, extra]\n' >"$dir/tuple-values.yaml"
run /dev/null validate "$dir/tuple.yaml" "$dir/tuple-values.yaml"
is "$CODE:$ERR" "1:pair: must have at most 2 items, has 3 (additionalItems)" "validate: an item past a closed tuple"

# cron
run /dev/null cron '0 0 13 * FRI' --from 2026-11-22T00:00:00Z --count 3
is "$CODE" 0 "cron: exit 0"
is "$OUT" "$(printf '2026-11-27T00:00:00Z\n2026-12-04T00:00:00Z\n2026-12-11T00:00:00Z')" \
        "cron: day of month OR day of week, in UTC"
run /dev/null cron '*/15 * * * * *' --from 2026-01-01T00:00:59+01:00 --count 2
is "$OUT" "$(printf '2025-12-31T23:01:00Z\n2025-12-31T23:01:15Z')" "cron: seconds field, --from with an offset"
run /dev/null cron '61 * * * *'
is "$CODE" 1 "cron: bad expression exits 1"
is "$ERR" "cron '61 * * * *': minute: value 61 out of range 0-59" "cron: the reason names the field"
is "$OUT" "" "cron: nothing on stdout"
# In a zone: its wall clock and offset. 2026-10-25, Berlin: 02:30 shows twice (CEST, then CET).
run /dev/null cron 'TZ=Europe/Berlin 0 30 2 * * *' --from 2026-10-24T12:00:00Z --count 3
is "$CODE" 0 "cron in a zone: exit 0"
is "$OUT" "$(printf '2026-10-25T02:30:00+02:00\n2026-10-25T02:30:00+01:00\n2026-10-26T02:30:00+01:00')" \
        "cron in a zone: the repeated hour fires twice, shown with each offset"
# 2026-03-29: 02:00 becomes 03:00; 02:30 is skipped that day.
run /dev/null cron 'CRON_TZ=Europe/Berlin 0 30 2 * * *' --from 2026-03-28T12:00:00Z --count 2
is "$OUT" "$(printf '2026-03-30T02:30:00+02:00\n2026-03-31T02:30:00+02:00')" "cron in a zone: the skipped hour"
run /dev/null cron 'TZ=Australia/Lord_Howe 0 0 * * * *' --from 2026-04-04T13:30:00Z --count 3
is "$OUT" "$(printf '2026-04-05T01:00:00+11:00\n2026-04-05T02:00:00+10:30\n2026-04-05T03:00:00+10:30')" \
        "cron in a zone: a half-hour change"
run /dev/null cron 'TZ=../../etc/passwd * * * * *'
is "$CODE" 1 "cron: a zone name that leaves the zoneinfo directory exits 1"
is "$ERR" "cron 'TZ=../../etc/passwd * * * * *': time zone '../../etc/passwd' is not a zone name (zones are named like Europe/Berlin)" \
        "cron: the bad zone is named"
run /dev/null cron 'TZ=Europe/Berln 0 6 * * *'
is "$ERR" "cron 'TZ=Europe/Berln 0 6 * * *': time zone 'Europe/Berln': no such zone in /usr/share/zoneinfo" \
        "cron: an unknown zone is named"

# hook-config
cat >"$dir/hook.yaml" <<'YAML'
configVersion: v1
beforeHelm: 5
kubernetes:
- name: pods
  kind: Pod
  executeHookOnEvent: [Added]
  labelSelector: {matchLabels: {app: web}}
schedule:
- crontab: "*/5 * * * *"
  includeSnapshotsFrom: [pods]
YAML
run /dev/null hook-config "$dir/hook.yaml" --module
is "$CODE" 0 "hook-config --module: exit 0"
is "$OUT" '{"beforeHelm":5,"configVersion":"v1","kind":"module","kubernetes":[{"allowFailure":false,"executeHookOnEvent":["Added"],"executeHookOnSynchronization":true,"keepFullObjectsInMemory":true,"kind":"Pod","labelSelector":{"matchExpressions":[{"key":"app","operator":"In","values":["web"]}]},"name":"pods","queue":"main","waitForSynchronization":true}],"schedule":[{"allowFailure":false,"crontab":"*/5 * * * *","includeSnapshotsFrom":["pods"],"name":"schedule","queue":"main"}],"settings":{"executionBurst":1,"executionMinPeriod":"0s"}}' \
        "hook-config: canonical JSON with defaults filled in"
run /dev/null hook-config "$dir/hook.yaml"
is "$CODE" 1 "hook-config: a module binding in a global hook exits 1"
is "$ERR" "$dir/hook.yaml: beforeHelm: only module hooks may use this binding" "hook-config: the reason names the key"
is "$OUT" "" "hook-config: nothing on stdout on error"
printf '{"onStartup": 1, "onKubernetesEvent": [{"kind": "Pod", "event": ["add"]}]}' >"$dir/v0.json"
run "$dir/v0.json" hook-config -
is "$OUT" '{"configVersion":"v0","kind":"global","kubernetes":[{"allowFailure":false,"executeHookOnEvent":["Added"],"executeHookOnSynchronization":false,"keepFullObjectsInMemory":false,"kind":"Pod","name":"onKubernetesEvent","queue":"main","waitForSynchronization":true}],"onStartup":1,"settings":{"executionBurst":1,"executionMinPeriod":"0s"}}' \
        "hook-config: - reads a v0 config from stdin"
printf 'configVersion: v1\nkubernetes:\n- {kind: Pod, jqFilter: ".a |"}\n' >"$dir/jq.yaml"
run /dev/null hook-config "$dir/jq.yaml"
is "$CODE" 1 "hook-config: bad jqFilter exits 1"
like "$ERR" "^$dir/jq.yaml: kubernetes\[0\]\.jqFilter: '\.a \|' does not compile: syntax error" "hook-config: jq's reason"
run /dev/null hook-config
is "$CODE" 2 "hook-config: no argument is a usage error"
is "$ERR" "usage: addon-operator tool hook-config FILE|- [--module]" "hook-config: usage line"

# post-render (helm's post-renderer: the manifest on stdin, labelled on stdout)
printf -- '---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {app: web, heritage: Helm}\n' >"$dir/manifest.yaml"
run "$dir/manifest.yaml" post-render 'heritage=addon-operator, team = infra'
is "$CODE" 0 "post-render: exit 0"
is "$OUT" "$(printf -- '---\n# Source: web/templates/cm.yaml\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm\n  labels: {app: web, heritage: addon-operator, team: infra}')" \
        "post-render: every object gets the labels, the rest as it was"
is "$ERR" "" "post-render: nothing on stderr"
printf 'kind: A\nmetadata: [x]\n' >"$dir/bad-manifest.yaml"
run "$dir/bad-manifest.yaml" post-render heritage=addon-operator
is "$CODE" 1 "post-render: a manifest it cannot label exits 1"
is "$OUT" "" "post-render: nothing on stdout on error"
is "$ERR" "post-render: document 1: metadata is a sequence, not a mapping" "post-render: the reason on stderr"
run "$dir/manifest.yaml" post-render 'nolabel'
is "$ERR" "post-render: labels: 'nolabel' is not key=value" "post-render: bad labels"
head -c $((64 * 1024 * 1024 + 1)) /dev/zero | tr '\0' ' ' >"$dir/huge.yaml"
run "$dir/huge.yaml" post-render heritage=addon-operator
is "$CODE:$ERR" "1:post-render: rendered manifest: larger than 64 MiB" "post-render: a manifest over 64 MiB is refused"
rm -f "$dir/huge.yaml"
run /dev/null post-render
is "$CODE" 2 "post-render: no argument is a usage error"
is "$ERR" "usage: addon-operator tool post-render LABELS" "post-render: usage line"
unlike "$("$AO_BINARY" --help)" "post-render" "post-render: not in --help (helm runs it, not people)"

done_testing
