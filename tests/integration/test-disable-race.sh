#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A module run queued while a converge is still deciding must not bring the module back after that
# converge deleted it. The fixture holds the converge's enabled script until a hook in another
# queue has patched the module's values (which queues a ModuleRun at the tail of the main queue),
# then lets the script answer "disabled": the delete runs first, and the late run must be dropped,
# not run (it would start the module's bindings and write its release again).
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-disable-race.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT
socket=$work/debug.socket

mkdir -p "$work/modules/010-racer/hooks" "$work/global"
printf 'racer:\n  count: 0\nracerEnabled: true\n' >"$work/modules/010-racer/values.yaml"
printf 'global: |\n  round: 1\n' >"$work/config.yaml"
# The enabled script: held while $work/hold exists, then disabled once $work/off exists.
cat >"$work/modules/010-racer/enabled" <<SCRIPT
#!/bin/bash
if [ -e "$work/hold" ]; then
        touch "$work/held"
        while [ -e "$work/hold" ]; do read -r -t 0.02 <> <(:) || true; done
fi
if [ -e "$work/off" ]; then echo false >"\$MODULE_ENABLED_RESULT"; else echo true >"\$MODULE_ENABLED_RESULT"; fi
SCRIPT
# Every second in its own queue; patches the module's values only when kicked.
cat >"$work/modules/010-racer/hooks/side.sh" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then
        echo '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * * *","queue":"side"}]}'
        exit 0
fi
if [ -e "$work/kick" ]; then
        rm -f "$work/kick"
        echo '[{"op":"replace","path":"/racer/count","value":1}]' >"\$VALUES_JSON_PATCH_PATH"
fi
SCRIPT
chmod +x "$work/modules/010-racer/enabled" "$work/modules/010-racer/hooks/side.sh"

wait_file() { # wait_file PATH: up to 20 s
        for _ in $(seq 1000); do [ -e "$1" ] && return 0; read -r -t 0.02 <> <(:) || true; done
        return 1
}
main_queue() { "$AO_BINARY" --debug-unix-socket "$socket" queue main -o json 2>/dev/null; }

op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" DEBUG_UNIX_SOCKET="$socket" LOG_TYPE=json \
        LOG_NO_TIME=true -- start
op_wait_for '"msg":"first converge done'
ok $? "first converge done"
ok "$([ -e "$work/tmp/state/releases/racer/values.yaml" ]; echo $?)" "the module is released"

# A global change reloads all modules; the enabled script holds the converge.
touch "$work/hold" "$work/off"
printf 'global: |\n  round: 2\n' >"$work/config.yaml.new" && mv "$work/config.yaml.new" "$work/config.yaml"
wait_file "$work/held"
ok $? "the converge is deciding, held in the enabled script"
touch "$work/kick"
for _ in $(seq 1000); do
        grep -q 'ModuleRun:racer' <<<"$(main_queue)" && break
        read -r -t 0.02 <> <(:) || true
done
like "$(main_queue)" 'ModuleRun:racer' "the values patch queued a module run behind the converge"
rm -f "$work/hold"

# Either the fix's line or, without it, the run that brings the module back.
op_wait_for "module 'racer' (is disabled, dropping its run|is up to date)"
like "$OP_LOG" "module 'racer' is disabled, dropping its run \\(ModuleValuesChanged\\)" \
        "the late run is dropped"
like "$OP_LOG" "module 'racer' deleted" "the module was deleted before it"
ok "$([ ! -e "$work/tmp/state/releases/racer" ]; echo $?)" "its release stays deleted"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "clean stop"
is "$(grep -c "module 'racer' is up to date" <<<"$OP_LOG")" 1 "one module run in all: the first converge's"
done_testing
