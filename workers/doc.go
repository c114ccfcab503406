// Package workers holds one River worker per job type — the worker of
// CompilePassportArgs is in compile_passport.go, beside jobargs'
// compile_passport.go — the registry that lists them, and the Completer
// with which a handler finishes its job. What every job runs through (the
// River client, the observer middleware, tracing, leases and the reaper,
// maintenance) is the job runtime, internal/jobrun, which imports this
// package and not the reverse.
//
// A worker holds no domain logic: it calls the passport package's
// operations. What it adds is River's side of them. Each worker that only
// touches the database commits the operation's writes, its audit event,
// the next job and its own completion (river.JobCompleteTx) in one
// transaction, after checking it still holds the job's lease: a crash
// leaves either all of it or none of it, and the retry finds the state as
// it was. Re-running a completed job (River UI can retry any job) has no
// second effect: versions, runs and exports are keyed by the River job that
// made them, next jobs by an idempotency key, facts by their identity.
//
// Registry lists the job types; adding one is two files (its args in
// jobargs, its worker here, named after the kind) and one registry line.
package workers
