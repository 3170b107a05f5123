#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Logs each lifecycle binding of the module, including afterDeleteHelm when
# the module is switched off.
set -euo pipefail
if [ "${1:-}" = "--config" ]; then
        echo '{"configVersion":"v1","onStartup":1,"beforeHelm":1,"afterHelm":1,"afterDeleteHelm":1}'
        exit 0
fi
echo "extras: $(jq -r '.[0].binding' "$BINDING_CONTEXT_PATH")"
