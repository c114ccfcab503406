#!/usr/bin/env bash
# scripts/run.sh — what `make run` calls: ensure Postgres (scripts/pg.sh), build, migrate, serve.
# Extra arguments go to `bpc serve`, e.g. scripts/run.sh --role=api
# Honours a pre-set DATABASE_URL (see scripts/pg.sh); BPC_ENV defaults to dev.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

url="$(bash scripts/pg.sh bpc)"
export DATABASE_URL="$url"
export BPC_ENV="${BPC_ENV:-dev}"

echo "run.sh: building bin/bpc" >&2
go build -o bin/bpc ./cmd/bpc
echo "run.sh: migrating" >&2
bin/bpc migrate
# The service prints the API URL, the River UI URL and the admin token itself.
exec bin/bpc serve "$@"
