#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
#
# One segment of a long fuzz campaign, counted in CPU time rather than wall time.
#
#   fuzz/campaign.sh TARGET CPU_SECONDS [BUILD_DIR] [WORK_DIR]
#
# Runs BUILD_DIR/fuzz/fuzz-TARGET (a -Dfuzz=true build, see docs/FUZZING.md) at nice 19 on
# WORK_DIR/TARGET, seeded from fuzz/corpus/TARGET the first time, until the fuzzer process has
# used CPU_SECONDS of CPU (user + system), then stops it with SIGINT so that libFuzzer prints
# its final statistics. CPU time is what the campaign requirement counts: a niced fuzzer on a
# busy machine gets far less CPU than wall time, so -max_total_time would overstate the work.
#
# Every segment appends one line to WORK_DIR/ledger.tsv:
#   date  target  commit  cpu_seconds  executions  coverage(cov)  features(ft)  corpus_files  outcome
# where outcome is "clean" or the kind of the finding (crash, leak, timeout, oom) with its file.
# Segments on the same WORK_DIR continue from the corpus the earlier ones grew; the ledger sums
# them per target (fuzz/campaign-summary.sh).
set -euo pipefail

target=${1:?usage: campaign.sh TARGET CPU_SECONDS [BUILD_DIR] [WORK_DIR]}
cpu_goal=${2:?usage: campaign.sh TARGET CPU_SECONDS [BUILD_DIR] [WORK_DIR]}
src=$(cd "$(dirname "$0")/.." && pwd)
build=${3:-$src/build-fuzz}
work=${4:-$src/../fuzz-work}
binary=$build/fuzz/fuzz-$target
[ -x "$binary" ] || { echo "campaign: $binary not built (see docs/FUZZING.md)" >&2; exit 2; }

mkdir -p "$work/$target" "$work/logs"
if [ -z "$(ls -A "$work/$target")" ]; then
        cp "$src/fuzz/corpus/$target"/* "$work/$target"/
fi
dict=()
[ -f "$src/fuzz/$target.dict" ] && dict=(-dict="$src/fuzz/$target.dict")
stamp=$(date -u +%Y%m%dT%H%M%SZ)
# The commit the binary was built from is the checkout's at the start (it may move while this runs).
commit=$(git -C "$src" rev-parse --short HEAD 2>/dev/null || echo unknown)
log=$work/logs/$target-$stamp.log

nice -n 19 "$binary" "${dict[@]}" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -print_final_stats=1 -artifact_prefix="$work/$target-" "$work/$target" >"$log" 2>&1 &
pid=$!
ticks=$(getconf CLK_TCK)

# utime + stime of the fuzzer, in seconds (fields 14 and 15 of /proc/PID/stat; the command name
# in field 2 has no spaces here).
cpu_seconds() {
        awk -v t="$ticks" '{ printf "%d", ($14 + $15) / t }' "/proc/$pid/stat" 2>/dev/null || echo 0
}

used=0
while kill -0 "$pid" 2>/dev/null; do
        used=$(cpu_seconds)
        if [ "$used" -ge "$cpu_goal" ]; then
                kill -INT "$pid"
                break
        fi
        sleep 5 # polling a counter, not waiting for a race: the fuzzer runs on its own
done
wait "$pid" && status=0 || status=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
last=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
files=$(find "$work/$target" -type f | wc -l)
outcome=clean
finding=$(grep -oE "(crash|leak|timeout|oom|slow-unit)-[0-9a-f]+" "$log" | head -1 || true)
if [ -n "$finding" ]; then
        outcome="${finding%%-*}:$work/$target-$finding"
elif [ "$status" -ne 0 ] && ! grep -q "run interrupted" "$log"; then
        outcome="exit-$status:$log"
fi
printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$stamp" "$target" "$commit" "$used" "${execs:-0}" \
        "${cov:-0}" "${ft:-0}" "$files" "$outcome" >>"$work/ledger.tsv"
tail -1 "$work/ledger.tsv"
