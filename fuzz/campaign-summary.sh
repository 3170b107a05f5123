#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# Totals per target of the segments fuzz/campaign.sh recorded:
#   fuzz/campaign-summary.sh [WORK_DIR]
# prints a Markdown table: target, CPU hours, executions, the last segment's coverage and
# features, segments, and the findings (anything but "clean").
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
ledger=${1:-$src/../fuzz-work}/ledger.tsv
[ -f "$ledger" ] || { echo "no ledger at $ledger" >&2; exit 2; }
echo "| target | CPU hours | executions | cov | ft | segments | findings |"
echo "| --- | ---: | ---: | ---: | ---: | ---: | --- |"
awk -F'\t' '
{
        t = $2; cpu[t] += $4; ex[t] += $5; cov[t] = $6; ft[t] = $7; seg[t]++
        if ($9 != "clean") found[t] = found[t] (found[t] ? ", " : "") $9
}
END {
        for (t in cpu)
                printf "| %s | %.2f | %d | %s | %s | %d | %s |\n", t, cpu[t] / 3600, ex[t], cov[t], ft[t],
                       seg[t], found[t] ? found[t] : "none"
}' "$ledger" | sort
