# SPDX-License-Identifier: Apache-2.0
# shellcheck shell=bash disable=SC2154 # here, work, pid, bench_name, keep_dir: the caller's
# Sourced by the benchmarks on tests/cluster's control plane (bench-releases.sh, bench-first-sync.sh).
# The caller sets, before anything can fail: here (the source tree), bench_name (for messages),
# work (its temporary directory; the cluster lives in $work/c), pid (the operator it runs, or
# empty) and keep_dir (where to copy $work at exit, or empty); then it calls `trap cleanup EXIT`.

# term_wait PID: SIGTERM, then SIGKILL if it is still there after 30 s.
term_wait() {
        local i
        kill -TERM "$1" 2>/dev/null || return 0
        for i in $(seq 300); do
                kill -0 "$1" 2>/dev/null || break
                [ "$i" -lt 300 ] || kill -KILL "$1" 2>/dev/null
                sleep 0.1 # a poll with a deadline: the process is not our child here in every case
        done
        wait "$1" 2>/dev/null
        return 0
}

# cleanup: the operator and the cluster stopped, the work directory kept if asked, then removed.
cleanup() {
        set +e
        [ -n "$pid" ] && term_wait "$pid"
        bash "$here/tests/cluster/cluster.sh" stop "$work/c" >/dev/null 2>&1
        if [ -n "$keep_dir" ]; then
                mkdir -p "$keep_dir" && cp -r "$work/." "$keep_dir/"
        fi
        rm -rf "$work"
}

skip() { # the reason is the last line: bench/run puts it into its "skipped" row
        echo "$bench_name: skipped: $*"
        exit 77
}

fail() {
        echo "$bench_name: $*" >&2
        exit 1
}

# start_real_cluster: tests/cluster's control plane in $work/c (skipped when it cannot start), its
# env file read into this shell; env_file names it.
start_real_cluster() {
        bash "$here/tests/cluster/cluster.sh" start "$work/c" >"$work/cluster-start.log" 2>&1 ||
                skip "the real control plane did not start ($(grep -v 'start failed' "$work/cluster-start.log" | tail -1))"
        env_file=$work/c/env
        # shellcheck disable=SC1090,SC1091
        . "$env_file"
}
