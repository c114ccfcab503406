package api

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
	"github.com/stretchr/testify/require"
)

// A typed operation answers the bytes writeJSON writes: one JSON value, a
// newline, HTML characters unescaped.
func TestTypedOperationAnswersWriteJSONBytes(t *testing.T) {
	t.Parallel()
	rec := serve(newAdminHandler(t), http.MethodGet, "/v1/health/live", "", false)
	require.Equal(t, http.StatusOK, rec.Code)
	require.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	require.Equal(t, "{\"status\":\"ok\"}\n", rec.Body.String())
	require.Empty(t, rec.Header().Get("Link"), "no describedBy link")

	want := httptest.NewRecorder()
	writeJSON(want, http.StatusOK, liveResponse{Status: "ok"})
	require.Equal(t, want.Body.String(), rec.Body.String())
}

// Errors Huma itself raises while reading a typed operation's request are
// our envelope with our codes: a chunked body over the limit (which the
// Content-Length check cannot see) is 413 BODY_TOO_LARGE naming the limit,
// as it always was; an empty body is MALFORMED_JSON.
func TestHumaReadErrorsAreTheEnvelope(t *testing.T) {
	t.Parallel()
	h := newAdminHandler(t)
	over := io.MultiReader(strings.NewReader(`{"slug":"`), strings.NewReader(strings.Repeat("a", 1<<17)), strings.NewReader(`"}`))
	r := httptest.NewRequest(http.MethodPost, "/v1/tenants", over)
	r.ContentLength = -1
	r.Header.Set("Authorization", "Bearer "+testAdminToken)
	r.Header.Set(HeaderCorrelationID, "corr-413")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	require.Equal(t, http.StatusRequestEntityTooLarge, rec.Code, rec.Body.String())
	env := readEnvelope(t, rec)
	require.Equal(t, "BODY_TOO_LARGE", env.Error.Code)
	require.Equal(t, "corr-413", *env.Error.CorrelationID)
	require.EqualValues(t, 1<<16, env.Error.Details["limit_bytes"])

	rec = serve(h, http.MethodPost, "/v1/tenants", "", true)
	require.Equal(t, http.StatusBadRequest, rec.Code)
	env = readEnvelope(t, rec)
	require.Equal(t, "MALFORMED_JSON", env.Error.Code)
	require.Equal(t, "request body is empty; a JSON object is required", env.Error.Message)
}

// The error constructors Huma calls are ours: whatever status Huma means,
// the answer is the envelope with a code from our table.
func TestHumaErrorMapping(t *testing.T) {
	t.Parallel()
	for status, code := range map[int]string{
		http.StatusBadRequest:            "MALFORMED_JSON",
		http.StatusUnsupportedMediaType:  "MALFORMED_JSON",
		http.StatusRequestEntityTooLarge: "BODY_TOO_LARGE",
		http.StatusUnprocessableEntity:   "VALIDATION_ERROR",
		http.StatusNotFound:              "NOT_FOUND",
		http.StatusConflict:              "CONFLICT",
		http.StatusTooManyRequests:       "RATE_LIMITED",
		http.StatusServiceUnavailable:    "QUEUE_UNAVAILABLE",
		http.StatusInternalServerError:   "INTERNAL_ERROR",
		http.StatusTeapot:                "INTERNAL_ERROR",
	} {
		e, ok := huma.NewError(status, "x").(*ErrorBody)
		require.True(t, ok)
		require.Equal(t, code, string(e.Err.Code), "HTTP %d", status)
		require.NotNil(t, e.Err.Details)
	}
}
