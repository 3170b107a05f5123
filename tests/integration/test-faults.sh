#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Hooks that misbehave must not take the operator down or leave anything behind: killed by a
# signal, crashing, out of memory under an address-space limit, writing 100 MB into a patch file,
# never exiting, a full temp dir, a shutdown while twenty hooks run at once, and a reload signal
# while hooks run.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-faults.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; umount "$work/small" 2>/dev/null; rm -rf "$work"' EXIT

hook() { # hook <path> <config JSON> <body>
        mkdir -p "$(dirname "$work/$1")"
        printf '#!/bin/bash\nif [ "${1:-}" = --config ]; then echo '"'"'%s'"'"'; exit 0; fi\n%s\n' "$2" "$3" >"$work/$1"
        chmod +x "$work/$1"
}

start() { # start <global hooks dir> [ENV...]
        local dir=$1
        shift
        op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$dir" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
                ADDON_OPERATOR_RETRY_DELAY_SCALE=0.001 LOG_TYPE=json LOG_NO_TIME=true "$@" -- start
}
mkdir -p "$work/modules"
# Hooks that must be killed sleep this long: a duration unique to this test run, so looking for
# survivors never counts another test's processes.
long_sleep="sleep 300.$$"

# ---- a hook killed by SIGKILL, then one that crashes: failures with the signal named, retried ----
n=$work/attempts
hook crash/hooks/a.sh '{"configVersion":"v1","onStartup":1}' \
        'n=$(cat '"$n"' 2>/dev/null || echo 0); echo $((n + 1)) >'"$n"'
case $n in 0) kill -KILL $$ ;; 1) kill -SEGV $$ ;; esac
echo "third time lucky"'
start "$work/crash"
op_wait_for '"msg":"first converge done'
ok $? "killed and crashing hooks: the operator goes on and converges"
like "$OP_LOG" "hook 'hooks/a.sh' failed: killed by SIGKILL" "SIGKILL named"
like "$OP_LOG" "hook 'hooks/a.sh' failed: killed by SIGSEGV" "SIGSEGV named"
like "$OP_LOG" '"msg":"third time lucky"' "the retry succeeds"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop after the failures"

# ---- out of memory under the profile's address-space limit: the failure named, retried -----------
# The operator's own mechanism: a profile with `rlimits: as` (docs/SANDBOX.md), here the default
# profile with 64 MiB. The first run of each hook asks for more: bash fails with a message and exit
# code 2, jq aborts (SIGABRT; no core file, the profile sets `core: 0`).
mkdir -p "$work/profiles"
sed 's/^  nofile: 4096$/&\n  as: 64Mi/' "$(dirname "$0")/../../sandbox/profiles/default.policy" >"$work/profiles/small.policy"
hook oom/hooks/a.sh '{"configVersion":"v1","onStartup":1}' \
        'if [ ! -e '"$work"'/oom-a ]; then touch '"$work"'/oom-a; printf -v big "%*s" 300000000 ""; echo "not reached"; fi
echo "address space limit $(ulimit -v) KiB"'
hook oom/hooks/b.sh '{"configVersion":"v1","onStartup":2}' \
        'if [ ! -e '"$work"'/oom-b ]; then touch '"$work"'/oom-b; exec jq -n "[range(100000000)] | length"; fi
echo "b: second run"'
printf 'profile: small\n' >"$work/oom/hooks/a.sh.sandbox.yaml"
printf 'profile: small\n' >"$work/oom/hooks/b.sh.sandbox.yaml"
start "$work/oom" ADDON_OPERATOR_SANDBOX_PROFILES_DIR="$work/profiles"
op_wait_for '"msg":"first converge done'
ok $? "out of memory: the operator goes on and converges"
like "$OP_LOG" "\"msg\":\"hook 'hooks/a.sh' failed: exit code 2: $work/oom/hooks/a.sh: xrealloc: cannot allocate 300000064 bytes\"" \
        "out of memory: the failure names the hook, its exit code and the allocation that failed"
like "$OP_LOG" "\"msg\":\"hook 'hooks/b.sh' failed: killed by SIGABRT: error: cannot allocate memory\"" \
        "out of memory: a program that aborts: the signal named, without a core dump"
like "$OP_LOG" "task 'GlobalHookRun:onStartup:hooks/a.sh' failed \\(1 in a row\\), retrying" "out of memory: the run is retried"
like "$OP_LOG" '"msg":"address space limit 65536 KiB"' "out of memory: the retry succeeds, under the same limit"
like "$OP_LOG" '"msg":"b: second run"' "out of memory: so does the aborted hook's"
ok "$(grep -q 'not reached' <<<"$OP_LOG"; [ $? -ne 0 ]; echo $?)" "out of memory: the allocation never succeeded"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "out of memory: a clean stop"

# ---- 100 MB into a patch file: refused by its size, never read -----------------------------------
hook big/hooks/a.sh '{"configVersion":"v1","onStartup":1}' \
        'if [ ! -e '"$work"'/big-done ]; then touch '"$work"'/big-done; head -c 100000000 /dev/zero >"$VALUES_JSON_PATCH_PATH"; fi'
start "$work/big"
op_wait_for '"msg":"first converge done'
ok $? "100 MB patch: the operator goes on"
like "$OP_LOG" "values.json-patch: 100000000 bytes, more than the 16777216 allowed" "100 MB patch: refused by size"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "100 MB patch: a clean stop"
is "$(find "$work/tmp" -mindepth 1 -not -path "$work/tmp/state*" | wc -l)" 0 "100 MB patch: the file is gone with its run directory"

# ---- a hook that never exits: killed at the timeout, its task retried --------------------------
hook hang/hooks/a.sh '{"configVersion":"v1","onStartup":1}' \
        'if [ ! -e '"$work"'/hang-done ]; then touch '"$work"'/hang-done; '"$long_sleep"'; fi'
start "$work/hang" ADDON_OPERATOR_HOOK_TIMEOUT=1s
op_wait_for '"msg":"first converge done'
ok $? "hanging hook: the converge finishes after the retry"
like "$OP_LOG" "hook 'hooks/a.sh' failed: timed out" "hanging hook: timed out"
kill -TERM "$OP_PID"
op_finish
ok "$(pgrep -f "$long_sleep" >/dev/null; [ $? -ne 0 ]; echo $?)" "hanging hook: its process group is gone"

# ---- the temp dir full (tmpfs of 1 MiB): the run fails naming the file, and recovers -------------
# The first hook fills the file system, as another process might; the next run's inputs cannot be
# written until the test frees the space.
mkdir -p "$work/small"
if [ "$(id -u)" -eq 0 ] && mount -t tmpfs -o size=1m tmpfs "$work/small" 2>/dev/null; then
        hook full/hooks/a.sh '{"configVersion":"v1","onStartup":1}' \
                'head -c 2000000 /dev/zero >'"$work"'/small/filler 2>/dev/null; exit 0'
        hook full/hooks/b.sh '{"configVersion":"v1","onStartup":2}' 'echo "b ran"'
        # Another profile: b cannot reuse a's run directory, whose files already have their pages.
        printf 'profile: none\n' >"$work/full/hooks/b.sh.sandbox.yaml"
        op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/full" ADDON_OPERATOR_TMP_DIR="$work/small" \
                ADDON_OPERATOR_RETRY_DELAY_SCALE=0.001 LOG_TYPE=json LOG_NO_TIME=true -- start
        op_wait_for "hooks/b.sh.*No space left on device"
        ok $? "disk full: the run of the next hook fails with ENOSPC"
        like "$(grep 'No space left on device' <<<"$OP_LOG" | head -1)" \
                "\"msg\":\"hook 'hooks/b.sh': cannot write '[^']*/binding-context.json': No space left on device\"" \
                "disk full: the error names the hook and the file"
        rm -f "$work/small/filler"
        op_wait_for '"msg":"b ran"'
        ok $? "disk full: once space is back, the retry runs the hook"
        op_wait_for '"msg":"first converge done'
        ok $? "disk full: the converge completes"
        kill -TERM "$OP_PID"
        op_finish
        is "$OP_CODE" 0 "disk full: a clean stop"
        umount "$work/small"
else
        for _ in 1 2 3 4 5; do ok 0 "# SKIP disk full: needs root to mount a small tmpfs"; done
fi

# ---- SIGTERM while twenty hooks run: graceful, nothing left running, no temp files ----------------
# The first hook also starts a process in a session of its own (as a daemonizing hook would): the
# group kill misses it, so it must end when the operator exits, named in the log. The hook goes on
# once that process has written its pid (a condition, polled).
mkdir -p "$work/busy/hooks"
escape='setsid bash -c "echo \$\$ >'"$work"'/escaped.tmp; mv '"$work"'/escaped.tmp '"$work"'/escaped; exec '"$long_sleep"'" </dev/null >/dev/null 2>&1 &
until [ -e '"$work"'/escaped ]; do read -r -t 0.01 <>'"$work"'/never || true; done'
mkfifo "$work/never"
for i in $(seq -w 1 20); do
        body="touch $work/running-$i; $long_sleep"
        [ "$i" = 01 ] && body="$escape"$'\n'"$body"
        hook busy/hooks/h$i.sh '{"configVersion":"v1","schedule":[{"crontab":"* * * * * *","queue":"q'"$i"'"}]}' \
                "$body"
done
start "$work/busy" ADDON_OPERATOR_SHUTDOWN_TIMEOUT=1s
op_wait_for '"msg":"first converge done'
# Each hook marks itself running; the log says so through its first tick: wait for all twenty.
until [ "$(ls "$work" | grep -c '^running-')" -ge 20 ]; do
        IFS= read -r -t 20 -u "$OP_FD" line || break
        OP_LOG+="$line"$'\n'
done
is "$(ls "$work" | grep -c '^running-')" 20 "twenty hooks run at once, one per queue"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "SIGTERM with twenty hooks running: exit code 0"
like "$OP_LOG" "shutdown: SIGTERM received, stopping; 20 running" "the shutdown counts the running hooks"
ok "$(pgrep -f "$long_sleep" >/dev/null; [ $? -ne 0 ]; echo $?)" "no hook process survives the grace period"
like "$OP_LOG" "proc: at exit, killed 1 process\\(es\\) that hooks left running outside their process groups: pids $(cat "$work/escaped")\"" \
        "the process that left its hook's session is killed at exit and named"
is "$(find "$work/tmp" -mindepth 1 -not -path "$work/tmp/state*" | wc -l)" 0 "no temp files left"

# ---- SIGHUP while hooks run: a reload queued behind the running main-queue hook; nothing lost -----
# Three hooks block on their first run until the test opens their gate (a FIFO): one in the main
# queue, two in queues of their own. Each then writes a config patch, one also a values patch.
mkdir -p "$work/hup/hooks"
for q in main q1 q2; do
        mkfifo "$work/gate-$q"
        hook hup/hooks/$q.sh '{"configVersion":"v1","schedule":[{"crontab":"* * * * * *","queue":"'"$q"'"}]}' \
                'if [ ! -e '"$work"'/started-'"$q"' ]; then
        exec 3<>'"$work"'/gate-'"$q"'; touch '"$work"'/started-'"$q"'
        read -r -t 60 -u 3 _ || exit 1
        echo "[{\"op\":\"add\",\"path\":\"/global/from_'"$q"'\",\"value\":true}]" >"$CONFIG_VALUES_JSON_PATCH_PATH"
        [ '"$q"' != q1 ] || echo "[{\"op\":\"add\",\"path\":\"/global/valueFromQ1\",\"value\":1}]" >"$VALUES_JSON_PATCH_PATH"
        echo "'"$q"': released"
fi'
done
open_gate() { echo go 1<>"$work/gate-$1"; } # never blocks: the hook holds the FIFO open
# Read the operator's output until COMMAND succeeds (at most 20 s).
op_until() {
        local line deadline=$((SECONDS + 20))
        until "$@"; do
                [ "$SECONDS" -lt "$deadline" ] || return 1
                IFS= read -r -t 0.1 -u "$OP_FD" line && OP_LOG+="$line"$'\n'
        done
        return 0
}
all_started() { [ -e "$work/started-main" ] && [ -e "$work/started-q1" ] && [ -e "$work/started-q2" ]; }
config_json() { "$AO_BINARY" tool yaml2json "$work/hup-config.yaml" | jq -cS .global; }
patches_landed() { [ "$(config_json)" = '{"from_main":true,"from_q1":true,"from_q2":true,"x":1}' ]; }
printf 'global:\n  x: 1\n' >"$work/hup-config.yaml"
hup_socket=$work/hup.socket
start "$work/hup" ADDON_OPERATOR_CONFIG_FILE="$work/hup-config.yaml" DEBUG_UNIX_SOCKET="$hup_socket"
op_wait_for '"msg":"first converge done'
op_until all_started
ok $? "SIGHUP: three hooks are running, in the main queue and two others"
kill -HUP "$OP_PID"
op_wait_for '"msg":"SIGHUP received: reloading all modules"'
ok $? "SIGHUP: received and logged"
kill -HUP "$OP_PID"
op_wait_for '"msg":"SIGHUP received: reloading all modules"'
ok $? "SIGHUP: a second one while the first reload still waits"
is "$(DEBUG_UNIX_SOCKET=$hup_socket "$AO_BINARY" queue main -o json | jq -r '[.tasks[].description | select(startswith("Converge"))] | join(",")')" \
        "ConvergeModules:ReloadSignal" "SIGHUP: one reload waits in the main queue for both signals"
ok "$(grep -q 'released' <<<"$OP_LOG"; [ $? -ne 0 ]; echo $?)" "SIGHUP: no running hook was interrupted or waited for"
open_gate main
op_wait_for '"msg":"converge done in [0-9]+ ms \(ReloadSignal\)'
ok $? "SIGHUP: once the main-queue hook is done, the reload runs"
like "$(grep -E '"msg":"(main: released|converge started \(ReloadSignal\))"' <<<"$OP_LOG" | tr '\n' ' ')" \
        '"main: released".*"converge started \(ReloadSignal\)"' "SIGHUP: the reload started after the running main-queue hook finished"
is "$(grep -c -E '"msg":"q[12]: released"' <<<"$OP_LOG")" 0 "SIGHUP: the hooks of the other queues still run through the reload"
open_gate q1
open_gate q2
op_until patches_landed
ok $? "SIGHUP: the config patches of all three hooks are in the config file"
is "$(config_json)" '{"from_main":true,"from_q1":true,"from_q2":true,"x":1}' "SIGHUP: config file: the previous key kept, the three patches added"
is "$(DEBUG_UNIX_SOCKET=$hup_socket "$AO_BINARY" global values -o json | jq -c '{valueFromQ1, from_q1}')" \
        '{"valueFromQ1":1,"from_q1":true}' "SIGHUP: the values patch of a hook running through the reload is applied"
is "$(grep -c '"msg":"SIGHUP received' <<<"$OP_LOG"),$(grep -c 'converge started (ReloadSignal)' <<<"$OP_LOG")" "2,1" \
        "SIGHUP: two signals, one reload"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "SIGHUP: a clean stop"
ok "$(pgrep -f "$work/hup/hooks/" >/dev/null; [ $? -ne 0 ]; echo $?)" "SIGHUP: no hook process outlives the operator"
is "$(find "$work/tmp" -mindepth 1 -not -path "$work/tmp/state*" | wc -l)" 0 "SIGHUP: no temp files left"

done_testing
