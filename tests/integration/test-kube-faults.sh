#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A cluster configuration that leads nowhere, as docs/KUBERNETES.md ("Which cluster", "An API
# server that cannot be reached") says: KUBE_CONFIG naming a missing file stops the start with exit
# code 1; $KUBECONFIG naming only missing files means no cluster; an API server that refuses the
# connection, or whose certificate does not verify against the kubeconfig's certificate-authority,
# is named in an error with curl's reason and retried every 5 s while the probes answer; SIGTERM
# during that wait stops with exit code 0; and once the server answers, the start goes on and the
# hooks get their Synchronization.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-kube-faults.XXXXXX)
mkdir -p "$work/modules" "$work/global/hooks" "$work/logs"
cat >"$work/global/hooks/cms.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then
        echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","namespace":{"nameSelector":{"matchNames":["default"]}},"jqFilter":".metadata.name","keepFullObjectsInMemory":false}]}'
        exit 0
fi
cat "\$BINDING_CONTEXT_PATH" >>"$work/logs/cms"
EOF
chmod +x "$work/global/hooks/cms.sh"

kubeconfig() { # kubeconfig FILE SERVER [CLUSTER-YAML]: a kubeconfig for SERVER with more cluster keys
        cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "$2"${3:+, $3}}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u, namespace: default}}]
current-context: c
EOF
}
start() { # start [ENV...]
        op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" GLOBAL_HOOKS_DIR="$work/global" \
                MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" ADDON_OPERATOR_STATE_DIR="$work/state" \
                LOG_TYPE=json LOG_NO_TIME=true ADDON_OPERATOR_RETRY_DELAY_SCALE=0.1 "$@" -- start
}
http_port() { sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' <<<"$OP_LOG" | tail -1; }
# The HTTP server may log its port before or after the first error: wait_http before any probe (in
# this shell: op_wait_for keeps what it read in OP_LOG).
wait_http() { [ -n "$(http_port)" ] || op_wait_for '"msg":"http: listening on '; }
probe() { curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(http_port)$1"; }

# ---- KUBE_CONFIG naming a file that does not exist: exit code 1 ----------------------------------
start KUBE_CONFIG="$work/no-such-kubeconfig"
op_finish
is "$OP_CODE" 1 "missing KUBE_CONFIG file: exit code 1"
like "$OP_LOG" "\"level\":\"error\",\"msg\":\"start-up failed: cannot read '$work/no-such-kubeconfig': No such file or directory\"" \
        "missing KUBE_CONFIG file: the file and the reason named"

# ---- $KUBECONFIG naming only missing files: skipped as kubectl does, no cluster ----------------
start KUBECONFIG="$work/missing-1:$work/missing-2"
op_wait_for '"msg":"first converge done'
ok $? "missing \$KUBECONFIG files: the operator starts"
like "$OP_LOG" '"msg":"no Kubernetes cluster configured: kubernetes bindings are skipped"' \
        "missing \$KUBECONFIG files: no cluster, said so"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "missing \$KUBECONFIG files: a clean stop"

# ---- a server on a closed port: retried until it answers; nothing lost --------------------------
# The port of a fake API server just stopped: nothing listens there until the test starts it again.
fk_start
port=${api##*:}
kill -TERM "$fk_pid" && wait "$fk_pid"
rm -f "$work/fk.port"
kubeconfig "$work/closed" "http://127.0.0.1:$port"
start KUBE_CONFIG="$work/closed"
op_wait_for '"level":"error","msg":"Kubernetes API at '
ok $? "closed port: an error"
like "$(grep '"level":"error"' <<<"$OP_LOG" | head -1)" \
        "\"msg\":\"Kubernetes API at http://127.0.0.1:$port: discovery of v1: Failed to connect to 127.0.0.1 port $port after [0-9]+ ms: Couldn't connect to server; retrying in 0\\.5s\"" \
        "closed port: the server, the request and curl's reason named, and the retry announced"
ok "$(grep -q 'left out' <<<"$OP_LOG"; [ $? -ne 0 ]; echo $?)" \
        "closed port: no warning that resources are left out: the whole discovery failed"
wait_http
is "$(probe /healthz),$(probe /readyz)" "200,500" "closed port: meanwhile alive, not ready"
fk_start --port "$port"
op_wait_for "\"msg\":\"Kubernetes API at http://127.0.0.1:$port: [0-9]+ resources discovered\""
ok $? "closed port: once the server listens, the retry discovers its resources"
op_wait_for '"msg":"first converge done'
ok $? "closed port: the start-up completes"
is "$(cat "$work/logs/cms")" '[{"binding":"cms","objects":[],"type":"Synchronization"}]' \
        "closed port: the hook gets its Synchronization"
is "$(probe /readyz)" 200 "closed port: ready"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "closed port: a clean stop"

# ---- TLS: certificates that do not verify against the kubeconfig's certificate-authority --------
# ca: what the kubeconfig trusts; rogue: another CA. Server certificates: one from the rogue CA,
# one from ca but for another name, and a good one as the control.
tls=$work/tls
mkdir -p "$tls"
cert() { # cert NAME CA SAN: a P-256 key and a certificate for SAN signed by CA
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/$1.key" \
                -subj "/CN=$1" -out "$tls/$1.csr" 2>>"$tls/openssl.log" &&
                openssl x509 -req -in "$tls/$1.csr" -CA "$tls/$2.crt" -CAkey "$tls/$2.key" -CAcreateserial \
                        -days 1 -extfile <(printf 'subjectAltName=%s\n' "$3") -out "$tls/$1.crt" 2>>"$tls/openssl.log"
}
for ca in ca rogue; do
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$tls/$ca.key" \
                -subj "/CN=$ca" -days 1 -out "$tls/$ca.crt" 2>>"$tls/openssl.log"
done
cert untrusted rogue IP:127.0.0.1 && cert wrong-name ca DNS:elsewhere.example && cert good ca IP:127.0.0.1
ok $? "openssl made the certificates"

tls_case() { # tls_case CERT: fakekube over TLS with that certificate, the operator trusting ca.crt
        [ -n "$fk_pid" ] && kill -TERM "$fk_pid" && wait "$fk_pid"
        rm -f "$work/fk.port"
        fk_start --tls-cert "$tls/$1.crt" --tls-key "$tls/$1.key"
        api=https://127.0.0.1:${api##*:}
        kubeconfig "$work/tls-$1" "$api" "certificate-authority: $tls/ca.crt"
        start KUBE_CONFIG="$work/tls-$1"
}
for c in untrusted:"SSL certificate problem: unable to get local issuer certificate" \
        wrong-name:"SSL: no alternative certificate subject name matches target host name '127.0.0.1'"; do
        name=${c%%:*} reason=${c#*:}
        tls_case "$name"
        op_wait_for '"level":"error","msg":"Kubernetes API at '
        like "$(grep '"level":"error"' <<<"$OP_LOG" | head -1)" \
                "\"msg\":\"Kubernetes API at ${api//./\\.}: discovery of v1: ${reason//./\\.}; retrying in 0\\.5s\"" \
                "TLS, $name: the server and the verification failure named, the retry announced"
        wait_http
        is "$(probe /healthz)" 200 "TLS, $name: the operator stays up"
        ok "$(grep -q 'resources discovered' <<<"$OP_LOG"; [ $? -ne 0 ]; echo $?)" "TLS, $name: nothing was read from the server"
        kill -TERM "$OP_PID"
        op_finish
        is "$OP_CODE" 0 "TLS, $name: SIGTERM while waiting: exit code 0"
        like "$OP_LOG" '"msg":"stopped before the start-up finished: ' "TLS, $name: the stop says the start-up did not finish"
done
tls_case good
op_wait_for '"msg":"first converge done'
ok $? "TLS, the control: a certificate from the kubeconfig's CA for 127.0.0.1 works"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "TLS, the control: a clean stop"

done_testing
