#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Every 20 seconds, in its own queue: count scrapes in the module's values.
# The change makes the module run again (beforeHelm, release, afterHelm).
set -euo pipefail
if [ "${1:-}" = "--config" ]; then
        cat <<'YAML'
configVersion: v1
schedule:
- name: scrape
  crontab: "*/20 * * * * *"
  queue: exporter
  allowFailure: true
YAML
        exit 0
fi
n=$(jq -r '.flakyExporter.scrapes' "$VALUES_PATH")
jq -nc --argjson n "$((n + 1))" '{op: "add", path: "/flakyExporter/scrapes", value: $n}' >"$VALUES_JSON_PATCH_PATH"
echo '{"name":"example_exporter_scrapes_total","action":"add","value":1}' >>"$METRICS_PATH"
