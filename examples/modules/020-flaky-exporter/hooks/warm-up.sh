#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# afterHelm: fails on its first attempt in every operator process, to show a
# failed module run being retried with back-off (5 s, then longer) until it
# succeeds. The marker lives in the hook's temp dir parent, which the
# operator removes when it stops.
set -euo pipefail
if [ "${1:-}" = "--config" ]; then
        echo '{"configVersion":"v1","afterHelm":10}'
        exit 0
fi
marker="$(dirname "$(dirname "$VALUES_PATH")")/flaky-exporter-warmed-up"
if [ ! -e "$marker" ]; then
        : >"$marker"
        echo "not warmed up yet, failing this attempt" >&2
        exit 1
fi
echo "warmed up"
