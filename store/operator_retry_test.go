package store_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// River's JobRetry — what River UI and POST /v1/jobs/{id}/retry call — marks
// the job it makes available, whatever it was waiting in; River's own
// transitions (the scheduler making a due job available, a running job put
// back) do not.
func TestOperatorRetryIsMarkedOnTheRiverJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mark := func(riverJobID int64) (bpctype.OperatorRetry, bool) {
		t.Helper()
		var metadata []byte
		require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT metadata FROM river_job WHERE id = $1`, riverJobID).Scan(&metadata))
		return bpctype.LastOperatorRetry(metadata)
	}
	dbNow := func() time.Time {
		t.Helper()
		var now time.Time
		require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT now()`).Scan(&now))
		return now
	}
	setState := func(riverJobID int64, sql string) {
		t.Helper()
		e.Exec(t, `UPDATE river_job SET `+sql+` WHERE id = $1`, riverJobID)
	}

	for _, tc := range []struct {
		name, state string
		attempt     int
	}{
		{"dead letter", `state = 'discarded', attempt = 5, max_attempts = 5, finalized_at = now()`, 5},
		{"failed", `state = 'cancelled', attempt = 1, finalized_at = now()`, 1},
		{"succeeded", `state = 'completed', attempt = 1, finalized_at = now()`, 1},
		{"waiting for its retry", `state = 'retryable', attempt = 2, scheduled_at = now() + interval '1 hour'`, 2},
		// A short snooze leaves the job available, due in the future.
		{"held by the breaker", `state = 'available', attempt = 3, scheduled_at = now() + interval '3 seconds'`, 3},
		{"scheduled", `state = 'scheduled', scheduled_at = now() + interval '1 hour'`, 0},
	} {
		job := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
		setState(job.RiverJobID, `state = 'running', attempted_at = now()`)
		setState(job.RiverJobID, tc.state)
		_, ok := mark(job.RiverJobID)
		require.False(t, ok, tc.name)
		before := dbNow()
		_, err := e.River.JobRetry(e.Ctx, job.RiverJobID)
		require.NoError(t, err, tc.name)
		after := dbNow()
		r, ok := mark(job.RiverJobID)
		require.True(t, ok, "%s: retried by an operator", tc.name)
		require.Equal(t, tc.attempt, r.AfterAttempt, tc.name)
		// The retry's transaction time, read from the same clock.
		require.False(t, r.At.Before(before) || r.At.After(after), "%s: marked at %s, retried between %s and %s", tc.name, r.At, before, after)
		require.True(t, r.IsOperatorAttempt(tc.attempt+1), "%s: the next attempt is the operator's", tc.name)
		require.False(t, r.IsOperatorAttempt(tc.attempt+2), "%s: the one after is River's", tc.name)
		require.Equal(t, bpctype.StatusQueued, e.job(t, store.DevTenantID, job.JobID).Status, tc.name)
	}

	// Not retries: the scheduler's promotion of a due job, a running job put
	// back (the lease reaper), a running job River UI's retry leaves alone.
	due := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
	setState(due.RiverJobID, `state = 'scheduled', scheduled_at = now() - interval '1 second'`)
	setState(due.RiverJobID, `state = 'available'`)
	_, ok := mark(due.RiverJobID)
	require.False(t, ok, "scheduler")
	setState(due.RiverJobID, `scheduled_at = now() + interval '1 hour'`)
	_, ok = mark(due.RiverJobID)
	require.False(t, ok, "put off, not retried")

	reaped := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
	setState(reaped.RiverJobID, `state = 'running', attempt = 1, attempted_at = now()`)
	setState(reaped.RiverJobID, `state = 'available'`)
	_, ok = mark(reaped.RiverJobID)
	require.False(t, ok, "reaper")

	running := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
	setState(running.RiverJobID, `state = 'running', attempt = 1, attempted_at = now()`)
	_, err := e.River.JobRetry(e.Ctx, running.RiverJobID)
	require.NoError(t, err)
	_, ok = mark(running.RiverJobID)
	require.False(t, ok, "a running job is not retried")

	e.requireConsistent(t)
}

func TestLastOperatorRetryReadsOnlyItsMark(t *testing.T) {
	t.Parallel()
	for _, md := range []string{``, `{}`, `{"bpc_job_id":"x"}`, `{"bpc_operator_retry":"soon"}`, `not json "bpc_operator_retry"`} {
		_, ok := bpctype.LastOperatorRetry([]byte(md))
		require.False(t, ok, md)
	}
	r, ok := bpctype.LastOperatorRetry([]byte(`{"bpc_job_id":"x","bpc_operator_retry":{"at":"2026-11-23T10:00:00Z","after_attempt":5}}`))
	require.True(t, ok)
	require.Equal(t, 5, r.AfterAttempt)
	require.True(t, r.IsOperatorAttempt(6))
}
