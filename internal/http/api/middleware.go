package api

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/redact"
	"github.com/bpc-platform/bpc/internal/tracing"
)

// HeaderCorrelationID carries the request's correlation id in and out.
const HeaderCorrelationID = "X-Correlation-Id"

var correlationIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type ctxKey int

const (
	correlationKey ctxKey = iota
	actorKey              // *actor: who the request acted for (authenticate)
)

func correlationID(ctx context.Context) string {
	id, _ := ctx.Value(correlationKey).(string)
	return id
}

// correlate takes the caller's X-Correlation-Id when it is well-formed, or
// makes one, and echoes it on the response.
func (s *Server) correlate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(HeaderCorrelationID)
		if !correlationIDPattern.MatchString(id) {
			id = uuid.NewString()
		}
		w.Header().Set(HeaderCorrelationID, id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), correlationKey, id)))
	})
}

// Metrics are the HTTP metrics of SPEC §9.
type Metrics struct {
	Requests *prometheus.CounterVec
	Duration *prometheus.HistogramVec
}

// NewMetrics creates the HTTP metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "bpc_http_requests_total",
			Help: "HTTP requests, by method, route pattern and status code.",
		}, []string{"method", "route", "status"}),
		Duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "bpc_http_request_duration_seconds",
			Help:    "HTTP request duration, by method and route pattern.",
			Buckets: prometheus.DefBuckets,
		}, []string{"method", "route"}),
	}
	reg.MustRegister(m.Requests, m.Duration)
	return m
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	bytes  int
}

func (r *statusRecorder) WriteHeader(status int) {
	if r.status == 0 {
		r.status = status
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += n
	return n, err
}

// Flush lets River UI and long responses stream.
func (r *statusRecorder) Flush() {
	if f, ok := r.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap exposes the writer to http.ResponseController.
func (r *statusRecorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// methodOther is the metric label of every method the service does not
// know: a caller chooses the method, and each label value is a new series.
const methodOther = "OTHER"

// maxLoggedMethod and maxLoggedPath bound what a caller chooses in the
// request log line and in error messages (a request line may be 1 MB).
const (
	maxLoggedMethod = 32
	maxLoggedPath   = 512
)

// methodLabel bounds the method label to the methods the service knows.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions:
		return method
	}
	return methodOther
}

// observe logs one line per request, records the HTTP metrics and, with a
// Tracer, makes the request a span (traced). The path is logged without its query
// string. Labels are bounded: the method by
// methodLabel, the route by the pattern chi matched ("unmatched" for 404s
// and 405s, one label for all of River UI).
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		ctx := r.Context()
		if s.Tracer != nil && traced(r.URL.Path) {
			var span trace.Span
			ctx, span = s.startSpan(ctx, r)
			// Deferred, so that a request whose handler panicked (the
			// recoverer answers 500) ends its span too.
			defer endSpan(span, r, rec)
		}
		who := &actor{}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(ctx, actorKey, who)))
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		elapsed := time.Since(start)
		route := routeLabel(r)
		method := methodLabel(r.Method)
		if s.Metrics != nil {
			s.Metrics.Requests.WithLabelValues(method, route, strconv.Itoa(rec.status)).Inc()
			s.Metrics.Duration.WithLabelValues(method, route).Observe(elapsed.Seconds())
		}
		attrs := []slog.Attr{
			slog.String("correlation_id", correlationID(r.Context())),
			slog.String("method", truncate(r.Method, maxLoggedMethod)),
			slog.String("path", truncate(r.URL.Path, maxLoggedPath)),
			slog.String("route", route),
			slog.Int("status", rec.status),
			slog.Int("bytes", rec.bytes),
			slog.Int64("duration_ms", elapsed.Milliseconds()),
		}
		if p, ok := who.get(); ok {
			attrs = append(attrs, slog.String("principal", p.String()))
		}
		s.Logger.LogAttrs(ctx, slog.LevelInfo, "http request", attrs...)
	})
}

// routeLabel is the route label of a served request: the pattern chi
// matched, "unmatched" for 404s and 405s, one label for all of River UI.
func routeLabel(r *http.Request) string {
	route := chi.RouteContext(r.Context()).RoutePattern()
	if route == "" {
		return "unmatched"
	}
	if strings.HasPrefix(route, "/riverui") {
		return "/riverui/*"
	}
	return route
}

// traced reports whether a request to path gets a span: all but health
// probes and metrics scrapes, which would each start a trace every few
// seconds and bury the traces of the work.
func traced(path string) bool {
	return path != "/v1/metrics" && !strings.HasPrefix(path, "/v1/health/")
}

// startSpan starts the request's server span, in the caller's trace when
// the request carries a W3C traceparent — except on the public routes,
// which anyone may call: there a traceparent would let a stranger choose
// the trace id the log lines carry and whether the request is sampled, so
// each public request starts a trace of its own. Its name is the method
// until the route is known (endSpan).
func (s *Server) startSpan(ctx context.Context, r *http.Request) (context.Context, trace.Span) {
	if !strings.HasPrefix(r.URL.Path, "/public/") {
		ctx = tracing.Untrusted(propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header)))
	}
	return s.Tracer.Start(ctx, methodLabel(r.Method), trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("bpc.correlation_id", correlationID(ctx))))
}

// endSpan names the span after the route pattern and method as the
// metrics label them (bounded: no ids, no query string) and records the
// status, and ends it. A 5xx is an error of the service, a 4xx the
// caller's; no status yet means the handler panicked, which the recoverer
// answers 500.
func endSpan(span trace.Span, r *http.Request, rec *statusRecorder) {
	method, route, status := methodLabel(r.Method), routeLabel(r), rec.status
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if route != "unmatched" {
		span.SetName(method + " " + route)
		span.SetAttributes(semconv.HTTPRoute(route))
	}
	span.SetAttributes(semconv.HTTPRequestMethodKey.String(method), semconv.HTTPResponseStatusCode(status))
	if status >= 500 {
		span.SetStatus(codes.Error, "HTTP "+strconv.Itoa(status))
	}
	span.End()
}

// recoverer turns a handler panic into a 500 envelope.
func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				if p == http.ErrAbortHandler {
					panic(p)
				}
				s.Logger.ErrorContext(r.Context(), "handler panicked",
					slog.String("panic", redact.String(fmt.Sprint(p))), slog.String("stack", string(debug.Stack())))
				s.writeError(w, r, errcode.New(errcode.Internal, "panic: %v", p))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// tokenMatches compares in constant time; hashing first hides the length.
func (s *Server) tokenMatches(given string) bool {
	want := sha256.Sum256([]byte(s.Config.AdminToken))
	got := sha256.Sum256([]byte(given))
	return s.Config.AdminToken != "" && subtle.ConstantTimeCompare(want[:], got[:]) == 1
}

// requireBasic guards River UI with HTTP Basic, the admin token as password
// (any user name), so a browser can log in. Failed passwords are throttled,
// counted and logged per address as /v1's failed tokens are (authenticate).
func (s *Server) requireBasic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, password, ok := r.BasicAuth()
		switch {
		case !ok:
			s.deny(w, r, basicChallenge, deniedMissing, "River UI needs HTTP Basic auth: any user name, the admin token as password")
		case s.throttled(w, r):
		case s.tokenMatches(password):
			next.ServeHTTP(w, r)
		default:
			s.deny(w, r, basicChallenge, deniedPlatform, "the password is not the admin token: log in with any user name and the admin token as password")
		}
	})
}

// limitBody caps request bodies at MaxBodyBytes.
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.Config.MaxBodyBytes {
			s.writeError(w, r, &errcode.Error{Code: errcode.BodyTooLarge,
				Message: fmt.Sprintf("request body exceeds %d bytes", s.Config.MaxBodyBytes),
				Details: map[string]any{"limit_bytes": s.Config.MaxBodyBytes}})
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.Config.MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

func errNotFoundRoute(r *http.Request) error {
	return errcode.New(errcode.NotFound, "no route for %s %s", truncate(r.Method, maxLoggedMethod), truncate(r.URL.Path, maxLoggedPath))
}

// allowedMethods lists the methods the router serves for the request's
// path, HEAD wherever GET is (getHead routes it), in a fixed order.
func allowedMethods(r *http.Request) []string {
	rctx := chi.RouteContext(r.Context())
	if rctx == nil || rctx.Routes == nil {
		return nil
	}
	path := r.URL.RawPath
	if path == "" {
		path = r.URL.Path
	}
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut,
		http.MethodPatch, http.MethodDelete, http.MethodOptions} {
		if rctx.Routes.Match(chi.NewRouteContext(), m, path) ||
			(m == http.MethodHead && slices.Contains(allowed, http.MethodGet)) {
			allowed = append(allowed, m)
		}
	}
	return allowed
}

// methodNotAllowed answers a path the router knows with a method it does
// not serve: 405 with Allow listing the methods it does serve. chi also
// sends methods it has never heard of here, for any path: a path no method
// serves is a 404.
func (s *Server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	allowed := allowedMethods(r)
	if len(allowed) == 0 {
		s.writeError(w, r, errNotFoundRoute(r))
		return
	}
	w.Header().Set("Allow", strings.Join(allowed, ", "))
	s.writeError(w, r, &errcode.Error{Code: codeMethodNotAllowed,
		Message: fmt.Sprintf("method %s is not allowed on %s; allowed: %s", truncate(r.Method, maxLoggedMethod),
			truncate(r.URL.Path, maxLoggedPath), strings.Join(allowed, ", ")),
		Details: map[string]any{"allowed_methods": allowed}})
}

// getHead serves HEAD wherever GET is served, as HTTP requires (load
// balancers probe health with HEAD); the server drops the body.
func getHead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead {
			rctx := chi.RouteContext(r.Context())
			path := r.URL.RawPath
			if path == "" {
				path = r.URL.Path
			}
			if !rctx.Routes.Match(chi.NewRouteContext(), http.MethodHead, path) {
				rctx.RouteMethod = http.MethodGet
			}
		}
		next.ServeHTTP(w, r)
	})
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}

// secureHeaders sets the headers every response of the service carries:
// no MIME sniffing, no framing by any site (clickjacking of River UI's
// buttons), no Referer with ids leaving the service, and no caching of
// authenticated API data by browsers or proxies.
func secureHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		switch {
		case strings.HasPrefix(r.URL.Path, "/v1/"):
			// JSON, PNG and export files: nothing in them may load or run anything.
			h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
			h.Set("Cache-Control", "no-store")
		case strings.HasPrefix(r.URL.Path, "/riverui/api/"):
			h.Set("Content-Security-Policy", "frame-ancestors 'none'")
			h.Set("Cache-Control", "no-store")
		default:
			// River UI's page and assets run its own scripts and styles.
			h.Set("Content-Security-Policy", "frame-ancestors 'none'")
		}
		next.ServeHTTP(w, r)
	})
}

// refuseCrossOrigin answers 403 to a state-changing request (any method but
// GET, HEAD, OPTIONS) that a browser sent from another origin: a
// Sec-Fetch-Site of cross-site or same-site, or without it an Origin whose
// host is not the request's Host (net/http.CrossOriginProtection).
// Browsers resend River UI's cached Basic credentials with such requests,
// and River UI's own pages post text/plain bodies, so neither the
// credentials nor the content type can tell a forged request from a real
// one. Requests without those headers (curl, API clients) pass: they are
// not a browser acting on an operator's behalf.
func (s *Server) refuseCrossOrigin(next http.Handler) http.Handler {
	cop := http.NewCrossOriginProtection()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := cop.Check(r); err != nil {
			s.writeError(w, r, &errcode.Error{Code: errcode.Forbidden,
				Message: "cross-origin request refused: " + r.Method + " must come from this service's own pages",
				Details: map[string]any{"origin": truncate(r.Header.Get("Origin"), 200), "sec_fetch_site": truncate(r.Header.Get("Sec-Fetch-Site"), 50)}})
			return
		}
		next.ServeHTTP(w, r)
	})
}
