// Package jobrun is the job runtime: what every job runs through, whatever
// its type. It builds the service's River client (queues, fetch cooldowns,
// the retry policy, LISTEN or the RabbitMQ trigger), and holds the River
// middleware — the Observer (typed errors → River control flow, one log
// line per transition, the per-attempt metrics) and Tracing (one trace
// from the enqueue through every attempt) — the SSOT leases and the Reaper
// that returns the jobs of a lost worker, and the maintenance jobs
// (mirror consistency check, retention).
//
// The job handlers are elsewhere: one River worker per job type in the
// workers package, whose registry lists the job types. This package
// imports workers (for the registry and the metrics the handlers share),
// never the other way round, so a handler cannot reach into the runtime;
// what a handler needs to finish its job (the lease fence and completion
// in the domain transaction) is workers' Completer. The service wires the
// two together.
package jobrun
