#!/usr/bin/env bash
# scripts/test.sh — what `make test` and .ci/run call.
#
#   scripts/test.sh                      # go vet ./... ; go test -race -count=1 -vet=off ./... ;
#                                        # then the contract, fuzz, chaos and bench stages (see below)
#   scripts/test.sh -run Foo ./store/...   # go vet ./... ; go test -race -count=1 -vet=off -run Foo ./store/...
#
# Arguments replace the default package pattern ./...; if none of them names a package
# (./x, ../x or github.com/...), ./... is still appended, so `scripts/test.sh -run Foo` works.
# Database: TEST_DATABASE_URL if already set; otherwise a database of this run's own,
# bpc_test_<random>, from scripts/pg.sh, dropped at the end (scripts/test_env.sh), so two
# runs on one Postgres do not disturb each other.
# When the go test stage runs internal/replicatest (the default ./... does), a private
# primary and streaming replica are started first (scripts/replica.sh, a few seconds)
# and removed at the end.
# -race needs cgo (a C compiler); without one it is dropped with a warning.
#
# Every stage says when it starts, and prints its elapsed time (go test: and the
# packages reported so far) every 30 s (BPC_TEST_PROGRESS_SECONDS) while it runs. Each stage that
# does not run says why; the last line sums up the stages. The exit status is the first
# failing stage's (go test's own when go test fails), 0 when all ran or were skipped.
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" bpc_test

say() { printf 'test.sh: %s\n' "$*" >&2; }

# The stages' outcomes, in order, for the summary line.
summary=()
status=0
failed=""
started_at=$SECONDS

elapsed() { # seconds → 1m05s
	printf '%dm%02ds' $(($1 / 60)) $(($1 % 60))
}

# Progress of the running stage: every 30 s its elapsed time and, for go test, how
# many packages have reported (ok, FAIL or no test files) and the last of them.
ticker_pid=""
start_ticker() { # stage name, output file (may be empty)
	local name="$1" out="$2" t0=$SECONDS
	(
		while sleep "${BPC_TEST_PROGRESS_SECONDS:-30}"; do
			local line="$name: $(elapsed $((SECONDS - t0))) elapsed"
			if [ "$name" = "go test" ] && [ -f "$out" ]; then
				local done last
				done=$(grep -cE '^(ok|FAIL|\?) +[^ ]+' "$out" || true)
				last=$(grep -E '^(ok|FAIL|\?) +[^ ]+' "$out" | tail -n 1 | awk '{print $1, $2}' || true)
				line="$line, $done/$total_pkgs packages reported${last:+ (last: $last)}"
			fi
			printf 'test.sh: %s\n' "$line" >&2
		done
	) &
	ticker_pid=$!
}
stop_ticker() {
	if [ -n "$ticker_pid" ]; then
		kill "$ticker_pid" 2>/dev/null || true
		wait "$ticker_pid" 2>/dev/null || true
		ticker_pid=""
	fi
}
work=$(mktemp -d)
cleanup() {
	stop_ticker
	rm -rf "$work"
	replica_stop 2>/dev/null || true
	test_env_drop
}
trap cleanup EXIT

# run_stage NAME CMD... runs CMD as stage NAME with the progress ticker; stdout and
# stderr pass through as they are (and are kept in $work/NAME.out).
run_stage() {
	local name="$1" t0=$SECONDS rc=0
	shift
	say "$name: $*"
	start_ticker "$name" "$work/$name.out"
	"$@" 2>&1 | tee "$work/$name.out" || rc=${PIPESTATUS[0]}
	stop_ticker
	if [ "$rc" -eq 0 ]; then
		summary+=("$name ok ($(elapsed $((SECONDS - t0))))")
	else
		summary+=("$name FAILED ($(elapsed $((SECONDS - t0))), exit $rc)")
		status=$rc
		failed="$name"
	fi
	return 0
}

# skip NAME REASON records a stage that does not run, and says so.
skip() {
	say "skipping $1: $2"
	summary+=("$1 skipped ($2)")
}

finish() {
	local line="" part
	for part in "${summary[@]}"; do
		line="${line:+$line; }$part"
	done
	say "summary: $line; $(elapsed $((SECONDS - started_at))) in all"
	exit "$status"
}

# optional_stage NAME SKIPVAR NARGS runs the stage NAME (the function of that name)
# unless a stage before failed, the script's NARGS arguments chose what to run, or
# the variable SKIPVAR is 1; it says which.
optional_stage() {
	local name="$1" var="$2" nargs="$3"
	if [ -n "$failed" ]; then
		skip "$name" "$failed failed"
	elif [ "$nargs" -ne 0 ]; then
		skip "$name" "arguments chose what to run"
	elif [ "${!var:-0}" = "1" ]; then
		skip "$name" "$var=1"
	else
		run_stage "$name" "$name"
	fi
}

total_pkgs=0
run_stage deps bash scripts/deps.sh
[ -z "$failed" ] || { skip vet "deps failed"; skip "go test" "deps failed"; skip contract "deps failed"; skip fuzz "deps failed"; skip chaos "deps failed"; skip bench "deps failed"; finish; }

run_stage vet go vet ./...
[ -z "$failed" ] || { skip "go test" "go vet failed"; skip contract "go vet failed"; skip fuzz "go vet failed"; skip chaos "go vet failed"; skip bench "go vet failed"; finish; }

# -vet=off: go test would otherwise vet every package again with a subset of the
# analyzers the vet stage just ran over the same files, tests included (no file
# here is built only with -race); under -race its results are not the vet stage's
# cached ones, so on a fresh clone that repeat cost ~45 s of CPU (go test -race
# -count=1 -run '^$' ./... on an empty GOCACHE: 289 s of CPU, 244 s with -vet=off).
flags=(-count=1 -vet=off)
if [ "$(go env CGO_ENABLED)" = "1" ]; then
	flags=(-race "${flags[@]}")
else
	say "WARNING: cgo unavailable (no C compiler?), running without -race"
fi

have_pkg=0
pkgs=()
for a in "$@"; do
	case "$a" in
	./* | ../* | github.com/*) have_pkg=1 pkgs+=("$a") ;;
	esac
done
args=("$@")
[ "$have_pkg" -eq 1 ] || { args+=(./...); pkgs=(./...); }
total_pkgs=$(go list "${pkgs[@]}" 2>/dev/null | wc -l) || total_pkgs='?'

# The read replica tests (internal/replicatest) need a real streaming replica:
# scripts/replica.sh starts a private primary and a pg_basebackup -R replica of it
# (a few seconds) and exports TEST_REPLICA_*; the EXIT trap removes the pair. Only
# when the go test stage runs that package; a pair that cannot start fails the run
# (the tests would fail without it anyway, with less to go on).
replica_stop() { :; }
if go list "${pkgs[@]}" 2>/dev/null | grep -qx 'github.com/bpc-platform/bpc/internal/replicatest'; then
	say "replica: starting a private primary and streaming replica (scripts/replica.sh)"
	t0=$SECONDS
	if . scripts/replica.sh start; then
		summary+=("replica ok ($(elapsed $((SECONDS - t0))))")
	else
		summary+=("replica FAILED ($(elapsed $((SECONDS - t0))))")
		status=1
		failed=replica
		skip "go test" "replica failed"; skip contract "replica failed"; skip fuzz "replica failed"; skip chaos "replica failed"; skip bench "replica failed"
		finish
	fi
fi

# The go test stage records the traffic its tests exchange with the service
# (internal/contract) for the contract stage, when that stage is to run.
traffic_dir=""
if [ "$#" -eq 0 ] && [ "${BPC_SKIP_CONTRACT:-0}" != "1" ]; then
	traffic_dir="$work/traffic"
	mkdir -p "$traffic_dir"
fi
run_stage "go test" env ${traffic_dir:+BPC_CONTRACT_TRAFFIC_DIR="$traffic_dir"} go test "${flags[@]}" "${args[@]}"

# Then the contract stage: the tools module (tools/, its own go.mod) judges the
# served OpenAPI document and that traffic with tools written by others —
# oapi-codegen and ogen clients must compile, libopenapi-validator must find no
# mismatch, Redocly's recommended ruleset no error or warning — and runs the
# typed-client example (examples/typedclient) against a service of its own.
# It fails when the go test stage recorded nothing. BPC_SKIP_CONTRACT=1 skips it.
contract() {
	say "contract: traffic of the go test stage in $traffic_dir: $(find "$traffic_dir" -name 'traffic-*.jsonl' | wc -l) files, $(cat "$traffic_dir"/traffic-*.jsonl 2>/dev/null | wc -l) exchanges"
	(cd tools && go vet ./... && BPC_CONTRACT_TRAFFIC_DIR="$traffic_dir" go test -count=1 -timeout 15m ./...)
}
optional_stage contract BPC_SKIP_CONTRACT "$#"

# Then the rules fuzz targets (generated deep and wide programs against the parser,
# checker, evaluator and tests language), each for BPC_FUZZTIME (3s) on top of its
# corpus, one at a time, unless arguments chose what to run, BPC_SKIP_FUZZ=1, or go
# test failed. The seeds and the corpus cached by earlier runs always run first; 3 s
# of generation is still some 5 000 to 40 000 new inputs a target on 2 cores, and about
# 5 s a target in all (the first target also builds the instrumented package, some
# 45 s on a cold cache). `make fuzz` runs them longer (60 s each). The list is
# whatever `go test -list` finds.
# scripts/fuzz-target.sh runs each (and runs once more a run that ended on Go 1.26's
# -fuzztime race with nothing found).
fuzz() {
	local target
	for target in $(go test -list 'Fuzz.*' ./core/rules | grep '^Fuzz'); do
		say "fuzz: go test -run ^$target\$ -fuzz ^$target\$ -fuzztime ${BPC_FUZZTIME:-3s} ./core/rules"
		bash scripts/fuzz-target.sh "$target" ./core/rules "${BPC_FUZZTIME:-3s}" || return
	done
}
optional_stage fuzz BPC_SKIP_FUZZ "$#"

# Then the chaos tests (real worker processes killed, Postgres restarted; about a
# minute), unless arguments chose what to run, BPC_SKIP_CHAOS=1, or a stage before
# failed. `make chaos` runs them alone, verbosely.
chaos() {
	go vet -tags chaos ./internal/e2e &&
		go test -tags chaos -race=false -vet=off -count=1 -timeout 10m -run Chaos ./internal/e2e
}
optional_stage chaos BPC_SKIP_CHAOS "$#"

# Then the benchmarks, at a size that tells nothing of speed (about 30 s): their SQL
# reads the schema, and `make bench` runs too rarely to catch a migration that breaks
# one (019 made jobs_live a view, which HistoryAtScale's TABLESAMPLE cannot read; it
# failed unseen for a round). Each benchmark's own checks still hold: the mirror did
# the work, no drift, every request answered. NoisyNeighbour takes minutes at any size
# and is left to `make bench`. BPC_SKIP_BENCH=1 skips the stage.
bench() {
	env BPC_BENCH=1 BPC_BENCH_SMOKE=1 BPC_BENCH_JOBS=500 BPC_BENCH_WORKERS=50 BPC_BENCH_ROUNDS=1 \
		BPC_BENCH_HISTORY_ROWS=2000 BPC_BENCH_LIVE_ROWS=200 BPC_BENCH_HISTORY_ROUNDS=1 \
		BPC_BENCH_QUERY_SAMPLES=3 BPC_BENCH_RETENTION_ROWS=500 BPC_BENCH_HTTP_ROUNDS=1 \
		BPC_BENCH_HTTP_REQUESTS=50 BPC_BENCH_HTTP_BATCHES=1 BPC_BENCH_PASSPORTS=3 \
		BPC_BENCH_PIPELINE_ROUNDS=1 BPC_BENCH_ERROR_JOBS=200 BPC_BENCH_SCAN_SECONDS=1 \
		BPC_BENCH_SCAN_ROUNDS=1 BPC_BENCH_AUTH_REQUESTS=50 BPC_BENCH_PICKUP_JOBS=3 \
		BPC_BENCH_PICKUP_ROUNDS=1 \
		go test -run '^$' -bench . -skip NoisyNeighbour -benchtime 1x -count 1 -vet=off -timeout 10m ./bench/
}
optional_stage bench BPC_SKIP_BENCH "$#"

finish
