# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154,SC2034 # here, work: the caller's; bins, tags, fk_pid, port: for the caller
# Sourced by the benchmarks that run the operator against tests/fakekube (bench-kube-memory.sh,
# bench-context-peak.sh, bench-queued-events.sh). The caller sets here (the source tree) and work
# (its temporary directory) first.

# ab_binaries [OLD] NEW: bins (absolute paths) and tags (old/new) from the arguments; no argument
# means build-release/addon-operator alone. Exits 2 with the script's usage lines ("#   ...") on
# more than two, or a binary that is not executable.
ab_binaries() {
        case $# in
        0) bins=(build-release/addon-operator) tags=(new) ;;
        1) bins=("$1") tags=(new) ;;
        2) bins=("$1" "$2") tags=(old new) ;;
        *) sed -n 's/^#   //p' "$0" >&2; exit 2 ;;
        esac
        local i
        for i in "${!bins[@]}"; do
                bins[i]=$(realpath "${bins[i]}")
                [ -x "${bins[i]}" ] || { echo "not executable: ${bins[i]}" >&2; exit 2; }
        done
}

# fakekube_with_configmaps N: the fake API server started with N ConfigMaps cm-000000... in
# namespace "bench" (two labels, one data key); sets fk_pid and port once it listens.
fakekube_with_configmaps() {
        python3 -c 'import json,sys
n=int(sys.argv[1])
print(json.dumps([{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%06d" % i,"namespace":"bench","labels":{"app":"bench","index":str(i)}},"data":{"key":"value-%d" % i}} for i in range(n)]))' "$1" >"$work/state.json"
        rm -f "$work/fk.port"
        python3 "$here/tests/fakekube/fakekube.py" --port 0 --port-file "$work/fk.port" --state "$work/state.json" \
                2>/dev/null &
        fk_pid=$!
        until [ -s "$work/fk.port" ]; do
                kill -0 "$fk_pid" 2>/dev/null || { echo "fakekube exited before it listened" >&2; exit 1; }
                sleep 0.05
        done
        port=$(cat "$work/fk.port")
}
