package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/service"
	"github.com/bpc-platform/bpc/store"
)

// A delivery that failed on a 404 is redelivered by enqueueing DELIVER_WEBHOOK
// over HTTP: the SSOT row goes QUEUED → RUNNING (lease held by this worker)
// → SUCCEEDED, and the receiver can verify what it got.
func TestEnqueueOverHTTPRunsToSucceeded(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	recv := newReceiver(t, http.StatusNotFound)
	endpointID := h.subscribe(recv.URL+"/hooks/bpc", "passport.activated")

	// 404: FAILED after exactly one attempt, no retry.
	ev := h.emit("passport.activated", map[string]any{"passport_version_id": uuid.NewString(), "mass_g": 1234})
	require.Len(t, ev.Deliveries, 1)
	failed := h.waitJob(ev.Deliveries[0].JobID)
	require.Equal(t, store.StatusFailed, failed.Status)
	require.EqualValues(t, 1, failed.Attempts)
	var lastErr struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Attempt int    `json:"attempt"`
		At      string `json:"at"`
	}
	require.NoError(t, json.Unmarshal(failed.LastError, &lastErr))
	require.Equal(t, "WEBHOOK_4XX", lastErr.Code)
	require.Equal(t, 1, lastErr.Attempt)
	require.Contains(t, lastErr.Message, "404")
	require.NotEmpty(t, lastErr.At)
	require.Len(t, recv.received(), 1)
	d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, store.DeliveryFailed, d.Status)
	require.EqualValues(t, http.StatusNotFound, *d.HTTPStatus)

	// The endpoint is fixed but slow: hold its answer to watch RUNNING.
	release := make(chan struct{})
	recv.set(http.StatusOK, release)
	var job store.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type":      jobargs.KindDeliverWebhook,
		"tenant_id": devTenant,
		"payload":   map[string]any{"webhook_delivery_id": ev.Deliveries[0].WebhookDeliveryID},
	}, &job))
	require.Equal(t, store.StatusQueued, job.Status)
	require.EqualValues(t, 0, job.Attempts)
	require.EqualValues(t, jobargs.PriorityLow, job.Priority)
	require.EqualValues(t, 5, job.MaxAttempts)
	require.Nil(t, job.StartedAt)
	require.NotZero(t, job.RiverJobID)

	h.eventually("job RUNNING", func() bool { return h.job(job.JobID).Status == store.StatusRunning })
	running := h.job(job.JobID)
	require.NotNil(t, running.LeaseOwner)
	require.Equal(t, h.app.Config().WorkerID, *running.LeaseOwner)
	require.NotNil(t, running.LeaseExpiresAt)
	require.NotNil(t, running.StartedAt)
	require.WithinDuration(t, running.StartedAt.Add(60*time.Second), *running.LeaseExpiresAt, time.Second)
	require.EqualValues(t, 1, running.Attempts)
	h.requireConsistent()

	close(release)
	done := h.waitJob(job.JobID)
	require.Equal(t, store.StatusSucceeded, done.Status)
	require.EqualValues(t, 1, done.Attempts)
	require.Nil(t, done.LeaseOwner)
	require.Nil(t, done.LeaseExpiresAt)
	require.NotNil(t, done.FinishedAt)
	require.Equal(t, *running.StartedAt, *done.StartedAt)
	require.False(t, done.FinishedAt.Before(*done.StartedAt))
	require.False(t, done.StartedAt.Before(done.CreatedAt))
	require.JSONEq(t, "null", string(done.LastError))
	h.requireConsistent()
	require.Equal(t, []string{"QUEUED@api", "RUNNING", "SUCCEEDED"}, h.transitions(job.JobID))

	d = h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, store.DeliveryDelivered, d.Status)
	require.EqualValues(t, 2, d.Attempts)
	require.NotNil(t, d.DeliveredAt)

	// What the receiver got: BPC-WH-1 body and headers, verifiable signature.
	reqs := recv.received()
	require.Len(t, reqs, 2)
	last := reqs[1]
	require.True(t, verifySignature(testSecret, last.body, last.header.Get("X-BPC-Signature")),
		"signature %q does not verify", last.header.Get("X-BPC-Signature"))
	require.False(t, verifySignature("wrong-secret-0123456789", last.body, last.header.Get("X-BPC-Signature")))
	require.Equal(t, "application/json", last.header.Get("Content-Type"))
	require.Equal(t, "passport.activated", last.header.Get("X-BPC-Event-Type"))
	require.Equal(t, ev.Deliveries[0].WebhookDeliveryID.String(), last.header.Get("X-BPC-Delivery-Id"))
	require.Equal(t, reqs[0].body, last.body, "every attempt sends the same bytes")
	var body map[string]any
	require.NoError(t, json.Unmarshal(last.body, &body))
	require.Equal(t, ev.EventID.String(), body["event_id"])
	require.Equal(t, "passport.activated", body["event_type"])
	require.Equal(t, "Passport", body["aggregate_type"])
	require.Equal(t, devTenant, body["tenant_id"])
	require.NotEmpty(t, body["aggregate_id"])
	_, err := time.Parse(time.RFC3339, body["occurred_at"].(string))
	require.NoError(t, err)
	require.Equal(t, float64(1234), body["payload"].(map[string]any)["mass_g"])
	require.Len(t, body, 7)
	_ = endpointID
}

// An endpoint that always answers 500: retries after 2, 4, 8, 16 backoff
// units, DEAD_LETTER after exactly 5 attempts; then the endpoint is fixed and
// the job is retried through River UI's own API.
func TestDeadLetterThenRetryFromRiverUI(t *testing.T) {
	t.Parallel()
	const unit = 40 * time.Millisecond
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_JOBS_BACKOFF_UNIT_MS": "40"})
	recv := newReceiver(t, http.StatusInternalServerError)
	h.subscribe(recv.URL, "passport.signed")

	ev := h.emit("passport.signed", map[string]any{"key_id": "dev-key-1"})
	jobID := ev.Deliveries[0].JobID
	dead := h.waitJob(jobID)
	require.Equal(t, store.StatusDeadLetter, dead.Status)
	require.EqualValues(t, 5, dead.Attempts)
	require.EqualValues(t, 5, dead.MaxAttempts)
	var lastErr struct {
		Code    string `json:"code"`
		Attempt int    `json:"attempt"`
	}
	require.NoError(t, json.Unmarshal(dead.LastError, &lastErr))
	require.Equal(t, "WEBHOOK_5XX", lastErr.Code)
	require.Equal(t, 5, lastErr.Attempt)
	require.Equal(t, float64(1), h.deadLetters(jobargs.KindDeliverWebhook))
	status, metrics := h.raw(http.MethodGet, "/v1/metrics", nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(metrics), `bpc_jobs_dead_letter_total{type="DELIVER_WEBHOOK"} 1`)
	require.Contains(t, string(metrics), `bpc_webhook_deliveries_total{status="FAILED"} 1`)
	h.requireConsistent()

	reqs := recv.received()
	require.Len(t, reqs, 5, "exactly 5 attempts")
	for i, want := range []time.Duration{2 * unit, 4 * unit, 8 * unit, 16 * unit} {
		gap := reqs[i+1].at.Sub(reqs[i].at)
		require.GreaterOrEqual(t, gap, want, "delay before attempt %d", i+2)
		require.Less(t, gap, want+time.Second, "delay before attempt %d", i+2)
	}
	require.Equal(t, store.DeliveryFailed, h.delivery(ev.Deliveries[0].WebhookDeliveryID).Status)

	// Fixed. Pause the queue so the QUEUED state can be observed, retry from
	// River UI, check the mirror, resume.
	recv.set(http.StatusNoContent, nil)
	ctx := t.Context()
	require.NoError(t, h.app.River().QueuePause(ctx, jobargs.QueueWebhooks, nil))
	h.riverUI("retry", dead.RiverJobID)
	queued := h.job(jobID)
	require.Equal(t, store.StatusQueued, queued.Status)
	require.Nil(t, queued.FinishedAt)
	h.requireConsistent()
	require.NoError(t, h.app.River().QueueResume(ctx, jobargs.QueueWebhooks, nil))

	done := h.waitJob(jobID)
	require.Equal(t, store.StatusSucceeded, done.Status)
	require.EqualValues(t, 6, done.Attempts, "River counts on from the dead-lettered attempts")
	d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, store.DeliveryDelivered, d.Status)
	require.EqualValues(t, http.StatusNoContent, *d.HTTPStatus)
	require.Equal(t, float64(1), h.deadLetters(jobargs.KindDeliverWebhook))
	h.requireConsistent()

	// One log line per transition, the River UI retry included.
	require.Equal(t, []string{
		"RUNNING", "QUEUED", "RUNNING", "QUEUED", "RUNNING", "QUEUED", "RUNNING", "QUEUED", "RUNNING", "DEAD_LETTER",
		"QUEUED@river_ui_retry", "RUNNING", "SUCCEEDED",
	}, h.transitions(jobID))
}

// Cancel and delete from River UI's API show up in the SSOT table; a deleted
// River job keeps its SSOT row.
func TestRiverUICancelAndDeleteAreMirrored(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	recv := newReceiver(t, http.StatusOK)
	h.subscribe(recv.URL, "x.test")
	ev := h.emit("x.test", map[string]any{})
	delivered := h.waitJob(ev.Deliveries[0].JobID)
	require.Equal(t, store.StatusSucceeded, delivered.Status)

	later := time.Now().Add(time.Hour).UTC()
	enqueueLater := func() store.Job {
		var job store.Job
		require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
			"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "scheduled_at": later,
			"payload": map[string]any{"webhook_delivery_id": ev.Deliveries[0].WebhookDeliveryID},
		}, &job))
		require.Equal(t, store.StatusQueued, job.Status)
		require.WithinDuration(t, later, job.ScheduledAt, time.Millisecond)
		return job
	}

	toCancel := enqueueLater()
	h.riverUI("cancel", toCancel.RiverJobID)
	cancelled := h.job(toCancel.JobID)
	require.Equal(t, store.StatusCancelled, cancelled.Status)
	require.NotNil(t, cancelled.FinishedAt)
	h.requireConsistent()

	toDelete := enqueueLater()
	h.riverUI("delete", toDelete.RiverJobID)
	deleted := h.job(toDelete.JobID)
	require.Equal(t, store.StatusCancelled, deleted.Status, "a job deleted before it ran can never run")
	require.NotNil(t, deleted.RiverDeletedAt)
	h.requireConsistent()

	// Deleting a finished job keeps its outcome.
	h.riverUI("delete", delivered.RiverJobID)
	kept := h.job(delivered.JobID)
	require.Equal(t, store.StatusSucceeded, kept.Status)
	require.NotNil(t, kept.RiverDeletedAt)
	h.requireConsistent()

	// The admin API refuses to act on a job whose River row is gone.
	var envelope errorEnvelope
	require.Equal(t, http.StatusConflict, h.call(http.MethodPost,
		"/v1/jobs/"+deleted.JobID.String()+"/retry?tenant_id="+devTenant, nil, &envelope))
	require.Equal(t, "INVALID_STATE", envelope.Error.Code)
}

type errorEnvelope struct {
	Error struct {
		Code          string         `json:"code"`
		Message       string         `json:"message"`
		CorrelationID string         `json:"correlation_id"`
		Details       map[string]any `json:"details"`
	} `json:"error"`
}
