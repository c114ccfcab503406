package store_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// snapshotJob is a BUILD_SNAPSHOT of a snapshot that exists.
func snapshotJob(t *testing.T, e env) *jobargs.BuildSnapshotArgs {
	t.Helper()
	sn, err := e.Store.CreateSnapshot(e.Ctx, store.DevTenantID)
	require.NoError(t, err)
	return &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: store.DevTenantID}, SnapshotID: sn.SnapshotID}
}

// An enqueue from outside costs River's own Insert's three round trips
// (BEGIN, INSERT, COMMIT), whatever it checks: its tenant, the ids it
// names and its idempotency key travel with the BEGIN, the check that the
// mirror wrote the SSOT rows with the COMMIT. A repeated key costs two.
func TestEnqueueCheckedCostsThreeRoundTrips(t *testing.T) {
	t.Parallel()
	trips := &testdb.RoundTrips{}
	e := env{teststore.On(t, testdb.NewWithOptions(t, testdb.Options{Tracer: withoutNotify{trips}}))}
	cost := func(reqs ...passport.EnqueueRequest) (int64, []passport.EnqueueResult) {
		t.Helper()
		before := trips.Count()
		res, err := passport.Enqueue(e.Ctx, e.Store, e.River, reqs)
		require.NoError(t, err)
		return trips.Count() - before, res
	}
	// The first use of each statement prepares it on the connection.
	cost(passport.EnqueueRequest{Args: snapshotJob(t, e), IdempotencyKey: "warm-up", RequestHash: "h"})
	cost(passport.EnqueueRequest{Args: snapshotJob(t, e), IdempotencyKey: "warm-up", RequestHash: "h"})

	n, _ := cost(passport.EnqueueRequest{Args: snapshotJob(t, e)})
	require.EqualValues(t, 3, n, "a job naming an id")
	keyed := passport.EnqueueRequest{Args: snapshotJob(t, e), IdempotencyKey: "k", RequestHash: "h"}
	n, res := cost(keyed)
	require.EqualValues(t, 3, n, "a job with an idempotency key")
	require.False(t, res[0].Existing)
	n, res = cost(keyed)
	require.EqualValues(t, 2, n, "the same job again")
	require.True(t, res[0].Existing)

	batch := make([]passport.EnqueueRequest, 50)
	for i := range batch {
		batch[i] = passport.EnqueueRequest{Args: snapshotJob(t, e)}
	}
	batch[7].IdempotencyKey, batch[7].RequestHash = "b", "h"
	batch = append(batch, keyed)
	n, res = cost(batch...)
	require.EqualValues(t, 3, n, "a batch")
	require.True(t, res[len(res)-1].Existing)
}

// withoutNotify counts no LISTEN/NOTIFY insert notification: River sends
// one with an insert now and then (per queue, at most once a fetch
// cooldown), in its own Insert as in EnqueueChecked.
type withoutNotify struct{ *testdb.RoundTrips }

func (w withoutNotify) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "pg_notify") {
		return ctx
	}
	return w.RoundTrips.TraceQueryStart(ctx, conn, data)
}

// What EnqueueChecked refuses inserts nothing: an unknown tenant, an id
// that does not exist in the job's tenant (another tenant's included),
// named by its request, and a conflicting idempotency key.
func TestEnqueueCheckedRefusals(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.OtherTenant(t)
	ok := passport.EnqueueRequest{Args: snapshotJob(t, e)}

	_, err := passport.Enqueue(e.Ctx, e.Store, e.River, []passport.EnqueueRequest{ok, {Args: buildSnapshot(uuid.New())}})
	requireCode(t, err, errcode.NotFound)
	require.Contains(t, err.Error(), "tenant")

	foreign := &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: other}, SnapshotID: ok.Args.(*jobargs.BuildSnapshotArgs).SnapshotID}
	for _, reqs := range [][]passport.EnqueueRequest{
		{ok, {Args: buildSnapshot(store.DevTenantID)}},
		{ok, {Args: foreign}},
	} {
		_, err = passport.Enqueue(e.Ctx, e.Store, e.River, reqs)
		var missing *passport.MissingRefError
		require.True(t, errors.As(err, &missing), "%v", err)
		require.Equal(t, 1, missing.Index)
		require.Equal(t, "snapshot_id", missing.Ref.Field)
	}

	keyed := passport.EnqueueRequest{Args: snapshotJob(t, e), IdempotencyKey: "k", RequestHash: "h1"}
	_, err = passport.Enqueue(e.Ctx, e.Store, e.River, []passport.EnqueueRequest{keyed})
	require.NoError(t, err)
	keyed.RequestHash = "h2"
	_, err = passport.Enqueue(e.Ctx, e.Store, e.River, []passport.EnqueueRequest{ok, keyed})
	requireCode(t, err, errcode.IdempotencyConflict)
	require.Equal(t, 1, countRiverJobs(t, e), "only the first keyed job")
}

// Without the mirror's insert trigger the transaction does not commit: the
// River job is rolled back and the error says why.
func TestEnqueueCheckedNoticesAMissingMirror(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.Exec(t, `ALTER TABLE river_job DISABLE TRIGGER bpc_mirror_insert`)
	_, err := passport.Enqueue(e.Ctx, e.Store, e.River, []passport.EnqueueRequest{{Args: snapshotJob(t, e)}})
	requireCode(t, err, errcode.Internal)
	require.Contains(t, err.Error(), "mirror trigger")
	require.Equal(t, 0, countRiverJobs(t, e))
}

// Concurrent requests with one idempotency key get one job: the losers of
// the race on the key run again and find it.
func TestEnqueueCheckedConcurrentSameKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	req := passport.EnqueueRequest{Args: snapshotJob(t, e), IdempotencyKey: "race", RequestHash: "h"}
	const n = 8
	results := make([]passport.EnqueueResult, n)
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			var res []passport.EnqueueResult
			res, errs[i] = passport.Enqueue(e.Ctx, e.Store, e.River, []passport.EnqueueRequest{req})
			if errs[i] == nil {
				results[i] = res[0]
			}
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i := range n {
		require.NoError(t, errs[i])
		require.Equal(t, results[0].Job.JobID, results[i].Job.JobID)
		if !results[i].Existing {
			created++
		}
	}
	require.Equal(t, 1, created)
	require.Equal(t, 1, countRiverJobs(t, e))
}

// Inside a caller's transaction EnqueueChecked checks the same and leaves
// the commit to the caller.
func TestEnqueueCheckedInTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	err := e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		q := e.Store.WithTx(tx)
		res, err := passport.Enqueue(e.Ctx, q, e.River, []passport.EnqueueRequest{{Args: snapshotJob(t, e)}})
		require.NoError(t, err)
		require.Equal(t, store.StatusQueued, res[0].Job.Status)
		_, err = passport.Enqueue(e.Ctx, q, e.River, []passport.EnqueueRequest{{Args: buildSnapshot(store.DevTenantID)}})
		var missing *passport.MissingRefError
		require.True(t, errors.As(err, &missing), "%v", err)
		return errors.New("roll back")
	})
	require.Error(t, err)
	require.Equal(t, 0, countRiverJobs(t, e))
}
