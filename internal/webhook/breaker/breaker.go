package breaker

import (
	"time"

	"github.com/google/uuid"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// Config tunes the webhook circuit breaker. Zero fields take the defaults
// of DefaultConfig.
type Config struct {
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

// buckets is the number of time buckets the window is counted in.
const buckets = 10

// wakeLimit bounds the held deliveries made available at once when a
// breaker closes; the rest come back when their snooze ends (at most a
// cool-down later). The queue's workers bound how many POST concurrently.
const wakeLimit = 1000

// minHold is the shortest snooze of a held delivery.
const minHold = 5 * time.Millisecond

// operatorRecheck is the longest an operator's retry is held while another
// delivery's probe is in flight, before it looks at the breaker again.
const operatorRecheck = time.Second

// DefaultConfig returns the defaults: a 60 s window, at least 5 attempts, a
// 50 % failure threshold and a 30 s cool-down.
func DefaultConfig() Config {
	return Config{Window: 60 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}
}

// WithDefaults returns c with its zero fields set to the defaults.
func (c Config) WithDefaults() Config {
	d := DefaultConfig()
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
func (c Config) Validate() error {
	switch {
	case c.Window < buckets*time.Millisecond:
		return errcode.Invalid("window", "must be at least %d ms", buckets)
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
func (c Config) Trips(attempts, failures int) bool {
	return attempts >= c.MinAttempts && attempts > 0 &&
		float64(failures) >= c.FailureThreshold*float64(attempts)
}

// ProbeLease is how long a claimed probe holds the breaker HALF_OPEN before
// another delivery may take it over: the timeout of one POST plus a margin,
// so a live probe always reports first.
func (c Config) ProbeLease(requestTimeout time.Duration) time.Duration {
	return max(c.Cooldown, requestTimeout+15*time.Second)
}

// Admission is what the breaker says about one delivery.
type Admission struct {
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
func (c Config) Admit(b bpctype.WebhookBreaker, deliveryID uuid.UUID, now time.Time) Admission {
	switch {
	case c.Disabled || b.State == "" || b.State == bpctype.BreakerClosed:
		return Admission{Allow: true}
	case isProbe(b, deliveryID):
		// This delivery holds the probe (its job is running again).
		return Admission{Allow: true, Probe: true}
	case b.NextProbeAt == nil || !now.Before(*b.NextProbeAt):
		return Admission{Claim: true}
	case b.State == bpctype.BreakerOpen:
		return Admission{Hold: max(b.NextProbeAt.Sub(now), minHold)}
	default:
		// HALF_OPEN with another delivery's probe in flight: look again a
		// cool-down later at most (the probe usually ends long before its
		// claim lapses).
		return Admission{Hold: max(min(b.NextProbeAt.Sub(now), c.Cooldown), minHold)}
	}
}

// AdmitOperatorRetry decides for the attempt an operator's retry asked for:
// as Admit, except that while the breaker is OPEN it claims the probe at
// once, and while another probe is in flight it is held for
// operatorRecheck at most.
func (c Config) AdmitOperatorRetry(b bpctype.WebhookBreaker, deliveryID uuid.UUID, now time.Time) Admission {
	adm := c.Admit(b, deliveryID, now)
	switch {
	case adm.Allow || adm.Claim:
		return adm
	case b.State == bpctype.BreakerOpen:
		return Admission{Claim: true, Early: true}
	default:
		return Admission{Hold: min(adm.Hold, operatorRecheck)}
	}
}

// isProbe reports whether deliveryID holds b's probe.
func isProbe(b bpctype.WebhookBreaker, deliveryID uuid.UUID) bool {
	return b.State == bpctype.BreakerHalfOpen && b.ProbeDeliveryID != nil && *b.ProbeDeliveryID == deliveryID
}

// Outcome is what a delivery attempt says about its endpoint's health.
type Outcome int

// Breaker outcomes.
const (
	// OutcomeNone: no POST was made, or it was cut short by this process
	// (shutdown, cancellation): nothing is learnt about the endpoint.
	OutcomeNone Outcome = iota
	// OutcomeHealthy: the endpoint answered (2xx, or a 4xx other than 408
	// and 429, which is the delivery's fault, not the endpoint's health; or
	// a 3xx, which is its configuration's).
	OutcomeHealthy
	// OutcomeFailure: 5xx, 408, 429, timeout or network error.
	OutcomeFailure
)

// Classify maps a POST's result to a breaker outcome. posted is false when
// no request was sent.
func Classify(posted bool, sendErr error) Outcome {
	if !posted {
		return OutcomeNone
	}
	if sendErr == nil {
		return OutcomeHealthy
	}
	switch errcode.CodeOf(sendErr) {
	case errcode.Webhook5xx, errcode.WebhookTimeout, errcode.WebhookNetwork:
		return OutcomeFailure
	case errcode.Webhook4xx, errcode.Webhook3xx:
		return OutcomeHealthy
	}
	return OutcomeNone
}

// Next applies one delivery's outcome to the breaker (read under its row
// lock) and returns the breaker to store, and whether anything changed.
func (c Config) Next(b bpctype.WebhookBreaker, deliveryID uuid.UUID, o Outcome, now time.Time) (bpctype.WebhookBreaker, bool) {
	probe := isProbe(b, deliveryID)
	if o == OutcomeNone {
		if !probe {
			return b, false
		}
		// The probe was cut short: let the next delivery (or this one,
		// when its job comes back) probe at once.
		next := now
		b.NextProbeAt = &next
		return b, true
	}
	if !Window(b.Window).Fits(c.Window, buckets) {
		b.Window = bpctype.BreakerWindow(NewWindow(c.Window, buckets))
	}
	failure := o == OutcomeFailure
	switch {
	case b.State == "" || b.State == bpctype.BreakerClosed:
		b.State = bpctype.BreakerClosed
		b.Window = bpctype.BreakerWindow(Window(b.Window).Record(now, failure))
		setTotals(&b, now)
		if c.Trips(int(b.Attempts), int(b.Failures)) {
			c.open(&b, now)
		}
	case probe && failure:
		b.Window = bpctype.BreakerWindow(Window(b.Window).Record(now, true))
		setTotals(&b, now)
		c.open(&b, now)
	case probe:
		b.State = bpctype.BreakerClosed
		b.Window = bpctype.BreakerWindow(NewWindow(c.Window, buckets).Record(now, false))
		setTotals(&b, now)
		b.OpenedAt, b.NextProbeAt, b.ProbeDeliveryID = nil, nil, nil
	default:
		return b, false // a POST that started before the breaker opened
	}
	return b, true
}

// setTotals stores the window's totals at now on the row (what operators
// read with SQL; the API recomputes them as they age).
func setTotals(b *bpctype.WebhookBreaker, now time.Time) {
	attempts, failures := Window(b.Window).Totals(now)
	b.Attempts, b.Failures = int32(attempts), int32(failures)
}

func (c Config) open(b *bpctype.WebhookBreaker, now time.Time) {
	if b.OpenedAt == nil {
		opened := now
		b.OpenedAt = &opened
	}
	next := now.Add(c.Cooldown)
	b.State, b.NextProbeAt, b.ProbeDeliveryID = bpctype.BreakerOpen, &next, nil
}

// Transition is one change of a breaker's state.
type Transition struct {
	EndpointID, TenantID uuid.UUID
	From, To             string
	Attempts, Failures   int
	NextProbeAt          *time.Time
}

// FailureRate is failures / attempts in the window (0 when empty).
func (t Transition) FailureRate() float64 {
	if t.Attempts == 0 {
		return 0
	}
	return float64(t.Failures) / float64(t.Attempts)
}

// transition returns the change from before to after, or nil when the
// state stayed the same.
func transition(before, after bpctype.WebhookBreaker, now time.Time) *Transition {
	from, to := before.State, after.State
	if from == "" {
		from = bpctype.BreakerClosed
	}
	if from == to {
		return nil
	}
	attempts, failures := Window(after.Window).Totals(now)
	return &Transition{EndpointID: after.WebhookEndpointID, TenantID: after.TenantID, From: from, To: to,
		Attempts: attempts, Failures: failures, NextProbeAt: after.NextProbeAt}
}
