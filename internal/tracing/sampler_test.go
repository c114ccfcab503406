package tracing_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/internal/tracing"
)

// remote is the context of a caller's W3C traceparent with traceID and the
// sampled flag as given.
func remote(t *testing.T, traceID string, sampled bool) context.Context {
	t.Helper()
	tid, err := trace.TraceIDFromHex(traceID)
	require.NoError(t, err)
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	require.NoError(t, err)
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.ContextWithRemoteSpanContext(context.Background(),
		trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}))
}

// caller is remote marked as a caller's header (tracing.Untrusted).
func caller(t *testing.T, traceID string, sampled bool) context.Context {
	t.Helper()
	return tracing.Untrusted(remote(t, traceID, sampled))
}

// recorder returns a provider sampling with tracing.Sampler(root) and what
// it records.
func recorder(t *testing.T, root sdktrace.Sampler) (trace.Tracer, *tracetest.SpanRecorder) {
	t.Helper()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.Sampler(root)), sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer("test"), spans
}

const (
	// A trace id whose low half is past any ratio below 1 (not sampled at
	// 0.5), and one below every ratio above 0 (sampled at 0.5).
	highTraceID = "4bf92f3577b34da6ffffffffffffffff"
	lowTraceID  = "4bf92f3577b34da60000000000000001"
)

// A caller's traceparent with the sampled flag set does not make a span
// recorded where the sampler would not sample: not under always_off, not
// under a ratio of 0.
func TestRemoteSampledFlagDoesNotForceSampling(t *testing.T) {
	t.Parallel()
	for name, root := range map[string]sdktrace.Sampler{
		"always_off":     sdktrace.NeverSample(),
		"traceidratio 0": sdktrace.TraceIDRatioBased(0),
	} {
		tr, spans := recorder(t, root)
		_, span := tr.Start(caller(t, lowTraceID, true), "GET /v1/jobs", trace.WithSpanKind(trace.SpanKindServer))
		require.False(t, span.IsRecording(), name)
		require.False(t, span.SpanContext().IsSampled(), name)
		span.End()
		require.Empty(t, spans.Ended(), "%s: nothing recorded, nothing exported", name)
	}
}

// Sampled, a span continues the caller's trace: its trace id and parent
// are the traceparent's, whatever its flag said (the sampler decided).
func TestRemoteParentKeepsItsTraceIDWhenSampled(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		root    sdktrace.Sampler
		traceID string
		sampled bool
	}{
		"always_on, caller unsampled":      {sdktrace.AlwaysSample(), highTraceID, false},
		"always_on, caller sampled":        {sdktrace.AlwaysSample(), highTraceID, true},
		"traceidratio 1, caller unsampled": {sdktrace.TraceIDRatioBased(1), highTraceID, false},
	} {
		tr, spans := recorder(t, tc.root)
		ctx, span := tr.Start(caller(t, tc.traceID, tc.sampled), "GET /v1/jobs")
		require.True(t, span.IsRecording(), name)
		// Its children in this process follow it.
		_, child := tr.Start(ctx, "enqueue")
		child.End()
		span.End()
		ended := spans.Ended()
		require.Len(t, ended, 2, name)
		require.Equal(t, tc.traceID, ended[1].SpanContext().TraceID().String(), name)
		require.Equal(t, "00f067aa0ba902b7", ended[1].Parent().SpanID().String(), name)
		require.True(t, ended[1].Parent().IsRemote(), name)
		require.Equal(t, tc.traceID, ended[0].SpanContext().TraceID().String(), name)
	}
}

// A caller cannot pick trace ids a ratio samples: under a ratio of 0.5 a
// trace id whose low half every ratio above 0 samples is sampled about
// half the time, not every time (200 requests: all or none sampled has a
// chance of 2⁻¹⁹⁹).
func TestCallerCannotPickSampledTraceIDs(t *testing.T) {
	t.Parallel()
	tr, _ := recorder(t, sdktrace.TraceIDRatioBased(0.5))
	sampled := 0
	for range 200 {
		_, span := tr.Start(caller(t, lowTraceID, true), "GET /v1/jobs")
		if span.SpanContext().IsSampled() {
			sampled++
		}
		require.Equal(t, lowTraceID, span.SpanContext().TraceID().String(), "the caller's trace continues")
		span.End()
	}
	require.Greater(t, sampled, 0)
	require.Less(t, sampled, 200, "the caller's trace id did not decide")
}

// A job's traceparent (its metadata, which the service wrote when it
// enqueued the job) is trusted: its flag is followed, so the job of a
// sampled request is recorded in whichever worker runs it, and the job of
// an unsampled one is not, whatever the root sampler would say alone.
func TestTrustedRemoteParentIsFollowed(t *testing.T) {
	t.Parallel()
	tr, spans := recorder(t, sdktrace.NeverSample())
	_, span := tr.Start(remote(t, highTraceID, true), "BUILD_SNAPSHOT")
	require.True(t, span.IsRecording())
	span.End()
	require.Len(t, spans.Ended(), 1)

	tr, spans = recorder(t, sdktrace.AlwaysSample())
	_, span = tr.Start(remote(t, lowTraceID, false), "BUILD_SNAPSHOT")
	require.False(t, span.IsRecording())
	span.End()
	require.Empty(t, spans.Ended())
}

// byName samples the spans named keep: a root sampler whose decision would
// differ between a parent and its child.
type byName struct{ keep string }

func (b byName) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name == b.keep {
		return sdktrace.SamplingResult{Decision: sdktrace.RecordAndSample}
	}
	return sdktrace.SamplingResult{Decision: sdktrace.Drop}
}

func (byName) Description() string { return "byName" }

// A local parent's decision is followed, so a trace is recorded whole or
// not at all: the child of an unsampled span in this process is not
// sampled though the root sampler would sample it, and the child of a
// sampled one is sampled though it would not.
func TestLocalParentDecides(t *testing.T) {
	t.Parallel()
	tr, spans := recorder(t, byName{keep: "child"})
	ctx, parent := tr.Start(caller(t, highTraceID, true), "parent")
	require.False(t, parent.IsRecording())
	_, child := tr.Start(ctx, "child")
	require.False(t, child.IsRecording(), "follows its unsampled local parent")
	child.End()
	parent.End()
	require.Empty(t, spans.Ended())

	tr, spans = recorder(t, byName{keep: "parent"})
	ctx, parent = tr.Start(caller(t, highTraceID, false), "parent")
	_, child = tr.Start(ctx, "child")
	require.True(t, child.IsRecording(), "follows its sampled local parent")
	child.End()
	parent.End()
	require.Len(t, spans.Ended(), 2)
}

func TestParseSampler(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, arg, want string }{
		{"", "", "AlwaysOnSampler"},
		{"always_on", "", "AlwaysOnSampler"},
		{"parentbased_always_on", "", "AlwaysOnSampler"},
		{"ALWAYS_OFF", "", "AlwaysOffSampler"},
		{"parentbased_always_off", "", "AlwaysOffSampler"},
		{"traceidratio", "0.25", "TraceIDRatioBased{0.25}"},
		{"parentbased_traceidratio", "", "TraceIDRatioBased{1}"},
		{" traceidratio ", "0", "TraceIDRatioBased{0}"},
	} {
		s, err := tracing.ParseSampler(tc.name, tc.arg)
		require.NoError(t, err, "%q %q", tc.name, tc.arg)
		require.Equal(t, tc.want, s.Description(), "%q %q", tc.name, tc.arg)
	}
	for _, tc := range []struct{ name, arg string }{
		{"jaeger_remote", ""}, {"xray", ""}, {"traceidratio", "1.5"}, {"traceidratio", "-0.1"},
		{"traceidratio", "half"}, {"traceidratio", "NaN"},
	} {
		_, err := tracing.ParseSampler(tc.name, tc.arg)
		require.Error(t, err, "%q %q", tc.name, tc.arg)
	}
}
