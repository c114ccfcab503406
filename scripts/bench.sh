#!/usr/bin/env bash
# scripts/bench.sh — what `make bench` calls: benchmarks in ./bench/... against a fresh
# database bpc_bench (or a pre-set TEST_DATABASE_URL), output also in bench-results.txt.
# Extra arguments are passed to go test, e.g. scripts/bench.sh -bench Throughput
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

if [ -z "${TEST_DATABASE_URL:-}" ]; then
	TEST_DATABASE_URL="$(env -u DATABASE_URL bash scripts/pg.sh --fresh bpc_bench)"
fi
export TEST_DATABASE_URL
export BPC_BENCH=1

echo "bench.sh: results also go to bench-results.txt" >&2
go test -run '^$' -bench . -benchtime 1x -count 1 -timeout 30m "$@" ./bench/... 2>&1 |
	tee bench-results.txt
