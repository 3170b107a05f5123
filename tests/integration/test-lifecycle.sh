#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The lifecycle in local mode, black-box: real shell hooks record what they
# see; the test compares the exact order of runs and the exact files.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-lifecycle.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT
record=$work/record

# hook <path> <config JSON> [body]: a hook that records "<name> <binding>" for each context, then runs body.
hook() {
        mkdir -p "$(dirname "$work/$1")"
        cat >"$work/$1" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then echo '$2'; exit 0; fi
for b in \$(jq -r '.[].binding' "\$BINDING_CONTEXT_PATH"); do echo "$3 \$b" >>"$record"; done
${4:-}
SCRIPT
        chmod +x "$work/$1"
}

yaml2json() { "$AO_BINARY" tool yaml2json "$1"; }

start() { # start [ENV...]
        op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
                ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_RETRY_DELAY_SCALE=0.001 \
                LOG_TYPE=json LOG_NO_TIME=true "$@" -- start
}

stop() {
        kill -TERM "$OP_PID"
        op_finish
}

# ---- fixture: the documentation's worked example plus hooks that record their runs -------------
mkdir -p "$work/modules/01-some-module" "$work/modules/002-other" "$work/modules/003-off"
cat >"$work/modules/values.yaml" <<'YAML'
global:
  param1: 100
  param2: "Yes"
someModuleEnabled: true
otherEnabled: true
YAML
cat >"$work/modules/01-some-module/values.yaml" <<'YAML'
someModule:
  param1: "String"
YAML
cat >"$work/config.yaml" <<'YAML'
global: |
  param1: 200
someModule: |
  param1: "Long string"
  param2: "FOO"
YAML
hook global/hooks/a-startup.sh '{"configVersion":"v1","onStartup":1}' g-startup
hook global/hooks/b-before.sh '{"configVersion":"v1","beforeAll":1}' g-before
# afterAll changes the global values once: the converge must run steps 3-8 again, once.
hook global/hooks/c-after.sh '{"configVersion":"v1","afterAll":1}' g-after \
        'if ! jq -e .global.afterAllRan "$VALUES_PATH" >/dev/null; then
  echo "{\"op\":\"add\",\"path\":\"/global/afterAllRan\",\"value\":true}" >"$VALUES_JSON_PATCH_PATH"; fi'
hook modules/01-some-module/hooks/record.sh '{"configVersion":"v1","onStartup":1,"beforeHelm":1,"afterHelm":1}' \
        some-module \
        'b=$(jq -r ".[0].binding" "$BINDING_CONTEXT_PATH")
if [ "$b" = beforeHelm ] && [ ! -e '"$work"'/values ]; then
  jq -cS . "$VALUES_PATH" >'"$work"'/values; jq -cS . "$CONFIG_VALUES_PATH" >'"$work"'/config-values; fi
if [ "$b" = afterHelm ] && ! jq -e .someModule.param3 "$CONFIG_VALUES_PATH" >/dev/null; then
  echo "[{\"op\":\"add\", \"path\":\"/someModule/param3\", \"value\":\"newValue\"}]" >"$CONFIG_VALUES_JSON_PATCH_PATH"; fi'
hook modules/002-other/hooks/record.sh \
        '{"configVersion":"v1","onStartup":1,"beforeHelm":1,"afterHelm":1,"beforeDeleteHelm":1,"afterDeleteHelm":1}' other
cat >"$work/modules/002-other/enabled" <<SCRIPT
#!/bin/bash
echo "other/enabled \$(jq -c .global.enabledModules "\$VALUES_PATH")" >>"$record"
echo true >"\$MODULE_ENABLED_RESULT"
SCRIPT
chmod +x "$work/modules/002-other/enabled"
hook modules/003-off/hooks/record.sh '{"configVersion":"v1","onStartup":1}' off

# ---- start-up: the order of every run -----------------------------------------------------------
start
op_wait_for '"msg":"first converge done'
ok $? "start-up: the first converge finishes"
is "$(cat "$record")" "g-startup onStartup
g-before beforeAll
other/enabled [\"some-module\"]
some-module onStartup
some-module beforeHelm
some-module afterHelm
some-module beforeHelm
some-module afterHelm
other onStartup
other beforeHelm
other afterHelm
g-after afterAll
g-before beforeAll
other/enabled [\"some-module\"]
some-module beforeHelm
some-module afterHelm
other beforeHelm
other afterHelm
g-after afterAll" "start-up: onStartup, beforeAll, discovery, module runs (again after an afterHelm change), afterAll, and once more after afterAll changed the values"

is "$(cat "$work/values")" \
        '{"global":{"enabledModules":["some-module","other"],"param1":200,"param2":"Yes"},"someModule":{"param1":"Long string","param2":"FOO"}}' \
        "VALUES_PATH: values.yaml files, the config, enabledModules in run order"
is "$(cat "$work/config-values")" \
        '{"global":{"param1":200},"someModule":{"param1":"Long string","param2":"FOO"}}' \
        "CONFIG_VALUES_PATH: the config sections only"
is "$(yaml2json "$work/config.yaml" | jq -c .someModule)" '{"param1":"Long string","param2":"FOO","param3":"newValue"}' \
        "a config patch is written to the config file"
is "$(yaml2json "$work/tmp/state/releases/some-module/values.yaml")" \
        '{"global":{"afterAllRan":true,"param1":200,"param2":"Yes"},"someModule":{"param1":"Long string","param2":"FOO","param3":"newValue"}}' \
        "the release gets the merged values without enabledModules"
ok "$([ ! -e "$work/tmp/state/releases/off" ]; echo $?)" "a module without an enabled flag is not released"

# ---- a module section edit runs only that module ------------------------------------------------
: >"$record"
cat >"$work/config.yaml.new" <<'YAML'
global:
  param1: 200
someModule:
  param1: Long string
  param2: BAR
  param3: newValue
YAML
mv "$work/config.yaml.new" "$work/config.yaml"
op_wait_for '"msg":"module .some-module. is up to date'
ok $? "module section edit: the module runs"
is "$(cat "$record")" "some-module beforeHelm
some-module afterHelm" "module section edit: beforeHelm and afterHelm of that module only"

# ---- an invalid edit is logged and changes nothing ----------------------------------------------
printf 'global: [unclosed\n' >"$work/config.yaml.new"
mv "$work/config.yaml.new" "$work/config.yaml"
op_wait_for 'keeping the previous config'
ok $? "invalid config edit: logged, the previous config stays"

# ---- disabling a module deletes it: beforeDeleteHelm, release deleted, afterDeleteHelm -----------
: >"$record"
cat >"$work/config.yaml.new" <<'YAML'
global:
  param1: 200
someModule:
  param1: Long string
  param2: BAR
  param3: newValue
otherEnabled: "false"
YAML
mv "$work/config.yaml.new" "$work/config.yaml"
op_wait_for '"msg":"converge done'
ok $? "disable: a converge runs"
is "$(cat "$record")" "g-before beforeAll
some-module beforeHelm
some-module afterHelm
other beforeDeleteHelm
other afterDeleteHelm
g-after afterAll" "disable: the disabled module is deleted between the runs and afterAll"
ok "$([ ! -e "$work/tmp/state/releases/other" ]; echo $?)" "disable: the release is gone"

# ---- SIGHUP reloads all modules ------------------------------------------------------------------
: >"$record"
kill -HUP "$OP_PID"
op_wait_for '"msg":"converge done in [0-9]+ ms \(ReloadSignal\)'
ok $? "SIGHUP: a converge runs"
is "$(head -1 "$record")" "g-before beforeAll" "SIGHUP: it starts with beforeAll, as any reload of all modules"
stop
is "$OP_CODE" 0 "a clean stop"

# ---- a module directory removed: its release is purged, no delete hooks --------------------------
: >"$record"
mkdir -p "$work/tmp/state/releases/gone-module"
start
op_wait_for '"msg":"first converge done'
like "$OP_LOG" "release 'gone-module' purged" "purge: a release without a module directory is purged"
ok "$(grep -q DeleteHelm "$record"; [ $? -ne 0 ]; echo $?)" "purge: no delete hooks run"
ok "$([ ! -e "$work/tmp/state/releases/gone-module" ]; echo $?)" "purge: the release is gone"
stop

# ---- retries: a failing beforeHelm is retried with back-off, from onStartup until it succeeds -----
: >"$record"
hook modules/002-other/hooks/flaky.sh '{"configVersion":"v1","beforeHelm":2}' flaky \
        'n=$(cat '"$work"'/attempts 2>/dev/null || echo 0); echo $((n + 1)) >'"$work"'/attempts
[ "$n" -ge 2 ] || { echo "attempt $((n + 1)) fails" >&2; exit 1; }'
cat >"$work/config.yaml" <<'YAML'
otherEnabled: true
YAML
start
op_wait_for '"msg":"first converge done'
ok $? "retries: the converge finishes"
is "$(grep -c '"msg":"hook .hooks/flaky.sh. failed: exit code 1' <<<"$OP_LOG")" 2 "retries: two failures logged"
like "$OP_LOG" "attempt 2 fails" "retries: the error carries the hook's stderr"
# (afterAll changes the global values again after a restart: memory patches do not survive it.)
is "$(grep -E '^(other|flaky) ' "$record" | tr '\n' ,)" \
        "other onStartup,other beforeHelm,flaky beforeHelm,other onStartup,other beforeHelm,flaky beforeHelm,other onStartup,other beforeHelm,flaky beforeHelm,other afterHelm,other beforeHelm,flaky beforeHelm,other afterHelm," \
        "retries: a first module run starts over from onStartup until it succeeds"
stop

# ---- discovery failures: an enabled script that fails is retried every 5 s (scaled here) ---------
rm -f "$work/modules/002-other/hooks/flaky.sh"
cat >"$work/modules/002-other/enabled" <<SCRIPT
#!/bin/bash
n=\$(cat "$work/enabled-attempts" 2>/dev/null || echo 0); echo \$((n + 1)) >"$work/enabled-attempts"
[ "\$n" -ge 2 ] || { echo "enabled script attempt \$((n + 1)) fails" >&2; exit 3; }
echo true >"\$MODULE_ENABLED_RESULT"
SCRIPT
: >"$record"
start
op_wait_for '"msg":"first converge done'
ok $? "discovery failures: the converge finishes once the script succeeds"
is "$(grep -c 'module discovery failed, retrying in 5 s: hook .other/enabled. failed: exit code 3: enabled script attempt' <<<"$OP_LOG")" 2 \
        "discovery failures: each failure logged with the script's stderr"
is "$(grep -c "retrying in 5 ms" <<<"$OP_LOG")" 2 "discovery failures: a fixed 5 s delay (scaled by 0.001), not the growing back-off"
like "$(cat "$record")" "other onStartup" "discovery failures: the module runs afterwards"
stop

# ---- allowFailure: a failing schedule run is skipped, its queue goes on ---------------------------
hook global/hooks/d-tick.sh '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * * *","allowFailure":true}]}' \
        g-tick 'exit 1'
: >"$record"
start
op_wait_for '"msg":"first converge done'
op_wait_for "task 'GlobalHookRun:tick:hooks/d-tick.sh' failed, allowed"
ok $? "allowFailure: the failed run is reported as allowed"
op_wait_for "task 'GlobalHookRun:tick:hooks/d-tick.sh' failed, allowed"
ok $? "allowFailure: the next tick runs again: the queue is not blocked"
unlike "$OP_LOG" "GlobalHookRun:tick[^']*' failed \\(" "allowFailure: no retry with back-off"
stop
rm -f "$work/global/hooks/d-tick.sh"

# ---- the documentation's enabled-flag examples -------------------------------------------------
mkdir -p "$work/seed/001-nginx-ingress" "$work/seed/001-some-module"
printf 'global:\n  param1: 100\nnginxIngressEnabled: true\nsomeModuleEnabled: false\n' >"$work/seed/values.yaml"
printf 'nginxIngressEnabled: false\n' >"$work/seed/001-nginx-ingress/values.yaml"
printf 'someModule:\n  param1: "String"\n' >"$work/seed/001-some-module/values.yaml"
printf '#!/bin/bash\necho false > $MODULE_ENABLED_RESULT\n' >"$work/seed/001-some-module/enabled"
chmod +x "$work/seed/001-some-module/enabled"
printf 'global: |\n  param1: 200\nsomeModule: |\n  param1: "Long string"\n  param2: "FOO"\nsomeModuleEnabled: "true"\n' \
        >"$work/seed-config.yaml"
start MODULES_DIR="$work/seed" ADDON_OPERATOR_CONFIG_FILE="$work/seed-config.yaml"
op_wait_for '"msg":"first converge done'
like "$OP_LOG" '"msg":"modules discovered: 0 of 2 enabled"' "enabled examples: both modules end up disabled"
like "$OP_LOG" "module 'some-module' disabled by its enabled script" \
        "enabled examples: some-module, enabled by the config, is turned off by its enabled script"
stop

# ---- module hooks load at once: each of these two --config runs waits until the other has started ----
# One module at a time, the first would give up after 5 s and the discovery would fail.
mkfifo "$work/never"
printf 'aEnabled: true\nbEnabled: true\n' >"$work/together.yaml"
for pair in 1:a:b 2:b:a; do
        IFS=: read -r n me other <<<"$pair"
        mkdir -p "$work/together/00$n-$me/hooks"
        cat >"$work/together/00$n-$me/hooks/wait.sh" <<SCRIPT
#!/bin/bash
[ "\${1:-}" = --config ] || exit 0
touch "$work/$me-started"
for _ in \$(seq 500); do
        [ -e "$work/$other-started" ] && { echo '{"configVersion":"v1","beforeHelm":1}'; exit 0; }
        read -r -t 0.01 <>"$work/never" || true
done
echo "$me never saw $other start" >&2
exit 1
SCRIPT
        chmod +x "$work/together/00$n-$me/hooks/wait.sh"
done
cp "$work/together.yaml" "$work/together/values.yaml"
start MODULES_DIR="$work/together"
op_wait_for '"msg":"(first converge done|module discovery failed)'
like "$OP_LOG" '"msg":"first converge done' "modules load at once: the converge finishes"
unlike "$OP_LOG" "module discovery failed" "modules load at once: neither --config waited for the other to end"
is "$(grep -c "hooks loaded" <<<"$OP_LOG")" 2 "modules load at once: both modules' hooks loaded"
stop

# ---- several modules fail to load: the first module's failure is reported, as one at a time ----------
mkdir -p "$work/failing/001-slow/hooks" "$work/failing/002-fast/hooks"
printf 'slowEnabled: true\nfastEnabled: true\n' >"$work/failing/values.yaml"
cat >"$work/failing/001-slow/hooks/x.sh" <<SCRIPT
#!/bin/bash
# Fails only after the later module's hook has failed.
for _ in \$(seq 500); do [ -e "$work/fast-failed" ] && break; read -r -t 0.01 <>"$work/never" || true; done
echo "slow module fails" >&2
exit 3
SCRIPT
cat >"$work/failing/002-fast/hooks/x.sh" <<SCRIPT
#!/bin/bash
touch "$work/fast-failed"
echo "fast module fails" >&2
exit 4
SCRIPT
chmod +x "$work/failing/001-slow/hooks/x.sh" "$work/failing/002-fast/hooks/x.sh"
start MODULES_DIR="$work/failing"
op_wait_for 'module discovery failed'
ok $? "failing modules: the discovery fails"
like "$OP_LOG" "module discovery failed, retrying in 5 s: cannot get the configuration of hook 'hooks/x.sh': hook 'hooks/x.sh' failed: exit code 3: slow module fails" \
        "failing modules: the first module's failure is the one reported"
unlike "$OP_LOG" "module discovery failed[^\"]*fast module fails" "failing modules: the later module's failure is not reported"
stop

# ---- log records: what the records of a hook run and of a task carry ------------------------------
mkdir -p "$work/logs/001-web/hooks" "$work/logs-global/hooks"
printf 'webEnabled: true\n' >"$work/logs/values.yaml"
: >"$work/logs-config.yaml"
cat >"$work/logs/001-web/hooks/say.sh" <<'SCRIPT'
#!/bin/bash
if [ "${1:-}" = --config ]; then
        echo '{"configVersion":"v1","beforeHelm":1,"schedule":[{"name":"tick","crontab":"* * * * * *","queue":"slow"}]}'
        exit 0
fi
echo "hello from $(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")"
echo "a warning from $(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")" >&2
SCRIPT
printf '#!/bin/bash\necho deciding\necho true >"$MODULE_ENABLED_RESULT"\n' >"$work/logs/001-web/enabled"
printf '#!/bin/bash\nif [ "${1:-}" = --config ]; then echo %s; exit 0; fi\necho global hello\n' \
        "'{\"configVersion\":\"v1\",\"onStartup\":1}'" >"$work/logs-global/hooks/hi.sh"
chmod +x "$work/logs/001-web/hooks/say.sh" "$work/logs/001-web/enabled" "$work/logs-global/hooks/hi.sh"
start MODULES_DIR="$work/logs" GLOBAL_HOOKS_DIR="$work/logs-global" ADDON_OPERATOR_CONFIG_FILE="$work/logs-config.yaml"
op_wait_for '"msg":"hello from tick"'
ok $? "log records: the schedule run in its queue logs its line"
stop
record() { # record <jq condition>: the first JSON record of the log it selects, compact
        jq -cR "fromjson? | select($1)" <<<"$OP_LOG" | head -1
}
startup='"queue":"main","task":"ModuleRun","event.type":"OperatorStartup"'
before_helm='"module":"web","hook":"hooks/say.sh","hook.type":"module","binding":"beforeHelm","event":"beforeHelm",'$startup
is "$(record '.msg == "hello from beforeHelm"')" \
        '{"level":"info","msg":"hello from beforeHelm",'"$before_helm"',"output":"stdout"}' \
        "log records: a module hook's stdout line carries module, hook, binding, queue, task and why it runs"
is "$(record '.msg == "a warning from beforeHelm"')" \
        '{"level":"info","msg":"a warning from beforeHelm",'"$before_helm"',"output":"stderr"}' \
        "log records: its stderr line the same, output=stderr"
is "$(record '.msg | startswith("hook '"'"'hooks/say.sh'"'"' succeeded in ")' | jq -c 'del(.msg)')" \
        '{"level":"info",'"$before_helm"'}' "log records: the operator's record of the run carries the same"
is "$(record '.msg == "hello from tick"')" \
        '{"level":"info","msg":"hello from tick","module":"web","hook":"hooks/say.sh","hook.type":"module","binding":"tick","event":"schedule","queue":"slow","task":"ModuleHookRun","event.type":"Schedule","output":"stdout"}' \
        "log records: a schedule run names its binding, the binding's type and its own queue"
is "$(record '.msg == "global hello"')" \
        '{"level":"info","msg":"global hello","hook":"hooks/hi.sh","hook.type":"global","binding":"onStartup","event":"onStartup","queue":"main","task":"GlobalHookRun","event.type":"OperatorStartup","output":"stdout"}' \
        "log records: a global hook's line: no module, hook.type global"
is "$(record '.msg == "deciding"')" \
        '{"level":"info","msg":"deciding","module":"web","hook":"web/enabled","binding":"enabled","queue":"main","task":"ConvergeModules","event.type":"OperatorStartup","output":"stdout"}' \
        "log records: an enabled script's line carries the converge task it runs for"
is "$(record '.msg == "module '"'"'web'"'"' is up to date"')" \
        '{"level":"info","msg":"module '"'"'web'"'"' is up to date","module":"web",'"$startup"'}' \
        "log records: a task's own record carries its module, queue, task and why it runs"
is "$(record '.msg == "converge started (OperatorStartup)"')" \
        '{"level":"info","msg":"converge started (OperatorStartup)","queue":"main","task":"ConvergeModules","event.type":"OperatorStartup"}' \
        "log records: the converge's records carry its task"

# ---- start-up failures --------------------------------------------------------------------------
printf 'someModule: |\n  a: [\n' >"$work/config.yaml"
start
op_finish
is "$OP_CODE" 1 "invalid config file at start: exit code 1"
like "$OP_LOG" "config.yaml.*someModule" "invalid config file at start: file and key named"

printf 'otherEnabled: true\n' >"$work/config.yaml"
mkdir -p "$work/modules2/005-other"
start MODULES_DIR="$work/modules:$work/modules2"
op_finish
is "$OP_CODE" 1 "two modules with one name: exit code 1"
like "$OP_LOG" "two modules named 'other': '$work/modules/002-other' and '$work/modules2/005-other'" \
        "two modules with one name: both paths named"

# STRICT_CHECK_VALUES_MODE_ENABLED: a module without its own values.yaml stops the start.
printf '' >"$work/config.yaml"
mkdir -p "$work/strict/001-has/" "$work/strict/002-lacks"
printf 'has: {}\n' >"$work/strict/001-has/values.yaml"
start MODULES_DIR="$work/strict" STRICT_CHECK_VALUES_MODE_ENABLED=true
op_finish
is "$OP_CODE" 1 "strict values mode, a module without values.yaml: exit code 1"
like "$OP_LOG" "module 'lacks': $work/strict/002-lacks/values.yaml is missing \\(STRICT_CHECK_VALUES_MODE_ENABLED is on\\)" \
        "strict values mode: the module and the file named"
printf 'lacks: {}\n' >"$work/strict/002-lacks/values.yaml"
start MODULES_DIR="$work/strict" ADDON_OPERATOR_STRICT_CHECK_VALUES_MODE_ENABLED=true
op_wait_for '"msg":"first converge done'
ok $? "strict values mode, every module with its values.yaml: the start goes on"
stop

done_testing
