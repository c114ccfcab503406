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

# In dev, keep the admin token across runs in .bpc-dev/admin-token so that `make demo`
# (scripts/demo.sh) finds it. The token itself is never printed here.
if [ "$BPC_ENV" = dev ] && [ -z "${BPC_ADMIN_TOKEN:-}" ]; then
	token_file=.bpc-dev/admin-token
	if [ -s "$token_file" ]; then
		BPC_ADMIN_TOKEN="$(cat "$token_file")"
	else
		mkdir -p .bpc-dev
		BPC_ADMIN_TOKEN="$(head -c 24 /dev/urandom | base64 | tr -d '/+=')"
		(umask 077 && printf '%s\n' "$BPC_ADMIN_TOKEN" >"$token_file")
	fi
	chmod 600 "$token_file"
	export BPC_ADMIN_TOKEN
	echo "run.sh: the admin token is in $token_file (make demo reads it from there)" >&2
fi

# In dev without BPC_KEY_ENCRYPTION_KEY the service itself generates the key that encrypts the
# tenants' signing keys, once, into .bpc-dev/key-encryption-key (0600); keep that file: the
# signing keys stored in the dev database do not open without it.

if [ -x bin/bpc ]; then
	echo "run.sh: building bin/bpc" >&2
else
	echo "run.sh: building bin/bpc for the first time: Go downloads the modules and compiles" >&2
	echo "run.sh: everything once, which takes a few minutes; later builds take seconds" >&2
fi
go build -o bin/bpc ./cmd/bpc
echo "run.sh: migrating" >&2
bin/bpc migrate
# The service prints the API URL and the River UI URL itself; in dev the admin token is in
# .bpc-dev/admin-token (or whatever BPC_ADMIN_TOKEN you set).
exec bin/bpc serve "$@"
