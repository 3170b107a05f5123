#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The module and queue state metrics of a running operator (local mode, a watched config file):
# mm_module_info, mm_module_enabled and its twin d8_telemetry_module_enabled (with the version the
# module's Chart.yaml declares) through enable and disable, mm_module_maintenance set and cleared per module
# (kept through the module's delete), and tasks_queue_head_info following the head task of each
# queue as hooks hold it (GlobalHookRun, ParallelModuleRun, ModuleRun, ModuleHookRun), its old
# series gone when the head changes or the queue empties. Exact metric lines throughout.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-module-metrics.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT

# A hook that, while $work/hold-NAME exists, marks $work/held-NAME and waits for it to go.
hook() { # hook <path> <config JSON> <NAME>
        mkdir -p "$(dirname "$work/$1")"
        cat >"$work/$1" <<SCRIPT
#!/bin/bash
if [ "\${1:-}" = --config ]; then echo '$2'; exit 0; fi
if [ -e "$work/hold-$3" ]; then
        touch "$work/held-$3"
        while [ -e "$work/hold-$3" ]; do read -r -t 0.02 <> <(:) || true; done
        rm -f "$work/held-$3"
fi
SCRIPT
        chmod +x "$work/$1"
}
mkdir -p "$work/modules/010-beta" "$work/modules/020-gamma"
printf 'apiVersion: v2\nname: beta\nversion: 1.2.3\n' >"$work/modules/010-beta/Chart.yaml"
printf 'apiVersion: v2\nname: gamma-chart\nversion: "0.4.0"\n' >"$work/modules/020-gamma/Chart.yaml"
printf 'alphaEnabled: true\nbetaEnabled: true\ngammaEnabled: false\ndeltaEnabled: true\n' >"$work/modules/values.yaml"
hook modules/010-alpha/hooks/hold.sh '{"configVersion":"v1","beforeHelm":1}' alpha
hook modules/030-delta/hooks/tick.sh '{"configVersion":"v1","schedule":[{"name":"tick","crontab":"* * * * * *","queue":"ticks"}]}' tick
hook global/hooks/before.sh '{"configVersion":"v1","beforeAll":1}' global
config() { # config YAML: replace the config file as an editor would
        printf '%s\n' "$1" >"$work/config.yaml.new" && mv "$work/config.yaml.new" "$work/config.yaml"
}
config 'alpha: {round: 1}'

wait_file() { # wait_file PATH: up to 20 s
        for _ in $(seq 1000); do [ -e "$1" ] && return 0; read -r -t 0.02 <> <(:) || true; done
        return 1
}
family() { # family NAME: the series lines of addon_operator_NAME now
        curl -s "$url/metrics" | grep "^addon_operator_$1[{ ]"
}
telemetry() { curl -s "$url/metrics" | grep '^d8_telemetry_module_enabled[{ ]'; }
family_is() { [ "$(family "$1")" = "$2" ]; }
wait_family() { # wait_family NAME LINES: until the family's series are exactly LINES (up to 20 s)
        for _ in $(seq 400); do family_is "$1" "$2" && return 0; read -r -t 0.05 <> <(:) || true; done
        return 1
}
has_line() { curl -s "$url/metrics" | grep -qxF -- "$1"; }
wait_line() { # wait_line LINE: until /metrics has LINE (the queues are sampled every 5 s)
        for _ in $(seq 400); do has_line "$1" && return 0; read -r -t 0.05 <> <(:) || true; done
        return 1
}
no_main_head() { ! curl -s "$url/metrics" | grep -q '^addon_operator_tasks_queue_head_info{queue="main"'; }
wait_no_main_head() {
        for _ in $(seq 400); do no_main_head && return 0; read -r -t 0.05 <> <(:) || true; done
        return 1
}

op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" ADDON_OPERATOR_LISTEN_ADDRESS=127.0.0.1 \
        ADDON_OPERATOR_PARALLEL_MODULE_RUNS=2 LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"http: listening on'
port=$(printf '%s' "$OP_LOG" | sed -n 's/.*http: listening on 127.0.0.1:\([0-9]*\).*/\1/p' | tail -1)
url=http://127.0.0.1:$port
op_wait_for '"msg":"first converge done'
ok $? "the operator converges"

# ---- mm_module_info, mm_module_enabled and mm_module_maintenance after the start -------------------
is "$(family mm_module_info)" 'addon_operator_mm_module_info{module="alpha",enabled="true",critical="true"} 1
addon_operator_mm_module_info{module="beta",enabled="true",critical="true"} 1
addon_operator_mm_module_info{module="delta",enabled="true",critical="true"} 1
addon_operator_mm_module_info{module="gamma",enabled="false",critical="true"} 1' \
        "mm_module_info: every module, enabled as discovered"
metrics=$(curl -s "$url/metrics")
is "$(family mm_module_enabled)" 'addon_operator_mm_module_enabled{module="alpha",version=""} 1
addon_operator_mm_module_enabled{module="beta",version="1.2.3"} 1
addon_operator_mm_module_enabled{module="delta",version=""} 1' \
        "mm_module_enabled: the enabled modules, with their Chart.yaml's version (none: empty)"
is "$(telemetry)" 'd8_telemetry_module_enabled{module="alpha",version=""} 1
d8_telemetry_module_enabled{module="beta",version="1.2.3"} 1
d8_telemetry_module_enabled{module="delta",version=""} 1' \
        "d8_telemetry_module_enabled: the same series, without the operator's prefix"
like "$metrics" '# TYPE d8_telemetry_module_enabled gauge' "the twin is a gauge"
like "$metrics" '# TYPE addon_operator_mm_module_maintenance gauge' "mm_module_maintenance is listed"
is "$(family mm_module_maintenance)" "" "mm_module_maintenance: no module in maintenance, no series"
like "$metrics" '# TYPE addon_operator_tasks_queue_head_info gauge' "tasks_queue_head_info is listed"

# ---- tasks_queue_head_info -------------------------------------------------------------------------
# A reload of all modules whose beforeAll hook holds main.
touch "$work/hold-global" "$work/hold-alpha"
kill -HUP "$OP_PID"
wait_file "$work/held-global"
ok $? "the beforeAll hook holds the converge"
wait_family tasks_queue_head_info \
        'addon_operator_tasks_queue_head_info{queue="main",module="",task_type="GlobalHookRun",hook="hooks/before.sh"} 1'
is "$(family tasks_queue_head_info)" \
        'addon_operator_tasks_queue_head_info{queue="main",module="",task_type="GlobalHookRun",hook="hooks/before.sh"} 1' \
        "head of main: the global hook run"
# The modules of order 10 (alpha, beta) run as one group; alpha's beforeHelm holds it.
rm -f "$work/hold-global"
wait_file "$work/held-alpha"
ok $? "alpha's beforeHelm holds the group run"
wait_family tasks_queue_head_info \
        'addon_operator_tasks_queue_head_info{queue="main",module="",task_type="ParallelModuleRun",hook=""} 1'
is "$(family tasks_queue_head_info)" \
        'addon_operator_tasks_queue_head_info{queue="main",module="",task_type="ParallelModuleRun",hook=""} 1' \
        "head of main: the group run, without a module, its predecessor's series gone"
rm -f "$work/hold-alpha"
op_wait_for '"msg":"converge done'
wait_no_main_head
ok $? "main is empty: its head series is gone"

# A change of alpha's section runs alpha alone.
touch "$work/hold-alpha"
config 'alpha: {round: 2}'
wait_file "$work/held-alpha"
ok $? "alpha's run is held"
wait_line 'addon_operator_tasks_queue_head_info{queue="main",module="alpha",task_type="ModuleRun",hook=""} 1'
ok $? "head of main: alpha's module run"
rm -f "$work/hold-alpha"
wait_no_main_head
ok $? "alpha's run is done: no head series for main"

# A module's schedule hook held in its own queue.
touch "$work/hold-tick"
wait_file "$work/held-tick"
ok $? "delta's schedule hook is held"
wait_line 'addon_operator_tasks_queue_head_info{queue="ticks",module="delta",task_type="ModuleHookRun",hook="hooks/tick.sh"} 1'
ok $? "head of queue ticks: delta's hook run"
rm -f "$work/hold-tick"

# ---- maintenance, and a module disabled ------------------------------------------------------------
config 'alpha: {round: 2}
alphaMaintenance: NoResourceReconciliation
betaMaintenance: NoResourceReconciliation'
wait_family mm_module_maintenance 'addon_operator_mm_module_maintenance{module="alpha",state="NoResourceReconciliation"} 1
addon_operator_mm_module_maintenance{module="beta",state="NoResourceReconciliation"} 1'
is "$(family mm_module_maintenance)" 'addon_operator_mm_module_maintenance{module="alpha",state="NoResourceReconciliation"} 1
addon_operator_mm_module_maintenance{module="beta",state="NoResourceReconciliation"} 1' \
        "mm_module_maintenance: the two modules the config puts in maintenance"

config 'alpha: {round: 2}
alphaMaintenance: NoResourceReconciliation
betaMaintenance: NoResourceReconciliation
betaEnabled: false
gammaEnabled: true'
op_wait_for "module 'beta' deleted"
ok $? "beta is disabled and deleted"
op_wait_for '"msg":"converge done'
is "$(family mm_module_info)" 'addon_operator_mm_module_info{module="alpha",enabled="true",critical="true"} 1
addon_operator_mm_module_info{module="beta",enabled="false",critical="true"} 1
addon_operator_mm_module_info{module="delta",enabled="true",critical="true"} 1
addon_operator_mm_module_info{module="gamma",enabled="true",critical="true"} 1' \
        "mm_module_info: beta disabled, gamma enabled; beta's series outlives its delete"
is "$(family mm_module_enabled)" 'addon_operator_mm_module_enabled{module="alpha",version=""} 1
addon_operator_mm_module_enabled{module="delta",version=""} 1
addon_operator_mm_module_enabled{module="gamma",version="0.4.0"} 1' \
        "mm_module_enabled: beta's series is gone, gamma's is there"
is "$(telemetry)" 'd8_telemetry_module_enabled{module="alpha",version=""} 1
d8_telemetry_module_enabled{module="delta",version=""} 1
d8_telemetry_module_enabled{module="gamma",version="0.4.0"} 1' \
        "d8_telemetry_module_enabled: the same"
is "$(family mm_module_maintenance)" 'addon_operator_mm_module_maintenance{module="alpha",state="NoResourceReconciliation"} 1
addon_operator_mm_module_maintenance{module="beta",state="NoResourceReconciliation"} 1' \
        "mm_module_maintenance: beta's series outlives its delete too"
unlike "$(curl -s "$url/metrics")" 'module_run_seconds_count\{module="beta"' "the deleted module's run series are gone"

config 'alpha: {round: 2}
alphaMaintenance: NoResourceReconciliation
betaEnabled: false
gammaEnabled: true'
wait_family mm_module_maintenance \
        'addon_operator_mm_module_maintenance{module="alpha",state="NoResourceReconciliation"} 1'
is "$(family mm_module_maintenance)" \
        'addon_operator_mm_module_maintenance{module="alpha",state="NoResourceReconciliation"} 1' \
        "mm_module_maintenance: beta out of maintenance, alpha still in"

promtool check metrics <<<"$(curl -s "$url/metrics")" >"$work/promtool.out" 2>&1
unexpected=$(grep -v -e 'live_ticks counter metrics should have "_total" suffix' \
        -e 'convergence_seconds counter metrics should have "_total" suffix' \
        -e 'binding_count non-histogram and non-summary metrics should not have "_count" suffix' \
        "$work/promtool.out")
is "$unexpected" "" "promtool check metrics: nothing about the new families"

kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"
done_testing
