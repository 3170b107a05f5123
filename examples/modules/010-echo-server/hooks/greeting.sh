#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# beforeHelm: compute a value for the chart from global and module values
# (a memory patch: recomputed on every run, never stored).
set -euo pipefail
if [ "${1:-}" = "--config" ]; then
        echo '{"configVersion":"v1","beforeHelm":10}'
        exit 0
fi
greeting=$(jq -r '"\(.echoServer.message) from \(.global.clusterName)"' "$VALUES_PATH")
jq -nc --arg g "$greeting" '{op: "add", path: "/echoServer/internal", value: {greeting: $g}}' >"$VALUES_JSON_PATCH_PATH"
