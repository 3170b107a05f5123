#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Idle memory: the operator in local mode with no modules and no global hooks, once its first
# converge is done, on each event loop backend; against the machine's floor for a process built on
# the same libraries: /bin/sleep with every shared library the operator links preloaded (their
# text, data and constructors, nothing of the operator's own). RSS from /proc/<pid>/status, median
# of ROUNDS starts each, alternating.
#   bench/bench-idle.sh [BINARY] [ROUNDS]     (defaults: build-release/addon-operator, 3)
set -euo pipefail
binary=$(realpath "${1:-build-release/addon-operator}")
rounds=${2:-3}
work=$(mktemp -d /tmp/bench-idle.XXXXXX)
pid=
trap '[ -n "$pid" ] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"; true' EXIT
mkdir -p "$work/modules" "$work/global"

status() { awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"; }
median() { sort -n | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }

# operator REACTOR: prints "VmRSS RssAnon RssFile" (KiB) once idle.
operator() {
        : >"$work/log"
        MODULES_DIR=$work/modules GLOBAL_HOOKS_DIR=$work/global ADDON_OPERATOR_STATE_DIR=$work/state \
                ADDON_OPERATOR_REACTOR=$1 ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET=$work/debug.socket \
                LOG_TYPE=json "$binary" start >"$work/log" 2>&1 &
        pid=$!
        timeout 60 grep -q -m1 '"msg":"first converge done' < <(tail -n +1 -f "$work/log") ||
                { cat "$work/log" >&2; exit 1; }
        sleep 1
        echo "$(status "$pid" VmRSS) $(status "$pid" RssAnon) $(status "$pid" RssFile)"
        kill -TERM "$pid"
        wait "$pid" || true
        pid=
}

# The floor: the same shared libraries loaded and initialised in a process that does nothing.
libs=$(ldd "$binary" | awk '$3 ~ /^\// { print $3 }' | grep -v -e '/libc\.so' -e '/ld-linux' | paste -sd: -)
floor() {
        LD_PRELOAD=$libs sleep 30 &
        pid=$!
        sleep 0.5
        echo "$(status "$pid" VmRSS) $(status "$pid" RssAnon) $(status "$pid" RssFile)"
        kill "$pid"
        wait "$pid" 2>/dev/null || true
        pid=
}

: >"$work/floor" && : >"$work/epoll" && : >"$work/io_uring"
for _ in $(seq "$rounds"); do
        floor >>"$work/floor"
        operator epoll >>"$work/epoll"
        operator io_uring >>"$work/io_uring"
done
col() { awk -v c="$2" '{ print $c }' "$work/$1" | median; }
f=$(col floor 1)
printf '# bench-idle: %d shared libraries preloaded into sleep as the floor; medians of %d rounds (KiB)\n' \
        "$(tr ':' '\n' <<<"$libs" | wc -l)" "$rounds"
printf '%-10s %8s %8s %8s\n' "" VmRSS RssAnon RssFile
printf '%-10s %8d %8d %8d\n' floor "$f" "$(col floor 2)" "$(col floor 3)"
for b in epoll io_uring; do
        r=$(col "$b" 1)
        printf '%-10s %8d %8d %8d\n' "$b" "$r" "$(col "$b" 2)" "$(col "$b" 3)"
        awk -v b="$b" -v r="$r" -v f="$f" 'BEGIN {
                printf "row: idle RSS, no modules, %s|%.1f MB|%.1f MB (the same libraries in sleep)|%.2f|<= 12 MB|%s\n",
                        b, r / 1024, f / 1024, r / f, (r <= 12 * 1024 ? "yes" : "no") }'
done
