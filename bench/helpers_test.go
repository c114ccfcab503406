package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/http/api"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/passport"
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

// startApp starts the service in role over pool, configured by env and
// then by adjust (when not nil), logging nowhere; it stops when the
// benchmark ends.
func startApp(b *testing.B, pool *pgxpool.Pool, role string, env map[string]string, adjust func(*service.Config)) *service.App {
	b.Helper()
	cfg, err := service.LoadConfig(func(k string) string { return env[k] })
	require.NoError(b, err)
	if adjust != nil {
		adjust(&cfg)
	}
	app, err := service.New(cfg, role, service.NewLogger(cfg, io.Discard), pool)
	require.NoError(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	require.NoError(b, app.Start(ctx))
	b.Cleanup(func() {
		app.Stop(context.Background())
		cancel()
	})
	return app
}

func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// riverFetch is BPC_BENCH_RIVER_FETCH=1: the service's clients fetch with
// River's own statement (first come, first served) instead of the fair
// fetch — the "before" of the fair fetch's cost in burn-down and pickup.
func riverFetch() bool { return os.Getenv("BPC_BENCH_RIVER_FETCH") == "1" }

// fetchName names the fetch the service's clients use in a report.
func fetchName() string {
	if riverFetch() {
		return "River's fetch (BPC_BENCH_RIVER_FETCH=1)"
	}
	return "fair fetch"
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

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// benchToken is the platform token of benchAPI's server.
const benchToken = "bench-admin-token-0123456789"

// benchAPI is the admin API as the service builds it, over st with River
// client, its JSON request log discarded; the caller may set more of it
// (keys, access metrics) before asking for its Handler.
func benchAPI(st *store.Queries, client *river.Client[pgx.Tx]) *api.Server {
	reg := prometheus.NewRegistry()
	return &api.Server{
		Config: api.Config{Env: "test", AdminToken: benchToken, MaxBodyBytes: 8 << 20, Kinds: workers.Kinds(), Quotas: benchQuotas()},
		Store:  st, River: client, Metrics: api.NewMetrics(reg), Gatherer: reg, Admin: true,
		Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
}

// benchQuotas are the default quotas but for a queued-jobs quota no
// benchmark reaches: the enqueue benchmarks leave their jobs queued, and
// measure the quota's check, not its refusals.
func benchQuotas() passport.Quotas {
	q := passport.DefaultQuotas()
	q.QueuedJobs = 1_000_000_000
	return q
}

// goal prints one figure of the table with its goal beside it, on a
// line of its own that scripts/bench.sh gathers into the run's summary:
//
//	goal: <name> = <value> (goal <op> <target>) met|NOT MET
//
// op is ">=" (higher is better) or "<=" (lower is better); unit follows the
// value and the target ("" for a ratio).
func goal(name string, value float64, op string, target float64, unit string) {
	met := value >= target
	if op == "<=" {
		met = value <= target
	}
	verdict := "NOT MET"
	switch {
	case os.Getenv("BPC_BENCH_SMOKE") == "1":
		// make test's bench stage: sizes that say nothing of speed.
		verdict = "not judged (a small run: BPC_BENCH_SMOKE)"
	case met:
		verdict = "met"
	}
	sym := map[string]string{">=": "≥", "<=": "≤"}[op]
	fmt.Printf("goal: %s = %s%s (goal %s %s%s) %s\n", name, strconv.FormatFloat(value, 'f', 3, 64), unit,
		sym, strconv.FormatFloat(target, 'f', -1, 64), unit, verdict)
}
