package e2e

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
)

// The HTTP hardening as a browser, a load balancer and an attacker see it,
// through the whole service (River UI included).
func TestHTTPHardeningThroughTheService(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	bearer := map[string]string{"Authorization": "Bearer " + testToken}
	basic := basicAuth("operator", testToken)

	t.Run("cross-site River UI cancel is refused, same-origin works", func(t *testing.T) {
		job := h.deliverLater(h.deliverPayload(), time.Now().Add(time.Hour))
		body := fmt.Sprintf(`{"ids":["%d"]}`, job.RiverJobID)
		for name, hdr := range map[string]map[string]string{
			"form-like text/plain from a foreign Origin": {"Content-Type": "text/plain", "Origin": "https://evil.example"},
			"Fetch metadata says cross-site":             {"Content-Type": "text/plain", "Sec-Fetch-Site": "cross-site"},
			"a sibling site":                             {"Content-Type": "application/json", "Sec-Fetch-Site": "same-site", "Origin": "https://ops.example"},
			"JSON from a foreign Origin":                 {"Content-Type": "application/json", "Origin": "https://evil.example"},
		} {
			hdr["Authorization"] = basic
			status, _, raw := h.headers(http.MethodPost, "/riverui/api/jobs/cancel", body, hdr)
			require.Equal(t, http.StatusForbidden, status, "%s: %s", name, raw)
			require.Contains(t, string(raw), `"code":"FORBIDDEN"`)
		}
		require.Equal(t, bpctype.StatusQueued, h.job(job.JobID).Status, "nothing was cancelled")

		// River UI's own page posts text/plain from its own origin.
		status, _, raw := h.headers(http.MethodPost, "/riverui/api/jobs/cancel", body, map[string]string{
			"Authorization": basic, "Content-Type": "text/plain;charset=UTF-8",
			"Origin": h.base, "Sec-Fetch-Site": "same-origin"})
		require.Equal(t, http.StatusOK, status, "%s", raw)
		require.Equal(t, bpctype.StatusCancelled, h.job(job.JobID).Status)
	})

	t.Run("security headers on River UI and the API", func(t *testing.T) {
		status, hdr, page := h.headers(http.MethodGet, "/riverui/", "", map[string]string{"Authorization": basic, "Accept": "text/html"})
		require.Equal(t, http.StatusOK, status)
		require.Contains(t, hdr.Get("Content-Type"), "text/html")
		requireSecurityHeaders(t, hdr, "/riverui/")
		asset := regexp.MustCompile(`/riverui/assets/[^"']+\.js`).FindString(string(page))
		require.NotEmpty(t, asset, "River UI's page names its script")
		status, hdr, _ = h.headers(http.MethodGet, asset, "", map[string]string{"Authorization": basic})
		require.Equal(t, http.StatusOK, status, "River UI's assets still load")
		requireSecurityHeaders(t, hdr, asset)

		for _, path := range []string{"/v1/health/live", "/v1/jobs?tenant_id=" + devTenant, "/v1/no-such-route"} {
			_, hdr, _ := h.headers(http.MethodGet, path, "", bearer)
			requireSecurityHeaders(t, hdr, path)
			require.Equal(t, "no-store", hdr.Get("Cache-Control"), path)
		}
	})

	t.Run("HEAD health and Allow on 405", func(t *testing.T) {
		for _, path := range []string{"/v1/health/live", "/v1/health/ready"} {
			status, _, body := h.headers(http.MethodHead, path, "", nil)
			require.Equal(t, http.StatusOK, status, path)
			require.Empty(t, body)
		}
		status, hdr, body := h.headers(http.MethodDelete, "/v1/health/live", "", nil)
		require.Equal(t, http.StatusMethodNotAllowed, status)
		require.Equal(t, "GET, HEAD", hdr.Get("Allow"))
		require.Contains(t, string(body), `"code":"METHOD_NOT_ALLOWED"`)
		status, hdr, _ = h.headers(http.MethodPut, "/v1/jobs", "", bearer)
		require.Equal(t, http.StatusMethodNotAllowed, status)
		require.Equal(t, "GET, HEAD, POST", hdr.Get("Allow"))
	})

	t.Run("made-up methods and paths add no metric series", func(t *testing.T) {
		series := func() int {
			_, raw := h.raw(http.MethodGet, "/v1/metrics", nil, bearer)
			return httpSeries(raw)
		}
		h.raw("BREW", "/nope", nil, nil) // the OTHER series exists
		series()                         // and the scrape's own
		before := series()
		rng := rand.New(rand.NewPCG(3, 4))
		for i := range 500 {
			h.raw(fmt.Sprintf("M%08X", rng.Uint32()), fmt.Sprintf("/x/%d/%08x", i, rng.Uint32()), nil, nil)
		}
		require.Equal(t, before, series(), "500 made-up requests must not add series")
		_, raw := h.raw(http.MethodGet, "/v1/metrics", nil, bearer)
		require.Contains(t, string(raw), `bpc_http_requests_total{method="OTHER",route="unmatched",status="404"}`)
	})

	t.Run("NUL and invalid UTF-8 are a 422 naming the field", func(t *testing.T) {
		for _, tt := range []struct {
			method, path, body, field string
		}{
			{http.MethodPost, "/v1/tenants", `{"slug":"nul\u0000slug","name":"x"}`, "slug"},
			{http.MethodPost, "/v1/tenants", "{\"slug\":\"bad-\xff\xfe\",\"name\":\"x\"}", "slug"},
			{http.MethodPost, "/v1/tenants", `{"slug":"s-` + uuid.NewString()[:8] + `","name":"a\ud800b"}`, "name"},
			{http.MethodPost, "/v1/rule-packages", `{"tenant_id":"` + devTenant + `","name":"a\u0000b"}`, "name"},
			{http.MethodPost, "/v1/events", `{"tenant_id":"` + devTenant + `","aggregate_type":"Passport","aggregate_id":"` + uuid.NewString() +
				`","event_type":"nul.test","payload":{"note":"a\u0000b"}}`, "payload.note"},
			{http.MethodPost, "/v1/events", `{"tenant_id":"` + devTenant + `","aggregate_type":"Passport","aggregate_id":"` + uuid.NewString() +
				`","event_type":"nul.test","payload":{"items":[{"n":1e200000}]}}`, "payload.items[0].n"},
			{http.MethodPost, "/v1/jobs", `{"type":"` + jobargs.KindDeliverWebhook + `","tenant_id":"` + devTenant +
				`","payload":{"webhook_delivery_id":"x\u0000"}}`, "payload.webhook_delivery_id"},
			{http.MethodGet, "/v1/jobs?tenant_id=" + devTenant + "&type=%00", "", "type"},
			{http.MethodGet, "/v1/jobs?tenant_id=" + devTenant + "&status=%FF", "", "status"},
			{http.MethodGet, "/v1/jobs?tenant_id=00000000-0000-0000-0000-000000000000", "", "tenant_id"},
		} {
			status, raw := h.raw(tt.method, tt.path, tt.body, bearer)
			require.Equal(t, http.StatusUnprocessableEntity, status, "%s %s: %s", tt.method, tt.path, raw)
			require.Contains(t, string(raw), `"field":"`+tt.field+`"`, "%s", raw)
		}
		_, raw := h.raw(http.MethodGet, "/v1/tenants", nil, bearer)
		require.NotContains(t, string(raw), "nul", "no tenant was created")
	})

	// The log holds neither the token (sent on every request above, as
	// Bearer and inside Basic) nor a Basic header.
	require.NotContains(t, h.logs.String(), testToken)
	require.NotContains(t, h.logs.String(), strings.TrimPrefix(basic, "Basic "))
}

func requireSecurityHeaders(t *testing.T, hdr http.Header, what string) {
	t.Helper()
	require.Equal(t, "nosniff", hdr.Get("X-Content-Type-Options"), what)
	require.Equal(t, "DENY", hdr.Get("X-Frame-Options"), what)
	require.Contains(t, hdr.Get("Content-Security-Policy"), "frame-ancestors 'none'", what)
}

// httpSeries counts the lines of the HTTP request metrics in a scrape.
func httpSeries(metrics []byte) int {
	n := 0
	for _, line := range strings.Split(string(metrics), "\n") {
		if strings.HasPrefix(line, "bpc_http_request") {
			n++
		}
	}
	return n
}
