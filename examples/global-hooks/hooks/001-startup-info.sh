#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Global hook: at start-up, record when and where the operator started in the
# global values (a temporary patch, gone after a restart) and export a gauge.
set -euo pipefail

if [ "${1:-}" = "--config" ]; then
        cat <<'YAML'
configVersion: v1
onStartup: 1
YAML
        exit 0
fi

cluster=$(jq -r '.global.clusterName // "unknown"' "$VALUES_PATH")
now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
echo "operator started at $now for cluster $cluster"
jq -nc --arg now "$now" '{op: "add", path: "/global/startedAt", value: $now}' >>"$VALUES_JSON_PATCH_PATH"
jq -nc --arg cluster "$cluster" \
        '{name: "example_operator_start_time_seconds", action: "set", value: now, labels: {cluster: $cluster}}' \
        >>"$METRICS_PATH"
