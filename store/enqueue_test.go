package store_test

import (
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/bpc-platform/bpc/internal/testdb"
	"github.com/bpc-platform/bpc/store"
)

// An enqueue's probes by key are planned as index probes even while the
// tables are empty (a plan cached then must not read the whole table once
// it has grown), and the settings that make them so end with the
// transaction: the connection goes back to the pool as it came.
func TestInBatchTxPlansIndexProbes(t *testing.T) {
	t.Parallel()
	pool := testdb.NewWithOptions(t, testdb.Options{MaxConns: 1})
	ctx := t.Context()
	var plan []string
	err := store.New(pool).InBatchTx(ctx, func(*pgx.Batch) error { return nil }, func(tx pgx.Tx) ([]uuid.UUID, error) {
		// Named, as pgx prepares it: the plan its sixth execution uses is
		// the one the connection keeps.
		if _, err := tx.Exec(ctx, "PREPARE verify(uuid[], int) AS "+store.VerifyMirroredSQL); err != nil {
			return nil, err
		}
		for range 6 {
			rows, err := tx.Query(ctx, "EXPLAIN EXECUTE verify('{"+uuid.NewString()+"}', 1)")
			if err != nil {
				return nil, err
			}
			if plan, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
				return nil, err
			}
		}
		_, err := tx.Exec(ctx, "DEALLOCATE verify")
		return nil, err
	})
	require.NoError(t, err)
	text := strings.Join(plan, "\n")
	require.Contains(t, text, "Index Only Scan using jobs_pkey on jobs_live_fixed", text)
	require.NotContains(t, text, "Seq Scan on jobs_live_fixed", text)
	require.NotContains(t, text, "Hash", text)

	for setting, want := range map[string]string{"enable_seqscan": "on", "enable_hashjoin": "on", "enable_mergejoin": "on", "plan_cache_mode": "auto"} {
		var got string
		require.NoError(t, pool.QueryRow(ctx, "SELECT current_setting($1)", setting).Scan(&got))
		require.Equal(t, want, got, "%s after the transaction", setting)
	}
}

// The idempotency lookup probes each key in both parts of the SSOT (the
// key's partial index in jobs_live_fixed and in jobs_history): it runs on
// every keyed enqueue, and a plan that joined all keyed rows with the keys
// would grow with the whole history. Since jobs_live is a join, only the
// lateral subquery's OFFSET 0 keeps the keys' conditions inside the view.
func TestIdempotencyLookupProbesEachKey(t *testing.T) {
	t.Parallel()
	pool := testdb.NewWithOptions(t, testdb.Options{MaxConns: 1})
	ctx := t.Context()
	for _, settings := range []string{"", store.KeyProbePlansSQL} {
		var plan []string
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			if settings != "" {
				if _, err := tx.Exec(ctx, settings); err != nil {
					return err
				}
			}
			rows, err := tx.Query(ctx, "EXPLAIN "+store.IdempotencySQL,
				[][16]byte{uuid.New(), uuid.New()}, []string{"a", "b"}, []string{"k1", "k2"})
			if err != nil {
				return err
			}
			plan, err = pgx.CollectRows(rows, pgx.RowTo[string])
			return err
		})
		require.NoError(t, err)
		text := strings.Join(plan, "\n")
		require.Contains(t, text, "jobs_idempotency_key_uniq", text)
		require.Contains(t, text, "jobs_history_idempotency_key_idx", text)
		require.Equal(t, 2, strings.Count(text, "(idempotency_key = k.k_key)"), "a probe by key in each part:\n%s", text)
		require.NotContains(t, text, "Seq Scan", text)
		require.NotContains(t, text, "Hash", text)
	}
}
