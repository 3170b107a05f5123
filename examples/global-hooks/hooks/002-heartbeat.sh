#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Global hook: before and after every pass over the modules, and every 30
# seconds, count how often it ran (a counter) and note which binding woke it.
set -euo pipefail

if [ "${1:-}" = "--config" ]; then
        cat <<'YAML'
configVersion: v1
beforeAll: 10
afterAll: 10
schedule:
- name: heartbeat
  crontab: "*/30 * * * * *"
  allowFailure: true
YAML
        exit 0
fi

for binding in $(jq -r '.[].binding' "$BINDING_CONTEXT_PATH"); do
        echo "woken by $binding"
        jq -nc --arg binding "$binding" \
                '{name: "example_heartbeat_runs_total", action: "add", value: 1, labels: {binding: $binding}}' \
                >>"$METRICS_PATH"
done
