package e2e

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/service"
)

// requireQuotaRefusal asserts a QUOTA_EXCEEDED answer of status naming
// quota, its limit and the use counted.
func requireQuotaRefusal(t *testing.T, status int, raw []byte, wantStatus int, quota string, limit, used int) {
	t.Helper()
	require.Equal(t, wantStatus, status, "%s", raw)
	var e errorEnvelope
	require.NoError(t, json.Unmarshal(raw, &e), "%s", raw)
	require.Equal(t, "QUOTA_EXCEEDED", e.Error.Code, "%s", raw)
	require.Equal(t, quota, e.Error.Details["quota"], "%s", raw)
	require.EqualValues(t, limit, e.Error.Details["limit"], "%s", raw)
	require.EqualValues(t, used, e.Error.Details["used"], "%s", raw)
}

type usageAnswer struct {
	TenantID string         `json:"tenant_id"`
	Quotas   map[string]int `json:"quotas"`
	Usage    map[string]int `json:"usage"`
}

// Each quota of SPEC §15 over HTTP, with small limits: the limit-th
// create passes, the next is refused with the quota, its limit and use;
// the platform's override moves the limit; usage is the tenant's own.
func TestTenantQuotasOverHTTP(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, map[string]string{
		"BPC_TENANT_MAX_WEBHOOK_ENDPOINTS":     "2",
		"BPC_TENANT_MAX_WEBHOOK_SUBSCRIPTIONS": "3",
		"BPC_TENANT_MAX_API_KEYS":              "2",
		"BPC_TENANT_MAX_QUEUED_JOBS":           "3",
		"BPC_EVENT_PAYLOAD_MAX_BYTES":          "100",
		"BPC_RATE_LIMIT_RPS":                   "0",
	})
	tenant, other := h.newTenant(), h.newTenant()
	admin := h.createKey(tenant, "admin", nil) // key 1 of 2
	otherKey := h.createKey(other, "admin", nil)

	// API keys: the second passes, the third is refused.
	status, raw := h.as(admin.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "second", "role": "writer"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "third", "role": "writer"})
	requireQuotaRefusal(t, status, raw, http.StatusConflict, "api_keys", 2, 2)

	// Webhook endpoints, and the same URL twice.
	var ep struct {
		WebhookEndpointID string `json:"webhook_endpoint_id"`
	}
	for i, url := range []string{"http://127.0.0.1:9/hook-a", "http://127.0.0.1:9/hook-b"} {
		status, raw = h.as(admin.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": url, "secret": "whsec-0123456789abcdef"})
		require.Equal(t, http.StatusCreated, status, "endpoint %d: %s", i, raw)
		require.NoError(t, json.Unmarshal(raw, &ep))
	}
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/hook-c", "secret": "whsec-0123456789abcdef"})
	requireQuotaRefusal(t, status, raw, http.StatusConflict, "webhook_endpoints", 2, 2)
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/hook-a", "secret": "whsec-0123456789abcdef"})
	require.Equal(t, http.StatusCreated, status, "another tenant may use the URL: %s", raw)
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "HTTP://127.0.0.1:9/hook-a", "secret": "whsec-0123456789abcdef"})
	require.Equal(t, http.StatusConflict, status, "the scheme's case is the same URL: %s", raw)
	require.Equal(t, "CONFLICT", errorCode(t, raw))
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/HOOK-A", "secret": "whsec-0123456789abcdef"})
	require.Equal(t, http.StatusCreated, status, "a path differing in case is another URL: %s", raw)
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/webhook-endpoints", map[string]any{"url": "http://127.0.0.1:9/hook-a#x", "secret": "whsec-0123456789abcdef"})
	require.Equal(t, http.StatusConflict, status, "%s", raw)
	require.Equal(t, "CONFLICT", errorCode(t, raw))

	// Subscriptions (none to *: the audit event of the quota change below
	// would be delivered, a job of the tenant's queued-jobs count).
	for _, et := range []string{"a.one", "a.two", "a.three"} {
		status, raw = h.as(admin.Token, http.MethodPost, "/v1/webhook-subscriptions", map[string]any{"webhook_endpoint_id": ep.WebhookEndpointID, "event_type": et})
		require.Equal(t, http.StatusCreated, status, "%s", raw)
	}
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/webhook-subscriptions", map[string]any{"webhook_endpoint_id": ep.WebhookEndpointID, "event_type": "a.four"})
	requireQuotaRefusal(t, status, raw, http.StatusConflict, "webhook_subscriptions", 3, 3)

	// Event payloads: 100 bytes pass, 101 are 413 and append nothing.
	payload := func(n int) json.RawMessage {
		return json.RawMessage(`{"p":"` + strings.Repeat("x", n-8) + `"}`)
	}
	event := func(n int) (int, []byte) {
		return h.as(otherKey.Token, http.MethodPost, "/v1/events", map[string]any{
			"aggregate_type": "Order", "aggregate_id": "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f", "event_type": "order.placed", "payload": payload(n)})
	}
	require.Len(t, payload(100), 100)
	status, raw = event(100)
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = event(101)
	require.Equal(t, http.StatusRequestEntityTooLarge, status, "%s", raw)
	require.Equal(t, "PAYLOAD_TOO_LARGE", errorCode(t, raw))

	// Queued jobs: scheduled an hour ahead, so that they stay QUEUED.
	var sn struct {
		SnapshotID string `json:"snapshot_id"`
	}
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/snapshots", map[string]any{})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &sn))
	later := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	job := map[string]any{"type": "BUILD_SNAPSHOT", "payload": map[string]any{"snapshot_id": sn.SnapshotID}, "scheduled_at": later}
	batch := func(n int) (int, http.Header, []byte) {
		jobs := make([]map[string]any, n)
		for i := range jobs {
			jobs[i] = job
		}
		return h.headers(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": jobs}, map[string]string{"Authorization": "Bearer " + admin.Token})
	}
	status, _, raw = batch(2)
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, hdr, raw := batch(2) // 2 + 2 > 3: refused whole
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 2)
	require.NotEmpty(t, hdr.Get("Retry-After"))
	keyed := map[string]any{"idempotency_key": "the-third"}
	for k, v := range job {
		keyed[k] = v
	}
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/jobs", keyed)
	require.Equal(t, http.StatusCreated, status, "the third job fits: %s", raw)
	var third struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, json.Unmarshal(raw, &third))
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/jobs", job)
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 3)
	// A replay (a client retrying an enqueue whose answer it lost) queues
	// nothing: it is answered its job, not refused.
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/jobs", keyed)
	require.Equal(t, http.StatusOK, status, "the replay of a queued job: %s", raw)
	var replayed struct {
		JobID string `json:"job_id"`
	}
	require.NoError(t, json.Unmarshal(raw, &replayed))
	require.Equal(t, third.JobID, replayed.JobID)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/snapshots/"+sn.SnapshotID+"/build", map[string]any{})
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 3)
	var doc struct {
		DocumentID string `json:"document_id"`
	}
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/documents", map[string]any{"kind": "BOM", "name": "pack bom"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &doc))
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/documents/"+doc.DocumentID+"/versions",
		map[string]any{"mime_type": "application/json", "content": base64.StdEncoding.EncodeToString([]byte(`{"a":1}`))})
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 3)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/events", map[string]any{
		"aggregate_type": "Order", "aggregate_id": "3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f", "event_type": "a.one", "payload": map[string]any{}})
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 3)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/webhook-endpoints/"+ep.WebhookEndpointID+"/ping", nil)
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 3, 3)
	var otherSn struct {
		SnapshotID string `json:"snapshot_id"`
	}
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/snapshots", map[string]any{})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &otherSn))
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/jobs", map[string]any{"type": "BUILD_SNAPSHOT",
		"payload": map[string]any{"snapshot_id": otherSn.SnapshotID}, "scheduled_at": later})
	require.Equal(t, http.StatusCreated, status, "another tenant's backlog is its own: %s", raw)

	// Usage: the tenant's own keys and the platform; another tenant's key
	// finds no such tenant, and may not name it.
	var u usageAnswer
	status, raw = h.as(admin.Token, http.MethodGet, "/v1/tenants/"+tenant+"/usage", nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &u))
	require.Equal(t, tenant, u.TenantID)
	require.Equal(t, map[string]int{"queued_jobs": 3, "running_jobs": 0, "webhook_endpoints": 2, "webhook_subscriptions": 3, "api_keys": 2}, u.Usage)
	require.Equal(t, map[string]int{"webhook_endpoints": 2, "webhook_subscriptions": 3, "api_keys": 2, "queued_jobs": 3,
		"event_payload_bytes": 100, "rate_limit_rps": 200, "rate_limit_burst": 1000}, u.Quotas)
	var platformView usageAnswer
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/tenants/"+tenant+"/usage", nil, &platformView))
	require.Equal(t, u, platformView)
	status, raw = h.as(otherKey.Token, http.MethodGet, "/v1/tenants/"+tenant+"/usage", nil)
	require.Equal(t, http.StatusNotFound, status, "%s", raw)
	require.NotContains(t, string(raw), `"usage"`)
	status, raw = h.as(otherKey.Token, http.MethodGet, "/v1/tenants/"+tenant+"/usage?tenant_id="+tenant, nil)
	require.Equal(t, http.StatusForbidden, status, "%s", raw)

	// Overrides: the platform's only, validated, and in force at once.
	status, raw = h.as(admin.Token, http.MethodPatch, "/v1/tenants/"+tenant, map[string]any{"quotas": map[string]any{"api_keys": 1000}})
	require.Equal(t, http.StatusForbidden, status, "%s", raw)
	for body, field := range map[string]string{
		`{"quotas":{"colour":3}}`:           "quotas.colour",
		`{"quotas":{"api_keys":-1}}`:        "quotas.api_keys",
		`{"quotas":{"queued_jobs":"many"}}`: "quotas.queued_jobs",
		`{"reset":["colour"]}`:              "reset[0]",
	} {
		status, raw = h.raw(http.MethodPatch, "/v1/tenants/"+tenant, body, map[string]string{"Authorization": "Bearer " + testToken, "Content-Type": "application/json"})
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s: %s", body, raw)
		var e errorEnvelope
		require.NoError(t, json.Unmarshal(raw, &e))
		require.Equal(t, field, e.Error.Details["field"], "%s: %s", body, raw)
	}
	status, raw = h.raw(http.MethodPatch, "/v1/tenants/3f2b8c4e-1d2a-4b7e-9c1f-2a3b4c5d6e7f", `{"quotas":{"api_keys":3}}`, map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusNotFound, status, "%s", raw)
	var set struct {
		Quotas map[string]int `json:"quotas"`
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodPatch, "/v1/tenants/"+tenant, map[string]any{"quotas": map[string]any{"api_keys": 3, "queued_jobs": 4}}, &set))
	require.Equal(t, 3, set.Quotas["api_keys"])
	require.Equal(t, 4, set.Quotas["queued_jobs"])
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "third", "role": "writer"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/jobs", job)
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.as(admin.Token, http.MethodPost, "/v1/jobs", job)
	requireQuotaRefusal(t, status, raw, http.StatusTooManyRequests, "queued_jobs", 4, 4)
	// Another tenant keeps the defaults.
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "second", "role": "writer"})
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.as(otherKey.Token, http.MethodPost, "/v1/api-keys", map[string]any{"name": "third", "role": "writer"})
	requireQuotaRefusal(t, status, raw, http.StatusConflict, "api_keys", 2, 2)

	// The refusals are counted by quota name, never by tenant.
	status, raw = h.as(testToken, http.MethodGet, "/v1/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	require.Regexp(t, `(?m)^bpc_quota_refused_total\{quota="api_keys"\} 2$`, string(raw))
	for _, quota := range []string{"webhook_endpoints", "webhook_subscriptions", "queued_jobs", "event_payload_bytes"} {
		require.Regexp(t, `(?m)^bpc_quota_refused_total\{quota="`+quota+`"\} [1-9]`, string(raw), "each quota refused above is counted")
	}
	require.NotContains(t, string(raw), tenant, "no series names a tenant")
}
