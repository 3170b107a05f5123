#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# get-apiserver.sh [CACHE_DIR]: print the path of a real kube-apiserver (v1.20) for the cluster
# tests, building it only when CACHE_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/apiserver)
# lacks it. Only the path goes to stdout; messages go to stderr. The same build makes the
# kube-controller-manager of that version, cached beside it as kube-controller-manager-VERSION
# (a real cluster runs one: the garbage collector finishes foreground deletes, the namespace
# controller finishes namespace deletion); `get-apiserver.sh --controller-manager [CACHE_DIR]`
# prints its path instead.
#
# Debian ships no kube-apiserver binary, but bookworm's `kubernetes` source package (which only
# builds kubectl) is the whole upstream tree with its vendor/ directory, so the server builds
# from it offline with Debian's Go. The steps:
#   - a deb-src entry for bookworm (added as /etc/apt/sources.list.d/ao-deb-src.sources when
#     apt knows no source for the package), then `apt-get source kubernetes=VERSION`;
#   - build dependencies from Debian: golang-go (Go 1.19), make, rsync, and
#     golang-github-modern-go-reflect2-dev: the vendored reflect2 v1.0.1 reads Go runtime
#     internals that changed in Go 1.18 (json-iterator then crashes at run time), so Debian's
#     1.0.2 replaces vendor/github.com/modern-go/reflect2;
#   - upstream's `make WHAT="cmd/kube-apiserver cmd/kube-controller-manager"`: a bare `go build` misses the generated
#     zz_generated.* files, which the Makefile produces first (hack/lib sets GO111MODULE=off and
#     a private GOPATH under _output/).
# The binary is cached under the source package version, so a new Debian upload builds anew.
# Everything the build writes (source, GOPATH, GOCACHE, TMPDIR) lives in one temporary directory
# inside the cache directory, removed when the script ends; peak use is about 3 GB. The last
# build's log stays as CACHE_DIR/build.log. Concurrent callers serialise on CACHE_DIR/.lock.
#
# Environment: AO_KUBE_SRC_VERSION overrides the Debian source version to build.
set -euo pipefail

SRC_PKG=kubernetes
SRC_VERSION=${AO_KUBE_SRC_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}
BUILD_DEPS=(golang-go make rsync golang-github-modern-go-reflect2-dev dpkg-dev xz-utils)
REFLECT2=/usr/share/gocode/src/github.com/modern-go/reflect2

die() {
        echo "get-apiserver.sh: $*" >&2
        exit 1
}
say() {
        echo "get-apiserver.sh: $*" >&2
}

# usable PATH: an executable that says it is Kubernetes v1.20.
usable() {
        [ -f "$1" ] && [ -x "$1" ] || return 1
        case "$("$1" --version 2>/dev/null)" in
        "Kubernetes v1.20."*) return 0 ;;
        *) return 1 ;;
        esac
}

want=kube-apiserver
if [ "${1:-}" = --controller-manager ]; then
        want=kube-controller-manager
        shift
fi
cache=${1:-${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/apiserver}
[ -d "$cache" ] && cache=$(cd "$cache" && pwd)

# built: both binaries of this version are in the cache; prints the one asked for.
built() {
        usable "$cache/kube-apiserver-$SRC_VERSION" && usable "$cache/kube-controller-manager-$SRC_VERSION" || return 1
        echo "$cache/$want-$SRC_VERSION"
}

built && exit 0

mkdir -p "$cache" || die "cannot create the cache directory '$cache'"
cache=$(cd "$cache" && pwd)

# One builder at a time: a second caller waits here, then finds the first one's result.
exec 9>>"$cache/.lock"
if ! flock -n 9; then
        say "another get-apiserver.sh is building in '$cache'; waiting for it (up to 1 hour)"
        flock -w 3600 9 || die "timed out waiting for the lock '$cache/.lock'"
fi
built && exit 0

[ "$(id -u)" -eq 0 ] || die "building kube-apiserver needs root (apt-get installs build dependencies and" \
        "a deb-src entry); run this once as root, or put v1.20 binaries at" \
        "'$cache/kube-apiserver-$SRC_VERSION' and '$cache/kube-controller-manager-$SRC_VERSION'"
command -v apt-get >/dev/null 2>&1 || die "apt-get not found: this script builds from Debian's source package"

export DEBIAN_FRONTEND=noninteractive
apt_updated=0
apt_update() {
        [ "$apt_updated" -eq 1 ] && return 0
        say "apt-get update"
        apt-get update -qq -o DPkg::Lock::Timeout=600 >"$cache/apt.log" 2>&1 || {
                tail -n 20 "$cache/apt.log" >&2
                die "'apt-get update' failed"
        }
        apt_updated=1
}

missing=()
for p in "${BUILD_DEPS[@]}"; do
        dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed$' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
        apt_update
        say "installing build dependencies: ${missing[*]}"
        apt-get install -y -qq --no-install-recommends -o DPkg::Lock::Timeout=600 "${missing[@]}" \
                >>"$cache/apt.log" 2>&1 || {
                tail -n 20 "$cache/apt.log" >&2
                die "'apt-get install ${missing[*]}' failed (log: $cache/apt.log)"
        }
fi
[ -d "$REFLECT2" ] || die "'$REFLECT2' is missing although golang-github-modern-go-reflect2-dev is installed"
command -v go >/dev/null 2>&1 || die "'go' is not in PATH after installing golang-go"

# Does apt know the source package version we want?
src_known() {
        apt-cache showsrc --only-source "$SRC_PKG" 2>/dev/null | grep -qxF "Version: $SRC_VERSION"
}

# Write deb-src stanzas mirroring the deb822 file (or one-line sources.list) that apt uses for
# Debian itself: the same URIs, Suites, Components and Signed-By, only Types changes.
add_deb_src() {
        local out=/etc/apt/sources.list.d/ao-deb-src.sources
        if [ -f /etc/apt/sources.list.d/debian.sources ]; then
                awk '
                        function flush() { if (st != "" && isdeb) printf "%s\n", st; st = ""; isdeb = 0 }
                        /^[ \t]*$/ { flush(); next }
                        /^#/ { next }
                        /^Types:/ { if ($0 ~ /[ \t]deb([ \t]|$)/) isdeb = 1; st = st "Types: deb-src\n"; next }
                        { st = st $0 "\n" }
                        END { flush() }
                ' /etc/apt/sources.list.d/debian.sources >"$out.tmp"
        elif [ -f /etc/apt/sources.list ] && grep -qE '^[[:space:]]*deb[[:space:]]' /etc/apt/sources.list; then
                out=/etc/apt/sources.list.d/ao-deb-src.list
                sed -n 's/^[[:space:]]*deb[[:space:]]/deb-src /p' /etc/apt/sources.list >"$out.tmp"
        else
                printf '%s\n' 'Types: deb-src' 'URIs: http://deb.debian.org/debian' \
                        'Suites: bookworm bookworm-updates' 'Components: main' \
                        'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' >"$out.tmp"
        fi
        [ -s "$out.tmp" ] || {
                rm -f "$out.tmp"
                die "found no Debian 'deb' entry in /etc/apt to mirror as deb-src"
        }
        mv -f "$out.tmp" "$out"
        say "added deb-src entries in $out"
}

if ! src_known; then
        if ! grep -rqsE '^[[:space:]]*(deb-src[[:space:]]|Types:.*deb-src)' /etc/apt/sources.list /etc/apt/sources.list.d/; then
                add_deb_src
        fi
        apt_updated=0
        apt_update
        if ! src_known; then
                have=$(apt-cache showsrc --only-source "$SRC_PKG" 2>/dev/null | sed -n 's/^Version: //p' | paste -sd' ')
                die "apt offers no source '$SRC_PKG' version $SRC_VERSION (it has: ${have:-none});" \
                        "set AO_KUBE_SRC_VERSION to one of those to build that one"
        fi
fi

# The work directory sits inside the cache, so the final rename stays on one file system.
work=$(mktemp -d "$cache/.build.XXXXXX")
trap 'rm -rf "$work"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
start=$SECONDS

say "fetching Debian source $SRC_PKG $SRC_VERSION"
# APT::Sandbox::User=root: the _apt user may not write into our private directory.
if ! (cd "$work" && apt-get source -qq -o APT::Sandbox::User=root --only-source "$SRC_PKG=$SRC_VERSION") \
        >"$work/source.log" 2>&1; then
        tail -n 20 "$work/source.log" >&2
        die "'apt-get source $SRC_PKG=$SRC_VERSION' failed"
fi
rm -f "$work"/*.tar.* "$work"/*.dsc
src=$(find "$work" -mindepth 1 -maxdepth 1 -type d -name "$SRC_PKG-*" -print -quit)
[ -n "$src" ] && [ -f "$src/Makefile" ] || die "'apt-get source' left no $SRC_PKG source tree in '$work'"

vendored=$src/vendor/github.com/modern-go/reflect2
[ -d "$vendored" ] || die "the source has no '$vendored' to replace"
rm -rf "$vendored"
cp -a "$REFLECT2" "$vendored"
find "$vendored" -name '*_test.go' -delete

say "building kube-apiserver and kube-controller-manager with $(go version | cut -d' ' -f3) (about 6 to 9" \
        "minutes on 2 cores; log: $cache/build.log)"
mkdir -p "$work/gopath" "$work/gocache" "$work/tmp"
# hack/lib/golang.sh sets its own GOPATH and GOCACHE under _output/ (inside $work too); the ones
# here catch any go command run outside it. CGO_ENABLED=0 as debian/rules does: static binaries.
if ! (cd "$src" && env GOPATH="$work/gopath" GOCACHE="$work/gocache" TMPDIR="$work/tmp" GOFLAGS= \
        GO111MODULE=off CGO_ENABLED=0 KUBE_VERBOSE=1 make WHAT="cmd/kube-apiserver cmd/kube-controller-manager") \
        >"$cache/build.log" 2>&1; then
        tail -n 30 "$cache/build.log" >&2
        die "'make WHAT=\"cmd/kube-apiserver cmd/kube-controller-manager\"' failed after $((SECONDS - start)) s" \
                "(whole log: $cache/build.log)"
fi

# install NAME: check the built binary NAME says v1.20 and move it into the cache.
install_binary() {
        local name=$1 out version
        out=$src/_output/local/bin/linux/amd64/$name
        [ -f "$out" ] || out=$src/_output/bin/$name
        [ -f "$out" ] || die "the build succeeded but left no $name under '$src/_output'"
        version=$("$out" --version 2>&1) || die "the built $name does not run: $version"
        case $version in
        "Kubernetes v1.20."*) ;;
        *) die "the built $name says '$version', expected Kubernetes v1.20.*" ;;
        esac
        mv -f "$out" "$work/$name"
        chmod 0755 "$work/$name"
        mv -f "$work/$name" "$cache/$name-$SRC_VERSION"
        say "$cache/$name-$SRC_VERSION is $version"
}
install_binary kube-controller-manager
install_binary kube-apiserver
say "built in $((SECONDS - start)) s"
built || die "the binaries are in '$cache' but do not run"
