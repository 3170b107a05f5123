# SPDX-License-Identifier: Apache-2.0
# Sourced by the tests that run the operator against the fake API server (tests/fakekube).
# fk_start [ARGS...] starts it in $work (which the test created) with $FAKEKUBE_ARGS and ARGS,
# and sets $api; the EXIT trap stops it, the test's operator ($OP_PID) and any pid listed in
# $extra_pids, and removes $work.

fk_pid=
extra_pids=()
fk_cleanup() {
        [ -n "${OP_PID:-}" ] && kill -TERM "$OP_PID" 2>/dev/null
        for p in "${extra_pids[@]}"; do kill -9 "$p" 2>/dev/null; done
        [ -n "$fk_pid" ] && kill -TERM "$fk_pid" 2>/dev/null && wait "$fk_pid" 2>/dev/null
        [ -n "${AO_KEEP_WORK:-}" ] || rm -rf "$work"
}
trap fk_cleanup EXIT

fk_start() {
        python3 "$FAKEKUBE" ${FAKEKUBE_ARGS:-} --port 0 --port-file "$work/fk.port" "$@" 2>"$work/fk.log" &
        fk_pid=$!
        for _ in $(seq 500); do [ -s "$work/fk.port" ] && break; read -r -t 0.02 <> <(:) || true; done
        api="http://127.0.0.1:$(cat "$work/fk.port")"
}

fk() { # fk METHOD PATH [JSON]: a request without credentials (the control API, or an API server without --token)
        curl -sf -X "$1" -H 'Content-Type: application/json' ${3:+--data "$3"} "$api$2"
}

wait_for() { # wait_for COMMAND...: until it succeeds, checked every 50 ms for at most 20 s
        local i
        for i in $(seq 400); do
                "$@" && return 0
                read -r -t 0.05 <> <(:) || true
        done
        return 1
}
