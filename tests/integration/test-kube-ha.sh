#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Leader election (ADDON_OPERATOR_HA) with two operators against the fake API server: one leads
# and runs hooks, the other serves /metrics and /readyz and runs nothing; a leader killed with
# SIGKILL is replaced once its lease expires; a leader stopped with SIGTERM releases the lease and
# the follower takes over at once. Lease timings are scaled by ADDON_OPERATOR_RETRY_DELAY_SCALE
# (0.1: 3.5 s lease, 3 s renew deadline, 1 s retry period). A leader that cannot renew stops.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/fakekube.sh"

work=$(mktemp -d /tmp/test-kube-ha.XXXXXX)
fk_start
lease_path=/apis/coordination.k8s.io/v1/namespaces/ha/leases/addon-operator-leader-election

holder() {
        curl -sf "$api$lease_path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["spec"]["holderIdentity"])' 2>/dev/null
}
log_has() { grep -q -- "$2" "$work/$1.log"; } # log_has POD PATTERN
ran() { grep -qx "$1" "$work/runs" 2>/dev/null; } # ran POD: POD's operator ran the start-up hook

mkdir -p "$work/global/hooks" "$work/modules"
cat >"$work/global/hooks/startup.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
echo "\$ADDON_OPERATOR_POD" >>"$work/runs"
EOF
chmod +x "$work/global/hooks/startup.sh"

start() { # start POD: an operator in the background, its output in POD.log, its pid in pid_POD
        env -i PATH="$PATH" ADDON_OPERATOR_POD="$1" KUBE_SERVER="$api" ADDON_OPERATOR_HA=true \
                HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" \
                ADDON_OPERATOR_NAMESPACE=ha ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 ADDON_OPERATOR_LISTEN_PORT=0 \
                DEBUG_UNIX_SOCKET= GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" \
                ADDON_OPERATOR_TMP_DIR="$work/tmp-$1" ADDON_OPERATOR_STATE_DIR="$work/state-$1" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.1 \
                "$AO_BINARY" start >"$work/$1.log" 2>&1 &
        eval "pid_$1=$!"
        extra_pids+=("$!")
}
port_of() { sed -n 's/.*http: listening on [0-9.]*:\([0-9]*\).*/\1/p' "$work/$1.log" | tail -1; }

# ---- one leads, the other waits ------------------------------------------------------------------
start a
wait_for ran a
ok $? "the first operator takes the lease and runs its hooks"
is "$(holder)" "a.127-0-0-1.ha.pod" "the lease holder is the first operator's identity"
start b
wait_for log_has b "waits for Lease ha/addon-operator-leader-election"
ok $? "the second operator waits for the lease"
wait_for log_has b "http: listening"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(port_of b)/readyz")" 200 "the follower answers ready"
like "$(curl -sf "http://127.0.0.1:$(port_of b)/metrics")" 'addon_operator_live_ticks' "the follower serves /metrics"
# A renewal of the leader later, the follower still runs nothing.
renewed() { [ "$(curl -sf "$api$lease_path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')" != "$1" ]; }
rv=$(curl -sf "$api$lease_path" | python3 -c 'import json,sys; print(json.load(sys.stdin)["metadata"]["resourceVersion"])')
wait_for renewed "$rv"
ok $? "the leader renews the lease"
! ran b
ok $? "the follower ran no hook"
is "$(holder)" "a.127-0-0-1.ha.pod" "the lease stays with the leader"

# ---- the leader dies: the follower takes over after the lease expires ------------------------------
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null
wait_for ran b
ok $? "after the leader is killed, the follower takes the lease and runs its hooks"
is "$(holder)" "b.127-0-0-1.ha.pod" "the lease holder is the second operator now"

# ---- a graceful stop hands the lease over at once ------------------------------------------------
: >"$work/runs"
start a
wait_for log_has a "waits for Lease"
kill -TERM "$pid_b"
wait "$pid_b"
is "$?" 0 "the leader stops cleanly on SIGTERM"
like "$(cat "$work/b.log")" "Lease released" "it releases the lease on the way out"
wait_for ran a
ok $? "the waiting operator takes over and runs its hooks"

# ---- a leader whose renewal hangs stops at its renew deadline, before anyone takes over ------------
# The leader's renewal gets no answer at all (a stalled API server). It must stop leading at the
# renew deadline, timed from when it sent its last renewal, not when a request fails: the waiting
# replica takes over a lease duration after it last saw the record change, which is later. (The
# leader used to notice only when the hung request failed: two leaders at once meanwhile.)
wait_for log_has a "holds Lease"
start c
wait_for log_has c "waits for Lease"
ok $? "a third operator waits for the lease"
curl -sf -X POST -H 'Content-Type: application/json' "$api/fake/faults" \
        --data '{"method":"PUT","path":"/leases/","action":"stall","count":1}' >/dev/null
wait_for log_has c "holds Lease"
ok $? "the renewal of the leader hangs: the waiting operator takes over"
time_of() { sed -n "s/^time=\"\([^\"]*\)\".*$2.*/\1/p" "$work/$1.log" | head -1; } # time_of POD PATTERN
lost_at=$(time_of a "lost Lease") taken_at=$(time_of c "holds Lease")
ok "$([ -n "$lost_at" ] && [[ "$lost_at" < "$taken_at" ]]; echo $?)" \
        "the old leader stopped leading ($lost_at) before the new one took over ($taken_at)"
like "$(cat "$work/a.log")" "lost Lease ha/addon-operator-leader-election: not renewed within the renew deadline \\(no answer\\)" \
        "and says why"
wait "$pid_a"
is "$?" 0 "it exits with code 0"
start a
wait_for log_has a "waits for Lease"
kill -TERM "$pid_c" && wait "$pid_c"
wait_for log_has a "holds Lease"

# ---- a leader that cannot renew stops --------------------------------------------------------------
curl -sf -X POST -H 'Content-Type: application/json' "$api/fake/faults" \
        --data '{"path":"/leases/","action":"status","status":500,"count":-1}' >/dev/null
wait "$pid_a"
is "$?" 0 "when renewing fails past the renew deadline, the leader stops (exit code 0, as the Go operator)"
like "$(cat "$work/a.log")" "lost Lease ha/addon-operator-leader-election: not renewed within the renew deadline \\(last failure: reading the Lease: HTTP 500\\)" \
        "and says why"

done_testing
