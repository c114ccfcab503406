package api

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/bpc-platform/bpc/internal/tracing"
)

// okHandler answers 204 so that a test can tell "let through" from a rejection.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

// Every 401 is UNAUTHORIZED and says what is wrong: no header, not the
// Bearer scheme, no token, or a token that is unknown (or revoked: the
// message does not tell which, nor whose).
func TestRequireBearer(t *testing.T) {
	t.Parallel()
	const (
		missing = "the Authorization header is missing: "
		scheme  = "the Authorization header does not use the Bearer scheme: "
		empty   = "the Authorization header's bearer token is empty: "
		unknown = "the bearer token is unknown or revoked"
	)
	tests := []struct {
		name          string
		authorization []string
		want          int
		message       string
	}{
		{"missing header", nil, http.StatusUnauthorized, missing},
		{"wrong scheme", []string{"Basic " + testAdminToken}, http.StatusUnauthorized, scheme},
		{"no scheme", []string{testAdminToken}, http.StatusUnauthorized, scheme},
		{"scheme only", []string{"Bearer"}, http.StatusUnauthorized, empty},
		{"empty token", []string{"Bearer "}, http.StatusUnauthorized, empty},
		{"wrong token", []string{"Bearer not-the-admin-token-000"}, http.StatusUnauthorized, unknown},
		{"token prefix", []string{"Bearer " + testAdminToken[:len(testAdminToken)-1]}, http.StatusUnauthorized, unknown},
		{"token with suffix", []string{"Bearer " + testAdminToken + "x"}, http.StatusUnauthorized, unknown},
		{"right token", []string{"Bearer " + testAdminToken}, http.StatusNoContent, ""},
		{"scheme is case-insensitive", []string{"bearer " + testAdminToken}, http.StatusNoContent, ""},
	}
	s := newTestServer()
	h := s.correlate(s.authenticate(okHandler))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
			for _, a := range tt.authorization {
				r.Header.Add("Authorization", a)
			}
			rec := requireGuarded(t, h, r, tt.want, `Bearer realm="bpc"`)
			if tt.want == http.StatusUnauthorized {
				msg := readEnvelope(t, rec).Error.Message
				require.True(t, strings.HasPrefix(msg, tt.message), "%q", msg)
				if tt.message != unknown {
					require.Contains(t, msg, `send "Authorization: Bearer <token>"`)
				}
			}
		})
	}
}

// requireGuarded serves r through the guard h and requires want; a 401 must
// carry the challenge and the error envelope with the request's correlation
// id, and must not echo the token.
func requireGuarded(t *testing.T, h http.Handler, r *http.Request, want int, challenge string) *httptest.ResponseRecorder {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	require.Equal(t, want, rec.Code)
	if want != http.StatusUnauthorized {
		return rec
	}
	require.Equal(t, challenge, rec.Header().Get("WWW-Authenticate"))
	env := readEnvelope(t, rec)
	require.Equal(t, "UNAUTHORIZED", env.Error.Code)
	require.NotEmpty(t, *env.Error.CorrelationID)
	require.Equal(t, rec.Header().Get(HeaderCorrelationID), *env.Error.CorrelationID)
	require.NotContains(t, rec.Body.String(), testAdminToken)
	return rec
}

func TestAuthenticateWithoutConfiguredTokenDeniesEverything(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Config.AdminToken = ""
	for _, auth := range []string{"", "Bearer ", "Bearer  ", "Bearer x"} {
		r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
		r.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		s.authenticate(okHandler).ServeHTTP(rec, r)
		require.Equal(t, http.StatusUnauthorized, rec.Code, "%q", auth)
	}
}

func TestRequireBasic(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		setup func(r *http.Request)
		want  int
	}{
		{"missing header", func(*http.Request) {}, http.StatusUnauthorized},
		{"bearer instead of basic", func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testAdminToken) }, http.StatusUnauthorized},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("admin", "wrong-password-0000000") }, http.StatusUnauthorized},
		{"token as user name", func(r *http.Request) { r.SetBasicAuth(testAdminToken, "") }, http.StatusUnauthorized},
		{"right password, any user", func(r *http.Request) { r.SetBasicAuth("alice", testAdminToken) }, http.StatusNoContent},
		{"right password, empty user", func(r *http.Request) { r.SetBasicAuth("", testAdminToken) }, http.StatusNoContent},
	}
	s := newTestServer()
	h := s.correlate(s.requireBasic(okHandler))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/riverui/", nil)
			tt.setup(r)
			requireGuarded(t, h, r, tt.want, `Basic realm="bpc river ui", charset="UTF-8"`)
		})
	}
}

func TestCorrelateEchoesWellFormedID(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	for _, id := range []string{"req-123", "a", "trace:9f.8e_7d-6c", strings.Repeat("x", 128), uuid.NewString()} {
		var seen string
		h := s.correlate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { seen = correlationID(r.Context()) }))
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		r.Header.Set(HeaderCorrelationID, id)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		require.Equal(t, id, rec.Header().Get(HeaderCorrelationID))
		require.Equal(t, id, seen, "handlers see the same id")
	}
}

func TestCorrelateReplacesMalformedID(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	for _, id := range []string{"", "has space", strings.Repeat("a", 129), strings.Repeat("a", 200), "line\nbreak", "<script>", "ünïcode"} {
		r := httptest.NewRequest(http.MethodGet, "/", nil)
		if id != "" {
			r.Header[HeaderCorrelationID] = []string{id}
		}
		rec := httptest.NewRecorder()
		s.correlate(okHandler).ServeHTTP(rec, r)
		got := rec.Header().Get(HeaderCorrelationID)
		require.NotEqual(t, id, got)
		_, err := uuid.Parse(got)
		require.NoError(t, err, "a fresh uuid replaces %q, got %q", id, got)
	}
}

func TestCorrelateGivesEachRequestItsOwnID(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	ids := map[string]bool{}
	for range 5 {
		rec := httptest.NewRecorder()
		s.correlate(okHandler).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
		ids[rec.Header().Get(HeaderCorrelationID)] = true
	}
	require.Len(t, ids, 5)
}

func TestLimitBodyRejectsDeclaredOversizeBody(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Config.MaxBodyBytes = 16
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(strings.Repeat("x", 17)))
	s.correlate(s.limitBody(okHandler)).ServeHTTP(rec, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	env := readEnvelope(t, rec)
	require.Equal(t, "BODY_TOO_LARGE", env.Error.Code)
	require.Equal(t, float64(16), env.Error.Details["limit_bytes"])
}

func TestRecovererTurnsPanicInto500Envelope(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	rec := httptest.NewRecorder()
	h := s.correlate(s.recoverer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("secret-panic-value") })))
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.NotContains(t, rec.Body.String(), "secret-panic-value")
	require.Equal(t, "INTERNAL_ERROR", readEnvelope(t, rec).Error.Code)
}

// riverUIStub stands in for River UI: an HTML page, and 204 for its JSON
// API (not 200, so that the audit does not look jobs up in a store).
type riverUIStub struct{ calls atomic.Int64 }

func (u *riverUIStub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.calls.Add(1)
	if strings.HasPrefix(r.URL.Path, "/riverui/api/") {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_, _ = w.Write([]byte("<!doctype html><title>River</title>"))
}

func newUIHandler(t testing.TB) (http.Handler, *riverUIStub, *prometheus.Registry) {
	s := newTestServer()
	s.Admin = true
	reg := prometheus.NewRegistry()
	s.Gatherer = reg
	s.Metrics = NewMetrics(reg)
	stub := &riverUIStub{}
	s.RiverUI = stub
	s.Ready = []ReadyCheck{{Name: "database", Check: func(context.Context) error { return nil }}}
	return checked(t, s), stub, reg
}

func TestEveryResponseCarriesSecurityHeaders(t *testing.T) {
	t.Parallel()
	h, _, _ := newUIHandler(t)
	basic := func(r *http.Request) { r.SetBasicAuth("", testAdminToken) }
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+testAdminToken) }
	none := func(*http.Request) {}
	for _, tt := range []struct {
		method, path string
		auth         func(*http.Request)
		status       int
		noStore      bool
	}{
		{http.MethodGet, "/v1/health/live", none, 200, true},
		{http.MethodGet, "/v1/metrics", bearer, 200, true},
		{http.MethodGet, "/v1/jobs", none, 401, true},
		{http.MethodGet, "/v1/nothing", bearer, 404, true},
		{http.MethodDelete, "/v1/health/live", none, 405, true},
		{http.MethodGet, "/riverui/", basic, 200, false},
		{http.MethodGet, "/riverui/", none, 401, true}, // an error: never cached, even where pages may be
		{http.MethodPost, "/riverui/api/jobs/cancel", basic, 204, true},
		{http.MethodPost, "/v1/tenants", func(r *http.Request) { bearer(r); r.Header.Set("Origin", "https://evil.example") }, 403, true},
	} {
		r := httptest.NewRequest(tt.method, tt.path, strings.NewReader("{}"))
		tt.auth(r)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		require.Equal(t, tt.status, rec.Code, "%s %s", tt.method, tt.path)
		hdr := rec.Header()
		require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"), tt.path)
		require.Equal(t, "DENY", hdr.Get("X-Frame-Options"), tt.path)
		require.Contains(t, hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'", tt.path)
		require.Equal(t, "no-referrer", hdr.Get("Referrer-Policy"), tt.path)
		if tt.noStore {
			require.Equal(t, "no-store", hdr.Get("Cache-Control"), tt.path)
		} else {
			require.Empty(t, hdr.Get("Cache-Control"), "River UI's page and assets may be cached: %s", tt.path)
		}
	}
}

func TestCrossOriginStateChangesAreRefused(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		method  string
		headers map[string]string
		want    int
	}{
		{"attacker page, text/plain, no Fetch metadata", http.MethodPost,
			map[string]string{"Origin": "https://evil.example", "Content-Type": "text/plain"}, 403},
		{"attacker page, Fetch metadata", http.MethodPost,
			map[string]string{"Origin": "https://evil.example", "Sec-Fetch-Site": "cross-site"}, 403},
		{"sibling subdomain", http.MethodPost,
			map[string]string{"Origin": "https://x.example.com", "Sec-Fetch-Site": "same-site"}, 403},
		{"sandboxed frame (Origin null)", http.MethodPost, map[string]string{"Origin": "null"}, 403},
		{"other port is another origin", http.MethodPut, map[string]string{"Origin": "http://example.com:8081"}, 403},
		{"cross-site DELETE", http.MethodDelete, map[string]string{"Sec-Fetch-Site": "cross-site"}, 403},
		{"River UI's own page", http.MethodPost,
			map[string]string{"Origin": "http://example.com", "Sec-Fetch-Site": "same-origin", "Content-Type": "text/plain;charset=UTF-8"}, 204},
		{"own origin, older browser", http.MethodPost, map[string]string{"Origin": "http://example.com"}, 204},
		{"curl (no browser headers)", http.MethodPost, map[string]string{"Content-Type": "application/json"}, 204},
		{"cross-site GET only reads", http.MethodGet, map[string]string{"Sec-Fetch-Site": "cross-site"}, 204},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, stub, _ := newUIHandler(t)
			r := httptest.NewRequest(tt.method, "/riverui/api/jobs/cancel", strings.NewReader(`{"ids":["1"]}`))
			r.SetBasicAuth("", testAdminToken)
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			require.Equal(t, tt.want, rec.Code, rec.Body.String())
			if tt.want != http.StatusForbidden {
				require.EqualValues(t, 1, stub.calls.Load())
				return
			}
			require.Zero(t, stub.calls.Load(), "River UI never sees a refused request")
			env := readEnvelope(t, rec)
			require.Equal(t, "FORBIDDEN", env.Error.Code)
			require.Contains(t, env.Error.Message, "cross-origin")
		})
	}
}

func TestCrossOriginCheckCoversTheAdminAPI(t *testing.T) {
	t.Parallel()
	h, _, _ := newUIHandler(t)
	r := httptest.NewRequest(http.MethodPost, "/v1/tenants", strings.NewReader(`{"slug":"x","name":"x"}`))
	r.Header.Set("Authorization", "Bearer "+testAdminToken)
	r.Header.Set("Sec-Fetch-Site", "cross-site")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	require.Equal(t, http.StatusForbidden, rec.Code)
	require.Equal(t, "FORBIDDEN", readEnvelope(t, rec).Error.Code)
}

func TestHeadIsServedWhereverGetIs(t *testing.T) {
	t.Parallel()
	h, _, _ := newUIHandler(t)
	for _, path := range []string{"/v1/health/live", "/v1/health/ready"} {
		rec := serve(h, http.MethodHead, path, "", false)
		require.Equal(t, http.StatusOK, rec.Code, path)
	}
	rec := serve(h, http.MethodHead, "/v1/jobs", "", false)
	require.Equal(t, http.StatusUnauthorized, rec.Code, "HEAD needs the same auth as GET")
}

func TestMethodNotAllowedListsTheAllowedMethods(t *testing.T) {
	t.Parallel()
	h, _, _ := newUIHandler(t)
	for _, tt := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/v1/health/live", "GET, HEAD"},
		{http.MethodPost, "/v1/health/ready", "GET, HEAD"},
		{http.MethodPut, "/v1/tenants", "GET, HEAD, POST"},
		{http.MethodGet, "/v1/jobs/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f/retry", "POST"},
		{http.MethodPost, "/v1/webhook-endpoints/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f", "GET, HEAD, PATCH, DELETE"},
		{"FROBNICATE", "/v1/health/live", "GET, HEAD"},
	} {
		rec := serve(h, tt.method, tt.path, "", true)
		require.Equal(t, http.StatusMethodNotAllowed, rec.Code, "%s %s", tt.method, tt.path)
		require.Equal(t, tt.allow, rec.Header().Get("Allow"), "%s %s", tt.method, tt.path)
		env := readEnvelope(t, rec)
		require.Equal(t, "METHOD_NOT_ALLOWED", env.Error.Code)
		require.Contains(t, env.Error.Message, tt.allow)
	}
	// A method chi has never heard of on a path nothing serves is a 404.
	rec := serve(h, "FROBNICATE", "/v1/nothing", "", true)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Empty(t, rec.Header().Get("Allow"))
}

func TestMetricLabelsStayBoundedUnderRandomRequests(t *testing.T) {
	t.Parallel()
	h, _, reg := newUIHandler(t)
	rng := rand.New(rand.NewPCG(1, 2))
	letters := "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	randWord := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = letters[rng.IntN(len(letters))]
		}
		return string(b)
	}
	methods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"}
	for i := range 500 {
		method := methods[rng.IntN(len(methods))]
		if i%2 == 0 {
			method = randWord(3 + rng.IntN(8))
		}
		path := []string{"/v1/", "/riverui/", "/", "/v1/jobs/", "/v1/health/"}[rng.IntN(5)] + strings.ToLower(randWord(1+rng.IntN(12)))
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Method = method
		if rng.IntN(2) == 0 {
			r.Header.Set("Authorization", "Bearer "+testAdminToken)
		}
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	families, err := reg.Gather()
	require.NoError(t, err)
	allowedMethods := map[string]bool{"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true, "DELETE": true, "OPTIONS": true, "OTHER": true}
	series := 0
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "bpc_http_") {
			continue
		}
		for _, m := range f.GetMetric() {
			series++
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "method":
					require.True(t, allowedMethods[l.GetValue()], "method label %q", l.GetValue())
				case "route":
					v := l.GetValue()
					require.True(t, v == "unmatched" || v == "/riverui/*" || strings.HasPrefix(v, "/v1/"), "route label %q", v)
					require.NotContains(t, v, "frobnicate")
				}
			}
		}
	}
	// 8 methods × a handful of routes × a handful of statuses, however
	// many requests arrive.
	require.Less(t, series, 120, "series after 500 random requests")
}

func TestReadyShowsFailureDetailOnlyToTheAdmin(t *testing.T) {
	t.Parallel()
	logs := &bytes.Buffer{}
	s := newTestServer()
	s.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	s.Gatherer = prometheus.NewRegistry()
	s.Ready = []ReadyCheck{{Name: "database", Check: func(context.Context) error {
		return errors.New("failed to connect to `user=bpc database=bpc`: 10.0.0.5:5432: password=hunter2-leaked")
	}}}
	rec := serve(checked(t, s), http.MethodGet, "/v1/health/ready", "", false)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.JSONEq(t, `{"status":"not ready","checks":[{"name":"database","ok":false}]}`, rec.Body.String())

	rec = serve(checked(t, s), http.MethodGet, "/v1/health/ready", "", true)
	require.Contains(t, rec.Body.String(), "10.0.0.5:5432")
	require.NotContains(t, rec.Body.String(), "hunter2")
	require.Contains(t, logs.String(), "readiness check failed")
	require.NotContains(t, logs.String(), "hunter2")
}

func TestRequestTextPostgresCannotStoreIsNamed(t *testing.T) {
	t.Parallel()
	h, stub, _ := newUIHandler(t)
	for _, tt := range []struct {
		method, target string
		header         [2]string
		basic          bool
		field, msg     string
	}{
		{http.MethodGet, "/v1/jobs?tenant_id=3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f&type=%00", [2]string{}, false, "type", "must not contain a NUL character"},
		{http.MethodGet, "/v1/jobs?status=%FF", [2]string{}, false, "status", "must be valid UTF-8"},
		{http.MethodGet, "/v1/jobs?x%00=1", [2]string{}, false, "query", "must not contain a NUL character"},
		{http.MethodGet, "/v1/jobs/%00", [2]string{}, false, "job_id", "must not contain a NUL character"},
		{http.MethodGet, "/v1/webhook-endpoints/%C3%28", [2]string{}, false, "id", "must be valid UTF-8"},
		{http.MethodPost, "/v1/jobs", [2]string{"Idempotency-Key", "key-\xff"}, false, "Idempotency-Key", "must be valid UTF-8"},
		{http.MethodPut, "/riverui/api/queues/%00/pause", [2]string{}, true, "path", "must not contain a NUL character"},
		{http.MethodGet, "/riverui/api/jobs?kinds=%FE", [2]string{}, true, "kinds", "must be valid UTF-8"},
	} {
		r := httptest.NewRequest(tt.method, tt.target, strings.NewReader("{}"))
		if tt.basic {
			r.SetBasicAuth("", testAdminToken)
		} else {
			r.Header.Set("Authorization", "Bearer "+testAdminToken)
		}
		if tt.header[0] != "" {
			r.Header[tt.header[0]] = []string{tt.header[1]}
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, "%s %s: %s", tt.method, tt.target, rec.Body.String())
		env := readEnvelope(t, rec)
		require.Equal(t, "VALIDATION_ERROR", env.Error.Code)
		require.Equal(t, tt.field, env.Error.Details["field"], tt.target)
		require.Contains(t, env.Error.Message, tt.msg, tt.target)
	}
	require.Zero(t, stub.calls.Load(), "River UI never sees such text")
}

func TestRiverUIBodiesAreLimited(t *testing.T) {
	t.Parallel()
	h, stub, _ := newUIHandler(t)
	r := httptest.NewRequest(http.MethodPatch, "/riverui/api/queues/default", strings.NewReader(`{"x":"`+strings.Repeat("a", 1<<17)+`"}`))
	r.SetBasicAuth("", testAdminToken)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code)
	require.Equal(t, "BODY_TOO_LARGE", readEnvelope(t, rec).Error.Code)
	require.Zero(t, stub.calls.Load())
}

func TestRequestLogBoundsWhatTheCallerChose(t *testing.T) {
	t.Parallel()
	logs := &bytes.Buffer{}
	s := newTestServer()
	s.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	s.Gatherer = prometheus.NewRegistry()
	r := httptest.NewRequest(http.MethodGet, "/"+strings.Repeat("p", 10_000), nil)
	r.Method = strings.Repeat("M", 1000)
	rec := httptest.NewRecorder()
	checked(t, s).ServeHTTP(rec, r)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Less(t, logs.Len(), 1500, "one bounded log line")
	require.Less(t, rec.Body.Len(), 1000, "a bounded error message")
}

// Request spans are named like the metrics label requests: the method, and
// the route pattern once one matched; nothing the caller chose beyond that
// (a path's ids and words, a query string) is in a span. A caller's W3C
// traceparent makes the request part of its trace.
func TestRequestSpansStayBounded(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin = true
	s.RiverUI = &riverUIStub{}
	s.Ready = []ReadyCheck{{Name: "database", Check: func(context.Context) error { return nil }}}
	s.Gatherer = prometheus.NewRegistry()
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	s.Tracer = tp.Tracer("test")
	h := checked(t, s)

	const secret = "query-token-4f9c1a"
	requests := []struct{ method, path, span string }{
		{http.MethodGet, "/v1/docs", "GET /v1/docs"},
		{http.MethodGet, "/v1/openapi.json?token=" + secret, "GET /v1/openapi.json"},
		{"FROBNICATE", "/v1/jobs/frobnicate", "OTHER"},
		{http.MethodGet, "/v1/frobnicate", "GET"},
		{http.MethodGet, "/riverui/frobnicate", "GET /riverui/*"},
		// No store: the handler panics, the recoverer answers 500.
		{http.MethodGet, "/v1/jobs?tenant_id=" + uuid.NewString(), "GET /v1/jobs"},
	}
	for _, req := range requests {
		r := httptest.NewRequest(req.method, req.path, nil)
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	// Probes and scrapes are not traced.
	for _, path := range []string{"/v1/health/live", "/v1/health/ready", "/v1/metrics"} {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
		h.ServeHTTP(httptest.NewRecorder(), r)
	}
	r := httptest.NewRequest(http.MethodGet, "/v1/docs", nil)
	r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")
	h.ServeHTTP(httptest.NewRecorder(), r)

	ended := spans.Ended()[1:] // after checked's GET /v1/openapi.json
	require.Len(t, ended, len(requests)+1)
	for i, span := range ended[:len(requests)] {
		require.Equal(t, requests[i].span, span.Name())
		require.Equal(t, trace.SpanKindServer, span.SpanKind())
		for _, a := range span.Attributes() {
			require.NotContains(t, a.Value.Emit(), "frobnicate", "%s", a.Key)
			require.NotContains(t, a.Value.Emit(), secret, "%s", a.Key)
			require.NotContains(t, a.Value.Emit(), "?", "%s", a.Key)
		}
	}
	require.Equal(t, codes.Error, ended[len(requests)-1].Status().Code, "a 500 is an error")
	require.Equal(t, codes.Unset, ended[0].Status().Code)
	last := ended[len(ended)-1]
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", last.SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", last.Parent().SpanID().String())

	// A public route, which anyone may call, starts a trace of its own
	// whatever traceparent it is sent (sampled or not).
	for _, flags := range []string{"01", "00"} {
		r = httptest.NewRequest(http.MethodGet, "/public/v1/verify?qr=nope", nil)
		r.Header.Set("traceparent", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-"+flags)
		h.ServeHTTP(httptest.NewRecorder(), r)
		all := spans.Ended()
		public := all[len(all)-1]
		require.Equal(t, "GET /public/v1/verify", public.Name())
		require.NotEqual(t, "4bf92f3577b34da6a3ce929d0e0e4736", public.SpanContext().TraceID().String())
		require.False(t, public.Parent().IsValid())
	}
}

// BenchmarkRequestTracing serves a request through the whole router (a 404:
// the error envelope, no store) with tracing off (no Tracer: what a service without
// OTEL_TRACES_EXPORTER runs) and on (every span sampled, none exported).
func BenchmarkRequestTracing(b *testing.B) {
	serve := func(b *testing.B, s *Server) {
		h := s.Handler()
		r := httptest.NewRequest(http.MethodGet, "/v1/frobnicate", nil)
		b.ReportAllocs()
		for b.Loop() {
			h.ServeHTTP(httptest.NewRecorder(), r)
		}
	}
	b.Run("off", func(b *testing.B) { serve(b, newTestServer()) })
	b.Run("on", func(b *testing.B) {
		s := newTestServer()
		tp := sdktrace.NewTracerProvider()
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		s.Tracer = tp.Tracer("bench")
		serve(b, s)
	})
}

// A caller's traceparent may continue its trace but not force sampling:
// under the service's sampler (tracing.Sampler) with a root that samples
// nothing, a request sent with the sampled flag records no span; with one
// that samples everything, a request sent unsampled is recorded, in the
// caller's trace.
func TestTraceparentDoesNotForceSampling(t *testing.T) {
	t.Parallel()
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	serveTraced := func(root sdktrace.Sampler, flags string) []sdktrace.ReadOnlySpan {
		s := newTestServer()
		s.Admin = true
		spans := tracetest.NewSpanRecorder()
		tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.Sampler(root)), sdktrace.WithSpanProcessor(spans))
		t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		s.Tracer = tp.Tracer("test")
		r := httptest.NewRequest(http.MethodGet, "/v1/docs", nil)
		r.Header.Set("traceparent", "00-"+traceID+"-00f067aa0ba902b7-"+flags)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, r)
		require.Equal(t, http.StatusOK, rec.Code)
		return spans.Ended()
	}
	require.Empty(t, serveTraced(sdktrace.NeverSample(), "01"), "the caller's sampled flag recorded a span")
	ended := serveTraced(sdktrace.AlwaysSample(), "00")
	require.Len(t, ended, 1)
	require.Equal(t, traceID, ended[0].SpanContext().TraceID().String(), "the caller's trace continues")
	require.Equal(t, "00f067aa0ba902b7", ended[0].Parent().SpanID().String())
}
