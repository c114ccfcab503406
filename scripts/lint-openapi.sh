#!/usr/bin/env bash
# lint-openapi.sh lints the served OpenAPI document (the full admin API,
# every registered kind, as TestWriteOpenAPIDocument writes it) with tools
# written by others, pinned: Redocly's `recommended` ruleset must report no
# error and no warning, and Spectral's `spectral:oas` nothing at all.
#
#   bash scripts/lint-openapi.sh            # needs go and npx (Node >= 20)
#
# One exception, and why: tools/redocly/lint-ignore.yaml (the contract
# stage's TestRedoclyLint uses the same list).
set -euo pipefail
cd "$(dirname "$0")/.."

REDOCLY=@redocly/cli@2.77.0
SPECTRAL=@stoplight/spectral-cli@6.15.0

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
BPC_OPENAPI_OUT="$dir/openapi.json" go test -count=1 -run '^TestWriteOpenAPIDocument$' ./internal/http/api/ >/dev/null
test -s "$dir/openapi.json"

sed 's/^DOCUMENT:/openapi.json:/' tools/redocly/lint-ignore.yaml >"$dir/.redocly.lint-ignore.yaml"
printf 'extends: ["spectral:oas"]\n' >"$dir/.spectral.yaml"

cd "$dir"
echo "lint-openapi: redocly ($REDOCLY) lint --extends recommended"
out=$(npx --yes "$REDOCLY" lint --extends recommended --format stylish openapi.json 2>&1) || { echo "$out"; exit 1; }
echo "$out" | grep -v '^\s*$' | grep -v '║\|╔\|╚' || true
if echo "$out" | grep -Eq '[0-9]+ warnings?\b' && ! echo "$out" | grep -q 'You have 0 warnings'; then
	echo "lint-openapi: Redocly reports warnings" >&2
	exit 1
fi
echo "lint-openapi: spectral ($SPECTRAL) lint spectral:oas"
npx --yes "$SPECTRAL" lint -r .spectral.yaml -F hint -f text openapi.json
