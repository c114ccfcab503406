package passport_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
	"github.com/bpc-platform/bpc/workers"
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
func TestEnqueueCostsThreeRoundTrips(t *testing.T) {
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
// cooldown), in its own Insert as in Enqueue.
type withoutNotify struct{ *testdb.RoundTrips }

func (w withoutNotify) TraceQueryStart(ctx context.Context, conn *pgx.Conn, data pgx.TraceQueryStartData) context.Context {
	if strings.Contains(data.SQL, "pg_notify") {
		return ctx
	}
	return w.RoundTrips.TraceQueryStart(ctx, conn, data)
}

// What Enqueue refuses inserts nothing: an unknown tenant, an id
// that does not exist in the job's tenant (another tenant's included),
// named by its request, and a conflicting idempotency key.
func TestEnqueueRefusals(t *testing.T) {
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
func TestEnqueueNoticesAMissingMirror(t *testing.T) {
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
func TestEnqueueConcurrentSameKey(t *testing.T) {
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

// Inside a caller's transaction Enqueue checks the same and leaves
// the commit to the caller.
func TestEnqueueInTx(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	err := e.Store.InTx(e.Ctx, func(tx pgx.Tx) error {
		q := e.Store.WithTx(tx)
		res, err := passport.Enqueue(e.Ctx, q, e.River, []passport.EnqueueRequest{{Args: snapshotJob(t, e)}})
		require.NoError(t, err)
		require.Equal(t, bpctype.StatusQueued, res[0].Job.Status)
		_, err = passport.Enqueue(e.Ctx, q, e.River, []passport.EnqueueRequest{{Args: buildSnapshot(store.DevTenantID)}})
		var missing *passport.MissingRefError
		require.True(t, errors.As(err, &missing), "%v", err)
		return errors.New("roll back")
	})
	require.Error(t, err)
	require.Equal(t, 0, countRiverJobs(t, e))
}

// buildSnapshot is a BUILD_SNAPSHOT of a snapshot id that does not exist.
func buildSnapshot(tenantID uuid.UUID) *jobargs.BuildSnapshotArgs {
	return &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: uuid.New()}
}

func countRiverJobs(t *testing.T, e env) int {
	t.Helper()
	return e.Count(t, `SELECT count(*) FROM river_job`)
}

// requireCode requires err to carry code and returns it.
func requireCode(t *testing.T, err error, code errcode.Code) *errcode.Error {
	t.Helper()
	require.Error(t, err)
	e := errcode.As(err)
	require.NotNil(t, e, "%v", err)
	require.Equal(t, code, e.Code, "%v", err)
	return e
}

// enqueue runs EnqueueTx in its own committed transaction.
func (e env) enqueue(t *testing.T, reqs ...passport.EnqueueRequest) ([]passport.EnqueueResult, error) {
	t.Helper()
	var res []passport.EnqueueResult
	err := e.Store.InTx(e.Ctx, func(tx pgx.Tx) (err error) {
		res, err = passport.EnqueueTx(e.Ctx, e.Store.WithTx(tx), e.River, reqs)
		return err
	})
	return res, err
}

// parseFacts is a PARSE_FACTS of a version id that does not exist.
func parseFacts(tenantID uuid.UUID) *jobargs.ParseFactsArgs {
	return &jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: tenantID}, DocumentVersionID: uuid.New()}
}

func TestEnqueueIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	args := parseFacts(store.DevTenantID)
	req := passport.EnqueueRequest{Args: args, IdempotencyKey: "order-42", RequestHash: "hash-a"}

	first, err := e.enqueue(t, req)
	require.NoError(t, err)
	require.False(t, first[0].Existing)

	t.Run("same key and hash returns the same job", func(t *testing.T) {
		again, err := e.enqueue(t, passport.EnqueueRequest{Args: args, IdempotencyKey: "order-42", RequestHash: "hash-a"})
		require.NoError(t, err)
		require.True(t, again[0].Existing)
		require.Equal(t, first[0].Job.JobID, again[0].Job.JobID)
		require.Equal(t, first[0].Job.RiverJobID, again[0].Job.RiverJobID)
		require.Equal(t, 1, countRiverJobs(t, e), "no second River job")
	})

	t.Run("same key with a different request conflicts", func(t *testing.T) {
		_, err := e.enqueue(t, passport.EnqueueRequest{Args: args, IdempotencyKey: "order-42", RequestHash: "hash-b"})
		conflict := requireCode(t, err, errcode.IdempotencyConflict)
		require.Contains(t, conflict.Message, "order-42")
	})

	t.Run("key is scoped to type and tenant", func(t *testing.T) {
		other := e.OtherTenant(t)
		res, err := e.enqueue(t,
			passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID), IdempotencyKey: "order-42", RequestHash: "hash-a"},
			passport.EnqueueRequest{Args: parseFacts(other), IdempotencyKey: "order-42", RequestHash: "hash-a"})
		require.NoError(t, err)
		require.False(t, res[0].Existing)
		require.False(t, res[1].Existing)
		require.NotEqual(t, first[0].Job.JobID, res[0].Job.JobID)
		require.NotEqual(t, first[0].Job.JobID, res[1].Job.JobID)
	})
}

func TestEnqueueBatchWithRepeatedKeyMakesOneJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	args := parseFacts(store.DevTenantID)
	res, err := e.enqueue(t,
		passport.EnqueueRequest{Args: args, IdempotencyKey: "dup", RequestHash: "h"},
		passport.EnqueueRequest{Args: buildSnapshot(store.DevTenantID)},
		passport.EnqueueRequest{Args: args, IdempotencyKey: "dup", RequestHash: "h"})
	require.NoError(t, err)
	require.Len(t, res, 3)
	require.False(t, res[0].Existing)
	require.True(t, res[2].Existing)
	require.Equal(t, res[0].Job.JobID, res[2].Job.JobID)
	require.NotEqual(t, res[0].Job.JobID, res[1].Job.JobID)
	require.Equal(t, 2, countRiverJobs(t, e))

	_, err = e.enqueue(t,
		passport.EnqueueRequest{Args: args, IdempotencyKey: "dup2", RequestHash: "h1"},
		passport.EnqueueRequest{Args: args, IdempotencyKey: "dup2", RequestHash: "h2"})
	requireCode(t, err, errcode.IdempotencyConflict)
	require.Equal(t, 2, countRiverJobs(t, e), "a conflicting batch inserts nothing")
}

// A domain route's enqueue of ids from the request checks them with the
// same check as POST /v1/jobs: an unknown one is a *MissingRefError naming
// its field, and nothing is enqueued.
func TestTxEnqueueCheckedRefusesAnUnknownID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	err := e.run(t, func(tx passport.Tx) error {
		_, err := tx.EnqueueChecked(e.Ctx, buildSnapshot(store.DevTenantID), "")
		return err
	})
	var missing *passport.MissingRefError
	require.ErrorAs(t, err, &missing)
	require.Equal(t, "snapshot_id", missing.Ref.Field)
	require.Equal(t, 0, countRiverJobs(t, e))

	var res passport.EnqueueResult
	require.NoError(t, e.run(t, func(tx passport.Tx) (err error) {
		res, err = tx.EnqueueChecked(e.Ctx, snapshotJob(t, e), "k")
		return err
	}))
	require.False(t, res.Existing)
	require.Equal(t, 1, countRiverJobs(t, e))
}

// Every entity a registered job type's args name has its table in the
// store's existence check, so that adding a job type needs no edit there.
func TestEveryJobRefIsCheckable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	checked := map[jobargs.Entity]bool{}
	for _, k := range workers.Kinds() {
		for _, r := range k.New().Refs() {
			if checked[r.Entity] {
				continue
			}
			checked[r.Entity] = true
			c, err := e.Store.CheckRefs(e.Ctx, nil, []store.RefKey{{Entity: string(r.Entity), TenantID: store.DevTenantID, ID: uuid.New()}})
			require.NoError(t, err, "%s names %s", k.Name, r.Entity)
			require.Equal(t, 0, c.MissingRef, "a made-up %s id does not exist", r.Entity)
		}
	}
	require.NotEmpty(t, checked)
}
