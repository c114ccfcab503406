package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
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
	require.Equal(t, bpctype.StatusFailed, failed.Status)
	require.EqualValues(t, 1, failed.Attempts)
	lastErr := lastError(t, failed)
	require.Equal(t, "WEBHOOK_4XX", lastErr.Code)
	require.Equal(t, 1, lastErr.Attempt)
	require.Contains(t, lastErr.Message, "404")
	require.NotEmpty(t, lastErr.At)
	require.Len(t, recv.received(), 1)
	d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryFailed, d.Status)
	require.EqualValues(t, http.StatusNotFound, *d.HTTPStatus)

	// The endpoint is fixed but slow: hold its answer to watch RUNNING.
	release := make(chan struct{})
	recv.set(http.StatusOK, release)
	var job bpctype.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type":      jobargs.KindDeliverWebhook,
		"tenant_id": devTenant,
		"payload":   map[string]any{"webhook_delivery_id": ev.Deliveries[0].WebhookDeliveryID},
	}, &job))
	require.Equal(t, bpctype.StatusQueued, job.Status)
	require.EqualValues(t, 0, job.Attempts)
	require.EqualValues(t, jobargs.PriorityLow, job.Priority)
	require.EqualValues(t, 5, job.MaxAttempts)
	require.Nil(t, job.StartedAt)
	require.NotZero(t, job.RiverJobID)

	h.eventually("job RUNNING", func() bool { return h.job(job.JobID).Status == bpctype.StatusRunning })
	running := h.job(job.JobID)
	require.NotNil(t, running.LeaseOwner)
	require.Equal(t, h.app.Config().WorkerID, *running.LeaseOwner)
	require.NotNil(t, running.LeaseExpiresAt)
	require.NotNil(t, running.StartedAt)
	// The lease runs 60 s from the attempt's start; renewals only extend it.
	require.False(t, running.LeaseExpiresAt.Before(running.StartedAt.Add(60*time.Second)),
		"lease_expires_at %s, started_at %s", running.LeaseExpiresAt, running.StartedAt)
	require.EqualValues(t, 1, running.Attempts)
	h.requireConsistent()

	close(release)
	done := h.waitJob(job.JobID)
	require.Equal(t, bpctype.StatusSucceeded, done.Status)
	require.EqualValues(t, 1, done.Attempts)
	require.Nil(t, done.LeaseOwner)
	require.Nil(t, done.LeaseExpiresAt)
	require.NotNil(t, done.FinishedAt)
	require.Equal(t, *running.StartedAt, *done.StartedAt)
	require.False(t, done.FinishedAt.Before(*done.StartedAt))
	require.False(t, done.StartedAt.Before(done.CreatedAt))
	require.JSONEq(t, "null", string(done.LastError))
	h.requireConsistent()
	// The API logs QUEUED after its commit, on the request's goroutine; the
	// worker may log RUNNING before that. Only the worker's own lines have
	// an order.
	transitions := h.transitions(job.JobID)
	require.ElementsMatch(t, []string{"QUEUED@api", "RUNNING", "SUCCEEDED"}, transitions)
	require.Equal(t, []string{"RUNNING", "SUCCEEDED"}, slices.DeleteFunc(transitions, func(s string) bool { return s == "QUEUED@api" }))

	d = h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryDelivered, d.Status)
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
	require.Equal(t, bpctype.StatusDeadLetter, dead.Status)
	require.EqualValues(t, 5, dead.Attempts)
	require.EqualValues(t, 5, dead.MaxAttempts)
	lastErr := lastError(t, dead)
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
		// At least the policy's delay; how much later a loaded machine
		// gets to it is not the policy's (River's default backoff, 1 s,
		// 16 s, …, would not reach DEAD_LETTER within waitJob's wait).
		require.GreaterOrEqual(t, gap, want, "delay before attempt %d", i+2)
	}
	require.Equal(t, bpctype.DeliveryFailed, h.delivery(ev.Deliveries[0].WebhookDeliveryID).Status)

	// Fixed. Pause the queue so the QUEUED state can be observed, retry from
	// River UI, check the mirror, resume.
	recv.set(http.StatusNoContent, nil)
	ctx := t.Context()
	require.NoError(t, h.app.River().QueuePause(ctx, jobargs.QueueWebhooks, nil))
	h.riverUI("retry", dead.RiverJobID)
	queued := h.job(jobID)
	require.Equal(t, bpctype.StatusQueued, queued.Status)
	require.Nil(t, queued.FinishedAt)
	h.requireConsistent()
	require.NoError(t, h.app.River().QueueResume(ctx, jobargs.QueueWebhooks, nil))

	done := h.waitJob(jobID)
	require.Equal(t, bpctype.StatusSucceeded, done.Status)
	require.EqualValues(t, 6, done.Attempts, "River counts on from the dead-lettered attempts")
	d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
	require.Equal(t, bpctype.DeliveryDelivered, d.Status)
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
	ev, delivered := h.deliverOne(recv.URL, "x.test")
	require.Equal(t, bpctype.StatusSucceeded, delivered.Status)

	later := time.Now().Add(time.Hour).UTC()
	enqueueLater := func() bpctype.Job {
		job := h.deliverLater(map[string]any{"webhook_delivery_id": ev.Deliveries[0].WebhookDeliveryID}, later)
		require.Equal(t, bpctype.StatusQueued, job.Status)
		require.Equal(t, later.UnixMicro(), job.ScheduledAt.UnixMicro(), "scheduled_at as asked, to Postgres's microsecond")
		return job
	}

	toCancel := enqueueLater()
	h.riverUI("cancel", toCancel.RiverJobID)
	cancelled := h.job(toCancel.JobID)
	require.Equal(t, bpctype.StatusCancelled, cancelled.Status)
	require.NotNil(t, cancelled.FinishedAt)
	h.requireConsistent()

	toDelete := enqueueLater()
	h.riverUI("delete", toDelete.RiverJobID)
	deleted := h.job(toDelete.JobID)
	require.Equal(t, bpctype.StatusCancelled, deleted.Status, "a job deleted before it ran can never run")
	require.NotNil(t, deleted.RiverDeletedAt)
	h.requireConsistent()

	// Deleting a finished job keeps its outcome.
	h.riverUI("delete", delivered.RiverJobID)
	kept := h.job(delivered.JobID)
	require.Equal(t, bpctype.StatusSucceeded, kept.Status)
	require.NotNil(t, kept.RiverDeletedAt)
	h.requireConsistent()

	// The admin API refuses to act on a job whose River row is gone.
	var envelope errorEnvelope
	require.Equal(t, http.StatusConflict, h.call(http.MethodPost,
		"/v1/jobs/"+deleted.JobID.String()+"/retry?tenant_id="+devTenant, nil, &envelope))
	require.Equal(t, "INVALID_STATE", envelope.Error.Code)
}

func TestWebhookAllowPrivateConfig(t *testing.T) {
	t.Parallel()
	token := "an-admin-token-0123456789"
	for _, tc := range []struct {
		env, value string
		want       bool
	}{
		{"dev", "", true},
		{"test", "", true},
		{"prod", "", false},
		{"prod", "true", true},
		{"prod", "1", true},
		{"test", "false", false},
		{"dev", "0", false},
		{"dev", " FALSE ", false},
	} {
		cfg, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_ENV": tc.env,
			"BPC_ADMIN_TOKEN": token, "BPC_WEBHOOK_ALLOW_PRIVATE": tc.value,
			"BPC_PUBLIC_BASE_URL": "https://passports.example.com", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="}))
		require.NoError(t, err)
		require.Equal(t, tc.want, cfg.WebhookAllowPrivate, "%s %q", tc.env, tc.value)
		require.Equal(t, tc.want, cfg.WebhookDestinations().AllowPrivate)
	}
	_, err := service.LoadConfig(envOf(map[string]string{"DATABASE_URL": "postgres://x", "BPC_WEBHOOK_ALLOW_PRIVATE": "maybe"}))
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "BPC_WEBHOOK_ALLOW_PRIVATE")
}

// ssrfURLs are the reproductions of the SSRF report and their neighbours.
// None of them needs DNS: the test must not send a query off this machine.
var ssrfURLs = []string{
	"http://127.0.0.1:5432/", "http://127.0.0.1:6379/", "http://localhost/hook", "http://app.localhost:8080/",
	"http://169.254.169.254/latest/meta-data/", "http://169.254.170.2/v2/credentials",
	"http://10.0.0.1/", "http://172.16.5.4/", "http://192.168.1.1/", "http://100.64.0.1/", "http://100.100.100.200/",
	"http://0.0.0.0/", "http://0.0.0.0:8080/", "http://[::]/", "http://[::1]/", "http://[fd00:ec2::254]/", "http://[fe80::1]/",
	"http://[fe80::1%25eth0]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:a9fe:a9fe]/", "http://[64:ff9b::a00:1]/",
	"http://0x7f000001/", "http://2130706433/", "http://0177.0.0.1/", "http://127.1/", "http://017700000001/",
	"http://127.0.0.1./", "http://224.0.0.1/", "http://255.255.255.255/", "http://192.0.2.1/",
	"https://127.0.0.1/", "https://[::1]:8443/",
}

// With private destinations refused, every SSRF reproduction is refused at
// registration and on update with 422 naming url, and nothing is stored.
func TestWebhookDestinationsRefusedAtRegistration(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_WEBHOOK_ALLOW_PRIVATE": "false"})
	for _, u := range ssrfURLs {
		var env errorEnvelope
		require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/webhook-endpoints",
			map[string]any{"tenant_id": devTenant, "url": u, "secret": testSecret}, &env), u)
		require.Equal(t, "VALIDATION_ERROR", env.Error.Code, u)
		require.Equal(t, "url", env.Error.Details["field"], u)
	}
	var listing struct {
		Items []bpctype.WebhookEndpoint `json:"items"`
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/webhook-endpoints?tenant_id="+devTenant, nil, &listing))
	require.Empty(t, listing.Items, "nothing stored")

	// A public literal registers (no DNS needed); moving it inside does not.
	var ep bpctype.WebhookEndpoint
	const public = "https://[2606:4700:4700::1111]/hook"
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": devTenant, "url": public, "secret": testSecret}, &ep))
	path := "/v1/webhook-endpoints/" + ep.WebhookEndpointID.String() + "?tenant_id=" + devTenant
	for _, u := range []string{"http://10.0.0.1/", "http://0x7f000001/", "http://localhost/"} {
		var env errorEnvelope
		require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPatch, path, map[string]any{"url": u}, &env), u)
		require.Equal(t, "url", env.Error.Details["field"], u)
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, path, nil, &ep))
	require.Equal(t, public, ep.URL, "unchanged")

	// The message says why, for a literal the tenant wrote.
	var env errorEnvelope
	h.call(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": devTenant, "url": "http://169.254.169.254/", "secret": testSecret}, &env)
	require.Equal(t, "url: 169.254.169.254 is a link-local address; webhook destinations must be public", env.Error.Message)
	require.Equal(t, "link-local", env.Error.Details["reason"])
	h.call(http.MethodPost, "/v1/webhook-endpoints", map[string]any{"tenant_id": devTenant, "url": "http://2130706433/", "secret": testSecret}, &env)
	require.Equal(t, "url: 2130706433 is a non-canonical numeric host; write an IPv4 address as four decimal numbers a.b.c.d", env.Error.Message)
}

// An endpoint stored before the policy (or by a process allowing private
// destinations) is refused when the webhook is sent: the delivery FAILS
// with WEBHOOK_DESTINATION_DENIED, the receiver gets nothing and the
// delivery shows no response.
func TestWebhookDestinationDeniedAtDialTime(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_WEBHOOK_ALLOW_PRIVATE": "false"})
	rcv := newReceiver(t, http.StatusOK)
	port := rcv.Listener.Addr().(*net.TCPAddr).Port
	st := store.New(h.pool)
	for i, u := range []string{rcv.URL + "/hook", fmt.Sprintf("http://localhost:%d/hook", port)} {
		ep, err := st.CreateWebhookEndpoint(context.Background(), store.DevTenantID, u, testSecret)
		require.NoError(t, err)
		eventType := fmt.Sprintf("ssrf.dial.%d", i)
		require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-subscriptions",
			map[string]any{"tenant_id": devTenant, "webhook_endpoint_id": ep.WebhookEndpointID, "event_type": eventType}, nil))
		ev := h.emit(eventType, map[string]any{})
		require.Len(t, ev.Deliveries, 1)
		job := h.waitJob(ev.Deliveries[0].JobID)
		require.Equal(t, bpctype.StatusFailed, job.Status, u)
		require.Equal(t, int32(1), job.Attempts, "not retried")
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", lastError(t, job).Code)
		d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
		require.Equal(t, bpctype.DeliveryFailed, d.Status)
		require.Equal(t, "WEBHOOK_DESTINATION_DENIED", *d.ErrorCode)
		require.Nil(t, d.HTTPStatus)
		require.Empty(t, d.ResponseBody)
	}
	require.Empty(t, rcv.received(), "nothing was sent")
	h.requireConsistent()
}

// Failing to connect reads the same whatever the port: the delivery and the
// job carry one fixed message, so deliveries cannot scan ports.
func TestWebhookConnectErrorsDoNotTellPortsApart(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{"BPC_JOBS_MAX_ATTEMPTS_DEFAULT": "1"})
	var messages []string
	for i := range 2 {
		ln, err := net.Listen("tcp4", "127.0.0.1:0")
		require.NoError(t, err)
		port := ln.Addr().(*net.TCPAddr).Port
		require.NoError(t, ln.Close())
		ev, job := h.deliverOne(fmt.Sprintf("http://127.0.0.1:%d/hook", port), fmt.Sprintf("ssrf.port.%d", i))
		le := lastError(t, job)
		require.Equal(t, "WEBHOOK_NETWORK", le.Code)
		d := h.delivery(ev.Deliveries[0].WebhookDeliveryID)
		require.Equal(t, le.Message, *d.ErrorMessage)
		require.NotContains(t, le.Message, fmt.Sprint(port))
		messages = append(messages, le.Message)
	}
	require.Equal(t, messages[0], messages[1])
	require.Equal(t, "could not connect to the webhook endpoint", messages[0])
}
