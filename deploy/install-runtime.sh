#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# install-runtime.sh: turn a minimal Debian 12 root (debian:12-slim, or debootstrap
# --variant=minbase bookworm) into the operator's runtime, from inside that root, as root:
# the packages of runtime-packages.txt (next to this script), the unprivileged user the
# operator runs as, and the directories it expects.
#
# The Dockerfile's runtime stage runs exactly this, and tests/deploy/test-runtime-root.sh runs
# it in a fresh debootstrap root before it starts the operator there, so what the test proves
# is what the image gets.
set -euo pipefail

here=$(dirname "$0")
list=${AO_RUNTIME_PACKAGES:-$here/runtime-packages.txt}

# One package per line; '#' starts a comment.
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$list")
if [ ${#packages[@]} -eq 0 ]; then
        echo "install-runtime.sh: no packages in $list" >&2
        exit 1
fi

export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# No recommends: the list is the whole runtime, and the test proves it suffices.
apt-get install -y -qq --no-install-recommends "${packages[@]}" >/dev/null
apt-get clean
rm -rf /var/lib/apt/lists/*

# A fixed numeric id, so a pod's runAsNonRoot check can see it is not root without looking the
# name up, and runAsUser in the manifests matches it.
if ! getent passwd addon-operator >/dev/null; then
        groupadd --system --gid 65532 addon-operator
        useradd --system --uid 65532 --gid 65532 --home-dir /home/addon-operator --create-home \
                --shell /usr/sbin/nologin addon-operator
fi

# /modules and /global-hooks are where the Go operator's image looks (MODULES_DIR and
# GLOBAL_HOOKS_DIR point there); they stay empty here and images built FROM this one fill them.
# /run/addon-operator holds the debug socket (DEBUG_UNIX_SOCKET's default directory, through
# Debian's /var/run -> /run link).
install -d -m 0755 /modules /global-hooks
install -d -m 0755 -o 65532 -g 65532 /run/addon-operator
