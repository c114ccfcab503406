package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/store"
)

// historyTenants is how many tenants the loaded history spreads over.
const historyTenants = 50

// BenchmarkHistoryAtScale loads BPC_BENCH_HISTORY_ROWS (10M) finished jobs
// into the SSOT history (jobs whose River job River's cleaner removed,
// spread over 90 days and 50 tenants, 0.6 % of them DEAD_LETTER, FAILED or
// CANCELLED) and BPC_BENCH_LIVE_ROWS (200k) jobs River still holds (River
// rows, mirrored by the insert trigger: finished ones, dead letters, and
// some running and queued), then measures:
//
//   - bytes per job of jobs_history and of jobs_live's two tables, with their indexes;
//   - over HTTP, through the real router with the platform token, p50/p99
//     of: a job by id, a tenant's list, the cross-tenant list, and the
//     operator's filters (SPEC §14) — status (DEAD_LETTER, RUNNING,
//     SUCCEEDED), type, a created_at range, alone and combined, the first
//     page and five pages deep;
//   - the service path's burn-down on this schema against a fresh one with
//     the same live rows and River jobs but no history, in alternating
//     rounds (the history must not slow the mirror);
//   - retention deleting the oldest 1M history rows while a burn-down runs.
func BenchmarkHistoryAtScale(b *testing.B) {
	skipUnlessBench(b)
	rows := envInt("BPC_BENCH_HISTORY_ROWS", 10_000_000)
	liveRows := envInt("BPC_BENCH_LIVE_ROWS", 200_000)
	samples := envInt("BPC_BENCH_QUERY_SAMPLES", 200)
	n := envInt("BPC_BENCH_JOBS", 200_000)
	concurrency := envInt("BPC_BENCH_WORKERS", 2000)
	rounds := envInt("BPC_BENCH_HISTORY_ROUNDS", 3)
	if os.Getenv("BPC_BENCH_HISTORY_ROUNDS") == "0" {
		rounds = 0 // the load and the queries only
	}
	deleteRows := envInt("BPC_BENCH_RETENTION_ROWS", 1_000_000)

	for range b.N {
		pool := burnPool(b, true)
		start := time.Now()
		loadHistory(b, pool, rows, liveRows)
		history := countRows(b, pool, "jobs_history")
		live := countRows(b, pool, "jobs_live")
		historyReport("loaded %d history rows and %d live rows in %s", history, live, time.Since(start).Round(time.Second))
		hBytes := bytesPerRow(b, pool, "jobs_history", history)
		lBytes, sBytes := bytesPerRow(b, pool, "jobs_live_fixed", live), bytesPerRow(b, pool, "jobs_live_state", live)
		historyReport("bytes per job, table + indexes + TOAST: jobs_history %.0f (goal ≤ 600), jobs_live_fixed %.0f + jobs_live_state %.0f", hBytes, lBytes, sBytes)
		b.ReportMetric(hBytes, "history_bytes/job")

		historyQueries(b, pool, samples, history, live)
		if rounds == 0 {
			dropSchema(b, pool)
			continue
		}

		// The burn-down on this schema against an empty one, alternating.
		var empty, loaded []float64
		for round := range rounds {
			sides := []func(){
				func() {
					// The same River window (the live rows and their River
					// jobs, which River's own work depends on), no history.
					bare := burnPool(b, true)
					loadHistory(b, bare, 0, liveRows)
					r := burnDownServiceOn(b, bare, n, concurrency, fmt.Sprintf("round %d (no history)", round+1))
					dropSchema(b, bare)
					empty = append(empty, r.jobsPerSec)
					historyReport("round %d burn-down, %d live rows, no history: %s", round+1, live, r)
				},
				func() {
					r := burnDownServiceOn(b, pool, n, concurrency, fmt.Sprintf("round %d (10M)", round+1))
					loaded = append(loaded, r.jobsPerSec)
					historyReport("round %d burn-down, %d live rows and %d in the history: %s", round+1, live, history, r)
					forgetBenchJobs(b, pool)
				},
			}
			if round%2 == 1 {
				sides[0], sides[1] = sides[1], sides[0]
			}
			sides[0]()
			sides[1]()
		}
		ratio := median(loaded) / median(empty)
		b.ReportMetric(ratio, "history_burn_ratio")
		historyReport("burn-down jobs/s min / median / max: without the history %.0f / %.0f / %.0f, with %d history rows %.0f / %.0f / %.0f; ratio %.3f (goal ≥ 0.97)",
			minOf(empty), median(empty), maxOf(empty), history, minOf(loaded), median(loaded), maxOf(loaded), ratio)

		retentionUnderLoad(b, pool, deleteRows, n, concurrency)
		dropSchema(b, pool)
	}
}

func historyReport(format string, args ...any) {
	fmt.Printf("history: "+format+"\n", args...)
}

// loadHistory bulk-loads the history in chunks, two at a time (one per
// core), through the tables' own indexes, so that their size is the size
// they reach in use; then the live rows, as River rows the mirror copies.
func loadHistory(b *testing.B, pool *pgxpool.Pool, rows, liveRows int) {
	ctx := context.Background()
	_, err := pool.Exec(ctx, `INSERT INTO tenants (tenant_id, slug, name)
		SELECT ('00000000-0000-4000-8000-' || lpad(t::text, 12, '0'))::uuid, 'bench-' || t, 'Bench tenant ' || t
		FROM generate_series(1, $1) t`, historyTenants)
	require.NoError(b, err)

	// Row i of n: created over 90 days ending 7 days ago (River's cleaner
	// has removed their River jobs), a kind out of eleven slots (webhooks
	// the most common), 99.4 % SUCCEEDED.
	const chunk = 250_000
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(chunk)) - chunk + 1
				if from > rows {
					return
				}
				to := min(from+chunk-1, rows)
				if _, err := pool.Exec(ctx, historyInsert, from, to, rows, historyTenants); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	_, err = pool.Exec(ctx, liveInsert, liveRows, historyTenants, benchIdleQueue)
	require.NoError(b, err)
	for _, table := range []string{"jobs_history", "jobs_live_fixed", "jobs_live_state", "river_job"} {
		_, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+table)
		require.NoError(b, err)
	}
}

// benchIdleQueue holds the loaded live jobs that are not finished: no
// client of the benchmark works it.
const benchIdleQueue = "bench_idle"

const historyInsert = `
INSERT INTO jobs_history
SELECT gen_random_uuid(), -i, tenant, created, kind, NULL, NULL,
    jsonb_build_object('tenant_id', tenant, 'ref_id', gen_random_uuid()),
    2, 5,
    CASE kind WHEN 'DELIVER_WEBHOOK' THEN 'webhooks' WHEN 'EXPORT_PASSPORT' THEN 'exports' WHEN 'RUN_RULE_TESTS' THEN 'rules' ELSE 'pipeline' END,
    status, CASE WHEN status = 'DEAD_LETTER' THEN 5 ELSE 1 END,
    created, created + interval '5 ms', created + interval '40 ms', NULL, NULL,
    CASE WHEN status IN ('DEAD_LETTER', 'FAILED') THEN jsonb_build_object(
        'code', 'WEBHOOK_NETWORK', 'message', 'could not connect to the webhook endpoint', 'attempt', 5, 'at', created) END,
    created + interval '7 days', created + interval '7 days'
FROM (
    SELECT i,
        ('00000000-0000-4000-8000-' || lpad((1 + abs(hashint8(i)) % $4)::text, 12, '0'))::uuid AS tenant,
        now() - interval '97 days' + i * (interval '90 days' / $3) AS created,
        (ARRAY['DELIVER_WEBHOOK', 'DELIVER_WEBHOOK', 'DELIVER_WEBHOOK', 'PARSE_FACTS', 'BUILD_SNAPSHOT', 'COMPILE_PASSPORT',
            'SIGN_PASSPORT', 'GENERATE_QR', 'EXPORT_PASSPORT', 'RUN_RULE_TESTS', 'INGEST_DOCUMENT'])[1 + abs(hashint8(i + 1)) % 11] AS kind,
        CASE WHEN abs(hashint8(i + 2)) % 1000 < 994 THEN 'SUCCEEDED'
             WHEN abs(hashint8(i + 2)) % 1000 < 997 THEN 'DEAD_LETTER'
             WHEN abs(hashint8(i + 2)) % 1000 < 999 THEN 'FAILED'
             ELSE 'CANCELLED' END AS status
    FROM generate_series($1::bigint, $2::bigint) i) g`

// liveInsert makes River jobs of the last 20 hours (inside River's
// retention): mostly completed, some discarded, 100 running and 1000
// available in a queue nobody works.
const liveInsert = `
INSERT INTO river_job (state, attempt, max_attempts, attempted_at, attempted_by, created_at, finalized_at,
    scheduled_at, priority, args, kind, queue, metadata, errors)
SELECT state::river_job_state, CASE WHEN state = 'available' THEN 0 ELSE 1 END, 5,
    CASE WHEN state = 'available' THEN NULL ELSE created + interval '5 ms' END,
    CASE WHEN state = 'available' THEN NULL ELSE ARRAY['bench-old-worker'] END,
    created,
    CASE WHEN state IN ('completed', 'discarded') THEN created + interval '40 ms' END,
    created, 3, jsonb_build_object('tenant_id', tenant, 'ref_id', gen_random_uuid()), kind,
    CASE WHEN state IN ('running', 'available') THEN $3 ELSE 'pipeline' END,
    '{}'::jsonb,
    CASE WHEN state = 'discarded' THEN ARRAY[jsonb_build_object('attempt', 1, 'at', created,
        'error', '{"code":"WEBHOOK_NETWORK","message":"could not connect to the webhook endpoint"}')] END
FROM (
    SELECT i,
        ('00000000-0000-4000-8000-' || lpad((1 + abs(hashint8(-i)) % $2)::text, 12, '0'))::uuid AS tenant,
        now() - interval '20 hours' + i * (interval '20 hours' / $1) AS created,
        (ARRAY['DELIVER_WEBHOOK', 'PARSE_FACTS', 'COMPILE_PASSPORT', 'GENERATE_QR'])[1 + abs(hashint8(-i - 1)) % 4] AS kind,
        CASE WHEN i % 1000 = 7 THEN 'discarded' WHEN i % 2000 = 11 THEN 'running'
             WHEN i % 200 = 13 THEN 'available' ELSE 'completed' END AS state
    FROM generate_series(1, $1::bigint) i) g`

func countRows(b *testing.B, pool *pgxpool.Pool, table string) int {
	var n int
	require.NoError(b, pool.QueryRow(context.Background(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// bytesPerRow is the table's size with its indexes and TOAST over rows.
func bytesPerRow(b *testing.B, pool *pgxpool.Pool, table string, rows int) float64 {
	var size int64
	require.NoError(b, pool.QueryRow(context.Background(), `SELECT pg_total_relation_size($1::regclass)`, table).Scan(&size))
	return float64(size) / float64(max(rows, 1))
}

// forgetBenchJobs deletes the burn-down's River jobs: the mirror moves
// their rows to the history, as River's cleaner would.
func forgetBenchJobs(b *testing.B, pool *pgxpool.Pool) {
	_, err := pool.Exec(context.Background(), `DELETE FROM river_job WHERE queue = $1`, benchQueue)
	require.NoError(b, err)
}

// historyQueries times the API's reads over the loaded schema.
func historyQueries(b *testing.B, pool *pgxpool.Pool, samples, history, live int) {
	ctx := context.Background()
	total := history + live
	client, err := jobrun.NewClient(pool, jobrun.ClientOptions{ID: "bench-api", Logger: quiet, MaxAttempts: 5,
		BackoffUnit: time.Second, PollInterval: time.Second})
	require.NoError(b, err)
	const token = benchToken
	ts := httptest.NewServer(benchAPI(store.New(pool), client).Handler())
	defer ts.Close()
	httpClient := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	get := func(path string) (int, []byte) {
		req, _ := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := httpClient.Do(req)
		require.NoError(b, err)
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		require.NoError(b, err)
		return resp.StatusCode, body
	}

	// Ids to look up: a sample of each table, about 20 000 rows' worth of
	// its pages (all of a small one), of which the first 1 000.
	sample := func(table string, n int) []struct {
		id     uuid.UUID
		tenant uuid.UUID
	} {
		percent := min(100, 100*20_000/float64(max(n, 1)))
		rows, err := pool.Query(ctx, `SELECT job_id, tenant_id FROM `+table+` TABLESAMPLE SYSTEM ($1) LIMIT 1000`, percent)
		require.NoError(b, err)
		defer rows.Close()
		var out []struct{ id, tenant uuid.UUID }
		for rows.Next() {
			var r struct{ id, tenant uuid.UUID }
			require.NoError(b, rows.Scan(&r.id, &r.tenant))
			out = append(out, r)
		}
		require.NotEmpty(b, out, table)
		return out
	}
	// jobs_live is a view (migration 019), which TABLESAMPLE cannot read:
	// its ids and tenants are in the fixed half.
	historyIDs, liveIDs := sample("jobs_history", history), sample("jobs_live_fixed", live)
	rng := rand.New(rand.NewPCG(1, 2))
	tenant := func() string {
		return fmt.Sprintf("00000000-0000-4000-8000-%012d", 1+rng.IntN(historyTenants))
	}
	day := func() string { // a one-day window somewhere in the 97 days
		from := time.Now().Add(-time.Duration(1+rng.IntN(96)) * 24 * time.Hour)
		return "created_after=" + url.QueryEscape(from.Format(time.RFC3339)) +
			"&created_before=" + url.QueryEscape(from.Add(24*time.Hour).Format(time.RFC3339))
	}
	type query struct {
		name  string
		pages int
		path  func() string
	}
	queries := []query{
		{"by id (history)", 0, func() string {
			r := historyIDs[rng.IntN(len(historyIDs))]
			return "/v1/jobs/" + r.id.String() + "?tenant_id=" + r.tenant.String()
		}},
		{"by id (live)", 0, func() string {
			r := liveIDs[rng.IntN(len(liveIDs))]
			return "/v1/jobs/" + r.id.String() + "?tenant_id=" + r.tenant.String()
		}},
		{"tenant, newest first", 1, func() string { return "/v1/jobs?tenant_id=" + tenant() }},
		{"all tenants, newest first", 1, func() string { return "/v1/jobs" }},
		{"status=DEAD_LETTER", 1, func() string { return "/v1/jobs?status=DEAD_LETTER" }},
		{"status=DEAD_LETTER, 5 pages", 5, func() string { return "/v1/jobs?status=DEAD_LETTER" }},
		{"tenant + status=DEAD_LETTER", 1, func() string { return "/v1/jobs?status=DEAD_LETTER&tenant_id=" + tenant() }},
		{"status=RUNNING", 1, func() string { return "/v1/jobs?status=RUNNING" }},
		{"tenant + status=RUNNING", 1, func() string { return "/v1/jobs?status=RUNNING&tenant_id=" + tenant() }},
		{"status=SUCCEEDED, 5 pages", 5, func() string { return "/v1/jobs?status=SUCCEEDED" }},
		{"type=COMPILE_PASSPORT", 1, func() string { return "/v1/jobs?type=COMPILE_PASSPORT" }},
		{"tenant + type=EXPORT_PASSPORT, 5 pages", 5, func() string {
			return "/v1/jobs?type=EXPORT_PASSPORT&tenant_id=" + tenant()
		}},
		{"created_at: one day", 1, func() string { return "/v1/jobs?" + day() }},
		{"tenant + created_at: one day, 5 pages", 5, func() string { return "/v1/jobs?tenant_id=" + tenant() + "&" + day() }},
		{"tenant + type + status=FAILED + created_at: one day", 1, func() string {
			return "/v1/jobs?type=DELIVER_WEBHOOK&status=FAILED&tenant_id=" + tenant() + "&" + day()
		}},
		{"type + status=DEAD_LETTER + created_at: one day", 1, func() string {
			return "/v1/jobs?type=DELIVER_WEBHOOK&status=DEAD_LETTER&" + day()
		}},
	}
	for _, q := range queries {
		// A few untimed requests first: plans cached, pages in memory as
		// an operator's second look would find them.
		for range 3 {
			status, _ := get(q.path())
			require.Equal(b, http.StatusOK, status, q.name)
		}
		lat := make([]time.Duration, 0, samples*max(q.pages, 1))
		items := 0
		for range samples {
			path := q.path()
			for page := range max(q.pages, 1) {
				t0 := time.Now()
				status, body := get(path)
				lat = append(lat, time.Since(t0))
				require.Equal(b, http.StatusOK, status, "%s: %s", q.name, body)
				if q.pages == 0 {
					break
				}
				var p struct {
					Items      []json.RawMessage `json:"items"`
					NextCursor string            `json:"next_cursor"`
				}
				require.NoError(b, json.Unmarshal(body, &p))
				items += len(p.Items)
				if p.NextCursor == "" || page == q.pages-1 {
					break
				}
				sep := "&"
				if !strings.Contains(path, "?") {
					sep = "?"
				}
				path += sep + "cursor=" + p.NextCursor
			}
		}
		slices.Sort(lat)
		p50, p99 := lat[len(lat)/2], lat[len(lat)*99/100]
		goal := "p99 ≤ 50 ms"
		switch {
		case q.pages == 0:
			goal = "p99 ≤ 5 ms"
		case q.name == "tenant, newest first" || q.name == "all tenants, newest first":
			goal = "p99 ≤ 20 ms"
		}
		historyReport("%-52s p50 %6.2f ms  p99 %6.2f ms  max %6.2f ms  (%s; %d requests over %d rows; %.0f items a sample)",
			q.name, ms(p50), ms(p99), ms(lat[len(lat)-1]), goal, len(lat), total, float64(items)/float64(samples))
	}
}

// retentionUnderLoad deletes the oldest deleteRows history rows in batches,
// as the retention job does, while a burn-down runs on the same schema, and
// compares that burn-down with one on the same schema right before.
func retentionUnderLoad(b *testing.B, pool *pgxpool.Pool, deleteRows, n, concurrency int) {
	ctx := context.Background()
	var cutoff time.Time
	require.NoError(b, pool.QueryRow(ctx, `SELECT created_at FROM jobs_history ORDER BY created_at OFFSET $1 LIMIT 1`,
		deleteRows).Scan(&cutoff))
	before := burnDownServiceOn(b, pool, n, concurrency, "retention: without")
	forgetBenchJobs(b, pool)

	st := store.New(pool)
	const batch = 10_000
	var deleted, slowest atomic.Int64
	finished := make(chan time.Duration, 1)
	go func() {
		start := time.Now()
		defer func() { finished <- time.Since(start) }()
		for {
			t0 := time.Now()
			k, err := st.DeleteExpiredJobs(ctx, cutoff, batch)
			if err != nil {
				b.Errorf("retention: %v", err)
				return
			}
			if d := int64(time.Since(t0)); d > slowest.Load() {
				slowest.Store(d)
			}
			if deleted.Add(k); k < batch {
				return
			}
		}
	}()
	during := burnDownServiceOn(b, pool, n, concurrency, "retention: during")
	deletedDuring := deleted.Load()
	took := <-finished
	forgetBenchJobs(b, pool)
	historyReport("retention: deleted %d rows in %s (%.0f rows/s, slowest batch of %d: %.0f ms), %d of them during a burn-down of %.0f jobs/s, against %.0f jobs/s without (ratio %.3f)",
		deleted.Load(), took.Round(time.Millisecond), float64(deleted.Load())/took.Seconds(), batch,
		ms(time.Duration(slowest.Load())), deletedDuring, during.jobsPerSec, before.jobsPerSec, during.jobsPerSec/before.jobsPerSec)
}
