package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// GET /v1 answers without credentials with links, and every link answers
// (none is a 404): the banner and README point people here.
func TestIndexLinksAnswer(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Admin = true
	s.Gatherer = prometheus.NewRegistry()
	s.Ready = []ReadyCheck{{Name: "database", Check: func(context.Context) error { return nil }}}
	s.RiverUI = http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	h := checked(t, s)

	rec := serve(h, http.MethodGet, "/v1", "", false)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.Contains(t, rec.Header().Get("Content-Type"), "json")
	var idx map[string]string
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &idx))
	require.Equal(t, map[string]string{"service": "bpc", "docs": "/v1/docs", "openapi": "/v1/openapi.json",
		"health_live": "/v1/health/live", "health_ready": "/v1/health/ready", "metrics": "/v1/metrics",
		"riverui": "/riverui/"}, idx)
	for name, path := range idx {
		if name == "service" {
			continue
		}
		r := httptest.NewRequest(http.MethodGet, path, nil)
		switch name {
		case "metrics":
			r.Header.Set("Authorization", "Bearer "+testAdminToken)
		case "riverui":
			r.SetBasicAuth("ops", testAdminToken)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		require.Equal(t, http.StatusOK, rec.Code, "%s %s: %s", name, path, rec.Body.String())
	}

	// Not in the document (a redirect, not an operation): served unchecked.
	rec = serve(s.Handler(), http.MethodGet, "/", "", false)
	require.Equal(t, http.StatusFound, rec.Code)
	require.Equal(t, "/v1", rec.Header().Get("Location"))

	// The document lists the index as public: security [].
	rec = serve(h, http.MethodGet, SpecPath, "", false)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
	var op struct {
		Security *[]any `json:"security"`
	}
	require.Contains(t, doc.Paths, "/v1")
	require.NoError(t, json.Unmarshal(doc.Paths["/v1"]["get"], &op))
	require.NotNil(t, op.Security, "security: [] documented")
	require.Empty(t, *op.Security)
}

// A worker serves no River UI, and its index does not name one.
func TestIndexOfAWorkerNamesNoRiverUI(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Gatherer = prometheus.NewRegistry()
	rec := serve(checked(t, s), http.MethodGet, "/v1", "", false)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	var idx map[string]string
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &idx))
	require.NotContains(t, idx, "riverui")
	require.Equal(t, "/v1/docs", idx["docs"])
}
