#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# Black-box tests of the command line: version, help, env/flag parsing errors,
# both event-loop backends starting and stopping on a signal.
set -u
. "$(dirname "$0")/tap.sh"
: "${AO_BINARY:?AO_BINARY must point at build/addon-operator}"

out=$("$AO_BINARY" --version); code=$?
is "$code" 0 "--version exits 0"
like "$(printf '%s\n' "$out" | head -1)" '^addon-operator [0-9]+\.[0-9]+\.[0-9]+$' "--version prints the version first"
like "$out" 'libcurl .*libyaml .*cJSON .*libseccomp .*h2o ' "--version lists the libraries"
is "$("$AO_BINARY" version)" "$out" "'version' command prints the same"

help=$("$AO_BINARY" --help); code=$?
is "$code" 0 "--help exits 0"
for var in GLOBAL_HOOKS_DIR MODULES_DIR UNNUMBERED_MODULE_ORDER ADDON_OPERATOR_NAMESPACE ADDON_OPERATOR_CONFIG_MAP \
        ADDON_OPERATOR_LISTEN_ADDRESS ADDON_OPERATOR_LISTEN_PORT ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX \
        ADDON_OPERATOR_CRD_EXTRA_LABELS ADDON_OPERATOR_CRD_FILTER_PREFIXES KUBE_CONFIG KUBE_CONTEXT KUBE_CLIENT_QPS \
        KUBE_CLIENT_BURST HELM_BIN_PATH HELM3 HELM_IGNORE_RELEASE HELM_MONITOR_KUBE_CLIENT_QPS HELM_MONITOR_INTERVAL \
        HELM_MONITOR_KUBE_CLIENT_BURST LOG_TYPE LOG_LEVEL LOG_NO_TIME DEBUG_UNIX_SOCKET ADDON_OPERATOR_MODULES_DIR \
        ADDON_OPERATOR_GLOBAL_HOOKS_DIR ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER ADDON_OPERATOR_TMP_DIR \
        HELM_HISTORY_MAX HELM_TIMEOUT LOG_PROXY_HOOK_JSON ADDON_OPERATOR_HA ADDON_OPERATOR_REACTOR; do
        like "$help" "(^|[^A-Z_])${var}([^A-Z_]|$)" "--help documents $var"
done
like "$help" '--shutdown-timeout' "--help documents --shutdown-timeout"
for cmd in start version help; do
        like "$help" "^  $cmd +[a-z]|"$'\n'"  $cmd +[a-z]" "--help lists the '$cmd' command"
done
is "$("$AO_BINARY" help)" "$help" "'help' command prints the same as --help"

bad() { # bad <expected message regex> <description> cmd...
        local want=$1 desc=$2; shift 2
        local err
        err=$("$@" 2>&1 >/dev/null); local code=$?
        is "$code" 2 "$desc: exit code 2"
        like "$(printf '%s\n' "$err" | head -1)" "$want" "$desc: message"
}
bad "invalid value 'abc' for ADDON_OPERATOR_LISTEN_PORT" "port abc" env ADDON_OPERATOR_LISTEN_PORT=abc "$AO_BINARY"
bad "invalid value '-1' for KUBE_CLIENT_QPS" "QPS -1" env KUBE_CLIENT_QPS=-1 "$AO_BINARY"
bad "invalid value 'xml' for LOG_TYPE" "LOG_TYPE xml" env LOG_TYPE=xml "$AO_BINARY"
bad "invalid value 'fast' for ADDON_OPERATOR_REACTOR" "reactor fast" env ADDON_OPERATOR_REACTOR=fast "$AO_BINARY"
bad "invalid value '70000' for --listen-port" "flag --listen-port 70000" "$AO_BINARY" --listen-port 70000
bad "unknown flag '--no-such-flag'" "unknown flag" "$AO_BINARY" --no-such-flag
bad "TILLER_BIN_PATH is set, but Helm 2 is not supported: remove the Helm 2 settings" "Helm 2 settings" \
        env TILLER_BIN_PATH=/usr/bin/tiller "$AO_BINARY"
bad "unknown command 'frobnicate'" "unknown command" "$AO_BINARY" frobnicate

for backend in epoll io_uring; do
        op_start ADDON_OPERATOR_REACTOR=$backend LOG_NO_TIME=true -- start
        op_wait_for 'event loop: using'; found=$?
        if [ "$backend" = io_uring ] && grep -q 'io_uring_setup' <<<"$OP_LOG"; then
                kill -TERM "$OP_PID"; op_finish
                echo "ok $((tap_n += 1)) - $backend: skipped, kernel refuses io_uring # SKIP"
                continue
        fi
        is "$found" 0 "$backend: operator starts"
        like "$OP_LOG" "level=info msg=\"event loop: using $backend\" backend=$backend" "$backend: backend logged at info"
        kill -TERM "$OP_PID"
        op_finish
        is "$OP_CODE" 0 "$backend: SIGTERM gives exit code 0"
        like "$OP_LOG" 'msg="shutdown: SIGTERM received' "$backend: shutdown logged"
        like "$OP_LOG" 'msg="addon-operator stopped \(exit code 0\)"' "$backend: stop logged"
done

# auto falls back to epoll, and says why, where io_uring_setup is refused (as in container seccomp profiles).
op_start LOG_NO_TIME=true -- start
op_wait_for 'event loop: using'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'level=info msg="event loop: using epoll" backend=epoll' "default: epoll"
op_start ADDON_OPERATOR_REACTOR=auto LOG_NO_TIME=true -- start
op_wait_for 'event loop: using'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'msg="event loop: using (io_uring|epoll)' "auto: picks a backend by itself"
AO_BINARY_SAVED=$AO_BINARY
AO_BINARY=$AO_DENY_IO_URING
op_start ADDON_OPERATOR_REACTOR=auto LOG_NO_TIME=true -- "$AO_BINARY_SAVED" start
op_wait_for 'event loop: using'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'level=info msg="event loop: using epoll, io_uring is unavailable: io_uring_setup: Operation not permitted" backend=epoll' \
        "auto: io_uring refused, falls back to epoll and logs why at info"
is "$OP_CODE" 0 "auto fallback: clean exit"
op_start ADDON_OPERATOR_REACTOR=io_uring LOG_NO_TIME=true -- "$AO_BINARY_SAVED" start
op_finish
is "$OP_CODE" 1 "explicit io_uring refused: exit code 1"
like "$OP_LOG" 'level=error msg="event loop: io_uring_setup: Operation not permitted"' "explicit io_uring refused: error names the cause"
AO_BINARY=$AO_BINARY_SAVED

# Flags win over the environment; the JSON format carries no time with LOG_NO_TIME.
op_start LOG_TYPE=text LOG_NO_TIME=true -- --log-type json
op_wait_for '"msg":"event loop: using'; is "$?" 0 "flag --log-type json beats LOG_TYPE=text"
kill -INT "$OP_PID"; op_finish
is "$OP_CODE" 0 "SIGINT gives exit code 0"
is "$(printf '%s\n' "$OP_LOG" | head -1)" '{"level":"info","msg":"flag --log-type='"'json'"' overrides LOG_TYPE='"'text'"'"}' \
        "the override is logged first"
banner=$(printf '%s\n' "$OP_LOG" | grep '"addon-operator starting"')
is "$banner" '{"level":"info","msg":"addon-operator starting","version":"'"$("$AO_BINARY" --version | head -1 | cut -d' ' -f2)"'","modules_dir":"modules","global_hooks_dir":"global-hooks","namespace":"","config_map":"addon-operator"}' \
        "JSON banner line is exact"

# Both spellings set: the ADDON_OPERATOR_ one wins, and the log says so.
op_start MODULES_DIR=/old ADDON_OPERATOR_MODULES_DIR=/new:/more LOG_NO_TIME=true -- start
op_wait_for 'event loop: using'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'level=warn msg=".*ADDON_OPERATOR_MODULES_DIR.*MODULES_DIR' "both spellings: a warning names both"
like "$OP_LOG" 'modules_dir=/new:/more' "both spellings: ADDON_OPERATOR_MODULES_DIR wins"

# Hook processes are set up at start: spawner next to the binary, default sandbox profile.
op_start LOG_NO_TIME=true -- start
op_wait_for 'hook processes:'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" "level=info msg=\"hook processes: sandbox profile 'default' by default\" profile=default launcher=spawner" \
        "start: hooks will run through the spawner under the default profile"
op_start ADDON_OPERATOR_SANDBOX_PROFILE=nope LOG_NO_TIME=true -- start
op_finish
is "$OP_CODE" 1 "unknown sandbox profile: exit code 1"
like "$OP_LOG" "level=error msg=\"sandbox: no profile named 'nope' \(ADDON_OPERATOR_SANDBOX_PROFILE\)\"" \
        "unknown sandbox profile: named in the error"

# Settings of features this operator does not have are named, not silently ignored.
op_start ADDON_OPERATOR_SHELL_CHROOT_DIR=/chroot LOG_NO_TIME=true -- start
op_wait_for 'event loop: using'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'level=warn msg="ADDON_OPERATOR_SHELL_CHROOT_DIR is set, but this operator does not support it; ignoring it"' \
        "unsupported setting: a warning names it"

# The documented spelling alone works too.
op_start MODULES_DIR=/documented LOG_NO_TIME=true -- start
op_wait_for 'addon-operator starting'
kill -TERM "$OP_PID"; op_finish
like "$OP_LOG" 'modules_dir=/documented' "documented MODULES_DIR alone is used"

done_testing
