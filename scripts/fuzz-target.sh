#!/usr/bin/env bash
# fuzz-target.sh TARGET PKG FUZZTIME runs one fuzz target (go test -fuzz takes
# one) for FUZZTIME on top of its corpus.
#
# Go 1.26's fuzz coordinator can end a run that found nothing with "context
# deadline exceeded" when -fuzztime expires while a worker is mid-call
# (golang/go#75804, fixed in Go 1.27), most often on a busy machine. A real
# finding always writes its input ("Failing input written to testdata/fuzz/…")
# or fails a check; such a run fails at once. A run whose only failure is that
# deadline, with nothing written, is run once more, and fails if it fails again.
set -euo pipefail
target=$1 pkg=$2 fuzztime=$3
out=$(mktemp)
trap 'rm -f "$out"' EXIT

run() {
	go test -run "^$target\$" -fuzz "^$target\$" -fuzztime "$fuzztime" "$pkg" 2>&1 | tee "$out"
	return "${PIPESTATUS[0]}"
}

run && exit 0
if grep -q 'context deadline exceeded' "$out" && ! grep -q 'Failing input written' "$out" &&
	[ "$(grep -c -- '--- FAIL' "$out")" = 1 ] && ! grep -qE 'panic:|_test\.go:[0-9]+:' "$out"; then
	echo "fuzz-target.sh: $target ended on the fuzz coordinator's -fuzztime race (golang/go#75804), no failing input: running it once more" >&2
	run
	exit
fi
exit 1
