package testriver

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// Env is what the job tests of every package share: a test schema's store
// and a River client on it (working every queue, or insert-only). A test's
// own env embeds it next to what its subject needs.
type Env struct {
	Ctx    context.Context
	Store  *store.Queries
	Client *river.Client[pgx.Tx]
}

// Enqueue inserts one job through the passport package, as the API does
// (with an idempotency key unless key is "").
func (e Env) Enqueue(t testing.TB, args jobargs.Args, key string) bpctype.Job {
	t.Helper()
	var job bpctype.Job
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		res, err := passport.NewTx(tx, e.Client, "").Enqueue(e.Ctx, args, key)
		job = res.Job
		return err
	}))
	return job
}

// BuildArgs creates a BUILDING snapshot and returns its BUILD_SNAPSHOT args.
func (e Env) BuildArgs(t testing.TB) *jobargs.BuildSnapshotArgs {
	t.Helper()
	sn, err := e.Store.CreateSnapshot(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	return &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}
}

// BuildJob creates a snapshot and enqueues its BUILD_SNAPSHOT job.
func (e Env) BuildJob(t testing.TB) (uuid.UUID, bpctype.Job) {
	t.Helper()
	args := e.BuildArgs(t)
	return args.SnapshotID, e.Enqueue(t, args, "")
}

// Wait waits until the job is terminal.
func (e Env) Wait(t testing.TB, jobID uuid.UUID) bpctype.Job {
	t.Helper()
	return e.WaitUntil(t, jobID, func(j bpctype.Job) bool { return bpctype.IsTerminal(j.Status) })
}

// WaitUntil waits until done holds for the job's SSOT row. Its 20 s bound
// only says the job did not hang.
func (e Env) WaitUntil(t testing.TB, jobID uuid.UUID, done func(bpctype.Job) bool) bpctype.Job {
	t.Helper()
	var job bpctype.Job
	require.Eventually(t, func() bool {
		job = e.Job(t, jobID)
		return done(job)
	}, 20*time.Second, 10*time.Millisecond, "job %s never finished", jobID)
	return job
}

// Job returns the job's SSOT row.
func (e Env) Job(t testing.TB, jobID uuid.UUID) bpctype.Job {
	t.Helper()
	j, err := e.Store.GetJob(e.Ctx, store.DevTenantID, jobID)
	require.NoError(t, err)
	return j
}

// Count runs a count(*) query.
func (e Env) Count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, sql, args...).Scan(&n))
	return n
}

// Consistent asserts that the SSOT jobs mirror River's jobs.
func (e Env) Consistent(t testing.TB) {
	t.Helper()
	RequireConsistent(t, e.Store)
}
