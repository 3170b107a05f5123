#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The README's test command: install what is missing, build with ASan+UBSan
# into build/, run every suite (unit, integration, fuzz corpus replay) and
# print the totals as the last line. AO_SKIP_REAL_CLUSTER=1 leaves out the real-cluster suite's
# kube-apiserver build (the suite then skips).
set -uo pipefail
cd "$(dirname "$0")/.."

bash .ci/install-deps || exit 1
if [ -f build/build.ninja ]; then
        meson configure build -Db_sanitize=address,undefined -Dfuzz=false >/dev/null || exit 1
else
        meson setup build -Db_sanitize=address,undefined >/dev/null || exit 1
fi
ninja -C build || exit 1
# The real-cluster suite needs kube-apiserver, built once from Debian's source package and cached
# (about 6 minutes the first time): built here so that no test's timeout includes the build.
if [ -z "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        bash tests/cluster/get-apiserver.sh >/dev/null || echo "run-all: kube-apiserver could not be built; the cluster suite will fail" >&2
fi

status=0
meson test -C build --print-errorlogs --num-processes 2 || status=$?
python3 tests/tap-totals.py build/meson-logs/testlog.json
exit $status
