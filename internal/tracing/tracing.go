// Package tracing sets up the service's OpenTelemetry tracing from the
// standard OTEL_* variables and stamps log lines with the trace they belong
// to. The spans themselves are made where the work is: the HTTP request in
// the api package, the enqueue, each job attempt and the webhook POST in the
// workers package. Everything here is explicit (no global provider), so that
// several services in one test process trace apart, and with tracing off
// nothing of it is installed at all.
package tracing

import (
	"cmp"
	"context"
	"crypto/rand"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/go-logr/logr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/exporters/stdout/stdouttrace"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// Exporters of OTEL_TRACES_EXPORTER.
const (
	ExporterOTLP    = "otlp"
	ExporterConsole = "console"
	ExporterNone    = "none"
)

// Config is the tracing part of the service configuration.
type Config struct {
	// Exporters are OTEL_TRACES_EXPORTER's exporters: otlp (OTLP over
	// HTTP), console (JSON lines on Console). Empty: tracing is off.
	Exporters []string
	// ServiceName is OTEL_SERVICE_NAME (default bpc).
	ServiceName string
	// InstanceID is the service.instance.id resource attribute (the worker id).
	InstanceID string
	// Console receives the console exporter's JSON lines (stderr when nil);
	// never set from the environment.
	Console io.Writer
	// Sampler decides which traces are recorded (ParseSampler, from
	// OTEL_TRACES_SAMPLER; nil: every trace). NewProvider wraps it so that
	// a remote parent's sampled flag is not obeyed (Sampler).
	Sampler sdktrace.Sampler
}

// Enabled reports whether spans are recorded and exported.
func (c Config) Enabled() bool { return len(c.Exporters) > 0 }

// ParseExporters reads OTEL_TRACES_EXPORTER: a comma-separated list of
// otlp and console, or none. Unset is none, unlike the OpenTelemetry
// default: a service nobody asked to trace sends nothing anywhere.
func ParseExporters(v string) ([]string, error) {
	var out []string
	for name := range strings.SplitSeq(strings.ToLower(v), ",") {
		switch name = strings.TrimSpace(name); name {
		case "":
		case ExporterNone:
			if v := strings.TrimSpace(v); !strings.EqualFold(v, ExporterNone) {
				return nil, fmt.Errorf("none cannot be combined with other exporters, got %q", v)
			}
		case ExporterOTLP, ExporterConsole:
			if !slices.Contains(out, name) {
				out = append(out, name)
			}
		default:
			return nil, fmt.Errorf("must be otlp, console or none (or a comma-separated list of otlp and console), got %q", name)
		}
	}
	return out, nil
}

// Samplers of OTEL_TRACES_SAMPLER, as the OpenTelemetry SDK names them.
const (
	SamplerAlwaysOn                = "always_on"
	SamplerAlwaysOff               = "always_off"
	SamplerTraceIDRatio            = "traceidratio"
	SamplerParentBasedAlwaysOn     = "parentbased_always_on"
	SamplerParentBasedAlwaysOff    = "parentbased_always_off"
	SamplerParentBasedTraceIDRatio = "parentbased_traceidratio"
)

// ParseSampler reads OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG (the
// ratio, 0 to 1, of the traceidratio samplers; 1 when unset) into the
// sampler that decides a trace's root. Unset is parentbased_always_on, the
// SDK's default. The parentbased_ and plain forms are the same here:
// Sampler follows a local parent and decides a remote one's children with
// this sampler either way.
func ParseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := 1.0
	if arg = strings.TrimSpace(arg); arg != "" {
		r, err := strconv.ParseFloat(arg, 64)
		if err != nil || math.IsNaN(r) || r < 0 || r > 1 {
			return nil, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG must be a ratio from 0 to 1, got %q", arg)
		}
		ratio = r
	}
	switch n := strings.ToLower(strings.TrimSpace(name)); n {
	case "", SamplerAlwaysOn, SamplerParentBasedAlwaysOn:
		return sdktrace.AlwaysSample(), nil
	case SamplerAlwaysOff, SamplerParentBasedAlwaysOff:
		return sdktrace.NeverSample(), nil
	case SamplerTraceIDRatio, SamplerParentBasedTraceIDRatio:
		return sdktrace.TraceIDRatioBased(ratio), nil
	default:
		return nil, fmt.Errorf("OTEL_TRACES_SAMPLER must be one of always_on, always_off, traceidratio, "+
			"parentbased_always_on, parentbased_always_off, parentbased_traceidratio, got %q", n)
	}
}

// Sampler returns the service's sampler over root (nil: always on):
//   - a span whose parent is local (in this process) follows the parent's
//     decision, so a trace is recorded whole or not at all;
//   - a trace's root is decided by root;
//   - the child of an untrusted remote parent (Untrusted: a caller's
//     traceparent header, which anyone can send) keeps the caller's trace
//     id, but neither its sampled flag nor its trace id decides: root does,
//     over a trace id drawn here, so a caller cannot make the service
//     record and export every request it sends, by the flag or by picking
//     trace ids a ratio samples;
//   - the child of a trusted remote parent (a job's metadata, which this
//     service wrote when the job was enqueued, after its own decision)
//     follows the parent's flag, so the job a sampled request enqueued is
//     recorded in whichever worker runs it, and an unsampled one's is not.
func Sampler(root sdktrace.Sampler) sdktrace.Sampler {
	if root == nil {
		root = sdktrace.AlwaysSample()
	}
	return sampler{root: root, trusted: sdktrace.ParentBased(root)}
}

type untrustedKey struct{}

// Untrusted marks ctx as holding a remote span context from outside the
// service (a caller's traceparent): Sampler does not obey it.
func Untrusted(ctx context.Context) context.Context {
	return context.WithValue(ctx, untrustedKey{}, true)
}

type sampler struct {
	root, trusted sdktrace.Sampler
}

func (s sampler) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	parent := trace.SpanContextFromContext(p.ParentContext)
	if untrusted, _ := p.ParentContext.Value(untrustedKey{}).(bool); !untrusted || !parent.IsValid() || !parent.IsRemote() {
		return s.trusted.ShouldSample(p)
	}
	q := p
	q.ParentContext = context.Background()
	q.TraceID = randomTraceID()
	r := s.root.ShouldSample(q)
	r.Tracestate = parent.TraceState()
	return r
}

func (s sampler) Description() string {
	return fmt.Sprintf("bpc{root:%s,untrusted remote parents:root over a drawn trace id}", s.root.Description())
}

// randomTraceID is a trace id no caller chose, for a ratio's decision.
func randomTraceID() trace.TraceID {
	var id trace.TraceID
	_, _ = rand.Read(id[:])
	return id
}

// NewProvider returns the tracer provider that exports the service's spans
// as cfg says, or nil when tracing is off. The console exporter writes each
// span as it ends (a local tool: nothing is held back); OTLP exports in
// batches. Spans are sampled by Sampler(cfg.Sampler). The OTLP exporter and
// the batch processor read their own standard variables
// (OTEL_EXPORTER_OTLP_*, OTEL_BSP_*) as the OpenTelemetry SDK defines them.
// Shutdown flushes what is left.
func NewProvider(ctx context.Context, cfg Config) (*sdktrace.TracerProvider, error) {
	if !cfg.Enabled() {
		return nil, nil
	}
	attrs := []attribute.KeyValue{semconv.ServiceName(cmp.Or(cfg.ServiceName, "bpc"))}
	if cfg.InstanceID != "" {
		attrs = append(attrs, semconv.ServiceInstanceID(cfg.InstanceID))
	}
	// resource.Default holds OTEL_RESOURCE_ATTRIBUTES; the service's own
	// attributes come last and win.
	res, err := resource.Merge(resource.Default(), resource.NewWithAttributes(semconv.SchemaURL, attrs...))
	if err != nil {
		return nil, fmt.Errorf("error building the trace resource: %w", err)
	}
	opts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res), sdktrace.WithSampler(Sampler(cfg.Sampler))}
	for _, name := range cfg.Exporters {
		switch name {
		case ExporterConsole:
			w := cfg.Console
			if w == nil {
				w = os.Stderr
			}
			exp, err := stdouttrace.New(stdouttrace.WithWriter(w))
			if err != nil {
				return nil, fmt.Errorf("error creating the console span exporter: %w", err)
			}
			opts = append(opts, sdktrace.WithSyncer(exp))
		case ExporterOTLP:
			exp, err := otlptracehttp.New(ctx)
			if err != nil {
				return nil, fmt.Errorf("error creating the OTLP span exporter: %w", err)
			}
			opts = append(opts, sdktrace.WithBatcher(exp))
		}
	}
	return sdktrace.NewTracerProvider(opts...), nil
}

// LogErrors sends the OpenTelemetry SDK's own errors (an unreachable
// collector, a sampler variable it cannot read) to logger instead of the
// standard logger. The SDK's error handler is process-wide: the last
// service to call this gets them.
func LogErrors(logger *slog.Logger) {
	otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
		logger.Warn("tracing error", slog.String("error", err.Error()))
	}))
	// The SDK's own diagnostics too, which would go to stderr past the
	// log's redaction otherwise.
	otel.SetLogger(logr.FromSlogHandler(logger.Handler()))
}

// LogHandler wraps h so that every line logged with a context holding a
// span carries trace_id and span_id: a log line leads to its trace, and a
// trace to its log lines. (Under a WithGroup logger they sit in its group,
// as every attribute does; the service's loggers have no groups.)
func LogHandler(h slog.Handler) slog.Handler { return logHandler{h} }

type logHandler struct{ slog.Handler }

// Handle adds the span's ids to the record.
func (h logHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return h.Handler.Handle(ctx, r)
}

// WithAttrs keeps the wrapper around the derived handler.
func (h logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return logHandler{h.Handler.WithAttrs(attrs)}
}

// WithGroup keeps the wrapper around the derived handler.
func (h logHandler) WithGroup(name string) slog.Handler { return logHandler{h.Handler.WithGroup(name)} }
