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
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/bpc-platform/bpc/core/errcode"
)

// HeaderCorrelationID carries the request's correlation id in and out.
const HeaderCorrelationID = "X-Correlation-Id"

var correlationIDPattern = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,128}$`)

type ctxKey int

const correlationKey ctxKey = iota

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

// observe logs one line per request and records the HTTP metrics. The path
// is logged without its query string.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec := &statusRecorder{ResponseWriter: w}
		next.ServeHTTP(rec, r)
		if rec.status == 0 {
			rec.status = http.StatusOK
		}
		elapsed := time.Since(start)
		route := chi.RouteContext(r.Context()).RoutePattern()
		if route == "" {
			route = "unmatched"
		}
		if strings.HasPrefix(route, "/riverui") {
			route = "/riverui/*"
		}
		if s.Metrics != nil {
			s.Metrics.Requests.WithLabelValues(r.Method, route, strconv.Itoa(rec.status)).Inc()
			s.Metrics.Duration.WithLabelValues(r.Method, route).Observe(elapsed.Seconds())
		}
		s.Logger.LogAttrs(r.Context(), slog.LevelInfo, "http request",
			slog.String("correlation_id", correlationID(r.Context())),
			slog.String("method", r.Method),
			slog.String("path", r.URL.Path),
			slog.String("route", route),
			slog.Int("status", rec.status),
			slog.Int("bytes", rec.bytes),
			slog.Int64("duration_ms", elapsed.Milliseconds()))
	})
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
					slog.String("panic", fmt.Sprint(p)), slog.String("stack", string(debug.Stack())))
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

// requireBearer guards /v1 with Authorization: Bearer <BPC_ADMIN_TOKEN>.
func (s *Server) requireBearer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		if !ok || !strings.EqualFold(scheme, "Bearer") || !s.tokenMatches(strings.TrimSpace(token)) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="bpc"`)
			s.writeError(w, r, errcode.New(errcode.Unauthorized, "a valid bearer token is required"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// requireBasic guards River UI with HTTP Basic, the admin token as password
// (any user name), so a browser can log in.
func (s *Server) requireBasic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, password, ok := r.BasicAuth()
		if !ok || !s.tokenMatches(password) {
			w.Header().Set("WWW-Authenticate", `Basic realm="bpc river ui", charset="UTF-8"`)
			s.writeError(w, r, errcode.New(errcode.Unauthorized, "log in with any user name and the admin token as password"))
			return
		}
		next.ServeHTTP(w, r)
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
	return errcode.New(errcode.NotFound, "no route for %s %s", r.Method, r.URL.Path)
}

func errMethodNotAllowed(r *http.Request) error {
	return errcode.New(codeMethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path)
}
