#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Black-box tests of `addon-operator lint`: the exact report for a tree with one of every problem,
# the JSON form, the config file check, exit codes. Paths in the report are as the user gave them.
set -u
. "$(dirname "$0")/tap.sh"
: "${AO_BINARY:?AO_BINARY must point at build/addon-operator}"
src=$(cd "$(dirname "$0")/../.." && pwd)
AO_BINARY=$(realpath "$AO_BINARY") # the tests change directory
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
export TMPDIR=$dir

lint() { # lint args... ; sets OUT ERR CODE (run in the current directory)
        OUT=$(env -u MODULES_DIR -u GLOBAL_HOOKS_DIR "$AO_BINARY" lint "$@" 2>"$dir/err"); CODE=$?
        ERR=$(cat "$dir/err")
}

hook() { # hook <path> <--config output> [extra shell lines]: an executable hook
        mkdir -p "$(dirname "$1")"
        printf '#!/bin/sh\nif [ "$1" = --config ]; then\n  echo %s\n  %s\n  exit 0\nfi\n' "'$2'" "${3:-:}" >"$1"
        chmod +x "$1"
}

# ---- the bundled examples are clean, with relative paths ---------------------------------------
cd "$src"
lint --modules-dir examples/modules --global-hooks-dir examples/global-hooks
is "$CODE" 0 "examples: exit 0"
is "$OUT" "lint: 3 modules, 7 hooks: no problems" "examples: no problems, every hook asked"
is "$ERR" "" "examples: nothing on stderr"

# ---- one of every problem ----------------------------------------------------------------------
t=$dir/tree
mkdir -p "$t" && cd "$t"
mkdir -p modules/001-good modules/002-Bad_Name modules/003-vals/openapi modules/005-chart/crds \
        modules/006-good modules/007-schema/openapi extra/001-good global/openapi
printf 'global:\n  a: 1\ngood: {x: 1}\ngoodEnabled: "yes"\nnosuch: {}\nBad_Key: 1\n' >modules/values.yaml
touch modules/README
hook modules/001-good/hooks/a.sh '{"configVersion":"v1","onStartup":1}'
printf 'vals:\n  replicas: 0\n  pair: [a, 1, extra]\nvalsEnabled: maybe\nother: 1\n' >modules/003-vals/values.yaml
printf 'type: object\nproperties:\n  replicas: {type: integer, minimum: 1}\n  name: {type: string}\n  pair:\n    type: array\n    items: [{type: string}, {type: integer}]\n    additionalItems: false\nrequired: [name]\n' \
        >modules/003-vals/openapi/values.yaml
printf 'type: object\nproperties:\n  mode: {type: string, enum: [a, b]}\nrequired: [mode]\n' \
        >modules/003-vals/openapi/config-values.yaml
hook modules/004-hooks/hooks/cron.sh '{"configVersion":"v1","schedule":[{"crontab":"99 * * * *"}]}'
hook modules/004-hooks/hooks/sub/garbage.sh 'not json'
hook modules/004-hooks/hooks/fails.sh '' 'echo "cannot reach the vault" >&2; exit 3'
hook modules/004-hooks/hooks/ignored.sh '{"configVersion":"v1","kubernetesValidating":[{"name":"x"}]}'
hook modules/004-hooks/hooks/sandboxed.sh '{"configVersion":"v1","onStartup":1}'
printf 'profile: no-such-profile\n' >modules/004-hooks/hooks/sandboxed.sh.sandbox.yaml
printf '#!/bin/sh\necho hi\n' >modules/004-hooks/hooks/noexec.sh
printf '#!/bin/sh\n' >modules/004-hooks/enabled
printf 'name: c\nversion: [1]\n' >modules/005-chart/Chart.yaml
printf 'kind: ConfigMap\n---\nkind: CustomResourceDefinition\n' >modules/005-chart/crds/a.yaml
printf 'a: [\n' >modules/005-chart/crds/b.yaml
mkdir -p modules/005-chart/charts/sub
printf 'apiVersion: v2\nname: sub\nversion: 0.1.0\n' >modules/005-chart/charts/sub/Chart.yaml
touch modules/005-chart/charts/packed-1.2.3.tgz
printf 'dependencies:\n- name: sub\n- name: packed\n- name: gone\n' >>modules/005-chart/Chart.yaml
printf 'type: object\nproperties:\n  x: {type: strng}\n' >modules/007-schema/openapi/values.yaml
printf 'type: object\nproperties:\n  a: {type: string}\n' >global/openapi/values.yaml
hook global/hooks/slow.sh '{"configVersion":"v1","onStartup":1}' 'sleep 0.2'

lint --modules-dir modules:extra --global-hooks-dir global
is "$CODE" 1 "broken tree: exit 1"
want="extra/001-good: error: a second module named 'good' (first: 'modules/001-good')
global: error: values do not match openapi/values.yaml: global.a: must be a string (type)
modules/002-Bad_Name: error: module directory '002-Bad_Name': module name 'Bad_Name' is not valid: its values key 'badName' converts back to 'bad-name' (use lower-case words separated by single '-')
modules/003-vals: warning: with no config section, config values do not match openapi/config-values.yaml: vals: 'mode' is required (required)
modules/003-vals: error: values do not match openapi/values.yaml: vals.replicas: must be >= 1 (minimum)
modules/003-vals: error: values do not match openapi/values.yaml: vals.pair: must have at most 2 items, has 3 (additionalItems)
modules/003-vals/values.yaml: error: 'valsEnabled' must be true or false
modules/003-vals/values.yaml: warning: key 'other' is ignored: this file is read for 'vals' and 'valsEnabled' only
modules/004-hooks/enabled: error: the enabled script is not executable (chmod +x is required)
modules/004-hooks/hooks/cron.sh: error: invalid --config output: schedule[0].crontab: cron '99 * * * *': minute: value 99 out of range 0-59
modules/004-hooks/hooks/fails.sh: error: --config failed: exit code 3: cannot reach the vault
modules/004-hooks/hooks/ignored.sh: warning: kubernetesValidating bindings are accepted but not served, ignored
modules/004-hooks/hooks/noexec.sh: warning: not a hook: is not executable (chmod +x is required)
modules/004-hooks/hooks/sandboxed.sh: error: no sandbox profile named 'no-such-profile'
modules/004-hooks/hooks/sub/garbage.sh: error: invalid --config output: the configuration must be an object, not a string
modules/005-chart/Chart.yaml: error: 'apiVersion' is required (a string)
modules/005-chart/Chart.yaml: error: 'version' is required (a string)
modules/005-chart/Chart.yaml: error: dependency 'gone' is missing in charts/ (helm dependency build)
modules/005-chart/crds/a.yaml: error: document 1 is not a CustomResourceDefinition
modules/005-chart/crds/b.yaml:2:1: error: did not find expected node content (while parsing a flow node that starts at 2:1)
modules/006-good: error: a second module named 'good' (first: 'modules/001-good')
modules/007-schema/openapi/values.yaml: error: properties.x.type: unknown type 'strng'
modules/README: warning: not a module directory, ignored
modules/values.yaml: error: 'goodEnabled' must be true or false
modules/values.yaml: warning: key 'nosuch' is unused: there is no module 'nosuch'
modules/values.yaml: warning: key 'Bad_Key' does not name a module (its module name would be 'bad-key'), ignored
lint: 7 modules, 7 hooks: 19 errors, 7 warnings"
is "$OUT" "$want" "broken tree: every problem with its file, sorted by file"

# ---- the JSON report -----------------------------------------------------------------------------
lint --modules-dir modules:extra --global-hooks-dir global -o json
is "$CODE" 1 "json: exit 1"
is "$(jq -c '[.errors, .warnings, .modules, .hooks, (.problems | length)]' <<<"$OUT")" "[19,7,7,7,26]" \
        "json: counts"
is "$(jq -c '.problems[] | select(.path == "modules/005-chart/crds/b.yaml:2:1")' <<<"$OUT")" \
        '{"path":"modules/005-chart/crds/b.yaml:2:1","severity":"error","message":"did not find expected node content (while parsing a flow node that starts at 2:1)"}' \
        "json: one problem as an object"
lint --modules-dir modules -o yaml
is "$CODE" 2 "-o yaml: usage error"
is "$ERR" "addon-operator lint: -o takes text or json, not 'yaml'" "-o yaml: says what it takes"

# ---- the local config file ---------------------------------------------------------------------
mkdir -p "$dir/cfg/modules/001-web/openapi" && cd "$dir/cfg"
printf 'type: object\nproperties:\n  mode: {type: string, enum: [a, b]}\nrequired: [mode]\n' \
        >modules/001-web/openapi/config-values.yaml
lint --modules-dir modules --global-hooks-dir none
is "$CODE" 0 "no config file: a required config key only warns"
is "$OUT" "modules/001-web: warning: with no config section, config values do not match openapi/config-values.yaml: web: 'mode' is required (required)
lint: 1 module, 0 hooks: 0 errors, 1 warning" "no config file: the warning"
printf 'web: |\n  mode: c\n' >config.yaml
ADDON_OPERATOR_CONFIG_FILE=config.yaml lint --modules-dir modules --global-hooks-dir none
is "$CODE" 1 "config file: an invalid section is an error"
is "$OUT" "config.yaml: error: config values do not match openapi/config-values.yaml: web.mode: must be one of 'a', 'b' (enum)
lint: 1 module, 0 hooks: 1 error, 0 warnings" "config file: the error names the file"
printf 'web: |\n  mode: a\n' >config.yaml
lint --modules-dir modules --global-hooks-dir none --config-file config.yaml
is "$CODE$OUT" "0lint: 1 module, 0 hooks: no problems" "config file: a valid section, no problems"
printf 'web: [\n' >config.yaml
lint --modules-dir modules --global-hooks-dir none --config-file config.yaml
is "$OUT" "config.yaml:2:1: error: did not find expected node content (while parsing a flow node that starts at 2:1)
lint: 1 module, 0 hooks: 1 error, 0 warnings" "config file: broken YAML, with its position"

# ---- a modules directory that does not exist -----------------------------------------------------
lint --modules-dir nowhere --global-hooks-dir none
is "$CODE" 1 "missing modules dir: exit 1"
is "$OUT" "nowhere: error: cannot read the modules directory: No such file or directory
lint: 0 modules, 0 hooks: 1 error, 0 warnings" "missing modules dir: named"

# ---- STRICT_CHECK_VALUES_MODE_ENABLED: every module needs its own values.yaml ---------------------
mkdir -p strict/001-has strict/002-lacks
printf 'has: {}\n' >strict/001-has/values.yaml
lint --modules-dir strict --global-hooks-dir none
is "$CODE:$OUT" "0:lint: 2 modules, 0 hooks: no problems" "strict mode off: a missing values.yaml is an empty one"
STRICT_CHECK_VALUES_MODE_ENABLED=true lint --modules-dir strict --global-hooks-dir none
is "$CODE" 1 "strict mode on: exit 1"
is "$OUT" "strict/002-lacks/values.yaml: error: missing (STRICT_CHECK_VALUES_MODE_ENABLED is on)
lint: 2 modules, 0 hooks: 1 error, 0 warnings" "strict mode on: the missing file named"

done_testing
