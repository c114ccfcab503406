package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/api"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// BenchmarkHTTPEnqueue measures POST /v1/jobs (concurrent single requests)
// and POST /v1/jobs:batch through the real router over loopback.
func BenchmarkHTTPEnqueue(b *testing.B) {
	skipUnlessBench(b)
	pool := testdb.New(b)
	client, err := workers.NewClient(pool, workers.ClientOptions{ID: "bench-api", Logger: quiet, MaxAttempts: 5, BackoffUnit: time.Second, PollInterval: time.Second})
	require.NoError(b, err)
	reg := prometheus.NewRegistry()
	const token = "bench-admin-token-0123456789"
	srv := &api.Server{
		Config: api.Config{Env: "test", AdminToken: token, MaxBodyBytes: 8 << 20, Kinds: workers.Kinds()},
		Store:  store.New(pool), River: client, Metrics: api.NewMetrics(reg), Gatherer: reg, Admin: true,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

	post := func(path string, body any) int {
		buf, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(buf))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	// The API refuses ids that do not exist: every job names one real
	// delivery (of an event that fans out to nothing, and an endpoint that
	// no subscription names).
	deliveryID := uuid.New()
	{
		buf, _ := json.Marshal(map[string]any{"tenant_id": store.DevTenantID, "aggregate_type": "Bench",
			"aggregate_id": uuid.New(), "event_type": "bench.only", "payload": map[string]any{}})
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/events", bytes.NewReader(buf))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		require.NoError(b, err)
		var ev struct {
			EventID uuid.UUID `json:"event_id"`
		}
		require.NoError(b, json.NewDecoder(resp.Body).Decode(&ev))
		resp.Body.Close()
		ctx := context.Background()
		_, err = pool.Exec(ctx, `INSERT INTO webhook_endpoints (webhook_endpoint_id, tenant_id, url, secret, is_active)
			VALUES ($1, $2, 'http://127.0.0.1:9/bench', 'bench-secret-0123456789', false)`, deliveryID, store.DevTenantID)
		require.NoError(b, err)
		_, err = pool.Exec(ctx, `INSERT INTO webhook_deliveries (webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id)
			VALUES ($1, $2, $1, $3)`, deliveryID, store.DevTenantID, ev.EventID)
		require.NoError(b, err)
	}
	job := func() map[string]any {
		return map[string]any{
			"type": jobargs.KindDeliverWebhook, "tenant_id": store.DevTenantID,
			"payload": map[string]any{"webhook_delivery_id": deliveryID},
		}
	}

	single := envInt("BPC_BENCH_HTTP_REQUESTS", 5000)
	clients := envInt("BPC_BENCH_HTTP_CLIENTS", 16)
	batches, batchSize := envInt("BPC_BENCH_HTTP_BATCHES", 20), 1000
	for range b.N {
		var next atomic.Int64
		var wg sync.WaitGroup
		start := time.Now()
		for range clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for next.Add(1) <= int64(single) {
					if status := post("/v1/jobs", job()); status != http.StatusCreated {
						b.Errorf("POST /v1/jobs: %d", status)
						return
					}
				}
			}()
		}
		wg.Wait()
		singleRate := float64(single) / time.Since(start).Seconds()

		start = time.Now()
		for range batches {
			jobs := make([]map[string]any, batchSize)
			for i := range jobs {
				jobs[i] = job()
			}
			require.Equal(b, http.StatusCreated, post("/v1/jobs:batch", map[string]any{"jobs": jobs}))
		}
		batchRate := float64(batches*batchSize) / time.Since(start).Seconds()

		b.ReportMetric(singleRate, "single_jobs/s")
		b.ReportMetric(batchRate, "batch_jobs/s")
		b.Logf("(d) HTTP enqueue: single %d requests over %d clients = %.0f jobs/s; batch %d×%d = %.0f jobs/s",
			single, clients, singleRate, batches, batchSize, batchRate)
	}
}
