package api

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"
)

// okHandler answers 204 so that a test can tell "let through" from a rejection.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })

func TestRequireBearer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		authorization string
		want          int
	}{
		{"missing header", "", http.StatusUnauthorized},
		{"wrong scheme", "Basic " + testAdminToken, http.StatusUnauthorized},
		{"scheme only", "Bearer", http.StatusUnauthorized},
		{"empty token", "Bearer ", http.StatusUnauthorized},
		{"wrong token", "Bearer not-the-admin-token-000", http.StatusUnauthorized},
		{"token prefix", "Bearer " + testAdminToken[:len(testAdminToken)-1], http.StatusUnauthorized},
		{"token with suffix", "Bearer " + testAdminToken + "x", http.StatusUnauthorized},
		{"right token", "Bearer " + testAdminToken, http.StatusNoContent},
		{"scheme is case-insensitive", "bearer " + testAdminToken, http.StatusNoContent},
	}
	s := newTestServer()
	h := s.correlate(s.requireBearer(okHandler))
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
			if tt.authorization != "" {
				r.Header.Set("Authorization", tt.authorization)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			require.Equal(t, tt.want, rec.Code)
			if tt.want != http.StatusUnauthorized {
				return
			}
			require.Equal(t, `Bearer realm="bpc"`, rec.Header().Get("WWW-Authenticate"))
			env := readEnvelope(t, rec)
			require.Equal(t, "UNAUTHORIZED", env.Error.Code)
			require.NotEmpty(t, *env.Error.CorrelationID)
			require.Equal(t, rec.Header().Get(HeaderCorrelationID), *env.Error.CorrelationID)
			require.NotContains(t, rec.Body.String(), testAdminToken)
		})
	}
}

func TestRequireBearerWithoutConfiguredTokenDeniesEverything(t *testing.T) {
	t.Parallel()
	s := newTestServer()
	s.Config.AdminToken = ""
	for _, auth := range []string{"", "Bearer ", "Bearer  ", "Bearer x"} {
		r := httptest.NewRequest(http.MethodGet, "/v1/jobs", nil)
		r.Header.Set("Authorization", auth)
		rec := httptest.NewRecorder()
		s.requireBearer(okHandler).ServeHTTP(rec, r)
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
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, r)
			require.Equal(t, tt.want, rec.Code)
			if tt.want != http.StatusUnauthorized {
				return
			}
			require.True(t, strings.HasPrefix(rec.Header().Get("WWW-Authenticate"), `Basic realm=`), rec.Header().Get("WWW-Authenticate"))
			env := readEnvelope(t, rec)
			require.Equal(t, "UNAUTHORIZED", env.Error.Code)
			require.NotEmpty(t, *env.Error.CorrelationID)
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
