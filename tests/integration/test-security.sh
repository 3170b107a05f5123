#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The claims of docs/SECURITY.md about what a hook cannot do to the operator, checked from inside
# hooks, with the operator and its hooks under an unprivileged uid (root would pass the kernel's
# checks anyway):
#  - /proc/<pid>/mem of the operator and its spawners stays closed (`addon-operator lint`, whose
#    --config runs start hooks exactly as the operator does);
#  - process_vm_readv and ptrace(PTRACE_ATTACH) on them fail with EPERM: with no seccomp filter
#    (profile `none`) through the kernel's access check alone, and under `default` through the
#    filter too, each call reported as a violation;
#  - a hook gets exactly fds 0-2 (/dev/null and two pipes), although the operator holds API-server
#    connections, the debug socket, the metrics listener and seccomp listeners at the time;
#  - a hook is in its own process group and session: `kill -TERM 0` and `kill -TERM -<its pgid>`
#    reach only itself, and the operator goes on;
#  - under a profile with `user:` (operator as root), the hook cannot signal the operator either.
set -u
. "$(dirname "$0")/tap.sh"
: "${AO_BINARY:?AO_BINARY must point at build/addon-operator}"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
        echo "1..0 # SKIP needs root and setpriv to run the operator as another user"
        exit 0
fi
work=$(mktemp -d)
dir=$work
. "$(dirname "$0")/fakekube.sh"
chmod 755 "$dir"
# The binaries where uid 65534 can run them, whatever the checkout's permissions are.
cp "$AO_BINARY" "$(dirname "$AO_BINARY")/addon-operator-spawner" "$AO_PEEK_PROCESS" "$dir/"
mkdir -p "$dir/global/hooks" "$dir/modules" "$dir/tmp"
# The hook reports, for every process of its own user running one of our binaries, whether its
# memory opened for writing.
cat >"$dir/global/hooks/peek.sh" <<'HOOK'
#!/bin/bash
[ "$1" = --config ] || exit 0
for p in /proc/[0-9]*; do
        [ "$p" = "/proc/$$" ] && continue
        [ "$(stat -c %u "$p" 2>/dev/null)" = "$(id -u)" ] || continue
        case "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" in
        *addon-operator-spawner*) what=spawner ;;
        *addon-operator\ lint*) what=operator ;;
        *) continue ;;
        esac
        if { : 3<>"$p/mem"; } 2>/dev/null; then echo "$what:open"; else echo "$what:closed"; fi
done | sort | uniq -c | tr -s ' \n' ' ' >&2
exit 1
HOOK
chmod -R a+rwX "$dir" && chmod a+x "$dir/global/hooks/peek.sh"
cd "$dir"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups ./addon-operator lint --modules-dir modules \
        --global-hooks-dir global --tmp-dir "$dir/tmp" 2>&1)
# Two spawners run by then: the one without a profile and the one of the hook's profile.
like "$out" "peek.sh: error: --config failed: exit code 1: +1 operator:closed 2 spawner:closed *$" \
        "the operator's and both spawners' memory is closed to a hook of the same user"

# ---- the operator at work: hooks that probe it, while it holds API connections -----------------
# Both hooks run the same probes; `none` has no seccomp filter, so what it is refused is refused by
# the kernel's own checks (the operator and spawners are not dumpable); `default` adds the filter.
fk_start
cat >"$dir/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: fake, cluster: {server: "$api"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: fake, context: {cluster: fake, user: u, namespace: default}}]
current-context: fake
EOF
mkdir -p "$dir/probe/hooks" "$dir/results" "$dir/helm"
cat >"$dir/probe/hooks/probe.sh" <<'HOOK'
#!/bin/bash
# On Synchronization of a ConfigMap binding: its informer's watch is open while this runs.
if [ "${1:-}" = --config ]; then
        echo '{"configVersion":"v1","kubernetes":[{"name":"cms","kind":"ConfigMap","executeHookOnEvent":[]}]}'
        exit 0
fi
out=$RESULTS/$(basename "$0" .sh)
# exec: the helper gets exactly the fds this hook was started with (bash's own script fd is
# close-on-exec).
(exec "$PEEK" fds "$out.fds")
targets=("operator=$PPID" "child=child")
for p in $(pgrep -P "$PPID" -f addon-operator-spawner); do targets+=("spawner-$(stat -c %u "/proc/$p")=$p"); done
"$PEEK" "${targets[@]}" >"$out.peek"
# Signals to its own process group, as `kill 0` in a careless cleanup would send them; the hook
# survives them by ignoring SIGTERM.
trap '' TERM
kill -TERM 0 && kill -TERM -"$(ps -o pgid= -p $$ | tr -d ' ')" && echo sent >"$out.signals"
# And straight at the operator: allowed to a hook of its own uid (docs/SECURITY.md), so only tried
# by a hook that runs as another user.
[ "$(id -u)" = "$(stat -c %u "/proc/$PPID")" ] || kill -TERM "$PPID" 2>"$out.kill"
exit 0
HOOK
cp "$dir/probe/hooks/probe.sh" "$dir/probe/hooks/filtered.sh"
printf 'profile: none\n' >"$dir/probe/hooks/probe.sh.sandbox.yaml"
printf '#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups %s/addon-operator "$@"\n' "$dir" >"$dir/as-nobody"
chmod -R a+rwX "$dir" && chmod a+x "$dir"/probe/hooks/*.sh "$dir/as-nobody"
AO_BINARY=$dir/as-nobody op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$dir/helm" KUBE_CONFIG="$dir/kubeconfig" \
        GLOBAL_HOOKS_DIR="$dir/probe" MODULES_DIR="$dir/modules" ADDON_OPERATOR_TMP_DIR="$dir/tmp" \
        ADDON_OPERATOR_STATE_DIR="$dir/state" RESULTS="$dir/results" PEEK="$dir/peek-process" \
        LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"first converge done'
ok $? "the operator converges after its hooks probed it"
is "$(stat -c %u "/proc/$OP_PID")" 65534 "the operator runs as uid 65534"
for h in probe filtered; do
        is "$(cat "$dir/results/$h.fds")" "0:/dev/null 1:pipe 2:pipe" "$h: the hook has fds 0-2 only: /dev/null and two pipes"
        is "$(grep '^operator ' "$dir/results/$h.peek")" "operator readv=EPERM attach=EPERM signal=ok pgid=other sid=other" \
                "$h: process_vm_readv and PTRACE_ATTACH on the operator fail with EPERM; other group and session"
        is "$(grep '^spawner' "$dir/results/$h.peek" | sort -u)" "spawner-65534 readv=EPERM attach=EPERM signal=ok pgid=other sid=other" \
                "$h: the same for every spawner"
        ok "$([ "$(grep -c '^spawner' "$dir/results/$h.peek")" -ge 2 ]; echo $?)" "$h: at least two spawners were probed"
        is "$(cat "$dir/results/$h.signals" 2>/dev/null)" sent "$h: kill -TERM 0 and to its own group succeeded"
done
# Yama's ptrace_scope 2 and 3 refuse even a parent: the control only holds below that.
if [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" -lt 2 ]; then
        is "$(grep '^child ' "$dir/results/probe.peek")" "child readv=ok attach=ok signal=ok pgid=same sid=same" \
                "without a filter the probes work on the hook's own child: the EPERMs above are the kernel's access check"
else
        ok 0 "# SKIP Yama ptrace_scope >= 2 refuses a parent's probes of its own child"
fi
is "$(grep '^child ' "$dir/results/filtered.peek")" "child readv=EPERM attach=EPERM signal=ok pgid=same sid=same" \
        "under 'default' the filter refuses them even there"
like "$OP_LOG" "\"msg\":\"sandbox violation: pid [0-9]+ called process_vm_readv, denied \\(EPERM\\) by profile 'default'\".*\"hook\":\"hooks/filtered.sh\"" \
        "the refused process_vm_readv is reported with the hook"
like "$OP_LOG" "\"msg\":\"sandbox violation: pid [0-9]+ called ptrace, denied \\(EPERM\\) by profile 'default'\".*\"hook\":\"hooks/filtered.sh\"" \
        "the refused ptrace is reported with the hook"
ok "$(kill -0 "$OP_PID" 2>/dev/null; echo $?)" "the operator is still running after its hooks' signals"
# What the hooks did not get: the operator's own fds at the same point include sockets (the API
# server's connections, the listeners) and the seccomp listeners.
ok "$([ "$(find "/proc/$OP_PID/fd" -lname 'socket:*' | wc -l)" -ge 3 ]; echo $?)" "meanwhile the operator holds sockets"
ok "$([ "$(find "/proc/$OP_PID/fd" -lname 'anon_inode:seccomp*' | wc -l)" -ge 1 ]; echo $?)" "and seccomp listeners"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
is "$(grep -c 'shutdown: SIGTERM received' <<<"$OP_LOG")" 1 "the only SIGTERM the operator saw was the test's"

# ---- a profile with its own user: the operator (root) cannot be signalled ----------------------
# No seccomp filter in this profile: what the hook is refused, its uid is refused.
mkdir -p "$dir/profiles" "$dir/other/hooks"
printf 'seccomp: none\nrlimits: {core: 0, nofile: 4096}\nuser: {uid: 65534, gid: 65534}\n' >"$dir/profiles/nobody.policy"
cp "$dir/probe/hooks/probe.sh" "$dir/other/hooks/other-user.sh"
printf 'profile: nobody\n' >"$dir/other/hooks/other-user.sh.sandbox.yaml"
chmod -R a+rX "$dir/profiles" "$dir/other"
op_start HELM_BIN_PATH="$FAKE_HELM" FAKE_HELM_DIR="$dir/helm" KUBE_CONFIG="$dir/kubeconfig" \
        GLOBAL_HOOKS_DIR="$dir/other" MODULES_DIR="$dir/modules" ADDON_OPERATOR_TMP_DIR="$dir/tmp" \
        ADDON_OPERATOR_STATE_DIR="$dir/state" ADDON_OPERATOR_SANDBOX_PROFILES_DIR="$dir/profiles" \
        RESULTS="$dir/results" PEEK="$dir/peek-process" LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"first converge done'
ok $? "with a profile user: the operator converges"
is "$(stat -c %u "/proc/$OP_PID")" 0 "the operator runs as root"
is "$(grep '^operator ' "$dir/results/other-user.peek")" "operator readv=EPERM attach=EPERM signal=EPERM pgid=other sid=other" \
        "a hook under another uid can neither read, trace nor signal the operator"
like "$(cat "$dir/results/other-user.kill")" "kill: \($OP_PID\) - Operation not permitted$" "its kill -TERM of the operator fails with EPERM"
is "$(grep '^spawner-0 ' "$dir/results/other-user.peek" | sort -u)" "spawner-0 readv=EPERM attach=EPERM signal=EPERM pgid=other sid=other" \
        "nor the spawners of the operator's own uid"
is "$(grep '^spawner-65534 ' "$dir/results/other-user.peek" | sort -u)" "spawner-65534 readv=EPERM attach=EPERM signal=ok pgid=other sid=other" \
        "its own profile's spawner, which runs as the hook's uid, can be signalled but not read (docs/SECURITY.md)"
is "$(cat "$dir/results/other-user.fds")" "0:/dev/null 1:pipe 2:pipe" "with a profile user: fds 0-2 only"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "with a profile user: a clean stop"
is "$(grep -c 'shutdown: SIGTERM received' <<<"$OP_LOG")" 1 "with a profile user: the only SIGTERM was the test's"

done_testing
