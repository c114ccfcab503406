package workers

import (
	"net"
	"net/http"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/internal/webhook/destination"
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

// Timeouts bound the phases of one webhook POST, inside its total
// (DeliverWebhookWorker.RequestTimeout, BPC_WEBHOOK_TIMEOUT_MS). Without
// them a receiver that accepts connections and never answers — a tarpit —
// holds a shared webhook worker for the whole total on every attempt; with
// them it holds it at most Connect, or ResponseHeader once connected.
type Timeouts struct {
	// Connect bounds the TCP connection and, separately, the TLS handshake
	// (BPC_WEBHOOK_CONNECT_TIMEOUT_MS).
	Connect time.Duration
	// ResponseHeader bounds the wait for the response's headers once the
	// request is written (BPC_WEBHOOK_RESPONSE_HEADER_TIMEOUT_MS).
	ResponseHeader time.Duration
}

// DefaultTimeouts are SPEC §15's: connect 5 s, response headers 10 s.
var DefaultTimeouts = Timeouts{Connect: 5 * time.Second, ResponseHeader: 10 * time.Second}

// orDefaults fills zero fields from DefaultTimeouts.
func (t Timeouts) orDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultTimeouts.Connect
	}
	if t.ResponseHeader <= 0 {
		t.ResponseHeader = DefaultTimeouts.ResponseHeader
	}
	return t
}

// NewWebhookHTTPClient returns the client webhooks are sent with. Every
// connection is dialed through the destination policy, whose Control hook
// judges the resolved address before connecting, within t.Connect; the
// response's headers must arrive within t.ResponseHeader (zero fields:
// DefaultTimeouts). No proxy is used, even if HTTP(S)_PROXY is set: the
// proxy would resolve and connect for us, out of the hook's sight, and
// could reach what the policy refuses. Redirects are not followed: a
// redirect could carry the signed body elsewhere, including to an internal
// address; the worker records the 3xx as WEBHOOK_3XX.
func NewWebhookHTTPClient(policy *destination.Policy, t Timeouts) *http.Client {
	t = t.orDefaults()
	dialer := policy.Dialer(net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second})
	return &http.Client{
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           policy.DialContext(dialer),
			MaxIdleConns:          100,
			MaxIdleConnsPerHost:   10,
			IdleConnTimeout:       90 * time.Second,
			TLSHandshakeTimeout:   t.Connect,
			ResponseHeaderTimeout: t.ResponseHeader,
		},
	}
}
