#!/usr/bin/env bash
# scripts/update-docs-renderer.sh — puts the pinned Redoc standalone bundle, the renderer of
# GET /v1/docs, into internal/http/api/redoc/, which the binary embeds (go:embed): the
# page loads nothing from a CDN.
#
#   bash scripts/update-docs-renderer.sh        # the pinned VERSION below
#
# To move to another version: set VERSION, run it once with INTEGRITY empty to be shown
# the registry's sha512 (npm view redoc@VERSION dist.integrity), read the release notes,
# pin INTEGRITY, run again, look at /v1/docs, run the docs tests (browser included:
# internal/http/api TestDocsPage*), commit the directory.
#
# What it does: npm pack downloads the package tarball into a temporary directory (no
# npm install: no install scripts run, no dependencies come along); its sha512 must be
# the pinned INTEGRITY and the registry's dist.integrity; then the one file the page
# serves, bundles/redoc.standalone.js, is copied with the package's LICENSE and the
# licenses of what the bundle contains (redoc.standalone.js.LICENSE.txt), and VERSION
# records the package, its version and integrity.
#
# One patch, made here so that it is repeatable and visible: Redoc 2 draws its attribution
# ("API docs by Redocly") with a logo image loaded from Redocly's CDN, unconditionally;
# the page's CSP would block it, but the browser would still report a violation, and the
# page must ask nothing of another origin. The logo's URL becomes an empty data: URL (the
# component's onError then drops the image; the text link stays). The script fails if
# the string is not there exactly once, so a new version is looked at again.
set -euo pipefail

PACKAGE=redoc
VERSION=2.5.4
INTEGRITY=sha512-M6jWhG1qoBnH6TFmzJnstyCZ87HmOY/UzDm78mHiYihEdlV/YcS9ogOo1NlElnJMeLsyxHFe2yFc4sNjHTrABQ==

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dest=$root/internal/http/api/redoc
say() { printf 'update-docs-renderer: %s\n' "$*" >&2; }

command -v npm >/dev/null 2>&1 || { say "npm is needed (Debian: apt-get install npm)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

registry=$(npm view "$PACKAGE@$VERSION" dist.integrity)
if [ -z "$INTEGRITY" ]; then
	say "$PACKAGE@$VERSION: the registry says $registry; pin it as INTEGRITY and run again"
	exit 1
fi
if [ "$registry" != "$INTEGRITY" ]; then
	say "$PACKAGE@$VERSION: the registry's integrity $registry is not the pinned $INTEGRITY"
	exit 1
fi

tarball=$(cd "$tmp" && npm pack --silent "$PACKAGE@$VERSION" | tail -n 1)
got="sha512-$(openssl dgst -sha512 -binary "$tmp/$tarball" | base64 -w0)"
if [ "$got" != "$INTEGRITY" ]; then
	say "$tarball: sha512 $got, pinned $INTEGRITY: refusing it"
	exit 1
fi
tar -xzf "$tmp/$tarball" -C "$tmp" package/LICENSE package/bundles/redoc.standalone.js package/bundles/redoc.standalone.js.LICENSE.txt

logo='src:"https://cdn.redoc.ly/redoc/logo-mini.svg"'
bundle=$tmp/package/bundles/redoc.standalone.js
if [ "$(grep -o -F "$logo" "$bundle" | wc -l)" -ne 1 ]; then
	say "$PACKAGE@$VERSION: the attribution logo ($logo) is not in the bundle exactly once: look at the patch again"
	exit 1
fi
sed -i "s|$logo|src:\"data:,\"|" "$bundle"

mkdir -p "$dest"
rm -f "$dest"/*
cp "$bundle" "$dest/redoc.standalone.js"
cp "$tmp/package/bundles/redoc.standalone.js.LICENSE.txt" "$dest/redoc.standalone.js.LICENSE.txt"
cp "$tmp/package/LICENSE" "$dest/LICENSE"
cat >"$dest/VERSION" <<EOF
$PACKAGE $VERSION
integrity $INTEGRITY
file bundles/redoc.standalone.js (sha256 $(sha256sum "$dest/redoc.standalone.js" | cut -d' ' -f1), patched)
patch the attribution logo's URL (https://cdn.redoc.ly/redoc/logo-mini.svg) is data:, (see the script)
license MIT (LICENSE; the bundled libraries' notices: redoc.standalone.js.LICENSE.txt)
written by scripts/update-docs-renderer.sh
EOF
say "$PACKAGE@$VERSION ($INTEGRITY) is in ${dest#"$root"/}"
