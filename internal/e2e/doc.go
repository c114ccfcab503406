// Package e2e holds the end-to-end tests of the whole service: they start
// it in-process through the command line (internal/cli) or run the real
// bpc binary, built once per test run, as child processes, and talk to it
// over HTTP against a real Postgres (TEST_DATABASE_URL). The package has
// no code of its own; its tests build tag chaos adds the process-killing
// chaos tests.
package e2e
