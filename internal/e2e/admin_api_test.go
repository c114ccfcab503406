package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// deliverPayload returns a DELIVER_WEBHOOK payload of the dev tenant naming
// a delivery that exists (the API refuses ids it does not know) and is
// already DELIVERED, so running the job sends nothing: the jobs endpoints
// are tested on a job type that needs no receiver.
func (h *harness) deliverPayload() map[string]any {
	return h.deliverPayloadFor(store.DevTenantID)
}

// deliverPayloadFor is deliverPayload for tenantID. Each call makes a new
// delivery, through an event of its own (no subscription, so the event fans
// out to nothing).
func (h *harness) deliverPayloadFor(tenantID uuid.UUID) map[string]any {
	h.t.Helper()
	var ev eventResponse
	require.Equal(h.t, http.StatusCreated, h.call(http.MethodPost, "/v1/events", map[string]any{
		"tenant_id": tenantID, "aggregate_type": "Fixture", "aggregate_id": uuid.New(),
		"event_type": "fixture.only", "payload": map[string]any{}}, &ev))
	id := uuid.New()
	_, err := h.pool.Exec(context.Background(), `
		INSERT INTO webhook_endpoints (webhook_endpoint_id, tenant_id, url, secret, is_active)
		VALUES ($1, $2, 'http://127.0.0.1:9/fixture', 'fixture-secret-0123456789', false)`, id, tenantID)
	require.NoError(h.t, err)
	_, err = h.pool.Exec(context.Background(), `
		INSERT INTO webhook_deliveries (webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id, status, delivered_at)
		VALUES ($1, $2, $1, $3, 'DELIVERED', now())`, id, tenantID, ev.EventID)
	require.NoError(h.t, err)
	return map[string]any{"webhook_delivery_id": id}
}

func (h *harness) riverJobCount() int {
	var n int
	require.NoError(h.t, h.pool.QueryRow(context.Background(), "SELECT count(*) FROM river_job").Scan(&n))
	return n
}

// Bad input never enqueues anything and always answers with the envelope.
func TestBadInputIsRejectedWithEnvelope(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_HTTP_MAX_BODY_BYTES": "2048"})
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	valid := func(mut func(m map[string]any)) map[string]any {
		m := map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": h.deliverPayload()}
		mut(m)
		return m
	}
	cases := []struct {
		name   string
		body   any
		status int
		code   string
		field  string
	}{
		{"malformed JSON", `{"type": "DELIVER_WEBHOOK",`, 400, "MALFORMED_JSON", ""},
		{"not an object", `[1,2]`, 400, "MALFORMED_JSON", ""},
		{"empty body", ``, 400, "MALFORMED_JSON", ""},
		{"unknown top-level field", valid(func(m map[string]any) { m["colour"] = "red" }), 422, "VALIDATION_ERROR", "colour"},
		{"unknown type", valid(func(m map[string]any) { m["type"] = "MAKE_COFFEE" }), 422, "VALIDATION_ERROR", "type"},
		{"missing tenant", valid(func(m map[string]any) { delete(m, "tenant_id") }), 422, "VALIDATION_ERROR", "tenant_id"},
		{"bad tenant uuid", valid(func(m map[string]any) { m["tenant_id"] = "tenant-1" }), 422, "VALIDATION_ERROR", "tenant_id"},
		{"unknown tenant", valid(func(m map[string]any) { m["tenant_id"] = uuid.NewString() }), 404, "NOT_FOUND", ""},
		{"bad payload uuid", valid(func(m map[string]any) { m["payload"] = map[string]any{"webhook_delivery_id": "123"} }), 422, "VALIDATION_ERROR", "payload.webhook_delivery_id"},
		{"missing payload field", valid(func(m map[string]any) { m["payload"] = map[string]any{} }), 422, "VALIDATION_ERROR", "payload.webhook_delivery_id"},
		{"unknown payload field", valid(func(m map[string]any) {
			m["payload"] = map[string]any{"webhook_delivery_id": uuid.NewString(), "x": 1}
		}), 422, "VALIDATION_ERROR", "payload.x"},
		{"priority out of range", valid(func(m map[string]any) { m["priority"] = 7 }), 422, "VALIDATION_ERROR", "priority"},
		{"priority wrong type", valid(func(m map[string]any) { m["priority"] = "high" }), 422, "VALIDATION_ERROR", "priority"},
		{"max_attempts zero", valid(func(m map[string]any) { m["max_attempts"] = 0 }), 422, "VALIDATION_ERROR", "max_attempts"},
		{"oversized body", `{"type":"DELIVER_WEBHOOK","pad":"` + strings.Repeat("x", 4096) + `"}`, 413, "BODY_TOO_LARGE", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			status, raw := h.raw(http.MethodPost, "/v1/jobs", tc.body, auth)
			require.Equal(t, tc.status, status, "%s", raw)
			var env errorEnvelope
			require.NoError(t, json.Unmarshal(raw, &env), "%s", raw)
			require.Equal(t, tc.code, env.Error.Code)
			require.NotEmpty(t, env.Error.Message)
			require.NotEmpty(t, env.Error.CorrelationID)
			if tc.field != "" {
				require.Equal(t, tc.field, env.Error.Details["field"], "%s", raw)
			}
		})
	}
	require.Zero(t, h.riverJobCount(), "nothing is enqueued")
	var count int
	require.NoError(t, h.pool.QueryRow(context.Background(), "SELECT count(*) FROM jobs").Scan(&count))
	require.Zero(t, count)

	// Bad path and query parameters.
	var env errorEnvelope
	require.Equal(t, 422, h.call(http.MethodGet, "/v1/jobs/not-a-uuid?tenant_id="+devTenant, nil, &env))
	require.Equal(t, "job_id", env.Error.Details["field"])
	// The platform token needs no tenant_id for a job's globally unique
	// id: an id nobody owns is 404.
	require.Equal(t, 404, h.call(http.MethodGet, "/v1/jobs/"+uuid.NewString(), nil, &env))
	require.Equal(t, "NOT_FOUND", env.Error.Code)
	require.Equal(t, 404, h.call(http.MethodGet, "/v1/jobs/"+uuid.NewString()+"?tenant_id="+devTenant, nil, &env))
	require.Equal(t, "NOT_FOUND", env.Error.Code)
	require.Equal(t, 422, h.call(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&status=DONE", nil, &env))
	require.Equal(t, 422, h.call(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&cursor=abc", nil, &env))
	require.Equal(t, "cursor", env.Error.Details["field"])
	require.Equal(t, 404, h.call(http.MethodGet, "/v1/nothing-here", nil, &env))
	require.Equal(t, 405, h.call(http.MethodDelete, "/v1/jobs", nil, &env))
}

func TestAuthIsRequiredExceptHealth(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	for _, hdr := range []map[string]string{
		nil,
		{"Authorization": "Bearer wrong-token-0123456789"},
		{"Authorization": "Basic " + strings.TrimPrefix(basicAuth("x", testToken), "Basic ")}, // Basic is for River UI only
		{"Authorization": "Bearer"},
	} {
		for _, path := range []string{"/v1/jobs?tenant_id=" + devTenant, "/v1/tenants", "/v1/metrics"} {
			status, raw := h.raw(http.MethodGet, path, nil, hdr)
			require.Equal(t, http.StatusUnauthorized, status, "%s %v", path, hdr)
			var env errorEnvelope
			require.NoError(t, json.Unmarshal(raw, &env))
			require.Equal(t, "UNAUTHORIZED", env.Error.Code)
		}
	}
	for _, hdr := range []map[string]string{nil, {"Authorization": basicAuth("x", "wrong-token-0123456789")}} {
		for _, path := range []string{"/riverui/", "/riverui/api/jobs?state=available"} {
			status, _ := h.raw(http.MethodGet, path, nil, hdr)
			require.Equal(t, http.StatusUnauthorized, status, path)
		}
	}
	status, _ := h.raw(http.MethodPost, "/riverui/api/jobs/retry", `{"ids":["1"]}`, nil)
	require.Equal(t, http.StatusUnauthorized, status)

	status, raw := h.raw(http.MethodGet, "/riverui/", nil, map[string]string{"Authorization": basicAuth("ops", testToken)})
	require.Equal(t, http.StatusOK, status)
	require.Contains(t, string(raw), "<html")

	status, _ = h.raw(http.MethodGet, "/v1/health/live", nil, nil)
	require.Equal(t, http.StatusOK, status)
	var ready struct {
		Status string `json:"status"`
		Checks []struct {
			Name string `json:"name"`
			OK   bool   `json:"ok"`
		} `json:"checks"`
	}
	status, raw = h.raw(http.MethodGet, "/v1/health/ready", nil, nil)
	require.Equal(t, http.StatusOK, status, "%s", raw)
	require.NoError(t, json.Unmarshal(raw, &ready))
	require.Equal(t, "ready", ready.Status)
	require.Len(t, ready.Checks, 3)
}

func TestIdempotentEnqueue(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	req := map[string]any{
		"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": h.deliverPayload(),
		"idempotency_key": "redeliver-42", "priority": 1,
	}
	var first, again bpctype.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", req, &first))
	require.Equal(t, "redeliver-42", *first.IdempotencyKey)
	require.EqualValues(t, 1, first.Priority)
	require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs", req, &again))
	require.Equal(t, first.JobID, again.JobID)
	require.Equal(t, first.RiverJobID, again.RiverJobID)

	// The same key through the header works the same way.
	delete(req, "idempotency_key")
	status, raw := h.raw(http.MethodPost, "/v1/jobs", req, map[string]string{"Authorization": "Bearer " + testToken, "Idempotency-Key": "redeliver-42"})
	require.Equal(t, http.StatusOK, status, "%s", raw)

	// Same key, different request.
	req["idempotency_key"] = "redeliver-42"
	req["payload"] = h.deliverPayload()
	var env errorEnvelope
	require.Equal(t, http.StatusConflict, h.call(http.MethodPost, "/v1/jobs", req, &env))
	require.Equal(t, "IDEMPOTENCY_CONFLICT", env.Error.Code)
	require.Equal(t, 1, h.riverJobCount())

	// The key is per tenant.
	var tenant bpctype.Tenant
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/tenants", map[string]any{"slug": "acme", "name": "ACME Batteries"}, &tenant))
	req["tenant_id"] = tenant.TenantID
	req["payload"] = h.deliverPayloadFor(tenant.TenantID)
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", req, nil))
	require.Equal(t, 2, h.riverJobCount())
	h.requireConsistent()
}

func TestBatchEnqueueListAndPaginate(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	jobs := make([]map[string]any, 7)
	for i := range jobs {
		jobs[i] = map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": h.deliverPayload()}
	}
	jobs[6]["idempotency_key"] = "k-6"
	var batch struct {
		Items []struct {
			bpctype.Job
			Existing bool `json:"existing"`
		} `json:"items"`
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": jobs}, &batch))
	require.Len(t, batch.Items, 7)
	for _, it := range batch.Items {
		require.Equal(t, bpctype.StatusQueued, it.Status)
		require.False(t, it.Existing)
	}
	require.Equal(t, 7, h.riverJobCount())

	// One bad item rejects the whole batch, naming it.
	jobs = append(jobs, map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": map[string]any{}})
	var env errorEnvelope
	require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": jobs}, &env))
	require.Equal(t, "jobs[7].payload.webhook_delivery_id", env.Error.Details["field"])
	require.Equal(t, 7, h.riverJobCount())

	seen := map[uuid.UUID]bool{}
	cursor, pages := "", 0
	for {
		var page store.JobPage
		path := "/v1/jobs?tenant_id=" + devTenant + "&type=DELIVER_WEBHOOK&status=QUEUED&limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		require.Equal(t, http.StatusOK, h.call(http.MethodGet, path, nil, &page))
		pages++
		for i, j := range page.Items {
			require.False(t, seen[j.JobID], "duplicate across pages")
			seen[j.JobID] = true
			if i > 0 {
				require.False(t, j.CreatedAt.After(page.Items[i-1].CreatedAt), "newest first")
			}
		}
		if page.NextCursor == "" {
			break
		}
		cursor = page.NextCursor
	}
	require.Equal(t, 3, pages)
	require.Len(t, seen, 7)

	var empty store.JobPage
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/jobs?tenant_id="+devTenant+"&status=SUCCEEDED", nil, &empty))
	require.Empty(t, empty.Items)
}

func TestWaitMsLongPoll(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	recv := newReceiver(t, http.StatusOK)
	h.subscribe(recv.URL, "w.test")

	// Terminal during the wait: 200 as soon as it is. The receiver holds
	// the delivery RUNNING until the request has (most likely) arrived.
	hold := make(chan struct{})
	recv.set(http.StatusOK, hold)
	ev := h.emit("w.test", map[string]any{})
	h.eventually("the delivery is running", func() bool { return len(recv.received()) == 1 })
	waiting, err := http.NewRequest(http.MethodGet, h.base+"/v1/jobs/"+ev.Deliveries[0].JobID.String()+"?tenant_id="+devTenant+"&waitMs=30000", nil)
	require.NoError(t, err)
	waiting.Header.Set("Authorization", "Bearer "+testToken)
	type answer struct {
		resp *http.Response
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		resp, err := http.DefaultClient.Do(waiting)
		answered <- answer{resp, err}
	}()
	time.Sleep(200 * time.Millisecond)
	released := time.Now()
	close(hold)
	a := <-answered
	// A did-not-hang bound, not a speed claim: the answer follows the job's
	// end (milliseconds), not the end of the 30 s wait.
	require.Less(t, time.Since(released), 15*time.Second)
	require.NoError(t, a.err)
	defer a.resp.Body.Close()
	require.Equal(t, http.StatusOK, a.resp.StatusCode)
	var job bpctype.Job
	require.NoError(t, json.NewDecoder(a.resp.Body).Decode(&job))
	require.Equal(t, bpctype.StatusSucceeded, job.Status)

	// Not terminal within the wait: 202 with Retry-After.
	later := h.deliverLater(h.deliverPayload(), time.Now().Add(time.Hour))
	req, _ := http.NewRequest(http.MethodGet, h.base+"/v1/jobs/"+later.JobID.String()+"?tenant_id="+devTenant+"&waitMs=300", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	require.Equal(t, http.StatusAccepted, resp.StatusCode)
	require.NotEmpty(t, resp.Header.Get("Retry-After"))

	var env errorEnvelope
	require.Equal(t, 422, h.call(http.MethodGet, "/v1/jobs/"+later.JobID.String()+"?tenant_id="+devTenant+"&waitMs=60000", nil, &env))
	require.Equal(t, "waitMs", env.Error.Details["field"])
}

func TestAdminAPIRetryAndCancel(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	recv := newReceiver(t, http.StatusBadRequest)
	ev, failed := h.deliverOne(recv.URL, "r.test")
	require.Equal(t, bpctype.StatusFailed, failed.Status)

	var env errorEnvelope
	require.Equal(t, http.StatusConflict, h.call(http.MethodPost, "/v1/jobs/"+failed.JobID.String()+"/cancel?tenant_id="+devTenant, nil, &env))
	require.Equal(t, "INVALID_STATE", env.Error.Code)

	// A retry queues the job again: with the tenant's queued_jobs quota
	// full (one scheduled job, quota 1) it is refused as an enqueue is.
	require.Equal(t, http.StatusOK, h.call(http.MethodPatch, "/v1/tenants/"+devTenant, map[string]any{"quotas": map[string]any{"queued_jobs": 1}}, nil))
	h.deliverLater(h.deliverPayload(), time.Now().Add(time.Hour))
	require.Equal(t, http.StatusTooManyRequests, h.call(http.MethodPost, "/v1/jobs/"+failed.JobID.String()+"/retry?tenant_id="+devTenant, nil, &env))
	require.Equal(t, "QUOTA_EXCEEDED", env.Error.Code)
	require.Equal(t, "queued_jobs", env.Error.Details["quota"])
	require.Equal(t, http.StatusOK, h.call(http.MethodPatch, "/v1/tenants/"+devTenant, map[string]any{"reset": []string{"queued_jobs"}}, nil))

	recv.set(http.StatusAccepted, nil)
	var retried bpctype.Job
	require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+failed.JobID.String()+"/retry?tenant_id="+devTenant, nil, &retried))
	require.Contains(t, []string{bpctype.StatusQueued, bpctype.StatusRunning, bpctype.StatusSucceeded}, retried.Status)
	require.Equal(t, bpctype.StatusSucceeded, h.waitJob(failed.JobID).Status)
	require.Equal(t, bpctype.DeliveryDelivered, h.delivery(ev.Deliveries[0].WebhookDeliveryID).Status)

	later := h.deliverLater(h.deliverPayload(), time.Now().Add(time.Hour))
	var cancelled bpctype.Job
	require.Equal(t, http.StatusOK, h.call(http.MethodPost, "/v1/jobs/"+later.JobID.String()+"/cancel?tenant_id="+devTenant, nil, &cancelled))
	require.Equal(t, bpctype.StatusCancelled, cancelled.Status)

	// Another tenant cannot see or touch the job.
	other := uuid.NewString()
	require.Equal(t, http.StatusNotFound, h.call(http.MethodPost, "/v1/jobs/"+later.JobID.String()+"/retry?tenant_id="+other, nil, &env))
	require.Equal(t, http.StatusNotFound, h.call(http.MethodGet, "/v1/jobs/"+later.JobID.String()+"?tenant_id="+other, nil, &env))
	h.requireConsistent()
}

func TestPingAndWebhookEndpointLifecycle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	recv := newReceiver(t, http.StatusOK)
	endpointID := h.subscribe(recv.URL, "*")

	var ping struct {
		WebhookDeliveryID uuid.UUID `json:"webhook_delivery_id"`
		JobID             uuid.UUID `json:"job_id"`
	}
	require.Equal(t, http.StatusAccepted, h.call(http.MethodPost, "/v1/webhook-endpoints/"+endpointID.String()+"/ping?tenant_id="+devTenant, nil, &ping))
	require.Equal(t, bpctype.StatusSucceeded, h.waitJob(ping.JobID).Status)
	reqs := recv.received()
	require.Len(t, reqs, 1)
	require.Equal(t, "webhook.ping", reqs[0].header.Get("X-BPC-Event-Type"))

	// The secret is never returned.
	var listing map[string]any
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/webhook-endpoints?tenant_id="+devTenant, nil, &listing))
	raw, _ := json.Marshal(listing)
	require.NotContains(t, string(raw), testSecret)
	require.NotContains(t, string(raw), "secret")

	// Deactivated: no fan-out. Deleted: gone from the list, ping is 404.
	var ep bpctype.WebhookEndpoint
	require.Equal(t, http.StatusOK, h.call(http.MethodPatch, "/v1/webhook-endpoints/"+endpointID.String()+"?tenant_id="+devTenant,
		map[string]any{"is_active": false}, &ep))
	require.False(t, ep.IsActive)
	require.Empty(t, h.emit("any.event", map[string]any{}).Deliveries)
	require.Equal(t, http.StatusNoContent, h.call(http.MethodDelete, "/v1/webhook-endpoints/"+endpointID.String()+"?tenant_id="+devTenant, nil, nil))
	var env errorEnvelope
	require.Equal(t, http.StatusNotFound, h.call(http.MethodPost, "/v1/webhook-endpoints/"+endpointID.String()+"/ping?tenant_id="+devTenant, nil, &env))

	// Validation of endpoints.
	for _, body := range []map[string]any{
		{"tenant_id": devTenant, "url": "ftp://example.com/x", "secret": testSecret},
		{"tenant_id": devTenant, "url": "https://example.com/x", "secret": "short"},
		{"tenant_id": devTenant, "url": "https://user:pw@example.com/x", "secret": testSecret},
	} {
		require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/webhook-endpoints", body, &env), "%v", body)
	}
	// Floats are refused in event payloads (decimals travel as strings).
	require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/events", map[string]any{
		"tenant_id": devTenant, "aggregate_type": "Passport", "aggregate_id": uuid.NewString(),
		"event_type": "x", "payload": map[string]any{"kwh": 1.5},
	}, &env))
	require.Equal(t, "payload", env.Error.Details["field"])

	n, err := passport.VerifyAuditChain(context.Background(), store.New(h.pool), store.DevTenantID)
	require.NoError(t, err)
	require.Equal(t, 2, n)
}

func TestProdRequiresHTTPSWebhooks(t *testing.T) {
	t.Parallel()
	// Private destinations allowed: with them refused, registering
	// example.com would resolve it, and tests send no DNS query off the
	// machine (webhook_destination_test.go covers the refusal).
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_ENV": "prod", "BPC_WEBHOOK_ALLOW_PRIVATE": "true",
		"BPC_PUBLIC_BASE_URL": "https://passports.example.com", "BPC_KEY_ENCRYPTION_KEY": "YWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWFhYWE="})
	// Prod seeds no tenant: the dev tenant of the first migration is gone.
	var tenants struct {
		Items []bpctype.Tenant `json:"items"`
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/tenants", nil, &tenants))
	require.Empty(t, tenants.Items, "no tenant seeded in prod")
	var tenant bpctype.Tenant
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/tenants", map[string]any{"slug": "acme", "name": "Acme"}, &tenant))

	var env errorEnvelope
	require.Equal(t, http.StatusUnprocessableEntity, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": tenant.TenantID, "url": "http://example.com/hook", "secret": testSecret}, &env))
	require.Equal(t, "url", env.Error.Details["field"])
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/webhook-endpoints",
		map[string]any{"tenant_id": tenant.TenantID, "url": "https://example.com/hook", "secret": testSecret}, nil))
}

// An id in a payload that does not exist in the job's tenant — made up, or
// another tenant's — is a 404 naming the field at the API, and nothing is
// enqueued; the same id in its own tenant is accepted.
func TestEnqueueRefusesUnknownAndForeignIDs(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	var other bpctype.Tenant
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/tenants", map[string]any{"slug": "other", "name": "Other"}, &other))
	var sn struct {
		SnapshotID uuid.UUID `json:"snapshot_id"`
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": devTenant}, &sn))
	before := h.riverJobCount()

	for name, payload := range map[string]map[string]any{
		"made up":        {"snapshot_id": uuid.New()},
		"other tenant's": {"snapshot_id": sn.SnapshotID},
	} {
		var env errorEnvelope
		require.Equal(t, http.StatusNotFound, h.call(http.MethodPost, "/v1/jobs", map[string]any{
			"type": jobargs.KindBuildSnapshot, "tenant_id": other.TenantID, "payload": payload}, &env), name)
		require.Equal(t, "NOT_FOUND", env.Error.Code, name)
		require.Equal(t, "payload.snapshot_id", env.Error.Details["field"], name)
		require.Contains(t, env.Error.Message, "snapshot", name)
	}
	// In a batch, the item is named; one foreign id rejects the whole batch.
	var env errorEnvelope
	require.Equal(t, http.StatusNotFound, h.call(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": []any{
		map[string]any{"type": jobargs.KindBuildSnapshot, "tenant_id": devTenant, "payload": map[string]any{"snapshot_id": sn.SnapshotID}},
		map[string]any{"type": jobargs.KindCompile, "tenant_id": other.TenantID, "payload": map[string]any{
			"passport_id": uuid.New(), "snapshot_id": sn.SnapshotID, "rule_package_version_id": uuid.New()}},
	}}, &env))
	require.Equal(t, "jobs[1].payload.passport_id", env.Error.Details["field"])
	require.Equal(t, before, h.riverJobCount(), "nothing enqueued")

	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindBuildSnapshot, "tenant_id": devTenant, "payload": map[string]any{"snapshot_id": sn.SnapshotID}}, nil))
	require.Equal(t, before+1, h.riverJobCount())
}

// Retry is for work that did not get done: a SUCCEEDED job answers 409.
func TestRetryOfSucceededJobIsRefused(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAll, nil)
	var job bpctype.Job
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", map[string]any{
		"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": h.deliverPayload()}, &job))
	require.Equal(t, bpctype.StatusSucceeded, h.waitJob(job.JobID).Status)
	var env errorEnvelope
	require.Equal(t, http.StatusConflict, h.call(http.MethodPost, "/v1/jobs/"+job.JobID.String()+"/retry?tenant_id="+devTenant, nil, &env))
	require.Equal(t, "INVALID_STATE", env.Error.Code)
	require.Equal(t, bpctype.StatusSucceeded, h.job(job.JobID).Status)
	require.Equal(t, 1, h.riverJobCount())
}

// BPC_QUEUE_MAX_DEPTH: an enqueue into a queue holding more available jobs
// than the limit answers 429 RATE_LIMITED with Retry-After; other queues
// keep accepting work. The API role works no jobs, so the backlog stays.
func TestQueueMaxDepthAnswers429(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, map[string]string{"BPC_QUEUE_MAX_DEPTH": "2"})
	payload := h.deliverPayload()
	webhook := func() map[string]any {
		return map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant,
			"payload": payload}
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs:batch",
		map[string]any{"jobs": []any{webhook(), webhook(), webhook()}}, nil), "a batch is checked once, before it")
	time.Sleep(300 * time.Millisecond) // past the depth cache

	status, hdr, raw := h.headers(http.MethodPost, "/v1/jobs", webhook(), map[string]string{"Authorization": "Bearer " + testToken})
	require.Equal(t, http.StatusTooManyRequests, status, "%s", raw)
	require.Contains(t, string(raw), `"code":"RATE_LIMITED"`)
	require.Contains(t, string(raw), `"queue":"webhooks"`)
	require.Equal(t, "1", hdr.Get("Retry-After"))

	// The pipeline queue is not full.
	var sn struct {
		SnapshotID uuid.UUID `json:"snapshot_id"`
	}
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/snapshots", map[string]any{"tenant_id": devTenant}, &sn))
	require.Equal(t, http.StatusAccepted, h.call(http.MethodPost, "/v1/snapshots/"+sn.SnapshotID.String()+"/build",
		map[string]any{"tenant_id": devTenant}, nil))
}

// The job an enqueue answers is the SSOT row byte for byte: GET
// /v1/jobs/{id} right after answers the same bytes, for single and batch
// enqueues, new and existing jobs, with and without an idempotency key,
// with the type's defaults and with priority, max_attempts and
// scheduled_at set.
func TestEnqueueAnswersTheSSOTRowAsGETDoes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	auth := map[string]string{"Authorization": "Bearer " + testToken}
	later := time.Now().Add(time.Hour).Truncate(time.Second).Add(123456789 * time.Nanosecond)
	jobOf := func(key string, overrides bool) map[string]any {
		m := map[string]any{"type": jobargs.KindDeliverWebhook, "tenant_id": devTenant, "payload": h.deliverPayload()}
		if key != "" {
			m["idempotency_key"] = key
		}
		if overrides {
			m["priority"], m["max_attempts"], m["scheduled_at"] = 0, 7, later
		}
		return m
	}
	requireAsGET := func(answer []byte, existing *bool, what string) {
		t.Helper()
		var job struct {
			JobID    uuid.UUID `json:"job_id"`
			Existing *bool     `json:"existing"`
		}
		require.NoError(t, json.Unmarshal(answer, &job), what)
		status, got := h.raw(http.MethodGet, "/v1/jobs/"+job.JobID.String()+"?tenant_id="+devTenant, nil, auth)
		require.Equal(t, http.StatusOK, status, "%s: %s", what, got)
		want := strings.TrimSuffix(string(got), "\n")
		if existing != nil {
			want = strings.TrimSuffix(want, "}") + `,"existing":` + strconv.FormatBool(*existing) + "}"
		}
		require.Equal(t, want, strings.TrimSuffix(string(answer), "\n"), what)
	}
	yes, no := true, false

	for _, c := range []struct {
		name      string
		key       string
		overrides bool
	}{
		{"defaults", "", false},
		{"overrides", "", true},
		{"idempotency key", "same-bytes-1", false},
		{"idempotency key and overrides", "same-bytes-2", true},
	} {
		req := jobOf(c.key, c.overrides)
		status, answer := h.raw(http.MethodPost, "/v1/jobs", req, auth)
		require.Equal(t, http.StatusCreated, status, "%s: %s", c.name, answer)
		requireAsGET(answer, nil, c.name)
		if c.key != "" {
			status, answer = h.raw(http.MethodPost, "/v1/jobs", req, auth)
			require.Equal(t, http.StatusOK, status, "%s again: %s", c.name, answer)
			requireAsGET(answer, nil, c.name+" again")
		}
	}

	// A batch: new jobs of every kind above, one repeating an earlier key of
	// the batch, and one whose key was used before the batch.
	jobs := []any{jobOf("", false), jobOf("", true), jobOf("batch-1", false), jobOf("batch-2", true)}
	jobs = append(jobs, jobs[2])
	before := jobOf("batch-0", true)
	require.Equal(t, http.StatusCreated, h.call(http.MethodPost, "/v1/jobs", before, nil))
	jobs = append(jobs, before)
	status, answer := h.raw(http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": jobs}, auth)
	require.Equal(t, http.StatusCreated, status, "%s", answer)
	var batch struct {
		Items []json.RawMessage `json:"items"`
	}
	require.NoError(t, json.Unmarshal(answer, &batch))
	require.Len(t, batch.Items, len(jobs))
	for i, item := range batch.Items {
		existing := &no
		if i >= 4 {
			existing = &yes
		}
		requireAsGET(item, existing, "batch item "+strconv.Itoa(i))
	}
	h.requireConsistent()
}
