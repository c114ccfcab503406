package store_test

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// A job whose River job is deleted moves from jobs_live to jobs_history in
// the delete's transaction: the view jobs shows it once, always.
func TestDeletedRiverJobMovesToHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	done := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID), IdempotencyKey: "k1", RequestHash: "h1"})
	queued := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now() WHERE id = $1`, done.RiverJobID)
	before, err := e.Store.GetJob(e.Ctx, store.DevTenantID, done.JobID)
	require.NoError(t, err)

	e.Exec(t, `DELETE FROM river_job WHERE id = ANY($1)`, []int64{done.RiverJobID, queued.RiverJobID})

	where := func(id uuid.UUID) (live, history, view int) {
		require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT
			(SELECT count(*) FROM jobs_live WHERE job_id = $1) + (SELECT count(*) FROM jobs_live_state s
				WHERE s.river_job_id = (SELECT river_job_id FROM jobs_history WHERE job_id = $1)),
			(SELECT count(*) FROM jobs_history WHERE job_id = $1),
			(SELECT count(*) FROM jobs WHERE job_id = $1)`, id).Scan(&live, &history, &view))
		return
	}
	for _, id := range []uuid.UUID{done.JobID, queued.JobID} {
		live, history, view := where(id)
		require.Equal(t, [3]int{0, 1, 1}, [3]int{live, history, view}, "job %s", id)
	}
	after, err := e.Store.GetJob(e.Ctx, store.DevTenantID, done.JobID)
	require.NoError(t, err)
	require.NotNil(t, after.RiverDeletedAt)
	after.RiverDeletedAt, after.UpdatedAt = nil, before.UpdatedAt
	require.Equal(t, before, after, "the row moves unchanged but for river_deleted_at")

	gone, err := e.Store.GetJob(e.Ctx, store.DevTenantID, queued.JobID)
	require.NoError(t, err)
	require.Equal(t, bpctype.StatusCancelled, gone.Status, "a job deleted before it ran can never run")
	require.NotNil(t, gone.FinishedAt)

	// Its idempotency key still answers with the job.
	res, err := e.enqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID), IdempotencyKey: "k1", RequestHash: "h1"})
	require.NoError(t, err)
	require.True(t, res[0].Existing)
	require.Equal(t, done.JobID, res[0].Job.JobID)
	_, err = e.enqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID), IdempotencyKey: "k1", RequestHash: "other"})
	requireCode(t, err, "IDEMPOTENCY_CONFLICT")

	// Locking for an operator's action finds the history row too.
	locked, err := committed(e, func(q *store.Queries) (bpctype.Job, error) {
		return q.GetJobForUpdate(e.Ctx, store.DevTenantID, done.JobID)
	})
	require.NoError(t, err)
	require.NotNil(t, locked.RiverDeletedAt)

	// TRUNCATE moves every row.
	e.Exec(t, `TRUNCATE river_job`)
	var live int
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT (SELECT count(*) FROM jobs_live_fixed) + (SELECT count(*) FROM jobs_live_state)`).Scan(&live))
	require.Zero(t, live)

	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), driftProblems(rep))
}

// ListJobs reads jobs_live and jobs_history by different indexes (River's
// state index for live statuses, partial status indexes in the history):
// for every combination of filters, paging through it must give exactly
// the jobs of the view jobs that match, newest first.
func TestListJobsAgreesWithTheViewAcrossLiveAndHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)

	// Jobs in batches (a batch shares created_at; job_id breaks ties),
	// then driven into every River state, some River rows then deleted.
	var jobs []bpctype.Job
	for batch := range 6 {
		var reqs []passport.EnqueueRequest
		for i := range 6 {
			tenant := store.DevTenantID
			if (batch+i)%3 == 0 {
				tenant = other
			}
			if i%2 == 1 {
				reqs = append(reqs, passport.EnqueueRequest{Args: buildSnapshot(tenant)})
			} else {
				reqs = append(reqs, passport.EnqueueRequest{Args: parseFacts(tenant)})
			}
		}
		res, err := e.enqueue(t, reqs...)
		require.NoError(t, err)
		for _, r := range res {
			jobs = append(jobs, r.Job)
		}
		time.Sleep(2 * time.Millisecond)
	}
	states := []string{
		`state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w1']`,
		`state = 'completed', attempt = 1, attempted_at = now(), finalized_at = now()`,
		`state = 'discarded', attempt = 5, attempted_at = now(), finalized_at = now()`,
		`state = 'cancelled', attempt = 1, attempted_at = now(), finalized_at = now()`,
		`state = 'cancelled', attempt = 1, attempted_at = now(), finalized_at = now(), metadata = metadata || '{"cancel_attempted_at": "2026-11-27T08:00:00Z"}'`,
		`state = 'scheduled', scheduled_at = now() + interval '1 hour'`,
		`state = 'retryable', attempt = 1, attempted_at = now(), scheduled_at = now() + interval '1 hour'`,
		`state = 'completed', attempt = 2, attempted_at = now(), finalized_at = now()`,
		`state = 'available'`,
	}
	var gone []int64
	for i, j := range jobs {
		e.Exec(t, `UPDATE river_job SET `+states[i%len(states)]+` WHERE id = $1`, j.RiverJobID)
		if i%4 == 0 {
			gone = append(gone, j.RiverJobID)
		}
	}
	e.Exec(t, `DELETE FROM river_job WHERE id = ANY($1)`, gone)

	var history int
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT count(*) FROM jobs_history`).Scan(&history))
	require.Equal(t, len(gone), history)
	statuses := map[string]bool{}

	// The reference: every row of the view.
	all, err := e.Store.ListJobs(e.Ctx, store.JobFilter{AllTenants: true, Limit: 500})
	require.NoError(t, err)
	require.Len(t, all.Items, len(jobs))
	for _, j := range all.Items {
		statuses[j.Status] = true
	}
	require.Len(t, statuses, len(bpctype.Statuses), "every status is represented")
	viewRows := make([]bpctype.Job, 0, len(jobs))
	rows, err := e.Pool.Query(e.Ctx, `SELECT job_id, tenant_id, type, status, created_at FROM jobs`)
	require.NoError(t, err)
	for rows.Next() {
		var j bpctype.Job
		require.NoError(t, rows.Scan(&j.JobID, &j.TenantID, &j.Type, &j.Status, &j.CreatedAt))
		viewRows = append(viewRows, j)
	}
	require.NoError(t, rows.Err())
	slices.SortFunc(viewRows, func(a, b bpctype.Job) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return bytes.Compare(b.JobID[:], a.JobID[:])
	})
	mid := viewRows[len(viewRows)/2].CreatedAt

	type window struct{ after, before *time.Time }
	windows := []window{{}, {after: &mid}, {before: &mid}, {after: ptr(mid.Add(-time.Hour)), before: &mid}}
	tenants := []struct {
		all bool
		id  uuid.UUID
	}{{all: true}, {id: store.DevTenantID}, {id: other}}
	checked := 0
	for _, tn := range tenants {
		for _, typ := range []string{"", "PARSE_FACTS", "BUILD_SNAPSHOT"} {
			for _, status := range append([]string{""}, bpctype.Statuses...) {
				for wi, w := range windows {
					f := store.JobFilter{AllTenants: tn.all, TenantID: tn.id, Type: typ, Status: status,
						CreatedAfter: w.after, CreatedBefore: w.before, Limit: 1 + checked%4}
					var want []uuid.UUID
					for _, j := range viewRows {
						if (tn.all || j.TenantID == tn.id) && (typ == "" || j.Type == typ) && (status == "" || j.Status == status) &&
							(w.after == nil || !j.CreatedAt.Before(*w.after)) && (w.before == nil || j.CreatedAt.Before(*w.before)) {
							want = append(want, j.JobID)
						}
					}
					var got []uuid.UUID
					for pages := 0; ; pages++ {
						require.Less(t, pages, len(jobs)+2, "pagination does not end")
						p, err := e.Store.ListJobs(e.Ctx, f)
						require.NoError(t, err)
						require.LessOrEqual(t, len(p.Items), f.Limit)
						for _, j := range p.Items {
							got = append(got, j.JobID)
						}
						if p.NextCursor == "" {
							break
						}
						f.Cursor = p.NextCursor
					}
					require.Equal(t, want, got, fmt.Sprintf("tenant %v all=%v type %q status %q window %d", tn.id, tn.all, typ, status, wi))
					checked++
				}
			}
		}
	}
	require.Equal(t, 3*3*7*4, checked)
}

// The status is written into the SQL as a literal (for the partial
// indexes): only the six statuses get there.
func TestListJobsRefusesAnUnknownStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	for _, status := range []string{"queued", "QUEUED' OR '1'='1", "DEAD_LETTER'; DROP TABLE jobs_live; --"} {
		_, err := e.Store.ListJobs(e.Ctx, store.JobFilter{TenantID: store.DevTenantID, Status: status})
		ve := requireCode(t, err, "VALIDATION_ERROR")
		require.Equal(t, "status", ve.Field)
	}
	page, err := e.Store.ListJobs(e.Ctx, store.JobFilter{TenantID: store.DevTenantID})
	require.NoError(t, err)
	require.Len(t, page.Items, 1)
}

// An update of the view jobs_live (the previous release's lease renewal
// during a rolling upgrade, an operator's hand fix) that waited for a River
// transition to commit does not write the row it read back over it: the
// row changed, so it is skipped, as an update of the table jobs_live was
// before the row was split in two.
func TestViewUpdateDoesNotUndoAConcurrentTransition(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `UPDATE river_job SET state = 'running', attempt = 1, attempted_at = now(), attempted_by = ARRAY['w'] WHERE id = $1`, j.RiverJobID)

	completion, err := e.Pool.Begin(e.Ctx)
	require.NoError(t, err)
	defer func() { _ = completion.Rollback(e.Ctx) }()
	_, err = completion.Exec(e.Ctx, `UPDATE river_job SET state = 'completed', finalized_at = now() WHERE id = $1`, j.RiverJobID)
	require.NoError(t, err)

	type result struct {
		n   int64
		err error
	}
	renewal := make(chan result, 1)
	go func() {
		tag, err := e.Pool.Exec(e.Ctx, `UPDATE jobs_live SET lease_expires_at = now() + interval '1 hour'
			WHERE river_job_id = $1 AND status = 'RUNNING'`, j.RiverJobID)
		renewal <- result{tag.RowsAffected(), err}
	}()
	// The renewal read the row RUNNING and waits for the completion's lock.
	require.Eventually(t, func() bool {
		var waiting bool
		require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND query LIKE 'UPDATE jobs_live SET lease_expires_at%')`).Scan(&waiting))
		return waiting
	}, 20*time.Second, 10*time.Millisecond)
	require.NoError(t, completion.Commit(e.Ctx))

	got := <-renewal
	require.NoError(t, got.err)
	require.Zero(t, got.n, "the row changed under the update: skipped")
	job := e.job(t, store.DevTenantID, j.JobID)
	require.Equal(t, bpctype.StatusSucceeded, job.Status)
	require.Nil(t, job.LeaseExpiresAt)
	e.requireConsistent(t)
}

// A live job whose state half is missing (drift: nothing in the service
// writes one half without the other) is not lost when River deletes its
// job: it moves to the history CANCELLED, with its ids, key and payload.
func TestDeletedJobWithoutItsStateHalfIsKept(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID), IdempotencyKey: "kept", RequestHash: "h"})
	kept := e.mustEnqueue(t, passport.EnqueueRequest{Args: parseFacts(store.DevTenantID)})
	e.Exec(t, `DELETE FROM jobs_live_state WHERE river_job_id = $1`, j.RiverJobID)
	e.Exec(t, `DELETE FROM river_job WHERE id = ANY($1)`, []int64{j.RiverJobID, kept.RiverJobID})

	for _, id := range []uuid.UUID{j.JobID, kept.JobID} {
		gone := e.job(t, store.DevTenantID, id)
		require.Equal(t, bpctype.StatusCancelled, gone.Status)
		require.NotNil(t, gone.RiverDeletedAt)
	}
	gone := e.job(t, store.DevTenantID, j.JobID)
	require.NotNil(t, gone.IdempotencyKey)
	require.Equal(t, "kept", *gone.IdempotencyKey)
	require.JSONEq(t, string(j.Payload), string(gone.Payload))
	require.Zero(t, e.Count(t, `SELECT (SELECT count(*) FROM jobs_live_fixed) + (SELECT count(*) FROM jobs_live_state)`))
}
