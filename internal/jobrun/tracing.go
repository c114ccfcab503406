package jobrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
)

// MetadataTraceparent is the River metadata key that carries the W3C trace
// context of the span that enqueued a job.
const MetadataTraceparent = "traceparent"

// Span attribute keys of jobs, named as the job transition log line's keys.
const (
	attrJobID      = attribute.Key("bpc.job_id")
	attrRiverJobID = attribute.Key("bpc.river_job_id")
	attrType       = attribute.Key("bpc.type")
	attrTenantID   = attribute.Key("bpc.tenant_id")
	attrAttempt    = attribute.Key("bpc.attempt")
	attrStatus     = attribute.Key("bpc.status")
	attrErrorCode  = attribute.Key("bpc.error_code")
)

// Tracing is the River middleware that makes a job's life part of the trace
// that enqueued it: an enqueue span around every insert, whose context each
// job carries in its metadata as traceparent, and around each attempt a
// span that is that enqueue's child, in whose context the job works (its
// log lines, the jobs it enqueues, its webhook POST). A child rather than a
// link, although jobs may run much later: the SPEC's trace runs from the
// HTTP request to the webhook POST. It goes first in River's middleware, so
// that the observer's job transition lines carry the attempt's trace id.
type Tracing struct {
	river.MiddlewareDefaults
	tracer trace.Tracer
}

// NewTracing returns the middleware tracing with tp.
func NewTracing(tp trace.TracerProvider) *Tracing {
	return &Tracing{tracer: tp.Tracer("github.com/bpc-platform/bpc/workers")}
}

// traceContext is the W3C propagator of job metadata and webhook requests.
var traceContext propagation.TraceContext

// InsertMany implements rivertype.JobInsertMiddleware: one enqueue span per
// batch, whose context every job of the batch carries.
func (t *Tracing) InsertMany(ctx context.Context, params []*rivertype.JobInsertParams,
	doInner func(context.Context) ([]*rivertype.JobInsertResult, error),
) ([]*rivertype.JobInsertResult, error) {
	ctx, span := t.tracer.Start(ctx, "enqueue", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(semconv.MessagingSystemKey.String("river"), semconv.MessagingBatchMessageCount(len(params))))
	defer span.End()
	carrier := propagation.MapCarrier{}
	traceContext.Inject(ctx, carrier)
	for _, p := range params {
		meta, err := withTraceContext(p.Metadata, carrier)
		if err != nil {
			span.SetStatus(codes.Error, err.Error())
			return nil, err
		}
		p.Metadata = meta
	}
	if len(params) == 1 {
		p := params[0]
		span.SetAttributes(attrJobID.String(stringField(p.Metadata, "bpc_job_id")), attrType.String(p.Kind),
			attrTenantID.String(stringField(p.EncodedArgs, "tenant_id")))
	} else {
		ids, types := make([]string, len(params)), make([]string, len(params))
		for i, p := range params {
			ids[i], types[i] = stringField(p.Metadata, "bpc_job_id"), p.Kind
		}
		span.SetAttributes(attrJobID.StringSlice(ids), attrType.StringSlice(types))
	}
	res, err := doInner(ctx)
	if err != nil {
		span.SetStatus(codes.Error, err.Error())
		return res, err
	}
	ids := make([]int64, len(res))
	for i, r := range res {
		if r != nil && r.Job != nil {
			ids[i] = r.Job.ID
		}
	}
	if len(ids) == 1 {
		span.SetAttributes(attrRiverJobID.Int64(ids[0]))
	} else {
		span.SetAttributes(attrRiverJobID.Int64Slice(ids))
	}
	return res, nil
}

// withTraceContext sets the carrier's keys (traceparent, tracestate) in a
// job's metadata object.
func withTraceContext(metadata []byte, carrier propagation.MapCarrier) ([]byte, error) {
	if len(carrier) == 0 {
		return metadata, nil
	}
	m := map[string]json.RawMessage{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m); err != nil {
			return nil, fmt.Errorf("error decoding job metadata: %w", err)
		}
	}
	for k, v := range carrier {
		m[k], _ = json.Marshal(v)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("error encoding job metadata: %w", err)
	}
	return b, nil
}

// metadataCarrier reads trace context from a job's metadata.
type metadataCarrier []byte

func (m metadataCarrier) Get(key string) string { return stringField(m, key) }
func (m metadataCarrier) Set(string, string)    {}
func (m metadataCarrier) Keys() []string        { return nil }

// Work implements rivertype.WorkerMiddleware: the attempt's span, named
// after the job type (a bounded set), with the SSOT status the attempt
// leaves the job in.
func (t *Tracing) Work(ctx context.Context, job *rivertype.JobRow, doInner func(context.Context) error) error {
	parent := traceContext.Extract(ctx, metadataCarrier(job.Metadata))
	ctx, span := t.tracer.Start(parent, "work "+job.Kind, trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(
			semconv.MessagingSystemKey.String("river"),
			semconv.MessagingDestinationName(job.Queue),
			attrJobID.String(stringField(job.Metadata, "bpc_job_id")),
			attrRiverJobID.Int64(job.ID),
			attrType.String(job.Kind),
			attrTenantID.String(stringField(job.EncodedArgs, "tenant_id")),
			attrAttempt.Int(job.Attempt),
		))
	defer span.End()
	err := doInner(ctx)
	status := bpctype.StatusOf(outcome(ctx, job, err))
	span.SetAttributes(attrStatus.String(status))
	var snooze *rivertype.JobSnoozeError
	if err != nil && !errors.As(err, &snooze) {
		code := string(errcode.CodeOf(err))
		span.SetAttributes(attrErrorCode.String(code))
		span.SetStatus(codes.Error, code)
	}
	return err
}
