package store_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// requireUpdatedNotBeforeCreated reads the job back and requires
// updated_at >= created_at.
func requireUpdatedNotBeforeCreated(t *testing.T, e env, riverID int64, when string) bpctype.Job {
	t.Helper()
	job, err := e.Store.JobByRiverID(e.Ctx, riverID)
	require.NoError(t, err)
	require.False(t, job.UpdatedAt.Before(job.CreatedAt), "%s: updated_at %s is before created_at %s",
		when, job.UpdatedAt, job.CreatedAt)
	return job
}

// A job enqueued late in a transaction: River stamps created_at with the
// process's clock as it sends the row, after the transaction's now().
// Its updated_at is still not before its created_at.
func TestNewJobIsNotUpdatedBeforeItWasCreated(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var riverID int64
	require.NoError(t, e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		// The transaction's now() is fixed by its first statement; the
		// insert comes later.
		if _, err := tx.Exec(e.Ctx, `SELECT pg_sleep(0.05)`); err != nil {
			return err
		}
		res, err := passport.EnqueueTx(e.Ctx, e.Store.WithTx(tx), e.River, []passport.EnqueueRequest{{JobID: uuid.New(), Args: parseFacts(store.DevTenantID)}})
		if err != nil {
			return err
		}
		riverID = res[0].Job.RiverJobID
		return nil
	}))
	requireUpdatedNotBeforeCreated(t, e, riverID, "enqueued late in its transaction")
}

// A process whose clock is ahead of the database's: created_at after the
// database's now(), on insert and on every update.
func TestJobUpdatedAtIsNotBeforeACreatedAtFromAClockAhead(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var riverID int64
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state, scheduled_at, created_at)
		VALUES ($1, 'PARSE_FACTS', 3, 1, 'pipeline', 'available', now(), now() + interval '1 hour') RETURNING id`,
		`{"tenant_id":"`+store.DevTenantID.String()+`"}`).Scan(&riverID))
	created := requireUpdatedNotBeforeCreated(t, e, riverID, "inserted").CreatedAt

	_, err := e.Pool.Exec(e.Ctx, `UPDATE river_job SET priority = 2 WHERE id = $1`, riverID)
	require.NoError(t, err)
	job := requireUpdatedNotBeforeCreated(t, e, riverID, "updated")
	require.Equal(t, int16(1), job.Priority, "the update was mirrored")
	require.True(t, job.CreatedAt.Equal(created), "created_at stays River's")
}
