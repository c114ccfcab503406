package e2e

import (
	"encoding/base64"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testamqp"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
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

// pollHourly makes River poll every hour, past what the environment admits:
// a job that starts within a test's wait was fetched because the trigger
// announced it, not because a poll came round.
func pollHourly(c *service.Config) {
	c.PollInterval = time.Hour
	c.PipelinePoll = time.Hour
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

// pickup enqueues a PARSE_FACTS of version over POST /v1/jobs and waits
// for it to run.
func (h *harness) pickup(version uuid.UUID) {
	h.t.Helper()
	var job bpctype.Job
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindParseFacts, "tenant_id": devTenant, "payload": map[string]any{"document_version_id": version},
	}, &job))
	job = h.waitJob(job.JobID)
	require.NotNil(h.t, job.StartedAt, "job %s never started", job.JobID)
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

// The acceptance test of the trigger: River poll-only, polling hourly,
// runs every HTTP enqueue, each announced by a trigger message. (How fast:
// the pickup latency benchmark, make bench.)
func TestTriggerPicksUpPollOnlyJobsAtOnce(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil), pollHourly)
	h.triggerUp()
	version := h.parsedBOM()

	const consumed = `bpc_queue_trigger_messages_total{direction="consumed"}`
	const n = 5
	before, err := strconv.Atoi(h.triggerMetric(consumed))
	require.NoError(t, err)
	for range n {
		h.pickup(version)
	}
	after, err := strconv.Atoi(h.triggerMetric(consumed))
	require.NoError(t, err)
	require.GreaterOrEqual(t, after-before, n, "a trigger message per enqueue")
}

// Jobs inserted by workers — the next pipeline step, and an event's
// webhook deliveries — are published once the worker's transaction
// commits: poll-only, polling hourly, they run.
func TestTriggerPublishesWorkersFollowUpJobs(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil), pollHourly)
	h.triggerUp()
	rcv := newReceiver(t, http.StatusOK)
	h.subscribe(rcv.URL, passport.EventDocumentUploaded)
	var doc bpctype.Document
	h.post("/v1/documents", map[string]any{"kind": "BOM", "name": "BOM of the sample"}, http.StatusCreated, &doc)

	var ingest bpctype.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindIngestDocument, "tenant_id": devTenant, "payload": map[string]any{
			"document_id": doc.DocumentID, "mime_type": "application/json",
			"content": base64.StdEncoding.EncodeToString(sampleDoc(t, nmc811.DocBOM)),
		},
	}, &ingest))
	ingest = h.succeeded(ingest.JobID)
	for _, kind := range []string{jobargs.KindParseFacts, jobargs.KindDeliverWebhook} {
		var list struct {
			Items []bpctype.Job `json:"items"`
		}
		require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&type="+kind, nil, &list))
		require.Len(t, list.Items, 1, kind)
		job := h.waitJob(list.Items[0].JobID)
		require.NotNil(t, job.StartedAt, "%s never started", kind)
	}
}

// With the trigger a River listener, River polls for cancellations only
// every minute; the listener reads them itself: an operator's cancel
// interrupts a running job, held by a receiver that never answers within
// the 10 min webhook timeout, within waitJob's wait.
func TestTriggerCancelInterruptsRunningJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, pollOnly(t, testamqp.URL(t), map[string]string{"BPC_WEBHOOK_TIMEOUT_MS": "600000"}))
	h.triggerUp()
	rcv := newReceiver(t, http.StatusOK)
	hold := make(chan struct{})
	t.Cleanup(func() { close(hold) })
	rcv.set(http.StatusOK, hold)
	h.subscribe(rcv.URL, "passport.activated")
	ev := h.emit("passport.activated", map[string]any{})
	h.eventually("the delivery is running", func() bool { return len(rcv.received()) == 1 })

	var job bpctype.Job
	require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+ev.Deliveries[0].JobID.String()+"/cancel?tenant_id="+devTenant, nil, &job))
	job = h.waitJob(job.JobID)
	require.Equal(t, bpctype.StatusCancelled, job.Status)
}

// A queue paused in River UI stops being worked, and resumed is worked
// (River polling hourly), although River cannot LISTEN for either.
func TestTriggerQueuePauseAndResume(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil), pollHourly)
	h.triggerUp()
	version := h.parsedBOM()
	events, unsubscribe := h.app.River().Subscribe(river.EventKindQueuePaused, river.EventKindQueueResumed)
	t.Cleanup(unsubscribe)
	queueEvent := func(kind river.EventKind) {
		t.Helper()
		for {
			select {
			case ev := <-events:
				if ev.Kind == kind && ev.Queue != nil && ev.Queue.Name == jobargs.QueuePipeline {
					return
				}
			case <-time.After(testTimeout):
				t.Fatalf("no %s event for queue %s", kind, jobargs.QueuePipeline)
			}
		}
	}

	status, body := h.raw(http.MethodPut, "/riverui/api/queues/"+jobargs.QueuePipeline+"/pause", map[string]any{},
		map[string]string{"Authorization": basicAuth("admin", testToken)})
	require.Equal(t, http.StatusOK, status, "%s", body)
	queueEvent(river.EventKindQueuePaused) // the listener told River's producer
	var job bpctype.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindParseFacts, "tenant_id": devTenant, "payload": map[string]any{"document_version_id": version},
	}, &job))
	time.Sleep(time.Second)
	require.Equal(t, bpctype.StatusQueued, h.job(job.JobID).Status, "a paused queue's job ran")

	status, body = h.raw(http.MethodPut, "/riverui/api/queues/"+jobargs.QueuePipeline+"/resume", map[string]any{},
		map[string]string{"Authorization": basicAuth("admin", testToken)})
	require.Equal(t, http.StatusOK, status, "%s", body)
	queueEvent(river.EventKindQueueResumed)
	h.succeeded(job.JobID)
}

// An operator's retry makes a job available without an insert; it is
// published all the same, from the admin API and from River UI: the job
// runs again, River polling hourly.
func TestTriggerPublishesOperatorRetry(t *testing.T) {
	t.Parallel()
	h := newHarnessWith(t, service.RoleAll, pollOnly(t, testamqp.URL(t), nil), pollHourly)
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
		require.Equal(t, bpctype.StatusFailed, job.Status)
		require.True(t, job.StartedAt.After(retried), "%s: the job did not run again", retry.name)
	}
}

// The broker at a closed port: the service starts, jobs still finish
// by polling, readiness stays 200 with the queue degraded
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
		h.pickup(version) // by the 1 s poll: there is no broker
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
// the outage, jobs still run by polling, then ok, 1 and pickup through the
// trigger again.
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
	h.pickup(version) // polling continues

	proxy.Restore()
	h.eventually("readiness is ok again", func() bool { _, r := h.ready(); return r.queueCheck() == "ok" })
	require.Equal(t, "1", h.triggerUpMetric())
	// The outage's enqueue is announced on reconnection; then this one.
	h.eventually("the outage's publish arrives", func() bool { return h.triggerMetric(consumed) != consumedBefore })
	before := h.triggerMetric(consumed)
	h.pickup(version)
	require.NotEqual(t, before, h.triggerMetric(consumed), "no trigger message went through the restored connection")
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
