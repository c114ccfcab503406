package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// BenchmarkHTTPEnqueue compares the HTTP enqueue path with River's own
// insert, in one run on one pool and one River client (the service's
// configuration, so the SSOT mirror trigger fires on both sides), with the
// same DELIVER_WEBHOOK args:
//
//   - single: POST /v1/jobs through the real router over loopback (HTTP
//     keep-alive) against River's Insert (one job per transaction), both
//     from the same number of concurrent clients;
//   - batch: POST /v1/jobs:batch against River's InsertMany of the same
//     size, one after another.
//
// After one uncounted warm-up round of each, rounds alternate which side
// goes first. It prints each side's min/median/max jobs/s, the ratio of the
// medians (HTTP/direct), and per request the database round trips (pgx
// tracer) and the allocations of the whole process (client and server).
// Knobs: BPC_BENCH_HTTP_ROUNDS (5), BPC_BENCH_HTTP_REQUESTS (3000 single
// requests a round), BPC_BENCH_HTTP_CLIENTS (16), BPC_BENCH_HTTP_BATCHES
// (10 batches of 1000 a round).
func BenchmarkHTTPEnqueue(b *testing.B) {
	skipUnlessBench(b)
	rounds := envInt("BPC_BENCH_HTTP_ROUNDS", 5)
	single := envInt("BPC_BENCH_HTTP_REQUESTS", 3000)
	clients := envInt("BPC_BENCH_HTTP_CLIENTS", 16)
	batches, batchSize := envInt("BPC_BENCH_HTTP_BATCHES", 10), 1000

	trips := &testdb.RoundTrips{}
	pool := testdb.NewWithOptions(b, testdb.Options{MaxConns: int32(clients) + 4, Tracer: trips})
	client, err := jobrun.NewClient(pool, jobrun.ClientOptions{ID: "bench-api", Logger: quiet, MaxAttempts: 5, BackoffUnit: time.Second, PollInterval: time.Second})
	require.NoError(b, err)
	const token = benchToken
	ts := httptest.NewServer(benchAPI(store.New(pool), client).Handler())
	defer ts.Close()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConns: 2 * clients, MaxIdleConnsPerHost: 2 * clients}}

	post := func(path string, body []byte) int {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	deliveryID := benchDelivery(b, pool, func(body []byte) (*http.Response, error) {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/v1/events", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+token)
		return httpClient.Do(req)
	})
	job := map[string]any{
		"type": jobargs.KindDeliverWebhook, "tenant_id": store.DevTenantID,
		"payload": map[string]any{"webhook_delivery_id": deliveryID},
	}
	args := jobargs.DeliverWebhookArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, WebhookDeliveryID: deliveryID}
	singleBody, err := json.Marshal(job)
	require.NoError(b, err)
	batchJobs := make([]map[string]any, batchSize)
	for i := range batchJobs {
		batchJobs[i] = job
	}
	batchBody, err := json.Marshal(map[string]any{"jobs": batchJobs})
	require.NoError(b, err)
	manyParams := make([]river.InsertManyParams, batchSize)
	for i := range manyParams {
		manyParams[i] = river.InsertManyParams{Args: args}
	}
	ctx := context.Background()

	// concurrently runs n calls of one from the clients.
	concurrently := func(n int, one func() error) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for range clients {
			wg.Go(func() {
				for next.Add(1) <= int64(n) {
					if err := one(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	sides := map[string]func(n int){
		"http single": func(n int) {
			concurrently(n, func() error {
				if status := post("/v1/jobs", singleBody); status != http.StatusCreated {
					return fmt.Errorf("POST /v1/jobs: %d", status)
				}
				return nil
			})
		},
		"river Insert": func(n int) {
			concurrently(n, func() error {
				_, err := client.Insert(ctx, args, nil)
				return err
			})
		},
		"http batch": func(n int) {
			for range n / batchSize {
				if status := post("/v1/jobs:batch", batchBody); status != http.StatusCreated {
					b.Fatalf("POST /v1/jobs:batch: %d", status)
				}
			}
		},
		"river InsertMany": func(n int) {
			for range n / batchSize {
				_, err := client.InsertMany(ctx, manyParams)
				require.NoError(b, err)
			}
		},
	}
	type result struct {
		rates              []float64
		trips, allocs, req float64
		cpu                cpuTimes
		backends           time.Duration
	}
	results := map[string]*result{}
	run := func(side string, jobs, requests int, counted bool) {
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		t0 := trips.Count()
		cpu0, db0 := readCPU(), backendsCPU(b, pool)
		start := time.Now()
		sides[side](jobs)
		elapsed := time.Since(start)
		cpu1, db1 := readCPU(), backendsCPU(b, pool)
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if !counted {
			return
		}
		r := results[side]
		if r == nil {
			r = &result{}
			results[side] = r
		}
		r.rates = append(r.rates, float64(jobs)/elapsed.Seconds())
		r.trips += float64(trips.Count() - t0)
		r.allocs += float64(after.Mallocs - before.Mallocs)
		r.req += float64(requests)
		r.cpu.proc += cpu1.proc - cpu0.proc
		r.cpu.postgres += cpu1.postgres - cpu0.postgres
		r.backends += db1 - db0
	}
	pairs := [][2]string{{"http single", "river Insert"}, {"http batch", "river InsertMany"}}
	sizes := map[string][2]int{ // jobs, requests of a round
		"http single": {single, single}, "river Insert": {single, single},
		"http batch": {batches * batchSize, batches}, "river InsertMany": {batches * batchSize, batches},
	}

	for range b.N {
		for _, pair := range pairs {
			for _, side := range pair {
				run(side, max(sizes[side][0]/10, min(batchSize, sizes[side][0])), 0, false)
			}
		}
		for round := range rounds {
			for _, pair := range pairs {
				order := pair
				if round%2 == 1 {
					order = [2]string{pair[1], pair[0]}
				}
				for _, side := range order {
					run(side, sizes[side][0], sizes[side][1], true)
				}
			}
		}
		for _, pair := range pairs {
			for _, side := range pair {
				r := results[side]
				b.Logf("%-16s jobs/s min %8.0f  median %8.0f  max %8.0f  (rounds %s); per request %.2f round trips, %.0f allocations, CPU %.0f µs this process, %.0f µs its Postgres backends (%.0f µs all of Postgres)",
					side, slices.Min(r.rates), median(r.rates), slices.Max(r.rates), rates(r.rates), r.trips/r.req, r.allocs/r.req,
					micros(r.cpu.proc)/r.req, micros(r.backends)/r.req, micros(r.cpu.postgres)/r.req)
			}
		}
		singleRatio := median(results["http single"].rates) / median(results["river Insert"].rates)
		batchRatio := median(results["http batch"].rates) / median(results["river InsertMany"].rates)
		b.Logf("http_single_ratio = %.3f (goal ≥ 0.6; %d requests a round over %d clients, %d rounds)", singleRatio, single, clients, rounds)
		b.Logf("http_batch_ratio = %.3f (goal ≥ 0.6; %d batches of %d a round)", batchRatio, batches, batchSize)
		goal("HTTP single enqueue / River Insert, 16 clients", singleRatio, ">=", 0.6, "")
		goal("HTTP batch of 1000 / River InsertMany", batchRatio, ">=", 0.6, "")
		b.ReportMetric(median(results["http single"].rates), "single_jobs/s")
		b.ReportMetric(median(results["http batch"].rates), "batch_jobs/s")
		b.ReportMetric(singleRatio, "http_single_ratio")
		b.ReportMetric(batchRatio, "http_batch_ratio")
	}
}

// backendsCPU sums the CPU time of the Postgres backends connected to
// pool's database (the benchmark's own: the machine's Postgres serves
// others too).
func backendsCPU(b *testing.B, pool *pgxpool.Pool) time.Duration {
	rows, err := pool.Query(context.Background(), `SELECT pid::text FROM pg_stat_activity WHERE datname = current_database()`)
	require.NoError(b, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b, err)
	var sum time.Duration
	for _, pid := range pids {
		if cpu, ok := processCPU(pid, "postgres"); ok {
			sum += cpu
		}
	}
	return sum
}

func rates(xs []float64) string {
	s := ""
	for i, x := range xs {
		if i > 0 {
			s += " "
		}
		s += fmt.Sprintf("%.0f", x)
	}
	return s
}

// benchDelivery makes a webhook delivery of the dev tenant for the jobs to
// name (the API refuses ids that do not exist): of an event that fans out
// to nothing, to an endpoint that no subscription names.
func benchDelivery(b *testing.B, pool *pgxpool.Pool, postEvent func([]byte) (*http.Response, error)) uuid.UUID {
	buf, err := json.Marshal(map[string]any{"tenant_id": store.DevTenantID, "aggregate_type": "Bench",
		"aggregate_id": uuid.New(), "event_type": "bench.only", "payload": map[string]any{}})
	require.NoError(b, err)
	resp, err := postEvent(buf)
	require.NoError(b, err)
	defer resp.Body.Close()
	var ev struct {
		EventID uuid.UUID `json:"event_id"`
	}
	require.NoError(b, json.NewDecoder(resp.Body).Decode(&ev))
	ctx := context.Background()
	id := uuid.New()
	_, err = pool.Exec(ctx, `INSERT INTO webhook_endpoints (webhook_endpoint_id, tenant_id, url, secret, is_active)
		VALUES ($1, $2, 'http://127.0.0.1:9/bench', 'bench-secret-0123456789', false)`, id, store.DevTenantID)
	require.NoError(b, err)
	_, err = pool.Exec(ctx, `INSERT INTO webhook_deliveries (webhook_delivery_id, tenant_id, webhook_endpoint_id, event_id)
		VALUES ($1, $2, $1, $3)`, id, store.DevTenantID, ev.EventID)
	require.NoError(b, err)
	return id
}
