package store_test

import (
	"errors"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/internal/teststore"
	"github.com/bpc-platform/bpc/store"
)

// A lazy transaction's BEGIN travels with its first batch: a step that
// opens with a batch and commits costs two round trips, not three; its
// batch's results read as the caller queued them, whether by callback or
// one by one; it commits what it did, rolls back on an error, and one that
// sent nothing sends nothing.
func TestInLazyTxBeginsWithTheFirstStatement(t *testing.T) {
	t.Parallel()
	trips := &testdb.RoundTrips{}
	e := env{teststore.On(t, testdb.NewWithOptions(t, testdb.Options{Tracer: trips, MaxConns: 1}))}
	// count runs fn twice (the first use of a statement on a connection
	// prepares it) and returns the second run's round trips.
	count := func(fn func(tx pgx.Tx) error) (int64, error) {
		if err := e.Store.InLazyTx(e.Ctx, fn); err != nil {
			return 0, err
		}
		before := trips.Count()
		err := e.Store.InLazyTx(e.Ctx, fn)
		return trips.Count() - before, err
	}
	var one int
	var setting string
	n, err := count(func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT set_config('bpc.lazy_test', 'in', true)`)
		b.Queue(`SELECT 1`).QueryRow(func(row pgx.Row) error { return row.Scan(&one) })
		if err := tx.SendBatch(e.Ctx, b).Close(); err != nil {
			return err
		}
		// SET LOCAL lasts as long as the transaction the batch began.
		return tx.QueryRow(e.Ctx, `SELECT current_setting('bpc.lazy_test', true)`).Scan(&setting)
	})
	require.NoError(t, err)
	require.EqualValues(t, 3, n, "the batch with its BEGIN, the query, the COMMIT")
	require.Equal(t, 1, one)
	require.Equal(t, "in", setting, "the batch and the query ran in one transaction")

	var two int
	n, err = count(func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`SELECT 2`)
		b.Queue(`SELECT true`)
		br := tx.SendBatch(e.Ctx, b)
		if err := br.QueryRow().Scan(&two); err != nil {
			return err
		}
		var ok bool
		if err := br.QueryRow().Scan(&ok); err != nil {
			return err
		}
		return br.Close()
	})
	require.NoError(t, err)
	require.EqualValues(t, 2, n)
	require.Equal(t, 2, two, "the BEGIN's result is not the caller's")

	// Committed, or rolled back on an error.
	sku := "LAZY-" + uuid.NewString()[:8]
	insert := func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		b.Queue(`INSERT INTO battery_products (battery_product_id, tenant_id, sku, name) VALUES ($1, $2, $3, 'lazy')`,
			uuid.New(), store.DevTenantID, sku)
		return tx.SendBatch(e.Ctx, b).Close()
	}
	boom := errors.New("boom")
	require.ErrorIs(t, e.Store.InLazyTx(e.Ctx, func(tx pgx.Tx) error {
		if err := insert(tx); err != nil {
			return err
		}
		return boom
	}), boom)
	require.Zero(t, e.Count(t, `SELECT count(*) FROM battery_products WHERE sku = $1`, sku), "rolled back")
	require.NoError(t, e.Store.InLazyTx(e.Ctx, insert))
	require.Equal(t, 1, e.Count(t, `SELECT count(*) FROM battery_products WHERE sku = $1`, sku), "committed")

	n, err = count(func(pgx.Tx) error { return nil })
	require.NoError(t, err)
	require.Zero(t, n, "nothing sent, nothing to commit")
}

// A step whose fn swallowed a failed statement and returned nil did not
// commit: Postgres answers its COMMIT with ROLLBACK (and no error), which
// the lazy and the batch transactions report as pgx.ErrTxCommitRollback,
// as pgx's own Commit does.
func TestACommitThatRolledBackIsAnError(t *testing.T) {
	t.Parallel()
	e := env{teststore.On(t, testdb.New(t))}
	_, err := e.Pool.Exec(e.Ctx, `CREATE TABLE commit_rollback_probe (n int)`)
	require.NoError(t, err)
	swallow := func(tx pgx.Tx) error {
		if _, err := tx.Exec(e.Ctx, `INSERT INTO commit_rollback_probe VALUES (1)`); err != nil {
			return err
		}
		_, err := tx.Exec(e.Ctx, `SELECT 1 / 0`)
		require.Error(t, err)
		return nil // the error swallowed
	}
	err = e.Store.InLazyTx(e.Ctx, swallow)
	require.ErrorIs(t, err, pgx.ErrTxCommitRollback)

	err = e.Store.InBatchTx(e.Ctx, func(b *pgx.Batch) error { return nil },
		func(tx pgx.Tx) ([]uuid.UUID, error) { return nil, swallow(tx) })
	require.ErrorIs(t, err, pgx.ErrTxCommitRollback)

	var n int
	require.NoError(t, e.Pool.QueryRow(e.Ctx, `SELECT count(*) FROM commit_rollback_probe`).Scan(&n))
	require.Zero(t, n, "nothing was committed")
}
