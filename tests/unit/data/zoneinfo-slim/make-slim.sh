#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Regenerate the "slim" TZif files test-zone and test-cron read through TZDIR: zic -b slim
# leaves out every transition the POSIX TZ footer can compute (for Europe/Berlin all after
# 1996), so the footer decides every current offset. Debian's "fat" files in
# /usr/share/zoneinfo list transitions until 2037 instead. Input: tzdata's own zic source,
# /usr/share/zoneinfo/tzdata.zi (package tzdata); zic is in libc-bin.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
zic -b slim -d "$out" /usr/share/zoneinfo/tzdata.zi
for zone in Europe/Berlin America/New_York Australia/Sydney Australia/Lord_Howe; do
        mkdir -p "$here/$(dirname "$zone")"
        cp "$out/$zone" "$here/$zone"
done
head -n 1 /usr/share/zoneinfo/tzdata.zi >"$here/VERSION"
