#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# A hook running as the operator's own user must not reach into the operator or its spawners:
# /proc/<pid>/mem stays closed to it (the kernel's ptrace access check), so it can neither read
# their memory nor write code into a spawner that has no sandbox profile yet. Runs everything as
# an unprivileged uid (root would pass that check anyway), through `addon-operator lint`, whose
# --config runs start hooks exactly as the operator does.
set -u
. "$(dirname "$0")/tap.sh"
: "${AO_BINARY:?AO_BINARY must point at build/addon-operator}"
if [ "$(id -u)" -ne 0 ] || ! command -v setpriv >/dev/null; then
        echo "1..0 # SKIP needs root and setpriv to run the operator as another user"
        exit 0
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
# The binaries where uid 65534 can run them, whatever the checkout's permissions are.
cp "$AO_BINARY" "$(dirname "$AO_BINARY")/addon-operator-spawner" "$dir/"
mkdir -p "$dir/global/hooks" "$dir/modules" "$dir/tmp"
# The hook reports, for every process of its own user running one of our binaries, whether its
# memory opened for writing.
cat >"$dir/global/hooks/peek.sh" <<'HOOK'
#!/bin/bash
[ "$1" = --config ] || exit 0
for p in /proc/[0-9]*; do
        [ "$p" = "/proc/$$" ] && continue
        [ "$(stat -c %u "$p" 2>/dev/null)" = "$(id -u)" ] || continue
        case "$(tr '\0' ' ' <"$p/cmdline" 2>/dev/null)" in
        *addon-operator-spawner*) what=spawner ;;
        *addon-operator\ lint*) what=operator ;;
        *) continue ;;
        esac
        if { : 3<>"$p/mem"; } 2>/dev/null; then echo "$what:open"; else echo "$what:closed"; fi
done | sort | uniq -c | tr -s ' \n' ' ' >&2
exit 1
HOOK
chmod -R a+rwX "$dir" && chmod a+x "$dir/global/hooks/peek.sh"
cd "$dir"
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups ./addon-operator lint --modules-dir modules \
        --global-hooks-dir global --tmp-dir "$dir/tmp" 2>&1)
# Two spawners run by then: the one without a profile and the one of the hook's profile.
like "$out" "peek.sh: error: --config failed: exit code 1: +1 operator:closed 2 spawner:closed *$" \
        "the operator's and both spawners' memory is closed to a hook of the same user"
done_testing
