#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The informers' metadata-only mode against a real kube-apiserver (tests/cluster: Debian's kubernetes
# 1.20, etcd 3.4): tests/unit/test-informer.c in its AO_TEST_CLUSTER mode, on a control plane of its
# own started without the watch cache (so that a compaction makes a resumed watch's 410 certain).
# Its TAP is this test's. AO_SKIP_REAL_CLUSTER=1 skips it.
set -uo pipefail

if [ -n "${AO_SKIP_REAL_CLUSTER:-}" ]; then
        echo "1..0 # SKIP AO_SKIP_REAL_CLUSTER is set"
        exit 0
fi
here=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d /tmp/test-informer-real.XXXXXX)
cleanup() {
        bash "$here/tests/cluster/cluster.sh" stop "$work/c" >/dev/null 2>&1
        rm -rf "$work"
}
trap cleanup EXIT

# No controller manager: nothing here needs one, and it would hold connections the test does not make.
if ! AO_NO_CONTROLLER_MANAGER=1 AO_APISERVER_FLAGS=--watch-cache=false \
        bash "$here/tests/cluster/cluster.sh" start "$work/c" >"$work/cluster-start.log" 2>&1; then
        tail -20 "$work/cluster-start.log" | sed 's/^/# /'
        echo "Bail out! etcd and kube-apiserver did not start"
        exit 1
fi
AO_TEST_CLUSTER="$work/c" AO_CLUSTER_SH="$here/tests/cluster/cluster.sh" "$AO_TEST_INFORMER"
