#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Numbers leave with the value they came in with (docs/VALUES.md, Numbers), against the fake API
# server and the fake helm. A table of edge numbers (2^53+1, ±2^63, 2^64-1, 2^64, 30 digits, -0,
# subnormals, 0.1, 1e308, exponents, YAML's leading zeros, + and _) goes from values.yaml to the
# values file a hook reads, to helm's values file, to the debug output and through
# `tool yaml2json`; a ConfigMap section edited in the last digit of a big integer runs the module
# again and changes helm's input checksum. Then what arrives as JSON: the edge numbers as a hook's
# values patch reach the next hook, its config patch is written back to the ConfigMap, a binding's
# object goes through a jqFilter into the binding context (and an edit in the last digit is an
# event), and `tool json-patch`.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-exact-numbers.XXXXXX)
fk_start
export FAKE_HELM_DIR="$work/helm"
m=$work/modules
out=$work/out
sock=$work/debug.socket
cm_path=/api/v1/namespaces/ao/configmaps/addon-operator
mkdir -p "$m/010-nums/templates" "$m/010-nums/hooks" "$work/global" "$out" "$work/tmp" "$FAKE_HELM_DIR"

# nums FILE [KEY...]: the leaves under KEY... of the JSON in FILE, one "path=text" line each,
# sorted; numbers exactly as written in FILE, strings JSON-quoted.
cat >"$work/nums.py" <<'EOF'
import json, sys

class Num(str):
    pass

def leaves(v, path):
    if isinstance(v, dict):
        for k in sorted(v):
            yield from leaves(v[k], path + [k])
    elif isinstance(v, list):
        for i, x in enumerate(v):
            yield from leaves(x, path + [str(i)])
    elif isinstance(v, Num):
        yield ".".join(path) + "=" + v
    else:
        yield ".".join(path) + "=" + json.dumps(v)

doc = json.load(open(sys.argv[1]), parse_int=Num, parse_float=Num, parse_constant=Num)
for k in sys.argv[2:]:
    doc = doc[k]
print("\n".join(leaves(doc, [])))
EOF
nums() { python3 "$work/nums.py" "$@"; }

# ---- the table ------------------------------------------------------------------------------------
# name, as written in YAML, as every JSON printer writes it (strings quoted).
edges='n2_53p1 9007199254740993 9007199254740993
m2_53p1 -9007199254740993 -9007199254740993
p2_63m1 9223372036854775807 9223372036854775807
p2_63 9223372036854775808 9223372036854775808
m2_63 -9223372036854775808 -9223372036854775808
m2_63m1 -9223372036854775809 -9223372036854775809
u64max 18446744073709551615 18446744073709551615
two64 18446744073709551616 18446744073709551616
d30 123456789012345678901234567890 123456789012345678901234567890
negzero -0 0
negzerof -0.0 0
sub1 1e-320 1e-320
sub2 5e-324 5e-324
tenth 0.1 0.1
sum 0.30000000000000004 0.30000000000000004
e308 1e308 1e+308
max 1.7976931348623157e308 1.7976931348623157e+308
beyond 1e400 "1e400"
tagged !!float~1e400 1e400
e3 1e3 1000
e20 1E+20 100000000000000000000
small 2.5e-3 0.0025
zeros7 007 7
zeros10 010 8
plus +12 12
sep 1_000 1000
sep64 1_000_000_000_000_000_000_000 1000000000000000000000'
table_yaml() { # the table as a YAML mapping, indented by $1
        while read -r name yaml _; do printf '%s%s: %s\n' "$1" "$name" "${yaml/\~/ }"; done <<<"$edges"
}
table_json() { # the expected "name=text" lines, sorted by name as nums.py sorts them
        while read -r name _ json; do printf '%s=%s\n' "$name" "$json"; done <<<"$edges" | LC_ALL=C sort -t= -k1,1
}
# Only the tagged one has a space: "!!float~1e400" is written "!!float 1e400".
{ printf 'numsEnabled: true\nglobal:\n  big: 9007199254740993\n  u64max: 18446744073709551615\n'; } >"$m/values.yaml"
{ printf 'nums:\n'; table_yaml '  '; } >"$m/010-nums/values.yaml"
printf 'apiVersion: v2\nname: nums\nversion: 0.1.0\n' >"$m/010-nums/Chart.yaml"
printf 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nums\ndata:\n  a: "1"\n' >"$m/010-nums/templates/cm.yaml"

# What arrives as JSON: the same numbers as JSON literals (1e400 a number there).
patch_value=$(while read -r name _ json; do
        [ "$name" = beyond ] && json=1e400
        [ "$name" = negzero ] && json=-0
        printf '"%s":%s,' "$name" "$json"
done <<<"$edges")
patch_value="{${patch_value%,}}"

hook() { # hook NAME CONFIG-JSON BODY
        printf '#!/bin/bash\nif [ "${1:-}" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\n%s\n' "$2" "$3" \
                >"$m/010-nums/hooks/$1"
        chmod +x "$m/010-nums/hooks/$1"
}
# next NAME: the next free numbered copy $out/NAME.N.json
cat >"$work/next.sh" <<EOF
n=1; while [ -e "$out/\$1.\$n.json" ]; do n=\$((n + 1)); done; echo "$out/\$1.\$n.json"
EOF
printf '[{"op":"add","path":"/nums/patched","value":%s}]\n' "$patch_value" >"$work/values-patch.json"
printf '[{"op":"add","path":"/nums/cfgPatched","value":%s}]\n' \
        '{"u64max":18446744073709551615,"d30":123456789012345678901234567890,"beyond":1e400,"sub2":5e-324}' \
        >"$work/config-patch.json"
hook a-first.sh '{"configVersion":"v1","beforeHelm":1}' \
        'cp "$VALUES_PATH" "$(sh '"$work"'/next.sh first)"
cp "$CONFIG_VALUES_PATH" "$(sh '"$work"'/next.sh first-config)"
cp '"$work"'/values-patch.json "$VALUES_JSON_PATCH_PATH"
cp '"$work"'/config-patch.json "$CONFIG_VALUES_JSON_PATCH_PATH"'
hook b-second.sh '{"configVersion":"v1","beforeHelm":2}' 'cp "$VALUES_PATH" "$(sh '"$work"'/next.sh second)"'
hook c-objects.sh '{"configVersion":"v1","kubernetes":[{"name":"objs","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["objs"]}},"jqFilter":"{big: .big, d30: .d30, u64max: .u64max, list: [.d30, .big], computed: (.small + 1)}","keepFullObjectsInMemory":false}]}' \
        'cp "$BINDING_CONTEXT_PATH" "$(sh '"$work"'/next.sh binding)"'

fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator","namespace":"ao"},"data":{"nums":"cfgBig: 9007199254740993\n"}}' >/dev/null
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","namespace":"objs"},"big":9007199254740993,"d30":123456789012345678901234567890,"u64max":18446744073709551615,"small":0.1}' >/dev/null
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "$api"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: fake, context: {cluster: fake, user: u}}]
current-context: fake
EOF

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$FAKE_HELM_DIR" KUBE_CONFIG="$work/kubeconfig" \
        ADDON_OPERATOR_NAMESPACE=ao MODULES_DIR="$m" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_STATE_DIR="$work/state" DEBUG_UNIX_SOCKET="$sock" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.05 -- start
op_wait_for "module 'nums' is up to date"
ok $? "the operator converges"

# ---- values.yaml to the hook, helm, the debug output and yaml2json (the YAML reader) ---------------
is "$(nums "$out/first.1.json" nums | grep -v '^cfg')" "$(table_json)" \
        "values.yaml: the hook's values file has every edge number exactly"
is "$(nums "$out/first.1.json" global | grep -v "^enabledModules")" "$(printf 'big=9007199254740993\nu64max=18446744073709551615')" \
        "values.yaml: global numbers exactly"
is "$(nums "$out/first-config.1.json" nums cfgBig)" "=9007199254740993" \
        "ConfigMap: the config values file has the section's number exactly"

helm_values() { # the values file text of the Nth upgrade of nums
        jq -sj --argjson n "$1" '[.[] | select(.argv[0]=="upgrade" and .argv[1]=="nums")] | .[$n - 1].values[0]' \
                "$FAKE_HELM_DIR/calls.jsonl"
}
yaml_of() { # the YAML text (of stdin) as canonical JSON, read back by the operator's own reader
        "$AO_BINARY" tool yaml2json -
}
helm_values 1 | yaml_of >"$work/helm1.json"
is "$(nums "$work/helm1.json" nums | grep -v '^cfg\|^patched')" "$(table_json)" \
        "helm: the values file helm gets reads back with every edge number exactly"
like "$(helm_values 1)" '^  n2_53p1: 9007199254740993$' "helm: 2^53+1 written as itself"
like "$(helm_values 1)" '^  d30: 123456789012345678901234567890$' "helm: 30 digits written as themselves"
like "$(helm_values 1)" '^  sub2: 5e-324$' "helm: 5e-324 in its shortest form"
like "$(helm_values 1)" '^  tagged: !!float 1e400$' "helm: 1e400 tagged, so that YAML does not read it as a string"

dbg() { env DEBUG_UNIX_SOCKET="$sock" "$AO_BINARY" "$@"; }
dbg module values nums -o json >"$work/debug.json"
is "$(nums "$work/debug.json" | grep -v '^cfg\|^patched')" "$(table_json)" "debug: module values -o json, exactly"
dbg global values -o json >"$work/debug-global.json"
like "$(cat "$work/debug-global.json")" '"big":9007199254740993' "debug: global values -o json, exactly"
like "$(dbg module values nums)" '^u64max: 18446744073709551615$' "debug: module values as YAML, exactly"

"$AO_BINARY" tool yaml2json "$m/010-nums/values.yaml" >"$work/yaml2json.json"
is "$(nums "$work/yaml2json.json" nums)" "$(table_json)" "tool yaml2json: every edge number exactly"

# ---- a change in the last digit is a change (values checksums) --------------------------------------
upgrades() { jq -s '[.[] | select(.argv[0]=="upgrade" and .argv[1]=="nums")] | length' "$FAKE_HELM_DIR/calls.jsonl"; }
input_checksum() { # the moduleInputChecksum label of the Nth upgrade of nums
        jq -sr --argjson n "$1" '[.[] | select(.argv[0]=="upgrade" and .argv[1]=="nums")] | .[$n - 1].argv as $a
                | $a[($a | index("--labels")) + 1]' "$FAKE_HELM_DIR/calls.jsonl" | sed 's/.*moduleInputChecksum=//'
}
before=$(upgrades)
curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' \
        --data '{"data":{"nums":"cfgBig: 9007199254740992\n"}}' "$api$cm_path" >/dev/null
op_wait_for "config changed: module 'nums' section"
ok $? "ConfigMap: 9007199254740993 edited to 9007199254740992 (the same double) is a change"
upgraded() { [ "$(upgrades)" -gt "$before" ]; }
wait_for upgraded
ok $? "helm: the module is upgraded again"
is "$(nums "$(ls "$out"/first-config.*.json | sort -t. -k2 -n | tail -1)" nums cfgBig)" "=9007199254740992" \
        "ConfigMap: the hook sees the new last digit"
ok "$([ "$(input_checksum 1)" != "$(input_checksum "$(upgrades)")" ] && echo 0 || echo 1)" \
        "helm: the input checksum differs"

# ---- numbers that arrive as JSON (hook patches, API objects, patch files) --------------------------
printf '{}\n' >"$work/empty.json"
json_checks() {
        local second binding last_binding events_before
        second=$(ls "$out"/second.*.json | sort -t. -k2 -n | tail -1)
        is "$(nums "$second" nums patched)" "$(table_json | sed 's/^beyond="1e400"$/beyond=1e400/')" \
                "values patch: the next hook's values file has every number of the JSON patch exactly"

        wait_for written_back
        is "$(cm_data | grep -A4 '^cfgPatched:')" \
                "$(printf 'cfgPatched:\n  u64max: 18446744073709551615\n  d30: 123456789012345678901234567890\n  beyond: !!float 1e400\n  sub2: 5e-324')" \
                "config patch: written back to the ConfigMap exactly"

        binding=$(ls "$out"/binding.*.json | sort -t. -k2 -n | head -1)
        python3 -c 'import json,sys; json.dump(json.load(open(sys.argv[1]))[0]["objects"][0]["filterResult"], sys.stdout)' \
                "$binding" >"$work/filter.json"
        is "$(nums "$work/filter.json")" \
                "$(printf 'big=9007199254740993\ncomputed=1.1\nd30=123456789012345678901234567890\nlist.0=123456789012345678901234567890\nlist.1=9007199254740993\nu64max=18446744073709551615')" \
                "binding: the object's numbers through the jqFilter, exactly (a computed one a double)"
        events_before=$(ls "$out"/binding.*.json | wc -l)
        curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' --data '{"big":9007199254740992}' \
                "$api/api/v1/namespaces/objs/configmaps/one" >/dev/null
        edited_event() { [ "$(ls "$out"/binding.*.json | wc -l)" -gt "$events_before" ]; }
        wait_for edited_event
        ok $? "binding: 9007199254740993 edited to 9007199254740992 changes the filter result: an event"
        last_binding=$(ls "$out"/binding.*.json | sort -t. -k2 -n | tail -1)
        like "$(cat "$last_binding")" '"big":9007199254740992' "binding: the event has the new number"

        printf '[{"op":"add","path":"/v","value":%s},{"op":"test","path":"/v/n2_53p1","value":9007199254740993}]\n' \
                "$patch_value" >"$work/edges-patch.json"
        "$AO_BINARY" tool json-patch "$work/empty.json" "$work/edges-patch.json" >"$work/tool-patch.json"
        is "$(nums "$work/tool-patch.json" v)" "$(table_json | sed 's/^beyond="1e400"$/beyond=1e400/')" \
                "tool json-patch: every edge number exactly, and a test of 2^53+1 passes"
        printf '[{"op":"test","path":"/v/n2_53p1","value":9007199254740992}]\n' >"$work/test-differs.json"
        "$AO_BINARY" tool json-patch "$work/tool-patch.json" "$work/test-differs.json" >/dev/null 2>"$work/test-differs.err"
        is "$?:$(cat "$work/test-differs.err")" \
                "1:operation 0 (test /v/n2_53p1): test failed: value differs" \
                "tool json-patch: a test of 9007199254740992 against 9007199254740993 fails"
}
cm_data() { curl -sf "$api$cm_path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"].get("nums", "<none>"))'; }
written_back() { grep -q 'cfgPatched' <<<"$(cm_data)"; }
json_checks

done_testing
