package store_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// riverTimes reads a River job's timestamps as Postgres stores them.
func riverTimes(t *testing.T, e env, riverID int64) (attemptedAt, finalizedAt *time.Time) {
	t.Helper()
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT attempted_at, finalized_at FROM river_job WHERE id = $1`, riverID).
		Scan(&attemptedAt, &finalizedAt))
	return attemptedAt, finalizedAt
}

func TestMirrorFollowsPlainSQLLifecycle(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	b := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	c := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})

	// A worker that is plain SQL takes job a.
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = ARRAY['sql-worker'] WHERE id = $1`, a.RiverJobID)
	got := e.job(t, store.DevTenantID, a.JobID)
	attemptedAt, _ := riverTimes(t, e, a.RiverJobID)
	require.Equal(t, bpctype.StatusRunning, got.Status)
	require.Equal(t, int32(1), got.Attempts)
	require.Equal(t, ptr("sql-worker"), got.LeaseOwner)
	require.NotNil(t, got.StartedAt)
	require.True(t, attemptedAt.Equal(*got.StartedAt))
	require.NotNil(t, got.LeaseExpiresAt)
	require.True(t, attemptedAt.Add(60*time.Second).Equal(*got.LeaseExpiresAt),
		"lease_expires_at %s, want attempted_at %s + 60s", got.LeaseExpiresAt, attemptedAt)
	e.requireConsistent(t)

	// ... and completes it.
	e.Exec(t, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, a.RiverJobID)
	got = e.job(t, store.DevTenantID, a.JobID)
	_, finalizedAt := riverTimes(t, e, a.RiverJobID)
	require.Equal(t, bpctype.StatusSucceeded, got.Status)
	require.NotNil(t, got.FinishedAt)
	require.True(t, finalizedAt.Equal(*got.FinishedAt))
	require.Nil(t, got.LeaseOwner, "a finished job holds no lease")
	require.Nil(t, got.LeaseExpiresAt)
	e.requireConsistent(t)

	// Deleting a queued job cancels it and keeps its history.
	e.Exec(t, `DELETE FROM river_job WHERE id = $1`, b.RiverJobID)
	got = e.job(t, store.DevTenantID, b.JobID)
	require.Equal(t, bpctype.StatusCancelled, got.Status)
	require.NotNil(t, got.RiverDeletedAt)
	require.NotNil(t, got.FinishedAt)
	e.requireConsistent(t)

	// Deleting a finished job keeps its status.
	e.Exec(t, `DELETE FROM river_job WHERE id = $1`, a.RiverJobID)
	got = e.job(t, store.DevTenantID, a.JobID)
	require.Equal(t, bpctype.StatusSucceeded, got.Status)
	require.NotNil(t, got.RiverDeletedAt)
	require.True(t, finalizedAt.Equal(*got.FinishedAt), "finished_at is not rewritten")
	e.requireConsistent(t)

	// TRUNCATE: a running job is cancelled, every row is kept.
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(),
		attempted_by = ARRAY['sql-worker'] WHERE id = $1`, c.RiverJobID)
	e.Exec(t, `TRUNCATE river_job`)
	got = e.job(t, store.DevTenantID, c.JobID)
	require.Equal(t, bpctype.StatusCancelled, got.Status)
	require.NotNil(t, got.RiverDeletedAt)
	require.Nil(t, got.LeaseOwner)
	require.Nil(t, got.LeaseExpiresAt)
	page, err := e.Store.ListJobs(e.Ctx, store.JobFilter{TenantID: store.DevTenantID})
	require.NoError(t, err)
	require.Len(t, page.Items, 3, "TRUNCATE loses no history")
	rep := e.requireConsistent(t)
	require.Equal(t, int64(0), rep.RiverJobs)
}

func TestMirrorFollowsSetBasedUpdates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var jobs []bpctype.Job
	for range 4 {
		jobs = append(jobs, e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)}))
	}
	// One statement touching every row, as River's batch fetch does.
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = attempt + 1, attempted_at = now(),
		attempted_by = ARRAY['w-1', 'w-2'], priority = 4, max_attempts = 7, queue = 'other'`)
	for _, j := range jobs {
		got := e.job(t, store.DevTenantID, j.JobID)
		require.Equal(t, bpctype.StatusRunning, got.Status)
		require.Equal(t, ptr("w-2"), got.LeaseOwner, "the last attempted_by is the lease owner")
		require.Equal(t, int16(3), got.Priority)
		require.Equal(t, int32(7), got.MaxAttempts)
		require.Equal(t, "other", got.Queue)
	}
	e.requireConsistent(t)
}

func TestMirrorRiverJobInsertedBySQLWithoutTenant(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var riverID int64
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state, scheduled_at)
		VALUES ('{"x":1}', 'CUSTOM_MAINTENANCE', 3, 1, 'default', 'available', now()) RETURNING id`).Scan(&riverID))
	job, err := e.Store.JobByRiverID(e.Ctx, riverID)
	require.NoError(t, err)
	require.Equal(t, store.SystemTenantID, job.TenantID, "a job without tenant belongs to the system tenant")
	require.Equal(t, "CUSTOM_MAINTENANCE", job.Type)
	require.Equal(t, bpctype.StatusQueued, job.Status)
	require.Equal(t, int16(0), job.Priority)
	require.NotEqual(t, uuid.Nil, job.JobID)
	e.requireConsistent(t)
}

func TestMirrorFinalStatesAndLastError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name        string
		update      string
		wantStatus  string
		wantCode    string
		wantMessage string
		wantAttempt int
	}{
		{
			name:       "operator cancel",
			update:     `state = 'cancelled', finalized_at = now(), metadata = metadata || '{"cancel_attempted_at":"2026-01-01T00:00:00Z"}'`,
			wantStatus: bpctype.StatusCancelled,
		},
		{
			name: "worker cancel is FAILED",
			update: `state = 'cancelled', attempt = 1, attempted_at = now(), finalized_at = now(),
				errors = ARRAY[jsonb_build_object('at', '2026-01-01T00:00:00Z', 'attempt', 1, 'error', '{"code":"VALIDATION_ERROR","message":"x"}')]`,
			wantStatus: bpctype.StatusFailed, wantCode: "VALIDATION_ERROR", wantMessage: "x", wantAttempt: 1,
		},
		{
			name:       "cancelled without metadata or errors is FAILED",
			update:     `state = 'cancelled', finalized_at = now()`,
			wantStatus: bpctype.StatusFailed,
		},
		{
			name: "discarded is DEAD_LETTER with the last error",
			update: `state = 'discarded', attempt = 5, attempted_at = now(), finalized_at = now(),
				errors = ARRAY[jsonb_build_object('at', '2026-01-01T00:00:00Z', 'attempt', 5, 'error', '{"code":"WEBHOOK_5XX","message":"endpoint answered HTTP 500"}')]`,
			wantStatus: bpctype.StatusDeadLetter, wantCode: "WEBHOOK_5XX", wantMessage: "endpoint answered HTTP 500", wantAttempt: 5,
		},
		{
			name: "last of several errors wins",
			update: `state = 'discarded', attempt = 2, attempted_at = now(), finalized_at = now(),
				errors = ARRAY[jsonb_build_object('at', '2026-01-01T00:00:00Z', 'attempt', 1, 'error', '{"code":"DB_UNAVAILABLE","message":"down"}'),
				               jsonb_build_object('at', '2026-01-01T00:00:02Z', 'attempt', 2, 'error', '{"code":"WEBHOOK_TIMEOUT","message":"no response within 30s"}')]`,
			wantStatus: bpctype.StatusDeadLetter, wantCode: "WEBHOOK_TIMEOUT", wantMessage: "no response within 30s", wantAttempt: 2,
		},
		{
			name: "error without a code is INTERNAL_ERROR",
			update: `state = 'retryable', attempt = 1, attempted_at = now(), scheduled_at = now() + interval '1 hour',
				errors = ARRAY['{"at":"2026-01-01T00:00:00Z","attempt":1,"error":"panic: runtime error: index out of range"}'::jsonb]`,
			wantStatus: bpctype.StatusQueued, wantCode: "INTERNAL_ERROR", wantMessage: "panic: runtime error: index out of range", wantAttempt: 1,
		},
		{
			name: "multi-line message is one line",
			update: `state = 'retryable', attempt = 1, attempted_at = now(), scheduled_at = now() + interval '1 hour',
				errors = ARRAY[jsonb_build_object('at', '2026-01-01T00:00:00Z', 'attempt', 1, 'error', '{"code":"IO_ERROR","message":"first\nsecond\t third"}')]`,
			wantStatus: bpctype.StatusQueued, wantCode: "IO_ERROR", wantMessage: "first second third", wantAttempt: 1,
		},
	}
	jobs := make([]bpctype.Job, len(tests))
	for i := range tests {
		jobs[i] = e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Exec(t, `UPDATE river_job SET `+tt.update+` WHERE id = $1`, jobs[i].RiverJobID)
			got := e.job(t, store.DevTenantID, jobs[i].JobID)
			require.Equal(t, tt.wantStatus, got.Status)
			if tt.wantCode == "" {
				require.Nil(t, got.LastError)
				return
			}
			le := decodeLastError(t, got.LastError)
			require.Equal(t, tt.wantCode, le.Code)
			require.Equal(t, tt.wantMessage, le.Message)
			require.Equal(t, tt.wantAttempt, le.Attempt)
			require.False(t, le.At.IsZero())
		})
	}
	e.requireConsistent(t)
}

func TestMirrorBoundsLastErrorMessage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'retryable', attempt = 1, attempted_at = now(),
		errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 1, 'error', '{"code":"IO_ERROR","message":"' || repeat('x', 5000) || '"}')] WHERE id = $1`, j.RiverJobID)
	le := decodeLastError(t, e.job(t, store.DevTenantID, j.JobID).LastError)
	require.Equal(t, "IO_ERROR", le.Code)
	require.Len(t, le.Message, 500)
}

func TestMirrorFollowsRiverClientActions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	cancelled := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	retried := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	deleted := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})

	// What River UI and the admin API do.
	_, err := e.River.JobCancel(e.Ctx, cancelled.RiverJobID)
	require.NoError(t, err)
	require.Equal(t, bpctype.StatusCancelled, e.job(t, store.DevTenantID, cancelled.JobID).Status)

	e.Exec(t, `UPDATE river_job SET state = 'discarded', attempt = 25, attempted_at = now(), finalized_at = now(),
		errors = ARRAY[jsonb_build_object('at', '2026-01-01T00:00:00Z', 'attempt', 25, 'error', '{"code":"WEBHOOK_5XX","message":"endpoint answered HTTP 503"}')] WHERE id = $1`, retried.RiverJobID)
	require.Equal(t, bpctype.StatusDeadLetter, e.job(t, store.DevTenantID, retried.JobID).Status)
	_, err = e.River.JobRetry(e.Ctx, retried.RiverJobID)
	require.NoError(t, err)
	got := e.job(t, store.DevTenantID, retried.JobID)
	require.Equal(t, bpctype.StatusQueued, got.Status)
	require.Nil(t, got.FinishedAt)

	_, err = e.River.JobDelete(e.Ctx, deleted.RiverJobID)
	require.NoError(t, err)
	got = e.job(t, store.DevTenantID, deleted.JobID)
	require.Equal(t, bpctype.StatusCancelled, got.Status)
	require.NotNil(t, got.RiverDeletedAt)

	e.requireConsistent(t)
}

func TestMirrorLeaseTTLComesFromSession(t *testing.T) {
	t.Parallel()
	e := env{teststore.On(t, testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 7}))}
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w'] WHERE id = $1`, j.RiverJobID)
	got := e.job(t, store.DevTenantID, j.JobID)
	attemptedAt, _ := riverTimes(t, e, j.RiverJobID)
	require.True(t, attemptedAt.Add(7*time.Second).Equal(*got.LeaseExpiresAt), "lease_expires_at %s", got.LeaseExpiresAt)
}

func TestMirrorFiresUnderReplicaSessionRole(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})

	var insertedID int64
	err := e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.Ctx, `SET LOCAL session_replication_role = replica`); err != nil {
			return err
		}
		if _, err := tx.Exec(e.Ctx, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now() WHERE id = $1`, j.RiverJobID); err != nil {
			return err
		}
		return tx.QueryRow(e.Ctx, `INSERT INTO river_job (args, kind, max_attempts, priority, queue, state, scheduled_at)
			VALUES ('{}', 'BULK_LOADED', 1, 1, 'default', 'available', now()) RETURNING id`).Scan(&insertedID)
	})
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42501" {
		t.Skip("the test database user may not set session_replication_role (needs superuser)")
	}
	require.NoError(t, err)

	require.Equal(t, bpctype.StatusSucceeded, e.job(t, store.DevTenantID, j.JobID).Status)
	_, err = e.Store.JobByRiverID(e.Ctx, insertedID)
	require.NoError(t, err, "an insert under replica role is mirrored")
	e.requireConsistent(t)
}

func driftProblems(rep store.ConsistencyReport) string {
	var b strings.Builder
	for _, d := range rep.Drifts {
		b.WriteString(d.Problem)
		b.WriteString("\n")
	}
	return b.String()
}

func TestConsistencyDetectsDisabledUpdateTrigger(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.requireConsistent(t)

	e.Exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_update`)
	e.Exec(t, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now() WHERE id = $1`, j.RiverJobID)
	require.Equal(t, bpctype.StatusQueued, e.job(t, store.DevTenantID, j.JobID).Status, "the mirror really was bypassed")

	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.GreaterOrEqual(t, rep.DriftCount, 2)
	problems := driftProblems(rep)
	require.Contains(t, problems, "bpc_mirror_update")
	require.Contains(t, problems, "status QUEUED, River state completed means SUCCEEDED")

	var forJob *store.Drift
	for i := range rep.Drifts {
		if rep.Drifts[i].JobID != nil && *rep.Drifts[i].JobID == j.JobID {
			forJob = &rep.Drifts[i]
			break
		}
	}
	require.NotNil(t, forJob, "the drift names the job: %s", problems)
	require.Equal(t, j.RiverJobID, *forJob.RiverJobID)
}

func TestConsistencyDetectsRiverJobWithoutSSOTRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_insert`)
	res, err := e.River.Insert(e.Ctx, parseFacts(store.DevTenantID), nil)
	require.NoError(t, err)

	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	require.Equal(t, int64(1), rep.RiverJobs)
	require.Equal(t, int64(0), rep.SSOTJobs)
	problems := driftProblems(rep)
	require.Contains(t, problems, "bpc_mirror_insert")
	require.Contains(t, problems, "has no SSOT row")
	found := false
	for _, d := range rep.Drifts {
		if d.RiverJobID != nil && *d.RiverJobID == res.Job.ID {
			found = true
		}
	}
	require.True(t, found, "the orphan River job is named: %s", problems)

	// EnqueueTx notices too, rather than returning a job without its row.
	_, err = e.enqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	require.Error(t, err)
	require.Contains(t, err.Error(), "mirror trigger")
}

func TestConsistencyDetectsVanishedRiverJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_delete`)
	e.Exec(t, `DELETE FROM river_job WHERE id = $1`, j.RiverJobID)

	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.False(t, rep.OK())
	problems := driftProblems(rep)
	require.Contains(t, problems, "bpc_mirror_delete")
	require.Contains(t, problems, "River job is gone")
}

// Each half of a live row without the other is drift, named by its River
// job id, and counted among the SSOT rows — also when its River job is gone.
func TestConsistencyNamesEitherHalfOfALiveRow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	noState := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	noFixed := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	noFixedNorRiver := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	noStateNorRiver := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `DELETE FROM jobs_live_state WHERE river_job_id = ANY($1)`, []int64{noState.RiverJobID, noStateNorRiver.RiverJobID})
	e.Exec(t, `DELETE FROM jobs_live_fixed WHERE river_job_id = ANY($1)`, []int64{noFixed.RiverJobID, noFixedNorRiver.RiverJobID})
	e.Exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_delete`)
	e.Exec(t, `DELETE FROM river_job WHERE id = ANY($1)`, []int64{noFixedNorRiver.RiverJobID, noStateNorRiver.RiverJobID})

	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, int64(2), rep.RiverJobs)
	require.Equal(t, int64(4), rep.SSOTJobs, "a half row is an SSOT row")
	byRiverID := map[int64]string{}
	for _, d := range rep.Drifts {
		if d.RiverJobID != nil {
			byRiverID[*d.RiverJobID] += d.Problem
		}
	}
	require.Equal(t, "SSOT row has no state (no jobs_live_state row)", byRiverID[noState.RiverJobID])
	require.Equal(t, "SSOT row has no fixed half (a jobs_live_state row without jobs_live_fixed)", byRiverID[noFixed.RiverJobID])
	require.Equal(t, "SSOT row has no fixed half (a jobs_live_state row without jobs_live_fixed), and its River job is gone",
		byRiverID[noFixedNorRiver.RiverJobID])
	require.Equal(t, "SSOT row has no state (no jobs_live_state row), and its River job is gone", byRiverID[noStateNorRiver.RiverJobID])
	require.Equal(t, 5, rep.DriftCount, driftProblems(rep)) // and the disabled trigger
}

func TestConsistencyDetectsFieldDrift(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	// Someone edits the mirror by hand.
	e.Exec(t, `UPDATE jobs_live SET attempts = 3, priority = 0, queue = 'elsewhere', lease_owner = 'ghost' WHERE job_id = $1`, j.JobID)
	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.Equal(t, 4, rep.DriftCount, driftProblems(rep))
	problems := driftProblems(rep)
	require.Contains(t, problems, "attempts 3/25, River 0/25")
	require.Contains(t, problems, "priority 0, River priority 3")
	require.Contains(t, problems, "queue elsewhere, River queue pipeline")
	require.Contains(t, problems, `lease_owner "ghost"`)
}

// Workers store an attempt's error as errcode.Encode's JSON; River writes
// some texts itself, and jobs that failed before the JSON form carry
// "CODE: message". The mirror reads a code and a one-line message from each
// and never fails River's update on a text it cannot read.
func TestMirrorReadsEveryAttemptErrorText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		name, text, wantCode, wantMessage string
	}{
		{"typed", errcode.Encode(errcode.New(errcode.SnapshotNotReady, "snapshot abc is BUILDING")),
			"SNAPSHOT_NOT_READY", "snapshot abc is BUILDING"},
		{"typed, quotes and non-ASCII", errcode.Encode(errcode.New(errcode.Webhook4xx, `endpoint <https://x.test/?a=1&b=2> answered "404" — nicht gefunden`)),
			"WEBHOOK_4XX", `endpoint <https://x.test/?a=1&b=2> answered "404" — nicht gefunden`},
		{"untyped through the encoder", errcode.Encode(errors.New("boom")), "INTERNAL_ERROR", "boom"},
		{"jsonb's spacing, as the reaper writes it", `{"code": "LEASE_EXPIRED", "message": "the lease of w1 expired"}`,
			"LEASE_EXPIRED", "the lease of w1 expired"},
		{"typed without a message", `{"code":"IO_ERROR"}`, "IO_ERROR", ""},

		{"River: an operator cancelled the running job", river.ErrJobCancelledRemotely.Error(), "CANCELLED", "job cancelled remotely"},
		{"River: unknown job kind", (&rivertype.UnknownJobKindError{Kind: "NOPE"}).Error(),
			"INTERNAL_ERROR", (&rivertype.UnknownJobKindError{Kind: "NOPE"}).Error()},
		{"River: a panic over several lines", "runtime error: index out of range [3] with length 3\ngoroutine 7 [running]:\n\tmain.f()",
			"INTERNAL_ERROR", "runtime error: index out of range [3] with length 3 goroutine 7 [running]: main.f()"},
		{"no text", "", "INTERNAL_ERROR", ""},

		{"legacy", "SNAPSHOT_NOT_READY: snapshot abc is BUILDING", "SNAPSHOT_NOT_READY", "snapshot abc is BUILDING"},
		{"legacy through river.JobCancel", "JobCancelError: VALIDATION_ERROR: x", "VALIDATION_ERROR", "x"},
		{"legacy multi-line", "IO_ERROR: first\nsecond\t third", "IO_ERROR", "first second third"},
		{"legacy lease loss", "LEASE_EXPIRED: the lease of w1 expired", "LEASE_EXPIRED", "the lease of w1 expired"},
		{"cancel of an untyped error", "JobCancelError: given up", "INTERNAL_ERROR", "given up"},

		{"opens like JSON, is not", `{"code":"X"`, "INTERNAL_ERROR", `{"code":"X"`},
		{"JSON without a code", `{"message":"m"}`, "INTERNAL_ERROR", `{"message":"m"}`},
		{"JSON with an empty code", `{"code":"","message":"m"}`, "INTERNAL_ERROR", `{"code":"","message":"m"}`},
		{"JSON with a code that is no string", `{"code":5,"message":"m"}`, "INTERNAL_ERROR", `{"code":5,"message":"m"}`},
		{"JSON jsonb cannot hold", `{"code":"X","message":"a\u0000b"}`, "INTERNAL_ERROR", `{"code":"X","message":"a\u0000b"}`},
		{"JSON nested too deep", `{"a":` + strings.Repeat("[", 100_000), "INTERNAL_ERROR", (`{"a":` + strings.Repeat("[", 100_000))[:500]},
	}
	jobs := make([]bpctype.Job, len(tests))
	for i := range tests {
		jobs[i] = e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.Exec(t, `UPDATE river_job SET state = 'retryable', attempt = 1, attempted_at = now(), scheduled_at = now() + interval '1 hour',
				errors = ARRAY[jsonb_build_object('at', now(), 'attempt', 1, 'error', $2::text)] WHERE id = $1`, jobs[i].RiverJobID, tt.text)
			le := decodeLastError(t, e.job(t, store.DevTenantID, jobs[i].JobID).LastError)
			require.Equal(t, tt.wantCode, le.Code)
			require.Equal(t, tt.wantMessage, le.Message)
			require.Equal(t, 1, le.Attempt)
		})
	}
	e.requireConsistent(t)
}

// An attempt error without its error text (plain SQL) is still mirrored.
func TestMirrorReadsAnAttemptErrorWithoutText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'retryable', attempt = 1, attempted_at = now(),
		errors = ARRAY['{"at":"2026-01-01T00:00:00Z","attempt":1}'::jsonb] WHERE id = $1`, j.RiverJobID)
	le := decodeLastError(t, e.job(t, store.DevTenantID, j.JobID).LastError)
	require.Equal(t, "INTERNAL_ERROR", le.Code)
	require.Equal(t, "", le.Message)
}

// bpc_last_error tries its cast in an exception block, which no parallel
// query may enter: it is PARALLEL UNSAFE, so an operator's query over River's
// errors runs it in the leader alone instead of failing.
func TestLastErrorDecodesInAQueryPlannedInParallel(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tx, err := e.Pool.Begin(e.Ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(e.Ctx) }()
	for _, set := range []string{"force_parallel_mode = on", "parallel_setup_cost = 0", "parallel_tuple_cost = 0", "min_parallel_table_scan_size = 0"} {
		_, err := tx.Exec(e.Ctx, "SET LOCAL "+set)
		require.NoError(t, err)
	}
	var codes []string
	require.NoError(t, tx.QueryRow(e.Ctx, `SELECT array_agg(bpc_last_error(jsonb_build_object('attempt', 1, 'error', t))->>'code')
		FROM (VALUES ('{"code":"IO_ERROR","message":"m"}'), ('{not json'), ('SNAPSHOT_SEALED: m')) v(t)`).Scan(&codes))
	require.ElementsMatch(t, []string{"SNAPSHOT_SEALED", "IO_ERROR", "INTERNAL_ERROR"}, codes)
}
