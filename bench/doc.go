// Package bench measures the service against bare River on one database:
// burn-down throughput of pre-inserted no-op jobs with a plain River client
// and through the service's full path (its River configuration, the observer
// middleware, the SSOT mirror triggers), HTTP enqueue throughput, and the
// pickup latency of a committed job with River poll-only plus the RabbitMQ
// trigger, poll-only alone, and LISTEN/NOTIFY. Run it with `make bench`; it
// is skipped unless BPC_BENCH=1.
package bench
