# scripts/test_env.sh — sourced by test.sh, chaos.sh and bench.sh: the environment the
# Go tests run in. Not executable on its own.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" DBNAME
#
# Changes to the repository root, puts /usr/local/go/bin on PATH when go is not
# found, and exports TEST_DATABASE_URL: as already set, else a freshly dropped and
# created database DBNAME from scripts/pg.sh (DATABASE_URL is deliberately ignored
# here, so tests never run against your dev database).

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

if [ -z "${TEST_DATABASE_URL:-}" ]; then
	TEST_DATABASE_URL="$(env -u DATABASE_URL bash scripts/pg.sh --fresh "$1")"
fi
export TEST_DATABASE_URL
