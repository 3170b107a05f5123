#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# cluster.sh COMMAND WORKDIR: a throwaway Kubernetes control plane for the tests: Debian's etcd plus
# a real kube-apiserver v1.20 (from get-apiserver.sh), both on 127.0.0.1, random free ports.
#
#   start WORKDIR              start etcd and kube-apiserver, wait for /readyz, create namespace "ao"
#   stop WORKDIR               kill both, remove the etcd data and the keys (logs and env stay)
#   restart-apiserver WORKDIR  SIGKILL kube-apiserver, start it again on the same port, wait for /readyz
#   compact WORKDIR            compact etcd to its current revision (printed on stdout)
#   stop-apiserver WORKDIR     SIGKILL kube-apiserver and leave it down (an outage)
#   start-apiserver WORKDIR    start it again on the same port (after stop-apiserver), wait for /readyz
#   pause-apiserver WORKDIR    SIGSTOP kube-apiserver: its connections stay open and carry nothing
#   resume-apiserver WORKDIR   SIGCONT it
#   restart-etcd WORKDIR       SIGKILL etcd, start it again on the same data and ports, wait for /health
#   start-apiserver2 WORKDIR   a second kube-apiserver on the same etcd, its own port (API2 in env)
#   stop-apiserver2 WORKDIR    stop the second one
#
# `start` writes into WORKDIR:
#   env                   shell-sourceable: API, CA, ADMIN_TOKEN, OPERATOR_TOKEN, ETCD_ENDPOINT,
#                         APISERVER_PID, ETCD_PID, APISERVER_PORT, KUBECONFIG_ADMIN, KUBECONFIG_OPERATOR,
#                         CONTROLLER_MANAGER_PID; API2, APISERVER2_PORT, APISERVER2_PID once started
#   kubeconfig-admin      user "admin", group system:masters
#   kubeconfig-operator   user system:serviceaccount:ao:addon-operator (groups system:serviceaccounts,
#                         system:serviceaccounts:ao); no RBAC is granted to it here
#   pki/                  CA, serving cert (127.0.0.1, localhost), service-account key pair, token file
#   etcd.log apiserver.log apiserver2.log controller-manager.log cluster.log
# A kube-controller-manager of the same version runs the garbage collector and the namespace
# controller, as in any real cluster: foreground deletes and namespace deletion complete. There is
# no scheduler and no other controller: pods stay pending, nothing else reconciles.
#
# Environment: AO_APISERVER (a kube-apiserver binary; default: get-apiserver.sh's),
# AO_APISERVER_CACHE (get-apiserver.sh's CACHE_DIR), AO_CLUSTER_TIMEOUT (readiness timeout, s, default 60),
# AO_APISERVER_FLAGS (extra kube-apiserver flags, whitespace-separated, e.g. --watch-cache=false).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
timeout=${AO_CLUSTER_TIMEOUT:-60}

die() {
        echo "cluster.sh: $*" >&2
        [ -n "${W:-}" ] && [ -d "$W" ] && echo "cluster.sh: $*" >>"$W/cluster.log"
        exit 1
}
say() {
        echo "cluster.sh: $*" >&2
        [ -n "${W:-}" ] && [ -d "$W" ] && echo "$(date +%T) $*" >>"$W/cluster.log"
        return 0
}

usage() {
        echo "usage: cluster.sh start|stop|restart-apiserver|compact|stop-apiserver|start-apiserver|pause-apiserver|resume-apiserver|restart-etcd|start-apiserver2|stop-apiserver2 WORKDIR" >&2
        exit 2
}

# alive PID: the process exists and is not a zombie.
alive() {
        local state
        state=$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null) || return 1
        [ -n "$state" ] && [ "$state" != Z ] && [ "$state" != X ]
}

# ours PID [PROGRAM]: alive and started for this WORKDIR (its command line names WORKDIR), so a
# recycled PID is never signalled; with PROGRAM, also running that program (its argv[0]'s name
# starts with PROGRAM). PIDs are recycled quickly where pid_max is 32768 and a test suite spawns
# thousands of hooks: the PID of a stopped kube-apiserver may already be a new etcd's, or a
# kubectl's of this WORKDIR.
ours() {
        [ -n "$1" ] && alive "$1" || return 1
        local argv
        argv=$(tr '\0' '\n' <"/proc/$1/cmdline" 2>/dev/null) || return 1
        grep -qF -- "$W/" <<<"$argv" || return 1
        [ -z "${2:-}" ] && return 0
        local argv0
        argv0=$(head -n 1 <<<"$argv")
        case ${argv0##*/} in
        "$2"*) return 0 ;;
        *) return 1 ;;
        esac
}

# kill_wait PID SIGNAL [PROGRAM]: send SIGNAL, then SIGKILL after 10 s; return once the process
# is gone (or its PID is another process's already: see ours).
kill_wait() {
        local pid=$1 sig=$2 prog=${3:-} deadline=$((SECONDS + 10))
        ours "$pid" "$prog" || return 0
        kill -"$sig" "$pid" 2>/dev/null || true
        while ours "$pid" "$prog"; do
                if [ "$SECONDS" -ge "$deadline" ] && [ "$sig" != KILL ]; then
                        kill -KILL "$pid" 2>/dev/null || true
                        sig=KILL
                fi
                sleep 0.05
        done
        # Reap it if it is our own child (a failed start), which also keeps bash from reporting it.
        wait "$pid" 2>/dev/null || true
}

# A polling interval, not a wait for readiness: each probe has its own short timeout.
poll_pause() {
        sleep 0.1
}

# apt_install PACKAGE...: install missing Debian packages (root only), without starting their
# services: etcd-server's postinst would otherwise launch a system etcd on the default ports.
apt_install() {
        local missing=() p policy=/usr/sbin/policy-rc.d ours_policy=0
        for p in "$@"; do
                dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
        done
        [ ${#missing[@]} -eq 0 ] && return 0
        [ "$(id -u)" -eq 0 ] || die "missing Debian packages ${missing[*]} (apt-get install ${missing[*]}, as root)"
        say "installing ${missing[*]}"
        if [ ! -e "$policy" ]; then
                printf '#!/bin/sh\n# cluster.sh: no service starts during this install\nexit 101\n' >"$policy"
                chmod 0755 "$policy"
                ours_policy=1
        fi
        export DEBIAN_FRONTEND=noninteractive
        local rc=0
        # A machine whose package lists were never fetched finds nothing: update, then try again.
        apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" >>"$W/apt.log" 2>&1 ||
                { apt-get update -qq -o DPkg::Lock::Timeout=600 >>"$W/apt.log" 2>&1 &&
                        apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" \
                                >>"$W/apt.log" 2>&1; } ||
                rc=$?
        if [ "$ours_policy" -eq 1 ] && grep -q '^# cluster.sh:' "$policy" 2>/dev/null; then
                rm -f "$policy"
        fi
        [ "$rc" -eq 0 ] || {
                tail -n 20 "$W/apt.log" >&2
                die "'apt-get install ${missing[*]}' failed (log: $W/apt.log)"
        }
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, one a line, taken below the kernel's
# ephemeral range. A port in that range can become the source port of any outgoing connection
# (even of a connect() to that very port, which then connects to itself) while kube-apiserver is
# down for restart-apiserver, and its restart then fails with "address already in use". The
# ports are released before use, so another process could still bind one in between: unlikely,
# and the daemon then fails at once with that message in its log.
free_ports() {
        python3 - "$1" <<'EOF'
import random, socket, sys
with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
    ephemeral_low = int(f.read().split()[0])
low, high = 10000, max(10001, ephemeral_low)
socks, wanted = [], int(sys.argv[1])
for port in random.sample(range(low, high), min(2000, high - low)):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
    except OSError:
        s.close()
        continue
    socks.append(s)
    if len(socks) == wanted:
        break
for s in socks:
    print(s.getsockname()[1])
EOF
}

# log_tail FILE: the end of a daemon's log, for error messages.
log_tail() {
        echo "--- last lines of $1:" >&2
        tail -n 25 "$1" >&2 || true
}

# readyz [URL]: 0 if the kube-apiserver at URL (default: the first) answers /readyz with "ok".
readyz() {
        [ "$(curl -s --max-time 2 --cacert "$CA" -H "Authorization: Bearer $ADMIN_TOKEN" \
                "${1:-$API}/readyz" 2>/dev/null)" = ok ]
}

# start_apiserver: run kube-apiserver with the flags saved in WORKDIR/apiserver.args; sets APISERVER_PID.
start_apiserver() {
        APISERVER_PID=$(start_apiserver_on "$APISERVER_PORT" apiserver.log)
}

# start_apiserver_on PORT LOG: a kube-apiserver with the saved flags on PORT, logging to WORKDIR/LOG;
# prints its pid. Every instance shares etcd, keys and tokens: one cluster, several API servers.
start_apiserver_on() {
        local bin args=()
        bin=$(cat "$W/apiserver.bin")
        mapfile -t args <"$W/apiserver.args"
        echo "=== $(date +%T) starting $bin on port $1" >>"$W/$2"
        "$bin" "${args[@]}" "--secure-port=$1" </dev/null >>"$W/$2" 2>&1 &
        echo $!
}

# wait_apiserver [URL PID LOG]: poll URL/readyz (default: the first API server) until ok or the timeout.
wait_apiserver() {
        local url=${1:-$API} pid=${2:-$APISERVER_PID} log=${3:-$W/apiserver.log}
        local deadline=$((SECONDS + timeout))
        until readyz "$url"; do
                if ! alive "$pid"; then
                        log_tail "$log"
                        die "kube-apiserver (pid $pid) exited before it was ready"
                fi
                if [ "$SECONDS" -ge "$deadline" ]; then
                        log_tail "$log"
                        die "kube-apiserver at $url did not answer /readyz with ok within ${timeout} s"
                fi
                poll_pause
        done
}

# start_etcd: etcd with the flags saved in WORKDIR/etcd.args; sets ETCD_PID.
start_etcd() {
        local bin args=()
        bin=$(cat "$W/etcd.bin")
        mapfile -t args <"$W/etcd.args"
        echo "=== $(date +%T) starting $bin" >>"$W/etcd.log"
        "$bin" "${args[@]}" </dev/null >>"$W/etcd.log" 2>&1 &
        ETCD_PID=$!
}

# etcd_healthy: 0 if etcd answers /health with "health":"true".
etcd_healthy() {
        [[ "$(curl -s --max-time 1 "$ETCD_ENDPOINT/health" 2>/dev/null)" == *'"health":"true"'* ]]
}

wait_etcd() {
        local deadline=$((SECONDS + timeout))
        until etcd_healthy; do
                alive "$ETCD_PID" || {
                        log_tail "$W/etcd.log"
                        die "etcd (pid $ETCD_PID) exited before it was healthy"
                }
                [ "$SECONDS" -lt "$deadline" ] || {
                        log_tail "$W/etcd.log"
                        die "etcd was not healthy within ${timeout} s"
                }
                poll_pause
        done
}

# start_controller_manager: kube-controller-manager with the garbage collector and the namespace
# controller, talking to the first API server as admin; waits until both controllers started.
# No serving ports (--port=0 --secure-port=0), no leader election: one instance, nothing to probe.
start_controller_manager() {
        local bin
        if [ -n "${AO_CONTROLLER_MANAGER:-}" ]; then
                bin=$AO_CONTROLLER_MANAGER
        else
                bin=$("$here/get-apiserver.sh" --controller-manager ${AO_APISERVER_CACHE:+"$AO_APISERVER_CACHE"}) ||
                        die "get-apiserver.sh could not provide a kube-controller-manager"
        fi
        echo "=== $(date +%T) starting $bin" >>"$W/controller-manager.log"
        "$bin" "--kubeconfig=$KUBECONFIG_ADMIN" --controllers=garbagecollector,namespace --leader-elect=false \
                --port=0 --secure-port=0 --use-service-account-credentials=false \
                </dev/null >>"$W/controller-manager.log" 2>&1 &
        CONTROLLER_MANAGER_PID=$!
        write_env
        local deadline=$((SECONDS + timeout)) started
        while :; do
                started=$(grep -cE 'Started "(garbagecollector|namespace)"' "$W/controller-manager.log" || true)
                [ "${started:-0}" -ge 2 ] && break
                alive "$CONTROLLER_MANAGER_PID" || {
                        log_tail "$W/controller-manager.log"
                        die "kube-controller-manager (pid $CONTROLLER_MANAGER_PID) exited before its controllers started"
                }
                [ "$SECONDS" -lt "$deadline" ] || {
                        log_tail "$W/controller-manager.log"
                        die "kube-controller-manager did not start its controllers within ${timeout} s"
                }
                poll_pause
        done
        say "kube-controller-manager runs the garbage collector and the namespace controller (pid $CONTROLLER_MANAGER_PID)"
}

# write_env: WORKDIR/env from the current variables (atomically).
write_env() {
        local v
        {
                echo "# written by tests/cluster/cluster.sh; source it"
                for v in API APISERVER_PORT CA ADMIN_TOKEN OPERATOR_TOKEN ETCD_ENDPOINT APISERVER_PID ETCD_PID \
                        KUBECONFIG_ADMIN KUBECONFIG_OPERATOR CLUSTER_WORKDIR CONTROLLER_MANAGER_PID API2 \
                        APISERVER2_PORT APISERVER2_PID; do
                        printf '%s=%q\n' "$v" "${!v}"
                done
        } >"$W/env.tmp"
        mv -f "$W/env.tmp" "$W/env"
}

load_env() {
        [ -f "$W/env" ] || die "no '$W/env': is a cluster started in '$W'?"
        # shellcheck disable=SC1091
        . "$W/env"
}

# kubeconfig FILE USER TOKEN
write_kubeconfig() {
        local ca_data
        ca_data=$(base64 -w0 <"$CA")
        cat >"$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: ao-test
  cluster:
    server: $API
    certificate-authority-data: $ca_data
users:
- name: $2
  user:
    token: $3
contexts:
- name: $2@ao-test
  context:
    cluster: ao-test
    user: $2
current-context: $2@ao-test
EOF
        chmod 0600 "$1"
}

make_pki() {
        local pki=$W/pki
        mkdir -p "$pki"
        chmod 0700 "$pki"
        (
                cd "$pki"
                # ECDSA keys: generated in milliseconds, unlike RSA; Go, curl and kubectl all take them.
                openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout ca.key -out ca.crt \
                        -days 3650 -subj "/CN=addon-operator-test-ca" \
                        -addext "basicConstraints=critical,CA:TRUE" \
                        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature"
                openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout apiserver.key \
                        -out apiserver.csr -subj "/CN=kube-apiserver"
                # Go (1.15 and later) ignores the CN: the SANs are what clients check.
                printf '%s\n' "basicConstraints=critical,CA:FALSE" \
                        "keyUsage=critical,digitalSignature,keyEncipherment" \
                        "extendedKeyUsage=serverAuth" \
                        "subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.0.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc" \
                        >apiserver.ext
                openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -set_serial "0x$(openssl rand -hex 8)" \
                        -days 3650 -extfile apiserver.ext -out apiserver.crt
                # The service-account key pair: RSA, the key type every Kubernetes version signs with.
                openssl genpkey -quiet -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key
                openssl pkey -in sa.key -pubout -out sa.pub
                rm -f apiserver.csr apiserver.ext
        ) >>"$W/cluster.log" 2>&1 || die "openssl failed to make the keys and certificates (see $W/cluster.log)"
        CA=$pki/ca.crt
        ADMIN_TOKEN=$(openssl rand -hex 24)
        OPERATOR_TOKEN=$(openssl rand -hex 24)
        # token,user,uid,"group1,group2"
        {
                echo "$ADMIN_TOKEN,admin,admin,\"system:masters\""
                echo "$OPERATOR_TOKEN,system:serviceaccount:ao:addon-operator,ao-addon-operator,\"system:serviceaccounts,system:serviceaccounts:ao\""
        } >"$pki/tokens.csv"
        chmod 0600 "$pki/tokens.csv"
}

start_failed() {
        [ "$1" -eq 0 ] && return 0
        kill_wait "$CONTROLLER_MANAGER_PID" KILL kube-controller-manager
        kill_wait "$APISERVER_PID" KILL kube-apiserver
        kill_wait "$ETCD_PID" KILL etcd
        rm -rf "$W/etcd-data"
        echo "cluster.sh: start failed; logs are in $W" >&2
}

cmd_start() {
        local etcd_bin apiserver_bin ports etcd_peer_port etcd_flags=()
        mkdir -p "$W"
        W=$(cd "$W" && pwd)
        if [ -f "$W/env" ]; then
                # shellcheck disable=SC1091
                . "$W/env"
                if ours "${APISERVER_PID:-}" kube-apiserver || ours "${ETCD_PID:-}" etcd; then
                        die "a cluster is already running in '$W' (cluster.sh stop '$W' first)"
                fi
        fi
        local t0=$SECONDS
        : >"$W/cluster.log"
        APISERVER_PID=
        ETCD_PID=
        CONTROLLER_MANAGER_PID=
        API2=
        APISERVER2_PORT=
        APISERVER2_PID=
        # A start that fails half-way leaves nothing running.
        trap 'start_failed $?' EXIT
        for c in curl openssl python3 base64 flock; do
                command -v "$c" >/dev/null 2>&1 || die "'$c' is not installed"
        done
        command -v etcd >/dev/null 2>&1 && command -v etcdctl >/dev/null 2>&1 || apt_install etcd-server etcd-client
        etcd_bin=$(command -v etcd) || die "no etcd in PATH after installing etcd-server"

        if [ -n "${AO_APISERVER:-}" ]; then
                apiserver_bin=$AO_APISERVER
        else
                apiserver_bin=$("$here/get-apiserver.sh" ${AO_APISERVER_CACHE:+"$AO_APISERVER_CACHE"}) ||
                        die "get-apiserver.sh could not provide a kube-apiserver"
        fi
        [ -x "$apiserver_bin" ] || die "'$apiserver_bin' is not an executable kube-apiserver"

        make_pki
        mapfile -t ports < <(free_ports 3)
        [ ${#ports[@]} -eq 3 ] || die "could not find free ports"
        ETCD_ENDPOINT=http://127.0.0.1:${ports[0]}
        etcd_peer_port=${ports[1]}
        APISERVER_PORT=${ports[2]}
        API=https://127.0.0.1:$APISERVER_PORT
        KUBECONFIG_ADMIN=$W/kubeconfig-admin
        KUBECONFIG_OPERATOR=$W/kubeconfig-operator
        # shellcheck disable=SC2034 # written by write_env
        CLUSTER_WORKDIR=$W

        rm -rf "$W/etcd-data"
        mkdir -m 0700 "$W/etcd-data"
        # Test data need no durability: skip fsync where this etcd has the flag (3.4.14 and later).
        if [[ "$("$etcd_bin" --help 2>&1)" == *--unsafe-no-fsync* ]]; then
                etcd_flags+=(--unsafe-no-fsync)
        fi
        echo "$etcd_bin" >"$W/etcd.bin"
        printf '%s\n' --name ao-test --data-dir "$W/etcd-data" \
                --listen-client-urls "$ETCD_ENDPOINT" --advertise-client-urls "$ETCD_ENDPOINT" \
                --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
                --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
                --initial-cluster "ao-test=http://127.0.0.1:$etcd_peer_port" --initial-cluster-state new \
                --logger zap --log-outputs stderr "${etcd_flags[@]}" >"$W/etcd.args"
        start_etcd
        write_env
        wait_etcd
        say "etcd is up at $ETCD_ENDPOINT (pid $ETCD_PID)"

        echo "$apiserver_bin" >"$W/apiserver.bin"
        # No controller-manager runs, so nothing would create the "default" service accounts that
        # the ServiceAccount admission plugin insists on; --insecure-port=0: 1.20 still opens one.
        # --endpoint-reconciler-type=none: the default one writes 127.0.0.1 into the "kubernetes"
        # Endpoints, which validation refuses (loopback), logging an error and writing to etcd
        # every 10 s; the Service itself is still created.
        printf '%s\n' \
                --advertise-address=127.0.0.1 \
                --bind-address=127.0.0.1 \
                --insecure-port=0 \
                "--etcd-servers=$ETCD_ENDPOINT" \
                "--cert-dir=$W/pki" \
                "--tls-cert-file=$W/pki/apiserver.crt" \
                "--tls-private-key-file=$W/pki/apiserver.key" \
                "--client-ca-file=$W/pki/ca.crt" \
                "--token-auth-file=$W/pki/tokens.csv" \
                "--service-account-key-file=$W/pki/sa.pub" \
                "--service-account-signing-key-file=$W/pki/sa.key" \
                --service-account-issuer=https://kubernetes.default.svc \
                --authorization-mode=Node,RBAC \
                --enable-admission-plugins=NamespaceLifecycle \
                --disable-admission-plugins=ServiceAccount \
                --service-cluster-ip-range=10.0.0.0/24 \
                --allow-privileged=true \
                --profiling=false \
                --endpoint-reconciler-type=none \
                >"$W/apiserver.args"
        if [ -n "${AO_APISERVER_FLAGS:-}" ]; then
                # shellcheck disable=SC2086 # whitespace-separated on purpose
                printf '%s\n' $AO_APISERVER_FLAGS >>"$W/apiserver.args"
        fi
        start_apiserver
        write_env
        write_kubeconfig "$KUBECONFIG_ADMIN" admin "$ADMIN_TOKEN"
        write_kubeconfig "$KUBECONFIG_OPERATOR" addon-operator "$OPERATOR_TOKEN"
        wait_apiserver
        say "kube-apiserver is ready at $API (pid $APISERVER_PID)"
        if [ -z "${AO_NO_CONTROLLER_MANAGER:-}" ]; then
                start_controller_manager
        fi

        local code
        code=$(curl -s --max-time 10 -o "$W/ns-ao.json" -w '%{http_code}' --cacert "$CA" \
                -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' -X POST \
                -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ao"}}' "$API/api/v1/namespaces") || true
        case $code in
        201 | 409) ;;
        *) die "creating namespace ao failed with HTTP '$code': $(head -c 400 "$W/ns-ao.json" 2>/dev/null)" ;;
        esac
        rm -f "$W/ns-ao.json"
        trap - EXIT
        say "cluster started in $((SECONDS - t0)) s; source $W/env"
}

cmd_stop() {
        [ -d "$W" ] || return 0
        W=$(cd "$W" && pwd)
        if [ -f "$W/env" ]; then
                # shellcheck disable=SC1091
                . "$W/env"
                kill -CONT "${APISERVER_PID:-0}" 2>/dev/null || true # a paused one cannot die of TERM
                kill_wait "${CONTROLLER_MANAGER_PID:-}" TERM kube-controller-manager
                kill_wait "${APISERVER2_PID:-}" TERM kube-apiserver
                kill_wait "${APISERVER_PID:-}" TERM kube-apiserver
                kill_wait "${ETCD_PID:-}" TERM etcd
        fi
        rm -rf "$W/etcd-data" "$W/pki"
        say "stopped"
}

cmd_restart_apiserver() {
        W=$(cd "$W" && pwd)
        load_env
        [ -f "$W/apiserver.args" ] && [ -f "$W/apiserver.bin" ] || die "no saved kube-apiserver flags in '$W'"
        ours "$ETCD_PID" etcd || die "etcd (pid $ETCD_PID) is not running"
        local t0=$SECONDS
        kill_wait "$APISERVER_PID" KILL kube-apiserver
        start_apiserver_rebinding
        write_env
        wait_apiserver
        say "kube-apiserver restarted (pid $APISERVER_PID) in $((SECONDS - t0)) s"
}

# start_rebinding START READY LOG PIDVAR: run START (which starts a daemon logging to LOG and sets
# the variable PIDVAR to its pid) until READY succeeds. A killed daemon's connections can keep its
# port bound for a moment after its death (seen under load in CI: "bind: address already in use",
# for kube-apiserver started again on its port); a start that fails that way is retried until the
# timeout.
start_rebinding() {
        local start=$1 ready=$2 log=$3 pidvar=$4 deadline=$((SECONDS + timeout)) lines pid
        while :; do
                lines=$(wc -l <"$log")
                "$start"
                pid=${!pidvar}
                while alive "$pid" && ! "$ready" && [ "$SECONDS" -lt "$deadline" ]; do
                        log_has_since "$log" "$lines" "address already in use" && break
                        poll_pause
                done
                alive "$pid" && ! log_has_since "$log" "$lines" "address already in use" && return 0
                # Not always a child of this shell (start_apiserver_on runs in a command substitution):
                # kill_wait signals and waits without bash's wait, which would fail under set -e.
                kill_wait "$pid" KILL
                [ "$SECONDS" -lt "$deadline" ] || {
                        log_tail "$log"
                        die "$start: the port stayed in use for ${timeout} s"
                }
                poll_pause
        done
}

start_apiserver_rebinding() {
        start_rebinding start_apiserver readyz "$W/apiserver.log" APISERVER_PID
}

# log_has_since FILE LINES TEXT: 0 if TEXT occurs in FILE after its first LINES lines. One awk
# reads the whole file: a pipe into grep -q could end the writer with SIGPIPE, which pipefail
# turns into a failure even though the text was found.
log_has_since() {
        awk -v from="$2" -v text="$3" 'NR > from && index($0, text) { found = 1 } END { exit !found }' "$1"
}

# load_running: the env of a started cluster, with its saved flags.
load_running() {
        W=$(cd "$W" && pwd)
        load_env
        [ -f "$W/apiserver.args" ] && [ -f "$W/apiserver.bin" ] || die "no saved kube-apiserver flags in '$W'"
}

cmd_stop_apiserver() {
        load_running
        kill -CONT "$APISERVER_PID" 2>/dev/null || true
        kill_wait "$APISERVER_PID" KILL kube-apiserver
        say "kube-apiserver stopped (pid $APISERVER_PID)"
}

cmd_start_apiserver() {
        load_running
        ours "$APISERVER_PID" kube-apiserver && die "kube-apiserver (pid $APISERVER_PID) is running"
        local t0=$SECONDS
        start_apiserver_rebinding
        write_env
        wait_apiserver
        say "kube-apiserver started again (pid $APISERVER_PID) in $((SECONDS - t0)) s"
}

cmd_pause_apiserver() {
        load_running
        ours "$APISERVER_PID" kube-apiserver || die "kube-apiserver (pid $APISERVER_PID) is not running"
        kill -STOP "$APISERVER_PID"
        say "kube-apiserver paused (SIGSTOP, pid $APISERVER_PID)"
}

cmd_resume_apiserver() {
        load_running
        kill -CONT "$APISERVER_PID" 2>/dev/null || die "kube-apiserver (pid $APISERVER_PID) is not running"
        say "kube-apiserver resumed (SIGCONT, pid $APISERVER_PID)"
}

cmd_restart_etcd() {
        load_running
        [ -f "$W/etcd.args" ] && [ -f "$W/etcd.bin" ] || die "no saved etcd flags in '$W'"
        local t0=$SECONDS
        kill_wait "$ETCD_PID" KILL etcd
        # A restart joins the cluster it made, with its data: never "new" again.
        sed -i 's/^new$/existing/' "$W/etcd.args"
        start_rebinding start_etcd etcd_healthy "$W/etcd.log" ETCD_PID
        write_env
        wait_etcd
        say "etcd restarted (pid $ETCD_PID) in $((SECONDS - t0)) s"
}

cmd_start_apiserver2() {
        load_running
        ours "${APISERVER2_PID:-}" kube-apiserver && die "a second kube-apiserver (pid $APISERVER2_PID) is running"
        [ -n "${APISERVER2_PORT:-}" ] || APISERVER2_PORT=$(free_ports 1)
        API2=https://127.0.0.1:$APISERVER2_PORT
        APISERVER2_PID=$(start_apiserver_on "$APISERVER2_PORT" apiserver2.log)
        write_env
        wait_apiserver "$API2" "$APISERVER2_PID" "$W/apiserver2.log"
        say "a second kube-apiserver is ready at $API2 (pid $APISERVER2_PID)"
}

cmd_stop_apiserver2() {
        load_running
        kill_wait "${APISERVER2_PID:-}" TERM kube-apiserver
        say "the second kube-apiserver stopped"
}

cmd_compact() {
        W=$(cd "$W" && pwd)
        load_env
        command -v etcdctl >/dev/null 2>&1 || apt_install etcd-client
        local rev
        rev=$(ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINT" --command-timeout=10s endpoint status -w json |
                python3 -c 'import json, sys; print(json.load(sys.stdin)[0]["Status"]["header"]["revision"])') ||
                die "cannot read the etcd revision from $ETCD_ENDPOINT"
        ETCDCTL_API=3 etcdctl --endpoints="$ETCD_ENDPOINT" --command-timeout=10s compact "$rev" >>"$W/cluster.log" 2>&1 ||
                die "'etcdctl compact $rev' failed (see $W/cluster.log)"
        say "etcd compacted at revision $rev"
        echo "$rev"
}

[ $# -eq 2 ] || usage
W=$2
[ -n "$W" ] || usage
case $1 in
start) cmd_start ;;
stop) cmd_stop ;;
restart-apiserver) cmd_restart_apiserver ;;
compact) cmd_compact ;;
stop-apiserver) cmd_stop_apiserver ;;
start-apiserver) cmd_start_apiserver ;;
pause-apiserver) cmd_pause_apiserver ;;
resume-apiserver) cmd_resume_apiserver ;;
restart-etcd) cmd_restart_etcd ;;
start-apiserver2) cmd_start_apiserver2 ;;
stop-apiserver2) cmd_stop_apiserver2 ;;
*) usage ;;
esac
