#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Global hooks at start-up: discovery order, --config runs (environment,
# working directory, sandbox), and the exit code 1 that a bad configuration
# must cause, with the hook and the field named.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-global-hooks.XXXXXX)
trap 'rm -rf "$work"' EXIT

hook() { # hook <path below $work> <body>
        mkdir -p "$(dirname "$work/$1")"
        printf '#!/bin/sh\n%s\n' "$2" >"$work/$1"
        chmod +x "$work/$1"
}

start_with() { # start_with <global hooks dir> [ENV...]
        local dir=$1
        shift
        op_start GLOBAL_HOOKS_DIR="$dir" MODULES_DIR="$work/modules" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
                LOG_TYPE=json LOG_NO_TIME=true "$@" -- start
}

# --- valid hooks: loaded in order, each logged with its bindings ----------------------------
hook ok/hooks/b-schedule.sh 'if [ "$1" = --config ]; then
  pwd > '"$work"'/config-cwd
  echo "$WORKING_DIR" > '"$work"'/config-working-dir
  echo "{\"configVersion\":\"v1\",\"schedule\":[{\"crontab\":\"*/5 * * * *\"}],\"afterAll\":2}"
fi'
hook ok/hooks/a-startup.sh 'cat <<YAML
configVersion: v1
onStartup: 1
beforeAll: 5
YAML'
hook ok/hooks/sub/c-legacy.sh 'echo "{\"onStartup\": 3}"'
hook ok/hooks/lib/not-a-hook.sh 'exit 1'
printf 'not a hook\n' >"$work/ok/hooks/readme.txt"
start_with "$work/ok"
op_wait_for 'global hooks: [0-9]+ loaded'
ok $? "valid hooks: the operator reports them loaded"
is "$(printf '%s' "$OP_LOG" | grep -o '"msg":"global hook [^"]*"' | tr '\n' '|')" \
        '"msg":"global hook '"'"'hooks/a-startup.sh'"'"' loaded: onStartup, beforeAll"|"msg":"global hook '"'"'hooks/b-schedule.sh'"'"' loaded: afterAll, schedule"|"msg":"global hook '"'"'hooks/sub/c-legacy.sh'"'"' loaded: onStartup"|' \
        "valid hooks: sorted by path, lib and non-executables skipped, bindings listed"
like "$OP_LOG" '"msg":"global hooks: 3 loaded' "valid hooks: three counted"
is "$(cat "$work/config-cwd")" "$work/ok/hooks" "--config runs in the hook's directory"
is "$(cat "$work/config-working-dir")" "$work/ok/hooks" "--config gets WORKING_DIR = the hooks root"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "valid hooks: a clean stop"
is "$(find "$work/tmp" -mindepth 1 | wc -l)" 0 "no temp files left behind"

# --- --config runs go on at once: each of these two waits until the other has started -----------
# One at a time, the first would give up after 5 s and fail the start-up.
mkfifo "$work/never"
for pair in a:b b:a; do
        me=${pair%%:*} other=${pair##*:}
        hook "together/hooks/$me.sh" 'exec bash -c '"'"'touch '"$work/$me"'-started
i=0
until [ -e '"$work/$other"'-started ]; do
  i=$((i + 1)); [ $i -gt 500 ] && exit 1
  read -r -t 0.01 <>'"$work"'/never || true
done
echo "{\"configVersion\":\"v1\",\"onStartup\":1}"'"'"
done
start_with "$work/together"
op_wait_for 'global hooks: [0-9]+ loaded'
like "$OP_LOG" '"msg":"global hooks: 2 loaded' "parallel --config: both hooks loaded, neither waited for the other"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "parallel --config: a clean stop"

# --- a bad configuration stops the start-up with exit code 1 --------------------------------
hook bad/hooks/a.sh 'echo "{\"configVersion\":\"v1\",\"onStartup\":1}"'
hook bad/hooks/b.sh 'echo "{\"configVersion\":\"v1\",\"kubernetes\":[{\"kind\":\"Pod\",\"labelSelector\":{\"matchExpressions\":[{\"key\":\"a\",\"operator\":\"in\",\"values\":[\"x\"]}]}}]}"'
hook bad/hooks/c.sh 'echo "{\"configVersion\":\"v1\",\"onStartup\":\"x\"}"'
start_with "$work/bad"
op_finish
is "$OP_CODE" 1 "bad config: exit code 1"
like "$OP_LOG" "hooks/b.sh: kubernetes\\[0\\]\\.labelSelector\\.matchExpressions\\[0\\]\\.operator: 'in' is not one of" \
        "bad config: the hook, the field and the reason are named"
# --config runs go on in parallel, but the error is the first in discovery order, as one at a time.
unlike "$OP_LOG" "hooks/c.sh" "bad config: only the first bad hook is reported"

hook module-binding/hooks/x.sh 'echo "{\"configVersion\":\"v1\",\"beforeHelm\":1}"'
start_with "$work/module-binding"
op_finish
is "$OP_CODE" 1 "module binding in a global hook: exit code 1"
like "$OP_LOG" "hooks/x.sh: beforeHelm: " "module binding in a global hook: named"

hook failing/hooks/x.sh 'echo "cannot read the cluster" >&2; exit 4'
start_with "$work/failing"
op_finish
is "$OP_CODE" 1 "failing --config: exit code 1"
like "$OP_LOG" "cannot get the configuration of hook 'hooks/x.sh': hook 'hooks/x.sh' failed: exit code 4: cannot read the cluster" \
        "failing --config: exit status and stderr in the error"

hook garbage/hooks/x.sh 'echo "configVersion: v1"; echo "onStartup: [1"'
start_with "$work/garbage"
op_finish
is "$OP_CODE" 1 "unparsable --config output: exit code 1"
like "$OP_LOG" "invalid configuration: hooks/x.sh: " "unparsable --config output: named"

hook hanging/hooks/x.sh 'sleep 30'
start_with "$work/hanging" ADDON_OPERATOR_HOOK_TIMEOUT=1s
op_finish
is "$OP_CODE" 1 "hanging --config: exit code 1 after the hook timeout"
like "$OP_LOG" "hook 'hooks/x.sh' failed: timed out, killed by SIGTERM" "hanging --config: timed out"

# A directory without a hooks subdirectory holds the hooks itself.
hook flat/top.sh 'echo "{\"configVersion\":\"v1\",\"onStartup\":1}"'
start_with "$work/flat"
op_wait_for 'global hooks: [0-9]+ loaded'
like "$OP_LOG" "global hook 'top.sh' loaded: onStartup" "flat global hooks directory: names relative to it"
kill -TERM "$OP_PID"
op_finish

# --- a global values change reloads once, however many runs span it ---------------------------
# slow.sh's first run (queue "slow") starts before patcher.sh (queue "fast") changes the global
# values and ends after that reload: slow.sh patched nothing, so its end must not reload again.
mkfifo "$work/gate"
hook reload/hooks/slow.sh 'if [ "$1" = --config ]; then
  echo "{\"configVersion\":\"v1\",\"schedule\":[{\"crontab\":\"* * * * * *\",\"queue\":\"slow\"}]}"; exit 0
fi
[ -e '"$work"'/slow-ran ] && exit 0
touch '"$work"'/slow-ran
read -r _ <'"$work"'/gate'
hook reload/hooks/patcher.sh 'if [ "$1" = --config ]; then
  echo "{\"configVersion\":\"v1\",\"schedule\":[{\"crontab\":\"* * * * * *\",\"queue\":\"fast\"}]}"; exit 0
fi
[ -e '"$work"'/slow-ran ] || exit 0
echo "[{\"op\":\"add\",\"path\":\"/global/x\",\"value\":1}]" >"$VALUES_JSON_PATCH_PATH"'
start_with "$work/reload"
op_wait_for '"msg":"converge started \(GlobalValuesChanged\)"'
ok $? "the patch of a run in another queue reloads the modules"
echo open >"$work/gate"
op_wait_for "\"msg\":\"hook 'hooks/slow.sh' succeeded"
ok $? "the run that spanned the change finishes"
op_wait_for "\"msg\":\"hook 'hooks/slow.sh' succeeded"
ok $? "and runs again on its next tick"
kill -TERM "$OP_PID"
op_finish
is "$(grep -c '"msg":"converge started (GlobalValuesChanged)"' <<<"$OP_LOG")" 1 \
        "one reload: a run whose own patches changed nothing does not reload again"

done_testing
