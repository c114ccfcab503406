package store_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

func TestEnqueueWritesSSOTRowMirroringRiver(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	args := parseFacts(store.DevTenantID)
	jobID := uuid.New()
	job := e.mustEnqueue(t, passport.EnqueueRequest{JobID: jobID, Args: args, IdempotencyKey: "k-1", RequestHash: "h-1"})

	require.Equal(t, jobID, job.JobID, "the requested job id is used")
	require.Equal(t, store.DevTenantID, job.TenantID)
	require.Equal(t, "PARSE_FACTS", job.Type)
	require.Equal(t, bpctype.StatusQueued, job.Status)
	require.Equal(t, int16(2), job.Priority, "PARSE_FACTS is SSOT priority normal")
	require.Equal(t, int32(0), job.Attempts)
	require.Equal(t, int32(25), job.MaxAttempts, "River's default when the client sets none")
	require.Equal(t, "pipeline", job.Queue)
	require.Equal(t, ptr("k-1"), job.IdempotencyKey)
	require.Nil(t, job.LeaseOwner)
	require.Nil(t, job.LastError)
	wantPayload, err := json.Marshal(args)
	require.NoError(t, err)
	require.JSONEq(t, string(wantPayload), string(job.Payload))

	var riverID int64
	var state, queue string
	var priority, maxAttempts int
	var meta []byte
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT id, state::text, queue, priority, max_attempts, metadata
		FROM river_job WHERE id = $1`, job.RiverJobID).Scan(&riverID, &state, &queue, &priority, &maxAttempts, &meta))
	require.Equal(t, "available", state)
	require.Equal(t, "pipeline", queue)
	require.Equal(t, 3, priority, "River priority = SSOT priority + 1")
	require.Equal(t, 25, maxAttempts)
	var m map[string]string
	require.NoError(t, json.Unmarshal(meta, &m))
	require.Equal(t, jobID.String(), m["bpc_job_id"])

	byRiver, err := e.Store.JobByRiverID(e.Ctx, riverID)
	require.NoError(t, err)
	require.Equal(t, jobID, byRiver.JobID)
	e.requireConsistent(t)
}

func TestEnqueueOverridesPriorityAttemptsAndSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := time.Now().Add(time.Hour).UTC().Truncate(time.Microsecond)
	job := e.mustEnqueue(t, passport.EnqueueRequest{
		Args:        buildSnapshot(store.DevTenantID),
		Priority:    ptr(0),
		MaxAttempts: ptr(3),
		ScheduledAt: &at,
	})
	require.Equal(t, int16(0), job.Priority)
	require.Equal(t, int32(3), job.MaxAttempts)
	require.Equal(t, bpctype.StatusQueued, job.Status, "a scheduled job is QUEUED")
	require.True(t, at.Equal(job.ScheduledAt), "scheduled_at %s, want %s", job.ScheduledAt, at)
	require.Nil(t, job.IdempotencyKey)

	var priority int
	var state string
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT priority, state::text FROM river_job WHERE id = $1`, job.RiverJobID).Scan(&priority, &state))
	require.Equal(t, 1, priority)
	require.Equal(t, "scheduled", state)
	e.requireConsistent(t)
}

func countRiverJobs(t *testing.T, e env) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM river_job`)
}

func TestEnqueueConcurrentSameKeyIsAnIdempotencyRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := passport.EnqueueRequest{Args: parseFacts(store.DevTenantID), IdempotencyKey: "race", RequestHash: "h"}

	enqueue := func(q *store.Queries) error {
		_, err := passport.EnqueueTx(e.Ctx, q, e.River, []passport.EnqueueRequest{req})
		return err
	}
	err := e.race(t, enqueue, enqueue)
	require.ErrorIs(t, err, passport.ErrIdempotencyRace)

	// The caller's retry in a new transaction finds the committed job.
	res, err := e.enqueue(t, req)
	require.NoError(t, err)
	require.True(t, res[0].Existing)
}

// waitUntilBlocked waits until the backend pid waits on a lock.
func waitUntilBlocked(t *testing.T, e env, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		var waiting bool
		err := e.Pool.QueryRow(e.Ctx, `SELECT COALESCE(wait_event_type = 'Lock', false) FROM pg_stat_activity WHERE pid = $1`, pid).Scan(&waiting)
		return err == nil && waiting
	}, 5*time.Second, 10*time.Millisecond, "backend %d never blocked", pid)
}

func TestListJobsFiltersAndIsolatesTenants(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)

	parse := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	build := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
	done := e.mustEnqueue(t, passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)})
	foreign := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(other)})
	e.Exec(t, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now() WHERE id = $1`, done.RiverJobID)

	ids := func(p store.JobPage) []uuid.UUID {
		out := make([]uuid.UUID, len(p.Items))
		for i, j := range p.Items {
			out[i] = j.JobID
		}
		return out
	}
	list := func(f store.JobFilter) store.JobPage {
		t.Helper()
		p, err := e.Store.ListJobs(e.Ctx, f)
		require.NoError(t, err)
		return p
	}

	all := list(store.JobFilter{TenantID: store.DevTenantID})
	require.ElementsMatch(t, []uuid.UUID{parse.JobID, build.JobID, done.JobID}, ids(all))
	require.NotContains(t, ids(all), foreign.JobID, "another tenant's job never appears")
	require.Empty(t, all.NextCursor)

	require.Equal(t, []uuid.UUID{parse.JobID}, ids(list(store.JobFilter{TenantID: store.DevTenantID, Type: "PARSE_FACTS"})))
	require.ElementsMatch(t, []uuid.UUID{build.JobID, done.JobID}, ids(list(store.JobFilter{TenantID: store.DevTenantID, Type: "BUILD_SNAPSHOT"})))
	require.Equal(t, []uuid.UUID{done.JobID}, ids(list(store.JobFilter{TenantID: store.DevTenantID, Status: bpctype.StatusSucceeded})))
	require.Equal(t, []uuid.UUID{build.JobID}, ids(list(store.JobFilter{TenantID: store.DevTenantID, Type: "BUILD_SNAPSHOT", Status: bpctype.StatusQueued})))
	require.Equal(t, []uuid.UUID{foreign.JobID}, ids(list(store.JobFilter{TenantID: other})))

	empty := list(store.JobFilter{TenantID: uuid.New()})
	require.NotNil(t, empty.Items, "an empty page serialises as [] not null")
	require.Empty(t, empty.Items)

	_, err := e.Store.GetJob(e.Ctx, other, parse.JobID)
	requireCode(t, err, errcode.NotFound)
}

func TestListJobsKeysetPagination(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var enqueued []uuid.UUID
	for range 7 {
		// One transaction each, so that created_at differs.
		enqueued = append(enqueued, e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)}).JobID)
	}

	var pages [][]bpctype.Job
	f := store.JobFilter{TenantID: store.DevTenantID, Limit: 3}
	for {
		p, err := e.Store.ListJobs(e.Ctx, f)
		require.NoError(t, err)
		pages = append(pages, p.Items)
		if p.NextCursor == "" {
			break
		}
		require.Less(t, len(pages), 5, "pagination does not terminate")
		f.Cursor = p.NextCursor
	}
	require.Len(t, pages, 3)
	require.Len(t, pages[0], 3)
	require.Len(t, pages[1], 3)
	require.Len(t, pages[2], 1)

	var got []uuid.UUID
	var prev *bpctype.Job
	for _, page := range pages {
		for i := range page {
			j := page[i]
			if prev != nil {
				require.False(t, j.CreatedAt.After(prev.CreatedAt), "newest first")
			}
			prev = &j
			got = append(got, j.JobID)
		}
	}
	want := make([]uuid.UUID, len(enqueued))
	for i, id := range enqueued {
		want[len(enqueued)-1-i] = id
	}
	require.Equal(t, want, got, "every job exactly once, newest first")
}

func TestListJobsPaginationWithEqualCreatedAt(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	reqs := make([]passport.EnqueueRequest, 5)
	for i := range reqs {
		reqs[i] = passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)}
	}
	// One transaction: every job has the same created_at; job_id breaks ties.
	_, err := e.enqueue(t, reqs...)
	require.NoError(t, err)
	seen := map[uuid.UUID]bool{}
	f := store.JobFilter{TenantID: store.DevTenantID, Limit: 2}
	for range 5 {
		p, err := e.Store.ListJobs(e.Ctx, f)
		require.NoError(t, err)
		for _, j := range p.Items {
			require.False(t, seen[j.JobID], "duplicate %s", j.JobID)
			seen[j.JobID] = true
		}
		if p.NextCursor == "" {
			break
		}
		f.Cursor = p.NextCursor
	}
	require.Len(t, seen, 5)
}

func TestListJobsBadCursorIsValidationError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, cursor := range []string{"not base64 !", "e30", "bm9wZQ"} { // garbage, "{}", "nope"
		_, err := e.Store.ListJobs(e.Ctx, store.JobFilter{TenantID: store.DevTenantID, Cursor: cursor})
		ve := requireCode(t, err, errcode.Validation)
		require.Equal(t, "cursor", ve.Field)
	}
}

func TestGetJobUnknownIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.Store.GetJob(e.Ctx, store.DevTenantID, uuid.New())
	requireCode(t, err, errcode.NotFound)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = e.Store.JobByRiverID(e.Ctx, 987654)
	requireCode(t, err, errcode.NotFound)

	err = e.inTx(func(q *store.Queries) error {
		_, err := q.GetJobForUpdate(e.Ctx, store.DevTenantID, uuid.New())
		return err
	})
	requireCode(t, err, errcode.NotFound)
	require.False(t, errors.Is(err, pgx.ErrNoRows), "pgx.ErrNoRows does not leak past the store")
}
