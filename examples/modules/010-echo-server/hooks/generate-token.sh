#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# onStartup: make sure the module has a token. A new one is stored with a
# config patch, so it lands in the config file and survives restarts.
set -euo pipefail
if [ "${1:-}" = "--config" ]; then
        echo '{"configVersion":"v1","onStartup":10}'
        exit 0
fi
if [ "$(jq -r '.echoServer.token // empty' "$CONFIG_VALUES_PATH")" = "" ]; then
        token=$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
        echo "generated a token for echo-server"
        jq -nc --arg t "$token" '{op: "add", path: "/echoServer/token", value: $t}' >"$CONFIG_VALUES_JSON_PATCH_PATH"
fi
