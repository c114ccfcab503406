package workers_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// leaseEnv runs the service's workers with a short lease (1 s on the
// connections, so the mirror starts each attempt with a 1 s lease), the
// given renewal period and a fast reaper.
type leaseEnv struct {
	ctx    context.Context
	st     *store.Store
	client *river.Client[pgx.Tx]
	reaper *workers.Reaper
}

func newLeaseEnv(t *testing.T, renew time.Duration, hook func(context.Context, *rivertype.JobRow) error) leaseEnv {
	t.Helper()
	pool := testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 1})
	logger := slog.New(slog.DiscardHandler)
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	st := store.New(pool)
	w := river.NewWorkers()
	workers.Register(w, workers.Deps{Store: st, Logger: logger, Metrics: metrics, HTTPClient: workers.NewHTTPClient(),
		WebhookTimeout: time.Second, BeforeCommit: hook})
	leases := &workers.Leases{Store: st, Logger: logger, Owner: "lease-test", TTL: time.Second, Renew: renew}
	client, err := workers.NewClient(pool, workers.ClientOptions{
		ID: "lease-test", Logger: logger, Work: true, Concurrency: 4,
		PollInterval: 20 * time.Millisecond, BackoffUnit: time.Millisecond, MaxAttempts: 5,
		Workers: w, Observer: &workers.Observer{Logger: logger, Metrics: metrics, Leases: leases},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, client.Start(ctx))
	reaper := &workers.Reaper{Store: st, Logger: logger, Metrics: metrics, Interval: 100 * time.Millisecond}
	reaperCtx, stopReaper := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { reaper.Run(reaperCtx) })
	wg.Go(func() { leases.Run(reaperCtx) })
	t.Cleanup(func() {
		stopReaper()
		wg.Wait()
		stopCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Stop(stopCtx)
	})
	return leaseEnv{ctx: ctx, st: st, client: client, reaper: reaper}
}

// buildJob creates a snapshot and enqueues its BUILD_SNAPSHOT job.
func (e leaseEnv) buildJob(t *testing.T) (uuid.UUID, store.Job) {
	t.Helper()
	sn, err := e.st.CreateSnapshot(e.ctx, e.st.Pool, store.DevTenantID)
	require.NoError(t, err)
	var job store.Job
	require.NoError(t, e.st.InTx(e.ctx, func(tx pgx.Tx) error {
		job, err = e.st.EnqueueArgs(e.ctx, tx, e.client, &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}, "")
		return err
	}))
	return sn.SnapshotID, job
}

func (e leaseEnv) wait(t *testing.T, jobID uuid.UUID) store.Job {
	t.Helper()
	var job store.Job
	require.Eventually(t, func() bool {
		var err error
		job, err = e.st.GetJob(e.ctx, e.st.Pool, store.DevTenantID, jobID)
		require.NoError(t, err)
		return store.IsTerminal(job.Status)
	}, 20*time.Second, 20*time.Millisecond)
	return job
}

func (e leaseEnv) readyEvents(t *testing.T, snapshotID uuid.UUID) int {
	var n int
	require.NoError(t, e.st.Pool.QueryRow(e.ctx, `SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = 'snapshot.ready'`,
		snapshotID).Scan(&n))
	return n
}

// A job running three times longer than its lease, alive, is never reaped:
// its worker renews the lease, and it ends SUCCEEDED on its first attempt.
func TestRenewedLeaseKeepsALongJob(t *testing.T) {
	t.Parallel()
	var extended atomic.Bool
	var e leaseEnv
	e = newLeaseEnv(t, 200*time.Millisecond, func(ctx context.Context, job *rivertype.JobRow) error {
		deadline := time.Now().Add(3 * time.Second)
		for time.Now().Before(deadline) {
			var ahead bool
			err := e.st.Pool.QueryRow(context.Background(), `SELECT lease_expires_at > started_at + interval '1.5 seconds'
				FROM jobs WHERE river_job_id = $1`, job.ID).Scan(&ahead)
			if err == nil && ahead {
				extended.Store(true)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	})
	snapshotID, job := e.buildJob(t)
	done := e.wait(t, job.JobID)
	require.Equal(t, store.StatusSucceeded, done.Status, "last_error %s", done.LastError)
	require.EqualValues(t, 1, done.Attempts)
	require.True(t, extended.Load(), "the lease was renewed past its first expiry")
	require.Equal(t, 1, e.readyEvents(t, snapshotID))
}

// Fencing: an attempt that stalls past its lease (a pause or a partition:
// here its lease is never renewed) is reaped; the job runs again and
// succeeds; when the stalled attempt resumes, it cannot commit — its
// effects are rolled back with LEASE_EXPIRED — so the effect happens once.
func TestFencingStopsAnAttemptThatLostItsLease(t *testing.T) {
	t.Parallel()
	var first atomic.Bool
	e := newLeaseEnv(t, time.Hour, func(ctx context.Context, job *rivertype.JobRow) error {
		if job.Attempt == 1 && first.CompareAndSwap(false, true) {
			time.Sleep(2500 * time.Millisecond) // stalled past the 1 s lease
		}
		return nil
	})
	// The renewal period of an hour means no renewal: the first attempt's
	// lease (1 s) expires and the reaper returns the job to River. A later
	// attempt blocks on the snapshot row the stalled first attempt holds
	// (and may be reaped itself meanwhile: nothing renews here), then runs
	// once the first is fenced.
	snapshotID, job := e.buildJob(t)
	done := e.wait(t, job.JobID)
	require.Equal(t, store.StatusSucceeded, done.Status)
	require.GreaterOrEqual(t, done.Attempts, int32(2), "reaped, run again")
	require.True(t, first.Load(), "attempt 1 reached its commit with its effects done")
	require.Equal(t, 1, e.readyEvents(t, snapshotID), "the stalled attempt committed nothing: one effect")

	var errs []json.RawMessage
	require.NoError(t, e.st.Pool.QueryRow(e.ctx, `SELECT to_jsonb(errors) FROM river_job WHERE id = $1`, done.RiverJobID).Scan(&errs))
	require.NotEmpty(t, errs)
	require.Contains(t, string(errs[0]), "LEASE_EXPIRED", "the reaper recorded why attempt 1 ended")
	rep, err := e.st.CheckConsistency(e.ctx, e.st.Pool)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep.Drifts)
}

// The reaper returns an expired job as available, or discards it (DEAD_LETTER)
// when the expired attempt was its last; last_error is LEASE_EXPIRED.
func TestReaperDiscardsTheLastAttempt(t *testing.T) {
	t.Parallel()
	pool := testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 1})
	st := store.New(pool)
	ctx := t.Context()
	client, err := river.NewClient(riverpgxv5.New(pool), &river.Config{})
	require.NoError(t, err)
	sn, err := st.CreateSnapshot(ctx, pool, store.DevTenantID)
	require.NoError(t, err)
	var jobs []store.Job
	for range 2 {
		require.NoError(t, st.InTx(ctx, func(tx pgx.Tx) error {
			j, err := st.EnqueueArgs(ctx, tx, client, &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}, "")
			jobs = append(jobs, j)
			return err
		}))
	}
	// Both "run" on a worker that died: attempt 1 of 3, and attempt 3 of 3.
	_, err = pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = CASE WHEN id = $1 THEN 1 ELSE 3 END, max_attempts = 3,
		attempted_at = now() - interval '5 seconds', attempted_by = ARRAY['dead-worker'] WHERE id = ANY($2)`,
		jobs[0].RiverJobID, []int64{jobs[0].RiverJobID, jobs[1].RiverJobID})
	require.NoError(t, err)

	reaper := &workers.Reaper{Store: st, Logger: slog.New(slog.DiscardHandler), Interval: time.Hour}
	reaped, err := reaper.ReapOnce(ctx)
	require.NoError(t, err)
	require.Len(t, reaped, 2)
	again, err := reaper.ReapOnce(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to reap")

	for i, want := range []string{store.StatusQueued, store.StatusDeadLetter} {
		j, err := st.GetJob(ctx, pool, store.DevTenantID, jobs[i].JobID)
		require.NoError(t, err)
		require.Equal(t, want, j.Status)
		var last struct {
			Code string `json:"code"`
		}
		require.NoError(t, json.Unmarshal(j.LastError, &last))
		require.Equal(t, "LEASE_EXPIRED", last.Code)
		require.Nil(t, j.LeaseOwner)
	}
	rep, err := st.CheckConsistency(ctx, pool)
	require.NoError(t, err)
	require.True(t, rep.OK(), "%+v", rep.Drifts)
}

// A job cancelled by a shutdown (River's StopAndCancel after the shutdown
// timeout) goes back to the queue without spending an attempt.
func TestShutdownCancelRequeuesWithoutSpendingAnAttempt(t *testing.T) {
	t.Parallel()
	pool := testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 30})
	logger := slog.New(slog.DiscardHandler)
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	st := store.New(pool)
	running := make(chan struct{}, 1)
	w := river.NewWorkers()
	workers.Register(w, workers.Deps{Store: st, Logger: logger, Metrics: metrics, HTTPClient: workers.NewHTTPClient(),
		WebhookTimeout: time.Second, BeforeCommit: func(ctx context.Context, _ *rivertype.JobRow) error {
			running <- struct{}{}
			<-ctx.Done() // a job still working when the shutdown timeout ends
			return ctx.Err()
		}})
	leases := &workers.Leases{Store: st, Logger: logger, Owner: "shutdown-test", TTL: 30 * time.Second, Renew: 10 * time.Second}
	client, err := workers.NewClient(pool, workers.ClientOptions{
		ID: "shutdown-test", Logger: logger, Work: true, Concurrency: 2,
		PollInterval: 20 * time.Millisecond, BackoffUnit: time.Second, MaxAttempts: 5,
		Workers: w, Observer: &workers.Observer{Logger: logger, Metrics: metrics, Leases: leases},
	})
	require.NoError(t, err)
	ctx := t.Context()
	require.NoError(t, client.Start(ctx))
	e := leaseEnv{ctx: ctx, st: st, client: client}
	_, job := e.buildJob(t)
	<-running

	leases.BeginShutdown()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.StopAndCancel(stopCtx))

	j, err := st.GetJob(ctx, pool, store.DevTenantID, job.JobID)
	require.NoError(t, err)
	require.Equal(t, store.StatusQueued, j.Status, "back in the queue")
	require.EqualValues(t, 0, j.Attempts, "the interrupted attempt is not counted")
	require.Nil(t, j.LeaseOwner)
}
