package demo

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/apiclient"
)

// fakeService answers readiness with env (none when ""), and the tenant's
// issuer profile with profile (404 when ""); it records every other
// request.
type fakeService struct {
	env, profile string
	mu           sync.Mutex
	writes       []string
}

func (f *fakeService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/v1/health/ready":
		body := map[string]any{"status": "ready", "checks": []any{}}
		if f.env != "" {
			body["environment"] = f.env
		}
		_ = json.NewEncoder(w).Encode(body)
	case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/issuer") && f.profile != "":
		_, _ = io.WriteString(w, f.profile)
	case r.Method == http.MethodGet:
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"NOT_FOUND","message":"no profile","details":{}}}`)
	default:
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.writes = append(f.writes, r.Method+" "+r.URL.Path+" "+string(b))
		f.mu.Unlock()
		_, _ = io.WriteString(w, `{}`)
	}
}

// issuerStage runs the walk's ready and issuer stages against f.
func issuerStage(t *testing.T, f *fakeService) (string, error) {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	c := apiclient.New(srv.URL, "platform-token", "00000000-0000-0000-0000-00000000de00")
	d := &walk{c: c, platform: c}
	ctx := context.Background()
	_, err := d.ready(ctx)
	require.NoError(t, err)
	return d.issuer(ctx)
}

// TestDemoIssuerOnlyInDevOrTest: the demo sets and verifies its made-up
// issuer in dev and test only (verifying the values it set); in prod, or
// when the service does not say its environment, it writes nothing and
// goes on only for a tenant the platform already verified.
func TestDemoIssuerOnlyInDevOrTest(t *testing.T) {
	t.Parallel()
	for _, env := range []string{"dev", "test"} {
		f := &fakeService{env: env}
		res, err := issuerStage(t, f)
		require.NoError(t, err, env)
		require.Contains(t, res, "identity verified by the platform", env)
		require.Len(t, f.writes, 2, env)
		require.True(t, strings.HasPrefix(f.writes[0], "PUT /v1/tenants/00000000-0000-0000-0000-00000000de00/issuer {"), f.writes[0])
		require.True(t, strings.HasPrefix(f.writes[1], "POST /v1/tenants/00000000-0000-0000-0000-00000000de00/issuer/verify {"), f.writes[1])
		require.Contains(t, f.writes[1], `"legal_name":"`+demoIssuerName+`"`, "the verify names the values checked")
	}

	verified := `{"legal_name":"Real Cells AG","country":"AT","registration_id":"ATU1","identity_verified_at":"2026-01-01T00:00:00Z"}`
	unverified := `{"legal_name":"Real Cells AG","country":"AT","registration_id":"ATU1","identity_verified_at":null}`
	for _, tc := range []struct {
		name, env, profile, want string
		ok                       bool
	}{
		{"prod, verified", "prod", verified, "Real Cells AG (AT), verified by the platform, left as it is", true},
		{"prod, not verified", "prod", unverified, "is not verified", false},
		{"prod, no profile", "prod", "", "has no issuer profile", false},
		{"environment not said", "", verified, "left as it is (environment not said by the service)", true},
	} {
		f := &fakeService{env: tc.env, profile: tc.profile}
		res, err := issuerStage(t, f)
		if tc.ok {
			require.NoError(t, err, tc.name)
			require.Contains(t, res, tc.want, tc.name)
		} else {
			require.ErrorContains(t, err, tc.want, tc.name)
			require.ErrorContains(t, err, "only in dev or test", tc.name)
		}
		require.Empty(t, f.writes, "%s: the demo changed nothing", tc.name)
	}
}
