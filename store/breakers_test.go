package store_test

import (
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func TestBreakerViewOfNoRowIsClosedWithZeros(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	b, err := e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err)
	require.False(t, b.Stored)
	require.Equal(t, bpctype.BreakerClosed, b.State)
	require.Equal(t, breaker.View{State: bpctype.BreakerClosed}, breaker.ViewOf(b, time.Now()))
	require.Equal(t, breaker.View{State: bpctype.BreakerClosed}, breaker.ViewOf(bpctype.WebhookBreaker{}, time.Now()))
}

// record applies one outcome in its own transaction, the way the worker
// does: CLOSED, counting the attempt.
func recordOutcome(t *testing.T, e env, endpointID uuid.UUID, now time.Time, failure bool) (bpctype.WebhookBreaker, bpctype.WebhookBreaker) {
	t.Helper()
	var before, after bpctype.WebhookBreaker
	require.NoError(t, e.inTx(func(q *store.Queries) (err error) {
		before, after, err = q.UpdateWebhookBreaker(e.Ctx, store.DevTenantID, endpointID,
			func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) {
				w := breaker.Window(b.Window)
				if !w.Fits(time.Minute, 10) {
					w = breaker.NewWindow(time.Minute, 10)
				}
				w = w.Record(now, failure)
				b.Window = bpctype.BreakerWindow(w)
				a, f := w.Totals(now)
				b.Attempts, b.Failures = int32(a), int32(f)
				return b, true
			})
		return err
	}))
	return before, after
}

func TestUpdateWebhookBreakerCreatesThenUpdatesOneRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	now := time.Now()

	before, after := recordOutcome(t, e, ep.WebhookEndpointID, now, true)
	require.False(t, before.Stored)
	require.True(t, after.Stored)
	require.Equal(t, store.DevTenantID, after.TenantID)
	require.Equal(t, bpctype.BreakerClosed, after.State)
	require.Equal(t, int32(1), after.Failures)

	before, after = recordOutcome(t, e, ep.WebhookEndpointID, now, false)
	require.True(t, before.Stored)
	require.Equal(t, int32(2), after.Attempts)
	require.Equal(t, int32(1), after.Failures)
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM webhook_endpoint_breakers`))

	got, err := e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err)
	v := breaker.ViewOf(got, now)
	require.Equal(t, breaker.View{State: bpctype.BreakerClosed, FailureRate: 0.5, AttemptsInWindow: 2, FailuresInWindow: 1}, v)
	require.Zero(t, breaker.ViewOf(got, now.Add(2*time.Minute)).AttemptsInWindow, "the view ages with time")

	// Another tenant sees no breaker of this endpoint.
	other, err := e.Store.GetWebhookBreaker(e.Ctx, uuid.New(), ep.WebhookEndpointID)
	require.NoError(t, err)
	require.False(t, other.Stored)

	// fn may decline to write.
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		_, after, err := q.UpdateWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
			func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) { b.Attempts = 99; return b, false })
		require.Equal(t, int32(2), after.Attempts)
		return err
	}))

	// An unknown endpoint is NOT_FOUND.
	err = e.inTx(func(q *store.Queries) error {
		_, _, err := q.UpdateWebhookBreaker(e.Ctx, store.DevTenantID, uuid.New(),
			func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) {
				b.Window = bpctype.BreakerWindow(breaker.NewWindow(time.Minute, 10))
				return b, true
			})
		return err
	})
	requireCode(t, err, errcode.NotFound)
}

func TestUpdateWebhookBreakerLosesNoConcurrentOutcome(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	now := time.Now()
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			recordOutcome(t, e, ep.WebhookEndpointID, now, i%2 == 0)
		}()
	}
	wg.Wait()
	b, err := e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err)
	require.Equal(t, int32(n), b.Attempts, "the first insert races are retried under the row lock")
	require.Equal(t, int32(n/2), b.Failures)
}

// openBreaker stores an OPEN breaker whose probe is due at nextProbe.
func openBreaker(t *testing.T, e env, endpointID uuid.UUID, opened, nextProbe time.Time) {
	t.Helper()
	require.NoError(t, e.inTx(func(q *store.Queries) error {
		_, _, err := q.UpdateWebhookBreaker(e.Ctx, store.DevTenantID, endpointID,
			func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) {
				b.Window = bpctype.BreakerWindow(breaker.NewWindow(time.Minute, 10))
				b.State, b.OpenedAt, b.NextProbeAt = bpctype.BreakerOpen, &opened, &nextProbe
				return b, true
			})
		return err
	}))
}

func TestClaimWebhookBreakerProbeHasOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	now := time.Now()

	// No row: nothing to claim.
	won, b, err := e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
		bpctype.BreakerOpen, uuid.New(), now, now.Add(time.Minute), false)
	require.NoError(t, err)
	require.False(t, won)
	require.Equal(t, bpctype.BreakerClosed, b.State)

	// Not yet due.
	openBreaker(t, e, ep.WebhookEndpointID, now, now.Add(time.Hour))
	won, b, err = e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
		bpctype.BreakerOpen, uuid.New(), now, now.Add(time.Minute), false)
	require.NoError(t, err)
	require.False(t, won)
	require.Equal(t, bpctype.BreakerOpen, b.State)

	// Due: of many concurrent claimers exactly one wins.
	openBreaker(t, e, ep.WebhookEndpointID, now, now.Add(-time.Millisecond))
	const n = 12
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []uuid.UUID
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := uuid.New()
			won, b, err := e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
				bpctype.BreakerOpen, id, now, now.Add(time.Minute), false)
			require.NoError(t, err)
			require.Equal(t, bpctype.BreakerHalfOpen, b.State)
			if won {
				mu.Lock()
				winners = append(winners, id)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	require.Len(t, winners, 1)
	b, err = e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err)
	require.Equal(t, winners[0], *b.ProbeDeliveryID)
	require.Equal(t, now.Add(time.Minute).UnixMicro(), b.NextProbeAt.UnixMicro())
	require.Equal(t, now.UnixMicro(), b.OpenedAt.UnixMicro(), "opened_at is kept")

	// A lapsed HALF_OPEN claim is taken over, only from the state read.
	later := now.Add(2 * time.Minute)
	won, _, err = e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
		bpctype.BreakerOpen, uuid.New(), later, later.Add(time.Minute), false)
	require.NoError(t, err)
	require.False(t, won, "the breaker is no longer OPEN")
	taker := uuid.New()
	won, b, err = e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
		bpctype.BreakerHalfOpen, taker, later, later.Add(time.Minute), false)
	require.NoError(t, err)
	require.True(t, won)
	require.Equal(t, taker, *b.ProbeDeliveryID)

	counts, err := e.Store.CountWebhookBreakers(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{bpctype.BreakerOpen: 0, bpctype.BreakerHalfOpen: 1}, counts)
}

// An operator's retry claims the probe early: while the breaker is OPEN,
// before its cool-down ends, one claimer only; never while another probe is
// in flight.
func TestClaimWebhookBreakerProbeEarly(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	now := time.Now()
	openBreaker(t, e, ep.WebhookEndpointID, now, now.Add(30*time.Second))

	const n = 8
	var wg sync.WaitGroup
	var mu sync.Mutex
	var winners []uuid.UUID
	for range n {
		wg.Go(func() {
			id := uuid.New()
			won, _, err := e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
				bpctype.BreakerOpen, id, now, now.Add(time.Minute), true)
			require.NoError(t, err)
			if won {
				mu.Lock()
				winners = append(winners, id)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	require.Len(t, winners, 1, "one probe, cool-down or not")
	b, err := e.Store.GetWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID)
	require.NoError(t, err)
	require.Equal(t, bpctype.BreakerHalfOpen, b.State)
	require.Equal(t, winners[0], *b.ProbeDeliveryID)

	// HALF_OPEN with a live claim: an early claim does not take it over.
	won, b, err := e.Store.ClaimWebhookBreakerProbe(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
		bpctype.BreakerHalfOpen, uuid.New(), now, now.Add(time.Minute), true)
	require.NoError(t, err)
	require.False(t, won)
	require.Equal(t, winners[0], *b.ProbeDeliveryID)
}

func TestWebhookBreakerRowRejectsInconsistentStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep := e.endpoint(t)
	err := e.inTx(func(q *store.Queries) error {
		_, _, err := q.UpdateWebhookBreaker(e.Ctx, store.DevTenantID, ep.WebhookEndpointID,
			func(b bpctype.WebhookBreaker) (bpctype.WebhookBreaker, bool) {
				b.Window = bpctype.BreakerWindow(breaker.NewWindow(time.Minute, 10))
				b.State = bpctype.BreakerOpen // without opened_at / next_probe_at
				return b, true
			})
		return err
	})
	require.ErrorContains(t, err, "webhook_endpoint_breakers_state")
}

func TestWakeHeldWebhookDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ep, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://hooks.example/a", testSecret)
	require.NoError(t, err)
	other, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://hooks.example/b", testSecret)
	require.NoError(t, err)
	deliver := func(endpointID uuid.UUID) bpctype.DeliveryRef {
		res := e.mustAppend(t, passport.EventInput{TenantID: store.DevTenantID, AggregateType: "passport",
			AggregateID: uuid.New(), EventType: "passport.activated", DeliverTo: &endpointID})
		require.Len(t, res.Deliveries, 1)
		return res.Deliveries[0]
	}
	held1, held2, delivered, otherHeld, due := deliver(ep.WebhookEndpointID), deliver(ep.WebhookEndpointID),
		deliver(ep.WebhookEndpointID), deliver(other.WebhookEndpointID), deliver(ep.WebhookEndpointID)
	hold := func(ref bpctype.DeliveryRef, state string, in time.Duration) {
		e.Exec(t, `UPDATE river_job SET state = $2::river_job_state, scheduled_at = now() + make_interval(secs => $3)
			WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, ref.JobID, state, in.Seconds())
	}
	hold(held1, "scheduled", time.Hour)
	hold(held2, "available", 3*time.Second) // a short snooze stays available
	hold(delivered, "scheduled", time.Hour)
	hold(otherHeld, "scheduled", time.Hour)
	e.Exec(t, `UPDATE webhook_deliveries SET status = 'DELIVERED' WHERE webhook_delivery_id = $1`, delivered.WebhookDeliveryID)

	now := time.Now()
	n, err := e.Store.WakeHeldWebhookDeliveries(e.Ctx, ep.WebhookEndpointID, jobargs.QueueWebhooks, jobargs.KindDeliverWebhook, now, 1000)
	require.NoError(t, err)
	require.Equal(t, int64(2), n, "the two held PENDING deliveries of the endpoint")
	for _, ref := range []bpctype.DeliveryRef{held1, held2, due} {
		j := e.job(t, store.DevTenantID, ref.JobID)
		require.Equal(t, bpctype.StatusQueued, j.Status)
		require.False(t, j.ScheduledAt.After(now), "mirrored into jobs: due now")
	}
	for _, ref := range []bpctype.DeliveryRef{delivered, otherHeld} {
		require.True(t, e.job(t, store.DevTenantID, ref.JobID).ScheduledAt.After(now.Add(time.Minute)))
	}
	var state string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT state::text FROM river_job
		WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, held1.JobID).Scan(&state))
	require.Equal(t, "available", state)

	var marked bool
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT metadata ? $2 FROM river_job
		WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, held1.JobID, bpctype.OperatorRetryKey).Scan(&marked))
	require.False(t, marked, "the breaker's wake is not an operator's retry")

	// The limit bounds one wake.
	hold(held1, "scheduled", time.Hour)
	hold(held2, "scheduled", time.Hour)
	n, err = e.Store.WakeHeldWebhookDeliveries(e.Ctx, ep.WebhookEndpointID, jobargs.QueueWebhooks, jobargs.KindDeliverWebhook, time.Now(), 1)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	e.requireConsistent(t)
}
