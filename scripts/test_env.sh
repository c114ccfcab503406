# scripts/test_env.sh — sourced by test.sh, chaos.sh and bench.sh: the environment the
# Go tests run in. Not executable on its own.
#
#   . "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" PREFIX
#
# Changes to the repository root, puts /usr/local/go/bin on PATH when go is not
# found, and exports TEST_DATABASE_URL: as already set (then nothing is created or
# dropped), else a database of this run's own, PREFIX_<random>, created by scripts/pg.sh
# and dropped when the script exits (test_env_drop, which the EXIT trap set here
# calls; a script that sets its own EXIT trap calls it there). Two runs on one
# Postgres so never share, nor drop, each other's database. DATABASE_URL is
# deliberately ignored here, so tests never run against your dev database.

cd "$(dirname "${BASH_SOURCE[0]}")/.."

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
	export PATH="/usr/local/go/bin:$PATH"
fi

BPC_TEST_DB=""
if [ -z "${TEST_DATABASE_URL:-}" ]; then
	# A random name, created anew and never dropped before use: runs that share
	# one Postgres (parallel CI jobs whose pids repeat) cannot cut each other off.
	BPC_TEST_DB="${1}_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
	TEST_DATABASE_URL="$(env -u DATABASE_URL bash scripts/pg.sh "$BPC_TEST_DB")"
fi
export TEST_DATABASE_URL

# test_env_drop drops the run's own database, if it made one (once).
test_env_drop() {
	if [ -n "$BPC_TEST_DB" ]; then
		env -u DATABASE_URL bash scripts/pg.sh --drop "$BPC_TEST_DB" || true
		BPC_TEST_DB=""
	fi
}
trap test_env_drop EXIT
# An interrupted run still drops its database: exit (running the EXIT trap).
trap 'exit 130' INT
trap 'exit 143' TERM
