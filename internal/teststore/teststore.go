// Package teststore is the setup of the tests that run store queries and
// domain operations against Postgres: a store over a migrated schema of the
// test's own and an insert-only River client. Everything commits for real,
// and no job is worked.
package teststore

import (
	"context"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/testriver"
	"github.com/bpc-platform/bpc/store"
)

// Env is a store on a test's own schema, with the pool for the statements a
// test makes behind the store's back and a River client that inserts jobs.
type Env struct {
	Ctx   context.Context
	Pool  *pgxpool.Pool
	Store *store.Queries
	River *river.Client[pgx.Tx]
}

// New returns an Env over a fresh, migrated schema (testdb.New).
func New(t testing.TB) Env {
	t.Helper()
	return On(t, testdb.New(t))
}

// On returns an Env over pool, for a test that needs testdb's options.
func On(t testing.TB, pool *pgxpool.Pool) Env {
	t.Helper()
	return Env{Ctx: t.Context(), Pool: pool, Store: store.New(pool), River: testriver.Inserter(t, pool)}
}

// Count returns the single integer an SQL query yields.
func (e Env) Count(t testing.TB, sql string, args ...any) int {
	t.Helper()
	var n int
	require.NoError(t, e.Pool.QueryRow(e.Ctx, sql, args...).Scan(&n), sql)
	return n
}

// Exec runs a statement on the pool, outside the store.
func (e Env) Exec(t testing.TB, sql string, args ...any) {
	t.Helper()
	_, err := e.Pool.Exec(e.Ctx, sql, args...)
	require.NoError(t, err, sql)
}

// OtherTenant creates a tenant besides store.DevTenantID and returns its id.
func (e Env) OtherTenant(t testing.TB) uuid.UUID {
	t.Helper()
	other, err := e.Store.CreateTenant(e.Ctx, "other-"+uuid.NewString()[:8], "Other")
	require.NoError(t, err)
	return other.TenantID
}
