#!/usr/bin/env bash
# scripts/chaos.sh — what `make chaos` calls: the chaos tests (build tag chaos) in
# internal/e2e, which run the real bpc binary as separate worker processes, kill them
# (SIGKILL, SIGTERM under load) and restart a private Postgres cluster under them.
#
#   scripts/chaos.sh                       # every TestChaos*
#   scripts/chaos.sh -run ChaosKillDashNine
#
# Arguments replace the default -run Chaos. Database: TEST_DATABASE_URL if already
# set; otherwise a database of the run's own, bpc_test_<random>, dropped at the end, as
# scripts/test.sh does. TestChaosPostgresRestart starts its own throwaway cluster
# (initdb/pg_ctl on a free port, as user bpcpg when run as root) and skips when the
# Postgres server binaries are not installed.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" bpc_test

args=("$@")
[ "${#args[@]}" -gt 0 ] || args=(-run Chaos)

echo "chaos.sh: go test -tags chaos -count=1 -timeout 15m ${args[*]} -v ./internal/e2e" >&2
go test -tags chaos -count=1 -timeout 15m "${args[@]}" -v ./internal/e2e
