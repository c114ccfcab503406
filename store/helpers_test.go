package store_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/core/errcode"
	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/jobargs"
	"github.com/bpc-platform/bpc/store"
)

// env is a store over a fresh schema with an insert-only River client.
type env struct {
	ctx   context.Context
	pool  *pgxpool.Pool
	store *store.Queries
	river *river.Client[pgx.Tx]
}

func newEnv(t *testing.T) env {
	t.Helper()
	pool := testdb.New(t)
	client := testriver.Inserter(t, pool)
	return env{ctx: context.Background(), pool: pool, store: store.New(pool), river: client}
}

// enqueue runs EnqueueTx in its own committed transaction.
func (e env) enqueue(t *testing.T, reqs ...store.EnqueueRequest) ([]store.EnqueueResult, error) {
	t.Helper()
	return committed(e, func(q *store.Queries) ([]store.EnqueueResult, error) { return q.EnqueueTx(e.ctx, e.river, reqs) })
}

// endpoint creates an active webhook endpoint of the dev tenant.
func (e env) endpoint(t *testing.T) store.WebhookEndpoint {
	t.Helper()
	ep, err := e.store.CreateWebhookEndpoint(e.ctx, store.DevTenantID, "https://hooks.example/in", testSecret)
	require.NoError(t, err)
	return ep
}

// committed runs fn on the store in a transaction of its own, committed
// when fn succeeds.
func committed[T any](e env, fn func(q *store.Queries) (T, error)) (T, error) {
	var res T
	err := e.store.InTx(e.ctx, func(tx pgx.Tx) error {
		var err error
		res, err = fn(e.store.WithTx(tx))
		return err
	})
	return res, err
}

// race runs first in a transaction, then second in another begun while
// the first is open, and commits the first once second waits on its locks.
// It returns second's error; both transactions end with race.
func (e env) race(t *testing.T, first, second func(q *store.Queries) error) error {
	t.Helper()
	tx1, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer func() { _ = tx1.Rollback(e.ctx) }()
	tx2, err := e.pool.Begin(e.ctx)
	require.NoError(t, err)
	defer func() { _ = tx2.Rollback(e.ctx) }()
	var pid2 int
	require.NoError(t, tx2.QueryRow(e.ctx, `SELECT pg_backend_pid()`).Scan(&pid2))

	require.NoError(t, first(e.store.WithTx(tx1)))
	errs := make(chan error, 1)
	go func() { errs <- second(e.store.WithTx(tx2)) }()
	waitUntilBlocked(t, e, pid2)
	require.NoError(t, tx1.Commit(e.ctx))
	return <-errs
}

// mustEnqueue enqueues one request and returns its SSOT job.
func (e env) mustEnqueue(t *testing.T, req store.EnqueueRequest) store.Job {
	t.Helper()
	res, err := e.enqueue(t, req)
	require.NoError(t, err)
	require.Len(t, res, 1)
	return res[0].Job
}

func (e env) job(t *testing.T, tenantID, jobID uuid.UUID) store.Job {
	t.Helper()
	j, err := e.store.GetJob(e.ctx, tenantID, jobID)
	require.NoError(t, err)
	return j
}

func (e env) exec(t *testing.T, sql string, args ...any) {
	t.Helper()
	_, err := e.pool.Exec(e.ctx, sql, args...)
	require.NoError(t, err, sql)
}

// requireConsistent asserts that CheckConsistency finds no drift.
func (e env) requireConsistent(t *testing.T) store.ConsistencyReport {
	t.Helper()
	rep, err := e.store.CheckConsistency(e.ctx)
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
