package jobrun_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/webhook/destination"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/workers"
)

func newRecordedTracing(t *testing.T) (*jobrun.Tracing, *tracetest.SpanRecorder, trace.Tracer) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return jobrun.NewTracing(tp), spans, tp.Tracer("test")
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, a := range s.Attributes() {
		m[a.Key] = a.Value
	}
	return m
}

// An insert stores the enqueue span's traceparent beside the job's own
// metadata; each attempt is a child of that span, in whose context the job
// works, and records the SSOT status it leaves the job in and the error
// code. A snooze is no error.
func TestTracingMakesEachAttemptAChildOfItsEnqueue(t *testing.T) {
	t.Parallel()
	tr, spans, tracer := newRecordedTracing(t)
	ctx, request := tracer.Start(t.Context(), "request")
	params := []*rivertype.JobInsertParams{{Kind: jobargs.KindParseFacts, Queue: jobargs.QueuePipeline,
		EncodedArgs: []byte(`{"tenant_id":"t-1","document_version_id":"d-1"}`), Metadata: []byte(`{"bpc_job_id":"j-1"}`)}}
	_, err := tr.InsertMany(ctx, params, func(context.Context) ([]*rivertype.JobInsertResult, error) {
		return []*rivertype.JobInsertResult{{Job: &rivertype.JobRow{ID: 42}}}, nil
	})
	require.NoError(t, err)
	request.End()

	enqueue := spans.Ended()[0]
	require.Equal(t, "enqueue", enqueue.Name())
	require.Equal(t, request.SpanContext().SpanID(), enqueue.Parent().SpanID())
	require.Equal(t, "j-1", attrs(enqueue)["bpc.job_id"].AsString())
	require.Equal(t, int64(42), attrs(enqueue)["bpc.river_job_id"].AsInt64())
	var meta map[string]string
	require.NoError(t, json.Unmarshal(params[0].Metadata, &meta))
	require.Equal(t, map[string]string{"bpc_job_id": "j-1",
		jobrun.MetadataTraceparent: "00-" + enqueue.SpanContext().TraceID().String() + "-" + enqueue.SpanContext().SpanID().String() + "-01"}, meta)

	job := &rivertype.JobRow{ID: 42, Kind: params[0].Kind, Queue: params[0].Queue, Attempt: 2, MaxAttempts: 5,
		EncodedArgs: params[0].EncodedArgs, Metadata: params[0].Metadata}
	var inside trace.SpanContext
	err = tr.Work(context.Background(), job, func(ctx context.Context) error {
		inside = trace.SpanContextFromContext(ctx)
		return errcode.New(errcode.DBUnavailable, "database down")
	})
	require.Error(t, err)
	err = tr.Work(context.Background(), job, func(context.Context) error { return river.JobSnooze(0) })
	var snooze *rivertype.JobSnoozeError
	require.ErrorAs(t, err, &snooze)

	failed, snoozed := spans.Ended()[2], spans.Ended()[3] // after enqueue and request
	require.Equal(t, "work "+jobargs.KindParseFacts, failed.Name())
	require.Equal(t, trace.SpanKindConsumer, failed.SpanKind())
	require.Equal(t, enqueue.SpanContext().TraceID(), failed.SpanContext().TraceID())
	require.Equal(t, enqueue.SpanContext().SpanID(), failed.Parent().SpanID())
	require.Equal(t, failed.SpanContext(), inside, "the job works in its attempt's span")
	a := attrs(failed)
	require.Equal(t, "j-1", a["bpc.job_id"].AsString())
	require.Equal(t, int64(42), a["bpc.river_job_id"].AsInt64())
	require.Equal(t, "t-1", a["bpc.tenant_id"].AsString())
	require.Equal(t, int64(2), a["bpc.attempt"].AsInt64())
	require.Equal(t, bpctype.StatusQueued, a["bpc.status"].AsString(), "retryable: queued again")
	require.Equal(t, string(errcode.DBUnavailable), a["bpc.error_code"].AsString())
	require.Equal(t, codes.Error, failed.Status().Code)

	require.Equal(t, codes.Unset, snoozed.Status().Code)
	require.NotContains(t, attrs(snoozed), attribute.Key("bpc.error_code"))
}

// A job enqueued without trace context (River's periodic jobs, or before
// tracing was turned on) starts a trace of its own.
func TestTracingStartsATraceForAJobWithout(t *testing.T) {
	t.Parallel()
	tr, spans, _ := newRecordedTracing(t)
	job := &rivertype.JobRow{ID: 1, Kind: jobargs.KindBuildSnapshot, Attempt: 1, MaxAttempts: 5,
		EncodedArgs: []byte(`{}`), Metadata: []byte(`{}`)}
	require.NoError(t, tr.Work(t.Context(), job, func(context.Context) error { return nil }))
	span := spans.Ended()[0]
	require.False(t, span.Parent().IsValid())
	require.Equal(t, bpctype.StatusSucceeded, attrs(span)["bpc.status"].AsString())
}

// The webhook transport sends the traceparent of its client span and
// leaves the caller's request as it was; the span holds neither the URL's
// path nor its query.
func TestTraceTransportSendsTraceparent(t *testing.T) {
	t.Parallel()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var got http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.Header.Clone()
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	client := workers.NewHTTPClient()
	client.Transport = workers.TraceTransport(client.Transport, tp)

	ctx, work := tp.Tracer("test").Start(t.Context(), "work")
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/hook/path?token=sekrit", nil)
	require.NoError(t, err)
	resp, err := client.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	work.End()

	post := spans.Ended()[0]
	require.Equal(t, http.MethodPost, post.Name())
	require.Equal(t, trace.SpanKindClient, post.SpanKind())
	require.Equal(t, work.SpanContext().SpanID(), post.Parent().SpanID())
	require.Equal(t, "00-"+post.SpanContext().TraceID().String()+"-"+post.SpanContext().SpanID().String()+"-01",
		got.Get("traceparent"))
	require.Empty(t, req.Header.Get("traceparent"), "the caller's request is not changed")
	require.Equal(t, int64(http.StatusServiceUnavailable), attrs(post)["http.response.status_code"].AsInt64())
	require.Equal(t, codes.Error, post.Status().Code)
	for _, a := range post.Attributes() {
		require.NotContains(t, a.Value.Emit(), "sekrit")
		require.NotContains(t, a.Value.Emit(), "/hook")
	}

	// Refused by the destination policy: an error span, nothing sent.
	strict := workers.NewPolicyHTTPClient(&destination.Policy{})
	strict.Transport = workers.TraceTransport(strict.Transport, tp)
	got = nil
	req, err = http.NewRequestWithContext(t.Context(), http.MethodPost, srv.URL, nil)
	require.NoError(t, err)
	_, err = strict.Do(req)
	require.Error(t, err)
	require.Nil(t, got, "nothing reached the receiver")
	denied := spans.Ended()[len(spans.Ended())-1]
	require.Equal(t, codes.Error, denied.Status().Code)
	var deniedErr *destination.DeniedError
	require.ErrorAs(t, err, &deniedErr)
}
