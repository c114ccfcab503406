package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/service"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/internal/tick"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// tickEnv is a migrated schema, a service configuration for it and an
// insert-only River client to enqueue with.
type tickEnv struct {
	ctx    context.Context
	cfg    service.Config
	pool   *pgxpool.Pool
	st     *store.Queries
	client *river.Client[pgx.Tx]
}

func newTickEnv(t *testing.T, env map[string]string) *tickEnv {
	t.Helper()
	cfg := testConfig(t, "tick-", map[string]string{"BPC_LOG_LEVEL": "warn"}, env)
	pool := testdb.New(t)
	client := testriver.Inserter(t, pool)
	return &tickEnv{ctx: t.Context(), cfg: cfg, pool: pool, st: store.New(pool), client: client}
}

// enqueueSnapshotBuild creates a BUILDING snapshot and enqueues its
// BUILD_SNAPSHOT job, scheduled at `at` when it is not zero.
func (e *tickEnv) enqueueSnapshotBuild(t *testing.T, at time.Time) bpctype.Job {
	t.Helper()
	sn, err := e.st.CreateSnapshot(e.ctx, store.DevTenantID)
	require.NoError(t, err)
	tx, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer tx.Rollback(e.ctx) //nolint:errcheck
	req := passport.EnqueueRequest{Args: &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}}
	if !at.IsZero() {
		req.ScheduledAt = &at
	}
	res, err := passport.EnqueueTx(e.ctx, e.st.WithTx(tx), e.client, []passport.EnqueueRequest{req})
	require.NoError(t, err)
	require.NoError(t, tx.Commit(e.ctx))
	return res[0].Job
}

// enqueueSnapshotBuilds enqueues n BUILD_SNAPSHOT jobs of n new BUILDING
// snapshots in one transaction.
func (e *tickEnv) enqueueSnapshotBuilds(t *testing.T, n int) []bpctype.Job {
	t.Helper()
	tx, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer tx.Rollback(e.ctx) //nolint:errcheck
	reqs := make([]passport.EnqueueRequest, n)
	for i := range reqs {
		sn, err := e.st.WithTx(tx).CreateSnapshot(e.ctx, store.DevTenantID)
		require.NoError(t, err)
		reqs[i] = passport.EnqueueRequest{Args: &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}}
	}
	res, err := passport.EnqueueTx(e.ctx, e.st.WithTx(tx), e.client, reqs)
	require.NoError(t, err)
	require.NoError(t, tx.Commit(e.ctx))
	jobs := make([]bpctype.Job, n)
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

func (e *tickEnv) status(t *testing.T, job bpctype.Job) string {
	t.Helper()
	j, err := e.st.GetJob(e.ctx, job.TenantID, job.JobID)
	require.NoError(t, err)
	return j.Status
}

func (e *tickEnv) tick(t *testing.T, o tick.Options) (tick.Result, string) {
	t.Helper()
	out := &syncBuffer{}
	res, err := tick.Run(e.ctx, e.cfg, e.pool, o, out)
	require.NoError(t, err, "output:\n%s", out.String())
	return res, out.String()
}

func TestTickWorksDueJobsAndLeavesFutureOnes(t *testing.T) {
	t.Parallel()
	e := newTickEnv(t, nil)
	var due []bpctype.Job
	for range 3 {
		due = append(due, e.enqueueSnapshotBuild(t, time.Time{}))
	}
	later := e.enqueueSnapshotBuild(t, time.Now().Add(time.Hour))

	res, out := e.tick(t, tick.Options{MaxDuration: 30 * time.Second, MaxJobs: 1000})
	require.Equal(t, tick.StoppedEmpty, res.Reason, out)
	for _, j := range due {
		require.Equal(t, bpctype.StatusSucceeded, e.status(t, j))
	}
	// Not waited for: the tick ended because no due job was left (the
	// reason above), not at MaxDuration.
	require.Equal(t, bpctype.StatusQueued, e.status(t, later))
	require.GreaterOrEqual(t, res.ByStatus[bpctype.StatusSucceeded], 3)
	require.Contains(t, out, "stopped: no due jobs left")
	require.Contains(t, out, "SUCCEEDED=")

	// The mirror is intact and the next tick finds nothing to do.
	rep, err := e.st.CheckConsistency(e.ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
	res, out = e.tick(t, tick.Options{MaxDuration: 30 * time.Second, MaxJobs: 1000})
	require.Equal(t, tick.StoppedEmpty, res.Reason, out)
	require.Equal(t, bpctype.StatusQueued, e.status(t, later))
}

func TestTickStopsAtTheItemBudget(t *testing.T) {
	t.Parallel()
	e := newTickEnv(t, map[string]string{"BPC_WORKER_CONCURRENCY": "1"})
	// Completions reach the tick in River's batches, so a few more jobs than
	// the budget may run before it counts them: with many jobs due, the
	// budget still ends the tick long before they are all worked.
	const total = 200
	jobs := e.enqueueSnapshotBuilds(t, total)

	start := time.Now()
	res, out := e.tick(t, tick.Options{MaxDuration: 30 * time.Second, MaxJobs: 2})
	require.Equal(t, tick.StoppedMaxJobs, res.Reason, out)
	require.GreaterOrEqual(t, res.Worked, 2)
	done := 0
	for _, j := range jobs {
		if e.status(t, j) == bpctype.StatusSucceeded {
			done++
		}
	}
	require.Less(t, done, total, "the budget did not stop the tick")
	// Every attempt that ended during the tick is in the summary.
	var succeeded int
	require.NoError(t, e.pool.QueryRow(e.ctx, `SELECT count(*) FROM jobs
		WHERE status = 'SUCCEEDED' AND finished_at >= $1`, start).Scan(&succeeded))
	require.Equal(t, succeeded, res.ByStatus[bpctype.StatusSucceeded], out)
	require.Contains(t, out, "stopped: item budget (--max-jobs) reached")
}

func TestTickTimeBudget(t *testing.T) {
	t.Parallel()
	e := newTickEnv(t, nil)
	job := e.enqueueSnapshotBuild(t, time.Time{})
	// A paused queue is not waited for either.
	_, err := e.pool.Exec(e.ctx, `INSERT INTO river_queue (name, created_at, metadata, paused_at, updated_at)
		VALUES ('pipeline', now(), '{}', now(), now())`)
	require.NoError(t, err)
	res, out := e.tick(t, tick.Options{MaxDuration: 30 * time.Second, MaxJobs: 1000})
	require.Equal(t, tick.StoppedEmpty, res.Reason, out)
	require.Equal(t, bpctype.StatusQueued, e.status(t, job))

	// Unpaused but the budget is a few milliseconds: the tick stops on
	// time, working what it had fetched.
	_, err = e.pool.Exec(e.ctx, `UPDATE river_queue SET paused_at = NULL`)
	require.NoError(t, err)
	for range 50 {
		e.enqueueSnapshotBuild(t, time.Time{})
	}
	res, out = e.tick(t, tick.Options{MaxDuration: time.Millisecond, MaxJobs: 1000})
	require.Equal(t, tick.StoppedMaxDuration, res.Reason, out)
	require.Contains(t, out, "stopped: time budget (--max-duration) spent")
}

func TestTickCommand(t *testing.T) {
	t.Parallel()
	_, url := testdb.EmptySchema(t)
	env := map[string]string{"DATABASE_URL": url, "BPC_ENV": "test", "BPC_ADMIN_TOKEN": testToken, "BPC_LOG_JSON": "false"}
	getenv := func(k string) string { return env[k] }
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"tick"}, getenv, &out, &errOut)
	require.ErrorContains(t, err, "schema is behind")
	require.NoError(t, run(t.Context(), []string{"migrate"}, getenv, &out, &errOut))
	require.ErrorContains(t, run(t.Context(), []string{"tick", "--max-jobs=0"}, getenv, &out, &errOut), "must be positive")

	out.Reset()
	require.NoError(t, run(t.Context(), []string{"tick", "--max-duration=20s"}, getenv, &out, &errOut), errOut.String())
	require.Contains(t, out.String(), "bpc tick: worked")
	require.Contains(t, out.String(), "stopped: no due jobs left")
}
