package jobrun_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testlog"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/store"
)

// maintEnv is a migrated schema with an insert-only River client and the
// maintenance workers' dependencies.
type maintEnv struct {
	env
	pool *pgxpool.Pool
	logs *testlog.Buffer
	deps jobrun.MaintenanceDeps
}

func newMaintEnv(t *testing.T, cfg jobrun.MaintenanceConfig) *maintEnv {
	t.Helper()
	pool := testdb.New(t)
	client := testriver.Inserter(t, pool)
	logs := &testlog.Buffer{}
	st := store.New(pool)
	return &maintEnv{env: env{Ctx: t.Context(), Store: st, Client: client}, pool: pool, logs: logs,
		deps: jobrun.MaintenanceDeps{
			Store:   st,
			Logger:  slog.New(slog.NewJSONHandler(logs, nil)),
			Metrics: jobrun.NewMaintenanceMetrics(prometheus.NewRegistry()),
			Config:  cfg,
		}}
}

// exec runs SQL as River or an operator would; the mirror follows.
func (e *maintEnv) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := e.pool.Exec(e.Ctx, sql, args...)
	require.NoError(t, err)
}

// finish moves a River job to a final state as of ago.
func (e *maintEnv) finish(t *testing.T, job bpctype.Job, state string, ago time.Duration) {
	t.Helper()
	e.exec(t, `UPDATE river_job SET state = $2, attempt = 1, attempted_at = now() - $3::interval,
		finalized_at = now() - $3::interval, created_at = now() - $3::interval - interval '1 minute'
		WHERE id = $1`, job.RiverJobID, state, ago.String())
	// The mirror copies created_at when the job is inserted only.
	e.exec(t, `UPDATE jobs_live SET created_at = now() - $2::interval - interval '1 minute' WHERE job_id = $1`,
		job.JobID, ago.String())
}

func (e *maintEnv) jobExists(t *testing.T, job bpctype.Job) bool {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM jobs WHERE job_id = $1`, job.JobID) == 1
}

func TestMaintenanceConsistencyReportsDriftWithoutFailing(t *testing.T) {
	t.Parallel()
	e := newMaintEnv(t, jobrun.DefaultMaintenanceConfig())
	w := &jobrun.MaintenanceConsistencyWorker{Deps: e.deps}
	job := &river.Job[jobrun.MaintenanceConsistencyArgs]{JobRow: &rivertype.JobRow{}}

	_, queued := e.BuildJob(t)
	_, done := e.BuildJob(t)
	e.finish(t, done, "completed", time.Minute)

	// A clean mirror: zero drift.
	require.NoError(t, w.Work(e.Ctx, job))
	require.Equal(t, 0.0, testutil.ToFloat64(e.deps.Metrics.MirrorDrift))
	require.Positive(t, testutil.ToFloat64(e.deps.Metrics.MirrorChecked))
	require.Contains(t, e.logs.String(), `"drift_count":0`)

	// Someone edits the SSOT behind River's back: the check reports it,
	// and the job still succeeds.
	e.exec(t, `UPDATE jobs_live SET attempts = attempts + 5 WHERE job_id = $1`, queued.JobID)
	require.NoError(t, w.Work(e.Ctx, job))
	require.Equal(t, 1.0, testutil.ToFloat64(e.deps.Metrics.MirrorDrift))
	logs := e.logs.String()
	require.Contains(t, logs, `"level":"WARN"`)
	require.Contains(t, logs, `"drift_count":1`)
	require.Contains(t, logs, "job_id="+queued.JobID.String())
}

func TestMaintenanceRetentionDeletesOnlyExpiredHistory(t *testing.T) {
	t.Parallel()
	cfg := jobrun.DefaultMaintenanceConfig()
	cfg.JobsRetention = 90 * 24 * time.Hour
	cfg.RetentionBatchSize = 2 // three expired rows: two batches
	e := newMaintEnv(t, cfg)
	old, recent := 100*24*time.Hour, 24*time.Hour

	// Expired: finished 100 days ago and River's row deleted (the mirror
	// moves it to jobs_history, marked river_deleted_at), in each terminal
	// state.
	var expired []bpctype.Job
	for _, state := range []string{"completed", "discarded", "cancelled"} {
		_, j := e.BuildJob(t)
		e.finish(t, j, state, old)
		e.exec(t, `DELETE FROM river_job WHERE id = $1`, j.RiverJobID)
		expired = append(expired, j)
	}
	// Kept: River's row is gone though the mirror never moved it (deleted
	// with the triggers disabled). Retention reads the history only; this
	// row is drift, which the consistency check reports.
	_, unmarked := e.BuildJob(t)
	e.finish(t, unmarked, "completed", old)
	e.exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_delete`)
	e.exec(t, `DELETE FROM river_job WHERE id = $1`, unmarked.RiverJobID)
	e.exec(t, `ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_delete`)

	// Kept: finished recently (River's row gone).
	_, recentGone := e.BuildJob(t)
	e.finish(t, recentGone, "completed", recent)
	e.exec(t, `DELETE FROM river_job WHERE id = $1`, recentGone.RiverJobID)
	// Kept: finished long ago but River still has the job.
	_, inRiver := e.BuildJob(t)
	e.finish(t, inRiver, "completed", old)
	// Kept: running for 100 days (River's row exists).
	_, running := e.BuildJob(t)
	e.exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now() - interval '100 days',
		attempted_by = ARRAY['w1'] WHERE id = $1`, running.RiverJobID)
	// Kept: not terminal in the SSOT, even with River's row gone and an old
	// finished_at (a tampered row is the operator's to inspect).
	_, orphan := e.BuildJob(t)
	e.exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_delete`)
	e.exec(t, `DELETE FROM river_job WHERE id = $1`, orphan.RiverJobID)
	e.exec(t, `ALTER TABLE river_job ENABLE ALWAYS TRIGGER bpc_mirror_delete`)
	e.exec(t, `UPDATE jobs_live SET finished_at = now() - interval '100 days' WHERE job_id = $1`, orphan.JobID)

	var eventsBefore int
	require.NoError(t, e.pool.QueryRow(e.Ctx, `SELECT count(*) FROM events`).Scan(&eventsBefore))

	w := &jobrun.MaintenanceRetentionWorker{Deps: e.deps}
	require.NoError(t, w.Work(e.Ctx, &river.Job[jobrun.MaintenanceRetentionArgs]{JobRow: &rivertype.JobRow{}}))

	for _, j := range expired {
		require.False(t, e.jobExists(t, j), "expired job %s kept", j.JobID)
	}
	for name, j := range map[string]bpctype.Job{"recent": recentGone, "in River": inRiver, "running": running, "orphan": orphan, "unmarked": unmarked} {
		require.True(t, e.jobExists(t, j), "%s job deleted", name)
	}
	require.Equal(t, 3.0, testutil.ToFloat64(e.deps.Metrics.RetentionDeleted))
	require.Contains(t, e.logs.String(), `"ssot_deleted":3`)
	require.Contains(t, e.logs.String(), `"complete":true`)
	var eventsAfter int
	require.NoError(t, e.pool.QueryRow(e.Ctx, `SELECT count(*) FROM events`).Scan(&eventsAfter))
	require.Equal(t, eventsBefore, eventsAfter)

	// A spent budget stops after one batch; the next run continues.
	e.deps.Config.RetentionBatchSize = 1
	e.deps.Config.RetentionBudget = 0
	e.deps.Config.JobsRetention = time.Hour // recentGone expires now
	_, more := e.BuildJob(t)
	e.finish(t, more, "cancelled", recent)
	e.exec(t, `DELETE FROM river_job WHERE id = $1`, more.RiverJobID)
	w = &jobrun.MaintenanceRetentionWorker{Deps: e.deps}
	require.NoError(t, w.Work(e.Ctx, &river.Job[jobrun.MaintenanceRetentionArgs]{JobRow: &rivertype.JobRow{}}))
	require.Equal(t, 4.0, testutil.ToFloat64(e.deps.Metrics.RetentionDeleted))
	require.Contains(t, e.logs.String(), `"complete":false`)
	require.NoError(t, w.Work(e.Ctx, &river.Job[jobrun.MaintenanceRetentionArgs]{JobRow: &rivertype.JobRow{}}))
	require.False(t, e.jobExists(t, recentGone))
	require.False(t, e.jobExists(t, more))
}

// TestMaintenancePeriodicJobsRunOnTheLeader runs the periodic jobs through a
// real River client: the leader inserts both on start, they are worked and
// mirrored, and inserting them again within the interval adds nothing.
func TestMaintenancePeriodicJobsRunOnTheLeader(t *testing.T) {
	t.Parallel()
	cfg := jobrun.DefaultMaintenanceConfig()
	// Long intervals: the uniqueness check below must not cross a period.
	cfg.ConsistencyInterval, cfg.RetentionInterval = 1000*time.Hour, 1000*time.Hour
	e := newMaintEnv(t, cfg)

	w := river.NewWorkers()
	jobrun.RegisterMaintenance(w, e.deps)
	rc := &river.Config{
		ID:                "maintenance-test",
		Logger:            slog.New(slog.DiscardHandler),
		Queues:            map[string]river.QueueConfig{jobrun.QueueMaintenance: {MaxWorkers: 2}},
		Workers:           w,
		PeriodicJobs:      jobrun.MaintenancePeriodicJobs(cfg),
		FetchCooldown:     20 * time.Millisecond,
		FetchPollInterval: 20 * time.Millisecond,
		TestOnly:          true,
	}
	cfg.ConfigureJobCleaner(rc)
	require.Equal(t, 7*24*time.Hour, rc.CompletedJobRetentionPeriod)
	require.Equal(t, 7*24*time.Hour, rc.DiscardedJobRetentionPeriod)
	client, err := river.NewClient(riverpgxv5.New(e.pool), rc)
	require.NoError(t, err)
	require.NoError(t, client.Start(e.Ctx))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	})

	succeeded := func() map[string]int {
		rows, err := e.pool.Query(e.Ctx, `SELECT type, count(*) FROM jobs
			WHERE queue = $1 AND status = 'SUCCEEDED' GROUP BY type`, jobrun.QueueMaintenance)
		require.NoError(t, err)
		out := map[string]int{}
		for rows.Next() {
			var kind string
			var n int
			require.NoError(t, rows.Scan(&kind, &n))
			out[kind] = n
		}
		require.NoError(t, rows.Err())
		return out
	}
	want := map[string]int{jobrun.KindMaintenanceConsistency: 1, jobrun.KindMaintenanceRetention: 1}
	require.Eventually(t, func() bool {
		got := succeeded()
		return got[jobrun.KindMaintenanceConsistency] == 1 && got[jobrun.KindMaintenanceRetention] == 1
	}, 20*time.Second, 20*time.Millisecond)
	require.Positive(t, testutil.ToFloat64(e.deps.Metrics.MirrorChecked))

	// Within the interval, inserting them again (as `bpc tick` does) is a no-op.
	res, err := client.InsertMany(e.Ctx, jobrun.DueMaintenanceJobs(cfg))
	require.NoError(t, err)
	require.Len(t, res, 2)
	for _, r := range res {
		require.True(t, r.UniqueSkippedAsDuplicate, "%s inserted twice in one interval", r.Job.Kind)
	}
	require.Equal(t, want, succeeded())

	e.Consistent(t)
}
