#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The ConfigMap as the config store, against the fake API server: the start-up state, edits by
# others classified as step 16 says (global or enabled flag: reload all; a module section: that
# module runs), an invalid edit logged and counted with the previous config kept, config patches
# from hooks written back, a missing ConfigMap created by the first patch, and 100 concurrent
# edits of other keys while hooks patch: nothing lost, nothing clobbered.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-kube-config.XXXXXX)
fk_start
cm_path=/api/v1/namespaces/ao/configmaps/addon-operator

kpatch() { # kpatch JSON: a merge patch of the ConfigMap, as kubectl patch --type merge does
        curl -sf -X PATCH -H 'Content-Type: application/merge-patch+json' --data "$1" "$api$cm_path" >/dev/null
}
cm_data() { # cm_data KEY: the ConfigMap's data[KEY]
        curl -sf "$api$cm_path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"].get(sys.argv[1], "<none>"))' "$1"
}

hook() { # hook <path> <config JSON> <body>
        mkdir -p "$(dirname "$work/$1")"
        printf '#!/bin/sh\nif [ "$1" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\n%s\n' "$2" "$3" >"$work/$1"
        chmod +x "$work/$1"
}
mkdir -p "$work/logs" "$work/modules/010-kmod"
printf 'kmod: {}\n' >"$work/modules/010-kmod/values.yaml"
# The module records the config it sees in each run.
hook modules/010-kmod/hooks/record.sh '{"configVersion":"v1","beforeHelm":1}' \
        'tr -d "\n" <"$CONFIG_VALUES_PATH" >>'"$work"'/logs/kmod; echo >>'"$work"'/logs/kmod'
# A global hook patches the config at start-up and for every ConfigMap in namespace "events".
hook global/hooks/patcher.sh \
        '{"configVersion":"v1","onStartup":1,"kubernetes":[{"name":"events","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["events"]}},"executeHookOnSynchronization":false,"executeHookOnEvent":["Added"],"keepFullObjectsInMemory":true}]}' \
        'python3 - "$BINDING_CONTEXT_PATH" "$CONFIG_VALUES_JSON_PATCH_PATH" <<EOF
import json, sys
ops = []
for c in json.load(open(sys.argv[1])):
    if c["binding"] == "onStartup":
        ops.append({"op": "add", "path": "/global/fromHook", "value": "yes"})
    elif c.get("type") == "Event":
        ops.append({"op": "add", "path": "/global/seen_" + c["object"]["metadata"]["name"].replace("-", "_"), "value": True})
json.dump(ops, open(sys.argv[2], "w"))
EOF'

fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-operator","namespace":"ao"},"data":{"global":"x: 1\n","kmodEnabled":"true","kmod":"a: 1\n"}}' >/dev/null
cat >"$work/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "$api"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: fake, context: {cluster: fake, user: u}}]
current-context: fake
EOF

start() {
        op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" KUBE_CONFIG="$work/kubeconfig" ADDON_OPERATOR_NAMESPACE=ao GLOBAL_HOOKS_DIR="$work/global" \
                MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
                ADDON_OPERATOR_RETRY_DELAY_SCALE=0.05 KUBE_CLIENT_QPS=200 KUBE_CLIENT_BURST=50 "$@" -- start
}

# ---- start-up ------------------------------------------------------------------------------------
start
op_wait_for "module 'kmod' is up to date"
ok $? "the operator converges with the ConfigMap as its config"
like "$OP_LOG" 'config: ConfigMap ao/addon-operator \(watched\)' "the ConfigMap is named in the log"
is "$(sed -n 1p "$work/logs/kmod")" '{"global":{"fromHook":"yes","x":1},"kmod":{"a":1}}' \
        "the module sees the ConfigMap's sections (and the start-up patch of the global hook)"
global_has_hook_key() { grep -q '^fromHook: "yes"$' <<<"$(cm_data global)"; }
wait_for global_has_hook_key
is "$(cm_data global)" "$(printf 'x: 1\nfromHook: "yes"')" "the hook's config patch is written back to the ConfigMap"
is "$(cm_data kmod)" "a: 1" "other keys keep their text"

# ---- edits by others -----------------------------------------------------------------------------
kpatch '{"data":{"kmod":"a: 2\n"}}'
wait_for sh -c "[ \$(wc -l <'$work/logs/kmod') -ge 2 ]"
is "$(sed -n 2p "$work/logs/kmod")" '{"global":{"fromHook":"yes","x":1},"kmod":{"a":2}}' "a module section edit runs that module"
op_wait_for "config changed: module 'kmod' section"
ok $? "the change is classified as a module section change"
kpatch '{"data":{"global":"fromHook: \"yes\"\nx: 2\n"}}'
op_wait_for "config changed: global values or enabled flags, reloading all modules"
ok $? "a global section edit reloads all modules"
wait_for sh -c "[ \$(wc -l <'$work/logs/kmod') -ge 3 ]"
is "$(sed -n 3p "$work/logs/kmod")" '{"global":{"fromHook":"yes","x":2},"kmod":{"a":2}}' "the reload runs the module with the new global section"
kpatch '{"data":{"kmod":"a: [1\n"}}'
op_wait_for "config changed but cannot be used, keeping the previous config"
ok $? "an invalid edit is logged and the previous config kept"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
config_errors() { curl -sf "http://127.0.0.1:$port/metrics" | sed -n 's/^addon_operator_config_values_errors_total //p'; }
counted() { [ "$(config_errors)" != 0 ]; }
wait_for counted
is "$(config_errors)" 1 "config_values_errors_total counts it"
is "$(wc -l <"$work/logs/kmod")" 3 "nothing ran for the invalid edit"
kpatch '{"data":{"kmod":"a: 3\n"}}'
wait_for sh -c "[ \$(wc -l <'$work/logs/kmod') -ge 4 ]"
is "$(sed -n 4p "$work/logs/kmod")" '{"global":{"fromHook":"yes","x":2},"kmod":{"a":3}}' "a valid edit after it applies again"

# ---- 100 edits of other keys while hooks patch ---------------------------------------------------
# Twenty objects make the global hook patch the global section twenty times; meanwhile another
# client writes 100 keys of its own, one request each. Every key of both must be there at the end.
python3 -c 'import json; print(json.dumps([{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ev-%02d" % i,"namespace":"events"}} for i in range(20)]))' >"$work/events.json"
fk POST /fake/objects "@$work/events.json" >/dev/null &
creator=$!
for i in $(seq -w 1 100); do kpatch "{\"data\":{\"userKey$i\":\"v$i\"}}"; done
wait "$creator"
all_there() {
        [ "$(curl -sf "$api$cm_path" | python3 -c 'import json,sys
d = json.load(sys.stdin)["data"]
users = sum(1 for i in range(1, 101) if d.get("userKey%03d" % i) == "v%03d" % i)
seen = sum(1 for i in range(20) if ("seen_ev_%02d: true" % i) in d.get("global", ""))
print(users, seen)')" = "100 20" ]
}
wait_for all_there
ok $? "all 100 keys of the other client and all 20 hook patches are in the ConfigMap"
like "$(cm_data global)" '^fromHook: "yes"' "the global section keeps what was there before"

# ---- a conflict on the write ---------------------------------------------------------------------
fk DELETE /fake/requests >/dev/null
fk POST /fake/faults '{"method":"PATCH","path":"/namespaces/ao/configmaps/addon-operator$","action":"status","status":409,"count":1}' >/dev/null
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ev-99","namespace":"events"}}' >/dev/null
seen_99() { grep -q '^seen_ev_99: true$' <<<"$(cm_data global)"; }
wait_for seen_99
ok $? "after a 409 the patch is written again and lands"
# (only the operator's requests: the test's own reads carry curl's User-Agent)
like "$(fk GET /fake/requests | python3 -c 'import json,sys
print(" ".join(r["method"] + str(r["status"]) for r in json.load(sys.stdin)["requests"]
               if r["path"] == "/api/v1/namespaces/ao/configmaps/addon-operator" and r["agent"].startswith("addon-operator/")))')" \
        "^PATCH409 GET200 PATCH200$" "the conflict is answered by reading the ConfigMap again, then one more patch"

# ---- a user's edit of the same section lands while a hook's patch waits to be written -----------
# The operator's writes fail; a hook patches the global section; a user edits that section; then
# the writes succeed. The patch is applied on top of the user's edit: neither is lost (the
# operator used to send the section as its patch had made it, overwriting the edit).
fk DELETE /fake/requests >/dev/null
fk POST /fake/faults '{"method":"PATCH","path":"/namespaces/ao/configmaps/addon-operator$","agent":"^addon-operator/","action":"status","status":500,"count":-1}' >/dev/null
fk POST /fake/objects '{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ev-98","namespace":"events"}}' >/dev/null
patch_failed() {
        [ "$(fk GET /fake/requests | python3 -c 'import json,sys
print(sum(1 for r in json.load(sys.stdin)["requests"] if r["method"] == "PATCH" and r["status"] == 500))')" -gt 0 ]
}
wait_for patch_failed
ok $? "the operator's write of the hook's patch fails"
user_global=$(printf '%s\nuserEdit: kept' "$(cm_data global)")
kpatch "$(python3 -c 'import json,sys; print(json.dumps({"data": {"global": sys.argv[1]}}))' "$user_global")"
fk DELETE /fake/faults >/dev/null
both_there() {
        local g
        g=$(cm_data global)
        grep -q '^seen_ev_98: true$' <<<"$g" && grep -q '^userEdit: kept$' <<<"$g" && grep -q '^seen_ev_05: true$' <<<"$g"
}
wait_for both_there
landed=$?
ok $landed "the hook's patch lands on top of the user's edit of the same section: both, and the earlier patches, are in the ConfigMap"
[ $landed -eq 0 ] || echo "# global: $(cm_data global | tr '\n' ' ')"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

# ---- a missing ConfigMap -------------------------------------------------------------------------
curl -sf -X DELETE "$api$cm_path" >/dev/null
printf 'kmodEnabled: true\n' >"$work/modules/values.yaml"
start
op_wait_for "module 'kmod' is up to date"
ok $? "without the ConfigMap the operator starts with an empty config"
like "$OP_LOG" 'ConfigMap ao/addon-operator does not exist: empty config' "and says so"
wait_for curl -sf "$api$cm_path" -o /dev/null
is "$(cm_data global)" 'fromHook: "yes"' "the first config patch creates it"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "second run: a clean stop"

done_testing
