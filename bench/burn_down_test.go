package bench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/workers"
)

// Both sides fetch as River's own benchmark (river bench) does. River
// fetches at most MaxWorkers jobs per FetchCooldown, so 2000 workers and a
// 2 ms cooldown cap a client at 1M jobs/s, far above what two cores burn
// down: both sides are limited by the work itself. (River's default
// cooldown, 100 ms, capped them at 20k jobs/s, about what bare River
// reached.)
//
// Both sides poll the benchmark's queue every burnFetchPollInterval. The
// service side also runs the service's own queues, idle here: they poll as
// the service polls them, at its default intervals (servicePolls), not at
// River's benchmark's 20 ms: the benchmark measures the service as it runs.
// (Five idle queues polled every 20 ms are 250 empty fetches a second; in
// an alternated comparison their cost did not show in the ratio,
// bench/MIRROR_COST.md.)
const (
	burnFetchCooldown     = 2 * time.Millisecond
	burnFetchPollInterval = 20 * time.Millisecond
)

// burnResult is one side's measurement in one round.
type burnResult struct {
	jobsPerSec float64
	// cpu is the CPU time spent while the jobs burned down, per job.
	cpu cpuTimes
	// walBytes is the WAL written while the jobs burned down, per job.
	walBytes float64
}

func (r burnResult) String() string {
	return fmt.Sprintf("%.0f jobs/s (CPU per job: %.1f µs this process, %.1f µs Postgres (%.1f µs in this database's backends), %.1f µs other, %.1f µs stolen; WAL %.0f B per job)",
		r.jobsPerSec, micros(r.cpu.proc), micros(r.cpu.postgres), micros(r.cpu.backends), micros(r.cpu.machine-r.cpu.proc-r.cpu.postgres),
		micros(r.cpu.steal), r.walBytes)
}

// BenchmarkBurnDown compares (a) bare River with (b) the service's full
// path on the same database and reports (c) the ratio of their medians.
func BenchmarkBurnDown(b *testing.B) {
	skipUnlessBench(b)
	n := envInt("BPC_BENCH_JOBS", 200_000)
	concurrency := envInt("BPC_BENCH_WORKERS", 2000)
	rounds := envInt("BPC_BENCH_ROUNDS", 5)

	// One round of each side first, not counted: in four runs of five
	// rounds without it, the service side's first round was one of its
	// two slowest every time, which the alternation alone does not even
	// out.
	report("warm-up (not counted): (a) %s", burnDownBare(b, n, concurrency))
	report("warm-up (not counted): (b) %s", burnDownService(b, n, concurrency, 0))

	var bare, service []float64
	// CPU per burned job (this process and the benchmark database's
	// backends): with both cores saturated, throughput is its inverse, and
	// it moves less from round to round than jobs/s (other load on the
	// machine shows in "other", not here).
	var bareCPU, serviceCPU []float64
	for range b.N {
		for round := range rounds {
			// Alternate which side goes first, so that neither always
			// runs on the machine state the other leaves.
			sides := []func(){
				func() {
					r := burnDownBare(b, n, concurrency)
					bare = append(bare, r.jobsPerSec)
					bareCPU = append(bareCPU, micros(r.cpu.proc+r.cpu.backends))
					report("round %d (a) bare River:   %s", round+1, r)
				},
				func() {
					r := burnDownService(b, n, concurrency, round+1)
					service = append(service, r.jobsPerSec)
					serviceCPU = append(serviceCPU, micros(r.cpu.proc+r.cpu.backends))
					report("round %d (b) service path: %s", round+1, r)
				},
			}
			if round%2 == 1 {
				sides[0], sides[1] = sides[1], sides[0]
			}
			sides[0]()
			sides[1]()
		}
	}
	ratios := make([]float64, len(bare))
	for i := range bare {
		ratios[i] = service[i] / bare[i]
	}
	a, s := median(bare), median(service)
	b.ReportMetric(a, "bare_jobs/s")
	b.ReportMetric(s, "service_jobs/s")
	b.ReportMetric(s/a, "ratio_b/a")
	b.Logf("%d rounds of %d jobs, jobs/s min / median / max: (a) bare River %.0f / %.0f / %.0f, (b) service path %.0f / %.0f / %.0f",
		len(ratios), n, minOf(bare), a, maxOf(bare), minOf(service), s, maxOf(service))
	b.Logf("(c) ratio b/a = %.3f (of the medians; per round: %s); (b) with %s", s/a, fmtRatios(ratios), fetchName())
	b.Logf("CPU per job (this process + this database's backends), medians: (a) %.1f µs, (b) %.1f µs; (b) − (a) = %.1f µs, (a)/(b) = %.3f",
		median(bareCPU), median(serviceCPU), median(serviceCPU)-median(bareCPU), median(bareCPU)/median(serviceCPU))
	if w := os.Getenv("BPC_BENCH_WITHOUT"); w != "" {
		b.Logf("(b) without %s (BPC_BENCH_WITHOUT): a diagnosis, not the service's figure", w)
	}
	goal(fmt.Sprintf("burn-down, service path / bare River (%d × %d rounds)", n, len(ratios)), s/a, ">=", 0.85, "")
}

// burnDownBare burns down n no-op jobs with a plain River client: River's
// benchmark configuration, no middleware, a schema without triggers.
func burnDownBare(b *testing.B, n, concurrency int) burnResult {
	pool := burnPool(b, false)
	var done atomic.Int64
	w := river.NewWorkers()
	river.AddWorker(w, &noopWorker{done: &done})
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{
		FetchCooldown:     burnFetchCooldown,
		FetchPollInterval: burnFetchPollInterval,
		Logger:            quiet,
		Queues:            map[string]river.QueueConfig{benchQueue: {MaxWorkers: concurrency}},
		Workers:           w,
	})
	require.NoError(b, err)
	insertNoops(b, client, n)
	r := burnDown(b, client, pool, n)
	dropSchema(b, pool)
	return r
}

// burnDownService burns down n no-op jobs through the service's River
// configuration (its queues and retry policy), the observer middleware with
// its JSON log lines (discarded) and lease keeper, and the SSOT mirror, on a
// fresh schema.
func burnDownService(b *testing.B, n, concurrency, round int) burnResult {
	pool := burnPool(b, true)
	r := burnDownServiceOn(b, pool, n, concurrency, fmt.Sprintf("round %d (b)", round))
	dropSchema(b, pool)
	return r
}

// burnDownServiceOn is burnDownService on pool's schema, whatever it holds;
// the n jobs are left in River and jobs_live (with jobs_live_state).
func burnDownServiceOn(b *testing.B, pool *pgxpool.Pool, n, concurrency int, label string) burnResult {
	ctx := context.Background()
	var done atomic.Int64
	polls := servicePolls(b)
	without := ablated()
	logger := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	if without["log"] {
		logger = quiet
	}
	leases := &jobrun.Leases{Owner: "bench-worker", TTL: time.Minute, Renew: 30 * time.Second}
	if without["lease"] {
		leases = nil
	}
	if without["mirror"] {
		_, err := pool.Exec(ctx, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_update`)
		require.NoError(b, err)
	}
	client, deps := testriver.New(b, pool, testriver.Options{
		Client: jobrun.ClientOptions{ID: "bench-worker", Concurrency: concurrency,
			PollInterval: polls.PollInterval, PipelinePollInterval: polls.PipelinePoll,
			ExtraQueuePollInterval: burnFetchPollInterval, FetchCooldown: burnFetchCooldown,
			BackoffUnit: time.Second, ExtraQueues: []string{benchQueue}, RiverFetch: riverFetch()},
		// The service's JSON logger at info (two lines per job), discarded.
		Deps:     workers.Deps{Logger: logger},
		Register: func(w *river.Workers, _ workers.Deps) { river.AddWorker(w, &noopWorker{done: &done}) },
		// With the lease keeper every job gets (a heartbeat per running
		// job; the defaults renew every 30 s, so no-op jobs never renew).
		Leases: leases,
	})
	insertNoops(b, client, n)
	r := burnDown(b, client, pool, n)
	if without["mirror"] {
		// The SSOT rows stayed QUEUED: nothing to check.
		return r
	}

	// The mirror really did the work: every SSOT row SUCCEEDED, no drift.
	var succeeded int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM jobs_live_state
		WHERE queue = $1 AND status = 'SUCCEEDED' AND attempts = 1`, benchQueue).Scan(&succeeded))
	require.Equal(b, n, succeeded)
	testriver.RequireConsistent(b, deps.Store)
	report("%s mirror: %s", label, mirrorStats(b, pool))
	return r
}

// burnPool returns a pool over a fresh schema (burnDown's comparable
// starting state) whose connections count time spent in PL/pgSQL functions,
// the mirror's triggers, for mirrorStats. Both sides set it alike; it costs
// a clock read per trigger call, not per row.
func burnPool(b *testing.B, withService bool) *pgxpool.Pool {
	mode := testdb.MigrateRiver
	if withService {
		mode = testdb.MigrateAll
	}
	return testdb.NewWithOptions(b, testdb.Options{LeaseSeconds: 60, MaxConns: 40, Migrate: mode,
		Params: map[string]string{"track_functions": "pl"}})
}

// burnDown times client working n inserted jobs, from its start to the
// completion of the last one (River's completion event, sent once the
// completion is committed). Before the clock starts, the inserted tables are
// vacuumed and analyzed and a checkpoint is taken, so that each side starts
// from the same state: freshly created tables holding n available jobs,
// visibility map set, no dirty buffers left by the previous measurement.
// Stopping the client is not timed.
func burnDown(b *testing.B, client *river.Client[pgx.Tx], pool *pgxpool.Pool, n int) burnResult {
	b.Helper()
	ctx := context.Background()
	for _, table := range []string{"river_job", "jobs_live_fixed", "jobs_live_state"} {
		var exists bool
		require.NoError(b, pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists))
		if exists {
			_, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+table)
			require.NoError(b, err)
		}
	}
	_, err := pool.Exec(ctx, "CHECKPOINT")
	require.NoError(b, err)

	completed, cancel := client.SubscribeConfig(&river.SubscribeConfig{
		// Room for every event: a full channel drops them.
		ChanSize: n + 1000,
		Kinds:    []river.EventKind{river.EventKindJobCompleted},
	})
	defer cancel()
	var walBefore, walAfter string
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&walBefore))
	before := readCPU()
	backendsBefore := backendCPU(b, pool)
	start := time.Now()
	require.NoError(b, client.Start(ctx))
	timeout := time.After(15 * time.Minute)
	for got := 0; got < n; got++ {
		select {
		case <-completed:
		case <-timeout:
			b.Fatalf("only %d of %d jobs completed after 15 minutes", got, n)
		}
	}
	elapsed := time.Since(start)
	after := readCPU()
	backends := backendCPUSince(b, pool, backendsBefore)
	var wal float64
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_current_wal_insert_lsn()::text`).Scan(&walAfter))
	require.NoError(b, pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::float8`, walAfter, walBefore).Scan(&wal))
	require.NoError(b, client.Stop(ctx))

	var inDB int
	require.NoError(b, pool.QueryRow(ctx, `SELECT count(*) FROM river_job WHERE state = 'completed' AND queue = $1`, benchQueue).Scan(&inDB))
	require.Equal(b, n, inDB)

	nd := time.Duration(n)
	return burnResult{
		jobsPerSec: float64(n) / elapsed.Seconds(),
		cpu: cpuTimes{
			proc:     (after.proc - before.proc) / nd,
			postgres: (after.postgres - before.postgres) / nd,
			machine:  (after.machine - before.machine) / nd,
			steal:    (after.steal - before.steal) / nd,
			backends: backends / nd,
		},
		walBytes: wal / float64(n),
	}
}

// cpuTimes are CPU times: this process's, Postgres's (its processes on this
// machine; one that ends in between is missed), the whole machine's busy
// time and the time the hypervisor gave the machine's CPUs to others
// (steal). The last three are zero without /proc.
//
// backends is the part of postgres spent by the client backends of the
// benchmark's database: what Postgres did for this benchmark's
// connections, whatever else the machine's Postgres serves at the time.
type cpuTimes struct{ proc, postgres, machine, steal, backends time.Duration }

// backendCPU reads the CPU time of each client backend of pool's database.
func backendCPU(b *testing.B, pool *pgxpool.Pool) map[string]time.Duration {
	b.Helper()
	rows, err := pool.Query(context.Background(), `SELECT pid::text FROM pg_stat_activity
		WHERE datname = current_database() AND backend_type = 'client backend'`)
	require.NoError(b, err)
	pids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(b, err)
	out := make(map[string]time.Duration, len(pids))
	for _, pid := range pids {
		if cpu, ok := processCPU(pid, "postgres"); ok {
			out[pid] = cpu
		}
	}
	return out
}

// backendCPUSince is the CPU time pool's database's client backends spent
// since before (a backend started since counts from zero; one that ended
// is missed).
func backendCPUSince(b *testing.B, pool *pgxpool.Pool, before map[string]time.Duration) time.Duration {
	var sum time.Duration
	for pid, cpu := range backendCPU(b, pool) {
		sum += cpu - before[pid]
	}
	return sum
}

// readCPU reads cpuTimes.
func readCPU() cpuTimes {
	var c cpuTimes
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		c.proc = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	c.postgres = postgresCPU()
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return c
	}
	line, _, _ := strings.Cut(string(stat), "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return c
	}
	// user nice system idle iowait irq softirq steal, in USER_HZ (1/100 s)
	// ticks; busy is user to softirq but idle and iowait.
	var busy, steal int64
	for i, f := range fields[1:9] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return c
		}
		switch i {
		case 3, 4:
		case 7:
			steal = v
		default:
			busy += v
		}
	}
	c.machine = time.Duration(busy) * 10 * time.Millisecond
	c.steal = time.Duration(steal) * 10 * time.Millisecond
	return c
}

// postgresCPU sums the CPU time of the processes named postgres.
func postgresCPU() time.Duration {
	dirs, _ := os.ReadDir("/proc")
	var sum time.Duration
	for _, d := range dirs {
		if d.Name()[0] < '0' || d.Name()[0] > '9' {
			continue
		}
		if cpu, ok := processCPU(d.Name(), "postgres"); ok {
			sum += cpu
		}
	}
	return sum
}

// processCPU is the CPU time of process pid, if it is named name.
func processCPU(pid, name string) (time.Duration, bool) {
	stat, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid …: utime and stime are the 14th and 15th
	// fields, the 12th and 13th after the command's closing parenthesis.
	comm, rest, ok := strings.Cut(string(stat), ") ")
	if !ok || !strings.HasSuffix(comm, "("+name) {
		return 0, false
	}
	fields := strings.Fields(rest)
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}

// report prints one line at once: the benchmark's own log keeps ten lines.
func report(format string, args ...any) {
	fmt.Printf("burn-down: "+format+"\n", args...)
}

// mirrorStats reports how many updates of jobs_live_state were HOT (touched no index)
// and the time spent in the mirror's trigger functions, the insert
// trigger's during insertNoops (not timed by burnDown). Backends publish
// their statistics when they exit, hence the reset.
func mirrorStats(b *testing.B, pool *pgxpool.Pool) string {
	ctx := context.Background()
	pool.Reset()
	time.Sleep(200 * time.Millisecond)
	var upd, hot int64
	require.NoError(b, pool.QueryRow(ctx,
		`SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE relid = 'jobs_live_state'::regclass`).Scan(&upd, &hot))
	out := "no table statistics"
	if upd > 0 {
		out = fmt.Sprintf("HOT updates %d of %d (%.1f%%)", hot, upd, 100*float64(hot)/float64(upd))
	}
	rows, err := pool.Query(ctx, `SELECT funcname, calls, total_time FROM pg_stat_user_functions
		WHERE schemaname = current_schema() AND funcname LIKE 'bpc_mirror_river_%' ORDER BY funcname`)
	require.NoError(b, err)
	for rows.Next() {
		var name string
		var calls int64
		var ms float64
		require.NoError(b, rows.Scan(&name, &calls, &ms))
		out += fmt.Sprintf("; %s %d calls, %.0f ms", strings.TrimPrefix(name, "bpc_mirror_river_"), calls, ms)
	}
	require.NoError(b, rows.Err())
	return out
}

// dropSchema drops pool's schema as soon as its side is measured, so that
// autovacuum does not work on its dead rows during the next measurement.
func dropSchema(b *testing.B, pool *pgxpool.Pool) {
	ctx := context.Background()
	var schema string
	require.NoError(b, pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema))
	_, err := pool.Exec(ctx, "DROP SCHEMA "+pgx.Identifier{schema}.Sanitize()+" CASCADE")
	require.NoError(b, err)
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

func fmtRatios(xs []float64) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strings.Join(parts, ", ")
}

// ablated is BPC_BENCH_WITHOUT, a comma-separated list of what the service
// side of the burn-down leaves out, to measure what each part costs (a
// diagnosis, not the service: bench/MIRROR_COST.md): "mirror" (the SSOT's
// update trigger: jobs_live keeps the inserted rows), "log" (the observer's
// two lines per job), "lease" (the lease keeper). With
// BPC_BENCH_RIVER_FETCH=1 for the fair fetch, every service-only part of the
// path can be taken out.
func ablated() map[string]bool {
	out := map[string]bool{}
	for _, part := range strings.Split(os.Getenv("BPC_BENCH_WITHOUT"), ",") {
		if part = strings.TrimSpace(part); part != "" {
			out[part] = true
		}
	}
	return out
}

// servicePolls is the service's default configuration, for its poll
// intervals (BPC_JOBS_POLL_INTERVAL_MS, BPC_JOBS_PIPELINE_POLL_INTERVAL_MS).
func servicePolls(b *testing.B) service.Config {
	b.Helper()
	cfg, err := service.LoadConfig(func(k string) string {
		if k == "DATABASE_URL" {
			return "postgres://unused/bench"
		}
		return ""
	})
	require.NoError(b, err)
	return cfg
}
