package api

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/contract"
)

// These requests are all answered before the store is reached, so the
// server runs without a database (Store is nil).
func newAdminHandler(t testing.TB) http.Handler {
	s := newTestServer()
	s.Admin = true
	s.Gatherer = prometheus.NewRegistry()
	s.Ready = []ReadyCheck{
		{Name: "database", Check: func(context.Context) error { return nil }},
	}
	return checked(t, s)
}

// checked is s's handler with every response validated against the
// OpenAPI document the handler serves (internal/contract).
func checked(t testing.TB, s *Server) http.Handler {
	h := s.Handler()
	return contract.New(t, h).Ignore("/riverui").Wrap(h)
}

func serve(h http.Handler, method, path, body string, authorized bool) *httptest.ResponseRecorder {
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	if authorized {
		r.Header.Set("Authorization", "Bearer "+testAdminToken)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	return rec
}

func TestHealthNeedsNoAuth(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	rec := serve(h, http.MethodGet, "/v1/health/live", "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	require.JSONEq(t, `{"status":"ok"}`, rec.Body.String())
	require.NotEmpty(t, rec.Header().Get(HeaderCorrelationID))

	rec = serve(h, http.MethodGet, "/v1/health/ready", "", false)
	require.Equal(t, http.StatusOK, rec.Code)
}

func TestReadyNamesTheFailingCheck(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Gatherer = prometheus.NewRegistry()
	s.Ready = []ReadyCheck{
		{Name: "database", Check: func(context.Context) error { return nil }},
		{Name: "migrations", Check: func(context.Context) error { return errors.New("2 migrations pending") }},
	}
	// The failure's text is the operator's: it needs the admin token.
	rec := serve(checked(t, s), http.MethodGet, "/v1/health/ready", "", true)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	var body struct {
		Status string `json:"status"`
		Checks []struct {
			Name   string `json:"name"`
			OK     bool   `json:"ok"`
			Detail string `json:"detail"`
		} `json:"checks"`
	}
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body))
	require.Equal(t, "not ready", body.Status)
	require.Len(t, body.Checks, 2)
	require.True(t, body.Checks[0].OK)
	require.Equal(t, "migrations", body.Checks[1].Name)
	require.False(t, body.Checks[1].OK)
	require.Equal(t, "2 migrations pending", body.Checks[1].Detail)
}

func TestAdminRoutesNeedBearerToken(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for _, route := range []struct{ method, path string }{
		{http.MethodGet, "/v1/jobs?tenant_id=00000000-0000-0000-0000-00000000de00"},
		{http.MethodPost, "/v1/jobs"},
		{http.MethodPost, "/v1/tenants"},
		{http.MethodGet, "/v1/metrics"},
		{http.MethodPost, "/v1/events"},
	} {
		rec := serve(h, route.method, route.path, `{}`, false)
		require.Equal(t, http.StatusUnauthorized, rec.Code, "%s %s", route.method, route.path)
		require.Equal(t, "UNAUTHORIZED", readEnvelope(t, rec).Error.Code)
	}
}

func TestUnknownRouteAndMethodUseTheEnvelope(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	rec := serve(h, http.MethodGet, "/v1/nothing-here", "", true)
	require.Equal(t, http.StatusNotFound, rec.Code)
	require.Equal(t, "NOT_FOUND", readEnvelope(t, rec).Error.Code)

	rec = serve(h, http.MethodDelete, "/v1/health/live", "", true)
	require.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	require.Equal(t, "METHOD_NOT_ALLOWED", readEnvelope(t, rec).Error.Code)
}

func TestEnqueueValidationNamesTheField(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	const dev = `"tenant_id":"00000000-0000-0000-0000-00000000de00"`
	tests := []struct {
		name      string
		path      string
		body      string
		wantCode  string
		wantField string
		status    int
	}{
		{"malformed JSON", "/v1/jobs", `{"type":`, "MALFORMED_JSON", "", 400},
		{"unknown top-level field", "/v1/jobs", `{` + dev + `,"type":"DELIVER_WEBHOOK","colour":1}`, "VALIDATION_ERROR", "colour", 422},
		{"missing tenant", "/v1/jobs", `{"type":"DELIVER_WEBHOOK"}`, "VALIDATION_ERROR", "tenant_id", 422},
		{"nil tenant", "/v1/jobs", `{"tenant_id":"00000000-0000-0000-0000-000000000000","type":"DELIVER_WEBHOOK"}`, "VALIDATION_ERROR", "tenant_id", 422},
		{"missing type", "/v1/jobs", `{` + dev + `}`, "VALIDATION_ERROR", "type", 422},
		{"unknown type", "/v1/jobs", `{` + dev + `,"type":"MAKE_COFFEE"}`, "VALIDATION_ERROR", "type", 422},
		{"priority out of range", "/v1/jobs", `{` + dev + `,"type":"DELIVER_WEBHOOK","priority":4}`, "VALIDATION_ERROR", "priority", 422},
		{"max_attempts zero", "/v1/jobs", `{` + dev + `,"type":"DELIVER_WEBHOOK","max_attempts":0}`, "VALIDATION_ERROR", "max_attempts", 422},
		{"priority wrong type", "/v1/jobs", `{` + dev + `,"type":"DELIVER_WEBHOOK","priority":"high"}`, "VALIDATION_ERROR", "priority", 422},
		{"bad payload field", "/v1/jobs", `{` + dev + `,"type":"DELIVER_WEBHOOK","payload":{"webhook_delivery_id":"nope"}}`, "VALIDATION_ERROR", "payload.webhook_delivery_id", 422},
		{"content_ref upwards", "/v1/jobs", `{` + dev + `,"type":"INGEST_DOCUMENT","payload":{"document_id":"11111111-1111-4111-8111-111111111111","mime_type":"application/json","content_ref":"../x"}}`, "VALIDATION_ERROR", "payload.content_ref", 422},
		{"content_ref absolute", "/v1/jobs", `{` + dev + `,"type":"INGEST_DOCUMENT","payload":{"document_id":"11111111-1111-4111-8111-111111111111","mime_type":"application/json","content_ref":"/etc/passwd"}}`, "VALIDATION_ERROR", "payload.content_ref", 422},
		{"empty batch", "/v1/jobs:batch", `{"jobs":[]}`, "VALIDATION_ERROR", "jobs", 422},
		{"batch item is prefixed", "/v1/jobs:batch",
			`{"jobs":[{` + dev + `,"type":"DELIVER_WEBHOOK","payload":{"webhook_delivery_id":"11111111-1111-4111-8111-111111111111"}},{` + dev + `,"type":"DELIVER_WEBHOOK","payload":{}}]}`,
			"VALIDATION_ERROR", "jobs[1].payload.webhook_delivery_id", 422},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := serve(h, http.MethodPost, tt.path, tt.body, true)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
			env := readEnvelope(t, rec)
			require.Equal(t, tt.wantCode, env.Error.Code)
			if tt.wantField != "" {
				require.Equal(t, tt.wantField, env.Error.Details["field"], env.Error.Message)
			}
		})
	}
}

// requireInvalid requires a 422 whose envelope names field.
func requireInvalid(t *testing.T, rec *httptest.ResponseRecorder, field string, msgAndArgs ...any) {
	t.Helper()
	require.Equal(t, http.StatusUnprocessableEntity, rec.Code, msgAndArgs...)
	require.Equal(t, field, readEnvelope(t, rec).Error.Details["field"], msgAndArgs...)
}

func TestEnqueueIdempotencyHeaderMustMatchBody(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/v1/jobs", strings.NewReader(
		`{"tenant_id":"00000000-0000-0000-0000-00000000de00","type":"DELIVER_WEBHOOK","idempotency_key":"a"}`))
	r.Header.Set("Authorization", "Bearer "+testAdminToken)
	r.Header.Set(HeaderIdempotencyKey, "b")
	rec := httptest.NewRecorder()
	newAdminHandler(t).ServeHTTP(rec, r)
	requireInvalid(t, rec, "idempotency_key")
}

func TestListJobsQueryValidation(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	const dev = "tenant_id=00000000-0000-0000-0000-00000000de00"
	for _, tt := range []struct{ query, field string }{
		{"tenant_id=abc", "tenant_id"},
		{dev + "&created_after=yesterday", "created_after"},
		{dev + "&created_before=2026-11-27", "created_before"},
		{dev + "&stauts=DEAD_LETTER", "stauts"},
		{"tenant=" + dev[len("tenant_id="):], "tenant"},
		{dev + "&type=NOPE", "type"},
		{dev + "&status=queued", "status"},
		{dev + "&limit=0", "limit"},
		{dev + "&limit=501", "limit"},
		{dev + "&limit=ten", "limit"},
	} {
		rec := serve(h, http.MethodGet, "/v1/jobs?"+tt.query, "", true)
		requireInvalid(t, rec, tt.field, tt.query)
	}
}

func TestGetJobPathAndWaitValidation(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	const dev = "tenant_id=00000000-0000-0000-0000-00000000de00"
	rec := serve(h, http.MethodGet, "/v1/jobs/not-a-uuid?"+dev, "", true)
	requireInvalid(t, rec, "job_id")

	rec = serve(h, http.MethodGet, "/v1/jobs/11111111-1111-4111-8111-111111111111?waitMs=30001&"+dev, "", true)
	requireInvalid(t, rec, "waitMs")
}

func TestCreateTenantValidation(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	for _, tt := range []struct{ body, field string }{
		{`{"slug":"Acme","name":"Acme"}`, "slug"},
		{`{"slug":"-acme","name":"Acme"}`, "slug"},
		{`{"slug":"acme","name":"   "}`, "name"},
		{`{"slug":"acme","name":"` + strings.Repeat("n", 201) + `"}`, "name"},
	} {
		rec := serve(h, http.MethodPost, "/v1/tenants", tt.body, true)
		requireInvalid(t, rec, tt.field, tt.body)
	}
}
