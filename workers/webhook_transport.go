package workers

import (
	"net/http"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
)

// attrDeliveryID is the span attribute of a webhook request's delivery,
// named as the delivery's log key.
const attrDeliveryID = attribute.Key("bpc.webhook_delivery_id")

// TraceTransport wraps a webhook client's transport: each request is a
// client span in its context's trace and carries that span's W3C
// traceparent header. The span holds the method, the destination's host and
// port and the response status; never the URL's path or query (a tenant's
// URL may hold a token), headers or body.
func TraceTransport(base http.RoundTripper, tp trace.TracerProvider) http.RoundTripper {
	return &traceTransport{base: base, tracer: tp.Tracer("github.com/bpc-platform/bpc/workers")}
}

type traceTransport struct {
	base   http.RoundTripper
	tracer trace.Tracer
}

// RoundTrip implements http.RoundTripper.
func (t *traceTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	attrs := []attribute.KeyValue{semconv.HTTPRequestMethodKey.String(req.Method), semconv.ServerAddress(req.URL.Hostname())}
	if port, err := strconv.Atoi(req.URL.Port()); err == nil {
		attrs = append(attrs, semconv.ServerPort(port))
	}
	if id := req.Header.Get(HeaderDeliveryID); id != "" {
		attrs = append(attrs, attrDeliveryID.String(id))
	}
	ctx, span := t.tracer.Start(req.Context(), req.Method, trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
	defer span.End()
	// A RoundTripper must not change the caller's request.
	req = req.Clone(ctx)
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		span.SetStatus(codes.Error, redactURL(err))
		return resp, err
	}
	span.SetAttributes(semconv.HTTPResponseStatusCode(resp.StatusCode))
	if resp.StatusCode >= 400 {
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(resp.StatusCode))
	}
	return resp, nil
}
