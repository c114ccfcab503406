package breaker_test

import (
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
)

func TestBreakerConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	d := breaker.DefaultConfig()
	require.Equal(t, breaker.Config{Window: time.Minute, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}, d)
	require.Equal(t, d, breaker.Config{}.WithDefaults())
	require.NoError(t, d.Validate())
	got := breaker.Config{Cooldown: time.Second}.WithDefaults()
	require.Equal(t, time.Second, got.Cooldown)
	require.Equal(t, 5, got.MinAttempts)
	require.Equal(t, 45*time.Second, d.ProbeLease(30*time.Second), "a POST's timeout plus a margin")
	require.Equal(t, time.Minute, breaker.Config{Cooldown: time.Minute}.ProbeLease(time.Second), "a cool-down at least")

	for name, c := range map[string]breaker.Config{
		"window":            {Window: time.Millisecond, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: time.Second},
		"min_attempts":      {Window: time.Minute, MinAttempts: 0, FailureThreshold: 0.5, Cooldown: time.Second},
		"failure_threshold": {Window: time.Minute, MinAttempts: 5, FailureThreshold: 1.5, Cooldown: time.Second},
		"cooldown":          {Window: time.Minute, MinAttempts: 5, FailureThreshold: 0.5},
	} {
		err := c.Validate()
		require.Error(t, err, name)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err))
		require.Contains(t, err.Error(), name)
	}
}

func TestBreakerTripsAtThresholdWithMinimumAttempts(t *testing.T) {
	t.Parallel()
	c := breaker.DefaultConfig()
	for _, tc := range []struct {
		attempts, failures int
		trips              bool
	}{
		{0, 0, false}, {4, 4, false}, {5, 2, false}, {5, 3, true}, {6, 3, true}, {20, 9, false}, {20, 10, true},
	} {
		require.Equal(t, tc.trips, c.Trips(tc.attempts, tc.failures), "%d/%d", tc.failures, tc.attempts)
	}
	all := breaker.Config{MinAttempts: 1, FailureThreshold: 1}.WithDefaults()
	require.False(t, all.Trips(5, 4))
	require.True(t, all.Trips(1, 1))
}

func TestClassifyOutcomeCountsOnlyEndpointHealth(t *testing.T) {
	t.Parallel()
	require.Equal(t, breaker.OutcomeNone, breaker.Classify(false, nil))
	require.Equal(t, breaker.OutcomeHealthy, breaker.Classify(true, nil))
	for _, code := range []errcode.Code{errcode.Webhook5xx, errcode.WebhookTimeout, errcode.WebhookNetwork} {
		require.Equal(t, breaker.OutcomeFailure, breaker.Classify(true, errcode.New(code, "x")), code)
	}
	require.Equal(t, breaker.OutcomeHealthy, breaker.Classify(true, errcode.New(errcode.Webhook4xx, "HTTP 400")),
		"a 4xx other than 408/429 is the delivery's fault, not the endpoint's health")
	require.Equal(t, breaker.OutcomeHealthy, breaker.Classify(true, errcode.New(errcode.Webhook3xx, "HTTP 302")),
		"a redirect is the endpoint's configuration, answered at once: it neither trips nor holds the breaker")
	require.Equal(t, breaker.OutcomeNone, breaker.Classify(true, errcode.New(errcode.Validation, "bad URL")))
}

func TestBreakerStateMachine(t *testing.T) {
	t.Parallel()
	c := breaker.Config{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 3 * time.Second}
	t0 := time.UnixMilli(1_700_000_000_000)
	d1, d2 := uuid.New(), uuid.New()
	b := bpctype.WebhookBreaker{WebhookEndpointID: uuid.New(), State: bpctype.BreakerClosed}

	require.Equal(t, breaker.Admission{Allow: true}, c.Admit(b, d1, t0))

	// Successes dilute failures: 5 successes + 4 failures is 44 %.
	var write bool
	for i := range 5 {
		b, write = c.Next(b, d1, breaker.OutcomeHealthy, t0.Add(time.Duration(i)*time.Millisecond))
		require.True(t, write)
	}
	for range 4 {
		b, _ = c.Next(b, d1, breaker.OutcomeFailure, t0.Add(time.Second))
	}
	require.Equal(t, bpctype.BreakerClosed, b.State)
	require.Equal(t, int32(9), b.Attempts)
	require.Equal(t, int32(4), b.Failures)
	// The fifth failure makes 5/10: open.
	now := t0.Add(2 * time.Second)
	b, _ = c.Next(b, d1, breaker.OutcomeFailure, now)
	require.Equal(t, bpctype.BreakerOpen, b.State)
	require.Equal(t, now, *b.OpenedAt)
	require.Equal(t, now.Add(3*time.Second), *b.NextProbeAt)
	require.Nil(t, b.ProbeDeliveryID)

	// Open: held until next_probe_at; a late outcome of a POST that began
	// before it opened changes nothing.
	require.Equal(t, breaker.Admission{Hold: 3 * time.Second}, c.Admit(b, d1, now))
	require.Equal(t, breaker.Admission{Hold: time.Second}, c.Admit(b, d1, now.Add(2*time.Second)))
	_, write = c.Next(b, d2, breaker.OutcomeHealthy, now)
	require.False(t, write)
	require.Equal(t, breaker.Admission{Claim: true}, c.Admit(b, d1, now.Add(3*time.Second)))

	// The claim (store) made d2 the probe: others wait, d2 goes.
	probeAt := now.Add(3 * time.Second)
	lease := probeAt.Add(time.Minute)
	half := b
	half.State, half.ProbeDeliveryID, half.NextProbeAt = bpctype.BreakerHalfOpen, &d2, &lease
	require.Equal(t, breaker.Admission{Allow: true, Probe: true}, c.Admit(half, d2, probeAt))
	require.Equal(t, breaker.Admission{Hold: 3 * time.Second}, c.Admit(half, d1, probeAt), "a cool-down at most")
	require.Equal(t, breaker.Admission{Claim: true}, c.Admit(half, d1, lease), "a lapsed probe is taken over")
	_, write = c.Next(half, d1, breaker.OutcomeHealthy, probeAt)
	require.False(t, write, "only the probe's outcome counts while HALF_OPEN")

	// The probe cut short (shutdown) releases the claim.
	released, write := c.Next(half, d2, breaker.OutcomeNone, probeAt)
	require.True(t, write)
	require.Equal(t, probeAt, *released.NextProbeAt)
	_, write = c.Next(b, d1, breaker.OutcomeNone, probeAt)
	require.False(t, write)

	// A failing probe re-opens for another cool-down; opened_at is kept.
	reopened, _ := c.Next(half, d2, breaker.OutcomeFailure, probeAt)
	require.Equal(t, bpctype.BreakerOpen, reopened.State)
	require.Equal(t, now, *reopened.OpenedAt)
	require.Equal(t, probeAt.Add(3*time.Second), *reopened.NextProbeAt)
	require.Nil(t, reopened.ProbeDeliveryID)

	// A succeeding probe closes with a fresh window.
	closed, _ := c.Next(half, d2, breaker.OutcomeHealthy, probeAt)
	require.Equal(t, bpctype.BreakerClosed, closed.State)
	require.Nil(t, closed.OpenedAt)
	require.Nil(t, closed.NextProbeAt)
	require.Nil(t, closed.ProbeDeliveryID)
	require.Equal(t, int32(1), closed.Attempts)
	require.Zero(t, closed.Failures)
	closed, _ = c.Next(closed, d1, breaker.OutcomeFailure, probeAt)
	require.Equal(t, bpctype.BreakerClosed, closed.State, "old failures do not re-trip it")

	// A disabled breaker lets everything through.
	require.Equal(t, breaker.Admission{Allow: true}, breaker.Config{Disabled: true}.Admit(b, d1, now))
}

// The attempt an operator's retry asked for claims the probe as soon as the
// breaker is OPEN; with another probe in flight it rechecks within a second
// instead of a cool-down; otherwise it is admitted like any delivery.
func TestBreakerAdmitsAnOperatorRetryAsTheProbe(t *testing.T) {
	t.Parallel()
	c := breaker.Config{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}
	now := time.UnixMilli(1_700_000_000_000)
	d1, d2 := uuid.New(), uuid.New()
	next := now.Add(30 * time.Second)
	open := bpctype.WebhookBreaker{WebhookEndpointID: uuid.New(), State: bpctype.BreakerOpen, OpenedAt: &now, NextProbeAt: &next}

	require.Equal(t, breaker.Admission{Hold: 30 * time.Second}, c.Admit(open, d1, now), "an automatic retry waits")
	require.Equal(t, breaker.Admission{Claim: true, Early: true}, c.AdmitOperatorRetry(open, d1, now))
	require.Equal(t, breaker.Admission{Claim: true}, c.AdmitOperatorRetry(open, d1, next), "due anyway")

	lease := now.Add(time.Minute)
	half := open
	half.State, half.ProbeDeliveryID, half.NextProbeAt = bpctype.BreakerHalfOpen, &d2, &lease
	require.Equal(t, breaker.Admission{Hold: 30 * time.Second}, c.Admit(half, d1, now))
	require.Equal(t, breaker.Admission{Hold: time.Second}, c.AdmitOperatorRetry(half, d1, now), "one probe at a time")
	require.Equal(t, breaker.Admission{Hold: 500 * time.Millisecond}, c.AdmitOperatorRetry(half, d1, lease.Add(-500*time.Millisecond)))
	require.Equal(t, breaker.Admission{Claim: true}, c.AdmitOperatorRetry(half, d1, lease), "a lapsed probe is taken over")
	require.Equal(t, breaker.Admission{Allow: true, Probe: true}, c.AdmitOperatorRetry(half, d2, now))

	closed := bpctype.WebhookBreaker{State: bpctype.BreakerClosed}
	require.Equal(t, breaker.Admission{Allow: true}, c.AdmitOperatorRetry(closed, d1, now))
	require.Equal(t, breaker.Admission{Allow: true}, breaker.Config{Disabled: true}.AdmitOperatorRetry(open, d1, now))
}

func TestBreakerWindowForgetsOldFailures(t *testing.T) {
	t.Parallel()
	c := breaker.Config{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: time.Second}
	t0 := time.UnixMilli(1_700_000_000_000)
	b := bpctype.WebhookBreaker{State: bpctype.BreakerClosed}
	for range 4 {
		b, _ = c.Next(b, uuid.New(), breaker.OutcomeFailure, t0)
	}
	// Eleven seconds later the four failures have left the window.
	b, _ = c.Next(b, uuid.New(), breaker.OutcomeFailure, t0.Add(11*time.Second))
	require.Equal(t, bpctype.BreakerClosed, b.State)
	require.Equal(t, int32(1), b.Attempts)

	// A window of another shape (configuration changed) starts afresh.
	wider := c
	wider.Window = 20 * time.Second
	b, _ = wider.Next(b, uuid.New(), breaker.OutcomeFailure, t0.Add(11*time.Second))
	require.Equal(t, int32(1), b.Attempts)
	require.Equal(t, 2*time.Second, b.Window.BucketWidth)
}
