#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# `addon-operator lint` on MODULES modules x 3 trivial hooks, each with an openapi/ schema and a
# values.yaml, against the bare limit of the same work: every hook run once with --config, as
# many at once as lint runs (2 per core, at most 16), by xargs -P. Medians of ROUNDS runs of each.
#   bench/bench-lint.sh [BINARY] [MODULES] [ROUNDS]     (defaults: build/addon-operator, 100, 5)
set -euo pipefail
binary=$(realpath "${1:-build/addon-operator}")
modules=${2:-100}
rounds=${3:-5}
work=$(mktemp -d /tmp/bench-lint.XXXXXX)
trap 'rm -rf "$work"' EXIT

mkdir -p "$work/modules" "$work/global"
: >"$work/modules/values.yaml"
for i in $(seq -w 1 "$modules"); do
        m=$work/modules/$i-m$i
        mkdir -p "$m/hooks" "$m/openapi"
        printf 'type: object\nproperties:\n  replicas: {type: integer, minimum: 1, default: 1}\n' \
                >"$m/openapi/config-values.yaml"
        printf 'm%s:\n  replicas: 2\n' "$i" >"$m/values.yaml"
        for b in onStartup:a beforeHelm:b afterHelm:c; do
                printf '#!/bin/sh\n[ "$1" = --config ] && echo '"'"'{"configVersion":"v1","%s":1}'"'"'\nexit 0\n' \
                        "${b%%:*}" >"$m/hooks/${b##*:}.sh"
                chmod +x "$m/hooks/${b##*:}.sh"
        done
done
find "$work/modules" -name '*.sh' | sort >"$work/hooks"
n_hooks=$(wc -l <"$work/hooks")
cores=$(nproc)
parallel=$((cores * 2 > 16 ? 16 : cores * 2))

now_us() { echo $(($(date +%s%N) / 1000)); }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

: >"$work/bare" && : >"$work/lint"
for _ in $(seq "$rounds"); do
        start=$(now_us)
        xargs -P "$parallel" -I{} sh -c 'cd "${1%/*}" && "$1" --config >/dev/null' _ {} <"$work/hooks"
        echo $(($(now_us) - start)) >>"$work/bare"
        start=$(now_us)
        out=$("$binary" lint --modules-dir "$work/modules" --global-hooks-dir "$work/global" \
                --tmp-dir "$work/tmp")
        echo $(($(now_us) - start)) >>"$work/lint"
done
[ "$out" = "lint: $modules modules, $n_hooks hooks: no problems" ] || { echo "unexpected: $out" >&2; exit 1; }
bare=$(median <"$work/bare")
lint=$(median <"$work/lint")
echo "lint: $modules modules, $n_hooks hooks, $parallel at once, median of $rounds"
awk -v p="$parallel" -v b="$bare" -v l="$lint" 'BEGIN {
        printf "bare --config runs (xargs -P%d): %6.1f ms\n", p, b / 1000
        printf "addon-operator lint:          %6.1f ms   ratio %.2f (bare / lint)\n", l / 1000, b / l }'
