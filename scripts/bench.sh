#!/usr/bin/env bash
# scripts/bench.sh — what `make bench` calls: benchmarks in ./bench/... against a database
# of the run's own, bpc_bench_<random>, dropped at the end (or a pre-set TEST_DATABASE_URL),
# and RabbitMQ (scripts/deps.sh amqp), output also in bench-results.txt.
# Extra arguments are passed to go test, e.g. scripts/bench.sh -bench Throughput
set -euo pipefail
. "$(dirname "${BASH_SOURCE[0]}")/test_env.sh" bpc_bench
export BPC_BENCH=1
bash scripts/deps.sh amqp # the pickup latency benchmark's RabbitMQ

echo "bench.sh: results also go to bench-results.txt" >&2
rc=0
go test -run '^$' -bench . -benchtime 1x -count 1 -timeout 90m "$@" ./bench/... 2>&1 |
	tee bench-results.txt || rc=${PIPESTATUS[0]}

# The figures that have a goal (bench/helpers_test.go goal()), together at the end.
if grep -q '^goal: ' bench-results.txt; then
	{
		echo
		echo "bench.sh: figures and their goals ($(uname -m), $(nproc) cores, $(date -u +%Y-%m-%dT%H:%MZ)):"
		grep '^goal: ' bench-results.txt | sed 's/^goal: /  /'
	} | tee -a bench-results.txt
fi
exit "$rc"
