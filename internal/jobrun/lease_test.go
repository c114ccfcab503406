package jobrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/riverqueue/river/rivertype"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/jobrun"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
)

// leaseEnv runs the service's workers with a short lease (1 s on the
// connections, so the mirror starts each attempt with a 1 s lease), the
// given renewal period and a fast reaper.
type leaseEnv struct {
	env
	pool    *pgxpool.Pool
	reaper  *jobrun.Reaper
	metrics *workers.Metrics
}

func newLeaseEnv(t *testing.T, renew time.Duration, hook func(context.Context, *rivertype.JobRow) error) leaseEnv {
	t.Helper()
	return newLeaseEnvWith(t, renew, 0, hook)
}

// newLeaseEnvWith is newLeaseEnv whose reaper discards a job after
// maxLosses lease losses in a row (0: the default).
func newLeaseEnvWith(t *testing.T, renew time.Duration, maxLosses int, hook func(context.Context, *rivertype.JobRow) error) leaseEnv {
	t.Helper()
	leases := &jobrun.Leases{Owner: "lease-test", TTL: time.Second, Renew: renew}
	client, d := testriver.Start(t, testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 1}), testriver.Options{
		Client: jobrun.ClientOptions{ID: "lease-test"}, Leases: leases, Deps: workers.Deps{WebhookTimeout: time.Second, BeforeCommit: hook},
	})
	ctx, st, logger, metrics := t.Context(), d.Store, d.Logger, d.Metrics
	reaper := &jobrun.Reaper{Store: st, Logger: logger, Metrics: metrics, Interval: 100 * time.Millisecond, MaxLeaseExpiries: maxLosses}
	reaperCtx, stopReaper := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { reaper.Run(reaperCtx) })
	wg.Go(func() { leases.Run(reaperCtx) })
	t.Cleanup(func() {
		stopReaper()
		wg.Wait()
	})
	return leaseEnv{env: env{Ctx: ctx, Store: st, Client: client}, reaper: reaper, metrics: metrics}
}

// newReaperEnv is a schema with 1 s leases and an insert-only client: its
// jobs are never worked, the tests play the part of the workers.
func newReaperEnv(t *testing.T) leaseEnv {
	t.Helper()
	pool := testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 1})
	return leaseEnv{env: env{Ctx: t.Context(), Store: store.New(pool), Client: testriver.Inserter(t, pool)}, pool: pool}
}

func (e leaseEnv) readyEvents(t *testing.T, snapshotID uuid.UUID) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM events WHERE aggregate_id = $1 AND event_type = 'snapshot.ready'`, snapshotID)
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
			err := e.Store.DB().QueryRow(context.Background(), `SELECT lease_expires_at > started_at + interval '1.5 seconds'
				FROM jobs WHERE river_job_id = $1`, job.ID).Scan(&ahead)
			if err == nil && ahead {
				extended.Store(true)
			}
			time.Sleep(100 * time.Millisecond)
		}
		return nil
	})
	snapshotID, job := e.BuildJob(t)
	done := e.Wait(t, job.JobID)
	require.Equal(t, bpctype.StatusSucceeded, done.Status, "last_error %s", done.LastError)
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
	// Nothing renews here, so every attempt may lose its lease: a higher
	// limit than the default keeps the job from being discarded as poison.
	e := newLeaseEnvWith(t, time.Hour, 5, func(ctx context.Context, job *rivertype.JobRow) error {
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
	snapshotID, job := e.BuildJob(t)
	done := e.Wait(t, job.JobID)
	require.Equal(t, bpctype.StatusSucceeded, done.Status)
	require.GreaterOrEqual(t, done.Attempts, int32(2), "reaped, run again")
	require.True(t, first.Load(), "attempt 1 reached its commit with its effects done")
	require.Equal(t, 1, e.readyEvents(t, snapshotID), "the stalled attempt committed nothing: one effect")

	var errs []json.RawMessage
	require.NoError(t, e.Store.DB().QueryRow(e.Ctx, `SELECT to_jsonb(errors) FROM river_job WHERE id = $1`, done.RiverJobID).Scan(&errs))
	require.NotEmpty(t, errs)
	var reaped rivertype.AttemptError
	require.NoError(t, json.Unmarshal(errs[0], &reaped))
	stored, ok := errcode.Decode(reaped.Error)
	require.True(t, ok, reaped.Error)
	require.Equal(t, errcode.LeaseExpired, stored.Code, "the reaper recorded why attempt 1 ended")
	e.Consistent(t)
}

// The reaper returns an expired job as available, or discards it (DEAD_LETTER)
// when the expired attempt was its last; last_error is LEASE_EXPIRED.
func TestReaperDiscardsTheLastAttempt(t *testing.T) {
	t.Parallel()
	e := newReaperEnv(t)
	ctx, st, pool := e.Ctx, e.Store, e.pool
	var jobs []bpctype.Job
	for range 2 {
		_, j := e.BuildJob(t)
		jobs = append(jobs, j)
	}
	// Both "run" on a worker that died: attempt 1 of 3, and attempt 3 of 3.
	_, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = CASE WHEN id = $1 THEN 1 ELSE 3 END, max_attempts = 3,
		attempted_at = now() - interval '5 seconds', attempted_by = ARRAY['dead-worker'] WHERE id = ANY($2)`,
		jobs[0].RiverJobID, []int64{jobs[0].RiverJobID, jobs[1].RiverJobID})
	require.NoError(t, err)

	reaper := &jobrun.Reaper{Store: st, Logger: slog.New(slog.DiscardHandler), Interval: time.Hour}
	reaped, err := reaper.ReapOnce(ctx)
	require.NoError(t, err)
	require.Len(t, reaped, 2)
	again, err := reaper.ReapOnce(ctx)
	require.NoError(t, err)
	require.Empty(t, again, "nothing left to reap")

	for i, want := range []string{bpctype.StatusQueued, bpctype.StatusDeadLetter} {
		j, err := st.GetJob(ctx, store.DevTenantID, jobs[i].JobID)
		require.NoError(t, err)
		require.Equal(t, want, j.Status)
		var last struct {
			Code string `json:"code"`
		}
		require.NoError(t, json.Unmarshal(j.LastError, &last))
		require.Equal(t, "LEASE_EXPIRED", last.Code)
		require.Nil(t, j.LeaseOwner)
	}
	testriver.RequireConsistent(t, st)
}

// A job cancelled by a shutdown (River's StopAndCancel after the shutdown
// timeout) goes back to the queue without spending an attempt.
func TestShutdownCancelRequeuesWithoutSpendingAnAttempt(t *testing.T) {
	t.Parallel()
	running := make(chan struct{}, 1)
	leases := &jobrun.Leases{Owner: "shutdown-test", TTL: 30 * time.Second, Renew: 10 * time.Second}
	client, d := testriver.Start(t, testdb.NewWithOptions(t, testdb.Options{LeaseSeconds: 30}), testriver.Options{
		Client: jobrun.ClientOptions{ID: "shutdown-test", Concurrency: 2, BackoffUnit: time.Second}, Leases: leases,
		Deps: workers.Deps{WebhookTimeout: time.Second, BeforeCommit: func(ctx context.Context, _ *rivertype.JobRow) error {
			running <- struct{}{}
			<-ctx.Done() // a job still working when the shutdown timeout ends
			return ctx.Err()
		}},
	})
	ctx, st := t.Context(), d.Store
	e := env{Ctx: ctx, Store: st, Client: client}
	_, job := e.BuildJob(t)
	<-running

	leases.BeginShutdown()
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, client.StopAndCancel(stopCtx))

	j, err := st.GetJob(ctx, store.DevTenantID, job.JobID)
	require.NoError(t, err)
	require.Equal(t, bpctype.StatusQueued, j.Status, "back in the queue")
	require.EqualValues(t, 0, j.Attempts, "the interrupted attempt is not counted")
	require.Nil(t, j.LeaseOwner)
}

// A job whose worker hangs on every attempt (its lease is never renewed, as
// when the process died) is reaped once and runs again, then is discarded
// when its second attempt in a row loses its lease: DEAD_LETTER with
// LEASE_EXPIRED "worker lost 2 times", instead of going round the workers
// until its five attempts are spent.
func TestJobLosingItsWorkerTwiceInARowIsDiscarded(t *testing.T) {
	t.Parallel()
	release := make(chan struct{})
	var started atomic.Int32
	e := newLeaseEnv(t, time.Hour, func(ctx context.Context, job *rivertype.JobRow) error {
		started.Add(1)
		select { // a worker that never finishes nor renews: dead to the cluster
		case <-ctx.Done():
		case <-release:
		}
		return errors.New("released")
	})
	t.Cleanup(func() { close(release) }) // before the client stops (cleanups run last first)

	_, job := e.BuildJob(t)
	done := e.Wait(t, job.JobID)
	require.Equal(t, bpctype.StatusDeadLetter, done.Status)
	require.EqualValues(t, 2, done.Attempts, "discarded after its second loss, not its fifth attempt")
	require.EqualValues(t, 5, done.MaxAttempts)
	require.Positive(t, started.Load())
	var last struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Attempt int    `json:"attempt"`
	}
	require.NoError(t, json.Unmarshal(done.LastError, &last))
	require.Equal(t, "LEASE_EXPIRED", last.Code)
	require.Equal(t, 2, last.Attempt)
	require.True(t, strings.HasPrefix(last.Message, "worker lost 2 times in a row"), last.Message)
	require.Contains(t, last.Message, "lease-test", "names the worker that lost it")
	// The reaper counts the dead letter after its transaction commits, so
	// the row can be read before the counter moves.
	require.Eventually(t, func() bool {
		return testutil.ToFloat64(e.metrics.DeadLetter.WithLabelValues(jobargs.KindBuildSnapshot)) == 1
	}, 30*time.Second, 10*time.Millisecond, "the dead letter is counted")
	e.Consistent(t)
}

// Losses count in a row: the reaper discards a job at its
// BPC_JOBS_MAX_LEASE_EXPIRIES-th consecutive LEASE_EXPIRED attempt; a job
// lost once, or lost again after an attempt that ended otherwise, returns
// to River as available.
func TestReaperCountsLeaseLossesInARow(t *testing.T) {
	t.Parallel()
	e := newReaperEnv(t)
	ctx, st, pool := e.Ctx, e.Store, e.pool
	enqueue := func() bpctype.Job {
		_, j := e.BuildJob(t)
		return j
	}
	// die makes attempt run on a worker that died 5 s ago (its 1 s lease
	// is long gone), as River's fetch would, through the mirror.
	die := func(j bpctype.Job, attempt int) {
		_, err := pool.Exec(ctx, `UPDATE river_job SET state = 'running', attempt = $2::int, attempted_at = now() - interval '5 seconds',
			attempted_by = array_append(attempted_by, 'dead-worker-' || $2::text) WHERE id = $1`, j.RiverJobID, attempt)
		require.NoError(t, err)
	}
	metrics := workers.NewMetrics(prometheus.NewRegistry())
	reaper := &jobrun.Reaper{Store: st, Logger: slog.New(slog.DiscardHandler), Metrics: metrics, Interval: time.Hour}
	reap := func(want int) {
		reaped, err := reaper.ReapOnce(ctx)
		require.NoError(t, err)
		require.Len(t, reaped, want)
	}
	type lastError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Attempt int    `json:"attempt"`
	}
	get := func(j bpctype.Job) (bpctype.Job, lastError) {
		got, err := st.GetJob(ctx, store.DevTenantID, j.JobID)
		require.NoError(t, err)
		var last lastError
		require.NoError(t, json.Unmarshal(got.LastError, &last))
		return got, last
	}

	lostTwice, lostOnce, broken := enqueue(), enqueue(), enqueue()
	die(lostTwice, 1)
	die(lostOnce, 1)
	die(broken, 1)
	reap(3)
	for _, j := range []bpctype.Job{lostTwice, lostOnce, broken} {
		got, last := get(j)
		require.Equal(t, bpctype.StatusQueued, got.Status, "one loss: back to River")
		require.Equal(t, "LEASE_EXPIRED", last.Code)
		require.NotContains(t, last.Message, "worker lost")
	}
	var state string
	require.NoError(t, pool.QueryRow(ctx, `SELECT state FROM river_job WHERE id = $1`, lostOnce.RiverJobID).Scan(&state))
	require.Equal(t, "available", state)

	// broken's second attempt ends with an ordinary error: the run of
	// losses is broken.
	_, err := pool.Exec(ctx, `UPDATE river_job SET attempt = 2, errors = array_append(errors,
		jsonb_build_object('at', now(), 'attempt', 2, 'error', $2::text, 'trace', '')) WHERE id = $1`,
		broken.RiverJobID, errcode.Encode(errors.New("boom")))
	require.NoError(t, err)

	// A loss a reaper recorded before errors were JSON counts too.
	legacy := enqueue()
	_, err = pool.Exec(ctx, `UPDATE river_job SET attempt = 1, attempted_at = now() - interval '1 minute', errors = ARRAY[
		jsonb_build_object('at', now(), 'attempt', 1, 'error', 'LEASE_EXPIRED: the lease of old-worker expired without renewal', 'trace', '')]
		WHERE id = $1`, legacy.RiverJobID)
	require.NoError(t, err)

	die(lostTwice, 2)
	die(broken, 3)
	die(legacy, 2)
	reap(3)

	dead, last := get(lostTwice)
	require.Equal(t, bpctype.StatusDeadLetter, dead.Status)
	require.EqualValues(t, 2, dead.Attempts)
	require.NotNil(t, dead.FinishedAt)
	require.Nil(t, dead.LeaseOwner)
	require.Equal(t, "LEASE_EXPIRED", last.Code)
	require.Equal(t, 2, last.Attempt)
	require.True(t, strings.HasPrefix(last.Message, "worker lost 2 times in a row"), last.Message)
	require.Contains(t, last.Message, "dead-worker-2")

	again, last := get(broken)
	require.Equal(t, bpctype.StatusQueued, again.Status, "losses 1 and 3 are not in a row")
	require.Equal(t, "LEASE_EXPIRED", last.Code)

	dead, last = get(legacy)
	require.Equal(t, bpctype.StatusDeadLetter, dead.Status, "its legacy loss and this one are in a row")
	require.True(t, strings.HasPrefix(last.Message, "worker lost 2 times in a row"), last.Message)

	require.Equal(t, float64(2), testutil.ToFloat64(metrics.DeadLetter.WithLabelValues(jobargs.KindBuildSnapshot)))

	// The reaper stores its error in the form workers store theirs.
	var text string
	require.NoError(t, pool.QueryRow(ctx, `SELECT errors[array_upper(errors, 1)]->>'error' FROM river_job WHERE id = $1`, lostTwice.RiverJobID).Scan(&text))
	stored, ok := errcode.Decode(text)
	require.True(t, ok, text)
	require.Equal(t, errcode.LeaseExpired, stored.Code)
	_, last = get(lostTwice)
	require.Equal(t, last.Message, stored.Message)
	testriver.RequireConsistent(t, st)

	// A larger limit lets the same run of losses go on.
	lenient := &jobrun.Reaper{Store: st, Logger: slog.New(slog.DiscardHandler), Interval: time.Hour, MaxLeaseExpiries: 3}
	die(lostOnce, 2)
	reaped, err := lenient.ReapOnce(ctx)
	require.NoError(t, err)
	require.Len(t, reaped, 1)
	require.Equal(t, 2, reaped[0].LeaseLosses)
	require.False(t, reaped[0].Poison)
	got, _ := get(lostOnce)
	require.Equal(t, bpctype.StatusQueued, got.Status)
}
