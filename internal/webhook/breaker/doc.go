// Package breaker is the circuit breaker of webhook endpoints: when an
// endpoint keeps failing, its deliveries are held instead of POSTed, and one
// probe at a time finds out when it is back.
//
// Every endpoint has a breaker, kept in Postgres (webhook_endpoint_breakers,
// read and written through store) so that all worker processes of a cluster
// share it:
//
//   - CLOSED: deliveries go. Each POST's outcome is counted in a sliding time
//     window (Config.Window, default 60 s, as a ring of 10 buckets). When
//     the window holds at least MinAttempts attempts (5) and the share of
//     endpoint-health failures reaches FailureThreshold (50 %), it opens.
//     Only the endpoint's health counts: 5xx, 408, 429, timeouts and network
//     errors are failures; 2xx and other 4xx (the delivery's own fault) are
//     attempts that did not fail.
//   - OPEN: deliveries are held — the job snoozes until next_probe_at
//     (opened + Cooldown, default 30 s) without POSTing, and the delivery
//     stays PENDING. Other endpoints, and other queues, are not affected.
//   - After the cool-down one delivery claims the probe (an atomic UPDATE:
//     exactly one wins) and the breaker is HALF_OPEN; the others keep
//     snoozing. The probe's success closes the breaker (with a fresh window)
//     and wakes held deliveries; its failure re-opens it for another
//     cool-down. A probe whose worker dies lapses after the request timeout
//     plus a margin (Config.ProbeLease), and another delivery takes it over.
//   - An operator's retry (River UI or POST /v1/jobs/{id}/retry) is the
//     strongest sign that the endpoint is back: the attempt it asks for
//     does not wait out the cool-down but claims the probe at once while
//     the breaker is OPEN. The probe stays single: when another probe is in
//     flight (HALF_OPEN), the operator's delivery is held for at most
//     operatorRecheck and looks again — woken at once if that probe closes
//     the breaker, the next probe if it fails. So retrying many dead
//     deliveries of one endpoint sends one first and the rest as soon as it
//     succeeds; against an endpoint still down they go one at a time, each
//     failing fast, not as a burst. Automatic retries still wait. The
//     attempt is recognised by the mark the retry leaves on the River job
//     (bpctype.LastOperatorRetry).
//
// A time window rather than "the last 20 attempts": failures age out, so a
// burst long ago cannot trip the breaker together with one new failure, and
// MinAttempts keeps a quiet endpoint's single failure from tripping it.
//
// Outcomes that arrive while the breaker is not CLOSED from deliveries that
// are not the probe (POSTs that started before it opened) change nothing.
//
// Holding relies on River's snooze (river.JobSnooze) spending no attempt:
// the held job goes back to the queue at now + the hold with the attempt
// count it had before it was fetched and no error appended, and River
// counts the snooze in the job's metadata (snoozes). The SSOT mirror
// therefore shows the job QUEUED with its attempts unchanged. The workers'
// breaker tests hold deliveries and check exactly that, so an upgrade of
// River that changed it would fail them.
//
// Cost: CLOSED deliveries read the breaker row by primary key before the
// POST (Config.Check); after it, the outcome is one locked read and one
// single-row UPDATE (an INSERT the first time) in the transaction that
// records the attempt (Config.Record).
package breaker
