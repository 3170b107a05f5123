# SPDX-License-Identifier: Apache-2.0
# Minimal TAP helpers for the shell integration tests (sourced).
# The binary under test comes from $AO_BINARY (set by meson).

tap_n=0
tap_failed=0

ok() { # ok <condition-exit-code> <description>
        tap_n=$((tap_n + 1))
        if [ "$1" -eq 0 ]; then
                echo "ok $tap_n - $2"
        else
                echo "not ok $tap_n - $2"
                tap_failed=$((tap_failed + 1))
        fi
}

is() { # is <got> <want> <description>
        tap_n=$((tap_n + 1))
        if [ "$1" = "$2" ]; then
                echo "ok $tap_n - $3"
        else
                echo "not ok $tap_n - $3"
                printf '#   got:  %s\n#   want: %s\n' "$1" "$2"
                tap_failed=$((tap_failed + 1))
        fi
}

like() { # like <got> <extended-regex> <description>
        tap_n=$((tap_n + 1))
        # A here-string, not a pipe: grep -q exits at the first match, and under pipefail the
        # writer's SIGPIPE would turn a match into a failure.
        if grep -Eq -- "$2" <<<"$1"; then
                echo "ok $tap_n - $3"
        else
                echo "not ok $tap_n - $3"
                printf '#   got:  %s\n#   want match: %s\n' "$1" "$2" | head -20
                tap_failed=$((tap_failed + 1))
        fi
}

unlike() { # unlike <got> <extended-regex> <description>
        tap_n=$((tap_n + 1))
        if grep -Eq -- "$2" <<<"$1"; then
                echo "not ok $tap_n - $3"
                grep -E -- "$2" <<<"$1" | head -5 | sed 's/^/#   unwanted: /'
                tap_failed=$((tap_failed + 1))
        else
                echo "ok $tap_n - $3"
        fi
}

done_testing() {
        echo "1..$tap_n"
        [ "$tap_failed" -eq 0 ]
}

# Run the operator in the background with output on a pipe: op_start ENV... -- ARGS...
# Sets OP_PID and reads lines through op_wait_for.
op_start() {
        # Tests run in parallel: no fixed port, no shared debug socket (a test's own settings come later and win).
        local envs=(ADDON_OPERATOR_LISTEN_PORT=0 DEBUG_UNIX_SOCKET="${TMPDIR:-/tmp}/ao-test-$$-$RANDOM.socket")
        # The suites that run twice, once per event loop backend (meson.build), say which here.
        [ -n "${AO_TEST_REACTOR:-}" ] && envs+=(ADDON_OPERATOR_REACTOR="$AO_TEST_REACTOR")
        while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
        [ "${1:-}" = "--" ] && shift
        exec {OP_FD}< <(exec env -i PATH="$PATH" "${envs[@]}" "$AO_BINARY" "$@" 2>&1)
        OP_PID=$!
        OP_LOG=""
}

# Read operator output until a line matches the regex (or 20 s pass without one). Returns 0 if found.
op_wait_for() {
        local line
        while IFS= read -r -t 20 -u "$OP_FD" line; do
                OP_LOG+="$line"$'\n'
                if grep -Eq -- "$1" <<<"$line"; then
                        return 0
                fi
        done
        return 1
}

# Collect the rest of the output and the exit code (OP_CODE).
op_finish() {
        local line
        while IFS= read -r -t 20 -u "$OP_FD" line; do
                OP_LOG+="$line"$'\n'
        done
        wait "$OP_PID"
        OP_CODE=$?
        exec {OP_FD}<&-
}
