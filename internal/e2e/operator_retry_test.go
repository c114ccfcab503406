package e2e

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/webhook/breaker"
)

// breakerHourly is the service's own poll setting and a breaker cool-down of
// an hour, instead of the harness's short cool-down and fast poll: an
// operator's retry must not wait for the cool-down, and a delivery sent
// within a test's wait cannot be the cool-down's probe.
var breakerHourly = map[string]string{
	"BPC_WEBHOOK_BREAKER_COOLDOWN_MS": "3600000",
	"BPC_JOBS_POLL_INTERVAL_MS":       "1000",
}

func withEnv(base map[string]string, extra map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range base {
		out[k] = v
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

// breaker reads an endpoint's breaker through the API.
func (h *harness) breaker(endpointID uuid.UUID) breaker.View {
	h.t.Helper()
	var ep struct {
		Breaker breaker.View `json:"breaker"`
	}
	require.Equal(h.t, http.StatusOK, h.call(http.MethodGet, "/v1/webhook-endpoints/"+endpointID.String()+"?tenant_id="+devTenant, nil, &ep))
	return ep.Breaker
}

// retryJob retries a job as an operator does: from River UI (its own API,
// what the page calls) or with POST /v1/jobs/{id}/retry.
func (h *harness) retryJob(via string, job bpctype.Job) {
	h.t.Helper()
	switch via {
	case "river_ui":
		h.riverUI("retry", job.RiverJobID)
	case "api":
		var out bpctype.Job
		require.Equal(h.t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+job.JobID.String()+"/retry?tenant_id="+devTenant, nil, &out))
		require.Equal(h.t, bpctype.StatusQueued, out.Status)
	default:
		h.t.Fatalf("unknown retry path %q", via)
	}
}

// waitStatus polls the job until it has status.
func (h *harness) waitStatus(jobID uuid.UUID, status string, within time.Duration) {
	h.t.Helper()
	start := time.Now()
	deadline := start.Add(within)
	for {
		job := h.job(jobID)
		if job.Status == status {
			return
		}
		if time.Now().After(deadline) {
			h.t.Fatalf("job %s is %s (attempts %d, last_error %s) %s after the retry; want %s within %s",
				jobID, job.Status, job.Attempts, job.LastError, time.Since(start).Round(time.Millisecond), status, within)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// An endpoint's circuit breaker state is part of GET /v1/webhook-endpoints/{id}:
// CLOSED with an empty window for a new endpoint, OPEN after failures.
func TestWebhookEndpointShowsItsBreaker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_WEBHOOK_BREAKER_MIN_ATTEMPTS": "2", "BPC_WEBHOOK_BREAKER_COOLDOWN_MS": "60000"})
	recv := newReceiver(t, http.StatusInternalServerError)
	endpointID := h.subscribe(recv.URL+"/hooks", "breaker.test")
	require.Equal(t, breaker.View{State: bpctype.BreakerClosed}, h.breaker(endpointID))

	h.emit("breaker.test", map[string]any{"n": 1})
	h.eventually("the breaker opens after two 500s", func() bool { return h.breaker(endpointID).State == bpctype.BreakerOpen })
	open := h.breaker(endpointID)
	require.InDelta(t, 1.0, open.FailureRate, 0.001)
	require.GreaterOrEqual(t, open.AttemptsInWindow, 2)
}

// The daily routine with the breaker at its defaults (30 s cool-down, 1 s
// poll): a delivery dead-letters on an endpoint that answers 500, which
// opens the endpoint's breaker; the endpoint is fixed; the operator's retry
// — from River UI or the admin API — is sent as the breaker's probe and the
// job SUCCEEDED, not after the hour's cool-down. The probe's
// success closes the breaker, which releases a delivery it held meanwhile.
func TestOperatorRetryIsTheBreakersProbe(t *testing.T) {
	t.Parallel()
	for _, via := range []string{"river_ui", "api"} {
		t.Run(via, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, service.RoleAll, breakerHourly)
			recv := newReceiver(t, http.StatusInternalServerError)
			endpointID := h.subscribe(recv.URL, "passport.signed")

			ev := h.emit("passport.signed", map[string]any{"key_id": "dev-key-1"})
			dead := h.waitJob(ev.Deliveries[0].JobID)
			require.Equal(t, bpctype.StatusDeadLetter, dead.Status)
			require.EqualValues(t, 5, dead.Attempts)
			open := h.breaker(endpointID)
			require.Equal(t, bpctype.BreakerOpen, open.State, "five failures of five opened it")
			require.NotNil(t, open.NextProbeAt)
			require.Equal(t, open.OpenedAt.Add(time.Hour).UnixMicro(), open.NextProbeAt.UnixMicro(), "the cool-down's probe is an hour away")

			// A delivery made while the breaker is open is held.
			held := h.emit("passport.signed", map[string]any{"key_id": "dev-key-1"}).Deliveries[0]
			h.eventually("the new delivery is held", func() bool {
				var snoozes int
				_ = h.pool.QueryRow(t.Context(), `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM river_job
					WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, held.JobID).Scan(&snoozes)
				return snoozes > 0
			})
			require.Len(t, recv.received(), 5, "nothing sent while open")

			recv.set(http.StatusNoContent, nil)
			h.retryJob(via, dead)
			h.waitStatus(dead.JobID, bpctype.StatusSucceeded, testTimeout)
			require.GreaterOrEqual(t, len(recv.received()), 6)

			done := h.job(dead.JobID)
			require.EqualValues(t, 6, done.Attempts, "one attempt: the probe")
			require.Equal(t, bpctype.DeliveryDelivered, h.delivery(ev.Deliveries[0].WebhookDeliveryID).Status)
			require.Equal(t, bpctype.BreakerClosed, h.breaker(endpointID).State, "the probe's success closed it")

			// The held delivery flows as soon as the breaker closes.
			h.waitStatus(held.JobID, bpctype.StatusSucceeded, testTimeout)
			require.Len(t, recv.received(), 7)
			h.requireConsistent()

			var marked bool
			require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT metadata ? $2 FROM river_job WHERE id = $1`,
				dead.RiverJobID, bpctype.OperatorRetryKey).Scan(&marked))
			require.True(t, marked, "the retry is marked on the River job")
		})
	}
}

// Automatic retries still wait out the cool-down: a delivery whose attempts
// are not spent when the breaker opens is held, not sent. An operator's
// retry against an endpoint still down is one probe, sent at once (the
// cool-down's is an hour away); it fails
// and re-opens the breaker, and the next attempt — River's, not the
// operator's — is held again. The next operator retry, once the endpoint is
// fixed, succeeds at once.
func TestAutomaticRetryWaitsForTheOpenBreaker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, withEnv(breakerHourly, map[string]string{"BPC_JOBS_MAX_ATTEMPTS_DEFAULT": "10"}))
	recv := newReceiver(t, http.StatusInternalServerError)
	endpointID := h.subscribe(recv.URL, "passport.signed")
	ev := h.emit("passport.signed", map[string]any{"key_id": "dev-key-1"})
	jobID := ev.Deliveries[0].JobID

	h.eventually("five failures open the breaker", func() bool { return h.breaker(endpointID).State == bpctype.BreakerOpen })
	firstOpen := h.breaker(endpointID)
	snoozes := func() int {
		var n int
		require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT coalesce((metadata->>'snoozes')::int, 0) FROM river_job
			WHERE id = (SELECT river_job_id FROM jobs WHERE job_id = $1)`, jobID).Scan(&n))
		return n
	}
	h.eventually("its sixth attempt is held", func() bool { return snoozes() > 0 })
	time.Sleep(2 * time.Second)
	held := h.job(jobID)
	require.Equal(t, bpctype.StatusQueued, held.Status)
	require.EqualValues(t, 5, held.Attempts, "a held attempt is not spent")
	require.Len(t, recv.received(), 5, "automatic retries wait while the breaker is open")

	// The operator retries; the endpoint is still down.
	h.retryJob("api", held)
	h.eventually("the probe is sent", func() bool { return len(recv.received()) == 6 })
	h.eventually("the failed probe re-opens the breaker", func() bool {
		b := h.breaker(endpointID)
		return b.State == bpctype.BreakerOpen && b.NextProbeAt != nil && b.NextProbeAt.After(*firstOpen.NextProbeAt)
	})
	h.eventually("attempt 6 recorded", func() bool { return h.job(jobID).Attempts == 6 })
	before := snoozes()
	h.eventually("its next, automatic, attempt is held", func() bool { return snoozes() > before })
	time.Sleep(2 * time.Second)
	require.Len(t, recv.received(), 6, "the attempt after the operator's is River's: it waits")
	require.Equal(t, bpctype.StatusQueued, h.job(jobID).Status)

	recv.set(http.StatusOK, nil)
	h.retryJob("river_ui", h.job(jobID))
	h.waitStatus(jobID, bpctype.StatusSucceeded, testTimeout)
	done := h.job(jobID)
	require.EqualValues(t, 7, done.Attempts)
	require.Len(t, recv.received(), 7)
	require.Equal(t, bpctype.BreakerClosed, h.breaker(endpointID).State)
	h.requireConsistent()
}
