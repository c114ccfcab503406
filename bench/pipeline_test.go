package bench

import (
	"context"
	"crypto/ed25519"
	"fmt"
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

	"github.com/bpc-platform/bpc/internal/fixture"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// BenchmarkPipelineLatency measures, over BPC_BENCH_PASSPORTS (200)
// passports, the time from enqueueing COMPILE_PASSPORT to the version being
// SIGNED with its QR code — three River jobs (compile, sign, QR), each
// inserting the next in its own transaction — at idle and under a
// background load of no-op jobs on another queue. Compiles are enqueued one
// every 20 ms so that the pipeline is not saturated: this is latency, not
// throughput. Latency is measured with the database clock: the compile
// job's created_at to the version's qr_generated_at.
func BenchmarkPipelineLatency(b *testing.B) {
	skipUnlessBench(b)
	n := envInt("BPC_BENCH_PASSPORTS", 200)
	for _, loaded := range []bool{false, true} {
		name := "idle"
		if loaded {
			name = "loaded"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				p50, p99, noops := pipelineRound(b, n, loaded)
				b.ReportMetric(float64(p50.Microseconds())/1000, "p50_ms")
				b.ReportMetric(float64(p99.Microseconds())/1000, "p99_ms")
				b.Logf("%s: %d passports, compile enqueue → SIGNED with QR: p50 %s, p99 %s (background no-op jobs worked meanwhile: %d)",
					name, n, p50.Round(100*time.Microsecond), p99.Round(100*time.Microsecond), noops)
			}
		})
	}
}

func pipelineRound(b *testing.B, n int, loaded bool) (p50, p99 time.Duration, noops int64) {
	ctx := context.Background()
	pool := schemaPool(b, true)
	st := store.New(pool)
	fx := fixture.NMC811(b, st, store.DevTenantID, "nmc811-bench")

	passports := make([]uuid.UUID, n)
	for i := range passports {
		p, err := st.CreateBatteryProduct(ctx, store.DevTenantID, fmt.Sprintf("SKU-%04d", i), "bench pack")
		require.NoError(b, err)
		pp, err := st.CreatePassport(ctx, store.DevTenantID, p.BatteryProductID)
		require.NoError(b, err)
		passports[i] = pp.PassportID
	}

	var done atomic.Int64
	_, key, err := ed25519.GenerateKey(nil)
	require.NoError(b, err)
	client, _ := testriver.New(b, pool, testriver.Options{
		// The service's defaults: poll 1 s (LISTEN/NOTIFY wakes producers at
		// once), fetch cooldown 10 ms (BPC_JOBS_FETCH_COOLDOWN_MS), 10 workers
		// per queue (BPC_WORKER_CONCURRENCY).
		Client: workers.ClientOptions{ID: "bench-pipeline", Concurrency: 10, PollInterval: time.Second,
			FetchCooldown: 10 * time.Millisecond, PipelinePollInterval: 100 * time.Millisecond, BackoffUnit: time.Second,
			ExtraQueues: []string{benchQueue}},
		Deps: workers.Deps{Store: st, Logger: quiet, WebhookTimeout: time.Second, CompilerBuildID: "bpc-bench",
			Signer: passport.NewSigner("bench-key", key), ExportDir: b.TempDir()},
		Register: func(w *river.Workers, d workers.Deps) {
			workers.Register(w, d)
			river.AddWorker(w, &noopWorker{done: &done})
		},
		Leases: &workers.Leases{Owner: "bench-pipeline", TTL: time.Minute, Renew: 30 * time.Second},
	})
	require.NoError(b, client.Start(ctx))
	defer func() { require.NoError(b, client.Stop(ctx)) }()

	stopLoad := make(chan struct{})
	var loadWG sync.WaitGroup
	if loaded {
		// About 2 000 no-op jobs a second, inserted in batches of 100 every
		// 50 ms, for the whole measurement.
		loadWG.Add(1)
		go func() {
			defer loadWG.Done()
			t := time.NewTicker(50 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-stopLoad:
					return
				case <-t.C:
					insertNoops(b, client, 100)
				}
			}
		}()
		time.Sleep(500 * time.Millisecond) // let the load reach a steady state
	}

	for _, passportID := range passports {
		err := st.InTx(ctx, func(tx pgx.Tx) error {
			_, err := passport.NewTx(tx, client, "").Enqueue(ctx, &jobargs.CompilePassportArgs{Base: jobargs.Base{TenantID: store.DevTenantID},
				PassportID: passportID, SnapshotID: fx.SnapshotID, RulePackageVersionID: fx.RulesID}, "")
			return err
		})
		require.NoError(b, err)
		time.Sleep(20 * time.Millisecond)
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var ready int
		require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM passport_versions WHERE qr_payload IS NOT NULL`).Scan(&ready))
		if ready == n {
			break
		}
		require.True(b, time.Now().Before(deadline), "only %d of %d passports signed with a QR code", ready, n)
		time.Sleep(20 * time.Millisecond)
	}
	close(stopLoad)
	loadWG.Wait()

	debugHops(b, pool)
	latencies := pipelineLatencies(b, pool)
	require.Len(b, latencies, n)
	testriver.RequireConsistent(b, st)
	return percentile(latencies, 50), percentile(latencies, 99), done.Load()
}

// pipelineLatencies reads, per compiled version, qr_generated_at minus the
// compile job's created_at (both from the database clock).
func pipelineLatencies(b *testing.B, pool *pgxpool.Pool) []time.Duration {
	rows, err := pool.Query(context.Background(), `SELECT extract(epoch FROM (v.qr_generated_at - j.created_at)) * 1e6
		FROM passport_versions v JOIN river_job j ON j.id = v.compile_river_job_id`)
	require.NoError(b, err)
	micros, err := pgx.CollectRows(rows, pgx.RowTo[float64])
	require.NoError(b, err)
	out := make([]time.Duration, len(micros))
	for i, us := range micros {
		out[i] = time.Duration(us) * time.Microsecond
	}
	return out
}

// percentile returns the p-th percentile (nearest rank) of xs.
func percentile(xs []time.Duration, p int) time.Duration {
	s := slices.Clone(xs)
	slices.Sort(s)
	rank := (p*len(s) + 99) / 100
	return s[max(rank-1, 0)]
}

func debugHops(b *testing.B, pool *pgxpool.Pool) {
	rows, err := pool.Query(context.Background(), `SELECT kind,
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM attempted_at - created_at)*1000),
		percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM finalized_at - attempted_at)*1000),
		percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM attempted_at - created_at)*1000)
		FROM river_job WHERE kind <> 'BENCH_NOOP' GROUP BY kind`)
	require.NoError(b, err)
	for rows.Next() {
		var k string
		var wait, run, wait99 float64
		require.NoError(b, rows.Scan(&k, &wait, &run, &wait99))
		b.Logf("%s: wait p50 %.1f ms p99 %.1f ms, run p50 %.1f ms", k, wait, wait99, run)
	}
}
