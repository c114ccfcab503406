package workers_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// --- pure logic ---

func TestBreakerConfigDefaultsAndValidation(t *testing.T) {
	t.Parallel()
	d := workers.DefaultBreakerConfig()
	require.Equal(t, workers.BreakerConfig{Window: time.Minute, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}, d)
	require.Equal(t, d, workers.BreakerConfig{}.WithDefaults())
	require.NoError(t, d.Validate())
	got := workers.BreakerConfig{Cooldown: time.Second}.WithDefaults()
	require.Equal(t, time.Second, got.Cooldown)
	require.Equal(t, 5, got.MinAttempts)

	for name, c := range map[string]workers.BreakerConfig{
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
	c := workers.DefaultBreakerConfig()
	for _, tc := range []struct {
		attempts, failures int
		trips              bool
	}{
		{0, 0, false}, {4, 4, false}, {5, 2, false}, {5, 3, true}, {6, 3, true}, {20, 9, false}, {20, 10, true},
	} {
		require.Equal(t, tc.trips, c.Trips(tc.attempts, tc.failures), "%d/%d", tc.failures, tc.attempts)
	}
	all := workers.BreakerConfig{MinAttempts: 1, FailureThreshold: 1}.WithDefaults()
	require.False(t, all.Trips(5, 4))
	require.True(t, all.Trips(1, 1))
}

func TestClassifyOutcomeCountsOnlyEndpointHealth(t *testing.T) {
	t.Parallel()
	require.Equal(t, workers.OutcomeNone, workers.ClassifyOutcome(false, nil))
	require.Equal(t, workers.OutcomeHealthy, workers.ClassifyOutcome(true, nil))
	for _, code := range []errcode.Code{errcode.Webhook5xx, errcode.WebhookTimeout, errcode.WebhookNetwork} {
		require.Equal(t, workers.OutcomeFailure, workers.ClassifyOutcome(true, errcode.New(code, "x")), code)
	}
	require.Equal(t, workers.OutcomeHealthy, workers.ClassifyOutcome(true, errcode.New(errcode.Webhook4xx, "HTTP 400")),
		"a 4xx other than 408/429 is the delivery's fault, not the endpoint's health")
	require.Equal(t, workers.OutcomeNone, workers.ClassifyOutcome(true, errcode.New(errcode.Validation, "bad URL")))
}

func TestBreakerStateMachine(t *testing.T) {
	t.Parallel()
	c := workers.BreakerConfig{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 3 * time.Second}
	t0 := time.UnixMilli(1_700_000_000_000)
	d1, d2 := uuid.New(), uuid.New()
	b := store.WebhookBreaker{WebhookEndpointID: uuid.New(), State: store.BreakerClosed}

	require.Equal(t, workers.BreakerAdmission{Allow: true}, c.Admit(b, d1, t0))

	// Successes dilute failures: 5 successes + 4 failures is 44 %.
	var write bool
	for i := range 5 {
		b, write = c.Next(b, d1, workers.OutcomeHealthy, t0.Add(time.Duration(i)*time.Millisecond))
		require.True(t, write)
	}
	for range 4 {
		b, _ = c.Next(b, d1, workers.OutcomeFailure, t0.Add(time.Second))
	}
	require.Equal(t, store.BreakerClosed, b.State)
	require.Equal(t, int32(9), b.Attempts)
	require.Equal(t, int32(4), b.Failures)
	// The fifth failure makes 5/10: open.
	now := t0.Add(2 * time.Second)
	b, _ = c.Next(b, d1, workers.OutcomeFailure, now)
	require.Equal(t, store.BreakerOpen, b.State)
	require.Equal(t, now, *b.OpenedAt)
	require.Equal(t, now.Add(3*time.Second), *b.NextProbeAt)
	require.Nil(t, b.ProbeDeliveryID)

	// Open: held until next_probe_at; a late outcome of a POST that began
	// before it opened changes nothing.
	require.Equal(t, workers.BreakerAdmission{Hold: 3 * time.Second}, c.Admit(b, d1, now))
	require.Equal(t, workers.BreakerAdmission{Hold: time.Second}, c.Admit(b, d1, now.Add(2*time.Second)))
	_, write = c.Next(b, d2, workers.OutcomeHealthy, now)
	require.False(t, write)
	require.Equal(t, workers.BreakerAdmission{Claim: true}, c.Admit(b, d1, now.Add(3*time.Second)))

	// The claim (store) made d2 the probe: others wait, d2 goes.
	probeAt := now.Add(3 * time.Second)
	lease := probeAt.Add(time.Minute)
	half := b
	half.State, half.ProbeDeliveryID, half.NextProbeAt = store.BreakerHalfOpen, &d2, &lease
	require.Equal(t, workers.BreakerAdmission{Allow: true, Probe: true}, c.Admit(half, d2, probeAt))
	require.Equal(t, workers.BreakerAdmission{Hold: 3 * time.Second}, c.Admit(half, d1, probeAt), "a cool-down at most")
	require.Equal(t, workers.BreakerAdmission{Claim: true}, c.Admit(half, d1, lease), "a lapsed probe is taken over")
	_, write = c.Next(half, d1, workers.OutcomeHealthy, probeAt)
	require.False(t, write, "only the probe's outcome counts while HALF_OPEN")

	// The probe cut short (shutdown) releases the claim.
	released, write := c.Next(half, d2, workers.OutcomeNone, probeAt)
	require.True(t, write)
	require.Equal(t, probeAt, *released.NextProbeAt)
	_, write = c.Next(b, d1, workers.OutcomeNone, probeAt)
	require.False(t, write)

	// A failing probe re-opens for another cool-down; opened_at is kept.
	reopened, _ := c.Next(half, d2, workers.OutcomeFailure, probeAt)
	require.Equal(t, store.BreakerOpen, reopened.State)
	require.Equal(t, now, *reopened.OpenedAt)
	require.Equal(t, probeAt.Add(3*time.Second), *reopened.NextProbeAt)
	require.Nil(t, reopened.ProbeDeliveryID)

	// A succeeding probe closes with a fresh window.
	closed, _ := c.Next(half, d2, workers.OutcomeHealthy, probeAt)
	require.Equal(t, store.BreakerClosed, closed.State)
	require.Nil(t, closed.OpenedAt)
	require.Nil(t, closed.NextProbeAt)
	require.Nil(t, closed.ProbeDeliveryID)
	require.Equal(t, int32(1), closed.Attempts)
	require.Zero(t, closed.Failures)
	closed, _ = c.Next(closed, d1, workers.OutcomeFailure, probeAt)
	require.Equal(t, store.BreakerClosed, closed.State, "old failures do not re-trip it")

	// A disabled breaker lets everything through.
	require.Equal(t, workers.BreakerAdmission{Allow: true}, workers.BreakerConfig{Disabled: true}.Admit(b, d1, now))
}

// The attempt an operator's retry asked for claims the probe as soon as the
// breaker is OPEN; with another probe in flight it rechecks within a second
// instead of a cool-down; otherwise it is admitted like any delivery.
func TestBreakerAdmitsAnOperatorRetryAsTheProbe(t *testing.T) {
	t.Parallel()
	c := workers.BreakerConfig{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: 30 * time.Second}
	now := time.UnixMilli(1_700_000_000_000)
	d1, d2 := uuid.New(), uuid.New()
	next := now.Add(30 * time.Second)
	open := store.WebhookBreaker{WebhookEndpointID: uuid.New(), State: store.BreakerOpen, OpenedAt: &now, NextProbeAt: &next}

	require.Equal(t, workers.BreakerAdmission{Hold: 30 * time.Second}, c.Admit(open, d1, now), "an automatic retry waits")
	require.Equal(t, workers.BreakerAdmission{Claim: true, Early: true}, c.AdmitOperatorRetry(open, d1, now))
	require.Equal(t, workers.BreakerAdmission{Claim: true}, c.AdmitOperatorRetry(open, d1, next), "due anyway")

	lease := now.Add(time.Minute)
	half := open
	half.State, half.ProbeDeliveryID, half.NextProbeAt = store.BreakerHalfOpen, &d2, &lease
	require.Equal(t, workers.BreakerAdmission{Hold: 30 * time.Second}, c.Admit(half, d1, now))
	require.Equal(t, workers.BreakerAdmission{Hold: time.Second}, c.AdmitOperatorRetry(half, d1, now), "one probe at a time")
	require.Equal(t, workers.BreakerAdmission{Hold: 500 * time.Millisecond}, c.AdmitOperatorRetry(half, d1, lease.Add(-500*time.Millisecond)))
	require.Equal(t, workers.BreakerAdmission{Claim: true}, c.AdmitOperatorRetry(half, d1, lease), "a lapsed probe is taken over")
	require.Equal(t, workers.BreakerAdmission{Allow: true, Probe: true}, c.AdmitOperatorRetry(half, d2, now))

	closed := store.WebhookBreaker{State: store.BreakerClosed}
	require.Equal(t, workers.BreakerAdmission{Allow: true}, c.AdmitOperatorRetry(closed, d1, now))
	require.Equal(t, workers.BreakerAdmission{Allow: true}, workers.BreakerConfig{Disabled: true}.AdmitOperatorRetry(open, d1, now))
}

func TestBreakerWindowForgetsOldFailures(t *testing.T) {
	t.Parallel()
	c := workers.BreakerConfig{Window: 10 * time.Second, MinAttempts: 5, FailureThreshold: 0.5, Cooldown: time.Second}
	t0 := time.UnixMilli(1_700_000_000_000)
	b := store.WebhookBreaker{State: store.BreakerClosed}
	for range 4 {
		b, _ = c.Next(b, uuid.New(), workers.OutcomeFailure, t0)
	}
	// Eleven seconds later the four failures have left the window.
	b, _ = c.Next(b, uuid.New(), workers.OutcomeFailure, t0.Add(11*time.Second))
	require.Equal(t, store.BreakerClosed, b.State)
	require.Equal(t, int32(1), b.Attempts)

	// A window of another shape (configuration changed) starts afresh.
	wider := c
	wider.Window = 20 * time.Second
	b, _ = wider.Next(b, uuid.New(), workers.OutcomeFailure, t0.Add(11*time.Second))
	require.Equal(t, int32(1), b.Attempts)
	require.Equal(t, 2*time.Second, b.Window.BucketWidth)
}

// --- with River and Postgres ---

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// transitions returns the breaker transition log lines.
func (b *syncBuffer) transitions(t *testing.T) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(b.String(), "\n") {
		if !strings.Contains(line, "webhook breaker transition") {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m))
		out = append(out, m)
	}
	return out
}

// switchServer answers /flaky with a status that can be changed and /ok with
// 200, and /bad-request with 400, recording what each path received.
type switchServer struct {
	*httptest.Server
	flaky    atomic.Int32
	mu       sync.Mutex
	requests map[string][]string // path → X-BPC-Delivery-Id of each request
}

func newSwitchServer(t *testing.T) *switchServer {
	s := &switchServer{requests: map[string][]string{}}
	s.flaky.Store(http.StatusInternalServerError)
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.requests[r.URL.Path] = append(s.requests[r.URL.Path], r.Header.Get(workers.HeaderDeliveryID))
		s.mu.Unlock()
		switch r.URL.Path {
		case "/flaky":
			w.WriteHeader(int(s.flaky.Load()))
		case "/bad-request":
			w.WriteHeader(http.StatusBadRequest)
		default:
			w.WriteHeader(http.StatusOK)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// delivery returns the X-BPC-Delivery-Id of the i-th request to path.
func (s *switchServer) delivery(path string, i int) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[path][i]
}

func (s *switchServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.requests[path])
}

type breakerEnv struct {
	workerEnv
	logs *syncBuffer
}

func newBreakerEnv(t *testing.T, cfg workers.BreakerConfig, maxAttempts int) breakerEnv {
	t.Helper()
	pool := testdb.New(t)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	st := store.New(pool)
	w := river.NewWorkers()
	workers.Register(w, workers.Deps{Store: st, Logger: logger, Metrics: metrics,
		HTTPClient: workers.NewHTTPClient(), WebhookTimeout: 5 * time.Second, WebhookBreaker: cfg})
	client, err := workers.NewClient(pool, workers.ClientOptions{
		ID: "breaker-test", Logger: logger, Work: true, Concurrency: 4,
		PollInterval: 20 * time.Millisecond, BackoffUnit: time.Millisecond, MaxAttempts: maxAttempts,
		Workers: w, Observer: &workers.Observer{Logger: logger, Metrics: metrics},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, client.Start(ctx))
	t.Cleanup(func() {
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	})
	return breakerEnv{workerEnv: workerEnv{ctx: ctx, store: st, river: client, metrics: metrics}, logs: logs}
}

func (e breakerEnv) endpoint(t *testing.T, url string) uuid.UUID {
	t.Helper()
	ep, err := e.store.CreateWebhookEndpoint(e.ctx, store.DevTenantID, url, secret)
	require.NoError(t, err)
	return ep.WebhookEndpointID
}

// deliver appends an event delivered to the endpoint.
func (e breakerEnv) deliver(t *testing.T, endpointID uuid.UUID) store.DeliveryRef {
	t.Helper()
	var res store.AppendResult
	require.NoError(t, e.store.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		res, err = e.store.WithTx(tx).AppendEvent(e.ctx, e.river, store.EventInput{
			TenantID: store.DevTenantID, AggregateType: "passport", AggregateID: uuid.New(),
			EventType: "passport.activated", Payload: json.RawMessage(`{"n":1}`), DeliverTo: &endpointID,
		})
		return err
	}))
	require.Len(t, res.Deliveries, 1)
	return res.Deliveries[0]
}

func (e breakerEnv) breaker(t *testing.T, endpointID uuid.UUID) store.WebhookBreaker {
	t.Helper()
	b, err := e.store.GetWebhookBreaker(e.ctx, store.DevTenantID, endpointID)
	require.NoError(t, err)
	return b
}

func (e breakerEnv) waitState(t *testing.T, endpointID uuid.UUID, state string, cond func(store.WebhookBreaker) bool) store.WebhookBreaker {
	t.Helper()
	var b store.WebhookBreaker
	require.Eventually(t, func() bool {
		b = e.breaker(t, endpointID)
		return b.State == state && (cond == nil || cond(b))
	}, 15*time.Second, 5*time.Millisecond, "breaker never reached %s", state)
	return b
}

func (e breakerEnv) job(t *testing.T, jobID uuid.UUID) store.Job {
	t.Helper()
	j, err := e.store.GetJob(e.ctx, store.DevTenantID, jobID)
	require.NoError(t, err)
	return j
}

// settledAttempts waits until none of the jobs runs and returns their SSOT attempts.
func (e breakerEnv) settledAttempts(t *testing.T, refs []store.DeliveryRef) map[uuid.UUID]int32 {
	t.Helper()
	out := map[uuid.UUID]int32{}
	require.Eventually(t, func() bool {
		for _, ref := range refs {
			j := e.job(t, ref.JobID)
			if j.Status != store.StatusQueued {
				return false
			}
			out[ref.JobID] = j.Attempts
		}
		return true
	}, 10*time.Second, 5*time.Millisecond)
	return out
}

func (e breakerEnv) snoozes(t *testing.T, jobID uuid.UUID) int {
	t.Helper()
	var n int
	require.NoError(t, e.store.DB().QueryRow(e.ctx, `SELECT COALESCE((metadata->>'snoozes')::int, 0) FROM river_job
		WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, jobID).Scan(&n))
	return n
}

func TestWebhookBreakerHoldsProbesAndRecovers(t *testing.T) {
	t.Parallel()
	const cooldown = 1500 * time.Millisecond
	srv := newSwitchServer(t)
	e := newBreakerEnv(t, workers.BreakerConfig{Window: 30 * time.Second, MinAttempts: 5, FailureThreshold: 0.5,
		Cooldown: cooldown}, 25)
	flaky, healthy := e.endpoint(t, srv.URL+"/flaky"), e.endpoint(t, srv.URL+"/ok")
	// Transitions are counted just after their transaction commits.
	requireTransitions := func(open, halfOpen, closed float64) {
		t.Helper()
		count := func(to string) float64 { return testutil.ToFloat64(e.metrics.BreakerTransitions.WithLabelValues(to)) }
		require.Eventually(t, func() bool {
			return count(store.BreakerOpen) == open && count(store.BreakerHalfOpen) == halfOpen && count(store.BreakerClosed) == closed
		}, 5*time.Second, 5*time.Millisecond, "transitions: open %v, half-open %v, closed %v", count(store.BreakerOpen),
			count(store.BreakerHalfOpen), count(store.BreakerClosed))
	}

	// 1. Five deliveries to an endpoint answering 500 trip the breaker.
	var first []store.DeliveryRef
	for range 5 {
		first = append(first, e.deliver(t, flaky))
	}
	opened := e.waitState(t, flaky, store.BreakerOpen, nil)
	require.GreaterOrEqual(t, srv.count("/flaky"), 5)
	require.GreaterOrEqual(t, int(opened.Attempts), 5)
	require.GreaterOrEqual(t, float64(opened.Failures)/float64(opened.Attempts), 0.5)
	require.NotNil(t, opened.OpenedAt)
	firstProbeAt := *opened.NextProbeAt
	require.Equal(t, opened.OpenedAt.Add(cooldown).UnixMicro(), firstProbeAt.UnixMicro())
	requireTransitions(1, 0, 0)

	// POSTs in flight when it opened finish; then the endpoint hears nothing.
	spent := e.settledAttempts(t, first)
	sentBeforeOpen := srv.count("/flaky")

	// 2. During the cool-down: new deliveries to it are held (snoozed, no
	// attempt spent, PENDING) while a healthy endpoint on the same queue is
	// served at once.
	var held []store.DeliveryRef
	for range 3 {
		held = append(held, e.deliver(t, flaky))
	}
	for range 3 {
		ref := e.deliver(t, healthy)
		start := time.Now()
		job := e.waitTerminal(t, ref.JobID)
		require.Equal(t, store.StatusSucceeded, job.Status)
		require.Less(t, time.Since(start), time.Second, "a healthy endpoint is not held")
	}
	require.Eventually(t, func() bool {
		for _, ref := range held {
			if e.snoozes(t, ref.JobID) == 0 {
				return false
			}
		}
		return true
	}, 5*time.Second, 5*time.Millisecond, "held deliveries were worked and snoozed")
	heldAttempts := e.settledAttempts(t, held)
	for _, ref := range held {
		require.Zero(t, heldAttempts[ref.JobID], "River's snooze gives the attempt back: attempts stays 0")
		d := e.delivery(t, ref.WebhookDeliveryID)
		require.Equal(t, store.DeliveryPending, d.Status)
		require.Zero(t, d.Attempts)
	}
	require.Positive(t, testutil.ToFloat64(e.metrics.WebhookDeliveriesHeld))
	// Until the probe is due, the endpoint receives nothing and no job's
	// attempts grow.
	time.Sleep(time.Until(firstProbeAt.Add(-250 * time.Millisecond)))
	require.Equal(t, sentBeforeOpen, srv.count("/flaky"), "nothing is sent during the cool-down")
	for id, attempts := range e.settledAttempts(t, first) {
		require.Equal(t, spent[id], attempts, "held retries spend no attempt")
	}
	v := e.breaker(t, flaky).View(time.Now())
	require.Equal(t, store.BreakerOpen, v.State)
	require.GreaterOrEqual(t, v.FailureRate, 0.5)

	// 3. After the cool-down exactly one probe goes; it fails and re-opens
	// the breaker for another cool-down.
	reopened := e.waitState(t, flaky, store.BreakerOpen, func(b store.WebhookBreaker) bool {
		return b.NextProbeAt.After(firstProbeAt)
	})
	require.Equal(t, sentBeforeOpen+1, srv.count("/flaky"), "one probe")
	require.Equal(t, opened.OpenedAt.UnixMicro(), reopened.OpenedAt.UnixMicro(), "opened_at is when it left CLOSED")
	requireTransitions(2, 1, 0)
	time.Sleep(300 * time.Millisecond)
	require.Equal(t, sentBeforeOpen+1, srv.count("/flaky"), "held again after the failed probe")

	// 4. The endpoint recovers: the next probe closes the breaker and every
	// held delivery is delivered, each sent once.
	srv.flaky.Store(http.StatusOK)
	e.waitState(t, flaky, store.BreakerClosed, nil)
	for _, ref := range append(append([]store.DeliveryRef{}, first...), held...) {
		job := e.waitTerminal(t, ref.JobID)
		require.Equal(t, store.StatusSucceeded, job.Status)
		require.Equal(t, store.DeliveryDelivered, e.delivery(t, ref.WebhookDeliveryID).Status)
	}
	// Attempts are spent by POSTs only: before opening, the failed probe,
	// and the final delivery.
	failedProbe := srv.delivery("/flaky", sentBeforeOpen)
	for _, ref := range append(append([]store.DeliveryRef{}, first...), held...) {
		want := spent[ref.JobID] + 1
		if ref.WebhookDeliveryID.String() == failedProbe {
			want++
		}
		require.Equal(t, want, e.job(t, ref.JobID).Attempts, "delivery %s", ref.WebhookDeliveryID)
	}
	require.Equal(t, sentBeforeOpen+1+len(first)+len(held), srv.count("/flaky"))
	requireTransitions(2, 2, 1)

	// One log line per transition, with the rate and never the secret.
	logs := e.logs.transitions(t)
	require.Len(t, logs, 5)
	var path []string
	for _, l := range logs {
		require.Equal(t, flaky.String(), l["webhook_endpoint_id"])
		require.Contains(t, l, "failure_rate")
		path = append(path, l["from"].(string)+">"+l["to"].(string))
	}
	require.Equal(t, []string{"CLOSED>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>OPEN", "OPEN>HALF_OPEN", "HALF_OPEN>CLOSED"}, path)
	require.GreaterOrEqual(t, logs[0]["failure_rate"].(float64), 0.5)
	require.NotContains(t, e.logs.String(), secret)

	closed := e.breaker(t, flaky).View(time.Now())
	require.Equal(t, store.BreakerClosed, closed.State)
	require.Nil(t, closed.OpenedAt)
	require.Nil(t, closed.NextProbeAt)
	require.Zero(t, closed.FailureRate)
	require.Equal(t, store.BreakerClosed, e.breaker(t, healthy).State)

	rep, err := e.store.CheckConsistency(e.ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
}

func TestWebhookBreakerIgnores4xx(t *testing.T) {
	t.Parallel()
	srv := newSwitchServer(t)
	e := newBreakerEnv(t, workers.BreakerConfig{Window: 30 * time.Second, MinAttempts: 2, Cooldown: time.Minute}, 3)
	ep := e.endpoint(t, srv.URL+"/bad-request")
	for range 4 {
		ref := e.deliver(t, ep)
		require.Equal(t, store.StatusFailed, e.waitTerminal(t, ref.JobID).Status)
	}
	v := e.breaker(t, ep).View(time.Now())
	require.Equal(t, store.BreakerView{State: store.BreakerClosed, AttemptsInWindow: 4}, v)
	require.Equal(t, 4, srv.count("/bad-request"))
	require.Zero(t, testutil.ToFloat64(e.metrics.BreakerTransitions.WithLabelValues(store.BreakerOpen)))
}

func TestWebhookBreakerDisabledNeverHolds(t *testing.T) {
	t.Parallel()
	srv := newSwitchServer(t)
	e := newBreakerEnv(t, workers.BreakerConfig{Disabled: true, MinAttempts: 1}, 3)
	ep := e.endpoint(t, srv.URL+"/flaky")
	var refs []store.DeliveryRef
	for range 3 {
		refs = append(refs, e.deliver(t, ep))
	}
	for _, ref := range refs {
		require.Equal(t, store.StatusDeadLetter, e.waitTerminal(t, ref.JobID).Status)
	}
	require.Equal(t, 9, srv.count("/flaky"), "every attempt POSTs")
	require.False(t, e.breaker(t, ep).Stored)
}
