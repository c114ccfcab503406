package workers_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// env is what every test env of this package has: a per-test schema's
// store and a River client on it (working every queue, or insert-only).
// The tests of each subject embed it in their own env.
type env struct {
	ctx    context.Context
	st     *store.Queries
	client *river.Client[pgx.Tx]
}

// enqueue inserts one job through the passport package, as the API does
// (with an idempotency key unless key is "").
func (e env) enqueue(t *testing.T, args jobargs.Args, key string) bpctype.Job {
	t.Helper()
	var job bpctype.Job
	require.NoError(t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
		res, err := passport.NewTx(tx, e.client, "").Enqueue(e.ctx, args, key)
		job = res.Job
		return err
	}))
	return job
}

// buildArgs creates a BUILDING snapshot and returns its BUILD_SNAPSHOT args.
func (e env) buildArgs(t *testing.T) *jobargs.BuildSnapshotArgs {
	t.Helper()
	sn, err := e.st.CreateSnapshot(e.ctx, store.DevTenantID)
	require.NoError(t, err)
	return &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}
}

// buildJob creates a snapshot and enqueues its BUILD_SNAPSHOT job.
func (e env) buildJob(t *testing.T) (uuid.UUID, bpctype.Job) {
	t.Helper()
	args := e.buildArgs(t)
	return args.SnapshotID, e.enqueue(t, args, "")
}

// wait waits until the job is terminal.
func (e env) wait(t *testing.T, jobID uuid.UUID) bpctype.Job {
	t.Helper()
	return e.waitUntil(t, jobID, func(j bpctype.Job) bool { return bpctype.IsTerminal(j.Status) })
}

// waitUntil waits until done holds for the job's SSOT row.
func (e env) waitUntil(t *testing.T, jobID uuid.UUID, done func(bpctype.Job) bool) bpctype.Job {
	t.Helper()
	var job bpctype.Job
	require.Eventually(t, func() bool {
		job = e.job(t, jobID)
		return done(job)
	}, 20*time.Second, 10*time.Millisecond, "job %s never finished", jobID)
	return job
}

// job returns the job's SSOT row.
func (e env) job(t *testing.T, jobID uuid.UUID) bpctype.Job {
	t.Helper()
	j, err := e.st.GetJob(e.ctx, store.DevTenantID, jobID)
	require.NoError(t, err)
	return j
}

// count runs a count(*) query.
func (e env) count(t *testing.T, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.st.DB().QueryRow(e.ctx, sql, args...).Scan(&n))
	return n
}

// consistent asserts that the SSOT jobs mirror River's jobs.
func (e env) consistent(t *testing.T) {
	t.Helper()
	testriver.RequireConsistent(t, e.st)
}

// jobError is a job's last_error.
type jobError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// lastJobError decodes the job's last_error.
func lastJobError(t *testing.T, job bpctype.Job) jobError {
	t.Helper()
	var le jobError
	require.NoError(t, json.Unmarshal(job.LastError, &le), "last_error %s", job.LastError)
	return le
}
