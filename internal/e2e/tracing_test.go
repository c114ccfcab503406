package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
	collectortracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracev1 "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
)

// exportedSpan is a span as the console exporter prints it, one JSON object
// a line.
type exportedSpan struct {
	Name        string
	SpanKind    int
	SpanContext struct{ TraceID, SpanID string }
	Parent      struct{ TraceID, SpanID string }
	Attributes  []struct {
		Key   string
		Value struct{ Value any }
	}
}

// Span kinds as the console exporter numbers them.
const (
	spanKindServer   = 2
	spanKindClient   = 3
	spanKindProducer = 4
	spanKindConsumer = 5
)

func (s exportedSpan) attr(key string) any {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.Value
		}
	}
	return nil
}

// parseSpans reads the console exporter's output.
func parseSpans(t *testing.T, out string) []exportedSpan {
	t.Helper()
	var spans []exportedSpan
	for line := range strings.Lines(out) {
		var s exportedSpan
		require.NoError(t, json.Unmarshal([]byte(line), &s), "a console span line is one JSON object: %s", line)
		spans = append(spans, s)
	}
	return spans
}

// spanOf returns the one span named name whose attribute key is value.
func spanOf(t *testing.T, spans []exportedSpan, name, key string, value any) exportedSpan {
	t.Helper()
	var found []exportedSpan
	for _, s := range spans {
		if s.Name == name && (key == "" || s.attr(key) == value) {
			found = append(found, s)
		}
	}
	require.Len(t, found, 1, "spans named %q with %s=%v", name, key, value)
	return found[0]
}

// traceparentOf splits a W3C traceparent header into trace and parent span ids.
func traceparentOf(t *testing.T, header string) (traceID, spanID string) {
	t.Helper()
	parts := strings.Split(header, "-")
	require.Len(t, parts, 4, "traceparent %q", header)
	require.Equal(t, "00", parts[0])
	return parts[1], parts[2]
}

// logLines returns the service's JSON log lines with message msg.
func logLines(t *testing.T, logs string, msg string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range strings.Lines(logs) {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// newTracedHarness runs the service with OTEL_TRACES_EXPORTER=console and
// returns it with the console exporter's output.
func newTracedHarness(t *testing.T) (*harness, *syncBuffer) {
	t.Helper()
	spans := &syncBuffer{}
	h := newHarnessWith(t, service.RoleAll, map[string]string{"OTEL_TRACES_EXPORTER": "console"},
		func(c *service.Config) { c.Tracing.Console = spans })
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("spans:\n%s", spans.String())
		}
	})
	return h, spans
}

// hookToken is a token in a webhook URL's query, which no span may show.
const hookToken = "hook-url-token-5d1e2f"

// The SPEC's acceptance: with the console exporter, one POST /v1/events
// gives spans of one trace from the HTTP request through the enqueue and the
// DELIVER_WEBHOOK attempt to the webhook POST, whose traceparent the
// receiver sees; the request's and the job's log lines carry its trace id.
func TestTracingFollowsAnEventToItsWebhook(t *testing.T) {
	t.Parallel()
	h, out := newTracedHarness(t)
	rcv := newReceiver(t, http.StatusOK)
	h.subscribe(rcv.URL+"/in/traced?token="+hookToken, "passport.traced")
	ev := h.emit("passport.traced", map[string]any{})
	job := h.waitJob(ev.Deliveries[0].JobID)
	require.Equal(t, bpctype.StatusSucceeded, job.Status)

	got := rcv.received()
	require.Len(t, got, 1)
	traceID, postID := traceparentOf(t, got[0].header.Get("traceparent"))

	var spans []exportedSpan
	h.eventually("the delivery's attempt span is exported", func() bool {
		spans = parseSpans(t, out.String())
		return slices.ContainsFunc(spans, func(s exportedSpan) bool { return s.Name == "work "+jobargs.KindDeliverWebhook })
	})
	request := spanOf(t, spans, "POST /v1/events", "", nil)
	enqueue := spanOf(t, spans, "enqueue", "bpc.job_id", job.JobID.String())
	work := spanOf(t, spans, "work "+jobargs.KindDeliverWebhook, "bpc.job_id", job.JobID.String())
	post := spanOf(t, spans, http.MethodPost, "bpc.webhook_delivery_id", ev.Deliveries[0].WebhookDeliveryID.String())

	// One trace, each span the child of the one before.
	for _, s := range []exportedSpan{request, enqueue, work, post} {
		require.Equal(t, traceID, s.SpanContext.TraceID, "span %q", s.Name)
	}
	require.Equal(t, "0000000000000000", request.Parent.SpanID, "the request starts the trace")
	require.Equal(t, request.SpanContext.SpanID, enqueue.Parent.SpanID)
	require.Equal(t, enqueue.SpanContext.SpanID, work.Parent.SpanID)
	require.Equal(t, work.SpanContext.SpanID, post.Parent.SpanID)
	require.Equal(t, postID, post.SpanContext.SpanID, "the receiver's traceparent names the POST's span")

	// The job carries the enqueue's context in River's metadata.
	var stored string
	require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT metadata->>'traceparent' FROM river_job WHERE id = $1`,
		job.RiverJobID).Scan(&stored))
	require.Equal(t, "00-"+traceID+"-"+enqueue.SpanContext.SpanID+"-01", stored)

	require.Equal(t, []int{spanKindServer, spanKindProducer, spanKindConsumer, spanKindClient},
		[]int{request.SpanKind, enqueue.SpanKind, work.SpanKind, post.SpanKind})
	require.Equal(t, "/v1/events", request.attr("http.route"))
	require.EqualValues(t, http.StatusCreated, request.attr("http.response.status_code"))
	require.Equal(t, jobargs.KindDeliverWebhook, enqueue.attr("bpc.type"))
	require.EqualValues(t, job.RiverJobID, enqueue.attr("bpc.river_job_id"))
	require.EqualValues(t, job.RiverJobID, work.attr("bpc.river_job_id"))
	require.Equal(t, devTenant, work.attr("bpc.tenant_id"))
	require.EqualValues(t, 1, work.attr("bpc.attempt"))
	require.Equal(t, bpctype.StatusSucceeded, work.attr("bpc.status"))
	require.EqualValues(t, http.StatusOK, post.attr("http.response.status_code"))
	require.Equal(t, "127.0.0.1", post.attr("server.address"))

	// Neither the endpoint's secret, its URL's path and token, the admin
	// token nor the event's body is in any span.
	for _, never := range []string{testSecret, hookToken, "/in/traced", testToken, ev.EventHash} {
		require.NotContains(t, out.String(), never)
	}

	// The request's log line and the job's transition lines carry the trace.
	logs := h.logs.String()
	var requestLines int
	for _, line := range logLines(t, logs, "http request") {
		if line["route"] == "/v1/events" {
			requestLines++
			require.Equal(t, traceID, line["trace_id"], "%v", line)
			require.Equal(t, request.SpanContext.SpanID, line["span_id"], "%v", line)
		}
	}
	require.Equal(t, 1, requestLines)
	var jobLines int
	for _, line := range logLines(t, logs, "job transition") {
		if line["job_id"] == job.JobID.String() {
			jobLines++
			require.Equal(t, traceID, line["trace_id"], "%v", line)
			require.Equal(t, work.SpanContext.SpanID, line["span_id"], "%v", line)
		}
	}
	require.Equal(t, 2, jobLines, "RUNNING and SUCCEEDED")
}

// A caller's traceparent makes the request part of the caller's trace, and
// the trace follows the work through follow-up jobs: INGEST_DOCUMENT enqueues
// PARSE_FACTS, whose event enqueues DELIVER_WEBHOOK, whose POST carries the
// caller's trace id.
func TestTracingFollowsFollowUpJobs(t *testing.T) {
	t.Parallel()
	h, out := newTracedHarness(t)
	rcv := newReceiver(t, http.StatusOK)
	h.subscribe(rcv.URL, "document.facts_parsed")
	var doc bpctype.Document
	h.post("/v1/documents", map[string]any{"kind": "BOM", "name": "traced BOM"}, http.StatusCreated, &doc)

	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	status, _, raw := h.headers(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindIngestDocument, "tenant_id": devTenant,
		"payload": map[string]any{"tenant_id": devTenant, "document_id": doc.DocumentID, "mime_type": "application/json",
			"content": base64.StdEncoding.EncodeToString(sampleDoc(t, nmc811.DocBOM))},
	}, map[string]string{"Authorization": "Bearer " + testToken, "traceparent": "00-" + callerTrace + "-" + callerSpan + "-01"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var ingest bpctype.Job
	require.NoError(t, json.Unmarshal(raw, &ingest))

	h.eventually("the facts_parsed webhook is delivered", func() bool { return len(rcv.received()) == 1 })
	traceID, _ := traceparentOf(t, rcv.received()[0].header.Get("traceparent"))
	require.Equal(t, callerTrace, traceID)

	var spans []exportedSpan
	h.eventually("the delivery's attempt span is exported", func() bool {
		spans = parseSpans(t, out.String())
		return slices.ContainsFunc(spans, func(s exportedSpan) bool { return s.Name == "work "+jobargs.KindDeliverWebhook })
	})
	request := spanOf(t, spans, "POST /v1/jobs", "", nil)
	require.Equal(t, callerTrace, request.SpanContext.TraceID)
	require.Equal(t, callerSpan, request.Parent.SpanID)
	ingestWork := spanOf(t, spans, "work "+jobargs.KindIngestDocument, "bpc.job_id", ingest.JobID.String())
	parseWork := spanOf(t, spans, "work "+jobargs.KindParseFacts, "", nil)
	parseEnqueue := spanOf(t, spans, "enqueue", "bpc.job_id", parseWork.attr("bpc.job_id"))
	deliverWork := spanOf(t, spans, "work "+jobargs.KindDeliverWebhook, "", nil)
	for _, s := range []exportedSpan{ingestWork, parseEnqueue, parseWork, deliverWork} {
		require.Equal(t, callerTrace, s.SpanContext.TraceID, "span %q", s.Name)
	}
	require.Equal(t, ingestWork.SpanContext.SpanID, parseEnqueue.Parent.SpanID, "the follow-up job is enqueued in the attempt's span")
	require.Equal(t, parseEnqueue.SpanContext.SpanID, parseWork.Parent.SpanID)
}

// With tracing off (no OTEL_TRACES_EXPORTER) nothing is exported, no log
// line carries a trace id, and a webhook carries no traceparent, even when
// the request that led to it did.
func TestTracingOffSendsNoTraceparent(t *testing.T) {
	t.Parallel()
	spans := &syncBuffer{}
	h := newHarnessWith(t, service.RoleAll, nil, func(c *service.Config) { c.Tracing.Console = spans })
	rcv := newReceiver(t, http.StatusOK)
	h.subscribe(rcv.URL, "passport.untraced")
	status, _, raw := h.headers(http.MethodPost, "/v1/events", map[string]any{
		"tenant_id": devTenant, "aggregate_type": "Passport", "aggregate_id": uuid.NewString(),
		"event_type": "passport.untraced", "payload": map[string]any{},
	}, map[string]string{"Authorization": "Bearer " + testToken,
		"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var ev eventResponse
	require.NoError(t, json.Unmarshal(raw, &ev))
	job := h.waitJob(ev.Deliveries[0].JobID)
	require.Equal(t, bpctype.StatusSucceeded, job.Status)
	var carried bool
	require.NoError(t, h.pool.QueryRow(t.Context(), `SELECT metadata ? 'traceparent' FROM river_job WHERE id = $1`,
		job.RiverJobID).Scan(&carried))
	require.False(t, carried, "no trace context stored with the job")

	got := rcv.received()
	require.Len(t, got, 1)
	require.Empty(t, got[0].header.Values("traceparent"))
	require.Empty(t, got[0].header.Values("tracestate"))
	require.Empty(t, spans.String())
	require.NotContains(t, h.logs.String(), "trace_id")
}

// procEmit registers a receiver's endpoint for eventType on a running
// process, emits one such event and waits until the receiver got it.
func procEmit(t *testing.T, p *serviceProc, rcv *receiver, eventType string) eventResponse {
	t.Helper()
	var ep struct {
		WebhookEndpointID uuid.UUID `json:"webhook_endpoint_id"`
	}
	require.Equal(t, http.StatusCreated, p.admin(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": devTenant, "url": rcv.URL, "secret": testSecret}, &ep))
	require.Equal(t, http.StatusCreated, p.admin(http.MethodPost, "/v1/webhook-subscriptions",
		map[string]any{"tenant_id": devTenant, "webhook_endpoint_id": ep.WebhookEndpointID, "event_type": eventType}, nil))
	var ev eventResponse
	require.Equal(t, http.StatusCreated, p.admin(http.MethodPost, "/v1/events", map[string]any{
		"tenant_id": devTenant, "aggregate_type": "Passport", "aggregate_id": uuid.NewString(),
		"event_type": eventType, "payload": map[string]any{},
	}, &ev))
	require.Eventually(t, func() bool { return len(rcv.received()) == 1 }, testTimeout, pollEvery, "the webhook is delivered")
	return ev
}

// The acceptance as an operator runs it: `bpc serve` with
// OTEL_TRACES_EXPORTER=console prints spans as JSON lines on stderr (beside
// the banner, apart from the JSON log on stdout), and one POST /v1/events
// gives one trace from the request to the webhook POST, whose traceparent
// the receiver sees.
func TestTracingConsoleExporterOfTheProcess(t *testing.T) {
	t.Parallel()
	p := startService(t, service.RoleAll, map[string]string{"OTEL_TRACES_EXPORTER": "console"})
	rcv := newReceiver(t, http.StatusOK)
	ev := procEmit(t, p, rcv, "passport.console")
	traceID, postID := traceparentOf(t, rcv.received()[0].header.Get("traceparent"))

	var spans []exportedSpan
	require.Eventually(t, func() bool {
		spans = nil
		b, _ := os.ReadFile(p.stderr)
		for line := range strings.Lines(string(b)) {
			if strings.HasPrefix(line, `{"Name":`) {
				spans = append(spans, parseSpans(t, line)...)
			}
		}
		return slices.ContainsFunc(spans, func(s exportedSpan) bool { return s.Name == "work "+jobargs.KindDeliverWebhook })
	}, testTimeout, pollEvery, "the delivery's attempt span is printed")
	request := spanOf(t, spans, "POST /v1/events", "", nil)
	work := spanOf(t, spans, "work "+jobargs.KindDeliverWebhook, "bpc.job_id", ev.Deliveries[0].JobID.String())
	post := spanOf(t, spans, http.MethodPost, "bpc.webhook_delivery_id", ev.Deliveries[0].WebhookDeliveryID.String())
	require.Equal(t, []string{traceID, traceID, traceID},
		[]string{request.SpanContext.TraceID, work.SpanContext.TraceID, post.SpanContext.TraceID})
	require.Equal(t, postID, post.SpanContext.SpanID)

	b, err := os.ReadFile(p.stdout)
	require.NoError(t, err)
	require.NotContains(t, string(b), `"Name":`, "no span on stdout, the log")
	var found bool
	for _, line := range logLines(t, string(b), "http request") {
		if line["route"] == "/v1/events" {
			found = true
			require.Equal(t, traceID, line["trace_id"])
		}
	}
	require.True(t, found, "the request's log line")
}

// otlpCollector is an OTLP/HTTP trace receiver: it keeps the spans of every
// export request.
type otlpCollector struct {
	*httptest.Server
	mu    sync.Mutex
	spans []*tracev1.Span
}

func newOTLPCollector(t *testing.T) *otlpCollector {
	c := &otlpCollector{}
	c.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		var req collectortracev1.ExportTraceServiceRequest
		if err != nil || r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" ||
			proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
			return
		}
		c.mu.Lock()
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				c.spans = append(c.spans, ss.Spans...)
			}
		}
		c.mu.Unlock()
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	t.Cleanup(c.Close)
	return c
}

// traceIDs returns the hex trace id of every span received with name.
func (c *otlpCollector) traceIDs(name string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for _, s := range c.spans {
		if s.Name == name {
			out = append(out, hex.EncodeToString(s.TraceId))
		}
	}
	return out
}

// With OTEL_TRACES_EXPORTER=otlp the spans go to the OTLP/HTTP endpoint of
// the standard variables, in batches; those still held when the service
// stops are sent before it exits.
func TestTracingOTLPExportsAndFlushesAtShutdown(t *testing.T) {
	t.Parallel()
	collector := newOTLPCollector(t)
	p := startService(t, service.RoleAll, map[string]string{
		"OTEL_TRACES_EXPORTER":        "otlp",
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		// Nothing is exported before the stop.
		"OTEL_BSP_SCHEDULE_DELAY": "600000",
	})
	rcv := newReceiver(t, http.StatusOK)
	procEmit(t, p, rcv, "passport.otlp")
	traceID, _ := traceparentOf(t, rcv.received()[0].header.Get("traceparent"))
	require.Empty(t, collector.traceIDs("POST /v1/events"), "batched until the stop")

	require.NoError(t, p.cmd.Process.Signal(syscall.SIGTERM))
	select {
	case <-p.done:
	case <-time.After(testTimeout):
		t.Fatal("bpc serve did not stop after SIGTERM")
	}
	require.Equal(t, []string{traceID}, collector.traceIDs("POST /v1/events"))
	require.Equal(t, []string{traceID}, collector.traceIDs("work "+jobargs.KindDeliverWebhook))
	require.Equal(t, []string{traceID}, collector.traceIDs(http.MethodPost))
}
