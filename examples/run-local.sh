#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Quick start: install what is missing, build, and run the operator on the
# bundled examples with no cluster. Stop it with Ctrl-C (SIGINT) or SIGTERM.
# Extra arguments go to the operator, e.g. `bash examples/run-local.sh --log-type json`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-deps
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null

state=${ADDON_OPERATOR_TMP_DIR:-$(mktemp -d /tmp/addon-operator-local.XXXXXX)}
echo "addon-operator: modules in examples/modules, global hooks in examples/global-hooks, state in $state" >&2
export MODULES_DIR=$PWD/examples/modules
export GLOBAL_HOOKS_DIR=$PWD/examples/global-hooks
export ADDON_OPERATOR_NAMESPACE=${ADDON_OPERATOR_NAMESPACE:-local}
export ADDON_OPERATOR_TMP_DIR=$state
# The config file is the local stand-in for the ConfigMap: hooks write config patches into it,
# and editing it while the operator runs triggers what a ConfigMap edit would.
[ -f "$state/config.yaml" ] || cp examples/config.yaml "$state/config.yaml"
export ADDON_OPERATOR_CONFIG_FILE=$state/config.yaml
# The debug commands (addon-operator queue list, module values NAME, ...) talk to this socket.
export DEBUG_UNIX_SOCKET=${DEBUG_UNIX_SOCKET:-$state/debug.socket}
echo "addon-operator: config file $state/config.yaml, releases in $state/state/releases" >&2
echo "addon-operator: metrics on http://127.0.0.1:${ADDON_OPERATOR_LISTEN_PORT:-9650}/metrics;" \
        "try: DEBUG_UNIX_SOCKET=$state/debug.socket build/addon-operator queue list" >&2
export LOG_TYPE=${LOG_TYPE:-color}
exec build/addon-operator start "$@"
