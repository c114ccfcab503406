package tracing_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/bpc-platform/bpc/internal/tracing"
)

func TestParseExporters(t *testing.T) {
	t.Parallel()
	for in, want := range map[string][]string{
		"":                  nil,
		"none":              nil,
		" NONE ":            nil,
		"console":           {"console"},
		"otlp":              {"otlp"},
		"otlp, console":     {"otlp", "console"},
		"console,console,":  {"console"},
		"Console,OTLP,otlp": {"console", "otlp"},
	} {
		got, err := tracing.ParseExporters(in)
		require.NoError(t, err, "%q", in)
		require.Equal(t, want, got, "%q", in)
	}
	for _, in := range []string{"zipkin", "jaeger", "otlp,prometheus", "none,console", "logging"} {
		_, err := tracing.ParseExporters(in)
		require.Error(t, err, "%q", in)
	}
}

func TestNewProviderIsNilWhenOff(t *testing.T) {
	t.Parallel()
	tp, err := tracing.NewProvider(t.Context(), tracing.Config{})
	require.NoError(t, err)
	require.Nil(t, tp)
}

// A line logged in a span's context carries the span's trace_id and
// span_id, through loggers derived with With and WithGroup; a line without
// a span carries neither.
func TestLogHandlerStampsTheSpan(t *testing.T) {
	t.Parallel()
	tp := sdktrace.NewTracerProvider()
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	var buf bytes.Buffer
	logger := slog.New(tracing.LogHandler(slog.NewJSONHandler(&buf, nil))).With("job_id", "j1")

	ctx, span := tp.Tracer("test").Start(t.Context(), "work")
	logger.InfoContext(ctx, "in a span")
	span.End()
	logger.InfoContext(context.Background(), "outside")
	logger.WithGroup("g").InfoContext(ctx, "grouped")

	var lines []map[string]any
	dec := json.NewDecoder(&buf)
	for dec.More() {
		var m map[string]any
		require.NoError(t, dec.Decode(&m))
		lines = append(lines, m)
	}
	require.Len(t, lines, 3)
	sc := span.SpanContext()
	require.Equal(t, sc.TraceID().String(), lines[0]["trace_id"])
	require.Equal(t, sc.SpanID().String(), lines[0]["span_id"])
	require.Equal(t, "j1", lines[0]["job_id"])
	require.NotContains(t, lines[1], "trace_id")
	require.NotContains(t, lines[1], "span_id")
	require.Equal(t, sc.TraceID().String(), lines[2]["g"].(map[string]any)["trace_id"])
}
