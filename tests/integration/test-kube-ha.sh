#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Leader election (ADDON_OPERATOR_HA) with two operators against the fake API server: one leads
# and runs hooks, the other serves /metrics, runs nothing, and its /readyz answers as the leader's
# does (it asks the leader's /readyz: 200, not ready, gone, silent for 3 s, no leader known); a
# leader killed with SIGKILL is replaced once its lease expires; a leader stopped with SIGTERM
# releases the lease and the follower takes over at once. Lease timings are scaled by
# ADDON_OPERATOR_RETRY_DELAY_SCALE (0.1: 3.5 s lease, 3 s renew deadline, 1 s retry period). A
# leader that cannot renew stops. Each operator listens on its own loopback address (a on
# 127.0.0.1, b on 127.0.0.2, c on 127.0.0.3), all on one port: a follower asks the leader's
# address, read from its Lease identity, on its own port, as the Go operator does.
set -uo pipefail
. "$(dirname "$0")/tap.sh"
. "$(dirname "$0")/ha.sh"
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
# While the file hold exists, the start-up hook waits for a line on hold.fifo: its operator has not
# converged (its /readyz says 500) until the test lets it go.
mkfifo "$work/hold.fifo"
cat >"$work/global/hooks/startup.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
echo "\$ADDON_OPERATOR_POD" >>"$work/runs"
if [ -e "$work/hold" ]; then read -r _ <"$work/hold.fifo"; fi
EOF
chmod +x "$work/global/hooks/startup.sh"

port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
start() { # start POD: an operator in the background, its output in POD.log, its pid in pid_POD
        : >"$work/$1.log" # now, not when the background job gets to it: log_has must not read the last run's
        env -i PATH="$PATH" ADDON_OPERATOR_POD="$1" KUBE_SERVER="$api" ADDON_OPERATOR_HA=true \
                HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$work/helm" ADDON_OPERATOR_NAMESPACE=ha \
                ADDON_OPERATOR_LISTEN_ADDRESS="$(address_of "$1")" ADDON_OPERATOR_LISTEN_PORT="$port" \
                DEBUG_UNIX_SOCKET= GLOBAL_HOOKS_DIR="$work/global" MODULES_DIR="$work/modules" \
                ADDON_OPERATOR_TMP_DIR="$work/tmp-$1" ADDON_OPERATOR_STATE_DIR="$work/state-$1" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.1 \
                "$AO_BINARY" start >>"$work/$1.log" 2>&1 &
        eval "pid_$1=$!"
        extra_pids+=("$!")
}
ready() { [ "$(readyz "$1")" = '200 Startup converge done.\n' ]; } # ready POD: POD has converged
leader_ok='200 HA mode is enabled and waiting for acquiring the lock.\n'
leader_not_ok="500 HA mode is enabled but the leader's status response code isn't OK\\n"
leader_unreachable="500 HA mode is enabled but couldn't send a request to the leader\\n"

# ---- no Lease can be read: the follower knows no leader ------------------------------------------
curl -sf -X POST -H 'Content-Type: application/json' "$api/fake/faults" \
        --data '{"method":"GET","path":"/leases/","action":"status","status":500,"count":-1}' >/dev/null
start b
wait_for log_has b "reading the Lease: HTTP 500"
ok $? "an operator that cannot read the Lease keeps trying"
is "$(readyz b)" '500 HA mode is enabled but no leader is elected\n' "with no leader known, its /readyz says so (500)"
kill -TERM "$pid_b" && wait "$pid_b"
curl -sf -X DELETE "$api/fake/faults" >/dev/null

# ---- one leads, the other waits ------------------------------------------------------------------
touch "$work/hold"
start a
wait_for ran a
ok $? "the first operator takes the lease and runs its hooks"
is "$(holder)" "a.127-0-0-1.ha.pod" "the lease holder is the first operator's identity"
is "$(readyz a)" '500 Startup converge in progress\n' "the leader is not ready while its start-up hook runs"
start b
wait_for log_has b "waits for Lease ha/addon-operator-leader-election"
ok $? "the second operator waits for the lease"
wait_for log_has b "a.127-0-0-1.ha.pod leads; /readyz asks its /readyz at 127.0.0.1"
ok $? "the follower reads the leader's address from its identity"
is "$(readyz b)" "$leader_not_ok" "the follower's /readyz: 500 while the leader's says 500"
rm "$work/hold" && echo go >"$work/hold.fifo"
wait_for ready a
ok $? "the leader converges"
is "$(readyz b)" "$leader_ok" "the follower's /readyz: 200 once the leader's says 200"
like "$(curl -sf "http://127.0.0.2:$port/metrics")" 'addon_operator_live_ticks' "the follower serves /metrics"
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
is "$(readyz b)" "$leader_unreachable" "the leader is gone: the follower's /readyz says 500 at once"
wait_for ran b
ok $? "after the leader is killed, the follower takes the lease and runs its hooks"
is "$(holder)" "b.127-0-0-2.ha.pod" "the lease holder is the second operator now"

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
curl -sf -X DELETE "$api/fake/faults" >/dev/null

# ---- a leader that accepts connections and never answers: the follower gives up after 3 s ----------
start a
wait_for ready a
start b
wait_for log_has b "a.127-0-0-1.ha.pod leads"
is "$(readyz b)" "$leader_ok" "a new pair: the follower's /readyz is 200"
kill -STOP "$pid_a" # its sockets still accept (the kernel's backlog); nothing answers
t0=$EPOCHREALTIME
answer=$(readyz b)
took=$(python3 -c "print(round($EPOCHREALTIME - $t0, 1))")
is "$answer" "$leader_unreachable" "a leader that does not answer: the follower's /readyz says 500"
ok "$(python3 -c "print(0 if 2.9 <= $took < 6 else 1)")" "after the 3 s timeout (${took} s)"
kill -9 "$pid_a"
wait "$pid_a" 2>/dev/null
kill -TERM "$pid_b" && wait "$pid_b"

done_testing
