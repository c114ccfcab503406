package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/api"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// noopArgs is the bench-only job kind: it carries a tenant like every job.
type noopArgs struct {
	TenantID   uuid.UUID `json:"tenant_id"`
	WorkItemID uuid.UUID `json:"work_item_id"`
}

func (noopArgs) Kind() string { return "BENCH_NOOP" }

const benchQueue = "bench"

type noopWorker struct {
	river.WorkerDefaults[noopArgs]
	done *atomic.Int64
}

func (w *noopWorker) Work(context.Context, *river.Job[noopArgs]) error {
	w.done.Add(1)
	return nil
}

func skipUnlessBench(b *testing.B) {
	if os.Getenv("BPC_BENCH") != "1" {
		b.Skip("set BPC_BENCH=1 (make bench) to run the benchmarks")
	}
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))

// schemaPool returns a pool over a fresh schema with River's migrations only
// (bare) or every migration of the service.
func schemaPool(b *testing.B, withService bool) *pgxpool.Pool {
	mode := testdb.MigrateRiver
	if withService {
		mode = testdb.MigrateAll
	}
	return testdb.NewWithOptions(b, testdb.Options{LeaseSeconds: 60, MaxConns: 40, Migrate: mode})
}

// insertNoops pre-inserts n no-op jobs in batches (River's COPY fast path).
func insertNoops(b *testing.B, client *river.Client[pgx.Tx], n int) {
	b.Helper()
	ctx := context.Background()
	const batch = 5000
	for start := 0; start < n; start += batch {
		params := make([]river.InsertManyParams, 0, batch)
		for i := start; i < min(start+batch, n); i++ {
			params = append(params, river.InsertManyParams{
				Args:       noopArgs{TenantID: store.DevTenantID, WorkItemID: uuid.New()},
				InsertOpts: &river.InsertOpts{Queue: benchQueue},
			})
		}
		_, err := client.InsertManyFast(ctx, params)
		require.NoError(b, err)
	}
}

// burnDown starts client and returns how long it takes until all n jobs are
// completed in the database.
func burnDown(b *testing.B, client *river.Client[pgx.Tx], pool *pgxpool.Pool, n int) time.Duration {
	b.Helper()
	ctx := context.Background()
	start := time.Now()
	require.NoError(b, client.Start(ctx))
	defer func() { require.NoError(b, client.Stop(ctx)) }()
	for {
		var completed int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed'`).Scan(&completed))
		if completed == n {
			return time.Since(start)
		}
		if time.Since(start) > 15*time.Minute {
			b.Fatalf("only %d of %d jobs completed after 15 minutes", completed, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkBurnDown compares (a) bare River with (b) the service's full
// path on the same database and reports (c) the ratio b/a.
func BenchmarkBurnDown(b *testing.B) {
	skipUnlessBench(b)
	n := envInt("BPC_BENCH_JOBS", 100_000)
	// River fetches at most MaxWorkers jobs per FetchCooldown (100 ms), so
	// 100 workers cap any client at 1000 jobs/s whatever the database does.
	// 2000 workers lift that cap well above what two cores can burn down,
	// so both sides are limited by the work itself.
	concurrency := envInt("BPC_BENCH_WORKERS", 2000)
	rounds := envInt("BPC_BENCH_ROUNDS", 3)
	ctx := context.Background()

	var bare, service []float64
	for range b.N {
		// Alternate (a) and (b) so that both see the same machine state.
		for round := range rounds {
			{ // (a) bare River: default config, no middleware, no mirror.
				pool := schemaPool(b, false)
				var done atomic.Int64
				w := river.NewWorkers()
				river.AddWorker(w, &noopWorker{done: &done})
				client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
					Logger:  quiet,
					Queues:  map[string]river.QueueConfig{benchQueue: {MaxWorkers: concurrency}},
					Workers: w,
				})
				require.NoError(b, err)
				insertNoops(b, client, n)
				elapsed := burnDown(b, client, pool, n)
				bare = append(bare, float64(n)/elapsed.Seconds())
				b.Logf("round %d (a) bare River:   %d jobs in %s = %.0f jobs/s", round+1, n, elapsed.Round(time.Millisecond), bare[len(bare)-1])
			}
			{ // (b) the service: its client config, observer, SSOT mirror.
				pool := schemaPool(b, true)
				var done atomic.Int64
				w := river.NewWorkers()
				river.AddWorker(w, &noopWorker{done: &done})
				metrics := workers.NewMetrics(prometheus.NewRegistry())
				// The service's JSON logger at info (two lines per job), discarded.
				logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
				// With the lease keeper every job gets (a heartbeat per running
				// job; the defaults renew every 30 s, so no-op jobs never renew).
				leases := &workers.Leases{Store: store.New(pool), Logger: logger, Owner: "bench-worker",
					TTL: time.Minute, Renew: 30 * time.Second}
				client, err := workers.NewClient(pool, workers.ClientOptions{
					ID: "bench-worker", Logger: logger, Work: true, Concurrency: concurrency,
					PollInterval: time.Second, BackoffUnit: time.Second, MaxAttempts: 5,
					Workers: w, Observer: &workers.Observer{Logger: logger, Metrics: metrics, Leases: leases},
					ExtraQueues: []string{benchQueue},
				})
				require.NoError(b, err)
				insertNoops(b, client, n)
				elapsed := burnDown(b, client, pool, n)
				service = append(service, float64(n)/elapsed.Seconds())
				b.Logf("round %d (b) service path: %d jobs in %s = %.0f jobs/s", round+1, n, elapsed.Round(time.Millisecond), service[len(service)-1])

				// The mirror really did the work: every SSOT row SUCCEEDED, no drift.
				var succeeded int
				require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'SUCCEEDED' AND attempts = 1`).Scan(&succeeded))
				require.Equal(b, n, succeeded)
				rep, err := store.New(pool).CheckConsistency(ctx)
				require.NoError(b, err)
				require.True(b, rep.OK(), "drift: %+v", rep.Drifts)
				b.Logf("round %d (b) mirror updates that were HOT: %s", round+1, hotShare(b, pool))
			}
		}
	}
	// Each round runs (a) then (b) back to back; the median of the
	// per-round ratios is robust to a noisy neighbour slowing one round.
	ratios := make([]float64, len(bare))
	for i := range bare {
		ratios[i] = service[i] / bare[i]
	}
	a, s, r := median(bare), median(service), median(ratios)
	b.ReportMetric(a, "bare_jobs/s")
	b.ReportMetric(s, "service_jobs/s")
	b.ReportMetric(r, "ratio_b/a")
	b.Logf("median of %d rounds: (a) %.0f jobs/s, (b) %.0f jobs/s, (c) ratio b/a = %.3f (per round: %s)",
		len(ratios), a, s, r, fmtRatios(ratios))
}

// hotShare reports how many updates of jobs were HOT (touched no index).
// Backends publish their statistics when they exit, hence the reset.
func hotShare(b *testing.B, pool *pgxpool.Pool) string {
	pool.Reset()
	time.Sleep(200 * time.Millisecond)
	var upd, hot int64
	require.NoError(b, pool.QueryRow(context.Background(),
		`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass`).Scan(&upd, &hot))
	if upd == 0 {
		return "no statistics"
	}
	return fmt.Sprintf("%d of %d (%.1f%%)", hot, upd, 100*float64(hot)/float64(upd))
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, ", ")
}

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
