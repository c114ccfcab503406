package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func TestFenceLeaseAdmitsOnlyTheAttemptHoldingALiveLease(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	fence := func(attempt int) error {
		return e.inTx(func(q *store.Queries) error { return q.FenceLease(e.Ctx, j.RiverJobID, attempt) })
	}
	requireCode(t, fence(1), errcode.LeaseExpired) // not running yet

	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w'] WHERE id = $1`, j.RiverJobID)
	require.NoError(t, fence(1))
	requireCode(t, fence(2), errcode.LeaseExpired) // another attempt's

	e.Exec(t, `UPDATE jobs_live SET lease_expires_at = now() - interval '1 second' WHERE river_job_id = $1`, j.RiverJobID)
	requireCode(t, fence(1), errcode.LeaseExpired) // running, but its lease ran out

	requireCode(t, e.inTx(func(q *store.Queries) error { return q.FenceLease(e.Ctx, -1, 1) }), errcode.NotFound)
}

// The fence of a transaction that enqueued jobs without reading them back
// (passport.Tx.Unread) also checks, in its one statement, that the mirror
// wrote their SSOT rows: one missing is INTERNAL, before the commit.
func TestFenceLeaseMirroredChecksTheInsertedJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	next := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w'] WHERE id = $1`, j.RiverJobID)
	fence := func(inserted ...uuid.UUID) error {
		return e.inTx(func(q *store.Queries) error { return q.FenceLeaseMirrored(e.Ctx, j.RiverJobID, 1, inserted) })
	}
	require.NoError(t, fence())
	require.NoError(t, fence(next.JobID))
	requireCode(t, fence(next.JobID, uuid.New()), errcode.Internal)
	// The error names the id without its row, and a repeated id is no
	// missing one.
	gone := uuid.New()
	err := fence(next.JobID, gone)
	require.ErrorContains(t, err, gone.String())
	require.NotContains(t, err.Error(), next.JobID.String())
	require.NoError(t, fence(next.JobID, next.JobID))
	requireCode(t, e.inTx(func(q *store.Queries) error { return q.VerifyMirrored(e.Ctx, []uuid.UUID{next.JobID, uuid.New()}) }), errcode.Internal)
	require.NoError(t, e.inTx(func(q *store.Queries) error { return q.VerifyMirrored(e.Ctx, []uuid.UUID{next.JobID}) }))
}
