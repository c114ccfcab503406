package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/workers"
)

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
				client, deps := testriver.New(b, pool, testriver.Options{
					Client: workers.ClientOptions{ID: "bench-worker", Concurrency: concurrency,
						PollInterval: time.Second, BackoffUnit: time.Second, ExtraQueues: []string{benchQueue}},
					// The service's JSON logger at info (two lines per job), discarded.
					Deps:     workers.Deps{Logger: slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))},
					Register: func(w *river.Workers, _ workers.Deps) { river.AddWorker(w, &noopWorker{done: &done}) },
					// With the lease keeper every job gets (a heartbeat per running
					// job; the defaults renew every 30 s, so no-op jobs never renew).
					Leases: &workers.Leases{Owner: "bench-worker", TTL: time.Minute, Renew: 30 * time.Second},
				})
				insertNoops(b, client, n)
				elapsed := burnDown(b, client, pool, n)
				service = append(service, float64(n)/elapsed.Seconds())
				b.Logf("round %d (b) service path: %d jobs in %s = %.0f jobs/s", round+1, n, elapsed.Round(time.Millisecond), service[len(service)-1])

				// The mirror really did the work: every SSOT row SUCCEEDED, no drift.
				var succeeded int
				require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM jobs WHERE status = 'SUCCEEDED' AND attempts = 1`).Scan(&succeeded))
				require.Equal(b, n, succeeded)
				testriver.RequireConsistent(b, deps.Store)
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

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, ", ")
}
