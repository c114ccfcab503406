package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/http/access"
)

// TestReadyDetailOnlyPastAuthentication: the failing check's text is
// shown to the platform token only; without credentials, and with wrong
// ones, the answer names the checks and their states and nothing else. A
// wrong token is refused as on /v1 and meets the failed-credential limit:
// 300 guesses from one address meet 429, after which even the right token
// learns nothing from that address, while probes without credentials keep
// their answer.
func TestReadyDetailOnlyPastAuthentication(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Config.Env = "test"
	s.Gatherer = prometheus.NewRegistry()
	// Burst 100 at 1/s: the guesses meet the limit however slowly they
	// are sent (the limit, not the machine's speed, decides).
	s.Limits = access.NewLimiter(1, 100)
	const secret = "dial tcp db.internal:5432: password authentication failed for user bpc"
	s.Ready = []ReadyCheck{
		{Name: "database", Check: func(context.Context) error { return nil }},
		{Name: "migrations", Check: func(context.Context) error { return errors.New(secret) }},
	}
	h := checked(t, s)
	ready := func(addr, authorization string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, "/v1/health/ready", nil)
		r.RemoteAddr = addr + ":40000"
		if authorization != "" {
			r.Header.Set("Authorization", authorization)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		return rec
	}
	requireStatesOnly := func(rec *httptest.ResponseRecorder, what string) {
		t.Helper()
		require.Equal(t, http.StatusServiceUnavailable, rec.Code, what)
		require.JSONEq(t, `{"status":"not ready","checks":[{"name":"database","ok":true},{"name":"migrations","ok":false}]}`,
			rec.Body.String(), what)
	}

	requireStatesOnly(ready("198.51.100.1", ""), "no credentials (the probes')")

	rec := ready("198.51.100.2", "Bearer wrong-token")
	require.Equal(t, http.StatusUnauthorized, rec.Code)
	require.Equal(t, "UNAUTHORIZED", readEnvelope(t, rec).Error.Code)
	require.NotContains(t, rec.Body.String(), "db.internal")
	guess := "Bearer bpc_" + "aaaaaaaaaaaaaaaa" + "_" + "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	rec = ready("198.51.100.2", guess)
	require.Equal(t, http.StatusUnauthorized, rec.Code, "a key-shaped guess (no keyring: the platform's path)")

	rec = ready("198.51.100.3", "Bearer "+testAdminToken)
	require.Equal(t, http.StatusServiceUnavailable, rec.Code)
	require.Contains(t, rec.Body.String(), `"detail":"`+secret+`"`, "the platform token sees why")
	require.Contains(t, rec.Body.String(), `"environment":"test"`, "and the environment")

	// 300 wrong tokens from one address: 401 until the address is over its
	// rate, then 429 with Retry-After; never the detail.
	statuses := map[int]int{}
	for i := range 300 {
		rec := ready("203.0.113.9", fmt.Sprintf("Bearer wrong-token-%03d", i))
		statuses[rec.Code]++
		require.NotContains(t, rec.Body.String(), "db.internal")
		if rec.Code == http.StatusTooManyRequests {
			require.Equal(t, "RATE_LIMITED", readEnvelope(t, rec).Error.Code)
			require.NotEmpty(t, rec.Header().Get("Retry-After"))
		}
	}
	require.Equal(t, 300, statuses[http.StatusUnauthorized]+statuses[http.StatusTooManyRequests], "%v", statuses)
	require.Positive(t, statuses[http.StatusTooManyRequests], "300 wrong tokens meet 429: %v", statuses)
	require.LessOrEqual(t, statuses[http.StatusUnauthorized], 200, "at most the burst and what refilled meanwhile: %v", statuses)

	rec = ready("203.0.113.9", "Bearer "+testAdminToken)
	require.Equal(t, http.StatusTooManyRequests, rec.Code, "a throttled address learns nothing from the right token")
	require.NotContains(t, rec.Body.String(), "db.internal")
	requireStatesOnly(ready("203.0.113.9", ""), "a probe from the throttled address still gets its answer")
}
