package workers

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river/rivertype"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/store"
)

// Circuit breaker of webhook endpoints (issue 5).
//
// Every endpoint has a breaker, kept in Postgres (webhook_endpoint_breakers)
// so that all worker processes of a cluster share it:
//
//   - CLOSED: deliveries go. Each POST's outcome is counted in a sliding time
//     window (BreakerConfig.Window, default 60 s, as a ring of 10 buckets).
//     When the window holds at least MinAttempts attempts (5) and the share
//     of endpoint-health failures reaches FailureThreshold (50 %), it opens.
//     Only the endpoint's health counts: 5xx, 408, 429, timeouts and network
//     errors are failures; 2xx and other 4xx (the delivery's own fault) are
//     attempts that did not fail.
//   - OPEN: deliveries are held — the job snoozes until next_probe_at
//     (opened + Cooldown, default 30 s) without POSTing: River's snooze
//     spends no attempt, and the delivery stays PENDING. Other endpoints,
//     and other queues, are not affected.
//   - After the cool-down one delivery claims the probe (an atomic UPDATE:
//     exactly one wins) and the breaker is HALF_OPEN; the others keep
//     snoozing. The probe's success closes the breaker (with a fresh window)
//     and wakes held deliveries; its failure re-opens it for another
//     cool-down. A probe whose worker dies lapses after the request timeout
//     plus a margin, and another delivery takes it over.
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
//     (store.LastOperatorRetry).
//
// A time window rather than "the last 20 attempts": failures age out, so a
// burst long ago cannot trip the breaker together with one new failure, and
// MinAttempts keeps a quiet endpoint's single failure from tripping it.
//
// Outcomes that arrive while the breaker is not CLOSED from deliveries that
// are not the probe (POSTs that started before it opened) change nothing.
//
// Holding spends no attempt (River v0.51.1, internal/jobexecutor
// reportResult): a JobSnoozeError sets the job's attempt back to
// jobRow.Attempt-1, undoing the fetch's attempt+1, schedules it at now + d
// (state available when d is within the scheduler's 5 s interval, otherwise
// scheduled), appends no error and counts metadata.snoozes. The SSOT mirror
// therefore shows the job QUEUED with its attempts unchanged.
//
// Cost: CLOSED deliveries read the breaker row by primary key before the
// POST; after it, the outcome is one locked read and one single-row UPDATE
// (an INSERT the first time) in the transaction that records the attempt.

// BreakerConfig tunes the webhook circuit breaker. Zero fields take the
// defaults of DefaultBreakerConfig.
type BreakerConfig struct {
	// Disabled turns the breaker off: every delivery POSTs.
	Disabled bool
	// Window is how far back attempts are counted (60 s).
	Window time.Duration
	// MinAttempts is the least number of attempts in the window before the
	// failure rate can open the breaker (5).
	MinAttempts int
	// FailureThreshold is the failure rate, in (0, 1], that opens it (0.5).
	FailureThreshold float64
	// Cooldown is how long an open breaker holds deliveries before a probe
	// (30 s).
	Cooldown time.Duration
}

// breakerBuckets is the number of time buckets the window is counted in.
const breakerBuckets = 10

// breakerWakeLimit bounds the held deliveries made available at once when a
// breaker closes; the rest come back when their snooze ends (at most a
// cool-down later). The queue's workers bound how many POST concurrently.
const breakerWakeLimit = 1000

// minBreakerHold is the shortest snooze of a held delivery.
const minBreakerHold = 5 * time.Millisecond

// operatorRecheck is the longest an operator's retry is held while another
// delivery's probe is in flight, before it looks at the breaker again.
const operatorRecheck = time.Second

// DefaultBreakerConfig returns the defaults: a 60 s window, at least 5
// attempts, a 50 % failure threshold and a 30 s cool-down.
func DefaultBreakerConfig() BreakerConfig {
	return BreakerConfig{Window: 60 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c BreakerConfig) WithDefaults() BreakerConfig {
	d := DefaultBreakerConfig()
	if c.Window <= 0 {
		c.Window = d.Window
	}
	if c.MinAttempts <= 0 {
		c.MinAttempts = d.MinAttempts
	}
	if c.FailureThreshold <= 0 {
		c.FailureThreshold = d.FailureThreshold
	}
	if c.Cooldown <= 0 {
		c.Cooldown = d.Cooldown
	}
	return c
}

// Validate reports a configuration that cannot work, naming the field.
func (c BreakerConfig) Validate() error {
	switch {
	case c.Window < breakerBuckets*time.Millisecond:
		return errcode.Invalid("window", "must be at least %d ms", breakerBuckets)
	case c.MinAttempts < 1:
		return errcode.Invalid("min_attempts", "must be at least 1")
	case c.FailureThreshold <= 0 || c.FailureThreshold > 1:
		return errcode.Invalid("failure_threshold", "must be in (0, 1]")
	case c.Cooldown <= 0:
		return errcode.Invalid("cooldown", "must be positive")
	}
	return nil
}

// Trips reports whether attempts and failures in the window open the breaker.
func (c BreakerConfig) Trips(attempts, failures int) bool {
	return attempts >= c.MinAttempts && attempts > 0 &&
		float64(failures) >= c.FailureThreshold*float64(attempts)
}

// BreakerAdmission is what the breaker says about one delivery.
type BreakerAdmission struct {
	// Allow lets the delivery POST; Probe marks it as the breaker's probe.
	Allow, Probe bool
	// Claim asks to claim the probe atomically (store.ClaimWebhookBreakerProbe)
	// and POST as the probe only when the claim wins; Early claims it before
	// the cool-down ends (an operator's retry while OPEN).
	Claim, Early bool
	// Hold is how long to snooze the delivery when it may not POST.
	Hold time.Duration
}

// Admit decides, from the breaker as read before the POST, whether a
// delivery may go.
func (c BreakerConfig) Admit(b store.WebhookBreaker, deliveryID uuid.UUID, now time.Time) BreakerAdmission {
	switch {
	case c.Disabled || b.State == "" || b.State == store.BreakerClosed:
		return BreakerAdmission{Allow: true}
	case b.State == store.BreakerHalfOpen && b.ProbeDeliveryID != nil && *b.ProbeDeliveryID == deliveryID:
		// This delivery holds the probe (its job is running again).
		return BreakerAdmission{Allow: true, Probe: true}
	case b.NextProbeAt == nil || !now.Before(*b.NextProbeAt):
		return BreakerAdmission{Claim: true}
	case b.State == store.BreakerOpen:
		return BreakerAdmission{Hold: max(b.NextProbeAt.Sub(now), minBreakerHold)}
	default:
		// HALF_OPEN with another delivery's probe in flight: look again a
		// cool-down later at most (the probe usually ends long before its
		// claim lapses).
		return BreakerAdmission{Hold: max(min(b.NextProbeAt.Sub(now), c.Cooldown), minBreakerHold)}
	}
}

// AdmitOperatorRetry decides for the attempt an operator's retry asked for:
// as Admit, except that while the breaker is OPEN it claims the probe at
// once, and while another probe is in flight it is held for
// operatorRecheck at most.
func (c BreakerConfig) AdmitOperatorRetry(b store.WebhookBreaker, deliveryID uuid.UUID, now time.Time) BreakerAdmission {
	adm := c.Admit(b, deliveryID, now)
	switch {
	case adm.Allow || adm.Claim:
		return adm
	case b.State == store.BreakerOpen:
		return BreakerAdmission{Claim: true, Early: true}
	default:
		return BreakerAdmission{Hold: min(adm.Hold, operatorRecheck)}
	}
}

// BreakerOutcome is what a delivery attempt says about its endpoint's health.
type BreakerOutcome int

// Breaker outcomes.
const (
	// OutcomeNone: no POST was made, or it was cut short by this process
	// (shutdown, cancellation): nothing is learnt about the endpoint.
	OutcomeNone BreakerOutcome = iota
	// OutcomeHealthy: the endpoint answered (2xx, or a 4xx other than 408
	// and 429, which is the delivery's fault, not the endpoint's health).
	OutcomeHealthy
	// OutcomeFailure: 5xx, 408, 429, timeout or network error.
	OutcomeFailure
)

// ClassifyOutcome maps a POST's result to a breaker outcome. posted is false
// when no request was sent.
func ClassifyOutcome(posted bool, sendErr error) BreakerOutcome {
	if !posted {
		return OutcomeNone
	}
	if sendErr == nil {
		return OutcomeHealthy
	}
	switch errcode.CodeOf(sendErr) {
	case errcode.Webhook5xx, errcode.WebhookTimeout, errcode.WebhookNetwork:
		return OutcomeFailure
	case errcode.Webhook4xx:
		return OutcomeHealthy
	}
	return OutcomeNone
}

// Next applies one delivery's outcome to the breaker (read under its row
// lock) and returns the breaker to store, and whether anything changed.
func (c BreakerConfig) Next(b store.WebhookBreaker, deliveryID uuid.UUID, o BreakerOutcome, now time.Time) (store.WebhookBreaker, bool) {
	isProbe := b.State == store.BreakerHalfOpen && b.ProbeDeliveryID != nil && *b.ProbeDeliveryID == deliveryID
	if o == OutcomeNone {
		if !isProbe {
			return b, false
		}
		// The probe was cut short: let the next delivery (or this one,
		// when its job comes back) probe at once.
		next := now
		b.NextProbeAt = &next
		return b, true
	}
	if !b.Window.Fits(c.Window, breakerBuckets) {
		b.Window = store.NewBreakerWindow(c.Window, breakerBuckets)
	}
	failure := o == OutcomeFailure
	switch {
	case b.State == "" || b.State == store.BreakerClosed:
		b.State = store.BreakerClosed
		b.Window = b.Window.Record(now, failure)
		setTotals(&b, now)
		if c.Trips(int(b.Attempts), int(b.Failures)) {
			c.open(&b, now)
		}
	case isProbe && failure:
		b.Window = b.Window.Record(now, true)
		setTotals(&b, now)
		c.open(&b, now)
	case isProbe:
		b.State = store.BreakerClosed
		b.Window = store.NewBreakerWindow(c.Window, breakerBuckets).Record(now, false)
		setTotals(&b, now)
		b.OpenedAt, b.NextProbeAt, b.ProbeDeliveryID = nil, nil, nil
	default:
		return b, false // a POST that started before the breaker opened
	}
	return b, true
}

// setTotals stores the window's totals at now on the row (what operators
// read with SQL; the API recomputes them as they age).
func setTotals(b *store.WebhookBreaker, now time.Time) {
	attempts, failures := b.Window.Totals(now)
	b.Attempts, b.Failures = int32(attempts), int32(failures)
}

func (c BreakerConfig) open(b *store.WebhookBreaker, now time.Time) {
	if b.OpenedAt == nil {
		opened := now
		b.OpenedAt = &opened
	}
	next := now.Add(c.Cooldown)
	b.State, b.NextProbeAt, b.ProbeDeliveryID = store.BreakerOpen, &next, nil
}

// breakerNote is what a delivery attempt tells its endpoint's breaker.
type breakerNote struct {
	outcome BreakerOutcome
	probe   bool // the delivery was admitted as the probe
}

// BreakerTransition is one change of a breaker's state.
type BreakerTransition struct {
	EndpointID, TenantID uuid.UUID
	From, To             string
	Attempts, Failures   int
	NextProbeAt          *time.Time
}

// FailureRate is failures / attempts in the window (0 when empty).
func (t BreakerTransition) FailureRate() float64 {
	if t.Attempts == 0 {
		return 0
	}
	return float64(t.Failures) / float64(t.Attempts)
}

func transition(before, after store.WebhookBreaker, now time.Time) *BreakerTransition {
	from, to := before.State, after.State
	if from == "" {
		from = store.BreakerClosed
	}
	if from == to {
		return nil
	}
	attempts, failures := after.Window.Totals(now)
	return &BreakerTransition{EndpointID: after.WebhookEndpointID, TenantID: after.TenantID, From: from, To: to,
		Attempts: attempts, Failures: failures, NextProbeAt: after.NextProbeAt}
}

// breakerConfig is the worker's configuration with defaults applied.
func (w *DeliverWebhookWorker) breakerConfig() BreakerConfig { return w.Breaker.WithDefaults() }

// probeLease is how long a claimed probe holds the breaker HALF_OPEN before
// another delivery may take it over: the job's timeout plus a margin, so a
// live probe always reports first.
func (w *DeliverWebhookWorker) probeLease() time.Duration {
	return max(w.breakerConfig().Cooldown, w.RequestTimeout+15*time.Second)
}

// admit consults the endpoint's breaker before a POST. operator is true
// for the attempt an operator's retry asked for (AdmitOperatorRetry). It
// returns how long to hold the delivery (0: send it) and whether it is the
// probe.
func (w *DeliverWebhookWorker) admit(ctx context.Context, d store.DeliveryToSend, operator bool) (time.Duration, bool, error) {
	cfg := w.breakerConfig()
	if cfg.Disabled {
		return 0, false, nil
	}
	decide := cfg.Admit
	if operator {
		decide = cfg.AdmitOperatorRetry
	}
	tenantID, endpointID, deliveryID := d.Delivery.TenantID, d.Endpoint.WebhookEndpointID, d.Delivery.WebhookDeliveryID
	b, err := w.Store.GetWebhookBreaker(ctx, tenantID, endpointID)
	if err != nil {
		return 0, false, errcode.Wrap(errcode.DBUnavailable, err, "error reading webhook breaker: %s", err.Error())
	}
	now := time.Now()
	adm := decide(b, deliveryID, now)
	if adm.Claim {
		won, after, err := w.Store.ClaimWebhookBreakerProbe(ctx, tenantID, endpointID, b.State,
			deliveryID, now, now.Add(w.probeLease()), adm.Early)
		if err != nil {
			return 0, false, errcode.Wrap(errcode.DBUnavailable, err, "error claiming webhook breaker probe: %s", err.Error())
		}
		if won {
			attrs := []any{slog.String("webhook_endpoint_id", endpointID.String()),
				slog.String("webhook_delivery_id", deliveryID.String())}
			switch t := transition(b, after, now); {
			case adm.Early:
				w.logger().InfoContext(ctx, "webhook breaker probe sent before the cool-down: an operator retried the delivery",
					append(attrs, slog.Time("cooldown_until", *b.NextProbeAt))...)
				if t != nil {
					w.reportTransition(ctx, *t)
				}
			case t != nil:
				w.reportTransition(ctx, *t)
			default:
				w.logger().InfoContext(ctx, "webhook breaker probe taken over", attrs...)
			}
			return 0, true, nil
		}
		adm = decide(after, deliveryID, now)
		if adm.Claim { // lost to a claim that has not lapsed yet by our clock
			adm = BreakerAdmission{Hold: minBreakerHold}
		}
	}
	if adm.Allow {
		return 0, adm.Probe, nil
	}
	if w.Metrics != nil && w.Metrics.WebhookDeliveriesHeld != nil {
		w.Metrics.WebhookDeliveriesHeld.Inc()
	}
	// Jitter spreads the wake-ups of many held deliveries (an operator's,
	// held for a short recheck, by a tenth of it).
	jitter := cfg.Cooldown / 10
	if operator {
		jitter = min(jitter, adm.Hold/10)
	}
	return adm.Hold + rand.N(jitter+1), false, nil
}

// operatorAttempt reports whether job's attempt is the one an operator's
// retry asked for (store.LastOperatorRetry).
func operatorAttempt(job *rivertype.JobRow) bool {
	r, ok := store.LastOperatorRetry(job.Metadata)
	return ok && r.IsOperatorAttempt(job.Attempt)
}

// recordOutcome applies a delivery's outcome to its endpoint's breaker in
// tx, the transaction that records the attempt, and wakes held deliveries
// when the breaker closes. The transition, if any, is reported by the
// caller once tx commits.
func (w *DeliverWebhookWorker) recordOutcome(ctx context.Context, tx pgx.Tx, d store.DeliveryToSend, o BreakerOutcome) (*BreakerTransition, error) {
	cfg := w.breakerConfig()
	if cfg.Disabled {
		return nil, nil
	}
	now := time.Now()
	deliveryID := d.Delivery.WebhookDeliveryID
	before, after, err := w.Store.WithTx(tx).UpdateWebhookBreaker(ctx, d.Delivery.TenantID, d.Endpoint.WebhookEndpointID,
		func(b store.WebhookBreaker) (store.WebhookBreaker, bool) { return cfg.Next(b, deliveryID, o, now) })
	if err != nil {
		return nil, err
	}
	t := transition(before, after, now)
	if t != nil && t.To == store.BreakerClosed {
		if _, err := w.Store.WithTx(tx).WakeHeldWebhookDeliveries(ctx, d.Endpoint.WebhookEndpointID, now, breakerWakeLimit); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// reportTransition logs a committed transition and counts it. The endpoint's
// URL and secret are not logged.
func (w *DeliverWebhookWorker) reportTransition(ctx context.Context, t BreakerTransition) {
	attrs := []slog.Attr{
		slog.String("webhook_endpoint_id", t.EndpointID.String()),
		slog.String("tenant_id", t.TenantID.String()),
		slog.String("from", t.From),
		slog.String("to", t.To),
		slog.Float64("failure_rate", t.FailureRate()),
		slog.Int("attempts_in_window", t.Attempts),
	}
	if t.NextProbeAt != nil {
		attrs = append(attrs, slog.Time("next_probe_at", *t.NextProbeAt))
	}
	level := slog.LevelInfo
	if t.To == store.BreakerOpen {
		level = slog.LevelWarn
	}
	w.logger().LogAttrs(ctx, level, "webhook breaker transition", attrs...)
	if w.Metrics != nil && w.Metrics.BreakerTransitions != nil {
		w.Metrics.BreakerTransitions.WithLabelValues(t.To).Inc()
	}
}

func (w *DeliverWebhookWorker) logger() *slog.Logger {
	if w.Logger != nil {
		return w.Logger
	}
	return slog.Default()
}

// BreakerCollector reports bpc_webhook_breakers_open: the endpoints whose
// breaker holds deliveries (OPEN or HALF_OPEN), read from the database at
// scrape time so that every replica reports the cluster's truth.
//
// Why not a gauge bpc_webhook_breaker_state{endpoint_id}: endpoints are
// created by tenants without bound, and a label per endpoint makes the
// series count grow with them (and never shrink in Prometheus' retention).
// The per-endpoint state is in the API (GET /v1/webhook-endpoints/{id});
// metrics carry the bounded aggregate, by state, plus
// bpc_webhook_breaker_transitions_total{to} in Metrics.
type BreakerCollector struct {
	Store  *store.Queries
	Logger *slog.Logger
	open   *prometheus.Desc
}

// NewBreakerCollector returns a collector over st; register it once per
// process (workers or API).
func NewBreakerCollector(st *store.Queries, logger *slog.Logger) *BreakerCollector {
	return &BreakerCollector{Store: st, Logger: logger,
		open: prometheus.NewDesc("bpc_webhook_breakers_open",
			"Webhook endpoints whose circuit breaker holds deliveries, by state (OPEN, HALF_OPEN), cluster-wide.",
			[]string{"state"}, nil)}
}

// Describe implements prometheus.Collector.
func (c *BreakerCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.open }

// Collect implements prometheus.Collector.
func (c *BreakerCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	counts, err := c.Store.CountWebhookBreakers(ctx)
	if err != nil {
		if c.Logger != nil {
			c.Logger.Warn("webhook breaker metrics unavailable", slog.String("error", err.Error()))
		}
		return
	}
	for _, state := range []string{store.BreakerOpen, store.BreakerHalfOpen} {
		ch <- prometheus.MustNewConstMetric(c.open, prometheus.GaugeValue, float64(counts[state]), state)
	}
}
