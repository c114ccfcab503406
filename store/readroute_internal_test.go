package store

import (
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

// internalPool is a pool on TEST_DATABASE_URL for the tests that need the
// router's unexported parts; the reads here touch no table.
func internalPool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	url := os.Getenv("TEST_DATABASE_URL")
	if url == "" {
		t.Skip("TEST_DATABASE_URL is not set")
	}
	pool, err := pgxpool.New(t.Context(), url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	return pool
}

// bufferedRows, built by readReplica on an ordinary pool (no replica
// needed), behave as pgx's own rows for the ways the store reads them:
// CollectRows by struct name, RowToMap (Values), a RowScanner, a NULL
// column, and a scan with the wrong number of destinations (an error, not
// a panic).
func TestBufferedRowsReadAsPgxRows(t *testing.T) {
	t.Parallel()
	pool := internalPool(t)
	r := NewReadRouter(pool, pool, ReadRouterOptions{})
	const sql = `SELECT n AS id, 'row ' || n AS name, CASE WHEN n = 2 THEN NULL ELSE n * 10 END AS score
		FROM generate_series(1, 3) AS n ORDER BY n`

	type item struct {
		ID    int32
		Name  string
		Score *int32
	}
	rows, err := r.readReplica(t.Context(), sql)
	require.NoError(t, err)
	items, err := pgx.CollectRows(rows, pgx.RowToStructByName[item])
	require.NoError(t, err)
	require.Len(t, items, 3)
	require.Equal(t, "row 2", items[1].Name)
	require.Nil(t, items[1].Score, "NULL scans to nil")
	require.Equal(t, int32(30), *items[2].Score)

	rows, err = r.readReplica(t.Context(), sql)
	require.NoError(t, err)
	maps, err := pgx.CollectRows(rows, pgx.RowToMap)
	require.NoError(t, err)
	require.Equal(t, map[string]any{"id": int32(2), "name": "row 2", "score": nil}, maps[1])

	rows, err = r.readReplica(t.Context(), sql)
	require.NoError(t, err)
	scanned, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (*scannerItem, error) {
		it := &scannerItem{}
		return it, row.Scan(it) // one pgx.RowScanner destination
	})
	require.NoError(t, err)
	require.Equal(t, []string{"1:row 1", "2:row 2", "3:row 3"}, []string{scanned[0].s, scanned[1].s, scanned[2].s})
	require.Equal(t, 3, scannerCalls(scanned))

	rows, err = r.readReplica(t.Context(), sql)
	require.NoError(t, err)
	require.True(t, rows.Next())
	var id int32
	require.Error(t, rows.Scan(&id), "three columns into one destination")
	rows.Close()
	require.Equal(t, "SELECT 3", rows.CommandTag().String())
}

// scannerItem reads a row through pgx.RowScanner.
type scannerItem struct {
	s     string
	calls int
}

func (s *scannerItem) ScanRow(rows pgx.Rows) error {
	var id int32
	var name string
	var score *int32
	if err := rows.Scan(&id, &name, &score); err != nil {
		return err
	}
	s.calls++
	s.s = string(rune('0'+id)) + ":" + name
	return nil
}

func scannerCalls(items []*scannerItem) int {
	n := 0
	for _, it := range items {
		n += it.calls
	}
	return n
}

// A read on the replica past MaxBufferedBytes is closed and made on the
// primary, counted as replica_too_large; one within it is served by the
// replica.
func TestReplicaReadPastTheBufferBoundGoesToThePrimary(t *testing.T) {
	t.Parallel()
	pool := internalPool(t)
	r := NewReadRouter(pool, pool, ReadRouterOptions{MaxBufferedBytes: 1000})
	r.setReason(ReasonReplicaHealthy, nil) // as if a check had found a standby keeping up

	rows, err := r.Query(t.Context(), `SELECT repeat('x', 100) FROM generate_series(1, 5)`)
	require.NoError(t, err)
	n := 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 5, n)
	require.Equal(t, int64(1), r.reads[0][slicesIndex(ReasonReplicaHealthy)].Load(), "500 bytes: the replica serves")

	rows, err = r.Query(t.Context(), `SELECT repeat('x', 100) FROM generate_series(1, 50)`)
	require.NoError(t, err)
	n = 0
	for rows.Next() {
		n++
	}
	require.NoError(t, rows.Err())
	require.Equal(t, 50, n, "the primary's answer, whole")
	require.Equal(t, int64(1), r.reads[1][slicesIndex(ReasonReplicaTooLarge)].Load())
	require.Equal(t, int64(1), r.reads[0][slicesIndex(ReasonReplicaHealthy)].Load())
}

func slicesIndex(reason string) int {
	for i, rr := range readReasons {
		if rr == reason {
			return i
		}
	}
	panic("no reason " + reason)
}

// 40P01 is a recovery conflict only with "conflict with recovery" in it (a
// buffer-pin deadlock on the replica); 40001 always is.
func TestIsRecoveryConflict(t *testing.T) {
	t.Parallel()
	require.True(t, isRecoveryConflict(&pgconn.PgError{Code: "40001", Message: "canceling statement due to conflict with recovery"}))
	require.True(t, isRecoveryConflict(&pgconn.PgError{Code: "40P01", Message: "canceling statement due to conflict with recovery",
		Detail: "User transaction caused buffer deadlock with recovery."}))
	require.False(t, isRecoveryConflict(&pgconn.PgError{Code: "40P01", Message: "deadlock detected"}))
	require.False(t, isRecoveryConflict(errors.New("boom")))
}

// An unreachable primary keeps a healthy replica serving, under its own
// reason; it does not put a lagging or unchecked replica on reads; a
// primary at max_connections (53300) is not down, and leaves the route.
func TestPrimaryUnreachableRoutes(t *testing.T) {
	t.Parallel()
	refused := &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}
	full := &pgconn.PgError{Code: "53300", Message: "sorry, too many clients already"}
	for _, tc := range []struct {
		was  string
		err  error
		want string
	}{
		{ReasonReplicaHealthy, refused, ReasonReplicaPrimaryDown},
		{ReasonReplicaPrimaryDown, refused, ReasonReplicaPrimaryDown},
		{ReasonReplicaLagging, refused, ReasonReplicaLagging},
		{ReasonReplicaUnchecked, refused, ReasonReplicaUnchecked},
		{ReasonReplicaDown, refused, ReasonReplicaDown},
		{ReasonReplicaLagging, full, ReasonReplicaLagging},
		{ReasonReplicaHealthy, full, ReasonReplicaHealthy},
	} {
		r := NewReadRouter(nil, nil, ReadRouterOptions{})
		r.setReason(tc.was, nil)
		r.primaryUnreachable(tc.err)
		_, reason := r.Route()
		require.Equal(t, tc.want, reason, "was %s, primary said %s", tc.was, tc.err)
	}
	r := NewReadRouter(nil, nil, ReadRouterOptions{})
	r.setReason(ReasonReplicaPrimaryDown, nil)
	target, _ := r.Route()
	require.Equal(t, TargetReplica, target)
}
