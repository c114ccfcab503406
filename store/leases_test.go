package store_test

import (
	"testing"
	"time"

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

// previousReleaseRenewal is the lease renewal of the release before
// migration 019 split jobs_live in two, verbatim: during a rolling upgrade
// its pods renew their jobs' leases through the view jobs_live (FOR UPDATE
// and UPDATE of the view, taken to jobs_live_state by its INSTEAD OF
// trigger), or the new pods' reaper would take their jobs away.
const previousReleaseRenewal = `WITH input AS (
			SELECT * FROM unnest($1::bigint[], $2::int[]) AS u(rid, attempt)),
		target AS (
			SELECT j.job_id, j.river_job_id, j.status, j.attempts FROM jobs_live j JOIN input i ON j.river_job_id = i.rid
			FOR UPDATE OF j SKIP LOCKED),
		renewed AS (
			UPDATE jobs_live j SET lease_expires_at = clock_timestamp() + make_interval(secs => $4)
			FROM target t, input i
			WHERE j.job_id = t.job_id AND i.rid = j.river_job_id AND j.status = 'RUNNING'
			  AND j.attempts = i.attempt AND j.lease_owner = $3 AND j.lease_expires_at > clock_timestamp()
			RETURNING j.river_job_id)
		SELECT i.rid, i.attempt, t.job_id IS NOT NULL, coalesce(t.status, j.status, ''), coalesce(t.attempts, j.attempts, 0),
			EXISTS (SELECT 1 FROM renewed r WHERE r.river_job_id = i.rid)
		FROM input i
		LEFT JOIN target t ON t.river_job_id = i.rid
		LEFT JOIN jobs_live j ON j.river_job_id = i.rid`

func TestPreviousReleaseRenewsLeasesThroughTheView(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	other := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	for _, id := range []int64{j.RiverJobID, other.RiverJobID} {
		e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w'] WHERE id = $1`, id)
	}
	var before time.Time
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT lease_expires_at FROM jobs_live_state WHERE river_job_id = $1`, j.RiverJobID).Scan(&before))
	fixedXmin := e.fixedXmin(t, j.RiverJobID)

	var rid int64
	var attempt, current int32
	var unlocked, renewed bool
	var status string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, previousReleaseRenewal, []int64{j.RiverJobID}, []int32{1}, "w", 3600.0).
		Scan(&rid, &attempt, &unlocked, &status, &current, &renewed))
	require.Equal(t, j.RiverJobID, rid)
	require.True(t, unlocked)
	require.True(t, renewed, "the old statement renews through the view")
	require.Equal(t, "RUNNING", status)

	var after, untouched time.Time
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT lease_expires_at FROM jobs_live_state WHERE river_job_id = $1`, j.RiverJobID).Scan(&after))
	require.True(t, after.After(before.Add(time.Hour-2*time.Minute)), "lease %s, was %s", after, before)
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT lease_expires_at FROM jobs_live_state WHERE river_job_id = $1`, other.RiverJobID).Scan(&untouched))
	require.True(t, untouched.Before(before.Add(time.Minute)), "another job's lease is left alone")

	// The fixed half was not rewritten: nothing of it changed.
	require.Equal(t, fixedXmin, e.fixedXmin(t, j.RiverJobID))

	// The view refuses what it cannot take.
	_, err := e.Pool.Exec(e.Ctx, `UPDATE jobs_live SET river_job_id = river_job_id + 1000000 WHERE river_job_id = $1`, j.RiverJobID)
	require.ErrorContains(t, err, "not updatable")
	e.requireConsistent(t)
}

// fixedXmin is the transaction that wrote the fixed half of a live job's
// row: it changes when the row is rewritten.
func (e env) fixedXmin(t *testing.T, riverJobID int64) string {
	t.Helper()
	var xmin string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT xmin::text FROM jobs_live_fixed WHERE river_job_id = $1`, riverJobID).Scan(&xmin))
	return xmin
}
