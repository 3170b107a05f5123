#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Object patches (KUBERNETES_PATCH_PATH) against the fake API server: every operation, the
# results read back from the server, a missing object ignored on request, and a failed
# operation failing the hook with the operation and object named.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-kube-patch.XXXXXX)
fk_start
cm() { # cm NAME DATA-JSON: a ConfigMap in namespace p
        fk POST /fake/objects "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"p\"},\"data\":$2}" >/dev/null
}
data_of() { # data_of NAME: the ConfigMap's data as canonical JSON, or "gone"
        local body
        body=$(curl -s -w '\n%{http_code}' "$api/api/v1/namespaces/p/configmaps/$1")
        [ "${body##*$'\n'}" = 404 ] && { echo gone; return; }
        printf '%s' "${body%$'\n'*}" | python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin).get("data"), sort_keys=True, separators=(",", ":")))'
}

cm upd '{"v":"1"}'
fk POST /fake/objects '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}' >/dev/null
cm doomed '{}'
cm doomed2 '{}'

mkdir -p "$work/global/hooks" "$work/modules"
cat >"$work/global/hooks/patcher.sh" <<'EOF'
#!/bin/sh
if [ "$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
cat >"$KUBERNETES_PATCH_PATH" <<'OPS'
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"created","namespace":"p"},"data":{"a":"1"}}}
{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"created","namespace":"p"},"data":{"b":"2"}}}
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"upd","namespace":"p"},"data":{"v":"2"}}}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"p","name":"created","mergePatch":{"data":{"m":"x"}}}
{"operation":"JSONPatch","kind":"ConfigMap","namespace":"p","name":"created","jsonPatch":[{"op":"add","path":"/data/j","value":"y"}]}
{"operation":"JQPatch","kind":"ConfigMap","namespace":"p","name":"created","jqFilter":".data.q = \"z\""}
{"operation":"Delete","kind":"ConfigMap","namespace":"p","name":"doomed"}
{"operation":"DeleteInBackground","apiVersion":"v1","kind":"cm","namespace":"p","name":"doomed2"}
{"operation":"DeleteNonCascading","kind":"ConfigMap","namespace":"p","name":"never-existed"}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"p","name":"nothere","ignoreMissingObject":true,"mergePatch":{"data":{"x":"1"}}}
{"operation":"MergePatch","kind":"Pod","namespace":"p","name":"web","subresource":"status","mergePatch":{"status":{"phase":"Running"}}}
OPS
EOF
# The second hook's first run writes an operation that cannot succeed, and a values patch that a
# failed run must not leave behind; its retry writes none.
cat >"$work/global/hooks/second.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":2}'; exit 0; fi
[ -e "$work/second-ran" ] && exit 0
touch "$work/second-ran"
echo '[{"op":"add","path":"/global/fromSecond","value":1}]' >"\$VALUES_JSON_PATCH_PATH"
echo '{"operation":"MergePatch","kind":"ConfigMap","namespace":"p","name":"nothere","mergePatch":{"data":{"x":"1"}}}' >"\$KUBERNETES_PATCH_PATH"
EOF
# The third hook's first run names a kind the API server does not have, beside an operation that
# would work: the run fails before anything is sent or stored.
cat >"$work/global/hooks/third.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":3}'; exit 0; fi
[ -e "$work/third-ran" ] && exit 0
touch "$work/third-ran"
echo '[{"op":"add","path":"/global/fromThird","value":1}]' >"\$VALUES_JSON_PATCH_PATH"
cat >"\$KUBERNETES_PATCH_PATH" <<'OPS'
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"third","namespace":"p"},"data":{"t":"1"}}}
{"operation":"Create","object":{"apiVersion":"example.com/v1","kind":"NoSuchKind","metadata":{"name":"x","namespace":"p"}}}
OPS
EOF
chmod +x "$work/global/hooks/"*.sh

op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" KUBE_SERVER="$api" GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" \
        ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" \
        ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 DEBUG_UNIX_SOCKET="$work/debug.socket" -- start
op_wait_for "hook 'hooks/patcher.sh' succeeded"
ok $? "the hook succeeds once every operation is applied"
is "$(data_of created)" '{"a":"1","j":"y","m":"x","q":"z"}' \
        "Create, then CreateIfNotExists left it alone, MergePatch, JSONPatch and JQPatch changed it"
is "$(data_of upd)" '{"v":"2"}' "CreateOrUpdate replaced an existing object"
is "$(data_of doomed)" gone "Delete removed its object (and waited for it to go)"
is "$(data_of doomed2)" gone "DeleteInBackground, with the kind given by its short name"
is "$(data_of nothere)" gone "ignoreMissingObject: a patch of a missing object is not an error"
is "$(curl -sf "$api/api/v1/namespaces/p/pods/web" | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"]["phase"])')" Running \
        "subresource: status goes to the status subresource"
# (the log escapes the quotes of the server's message)
op_wait_for 'hook .hooks/second.sh.: object patches: MergePatch ConfigMap p/nothere: HTTP 404: configmaps .?"nothere.?" not found'
ok $? "a failed operation fails the hook, naming the operation, the object and the server's answer"
op_wait_for 'hook .hooks/third.sh.: object patches: Create NoSuchKind p/x: '
ok $? "an operation of a kind the API server does not have fails the run, naming it"
op_wait_for "first converge done"
ok $? "the retried hooks succeed and the operator goes on"
is "$(DEBUG_UNIX_SOCKET="$work/debug.socket" "$AO_BINARY" global values -o json |
        python3 -c 'import json,sys; g=json.load(sys.stdin); print(sorted(k for k in g if k.startswith("from")))')" \
        "[]" "the values patches of the failed runs were not applied"
is "$(data_of third)" gone "nothing of the run with the unknown kind went to the cluster"
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' | tail -1)
like "$(curl -sf "http://127.0.0.1:$port/metrics")" \
        'addon_operator_kubernetes_client_request_result_total\{component="object_patcher",code="404",method="PATCH",host="http://127.0.0.1:[0-9]+"\} 2' \
        "the patcher's requests are counted as component object_patcher (two PATCHes met a 404)"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

done_testing
