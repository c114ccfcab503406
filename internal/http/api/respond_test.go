package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/workers"
)

const testAdminToken = "test-admin-token-0123456789"

func newTestServer() *Server {
	return &Server{
		Config: Config{AdminToken: testAdminToken, MaxBodyBytes: 1 << 16, Kinds: workers.Kinds()},
		Logger: slog.New(slog.DiscardHandler),
	}
}

// envelope is the SPEC §4 error response as a client reads it.
type envelope struct {
	Error struct {
		Code          string         `json:"code"`
		Message       string         `json:"message"`
		CorrelationID *string        `json:"correlation_id"`
		Details       map[string]any `json:"details"`
	} `json:"error"`
}

func readEnvelope(t *testing.T, rec *httptest.ResponseRecorder) envelope {
	t.Helper()
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	var env envelope
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &env), "body: %s", rec.Body.String())
	require.NotEmpty(t, env.Error.Code, "body: %s", rec.Body.String())
	require.NotNil(t, env.Error.CorrelationID, "correlation_id must be present")
	require.NotNil(t, env.Error.Details, "details must be an object, never null")
	return env
}

func TestHTTPStatusTable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code errcode.Code
		want int
	}{
		{errcode.Validation, http.StatusUnprocessableEntity},
		{errcode.NotFound, http.StatusNotFound},
		{errcode.IdempotencyConflict, http.StatusConflict},
		{errcode.InvalidState, http.StatusConflict},
		{errcode.EventVersionConflict, http.StatusConflict},
		{errcode.BodyTooLarge, http.StatusRequestEntityTooLarge},
		{errcode.Unauthorized, http.StatusUnauthorized},
		{errcode.Forbidden, http.StatusForbidden},
		{errcode.RateLimited, http.StatusTooManyRequests},
		{errcode.DBUnavailable, http.StatusServiceUnavailable},
		{errcode.QueueUnavailable, http.StatusServiceUnavailable},
		{errcode.Internal, http.StatusInternalServerError},
		{codeMalformedJSON, http.StatusBadRequest},
		{codeMethodNotAllowed, http.StatusMethodNotAllowed},
		// Unlisted codes: permanent ones are state conflicts, retryable ones server errors.
		{errcode.SnapshotNotReady, http.StatusConflict},
		{errcode.RulePkgNotPublished, http.StatusConflict},
		{errcode.Webhook5xx, http.StatusInternalServerError},
	}
	for _, tt := range tests {
		require.Equal(t, tt.want, httpStatus(tt.code), "%s", tt.code)
	}
}

// A count quota is a conflict the tenant resolves (409); the queued-jobs
// quota frees itself as the backlog drains (429 with Retry-After).
func TestQuotaRefusalStatus(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	for _, tc := range []struct {
		err        error
		status     int
		retryAfter string
	}{
		{passport.QuotaExceeded(passport.QuotaAPIKeys, 100, 100), http.StatusConflict, ""},
		{passport.QueuedJobsExceeded(10, 10), http.StatusTooManyRequests, "1"},
		{passport.CheckEventPayload("payload", make([]byte, 11), passport.Quotas{EventPayloadBytes: 10}), http.StatusRequestEntityTooLarge, ""},
	} {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(http.MethodPost, "/v1/jobs", nil)
		s.correlate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { s.writeError(w, r, tc.err) })).ServeHTTP(rec, r)
		require.Equal(t, tc.status, rec.Code, "%v", tc.err)
		require.Equal(t, tc.retryAfter, rec.Header().Get("Retry-After"), "%v", tc.err)
		env := readEnvelope(t, rec)
		require.Equal(t, string(errcode.CodeOf(tc.err)), env.Error.Code)
		require.Equal(t, errcode.As(tc.err).Details["quota"], env.Error.Details["quota"])
	}
}

// PATCH /v1/tenants/{id}'s reset takes exactly the quotas' names.
func TestResetEnumIsTheQuotaNames(t *testing.T) {
	t.Parallel()
	f, ok := reflect.TypeFor[updateTenantQuotasRequest]().FieldByName("Reset")
	require.True(t, ok)
	require.Equal(t, strings.Join(passport.QuotaNames, ","), f.Tag.Get("enum"))
}

// decodeBody checks a request body as every typed operation does
// (checkJSONBody): one JSON object, text Postgres stores.
func decodeBody(body string) (struct{}, error) {
	return struct{}{}, checkJSONBody([]byte(body))
}

// decodeBodyError checks body and requires the typed error it fails with.
func decodeBodyError(t *testing.T, body string) *errcode.Error {
	t.Helper()
	_, err := decodeBody(body)
	e := errcode.As(err)
	require.NotNil(t, e, "typed error expected, got %v", err)
	return e
}

func TestCheckJSONBodyAcceptsOneObject(t *testing.T) {
	t.Parallel()
	_, err := decodeBody(" {\"name\":\"a\",\"count\":3,\"tags\":[\"x\"],\"nested\":{\"inner\":7}}\n")
	require.NoError(t, err)
}

func TestCheckJSONBodyErrors(t *testing.T) {
	t.Parallel()
	for name, body := range map[string]string{
		"malformed":               `{"name":`,
		"syntax error":            `{"name" "a"}`,
		"empty body":              ``,
		"two values":              `{"name":"a"} {}`,
		"object then number":      `{"name":"a"} 5`,
		"trailing garbage":        `{"name":"a"} x`,
		"array instead of object": `[1,2]`,
		"null":                    `null`,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := decodeBodyError(t, body)
			require.Equal(t, codeMalformedJSON, e.Code, e.Error())
			require.Equal(t, http.StatusBadRequest, httpStatus(e.Code), "client mistakes are never 500")
		})
	}
}

func TestCheckJSONBodySecondObjectWithFieldsIsMalformed(t *testing.T) {
	t.Parallel()
	_, err := decodeBody(`{"name":"a"} {"name":"b"}`)
	require.Equal(t, codeMalformedJSON, errcode.CodeOf(err))
	require.Contains(t, err.Error(), "exactly one JSON value")
}

// Members of the wrong JSON type are refused by the schema of the body's
// type, naming the member and the type it must be.
func TestWrongTypeMessageNamesExpectedType(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	const path = "/v1/rule-package-versions/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f/test"
	for body, want := range map[string]string{
		`{"seed":"three"}`:      "seed: must be an integer",
		`{"seed":1.5}`:          "seed: must be an integer",
		`{"tenant_id":false}`:   "tenant_id: must be a string",
		`{"seed":{}}`:           "seed: must be an integer",
		`{"seed":1,"colour":2}`: "colour: unknown field",
	} {
		rec := serve(h, http.MethodPost, path, body, true)
		require.Equal(t, http.StatusUnprocessableEntity, rec.Code, body)
		require.Equal(t, want, readEnvelope(t, rec).Error.Message, body)
	}
	rec := serve(h, http.MethodPost, "/v1/snapshots/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f/items", `{"fact_ids":{}}`, true)
	require.Equal(t, "fact_ids: must be an array", readEnvelope(t, rec).Error.Message)
	rec = serve(h, http.MethodPost, "/v1/jobs:batch", `{"jobs":[{"type":"DELIVER_WEBHOOK","priority":"x"}]}`, true)
	require.Equal(t, "jobs[0].priority: must be an integer", readEnvelope(t, rec).Error.Message)
}

func TestBodyOverLimitIsBodyTooLarge(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	body := `{"name":"` + strings.Repeat("x", 100) + `"}`
	_, err := io.ReadAll(http.MaxBytesReader(rec, io.NopCloser(strings.NewReader(body)), 32))
	e := errcode.As(decodeError(err))
	require.NotNil(t, e)
	require.Equal(t, errcode.BodyTooLarge, e.Code)
	require.Equal(t, int64(32), e.Details["limit_bytes"])
	require.Contains(t, e.Message, "32 bytes")
	require.Equal(t, http.StatusRequestEntityTooLarge, httpStatus(e.Code))
}

func TestWriteErrorClientErrorEnvelope(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
	s.correlate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, fmt.Errorf("handler: %w", errcode.Invalid("tenant_id", "is required")))
	})).ServeHTTP(rec, r)

	require.Equal(t, http.StatusUnprocessableEntity, rec.Code)
	env := readEnvelope(t, rec)
	require.Equal(t, "VALIDATION_ERROR", env.Error.Code)
	require.Equal(t, "tenant_id: is required", env.Error.Message)
	require.Equal(t, "tenant_id", env.Error.Details["field"])
	require.Equal(t, rec.Header().Get(HeaderCorrelationID), *env.Error.CorrelationID)
}

func TestWriteErrorUntypedErrorIsGeneric500WithoutInternals(t *testing.T) {
	t.Parallel()
	logs := &bytes.Buffer{}
	s := newTestServer()
	s.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	secret := "password=hunter2 at postgres://admin:hunter2@db/prod"

	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
	r.Header.Set(HeaderCorrelationID, "corr-500")
	s.correlate(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.writeError(w, r, errors.New(secret))
	})).ServeHTTP(rec, r)

	require.Equal(t, http.StatusInternalServerError, rec.Code)
	require.NotContains(t, rec.Body.String(), "hunter2")
	env := readEnvelope(t, rec)
	require.Equal(t, "INTERNAL_ERROR", env.Error.Code)
	require.Contains(t, env.Error.Message, "correlation id")
	require.Equal(t, "corr-500", *env.Error.CorrelationID)
	require.Empty(t, env.Error.Details)
	// The operator finds the cause in the log by correlation id, without
	// the password.
	require.Contains(t, logs.String(), `"correlation_id":"corr-500"`)
	require.Contains(t, logs.String(), "postgres://admin:[REDACTED]@db/prod")
	require.NotContains(t, logs.String(), "hunter2")
}

func TestWriteErrorTypedServerErrorHidesMessageAndDetails(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	for _, tt := range []struct {
		err    *errcode.Error
		status int
	}{
		{&errcode.Error{Code: errcode.DBUnavailable, Message: "dial tcp 10.0.0.5:5432: secret-host", Details: map[string]any{"host": "10.0.0.5"}}, http.StatusServiceUnavailable},
		{&errcode.Error{Code: errcode.Webhook5xx, Message: "endpoint https://internal.example answered 500", Details: map[string]any{"url": "https://internal.example"}}, http.StatusInternalServerError},
	} {
		rec := httptest.NewRecorder()
		s.writeError(rec, httptest.NewRequest(http.MethodGet, "/", nil), tt.err)
		require.Equal(t, tt.status, rec.Code)
		require.NotContains(t, rec.Body.String(), "10.0.0.5")
		require.NotContains(t, rec.Body.String(), "internal.example")
		env := readEnvelope(t, rec)
		require.Equal(t, string(tt.err.Code), env.Error.Code)
		require.Empty(t, env.Error.Details)
	}
}

func TestWriteErrorDBUnavailableSaysRetryLater(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	rec := httptest.NewRecorder()
	s.writeError(rec, httptest.NewRequest(http.MethodGet, "/", nil), errcode.New(errcode.DBUnavailable, "pool closed"))
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Equal(t, "database unavailable; retry later", readEnvelope(t, rec).Error.Message)
}

func TestWriteJSONDoesNotEscapeHTML(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	writeJSON(rec, http.StatusCreated, map[string]string{"url": "https://x.example/a?b=1&c=<d>"})
	require.Equal(t, http.StatusCreated, rec.Code)
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	require.Equal(t, `{"url":"https://x.example/a?b=1&c=<d>"}`+"\n", string(body))
}

func TestCheckJSONBodyRefusesTextPostgresCannotStore(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		body      string
		wantField string
		wantMsg   string
	}{
		{"NUL escape in a field", `{"name":"a\u0000b"}`, "name", "name: must not contain a NUL character"},
		{"invalid UTF-8 byte in a field", "{\"name\":\"caf\xe9\"}", "name", "name: must be valid UTF-8"},
		{"truncated UTF-8 sequence", "{\"name\":\"\xe2\x82\"}", "name", "name: must be valid UTF-8"},
		{"lone high surrogate", `{"name":"\ud800"}`, "name", "name: must be valid UTF-8"},
		{"lone low surrogate", `{"name":"x\udc00y"}`, "name", "name: must be valid UTF-8"},
		{"high surrogate then other escape", `{"name":"\ud800\u0041"}`, "name", "name: must be valid UTF-8"},
		{"in an array", `{"tags":["ok","\u0000"]}`, "tags[1]", "tags[1]: must not contain a NUL character"},
		{"in a payload member", `{"payload":{"name":"\u0000"}}`, "payload.name", ""},
		{"deep in a payload", `{"payload":{"a":[{"b":1},{"c":["x","y\u0000"]}]}}`, "payload.a[1].c[1]", ""},
		{"payload member name", `{"payload":{"k\u0000":1}}`, "payload", `payload: member name "k\x00" must not contain a NUL character`},
		{"payload member name with a dot", `{"payload":{"a.b":{"c":"\u0000"}}}`, `payload["a.b"].c`, ""},
		{"invalid UTF-8 in a payload", "{\"payload\":{\"n\":\"\xff\"}}", "payload.n", ""},
		{"huge exponent in a payload", `{"payload":{"n":1e131072}}`, "payload.n", "payload.n: number out of range (exponent beyond ±1000)"},
		{"huge negative exponent", `{"payload":{"n":[1E-20000]}}`, "payload.n[0]", ""},
		{"long number", `{"payload":{"n":` + strings.Repeat("9", 1001) + `}}`, "payload.n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := decodeBodyError(t, tt.body)
			require.Equal(t, errcode.Validation, e.Code, e.Error())
			require.Equal(t, tt.wantField, e.Field)
			require.Equal(t, tt.wantField, e.Details["field"])
			if tt.wantMsg != "" {
				require.Equal(t, tt.wantMsg, e.Message)
			}
			require.Equal(t, http.StatusUnprocessableEntity, httpStatus(e.Code))
		})
	}
}

func TestCheckJSONBodyAcceptsTextPostgresStores(t *testing.T) {
	t.Parallel()
	for _, body := range []string{
		`{"name":"caf\u00e9 ☕ \ud83d\ude00","tags":["\\u0000 is only text here","\\ud800 too"]}`,
		"{\"name\":\"\uFFFD sent as such\",\"payload\":{\"\uFFFD\":\"\\ufffd\"}}",
		`{"payload":{"n":[1e1000,-1E-1000,0.5e+3,12345678901234567890]}}`,
		`{"name":"3f2b8c4e-1234-4b7e-9c1f-2a3b4c5d6e7f"}`,
		`{"payload":{"e":"` + strings.Repeat("7", 600) + `"}}`,
	} {
		_, err := decodeBody(body)
		require.NoError(t, err, body)
	}
}
