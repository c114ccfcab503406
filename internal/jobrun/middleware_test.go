package jobrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/workers"
)

func jobRow(attempt, maxAttempts int) *rivertype.JobRow {
	return &rivertype.JobRow{
		ID:          42,
		Kind:        "DELIVER_WEBHOOK",
		Attempt:     attempt,
		MaxAttempts: maxAttempts,
		EncodedArgs: []byte(`{"tenant_id":"bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"}`),
		Metadata:    []byte(`{"bpc_job_id":"aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}`),
	}
}

func TestControlFlowCancelsNonRetryableTypedErrors(t *testing.T) {
	t.Parallel()
	for _, code := range []errcode.Code{errcode.Validation, errcode.NotFound, errcode.Webhook4xx, errcode.InvalidState} {
		err := controlFlow(fmt.Errorf("context: %w", errcode.New(code, "permanent")))
		var cancelErr *rivertype.JobCancelError
		require.ErrorAs(t, err, &cancelErr, "%s must cancel the job", code)
		require.Equal(t, code, errcode.CodeOf(err), "the code survives the cancel wrapper")
		require.Equal(t, `{"code":"`+string(code)+`","message":"permanent"}`, err.Error(),
			"River stores the typed form, without its JobCancelError prefix")
	}
}

func TestControlFlowKeepsRetryableTypedErrorsRetryable(t *testing.T) {
	t.Parallel()
	for _, code := range []errcode.Code{errcode.Webhook5xx, errcode.DBUnavailable, errcode.EventVersionConflict} {
		in := errcode.New(code, "transient")
		err := controlFlow(in)
		var cancelErr *rivertype.JobCancelError
		require.False(t, errors.As(err, &cancelErr), "%s must be retried", code)
		require.Same(t, in, errcode.As(err))
		require.Equal(t, errcode.Encode(in), err.Error())
	}
}

func TestControlFlowTypesUntypedErrorsAsInternal(t *testing.T) {
	t.Parallel()
	cause := errors.New("disk on fire\nsecond line")
	err := controlFlow(cause)
	e := errcode.As(err)
	require.NotNil(t, e)
	require.Equal(t, errcode.Internal, e.Code)
	require.True(t, e.Retryable())
	require.ErrorIs(t, err, cause)
	require.Equal(t, `{"code":"INTERNAL_ERROR","message":"disk on fire second line"}`, err.Error(), "one line, as last_error reads it")

	timedOut := controlFlow(fmt.Errorf("POST: %w", context.DeadlineExceeded))
	require.Equal(t, errcode.Internal, errcode.CodeOf(timedOut))
	require.Contains(t, timedOut.Error(), "job timed out")
}

// A typed error a handler wraps with context keeps its code: the stored text
// is the typed error's (before it was encoded, "context: CODE: message"
// reached the mirror as INTERNAL_ERROR).
func TestControlFlowFindsTheCodeUnderContext(t *testing.T) {
	t.Parallel()
	err := controlFlow(fmt.Errorf("error loading snapshot: %w", errcode.New(errcode.SnapshotNotReady, "snapshot abc is BUILDING")))
	require.Equal(t, `{"code":"SNAPSHOT_NOT_READY","message":"snapshot abc is BUILDING"}`, err.Error())
	var cancelErr *rivertype.JobCancelError
	require.ErrorAs(t, err, &cancelErr)
}

func TestControlFlowPassesRiverControlErrorsThrough(t *testing.T) {
	t.Parallel()
	require.NoError(t, controlFlow(nil))
	snooze := river.JobSnooze(time.Minute)
	require.Same(t, snooze, controlFlow(snooze))

	// A worker's own river.JobCancel still cancels; its text is typed too.
	cancel := river.JobCancel(errors.New("given up"))
	err := controlFlow(cancel)
	var cancelErr *rivertype.JobCancelError
	require.ErrorAs(t, err, &cancelErr)
	require.Same(t, cancel, cancelErr)
	require.Equal(t, `{"code":"INTERNAL_ERROR","message":"given up"}`, err.Error())
	typedCancel := river.JobCancel(errcode.New(errcode.Webhook5xx, "HTTP 503"))
	err = controlFlow(typedCancel)
	require.ErrorAs(t, err, &cancelErr, "cancelled although the code is retryable: the worker said so")
	require.Equal(t, `{"code":"WEBHOOK_5XX","message":"HTTP 503"}`, err.Error())
}

func TestOutcome(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name    string
		attempt int
		err     error
		want    string
	}{
		{"success", 1, nil, bpctype.StatusSucceeded},
		{"retryable with attempts left", 1, errcode.New(errcode.Webhook5xx, "HTTP 500"), bpctype.StatusQueued},
		{"retryable one before last", 4, errcode.New(errcode.Webhook5xx, "HTTP 500"), bpctype.StatusQueued},
		{"retryable on last attempt", 5, errcode.New(errcode.Webhook5xx, "HTTP 500"), bpctype.StatusDeadLetter},
		{"retryable past max attempts", 6, errcode.New(errcode.DBUnavailable, "down"), bpctype.StatusDeadLetter},
		{"untyped on last attempt", 5, errors.New("boom"), bpctype.StatusDeadLetter},
		{"snooze", 5, river.JobSnooze(time.Second), bpctype.StatusQueued},
		{"permanent error", 2, river.JobCancel(errcode.New(errcode.Webhook4xx, "HTTP 404")), bpctype.StatusFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tt.want, bpctype.StatusOf(outcome(ctx, jobRow(tt.attempt, 5), controlFlow(tt.err))))
		})
	}
}

func TestOutcomeInterruptedByShutdownIsQueued(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	state, _ := outcome(ctx, jobRow(5, 5), controlFlow(ctx.Err()))
	require.Equal(t, rivertype.JobStateAvailable, state)
}

// A permanent error is FAILED, not CANCELLED: every JobCancelError matches
// errors.Is(err, river.ErrJobCancelledRemotely), so the observer must look
// at the context's cause instead.
func TestOutcomeNonRetryableTypedErrorIsFailed(t *testing.T) {
	t.Parallel()
	state, byOperator := outcome(context.Background(), jobRow(1, 5), controlFlow(errcode.New(errcode.Validation, "bad input")))
	require.Equal(t, rivertype.JobStateCancelled, state)
	require.False(t, byOperator)
	require.Equal(t, bpctype.StatusFailed, bpctype.StatusOf(state, byOperator))
}

func TestOutcomeRemoteCancelSeenByWorkerAsContextCanceled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(river.ErrJobCancelledRemotely)
	state, byOperator := outcome(ctx, jobRow(1, 5), controlFlow(ctx.Err()))
	require.Equal(t, rivertype.JobStateCancelled, state)
	require.True(t, byOperator)
	require.Equal(t, bpctype.StatusCancelled, bpctype.StatusOf(state, byOperator))
	// Whatever the worker made of it, even on its last attempt.
	require.Equal(t, bpctype.StatusCancelled, bpctype.StatusOf(outcome(ctx, jobRow(5, 5), controlFlow(errcode.New(errcode.WebhookNetwork, "context canceled")))))
}

type observed struct {
	obs  *Observer
	logs *bytes.Buffer
}

func newObserved() observed {
	logs := &bytes.Buffer{}
	return observed{
		obs: &Observer{
			Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
			Metrics: workers.NewMetrics(prometheus.NewRegistry()),
		},
		logs: logs,
	}
}

func (o observed) lastLog(t *testing.T) map[string]any {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(o.logs.String()), "\n")
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[len(lines)-1]), &m))
	return m
}

func TestObserverCountsDeadLetterAndLogsTransition(t *testing.T) {
	t.Parallel()
	o := newObserved()
	err := o.obs.Work(context.Background(), jobRow(5, 5), func(context.Context) error {
		return errcode.New(errcode.Webhook5xx, "endpoint answered HTTP 500")
	})
	require.Equal(t, errcode.Webhook5xx, errcode.CodeOf(err))
	require.Equal(t, 1.0, testutil.ToFloat64(o.obs.Metrics.DeadLetter.WithLabelValues("DELIVER_WEBHOOK")))
	require.Equal(t, 1.0, testutil.ToFloat64(o.obs.Metrics.JobsCompleted.WithLabelValues("DELIVER_WEBHOOK", bpctype.StatusDeadLetter)))

	line := o.lastLog(t)
	require.Equal(t, "WARN", line["level"])
	require.Equal(t, "DEAD_LETTER", line["status"])
	require.Equal(t, "WEBHOOK_5XX", line["error_code"])
	require.Equal(t, "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa", line["job_id"])
	require.Equal(t, float64(42), line["river_job_id"])
	require.Equal(t, "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb", line["tenant_id"])
	require.Equal(t, float64(5), line["attempt"])
	require.Contains(t, line, "duration_ms")
}

func TestObserverSuccessDoesNotCountDeadLetter(t *testing.T) {
	t.Parallel()
	o := newObserved()
	require.NoError(t, o.obs.Work(context.Background(), jobRow(1, 5), func(context.Context) error { return nil }))
	require.Equal(t, 1.0, testutil.ToFloat64(o.obs.Metrics.JobsCompleted.WithLabelValues("DELIVER_WEBHOOK", bpctype.StatusSucceeded)))
	require.Equal(t, 0.0, testutil.ToFloat64(o.obs.Metrics.DeadLetter.WithLabelValues("DELIVER_WEBHOOK")))
	line := o.lastLog(t)
	require.Equal(t, "INFO", line["level"])
	require.Equal(t, "SUCCEEDED", line["status"])
	require.NotContains(t, line, "error_code")
}

func TestObserverTurnsPanicIntoRetryableInternalError(t *testing.T) {
	t.Parallel()
	o := newObserved()
	err := o.obs.Work(context.Background(), jobRow(1, 5), func(context.Context) error { panic("nil map write") })
	require.Equal(t, errcode.Internal, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "nil map write")
	var cancelErr *rivertype.JobCancelError
	require.False(t, errors.As(err, &cancelErr), "a panic is retried")
	require.Equal(t, 1.0, testutil.ToFloat64(o.obs.Metrics.JobsCompleted.WithLabelValues("DELIVER_WEBHOOK", bpctype.StatusQueued)))
	require.Contains(t, o.logs.String(), `"msg":"job panicked"`)
}

func TestObserverCancelsPermanentErrors(t *testing.T) {
	t.Parallel()
	o := newObserved()
	err := o.obs.Work(context.Background(), jobRow(1, 5), func(context.Context) error {
		return errcode.Invalid("webhook_delivery_id", "is required")
	})
	var cancelErr *rivertype.JobCancelError
	require.ErrorAs(t, err, &cancelErr, "River must not retry a VALIDATION_ERROR")
	require.Equal(t, errcode.Validation, errcode.CodeOf(err))
	require.Equal(t, `{"code":"VALIDATION_ERROR","message":"webhook_delivery_id: is required"}`, err.Error(), "what River stores")
	require.Equal(t, "VALIDATION_ERROR", o.lastLog(t)["error_code"])
}

func TestStringField(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ doc, key, want string }{
		{`{"tenant_id":"abc","seq":1}`, "tenant_id", "abc"},
		{`{"tenant_id": "jsonb", "seq": 1}`, "tenant_id", "jsonb"},
		{`{"bpc_job_id": "meta"}`, "bpc_job_id", "meta"},
		{`{"tenant_id": 5}`, "tenant_id", ""},
		{`{"tenant_id":`, "tenant_id", ""},
		{`{"tenant_id": "unterminated`, "tenant_id", ""},
		{`{"tenant": "short"}`, "tenant_id", ""},
		{`{"seq":1, "tenant_id" : "spaced"}`, "tenant_id", "spaced"},
		{`{"tenant_id":"a\"b"}`, "tenant_id", `a"b`},
		{`{"x_tenant_id":"no","tenant_id":"yes"}`, "tenant_id", "yes"},
		{`{"payload":{"tenant_id":"nested"},"tenant_id":"top"}`, "tenant_id", "top"},
		{`{"tenant_id":5}`, "tenant_id", ""},
		{`{}`, "tenant_id", ""},
		{`not json`, "tenant_id", ""},
	} {
		require.Equal(t, tc.want, stringField([]byte(tc.doc), tc.key), tc.doc)
	}
}

// The service's own documents, as Postgres writes jsonb, take the fast
// path: no allocation but the result's (not parallel: AllocsPerRun).
func TestStringFieldFastPath(t *testing.T) {
	doc := []byte(`{"tenant_id": "00000000-0000-4000-8000-000000000000", "snapshot_id": "x"}`)
	require.Equal(t, 1.0, testing.AllocsPerRun(100, func() { _ = stringField(doc, "tenant_id") }))
}

func TestControlFlowMapsLostDatabaseToDBUnavailable(t *testing.T) {
	t.Parallel()
	err := controlFlow(fmt.Errorf("loading delivery: %w", &pgconn.PgError{Code: "57P01", Message: "terminating connection due to administrator command"}))
	require.Equal(t, errcode.DBUnavailable, errcode.CodeOf(err))
	require.True(t, errcode.As(err).Retryable())
}

// BenchmarkObserverWork is the observer's own cost per job (a no-op job, the
// service's JSON logger at info writing its two lines, metrics, a lease
// hold): the Go half of the burn-down's service-path overhead
// (bench/burn_down_test.go), measured alone.
func BenchmarkObserverWork(b *testing.B) {
	o := &Observer{
		Logger:  slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Metrics: workers.NewMetrics(prometheus.NewRegistry()),
		Leases:  &Leases{Owner: "bench", TTL: time.Minute, Renew: 30 * time.Second},
	}
	job := jobRow(1, 5)
	job.EncodedArgs = []byte(`{"tenant_id": "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb"}`)
	job.Metadata = []byte(`{"bpc_job_id": "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa"}`)
	ctx := context.Background()
	noop := func(context.Context) error { return nil }
	b.ReportAllocs()
	for b.Loop() {
		if err := o.Work(ctx, job, noop); err != nil {
			b.Fatal(err)
		}
	}
}
