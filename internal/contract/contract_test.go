package contract_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/bpc-platform/bpc/internal/contract"
	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/workers"
)

// fakeTB records Errorf instead of failing.
type fakeTB struct {
	testing.TB
	mu   sync.Mutex
	errs []string
}

func (f *fakeTB) Errorf(format string, args ...any) {
	f.mu.Lock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *fakeTB) Helper() {}

// server is the admin API without a database: only its document is used.
func server() http.Handler {
	s := &api.Server{
		Config:   api.Config{AdminToken: "t", MaxBodyBytes: 1 << 20, Kinds: workers.Kinds()},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
		Gatherer: prometheus.NewRegistry(),
		Admin:    true,
	}
	return s.Handler()
}

// Each case breaks one promise of the document; the validator must say so.
func TestValidatorCatchesDrift(t *testing.T) {
	h := server()
	cases := []struct {
		name, path string
		serve      func(w http.ResponseWriter)
		want       string
	}{
		{"enum", "/v1/health/live", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"fine"}`)
		}, "body does not match"},
		{"extra member (additionalProperties false)", "/v1/health/live", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"status":"ok","$schema":"x"}`)
		}, "additional properties"},
		{"undocumented 2xx", "/v1/health/live", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(201)
			_, _ = io.WriteString(w, `{"status":"ok"}`)
		}, "status 201 is not documented"},
		{"content type", "/v1/health/live", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "text/plain")
			_, _ = io.WriteString(w, `ok`)
		}, `Content-Type "text/plain" is not documented`},
		{"envelope without correlation_id", "/v1/health/live", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"error":{"code":"INTERNAL_ERROR","message":"x","details":{}}}`)
		}, "missing property 'correlation_id'"},
		{"empty correlation_id", "/v1/nope", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(500)
			_, _ = io.WriteString(w, `{"error":{"code":"INTERNAL_ERROR","message":"x","correlation_id":"","details":{}}}`)
		}, "minLength"},
		{"details null", "/v1/nope", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(404)
			_, _ = io.WriteString(w, `{"error":{"code":"NOT_FOUND","message":"x","correlation_id":"c","details":null}}`)
		}, "details"},
		{"unknown route answering 200", "/v1/nope", func(w http.ResponseWriter) {
			_, _ = io.WriteString(w, `{}`)
		}, "is not in the document"},
		{"uuid format", "/v1/tenants", func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"items":[{"tenant_id":"nope"}]}`)
		}, "is not valid uuid"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tb := &fakeTB{TB: t}
			v := contract.New(tb, h)
			broken := v.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("X-Correlation-Id", "c-1") // documented on every response; each case breaks one other promise
				c.serve(w)
			}))
			broken.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", c.path, nil))
			if len(tb.errs) != 1 || !strings.Contains(tb.errs[0], c.want) {
				t.Fatalf("want one violation containing %q, got %q", c.want, tb.errs)
			}
			t.Logf("reported:\n%s", tb.errs[0])
		})
	}
}
