package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/examples/nmc811"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/store"
)

// apiKey is a created key with its token.
type apiKey struct {
	bpctype.APIKey
	Token string `json:"token"`
}

// createKey creates a key of role for tenant with the platform token.
func (h *harness) createKey(tenant, role string, extra map[string]any) apiKey {
	h.t.Helper()
	body := map[string]any{"tenant_id": tenant, "name": role + " key", "role": role}
	for k, v := range extra {
		body[k] = v
	}
	var k apiKey
	status := h.call(http.MethodPost, "/v1/api-keys", body, &k)
	require.Equal(h.t, http.StatusCreated, status)
	require.True(h.t, strings.HasPrefix(k.Token, "bpc_"), k.Token)
	return k
}

// as sends a request with a bearer token and returns the status and body.
func (h *harness) as(token, method, path string, body any) (int, []byte) {
	h.t.Helper()
	return h.raw(method, path, body, map[string]string{"Authorization": "Bearer " + token})
}

// newTenant creates a tenant with the platform token.
func (h *harness) newTenant() string {
	h.t.Helper()
	var tn bpctype.Tenant
	slug := "t-" + uuid.NewString()[:8]
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/tenants", map[string]any{"slug": slug, "name": slug}, &tn))
	return tn.TenantID.String()
}

func errorCode(t *testing.T, body []byte) string {
	t.Helper()
	var e errorEnvelope
	require.NoError(t, json.Unmarshal(body, &e), "%s", body)
	return e.Error.Code
}

// victim holds one of every resource of the dev tenant, the tenant another
// tenant's keys try to reach.
type victim struct {
	ids map[string]string // path prefix → an id under it
}

func newVictim(t *testing.T, h *harness) victim {
	t.Helper()
	pp := h.compiledSample()
	v := h.signedWithQR(pp.PassportID)
	var act bpctype.PassportVersion
	h.post("/v1/passport-versions/"+v.PassportVersionID.String()+"/activate", map[string]any{}, http.StatusOK, &act)
	docVersion, parseJob := h.upload("BOM", sampleDoc(t, "bom.json"))
	var dv bpctype.DocumentVersion
	h.get("/v1/document-versions/"+docVersion.String(), &dv)
	var sn bpctype.Snapshot
	h.post("/v1/snapshots", map[string]any{}, http.StatusCreated, &sn)
	rv := h.rulesVersion(nmc811.Rules(), nmc811.Tests(), false)
	recv := newReceiver(t, http.StatusOK)
	endpointID := h.subscribe(recv.URL+"/hook", "passport.activated")
	var subs struct {
		Items []bpctype.WebhookSubscription `json:"items"`
	}
	h.get("/v1/webhook-subscriptions", &subs)
	require.NotEmpty(t, subs.Items)
	delivery, _ := h.deliverOne(recv.URL+"/hook2", "victim.event")
	key := h.createKey(devTenant, "admin", nil)
	return victim{ids: map[string]string{
		"/v1/jobs/":                    parseJob.String(),
		"/v1/documents/":               dv.DocumentID.String(),
		"/v1/document-versions/":       docVersion.String(),
		"/v1/snapshots/":               sn.SnapshotID.String(),
		"/v1/rule-packages/":           rv.RulePackageID.String(),
		"/v1/rule-package-versions/":   rv.RulePackageVersionID.String(),
		"/v1/battery-products/":        pp.BatteryProductID.String(),
		"/v1/passports/":               pp.PassportID.String(),
		"/v1/passport-versions/":       v.PassportVersionID.String(),
		"/v1/webhook-endpoints/":       endpointID.String(),
		"/v1/webhook-subscriptions/":   subs.Items[0].WebhookSubscriptionID.String(),
		"/v1/webhook-deliveries/":      delivery.Deliveries[0].WebhookDeliveryID.String(),
		"/v1/api-keys/":                key.APIKeyID.String(),
		"/v1/signing-keys/":            v.SigningKeyID, // the dev tenant's key
		"/v1/tenants/":                 devTenant,
		"/public/v1/passport-versions": v.PassportVersionID.String(),
	}}
}

// fill puts the victim's id into a route's path parameter.
func (v victim) fill(t *testing.T, route string) string {
	t.Helper()
	param := regexp.MustCompile(`\{[a-z_]+\}`)
	if !param.MatchString(route) {
		return route
	}
	for prefix, id := range v.ids {
		if strings.HasPrefix(route, prefix) {
			return param.ReplaceAllString(route, id)
		}
	}
	t.Fatalf("no victim id for %s: add the resource to newVictim", route)
	return ""
}

// documentedRoutes lists the service's operations from its OpenAPI
// document, so that a new route is tried without editing this test.
func documentedRoutes(t *testing.T, h *harness) [][2]string {
	t.Helper()
	status, raw := h.raw(http.MethodGet, "/v1/openapi.json", nil, nil)
	require.Equal(t, http.StatusOK, status)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(raw, &doc))
	var routes [][2]string
	for path, ops := range doc.Paths {
		for method := range ops {
			routes = append(routes, [2]string{strings.ToUpper(method), path})
		}
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i][1]+routes[i][0] < routes[j][1]+routes[j][0] })
	return routes
}

// Every documented route, tried with another tenant's keys: the victim's
// ids are not found (404), naming the victim's tenant is forbidden (403),
// the platform's own routes are forbidden, and nothing answers 2xx with
// the victim's data or 5xx.
func TestTenantKeysCannotReachAnotherTenant(t *testing.T) {
	t.Parallel()
	env := pipelineEnv(t)
	env["BPC_RATE_LIMIT_RPS"] = "0" // the sweep sends hundreds of requests with one key
	h := newHarness(t, service.RoleAll, env)
	v := newVictim(t, h)
	mine := h.newTenant()
	admin := h.createKey(mine, "admin", nil)
	writer := h.createKey(mine, "writer", nil)

	routes := documentedRoutes(t, h)
	require.Greater(t, len(routes), 60)
	tried := 0
	for _, rt := range routes {
		method, route := rt[0], rt[1]
		switch {
		case strings.HasPrefix(route, "/v1/health/"), strings.HasPrefix(route, "/public/"), strings.HasPrefix(route, "/p/"), route == "/v1":
			continue // no credentials at all (the index only names paths); the public tests cover them
		case route == "/v1/signing-keys":
			continue // every key's public half is public knowledge
		}
		tried++
		path := v.fill(t, route)
		token := writer.Token
		if strings.HasPrefix(route, "/v1/api-keys") {
			token = admin.Token // a writer may not manage keys at all
		}
		var body any
		if method == http.MethodPost || method == http.MethodPatch || method == http.MethodPut {
			body = map[string]any{}
		}
		platformOnly := route == "/v1/metrics" || (route == "/v1/tenants" && method == http.MethodPost)

		// Without tenant_id: the key's own tenant, where the victim's ids
		// do not exist. The answer is the one for an id nobody has (a
		// body checked before the lookup fails the same way for both), so
		// it tells nothing of the victim; a read is 404.
		status, raw := h.as(token, method, path, body)
		switch {
		case platformOnly:
			require.Equal(t, http.StatusForbidden, status, "%s %s: %s", method, path, raw)
		case path != route:
			unknown := regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{27}`).ReplaceAllString(path, uuid.NewString())
			status2, raw2 := h.as(token, method, unknown, body)
			require.Equal(t, status2, status, "%s %s: %s, and for an unknown id: %s", method, path, raw, raw2)
			require.Equal(t, errorCode(t, raw2), errorCode(t, raw), "%s %s", method, path)
			require.GreaterOrEqual(t, status, 400, "%s %s: %s", method, path, raw)
			require.Less(t, status, 500, "%s %s: %s", method, path, raw)
			if method == http.MethodGet || method == http.MethodDelete {
				require.Equal(t, http.StatusNotFound, status, "%s %s: %s", method, path, raw)
			}
		default:
			require.Less(t, status, 500, "%s %s: %s", method, path, raw)
			require.NotContains(t, string(raw), devTenant, "%s %s answered the victim's data", method, path)
		}

		// Naming the victim's tenant: forbidden.
		if platformOnly || route == "/v1/tenants" {
			continue
		}
		// In the query and, for a body, in it too (a batch names it per job).
		withTenant := path + "?tenant_id=" + devTenant
		switch {
		case route == "/v1/jobs:batch":
			body = map[string]any{"jobs": []map[string]any{{"type": "SIGN_PASSPORT", "tenant_id": devTenant,
				"payload": map[string]any{"passport_version_id": v.ids["/v1/passport-versions/"]}}}}
		case body != nil:
			body = map[string]any{"tenant_id": devTenant}
		}
		status, raw = h.as(token, method, withTenant, body)
		require.Equal(t, http.StatusForbidden, status, "%s %s naming the victim's tenant: %s", method, withTenant, raw)
		require.Equal(t, "FORBIDDEN", errorCode(t, raw))
	}
	require.Greater(t, tried, 55)

	// Ids of the victim inside a body of the key's own tenant: 404, and
	// no job is enqueued.
	for _, tc := range []struct {
		path string
		body map[string]any
	}{
		{"/v1/jobs", map[string]any{"type": "SIGN_PASSPORT", "payload": map[string]any{"passport_version_id": v.ids["/v1/passport-versions/"]}}},
		{"/v1/passports", map[string]any{"battery_product_id": v.ids["/v1/battery-products/"]}},
		{"/v1/webhook-subscriptions", map[string]any{"webhook_endpoint_id": v.ids["/v1/webhook-endpoints/"], "event_type": "*"}},
	} {
		status, raw := h.as(writer.Token, http.MethodPost, tc.path, tc.body)
		require.Equal(t, http.StatusNotFound, status, "POST %s: %s", tc.path, raw)
	}
	// A compile of the key's own passport from the victim's snapshot and
	// rules: 404 naming the field, no job.
	var product bpctype.BatteryProduct
	status, raw := h.as(writer.Token, http.MethodPost, "/v1/battery-products", map[string]any{"sku": "own-1", "name": "own"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &product))
	var own bpctype.Passport
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/passports", map[string]any{"battery_product_id": product.BatteryProductID})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &own))
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/passports/"+own.PassportID.String()+"/compile",
		map[string]any{"snapshot_id": v.ids["/v1/snapshots/"], "rule_package_version_id": v.ids["/v1/rule-package-versions/"]})
	require.Equal(t, http.StatusNotFound, status, "compile from the victim's snapshot: %s", raw)
	require.Contains(t, string(raw), `"snapshot_id"`)
	var page store.JobPage
	status, raw = h.as(writer.Token, http.MethodGet, "/v1/jobs", nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &page))
	require.Empty(t, page.Items, "the key's tenant has no jobs")

	// The key's own tenant works without tenant_id, and GET /v1/tenants
	// shows it alone.
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "mine"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var doc bpctype.Document
	require.NoError(t, json.Unmarshal(raw, &doc))
	require.Equal(t, mine, doc.TenantID.String())
	status, raw = h.as(writer.Token, http.MethodGet, "/v1/documents/"+doc.DocumentID.String(), nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	var tenants struct {
		Items []bpctype.Tenant `json:"items"`
	}
	status, raw = h.as(writer.Token, http.MethodGet, "/v1/tenants", nil)
	require.Equal(t, http.StatusOK, status)
	require.NoError(t, json.Unmarshal(raw, &tenants))
	require.Len(t, tenants.Items, 1)
	require.Equal(t, mine, tenants.Items[0].TenantID.String())
}

// Roles: a reader reads, a writer writes but manages no keys, an admin
// manages its own tenant's keys; River UI is the platform's only.
func TestKeyRoles(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	mine := h.newTenant()
	other := h.newTenant()
	admin := h.createKey(mine, "admin", nil)
	writer := h.createKey(mine, "writer", nil)
	reader := h.createKey(mine, "reader", nil)

	status, raw := h.as(reader.Token, http.MethodGet, "/v1/documents", nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	for _, w := range []struct{ method, path string }{
		{http.MethodPost, "/v1/documents"}, {http.MethodPost, "/v1/jobs"}, {http.MethodDelete, "/v1/webhook-endpoints/" + uuid.NewString()},
		{http.MethodPatch, "/v1/webhook-endpoints/" + uuid.NewString()}, {http.MethodPost, "/v1/api-keys"},
	} {
		status, raw := h.as(reader.Token, w.method, w.path, map[string]any{"kind": "BOM", "name": "x"})
		require.Equal(t, http.StatusForbidden, status, "reader %s %s: %s", w.method, w.path, raw)
	}
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "w"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	for _, tc := range []struct{ method, path string }{
		{http.MethodPost, "/v1/api-keys"}, {http.MethodGet, "/v1/api-keys"}, {http.MethodDelete, "/v1/api-keys/" + reader.APIKeyID.String()},
	} {
		status, raw := h.as(writer.Token, tc.method, tc.path, map[string]any{"name": "x", "role": "reader"})
		require.Equal(t, http.StatusForbidden, status, "writer %s %s: %s", tc.method, tc.path, raw)
	}

	// The admin manages its own tenant's keys, and no other's.
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "ci", "role": "writer"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var made apiKey
	require.NoError(t, json.Unmarshal(raw, &made))
	require.Equal(t, mine, made.TenantID.String())
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/api-keys", map[string]any{"tenant_id": other, "name": "x", "role": "admin"})
	require.Equal(t, http.StatusForbidden, status, "%s", raw)
	status, raw = h.as(admin.Token, http.MethodGet, "/v1/api-keys", nil)
	require.Equal(t, http.StatusOK, status)
	require.NotContains(t, string(raw), made.Token, "a listed key has no token")
	require.NotContains(t, string(raw), "token_sha256")
	var keys struct {
		Items []bpctype.APIKey `json:"items"`
	}
	require.NoError(t, json.Unmarshal(raw, &keys))
	require.Len(t, keys.Items, 4)

	// River UI and metrics are the platform's.
	for _, auth := range []string{basicAuth("x", admin.Token), "Bearer " + admin.Token} {
		status, _ := h.raw(http.MethodGet, "/riverui/api/jobs?state=available", nil, map[string]string{"Authorization": auth})
		require.Equal(t, http.StatusUnauthorized, status, auth[:6])
		status, _ = h.raw(http.MethodGet, "/riverui/", nil, map[string]string{"Authorization": auth})
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, _ = h.as(admin.Token, http.MethodGet, "/v1/metrics", nil)
	require.Equal(t, http.StatusForbidden, status)
	status, raw = h.as(testToken, http.MethodGet, "/v1/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	require.True(t, strings.Contains(string(raw), `bpc_api_key_events_total{event="created"} 4`), "three keys by the platform, one by the admin")

	// The log holds the key events, never a token.
	h.eventually("key creation logged", func() bool { return strings.Contains(h.logs.String(), `"msg":"api key created"`) })
	for _, k := range []apiKey{admin, writer, reader, made} {
		require.NotContains(t, h.logs.String(), k.Token)
	}
}

// A revoked key stops working on every process; so does an expired one.
// (Within the keyring's Fresh, 500 ms: access's tests, on a fake clock.)
// Wrong, malformed and unknown tokens are 401 and counted.
func TestKeyRevocationAndExpiry(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	// A second API process over the same database: its own key cache.
	cfg := testConfig(t, "second-", map[string]string{"BPC_HTTP_ADDR": "127.0.0.1:0"}, nil)
	second, err := service.New(cfg, service.RoleAPI, service.NewLogger(cfg, &syncBuffer{}), h.pool)
	require.NoError(t, err)
	require.NoError(t, second.Start(t.Context()))
	t.Cleanup(func() { second.Stop(t.Context()) })
	h2 := &harness{t: t, app: second, pool: h.pool, base: "http://" + second.Addr(), logs: &syncBuffer{}}

	mine := h.newTenant()
	key := h.createKey(mine, "reader", nil)
	for _, s := range []*harness{h, h2} {
		status, raw := s.as(key.Token, http.MethodGet, "/v1/documents", nil)
		require.Equal(t, http.StatusOK, status, "%s", raw) // cached now on both
	}
	require.Equal(t, http.StatusNoContent, h.call(http.MethodDelete, "/v1/api-keys/"+key.APIKeyID.String()+"?tenant_id="+mine, nil, nil))
	status, raw := h.as(key.Token, http.MethodGet, "/v1/documents", nil)
	require.Equal(t, http.StatusUnauthorized, status, "at once on the revoking process")
	requireUnauthorized(t, raw, "the api key has been revoked", mine)
	require.Eventually(t, func() bool {
		status, _ := h2.as(key.Token, http.MethodGet, "/v1/documents", nil)
		return status == http.StatusUnauthorized
	}, testTimeout, 20*time.Millisecond, "on another process")

	// Far enough ahead that a loaded machine still uses the key before.
	soon := time.Now().Add(5 * time.Second).UTC()
	expiring := h.createKey(mine, "reader", map[string]any{"expires_at": soon.Format(time.RFC3339Nano)})
	status, _ = h2.as(expiring.Token, http.MethodGet, "/v1/documents", nil)
	require.Equal(t, http.StatusOK, status)
	time.Sleep(time.Until(soon))
	require.Eventually(t, func() bool {
		status, _ := h2.as(expiring.Token, http.MethodGet, "/v1/documents", nil)
		return status == http.StatusUnauthorized
	}, testTimeout, 20*time.Millisecond, "after its expiry")
	_, raw = h2.as(expiring.Token, http.MethodGet, "/v1/documents", nil)
	requireUnauthorized(t, raw, "the api key has expired", mine)

	wrongSecret := key.Token[:len(key.Token)-1] + "a"
	if wrongSecret == key.Token {
		wrongSecret = key.Token[:len(key.Token)-1] + "b"
	}
	for _, bad := range []string{"", "nope", wrongSecret, "bpc_" + strings.Repeat("a", 16) + "_" + strings.Repeat("b", 52)} {
		status, raw := h.as(bad, http.MethodGet, "/v1/documents", nil)
		require.Equal(t, http.StatusUnauthorized, status, "%q: %s", bad, raw)
		require.NotContains(t, string(raw), bad+"x")
		if bad != "" {
			// Whether a key has the prefix, and whose it is, stays unsaid.
			requireUnauthorized(t, raw, "the bearer token is unknown or revoked", mine)
		}
	}
	var metrics string
	for _, s := range []*harness{h, h2} {
		status, raw := s.as(testToken, http.MethodGet, "/v1/metrics", nil)
		require.Equal(t, http.StatusOK, status)
		metrics += string(raw)
	}
	for _, reason := range []string{"revoked", "expired", "unknown", "secret", "platform", "missing"} {
		require.True(t, strings.Contains(metrics, `bpc_auth_denied_total{reason="`+reason+`"}`), reason)
	}
	require.NotContains(t, h.logs.String(), key.Token)
}

// Rate limits: a key's burst, then 429 with Retry-After, then recovery;
// the same per address on the public routes and for failed credentials;
// the platform token is not limited.
func TestRateLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_RATE_LIMIT_RPS": "2", "BPC_RATE_LIMIT_BURST": "3"})
	key := h.createKey(h.newTenant(), "reader", nil)

	exhaust := func(what string, send func() (int, http.Header)) {
		t.Helper()
		for i := range 3 {
			status, _ := send()
			require.NotEqual(t, http.StatusTooManyRequests, status, "%s: request %d of the burst", what, i+1)
		}
		status, header := send()
		require.Equal(t, http.StatusTooManyRequests, status, what)
		after, err := strconv.Atoi(header.Get("Retry-After"))
		require.NoError(t, err, what)
		require.GreaterOrEqual(t, after, 1)
		time.Sleep(time.Duration(after) * time.Second)
		status, _ = send()
		require.NotEqual(t, http.StatusTooManyRequests, status, "%s: after Retry-After", what)
	}
	exhaust("a key", func() (int, http.Header) {
		status, header, raw := h.headers(http.MethodGet, "/v1/documents", nil, map[string]string{"Authorization": "Bearer " + key.Token})
		if status == http.StatusTooManyRequests {
			require.Equal(t, "RATE_LIMITED", errorCode(t, raw))
		}
		return status, header
	})
	// Guessed key tokens: refused before the lookup once the address is
	// over its rate.
	guess := "Bearer bpc_" + strings.Repeat("a", 16) + "_" + strings.Repeat("b", 52)
	exhaust("wrong tokens from one address", func() (int, http.Header) {
		status, header, _ := h.headers(http.MethodGet, "/v1/documents", nil, map[string]string{"Authorization": guess})
		return status, header
	})
	exhaust("the public routes from one address", func() (int, http.Header) {
		status, header, _ := h.headers(http.MethodGet, "/public/v1/verify?qr=nope", nil, nil)
		return status, header
	})
	for range 20 {
		require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/tenants", nil, nil), "the platform token is not limited")
	}
}

// TestFailedCredentialsThrottle: an address over its rate of failed
// credentials is answered 429 before the platform token is compared (so a
// guesser learns nothing, on /v1 and on River UI alike), while a key the
// process already knows keeps working from that address (a flood of bad
// credentials behind a shared NAT or proxy must not lock tenants out).
func TestFailedCredentialsThrottle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_RATE_LIMIT_RPS": "1", "BPC_RATE_LIMIT_BURST": "3"})
	key := h.createKey(h.newTenant(), "reader", nil)
	bearer := func(token string) map[string]string { return map[string]string{"Authorization": "Bearer " + token} }
	status, _ := h.raw(http.MethodGet, "/v1/documents", nil, bearer(key.Token))
	require.Equal(t, http.StatusOK, status)

	// Wrong platform-shaped tokens: 401 for the burst, then 429.
	for i := range 3 {
		status, _ := h.raw(http.MethodGet, "/v1/tenants", nil, bearer(fmt.Sprintf("wrong-admin-token-%04d", i)))
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, raw := h.raw(http.MethodGet, "/v1/tenants", nil, bearer("wrong-admin-token-9999"))
	require.Equal(t, http.StatusTooManyRequests, status, "%s", raw)
	// The right platform token is refused too while the address is throttled,
	// on /v1 and River UI.
	status, _ = h.raw(http.MethodGet, "/v1/tenants", nil, bearer(testToken))
	require.Equal(t, http.StatusTooManyRequests, status, "a throttled address learns nothing from a right guess")
	status, _ = h.raw(http.MethodGet, "/riverui/api/jobs?state=available", nil, map[string]string{"Authorization": basicAuth("x", testToken)})
	require.Equal(t, http.StatusTooManyRequests, status, "River UI shares the throttle")
	// The known key still works from the same address.
	status, raw = h.raw(http.MethodGet, "/v1/documents", nil, bearer(key.Token))
	require.Equal(t, http.StatusOK, status, "a known key is not locked out by others' failures: %s", raw)
	// An unknown key prefix is refused before any lookup.
	guess := "bpc_" + strings.Repeat("a", 16) + "_" + strings.Repeat("b", 52)
	status, _ = h.raw(http.MethodGet, "/v1/documents", nil, bearer(guess))
	require.Equal(t, http.StatusTooManyRequests, status)

	// After Retry-After the address may try again; River UI's wrong
	// passwords count like wrong tokens and are logged, without the password.
	time.Sleep(3 * time.Second)
	for i := range 3 {
		status, _ := h.raw(http.MethodGet, "/riverui/api/jobs?state=available", nil,
			map[string]string{"Authorization": basicAuth("x", fmt.Sprintf("wrong-ui-password-%d", i))})
		require.Equal(t, http.StatusUnauthorized, status)
	}
	status, _ = h.raw(http.MethodGet, "/riverui/api/jobs?state=available", nil, map[string]string{"Authorization": basicAuth("x", "wrong-ui-password-x")})
	require.Equal(t, http.StatusTooManyRequests, status)
	logs := h.logs.String()
	require.Contains(t, logs, `"msg":"credentials refused"`)
	require.NotContains(t, logs, "wrong-ui-password")
	require.NotContains(t, logs, "wrong-admin-token")
}

// TestCustomEventsCannotImpersonate: a tenant key's custom event may not
// join the chain of an aggregate the service writes (an API key's, a
// passport version's), and a tenant key's events (custom or domain) name
// that key as their actor, whatever the body claims.
func TestCustomEventsCannotImpersonate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	tenant := h.newTenant()
	writer := h.createKey(tenant, "writer", nil)
	admin := h.createKey(tenant, "admin", nil)
	event := func(body map[string]any) (int, []byte) {
		return h.as(writer.Token, http.MethodPost, "/v1/events", body)
	}
	for _, tc := range []struct{ field, aggregate, eventType string }{
		{"aggregate_type", "ApiKey", "api_key.revoked"},
		{"aggregate_type", "PassportVersion", "passport.activated"},
		{"aggregate_type", "DocumentVersion", "custom.note"},
	} {
		status, raw := event(map[string]any{"aggregate_type": tc.aggregate, "aggregate_id": admin.APIKeyID,
			"event_type": tc.eventType, "payload": map[string]any{}})
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s/%s: %s", tc.aggregate, tc.eventType, raw)
		require.Contains(t, string(raw), `"field":"`+tc.field+`"`)
	}
	status, raw := event(map[string]any{"aggregate_type": "Order", "aggregate_id": uuid.NewString(),
		"event_type": "order.shipped", "actor_id": "platform", "payload": map[string]any{}})
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
	orderID := uuid.NewString()
	status, raw = event(map[string]any{"aggregate_type": "Order", "aggregate_id": orderID, "event_type": "order.shipped", "payload": map[string]any{}})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "mine"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	var doc bpctype.Document
	require.NoError(t, json.Unmarshal(raw, &doc))
	var actors []string
	rows, err := h.pool.Query(context.Background(), `SELECT actor_id FROM events WHERE tenant_id = $1 AND aggregate_id = ANY($2) ORDER BY occurred_at`,
		tenant, []uuid.UUID{uuid.MustParse(orderID), doc.DocumentID})
	require.NoError(t, err)
	actors, err = pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	require.NotEmpty(t, actors)
	for _, a := range actors {
		require.Equal(t, "api_key:"+writer.APIKeyID.String(), a)
	}
}

// requireUnauthorized requires raw to be the UNAUTHORIZED envelope with
// message, naming neither the tenant nor a key.
func requireUnauthorized(t *testing.T, raw []byte, message, tenantID string) {
	t.Helper()
	var env struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
	require.Equal(t, "UNAUTHORIZED", env.Error.Code)
	require.Equal(t, message, env.Error.Message)
	require.NotContains(t, string(raw), tenantID)
}
