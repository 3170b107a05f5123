#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: install what is missing, build with ASan+UBSan
# into build/, run every suite (unit, integration, fuzz corpus replay) and
# print the totals as the last line.
set -uo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-deps || exit 1
if [ -f build/build.ninja ]; then
        meson configure build -Db_sanitize=address,undefined -Dfuzz=false >/dev/null || exit 1
else
        meson setup build -Db_sanitize=address,undefined >/dev/null || exit 1
fi
ninja -C build || exit 1

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=$?
python3 tests/tap-totals.py build/meson-logs/testlog.json
exit $status
