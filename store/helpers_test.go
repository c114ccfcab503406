package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/bpctype"
	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/passport"
	"github.com/bpc-platform/bpc/store"
)

// env is a store over a fresh schema with an insert-only River client; the
// store's tests add their helpers to it.
type env struct{ teststore.Env }

func newEnv(t *testing.T) env {
	t.Helper()
	return env{teststore.New(t)}
}

// enqueue runs EnqueueTx in its own committed transaction.
func (e env) enqueue(t *testing.T, reqs ...passport.EnqueueRequest) ([]passport.EnqueueResult, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) ([]passport.EnqueueResult, error) {
		return passport.EnqueueTx(e.Ctx, q, e.River, reqs)
	})
}

// endpoint creates an active webhook endpoint of the dev tenant.
func (e env) endpoint(t *testing.T) bpctype.WebhookEndpoint {
	t.Helper()
	ep, err := e.Store.CreateWebhookEndpoint(e.Ctx, store.DevTenantID, "https://hooks.example/in", testSecret)
	require.NoError(t, err)
	return ep
}

// inTx runs fn on the store in a transaction of its own, committed when
// fn returns nil.
func (e env) inTx(fn func(q *store.Queries) error) error {
	return e.Store.InTx(e.Ctx, func(tx pgx.Tx) error { return fn(e.Store.WithTx(tx)) })
}

// committed is inTx for an fn with a result.
func committed[T any](e env, fn func(q *store.Queries) (T, error)) (T, error) {
	var res T
	err := e.inTx(func(q *store.Queries) (err error) {
		res, err = fn(q)
		return err
	})
	return res, err
}

// race runs first in a transaction, then second in another begun while
// the first is open, and commits the first once second waits on its locks.
// It returns second's error; both transactions end with race.
func (e env) race(t *testing.T, first, second func(q *store.Queries) error) error {
	t.Helper()
	tx1, err := e.Pool.Begin(e.Ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(e.Ctx) }()
	tx2, err := e.Pool.Begin(e.Ctx)
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(e.Ctx) }()
	var pid2 int
	require.NoError(t, tx2.QueryRow(e.Ctx, `SELECT pg_backend_pid()`).Scan(&pid2))

	require.NoError(t, first(e.Store.WithTx(tx1)))
	errs := make(chan error, 1)
	go func() { errs <- second(e.Store.WithTx(tx2)) }()
	waitUntilBlocked(t, e, pid2)
	require.NoError(t, tx1.Commit(e.Ctx))
	return <-errs
}

// mustEnqueue enqueues one request and returns its SSOT job.
func (e env) mustEnqueue(t *testing.T, req passport.EnqueueRequest) bpctype.Job {
	t.Helper()
	res, err := e.enqueue(t, req)
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0].Job
}

func (e env) job(t *testing.T, tenantID, jobID uuid.UUID) bpctype.Job {
	t.Helper()
	j, err := e.Store.GetJob(e.Ctx, tenantID, jobID)
	require.NoError(t, err)
	return j
}

// requireConsistent asserts that CheckConsistency finds no drift.
func (e env) requireConsistent(t *testing.T) store.ConsistencyReport {
	t.Helper()
	rep, err := e.Store.CheckConsistency(e.Ctx)
	require.NoError(t, err)
	require.True(t, rep.OK(), "drift: %+v", rep.Drifts)
	return rep
}

func parseFacts(tenantID uuid.UUID) *jobargs.ParseFactsArgs {
	return &jobargs.ParseFactsArgs{Base: jobargs.Base{TenantID: tenantID}, DocumentVersionID: uuid.New()}
}

func buildSnapshot(tenantID uuid.UUID) *jobargs.BuildSnapshotArgs {
	return &jobargs.BuildSnapshotArgs{Base: jobargs.Base{TenantID: tenantID}, SnapshotID: uuid.New()}
}

// getOwn returns what get finds under id for the dev tenant, and asserts
// that the other tenant's get of the same id is NOT_FOUND.
func getOwn[T any](t *testing.T, e env, get func(ctx context.Context, tenantID, id uuid.UUID) (T, error), other, id uuid.UUID) T {
	t.Helper()
	got, err := get(e.Ctx, store.DevTenantID, id)
	require.NoError(t, err)
	_, err = get(e.Ctx, other, id)
	requireCode(t, err, errcode.NotFound)
	return got
}

func requireCode(t *testing.T, err error, code errcode.Code) *errcode.Error {
	t.Helper()
	require.Error(t, err)
	e := errcode.As(err)
	require.NotNil(t, e, "typed error expected, got %v", err)
	require.Equal(t, code, e.Code, "%v", err)
	return e
}

// lastError decodes an SSOT last_error.
type lastError struct {
	Code    string    `json:"code"`
	Message string    `json:"message"`
	Attempt int       `json:"attempt"`
	At      time.Time `json:"at"`
}

func decodeLastError(t *testing.T, raw json.RawMessage) lastError {
	t.Helper()
	require.NotEmpty(t, raw, "last_error must be set")
	var le lastError
	require.NoError(t, json.Unmarshal(raw, &le))
	return le
}

func ptr[T any](v T) *T { return &v }
