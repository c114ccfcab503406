package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/http/access"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// TestTenantRequestBudget: all of a tenant's keys share its request
// budget, exactly its burst, whatever the number of keys; another tenant
// is not touched; a batch costs one token per job, one over a burst can
// never pass (422), and one the budget cannot hold yet is 429 and costs
// only its request.
func TestTenantRequestBudget(t *testing.T) {
	t.Parallel()
	// A budget that does not refill within the test (one token in 1000 s),
	// so that counts are exact on a busy machine; the keys' limit (burst 20)
	// is above what any one key sends before the tenant's runs out.
	h := newHarnessWith(t, service.RoleAPI, map[string]string{"BPC_RATE_LIMIT_RPS": "1", "BPC_RATE_LIMIT_BURST": "20"},
		func(c *service.Config) { c.TenantRateLimit = access.Budget{RPS: 0.001, Burst: 10} })
	bearer := func(k apiKey) map[string]string { return map[string]string{"Authorization": "Bearer " + k.Token} }
	requireLimited := func(status int, header http.Header, raw []byte, limited string, what string) {
		t.Helper()
		require.Equal(t, http.StatusTooManyRequests, status, "%s: %s", what, raw)
		var e errorEnvelope
		require.NoError(t, json.Unmarshal(raw, &e))
		require.Equal(t, "RATE_LIMITED", e.Error.Code, what)
		require.Equal(t, limited, e.Error.Details["limited"], what)
		after, err := strconv.Atoi(header.Get("Retry-After"))
		require.NoError(t, err, what)
		require.EqualValues(t, after, e.Error.Details["retry_after_seconds"], what)
		require.Greater(t, after, 100, "%s: a token takes 1000 s at this rate; Retry-After says so", what)
	}

	// Six keys of one tenant: ten requests in all, then every key is
	// refused with the tenant named.
	tenantA := h.newTenant()
	keys := make([]apiKey, 6)
	for i := range keys {
		keys[i] = h.createKey(tenantA, "reader", nil)
	}
	passed := 0
	for i := 0; ; i++ {
		status, header, raw := h.headers(http.MethodGet, "/v1/documents", nil, bearer(keys[i%len(keys)]))
		if status == http.StatusTooManyRequests {
			requireLimited(status, header, raw, "tenant", "the request after the burst")
			break
		}
		require.Equal(t, http.StatusOK, status, "%s", raw)
		passed++
		require.Less(t, passed, 100, "the tenant's budget never refused")
	}
	require.Equal(t, 10, passed, "six keys together get the tenant's burst, no more")
	for _, k := range keys {
		status, header, raw := h.headers(http.MethodGet, "/v1/documents", nil, bearer(k))
		requireLimited(status, header, raw, "tenant", "each key of the tenant")
	}
	fresh := h.createKey(tenantA, "reader", nil)
	status, header, raw := h.headers(http.MethodGet, "/v1/documents", nil, bearer(fresh))
	requireLimited(status, header, raw, "tenant", "a key minted after the budget ran out")

	// Another tenant is not touched; the platform token has no budget.
	other := h.createKey(h.newTenant(), "reader", nil)
	for range 5 {
		status, raw := h.raw(http.MethodGet, "/v1/documents", nil, bearer(other))
		require.Equal(t, http.StatusOK, status, "%s", raw)
	}
	require.Equal(t, http.StatusOK, h.call(http.MethodGet, "/v1/documents?tenant_id="+tenantA, nil, nil))

	// Batches: 4 + 5 jobs and one request take the tenant's 10; a batch of
	// 2 then is 429 and costs its request only.
	tenantB := h.newTenant()
	tenantBID := uuid.MustParse(tenantB)
	batchOf := func(tenantID uuid.UUID, n int) map[string]any {
		jobs := make([]map[string]any, n)
		for i := range jobs {
			jobs[i] = map[string]any{"type": jobargs.KindDeliverWebhook, "payload": h.deliverPayloadFor(tenantID)}
		}
		return map[string]any{"jobs": jobs}
	}
	batch := func(n int) map[string]any { return batchOf(tenantBID, n) }
	w1, w2, w3 := h.createKey(tenantB, "writer", nil), h.createKey(tenantB, "writer", nil), h.createKey(tenantB, "writer", nil)
	status, raw = h.raw(http.MethodPost, "/v1/jobs:batch", batch(4), bearer(w1))
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.raw(http.MethodPost, "/v1/jobs:batch", batch(5), bearer(w2))
	require.Equal(t, http.StatusCreated, status, "%s", raw)
	status, raw = h.raw(http.MethodGet, "/v1/documents", nil, bearer(w3))
	require.Equal(t, http.StatusOK, status, "the tenant's tenth token: %s", raw)
	status, header, raw = h.headers(http.MethodPost, "/v1/jobs:batch", batch(2), bearer(w3))
	requireLimited(status, header, raw, "tenant", "a batch the tenant's budget cannot hold")
	var count int
	require.NoError(t, h.pool.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE tenant_id = $1`, tenantBID).Scan(&count))
	require.Equal(t, 9, count, "the refused batch enqueued nothing")

	// Over the tenant's burst: never, so 422 naming jobs and the limit.
	tenantC := h.createKey(h.newTenant(), "writer", nil)
	status, raw = h.raw(http.MethodPost, "/v1/jobs:batch", batchOf(tenantC.TenantID, 11), bearer(tenantC))
	require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
	var e errorEnvelope
	require.NoError(t, json.Unmarshal(raw, &e))
	require.Equal(t, "VALIDATION_ERROR", e.Error.Code)
	require.Equal(t, "jobs", e.Error.Details["field"])
	require.Equal(t, "tenant", e.Error.Details["limited"])
	require.Equal(t, float64(10), e.Error.Details["limit"])
	require.Contains(t, e.Error.Message, "at most 10 jobs per batch")

	// The key's limit counts requests, a batch one of them: with the
	// platform's override of its tenant's burst (50), one key sends a batch
	// of 21 jobs past its own burst of 20, and the tenant's budget pays 21.
	tenantD := h.createKey(h.newTenant(), "writer", nil)
	require.Equal(t, http.StatusOK, h.call(http.MethodPatch, "/v1/tenants/"+tenantD.TenantID.String(),
		map[string]any{"quotas": map[string]any{"rate_limit_burst": 50}}, nil))
	status, raw = h.raw(http.MethodPost, "/v1/jobs:batch", batchOf(tenantD.TenantID, 21), bearer(tenantD))
	require.Equal(t, http.StatusCreated, status, "a batch over the key's burst, within its tenant's: %s", raw)
	status, raw = h.raw(http.MethodPost, "/v1/jobs:batch", batchOf(tenantD.TenantID, 29), bearer(tenantD))
	require.Equal(t, http.StatusCreated, status, "the rest of the tenant's 50: %s", raw)
	status, header, raw = h.headers(http.MethodGet, "/v1/documents", nil, bearer(tenantD))
	requireLimited(status, header, raw, "tenant", "the tenant's overridden budget, spent")

	status, raw = h.as(testToken, http.MethodGet, "/v1/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	// 1 + 6 + 1 + 1 + 1 refusals of the tenant budgets above.
	require.Regexp(t, `(?m)^bpc_rate_limited_total\{scope="tenant"\} 10$`, string(raw),
		"the tenant refusals are counted by scope, not by tenant")
	require.NotContains(t, string(raw), tenantA, "no series names a tenant")
	logged := false
	for _, line := range strings.Split(h.logs.String(), "\n") {
		if strings.Contains(line, `"msg":"http request"`) && strings.Contains(line, `"status":429`) &&
			strings.Contains(line, "api_key:"+fresh.APIKeyID.String()+" tenant:"+tenantA) {
			logged = true
		}
	}
	require.True(t, logged, "the log line of a refused request names its key and tenant")
}

// TestPriorityCriticalIsThePlatforms: a tenant key asking for priority 0
// on any enqueue route is 422 naming priority; 1 is fine, and the platform
// token may ask for 0.
func TestPriorityCriticalIsThePlatforms(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	tenant := h.newTenant()
	tenantID := uuid.MustParse(tenant)
	writer := h.createKey(tenant, "writer", nil)
	job := func(priority any) map[string]any {
		j := map[string]any{"type": jobargs.KindDeliverWebhook, "payload": h.deliverPayloadFor(tenantID)}
		if priority != nil {
			j["priority"] = priority
		}
		return j
	}
	requireField := func(status int, raw []byte, field string) {
		t.Helper()
		require.Equal(t, http.StatusUnprocessableEntity, status, "%s", raw)
		var e errorEnvelope
		require.NoError(t, json.Unmarshal(raw, &e))
		require.Equal(t, "VALIDATION_ERROR", e.Error.Code)
		require.Equal(t, field, e.Error.Details["field"])
		require.Contains(t, e.Error.Message, "platform token")
	}
	status, raw := h.as(writer.Token, http.MethodPost, "/v1/jobs", job(0))
	requireField(status, raw, "priority")
	status, raw = h.as(writer.Token, http.MethodPost, "/v1/jobs:batch", map[string]any{"jobs": []any{job(1), job(0)}})
	requireField(status, raw, "jobs[1].priority")
	var count int
	require.NoError(t, h.pool.QueryRow(context.Background(), `SELECT count(*) FROM jobs WHERE tenant_id = $1`, tenantID).Scan(&count))
	require.Zero(t, count, "nothing was enqueued")

	for _, p := range []any{1, 3, nil} {
		status, raw = h.as(writer.Token, http.MethodPost, "/v1/jobs", job(p))
		require.Equal(t, http.StatusCreated, status, "priority %v: %s", p, raw)
	}
	status, raw = h.as(testToken, http.MethodPost, "/v1/jobs", map[string]any{"tenant_id": tenant, "type": jobargs.KindDeliverWebhook,
		"payload": h.deliverPayloadFor(tenantID), "priority": 0})
	require.Equal(t, http.StatusCreated, status, "the platform's: %s", raw)
	var j struct {
		Priority int `json:"priority"`
	}
	require.NoError(t, json.Unmarshal(raw, &j))
	require.Zero(t, j.Priority)
}

// TestRacingAppendsAnswer201Or409: 90 appends to one aggregate from 6
// clients at once answer 201 or 409 EVENT_VERSION_CONFLICT only (never a
// 5xx, nothing logged at ERROR), and the aggregate's chain still verifies,
// one version per 201.
func TestRacingAppendsAnswer201Or409(t *testing.T) {
	t.Parallel()
	h := newHarness(t, service.RoleAPI, nil)
	tenant := h.newTenant()
	aggregate := uuid.New()
	const clients, appends = 6, 15

	var mu sync.Mutex
	statuses := map[int]int{}
	var failures []string
	var wg sync.WaitGroup
	start := make(chan struct{})
	for c := range clients {
		key := h.createKey(tenant, "writer", nil)
		client := &http.Client{Transport: &http.Transport{}}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for i := range appends {
				body, _ := json.Marshal(map[string]any{"aggregate_type": "Order", "aggregate_id": aggregate,
					"event_type": "order.noted", "payload": map[string]any{"client": c, "n": i}})
				req, _ := http.NewRequest(http.MethodPost, h.base+"/v1/events", bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key.Token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					mu.Lock()
					failures = append(failures, err.Error())
					mu.Unlock()
					continue
				}
				raw, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				mu.Lock()
				statuses[resp.StatusCode]++
				if resp.StatusCode == http.StatusConflict {
					var e errorEnvelope
					if json.Unmarshal(raw, &e) != nil || e.Error.Code != "EVENT_VERSION_CONFLICT" {
						failures = append(failures, "409 without EVENT_VERSION_CONFLICT: "+string(raw))
					}
				} else if resp.StatusCode != http.StatusCreated {
					failures = append(failures, strconv.Itoa(resp.StatusCode)+": "+string(raw))
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	require.Empty(t, failures, "statuses: %v", statuses)
	require.Equal(t, clients*appends, statuses[http.StatusCreated]+statuses[http.StatusConflict], "%v", statuses)
	t.Logf("racing appends: %d × 201, %d × 409", statuses[http.StatusCreated], statuses[http.StatusConflict])

	var versions []int64
	rows, err := h.pool.Query(context.Background(), `SELECT aggregate_version FROM events
		WHERE tenant_id = $1 AND aggregate_id = $2 ORDER BY aggregate_version`, tenant, aggregate)
	require.NoError(t, err)
	for rows.Next() {
		var v int64
		require.NoError(t, rows.Scan(&v))
		versions = append(versions, v)
	}
	require.NoError(t, rows.Err())
	require.Len(t, versions, statuses[http.StatusCreated], "one version per 201")
	for i, v := range versions {
		require.Equal(t, int64(i+1), v)
	}
	_, err = passport.VerifyAuditChain(context.Background(), store.New(h.pool), uuid.MustParse(tenant))
	require.NoError(t, err)
	require.NotContains(t, h.logs.String(), `"level":"ERROR"`)

	status, raw := h.as(testToken, http.MethodGet, "/v1/metrics", nil)
	require.Equal(t, http.StatusOK, status)
	require.False(t, strings.Contains(string(raw), `route="/v1/events",status="5`), "no 5xx counted for the appends")
}
