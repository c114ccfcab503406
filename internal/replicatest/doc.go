// Package replicatest holds the tests of reading from a streaming replica
// (BPC_DATABASE_READ_URL, store.ReadRouter) against a real one: a private
// primary and a replica made with pg_basebackup -R, which scripts/replica.sh
// starts (scripts/test.sh does so before its go test stage). Without the
// variables that script exports, the tests fail: run them through
// scripts/test.sh or `scripts/replica.sh run go test ./internal/replicatest/`.
//
// The tests stop and start the pair's servers, so they run one at a time.
package replicatest
