package e2e

import (
	"encoding/base64"
	"maps"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/testamqp"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/service"
	"github.com/bpc-platform/bpc/store"
)

// pollOnly is the environment of a service behind PgBouncer: River
// without LISTEN, polling every 5 s (the pipeline queue too), the RabbitMQ
// trigger on its own exchange of url's broker. vars are set over it.
func pollOnly(t *testing.T, url string, vars map[string]string) map[string]string {
	t.Helper()
	env := map[string]string{
		"BPC_DB_LISTEN":                      "false",
		"BPC_JOBS_POLL_INTERVAL_MS":          "5000",
		"BPC_JOBS_PIPELINE_POLL_INTERVAL_MS": "5000",
		"BPC_QUEUE_ENABLED":                  "true",
		"BPC_QUEUE_URL":                      url,
		"BPC_QUEUE_EXCHANGE":                 testamqp.Exchange(t, testamqp.URL(t)),
	}
	maps.Copy(env, vars)
	return env
}

// triggerUp waits for the service's trigger to connect.
func (h *harness) triggerUp() {
	h.t.Helper()
	h.eventually("the trigger connects", h.app.Trigger().Up)
}

// parsedBOM uploads the sample's BOM and waits for its PARSE_FACTS: a
// document version whose parse the trigger tests enqueue again.
func (h *harness) parsedBOM() uuid.UUID {
	h.t.Helper()
	version, parse := h.upload("BOM", sampleDoc(h.t, nmc811.DocBOM))
	h.succeeded(parse)
	return version
}

// pickup enqueues a PARSE_FACTS of version over POST /v1/jobs and returns
// the time from sending the request to the job's start (its started_at).
func (h *harness) pickup(version uuid.UUID) time.Duration {
	h.t.Helper()
	sent := time.Now()
	var job store.Job
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindParseFacts, "tenant_id": devTenant, "payload": map[string]any{"document_version_id": version},
	}, &job))
	job = h.waitJob(job.JobID)
	require.NotNil(h.t, job.StartedAt, "job %s never started", job.JobID)
	return job.StartedAt.Sub(sent)
}

// ready reads the readiness answer (with the admin token, so that failed
// checks carry their detail).
func (h *harness) ready() (int, readiness) {
	h.t.Helper()
	var r readiness
	status := h.call(http.MethodGet, "/v1/health/ready", nil, &r)
	return status, r
}

type readiness struct {
	Status string `json:"status"`
	Checks []struct {
		Name   string `json:"name"`
		OK     bool   `json:"ok"`
		Status string `json:"status"`
		Detail string `json:"detail"`
	} `json:"checks"`
}

// queueCheck is the readiness answer's queue check as "ok" or its status.
func (r readiness) queueCheck() string {
	for _, c := range r.Checks {
		if c.Name == "queue" {
			if c.OK {
				return "ok"
			}
			return c.Status
		}
	}
	return "absent"
}

// triggerMetric reads a series of the trigger's from /v1/metrics, as
// written there (name and labels).
func (h *harness) triggerMetric(series string) string {
	h.t.Helper()
	status, body := h.raw(http.MethodGet, "/v1/metrics", nil, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(h.t, http.StatusOK, status)
	for line := range strings.Lines(string(body)) {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return strings.TrimSpace(v)
		}
	}
	h.t.Fatalf("no %s in /v1/metrics", series)
	return ""
}

func (h *harness) triggerUpMetric() string { return h.triggerMetric("bpc_queue_trigger_up") }

// percentile is the q-quantile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}

// The acceptance test of the trigger: River poll-only with a 5 s poll, an
// HTTP enqueue is picked up in under 100 ms at the median (without the
// trigger it would wait 2.5 s on average).
func TestTriggerPicksUpPollOnlyJobsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil))
	h.triggerUp()
	version := h.parsedBOM()

	const n = 20
	lat := make([]time.Duration, 0, n)
	for range n {
		lat = append(lat, h.pickup(version))
		time.Sleep(50 * time.Millisecond)
	}
	slices.Sort(lat)
	p50, p99 := percentile(lat, 0.5), percentile(lat, 0.99)
	t.Logf("poll-only (5 s) + trigger: enqueue → started over %d HTTP enqueues: p50 %v, p99 %v", n, p50, p99)
	require.Less(t, p50, 100*time.Millisecond)
	require.Less(t, p99, 2500*time.Millisecond, "even the slowest pickup beats the average poll wait")
}

// Jobs inserted by workers — the next pipeline step, and an event's
// webhook deliveries — are published once the worker's transaction
// commits: poll-only with a 5 s poll, they start well within a second.
func TestTriggerPublishesWorkersFollowUpJobs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil))
	h.triggerUp()
	rcv := newReceiver(t, http.StatusOK)
	h.subscribe(rcv.URL, passport.EventDocumentUploaded)
	var doc store.Document
	h.post("/v1/documents", map[string]any{"kind": "BOM", "name": "BOM of the sample"}, http.StatusCreated, &doc)

	var ingest store.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindIngestDocument, "tenant_id": devTenant, "payload": map[string]any{
			"document_id": doc.DocumentID, "mime_type": "application/json",
			"content": base64.StdEncoding.EncodeToString(sampleDoc(t, nmc811.DocBOM)),
		},
	}, &ingest))
	ingest = h.succeeded(ingest.JobID)
	for _, kind := range []string{jobargs.KindParseFacts, jobargs.KindDeliverWebhook} {
		var list struct {
			Items []store.Job `json:"items"`
		}
		require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&type="+kind, nil, &list))
		require.Len(t, list.Items, 1, kind)
		job := h.waitJob(list.Items[0].JobID)
		require.NotNil(t, job.StartedAt)
		wait := job.StartedAt.Sub(*ingest.FinishedAt)
		t.Logf("%s started %v after INGEST_DOCUMENT committed it", kind, wait)
		require.Less(t, wait, time.Second, "%s waited for the poll", kind)
	}
}

// With the trigger a River listener, River polls for cancellations only
// every minute; the listener reads them itself: an operator's cancel
// interrupts a running job within about a second.
func TestTriggerCancelInterruptsRunningJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), map[string]string{"BPC_WEBHOOK_TIMEOUT_MS": "30000"}))
	h.triggerUp()
	rcv := newReceiver(t, http.StatusOK)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	rcv.set(http.StatusOK, hold)
	h.subscribe(rcv.URL, "passport.activated")
	ev := h.emit("passport.activated", map[string]any{})
	h.eventually("the delivery is running", func() bool { return len(rcv.received()) == 1 })

	cancelled := time.Now()
	var job store.Job
	require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+ev.Deliveries[0].JobID.String()+"/cancel?tenant_id="+devTenant, nil, &job))
	job = h.waitJob(job.JobID)
	took := time.Since(cancelled)
	t.Logf("running job cancelled in %v", took)
	require.Equal(t, store.StatusCancelled, job.Status)
	require.Less(t, took, 5*time.Second, "the cancel waited for River's minute-long poll or the webhook timeout")
}

// A queue paused in River UI stops being worked, and resumed is worked at
// once, although River cannot LISTEN for either.
func TestTriggerQueuePauseAndResume(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil))
	h.triggerUp()
	version := h.parsedBOM()

	status, body := h.raw(http.MethodPut, "/riverui/api/queues/"+jobargs.QueuePipeline+"/pause", map[string]any{},
		map[string]string{"Authorization": basicAuth("admin", testToken)})
	require.Equal(t, http.StatusOK, status, "%s", body)
	time.Sleep(2 * time.Second) // the listener reads pauses every second
	var job store.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindParseFacts, "tenant_id": devTenant, "payload": map[string]any{"document_version_id": version},
	}, &job))
	time.Sleep(time.Second)
	require.Equal(t, store.StatusQueued, h.job(job.JobID).Status, "a paused queue's job ran")

	resumed := time.Now()
	status, body = h.raw(http.MethodPut, "/riverui/api/queues/"+jobargs.QueuePipeline+"/resume", map[string]any{},
		map[string]string{"Authorization": basicAuth("admin", testToken)})
	require.Equal(t, http.StatusOK, status, "%s", body)
	job = h.succeeded(job.JobID)
	t.Logf("job started %v after the resume", job.StartedAt.Sub(resumed))
	require.Less(t, job.StartedAt.Sub(resumed), 3*time.Second)
}

// An operator's retry makes a job available without an insert; it is
// published all the same, from the admin API and from River UI: the job
// runs again at once, not at the next 5 s poll.
func TestTriggerPublishesOperatorRetry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil))
	h.triggerUp()
	_, parse := h.upload("BOM", []byte(`{"not":"a bill of materials"}`))
	job := h.failedWith(parse, "VALIDATION_ERROR")

	for _, retry := range []struct {
		name string
		do   func()
	}{
		{"admin API", func() {
			require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+job.JobID.String()+"/retry?tenant_id="+devTenant, nil, nil))
		}},
		{"River UI", func() { h.riverUI("retry", job.RiverJobID) }},
	} {
		retried := time.Now()
		retry.do()
		job = h.waitJob(job.JobID)
		require.Equal(t, store.StatusFailed, job.Status)
		require.True(t, job.StartedAt.After(retried), "%s: the job did not run again", retry.name)
		t.Logf("%s retry: the job started %v later", retry.name, job.StartedAt.Sub(retried))
		require.Less(t, job.StartedAt.Sub(retried), time.Second, "%s: the retried job waited for the poll", retry.name)
	}
}

// The broker at a closed port: the service starts, jobs still finish
// within the poll interval, readiness stays 200 with the queue degraded
// (503 with BPC_HEALTH_REQUIRE_QUEUE), QUEUE_UNAVAILABLE is logged once and
// the URL's password never.
func TestTriggerBrokerDownPollingContinues(t *testing.T) {
	t.Parallel()
	url := testamqp.ClosedPortURL(t, "amqp://bpc:broker-secret-password-1@127.0.0.1:5672/")
	h := newHarness(t, service.RoleAll, pollOnly(t, url, map[string]string{
		"BPC_JOBS_POLL_INTERVAL_MS": "1000", "BPC_JOBS_PIPELINE_POLL_INTERVAL_MS": "1000",
	}))
	version := h.parsedBOM()
	for range 3 {
		// The 1 s poll, River's jitter of up to a tenth, and the slack a
		// loaded machine needs.
		took := h.pickup(version)
		require.Less(t, took, 1800*time.Millisecond, "a job waited longer than the poll interval")
	}

	status, r := h.ready()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "degraded", r.Status)
	require.Equal(t, "degraded", r.queueCheck())
	require.Equal(t, "0", h.triggerUpMetric())
	logs := h.logs.String()
	require.Equal(t, 1, strings.Count(logs, `"error_code":"QUEUE_UNAVAILABLE"`), "logged once per outage")
	require.NotContains(t, logs, "broker-secret-password-1")

	strict := newHarness(t, service.RoleAll, pollOnly(t, url, map[string]string{"BPC_HEALTH_REQUIRE_QUEUE": "true"}))
	status, r = strict.ready()
	require.Equal(t, http.StatusServiceUnavailable, status)
	require.Equal(t, "not ready", r.Status)
}

// The broker going away and coming back while the service runs (a proxy
// cut and restored): readiness degraded and bpc_queue_trigger_up 0 during
// the outage, jobs still run by polling, then ok, 1 and fast pickup again.
func TestTriggerBrokerOutageAndRecovery(t *testing.T) {
	t.Parallel()
	url := testamqp.URL(t)
	proxy := testamqp.NewProxy(t, url)
	h := newHarnessWith(t, service.RoleAll, pollOnly(t, proxy.URL(url), map[string]string{
		"BPC_JOBS_POLL_INTERVAL_MS": "1000", "BPC_JOBS_PIPELINE_POLL_INTERVAL_MS": "1000",
	}), nil)
	h.triggerUp()
	version := h.parsedBOM()
	status, r := h.ready()
	require.Equal(t, http.StatusOK, status)
	require.Equal(t, "ready", r.Status)
	require.Equal(t, "ok", r.queueCheck())
	require.Equal(t, "1", h.triggerUpMetric())

	const consumed = `bpc_queue_trigger_messages_total{direction="consumed"}`
	consumedBefore := h.triggerMetric(consumed)
	proxy.Cut()
	h.eventually("readiness says degraded", func() bool { _, r := h.ready(); return r.queueCheck() == "degraded" })
	require.Equal(t, "0", h.triggerUpMetric())
	require.Less(t, h.pickup(version), 1800*time.Millisecond, "polling continues")

	proxy.Restore()
	h.eventually("readiness is ok again", func() bool { _, r := h.ready(); return r.queueCheck() == "ok" })
	require.Equal(t, "1", h.triggerUpMetric())
	// The outage's enqueue is announced on reconnection; then this one.
	h.eventually("the outage's publish arrives", func() bool { return h.triggerMetric(consumed) != consumedBefore })
	before := h.triggerMetric(consumed)
	took := h.pickup(version)
	require.NotEqual(t, before, h.triggerMetric(consumed), "no trigger message went through the restored connection")
	require.Less(t, took, 500*time.Millisecond, "the trigger picks up at once again")
	require.Equal(t, 1, strings.Count(h.logs.String(), `"error_code":"QUEUE_UNAVAILABLE"`))
}

// The trigger's configuration: defaults as SPEC §13 says, and a bad value
// stops the process naming its variable, never echoing the URL's password.
func TestTriggerConfig(t *testing.T) {
	t.Parallel()
	db := map[string]string{"DATABASE_URL": "postgres://x"}
	cfg, err := service.LoadConfig(envOf(db))
	require.NoError(t, err)
	require.True(t, cfg.DBListen)
	require.False(t, cfg.QueueEnabled)
	require.False(t, cfg.HealthRequireQueue)
	require.Equal(t, "amqp://guest:guest@127.0.0.1:5672/", cfg.Queue.URL)
	require.Equal(t, "bpc", cfg.Queue.Exchange)
	require.Equal(t, "jobs.trigger", cfg.Queue.RoutingKey)

	for _, tc := range []struct {
		vars map[string]string
		name string
	}{
		{map[string]string{"BPC_DB_LISTEN": "sometimes"}, "BPC_DB_LISTEN"},
		{map[string]string{"BPC_QUEUE_ENABLED": "yes please"}, "BPC_QUEUE_ENABLED"},
		{map[string]string{"BPC_QUEUE_ENABLED": "true", "BPC_QUEUE_URL": "http://bpc:url-secret-password@mq:5672/"}, "BPC_QUEUE_URL"},
		{map[string]string{"BPC_QUEUE_ENABLED": "true", "BPC_QUEUE_EXCHANGE": "bpc\njobs"}, "BPC_QUEUE_EXCHANGE"},
		{map[string]string{"BPC_QUEUE_ENABLED": "true", "BPC_QUEUE_ROUTING_KEY": strings.Repeat("k", 256)}, "BPC_QUEUE_ROUTING_KEY"},
		{map[string]string{"BPC_HEALTH_REQUIRE_QUEUE": "true"}, "BPC_HEALTH_REQUIRE_QUEUE"},
	} {
		vars := map[string]string{"DATABASE_URL": "postgres://x"}
		for k, v := range tc.vars {
			vars[k] = v
		}
		_, err := service.LoadConfig(envOf(vars))
		require.Error(t, err, "%v", tc.vars)
		require.Equal(t, errcode.Validation, errcode.CodeOf(err))
		require.Contains(t, err.Error(), tc.name)
		require.NotContains(t, err.Error(), "url-secret-password")
	}
}
