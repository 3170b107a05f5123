#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Python hooks and a module's hooks/venv, in local mode: a module hook named *.py runs as
# `<module>/hooks/venv/bin/python3 <hook> [--config]` with PYTHONHOME=<venv> when that interpreter
# is there, for its --config run and its event runs alike; without it, and for a hook that is not
# a .py, the file runs itself through its #! line. The venv's interpreter here is a script that
# logs how it was called and runs the system python3; its lib/python3.X links the system's
# standard library, so that python3 starts with PYTHONHOME pointing at the venv, and sys.prefix
# says which Python ran the hook. `addon-operator lint` asks the hook the same way.
set -uo pipefail
. "$(dirname "$0")/tap.sh"

work=$(mktemp -d /tmp/test-python-hooks.XXXXXX)
trap 'kill -9 "${OP_PID:-0}" 2>/dev/null; rm -rf "$work"' EXIT
python=$(command -v python3)
stdlib=$("$python" -c 'import sysconfig; print(sysconfig.get_path("stdlib"))')
system_prefix=$("$python" -c 'import sys; print(sys.prefix)')

# report_hook <path> <values key>: a Python hook (beforeHelm) that puts which Python ran it into
# its module's values.
report_hook() {
        mkdir -p "$(dirname "$work/$1")"
        cat >"$work/$1" <<PY
#!/usr/bin/env python3
import json, os, sys
if sys.argv[1:] == ["--config"]:
    print(json.dumps({"configVersion": "v1", "beforeHelm": 1}))
    sys.exit(0)
ran = {"prefix": sys.prefix, "pythonhome": os.environ.get("PYTHONHOME"), "script": sys.argv[0]}
with open(os.environ["VALUES_JSON_PATCH_PATH"], "w") as f:
    json.dump([{"op": "add", "path": "/$2/ran", "value": ran}], f)
PY
        chmod +x "$work/$1"
}

mkdir -p "$work/modules" "$work/global"
cat >"$work/modules/values.yaml" <<'YAML'
withVenvEnabled: true
withoutVenvEnabled: true
YAML
report_hook modules/001-with-venv/hooks/report.py withVenv
report_hook modules/002-without-venv/hooks/report.py withoutVenv
# Not a .py: runs itself even in a module with a venv.
cat >"$work/modules/001-with-venv/hooks/shell.sh" <<EOF
#!/bin/sh
if [ "\$1" = --config ]; then echo '{"configVersion":"v1","onStartup":1}'; exit 0; fi
echo "\$0 PYTHONHOME=\${PYTHONHOME:-unset}" >"$work/shell.log"
EOF
chmod +x "$work/modules/001-with-venv/hooks/shell.sh"

venv=$work/modules/001-with-venv/hooks/venv
mkdir -p "$venv/bin" "$venv/lib"
ln -s "$stdlib" "$venv/lib/$(basename "$stdlib")"
cat >"$venv/bin/python3" <<EOF
#!/bin/sh
echo "\$0 \$* PYTHONHOME=\$PYTHONHOME" >>"$work/interpreter.log"
exec "$python" "\$@"
EOF
chmod +x "$venv/bin/python3"

op_start MODULES_DIR="$work/modules" GLOBAL_HOOKS_DIR="$work/global" ADDON_OPERATOR_TMP_DIR="$work/tmp" \
        ADDON_OPERATOR_CONFIG_FILE="$work/config.yaml" LOG_TYPE=json LOG_NO_TIME=true -- start
op_wait_for '"msg":"first converge done'
ok $? "the modules converge"
kill -TERM "$OP_PID"
op_finish
is "$OP_CODE" 0 "a clean stop"

hook=$work/modules/001-with-venv/hooks/report.py
is "$(cat "$work/interpreter.log")" "$venv/bin/python3 $hook --config PYTHONHOME=$venv
$venv/bin/python3 $hook PYTHONHOME=$venv" \
        "with hooks/venv: its python3 runs the .py hook, for --config and for the event, with PYTHONHOME=<venv>"
ran() { "$AO_BINARY" tool yaml2json "$work/tmp/state/releases/$1/values.yaml" | jq -c ".$2.ran"; }
is "$(ran with-venv withVenv)" "{\"prefix\":\"$venv\",\"pythonhome\":\"$venv\",\"script\":\"$hook\"}" \
        "with hooks/venv: the hook ran in the venv (sys.prefix is the venv) and wrote its values"
is "$(ran without-venv withoutVenv)" \
        "{\"prefix\":\"$system_prefix\",\"pythonhome\":null,\"script\":\"$work/modules/002-without-venv/hooks/report.py\"}" \
        "without hooks/venv: the .py hook runs itself, through its #! line"
like "$OP_LOG" "module 'without-venv': hook 'hooks/report.py' is a Python hook but the module has no hooks/venv/bin/python3: it runs through its own #! line" \
        "without hooks/venv: a warning says so"
is "$(cat "$work/shell.log")" "$work/modules/001-with-venv/hooks/shell.sh PYTHONHOME=unset" \
        "a hook that is not a .py runs itself, without PYTHONHOME, in a module with a venv"

# ---- lint asks the hook the same way -------------------------------------------------------------
: >"$work/interpreter.log"
out=$(env -u MODULES_DIR -u GLOBAL_HOOKS_DIR TMPDIR="$work" "$AO_BINARY" lint --modules-dir "$work/modules" \
        --global-hooks-dir "$work/global" 2>&1)
is "$out" "lint: 2 modules, 3 hooks: no problems" "lint: no problems"
is "$(cat "$work/interpreter.log")" "$venv/bin/python3 $hook --config PYTHONHOME=$venv" \
        "lint: the venv's python3 answers --config"

done_testing
