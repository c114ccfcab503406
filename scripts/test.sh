#!/usr/bin/env bash
# scripts/test.sh — what `make test` and .ci/run call.
#
#   scripts/test.sh                      # go vet ./... ; go test -race -count=1 ./... ;
#                                        # then the chaos tests (see below)
#   scripts/test.sh -run Foo ./api/...   # go vet ./... ; go test -race -count=1 -run Foo ./api/...
#
# Arguments replace the default package pattern ./...; if none of them names a package
# (./x, ../x or github.com/...), ./... is still appended, so `scripts/test.sh -run Foo` works.
# Database: TEST_DATABASE_URL if already set; otherwise a freshly dropped and created
# database bpc_test from scripts/pg.sh (DATABASE_URL is deliberately ignored here, so tests
# never run against your dev database; point TEST_DATABASE_URL elsewhere to override).
# -race needs cgo (a C compiler); without one it is dropped with a warning.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" bpc_test

bash scripts/deps.sh

echo "test.sh: go vet ./..." >&2
go vet ./...

flags=(-count=1)
if [ "$(go env CGO_ENABLED)" = "1" ]; then
	flags=(-race "${flags[@]}")
else
	echo "test.sh: WARNING: cgo unavailable (no C compiler?), running without -race" >&2
fi

have_pkg=0
for a in "$@"; do
	case "$a" in
	./* | ../* | github.com/*) have_pkg=1 ;;
	esac
done
args=("$@")
[ "$have_pkg" -eq 1 ] || args+=(./...)

echo "test.sh: go test ${flags[*]} ${args[*]}" >&2
go test "${flags[@]}" "${args[@]}"

# Then the rules fuzz targets (generated deep and wide programs against the parser,
# checker, evaluator and tests language), each for BPC_FUZZTIME (8s) on top of its
# corpus, one at a time, unless arguments chose what to run or BPC_SKIP_FUZZ=1.
# `make fuzz` runs them longer. The list is whatever `go test -list` finds.
if [ "$#" -eq 0 ] && [ "${BPC_SKIP_FUZZ:-0}" != "1" ]; then
	for target in $(go test -list 'Fuzz.*' ./core/rules | grep '^Fuzz'); do
		echo "test.sh: go test -run ^$target\$ -fuzz ^$target\$ -fuzztime ${BPC_FUZZTIME:-8s} ./core/rules" >&2
		go test -run "^$target\$" -fuzz "^$target\$" -fuzztime "${BPC_FUZZTIME:-8s}" ./core/rules
	done
fi

# Then the chaos tests (real worker processes killed, Postgres restarted; about a
# minute), unless arguments chose what to run or BPC_SKIP_CHAOS=1. `make chaos` runs
# them alone, verbosely.
if [ "$#" -eq 0 ] && [ "${BPC_SKIP_CHAOS:-0}" != "1" ]; then
	go vet -tags chaos ./internal/e2e
	echo "test.sh: go test -tags chaos -race=false -count=1 -run Chaos ./internal/e2e" >&2
	go test -tags chaos -race=false -count=1 -timeout 10m -run Chaos ./internal/e2e
fi
