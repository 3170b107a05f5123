#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Hooks that misbehave must not take the operator down or leave anything behind: killed by a
# signal, crashing, writing 100 MB into a patch file, never exiting, a full temp dir, and a
# shutdown while twenty hooks run at once.
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

# ---- SIGTERM while twenty hooks run: graceful, no zombies, no temp files --------------------------
mkdir -p "$work/busy/hooks"
for i in $(seq -w 1 20); do
        hook busy/hooks/h$i.sh '{"configVersion":"v1","schedule":[{"crontab":"* * * * * *","queue":"q'"$i"'"}]}' \
                'touch '"$work"'/running-'"$i"'; '"$long_sleep"
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
ok "$(grep -q . <<<"$(ps -eo stat,ppid | awk -v p="$OP_PID" '$1 ~ /^Z/ && $2 == p')"; [ $? -ne 0 ]; echo $?)" "no zombies"
is "$(find "$work/tmp" -mindepth 1 -not -path "$work/tmp/state*" | wc -l)" 0 "no temp files left"

done_testing
