package workers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/jobargs"
)

// storedErrors returns the error texts River stored for a job's attempts.
func (e *pipeEnv) storedErrors(t *testing.T, riverJobID int64) []string {
	t.Helper()
	var texts []string
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT coalesce(array_agg(x->>'error' ORDER BY i), '{}')
		FROM river_job, unnest(errors) WITH ORDINALITY AS u(x, i) WHERE id = $1`, riverJobID).Scan(&texts))
	return texts
}

func (e *pipeEnv) riverState(t *testing.T, riverJobID int64) string {
	t.Helper()
	var state string
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT state FROM river_job WHERE id = $1`, riverJobID).Scan(&state))
	return state
}

// A permanent error goes through River as errcode.Encode's JSON, without
// River's "JobCancelError: " prefix, and still cancels the job: River stores
// that text, the mirror reads its code into last_error, and the status the
// observer counted is the one the mirror shows.
func TestPermanentErrorIsStoredTypedAndCancelsTheJob(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	args := e.BuildArgs(t)
	requireSucceeded(t, e.run(t, args))

	job := e.run(t, args) // the snapshot is READY now: INVALID_STATE
	le := requireFailed(t, job, "INVALID_STATE")
	e.waitFinalized(t, job.RiverJobID, 1)
	require.Equal(t, "cancelled", e.riverState(t, job.RiverJobID))
	texts := e.storedErrors(t, job.RiverJobID)
	require.Len(t, texts, 1)
	require.True(t, strings.HasPrefix(texts[0], `{"code":"INVALID_STATE","message":`), texts[0])
	stored, ok := errcode.Decode(texts[0])
	require.True(t, ok, texts[0])
	require.Equal(t, le.Message, stored.Message)
	require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.JobsCompleted.WithLabelValues(jobargs.KindBuildSnapshot, bpctype.StatusFailed)))
	e.Consistent(t)
}

// A retryable error is stored the same way on every attempt; the last
// attempt leaves the job DEAD_LETTER with its code.
func TestRetryableErrorIsStoredTypedOnEveryAttempt(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{maxAttempts: 3, beforeCommit: func(context.Context, *rivertype.JobRow) error {
		return errcode.New(errcode.IOError, "disk full:\n\t/var/lib/bpc")
	}})
	job := e.run(t, e.BuildArgs(t))
	require.Equal(t, bpctype.StatusDeadLetter, job.Status, "last_error %s", job.LastError)
	le := lastJobError(t, job)
	require.Equal(t, "IO_ERROR", le.Code)
	require.Equal(t, "disk full: /var/lib/bpc", le.Message)
	e.waitFinalized(t, job.RiverJobID, 3)
	require.Equal(t, []string{
		`{"code":"IO_ERROR","message":"disk full: /var/lib/bpc"}`,
		`{"code":"IO_ERROR","message":"disk full: /var/lib/bpc"}`,
		`{"code":"IO_ERROR","message":"disk full: /var/lib/bpc"}`,
	}, e.storedErrors(t, job.RiverJobID))
	require.Equal(t, 2.0, testutil.ToFloat64(e.metrics.JobsCompleted.WithLabelValues(jobargs.KindBuildSnapshot, bpctype.StatusQueued)))
	require.Equal(t, 1.0, testutil.ToFloat64(e.metrics.JobsCompleted.WithLabelValues(jobargs.KindBuildSnapshot, bpctype.StatusDeadLetter)))
	e.Consistent(t)
}

// River writes some errors itself, in its own words: here a job kind no
// worker is registered for. The mirror records them as INTERNAL_ERROR with
// River's text, and River's update goes through.
func TestRiversOwnErrorIsMirrored(t *testing.T) {
	t.Parallel()
	e := newPipeEnv(t, pipeOptions{})
	var riverID int64
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state)
		VALUES ('{}', 'NO_SUCH_KIND', 3, 1, $1, 'available') RETURNING id`, jobargs.QueuePipeline).Scan(&riverID))
	var job bpctype.Job
	require.Eventually(t, func() bool {
		var err error
		job, err = e.Store.JobByRiverID(e.Ctx, riverID)
		require.NoError(t, err)
		return job.LastError != nil
	}, 15*time.Second, 10*time.Millisecond)
	le := lastJobError(t, job)
	require.Equal(t, "INTERNAL_ERROR", le.Code)
	require.Equal(t, (&rivertype.UnknownJobKindError{Kind: "NO_SUCH_KIND"}).Error(), le.Message)
	e.Consistent(t)
}
